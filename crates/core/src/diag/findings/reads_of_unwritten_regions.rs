use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, Describe, Severity};

/// The read range includes holes or unwritten extents of a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadsOfUnwrittenRegions {
    pub target: String,
    pub hole_bytes: u64,
    pub unwritten_bytes: u64,
    pub range_bytes: u64,
}

impl Describe for ReadsOfUnwrittenRegions {
    fn severity(&self) -> Severity {
        if (self.hole_bytes + self.unwritten_bytes) * 2 >= self.range_bytes {
            Severity::Critical
        } else {
            Severity::Warning
        }
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            target,
            hole_bytes,
            unwritten_bytes,
            range_bytes,
        } = self;
        let bad = hole_bytes + unwritten_bytes;
        write!(
            f,
            "{} of the {} range of {target} ({:.0} %) has never been written \
             ({} in holes, {} more in unwritten extents): the file system returns zeros \
             there without any device I/O, so reads of it measure nothing. Write \
             the whole range first (a sequential write job, or let dioscope lay \
             out the file).",
            human_bytes(bad),
            human_bytes(*range_bytes),
            100.0 * bad as f64 / (*range_bytes).max(1) as f64,
            human_bytes(*hole_bytes),
            human_bytes(*unwritten_bytes),
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    ReadsOfUnwrittenRegions {
        target: "/mnt/f".into(),
        hole_bytes: 1 << 20,
        unwritten_bytes: 0,
        range_bytes: 4 << 20,
    }
    .into()
}
