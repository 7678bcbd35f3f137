use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, Describe, Severity};

/// A file in many physically separate pieces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragmentedFile {
    pub target: String,
    pub size: u64,
    /// Extents as the file system reports them.
    pub extents: u64,
    /// Physically discontiguous runs of extents.
    pub fragments: u64,
    /// Share of I/Os of `block_size` that would cross a fragment boundary
    /// in a sequential pass, in %.
    pub split_pct: f64,
    pub block_size: u64,
}

impl Describe for FragmentedFile {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            target,
            size,
            extents,
            fragments,
            split_pct,
            block_size,
        } = self;
        write!(
            f,
            "{target} ({}) lies in {fragments} separate pieces on disk ({extents} \
             extents): about {split_pct:.1} % of sequential {} I/Os cross a piece \
             boundary and become two device requests, and on rotating disks each \
             boundary is a seek. Recreate the file on a file system with free \
             contiguous space (fallocate the whole size before writing), or defragment \
             it (`e4defrag`, `xfs_fsr`).",
            human_bytes(*size),
            human_bytes(*block_size)
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    FragmentedFile {
        target: "/mnt/f".into(),
        size: 1 << 30,
        extents: 400,
        fragments: 300,
        split_pct: 29.0,
        block_size: 1 << 20,
    }
    .into()
}
