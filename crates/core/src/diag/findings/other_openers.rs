use serde::{Deserialize, Serialize};
use std::fmt;

use super::{top_few, Describe, Opener, Severity};

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
        // Writers first: they can change the data under the benchmark.
        let mut ranked: Vec<&Opener> = openers.iter().collect();
        ranked.sort_by_key(|o| !o.writable);
        let who = top_few(&ranked, |o| {
            format!(
                "pid {} (`{}`, {})",
                o.pid,
                o.comm,
                if o.writable { "read-write" } else { "read-only" }
            )
        });
        write!(
            f,
            "{target} is open in {} other process{}: {}. Their I/O competes with \
             the benchmark, and buffered readers put pages of it in the page cache \
             that slow direct writes. Stop them, or wait for udev (`udevadm settle`), \
             before measuring.",
            openers.len(),
            if openers.len() == 1 { "" } else { "es" },
            who
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_openers_name_five_writers_first() {
        let openers: Vec<Opener> = (0..12)
            .map(|i| Opener {
                pid: 100 + i,
                comm: format!("c{i}"),
                writable: i == 11,
            })
            .collect();
        let t = super::super::Finding::from(OtherOpeners {
            target: "/dev/loop0".into(),
            openers,
        })
        .to_string();
        assert!(t.contains("open in 12 other processes: pid 111 (`c11`, read-write)"), "{t}");
        assert_eq!(t.matches("pid ").count(), 5, "{t}");
        assert!(t.contains("and 7 more (in the JSON)"), "{t}");
    }
}
