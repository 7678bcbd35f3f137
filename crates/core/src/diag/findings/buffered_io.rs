use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// `direct=0`: the results measure the page cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferedIo {
    pub job: String,
}

impl Describe for BufferedIo {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "job {} uses direct=0: its I/O goes through the page cache, so the \
             results measure memory and the kernel's caching rather than the device. \
             Use direct=1 to measure the device.",
            self.job
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    BufferedIo { job: "j".into() }.into()
}
