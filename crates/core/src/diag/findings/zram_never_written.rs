use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, Describe, Severity};

/// A zram device holds less data than the reads cover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZramNeverWritten {
    pub device: String,
    pub stored_bytes: u64,
    pub range_bytes: u64,
}

impl Describe for ZramNeverWritten {
    fn severity(&self) -> Severity {
        if self.stored_bytes * 2 <= self.range_bytes {
            Severity::Critical
        } else {
            Severity::Warning
        }
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} stores {} of data but the reads cover {}: zram answers reads of \
             pages never written with zeros, without decompressing anything, so those \
             reads measure nothing. Write the whole range first (a sequential write \
             job with incompressible data).",
            self.device,
            human_bytes(self.stored_bytes),
            human_bytes(self.range_bytes)
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    ZramNeverWritten {
        device: "zram0".into(),
        stored_bytes: 0,
        range_bytes: 1 << 30,
    }
    .into()
}
