//! Targets where O_DIRECT is accepted but the I/O is buffered anyway.
//!
//! - btrfs files with data checksums: since Linux 6.14 btrfs turns direct
//!   writes to them into buffered writes (commit 968f19c5b1b7, "btrfs: always
//!   fallback to buffered write if the inode requires checksum"). NOCOW files
//!   (`chattr +C`) and `nodatasum`/`nodatacow` mounts have no checksums.
//! - tmpfs and ramfs: no device at all.
//! - loop devices without direct I/O (`loop/dio` = 0): every request to the
//!   loop device goes through the backing file's page cache. This applies both
//!   to a loop device as the target and to a file on a file system on one.

use crate::diag::findings::SilentlyBuffered;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use dioscope_sys::fsinfo;

use super::device::{read_trimmed, resolve};
use super::findings::{BufferedReason, Finding};
use super::mounts::{mount_for, read_mountinfo};

/// First kernel whose btrfs buffers direct writes to checksummed files.
pub const BTRFS_DIO_FALLBACK_SINCE: (u32, u32) = (6, 14);

/// Why direct I/O to `path` would be buffered, if it would. A path that does
/// not exist yet is judged by its directory (new btrfs files inherit NOCOW
/// from it). `kernel` is `(major, minor)`; unknown means "assume current".
pub fn silent_buffering(path: &Path, kernel: Option<(u32, u32)>) -> Option<Finding> {
    silent_buffering_checked(path, kernel).ok().flatten()
}

/// [`silent_buffering`], or why it could not be judged (the target or its
/// directory cannot be examined: permission denied, gone): `doctor` says
/// "skipped" then, not "really direct".
pub fn silent_buffering_checked(
    path: &Path,
    kernel: Option<(u32, u32)>,
) -> Result<Option<Finding>, String> {
    let target = path.display().to_string();
    let existing: PathBuf = if path.exists() {
        path.to_path_buf()
    } else {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        parent.unwrap_or(Path::new(".")).to_path_buf()
    };
    let st = dioscope_sys::fs::statx_path(&existing)
        .map_err(|e| format!("could not examine {}: {e}", existing.display()))?;
    if !st.is_block_device() {
        let f = std::fs::File::open(&existing).map_err(|e| {
            format!(
                "could not open {} to read its file system and flags: {e}",
                existing.display()
            )
        })?;
        let fs = fsinfo::fstatfs(f.as_raw_fd()).map_err(|e| {
            format!(
                "could not read the file system of {}: {e}",
                existing.display()
            )
        })?;
        let fs_name = fsinfo::fs_type_name(fs.fs_type)
            .unwrap_or("unknown")
            .to_string();
        match fs.fs_type {
            fsinfo::TMPFS_MAGIC | fsinfo::RAMFS_MAGIC => {
                return Ok(Some(Finding::SilentlyBuffered(SilentlyBuffered {
                    target,
                    fs_type: fs_name,
                    reason: BufferedReason::MemoryFilesystem,
                })));
            }
            fsinfo::BTRFS_SUPER_MAGIC
                if kernel.is_none_or_at_least(BTRFS_DIO_FALLBACK_SINCE)
                    && btrfs_has_checksums(&f, &existing) =>
            {
                return Ok(Some(Finding::SilentlyBuffered(SilentlyBuffered {
                    target,
                    fs_type: fs_name,
                    reason: BufferedReason::BtrfsDataChecksums,
                })));
            }
            _ => {}
        }
    }
    // Any loop device on the way to the disk that buffers.
    for d in resolve(&existing) {
        let Some(backing) = d.backing_file.as_ref() else {
            continue;
        };
        if read_trimmed(&d.sysfs.join("loop/dio")).as_deref() == Some("0") {
            return Ok(Some(Finding::SilentlyBuffered(SilentlyBuffered {
                target,
                fs_type: "loop".into(),
                reason: BufferedReason::LoopWithoutDirectIo {
                    backing_file: backing.display().to_string(),
                },
            })));
        }
    }
    Ok(None)
}

fn btrfs_has_checksums(f: &std::fs::File, path: &Path) -> bool {
    if let Some(m) = mount_for(&read_mountinfo(), path) {
        if m.has_option("nodatasum") || m.has_option("nodatacow") {
            return false;
        }
    }
    match fsinfo::inode_flags(f.as_raw_fd()) {
        Ok(flags) => flags & fsinfo::FS_NOCOW_FL == 0,
        // Cannot tell: btrfs checksums data by default.
        Err(_) => true,
    }
}

trait KernelAtLeast {
    fn is_none_or_at_least(&self, v: (u32, u32)) -> bool;
}

impl KernelAtLeast for Option<(u32, u32)> {
    fn is_none_or_at_least(&self, v: (u32, u32)) -> bool {
        match self {
            None => true,
            Some(k) => *k >= v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_file_on_disk_is_direct() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let t = fsinfo::fstatfs(f.as_raw_fd()).unwrap().fs_type;
        if matches!(
            t,
            fsinfo::TMPFS_MAGIC | fsinfo::RAMFS_MAGIC | fsinfo::BTRFS_SUPER_MAGIC
        ) {
            eprintln!("skipping: the build directory is itself on a buffering fs");
            return;
        }
        // May still be flagged if the build directory sits on a buffered loop.
        if let Some(f) = silent_buffering(&p, None) {
            assert!(matches!(
                f,
                Finding::SilentlyBuffered(SilentlyBuffered {
                    reason: BufferedReason::LoopWithoutDirectIo { .. },
                    ..
                })
            ));
        }
        // A file that does not exist yet is judged by its directory.
        let _ = silent_buffering(&dir.path().join("not-yet"), None);
    }

    #[test]
    fn tmpfs_is_flagged() {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            eprintln!("skipping: no /dev/shm");
            return;
        }
        let p = shm.join(format!("dioscope-fs-{}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        let f = silent_buffering(&p, None);
        std::fs::remove_file(&p).unwrap();
        match f {
            Some(Finding::SilentlyBuffered(SilentlyBuffered {
                reason: BufferedReason::MemoryFilesystem,
                fs_type,
                ..
            })) => assert_eq!(fs_type, "tmpfs"),
            other => panic!("expected tmpfs finding, got {other:?}"),
        }
    }

    #[test]
    fn kernel_gate() {
        assert!(Some((6, 18)).is_none_or_at_least((6, 14)));
        assert!(!Some((6, 1)).is_none_or_at_least((6, 14)));
        assert!(None.is_none_or_at_least((6, 14)));
    }
}
