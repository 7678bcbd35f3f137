use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, Describe, Severity};

/// A device wrote more than the benchmark's jobs did (device write bytes ÷
/// job write bytes above 1.1 over the run's trials).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteAmplification {
    pub device: String,
    /// The device's role under the target (`target`, `filesystem`,
    /// `loop_backing`, …).
    pub role: String,
    pub ratio: f64,
    pub device_bytes: u64,
    pub job_bytes: u64,
    /// The file system the target file is on, if any.
    pub fs_type: Option<String>,
    /// A job syncs its writes (fsync=, fdatasync= or sync=).
    pub syncs: bool,
    /// The device's bytes include other processes' I/O (`other_device_io`).
    pub qualified: bool,
}

impl WriteAmplification {
    /// The likely cause, most specific first.
    fn cause(&self) -> String {
        let journaling = matches!(
            self.fs_type.as_deref(),
            Some("ext3" | "ext4" | "xfs" | "jbd2" | "f2fs" | "btrfs")
        );
        if self.role == "loop_backing" {
            "the loop device's backing file is on a file system whose own metadata and \
             journal writes land on this device. Put the loop device over a raw partition, \
             or compare with the loop device's own ratio"
                .into()
        } else if journaling && self.syncs {
            format!(
                "{} writes its journal and metadata (file size, mtime) at every fsync or \
                 O_SYNC write. Compare with fsync=0 (or fdatasync=1 on a preallocated file) \
                 to see the file system's share",
                self.fs_type.as_deref().unwrap_or("the file system")
            )
        } else if let Some(fs) = &self.fs_type {
            format!(
                "{fs} writes metadata (allocation of new blocks, mtime, its journal) beside \
                 the data. Write the file once before measuring (Precondition it), or \
                 use the raw device"
            )
        } else {
            "writes smaller than the device's block size make it read-modify-write whole \
             blocks. Use bs= of at least the device's physical block size \
             (/sys/block/DEV/queue/physical_block_size)"
                .into()
        }
    }
}

impl Describe for WriteAmplification {
    fn severity(&self) -> Severity {
        Severity::Info
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}) wrote {:.2}× the bytes the jobs wrote ({} for {}): write amplification{}. \
             Likely cause: {}.",
            self.device,
            self.role,
            self.ratio,
            human_bytes(self.device_bytes),
            human_bytes(self.job_bytes),
            if self.qualified {
                ", which includes other processes' I/O (see other_device_io)"
            } else {
                ""
            },
            self.cause()
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    WriteAmplification {
        device: "loop9".into(),
        role: "filesystem".into(),
        ratio: 2.5,
        device_bytes: 10 << 20,
        job_bytes: 4 << 20,
        fs_type: Some("ext4".into()),
        syncs: true,
        qualified: false,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_follows_the_role_the_file_system_and_the_syncs() {
        let super::super::Finding::WriteAmplification(mut w) = example() else {
            unreachable!()
        };
        let t = super::super::Finding::from(w.clone()).to_string();
        assert!(t.contains("loop9 (filesystem) wrote 2.50×"), "{t}");
        assert!(t.contains("ext4 writes its journal") && t.contains("fsync=0"), "{t}");
        w.syncs = false;
        let t = super::super::Finding::from(w.clone()).to_string();
        assert!(t.contains("Precondition"), "{t}");
        w.fs_type = None;
        w.role = "target".into();
        w.qualified = true;
        let t = super::super::Finding::from(w.clone()).to_string();
        assert!(t.contains("read-modify-write") && t.contains("other processes'"), "{t}");
        w.role = "loop_backing".into();
        let t = super::super::Finding::from(w).to_string();
        assert!(t.contains("backing file"), "{t}");
    }
}
