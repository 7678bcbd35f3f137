use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Opener, Severity};

/// Other processes hold the target open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherOpeners {
    pub target: String,
    pub openers: Vec<Opener>,
}

impl Describe for OtherOpeners {
    fn severity(&self) -> Severity {
        if self.openers.iter().any(|o| o.writable) {
            Severity::Critical
        } else {
            Severity::Warning
        }
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { target, openers } = self;
        let who: Vec<String> = openers
            .iter()
            .map(|o| {
                format!(
                    "pid {} ({}, {})",
                    o.pid,
                    o.comm,
                    if o.writable { "read-write" } else { "read-only" }
                )
            })
            .collect();
        write!(
            f,
            "{target} is open in {} other process{}: {}. Their I/O competes with \
             the benchmark, and buffered readers put pages of it in the page cache \
             that slow direct writes. Stop them, or wait for udev (`udevadm settle`), \
             before measuring.",
            openers.len(),
            if openers.len() == 1 { "" } else { "es" },
            who.join(", ")
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    OtherOpeners {
        target: "/dev/loop0".into(),
        openers: vec![Opener {
            pid: 42,
            comm: "blkid".into(),
            writable: false,
        }],
    }
    .into()
}
