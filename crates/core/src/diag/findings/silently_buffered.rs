use serde::{Deserialize, Serialize};
use std::fmt;

use super::{BufferedReason, Describe, Severity};

/// O_DIRECT is accepted but the I/O goes through the page cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SilentlyBuffered {
    pub target: String,
    pub fs_type: String,
    #[serde(flatten)]
    pub reason: BufferedReason,
}

impl Describe for SilentlyBuffered {
    fn severity(&self) -> Severity {
        Severity::Critical
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            target,
            fs_type,
            reason,
        } = self;
        match reason {
            BufferedReason::BtrfsDataChecksums => write!(
                f,
                "{target} is a btrfs file with data checksums: since Linux 6.14 btrfs \
                 turns direct writes to such files into buffered writes (so that a \
                 buffer changed during the write cannot break its checksum). Write \
                 results measure the page cache and writeback, not direct I/O. Use a \
                 NOCOW file (`chattr +C` on the empty file or its directory before \
                 writing) or a file system mounted with nodatasum."
            ),
            BufferedReason::MemoryFilesystem => write!(
                f,
                "{target} is on {fs_type}, which keeps files in memory: it accepts \
                 O_DIRECT but there is no device behind it, so the results measure \
                 memory copies. Put the test file on a disk-backed file system or use \
                 a block device."
            ),
            BufferedReason::LoopWithoutDirectIo { backing_file } => write!(
                f,
                "{target} is a loop device that reads and writes its backing file \
                 {backing_file} through the page cache (loop direct I/O is off), so \
                 direct I/O to the loop device measures the backing file's page cache. \
                 Recreate it with `losetup --direct-io=on` (the backing file system \
                 must support O_DIRECT and the sector sizes must match)."
            ),
        }
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    SilentlyBuffered {
        target: "/mnt/f".into(),
        fs_type: "btrfs".into(),
        reason: BufferedReason::BtrfsDataChecksums,
    }
    .into()
}
