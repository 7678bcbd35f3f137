//! Targets: each file or block device is opened once per run and shared by
//! the jobs that use it (seed 004: a second open-and-close of a block device
//! makes udev run blkid, which fills the page cache). Files are created and
//! laid out with incompressible data when missing or short; alignment is
//! taken from the kernel (statx STATX_DIOALIGN, the logical block size) and
//! checked before any I/O.

use dioscope_sys::fs::{statx_fd, statx_path};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    File,
    BlockDevice,
}

/// What a target is, without the open file: kept in the result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TargetInfo {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes usable: the file's size after layout, or the device's size.
    pub size: u64,
    /// Direct-I/O alignment of offsets and lengths (bytes).
    pub offset_align: u32,
    /// Direct-I/O alignment of memory (bytes).
    pub mem_align: u32,
    /// Where the alignment came from, for error messages.
    pub align_source: &'static str,
    pub direct: bool,
    pub writable: bool,
    /// dioscope created this file in this run.
    pub created: bool,
}

/// An open target: its description and the one open file all jobs share.
#[derive(Debug)]
pub struct Target {
    pub info: TargetInfo,
    pub file: File,
}

impl std::ops::Deref for Target {
    type Target = TargetInfo;
    fn deref(&self) -> &TargetInfo {
        &self.info
    }
}

impl Target {
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

/// Why a target could not be used. Each message names the path and a fix.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{path}: no such file or device; check the path, or give size= so dioscope can create the file")]
    NotFound { path: String },
    #[error("{path}: no such device (ENOENT); check the path (lsblk lists the block devices)")]
    NoDevice { path: String },
    #[error("{path}: directory {dir} does not exist (ENOENT); create it, or point filename=/directory= at an existing one")]
    NoDirectory { path: String, dir: String },
    #[error("{path}: permission denied (EACCES) {mode}; run as a user who may (root for block devices), or choose another target")]
    Permission { path: String, mode: &'static str },
    #[error(
        "{path}: the file does not exist and no size was given; add size=, for example size=1g"
    )]
    NeedSize { path: String },
    #[error("{what}={value} is not a multiple of the direct-I/O alignment {align} of {path} (from {from}); use {what}={lower} or {what}={upper}")]
    Misaligned {
        what: &'static str,
        value: u64,
        align: u32,
        path: String,
        from: &'static str,
        lower: u64,
        upper: u64,
    },
    #[error("{path} holds {have} bytes but the job needs {need} (offset {offset} + size {size}); lower size= or offset=, or use a larger target")]
    TooSmall {
        path: String,
        have: u64,
        need: u64,
        offset: u64,
        size: u64,
    },
    #[error("{path}: out of space (ENOSPC: No space left on device) laying out the file at offset {offset} of {need} bytes; its filesystem has {free} bytes free; free space there or lower size= (the partly laid out data was removed)")]
    NoSpace {
        path: String,
        offset: u64,
        need: u64,
        free: u64,
    },
    #[error("{path}: the filesystem does not support direct I/O on this file (statx reports no DIO alignment); use direct=0 or a filesystem that supports O_DIRECT")]
    DirectUnsupported { path: String },
    #[error("{path}: interrupted by a signal while laying out the file at offset {offset} of {need} bytes; the partly laid out data was removed")]
    Interrupted {
        path: String,
        offset: u64,
        need: u64,
    },
    #[error("{path}: {op} failed: {err}")]
    Io {
        path: String,
        op: &'static str,
        err: io::Error,
    },
    #[error("{0}")]
    Refused(String),
}

fn io_err(path: &Path, op: &'static str, err: io::Error) -> TargetError {
    let p = path.display().to_string();
    match err.raw_os_error() {
        Some(libc::ENOENT) => match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) if !d.is_dir() => TargetError::NoDirectory {
                path: p,
                dir: d.display().to_string(),
            },
            _ if path.starts_with("/dev") => TargetError::NoDevice { path: p },
            _ => TargetError::NotFound { path: p },
        },
        Some(libc::EACCES) | Some(libc::EPERM) => TargetError::Permission {
            path: p,
            mode: match op {
                "read-only" => "opening it read-only",
                "read-write" => "opening it read-write",
                "create" => "creating it or opening it for writing",
                _ => "using it",
            },
        },
        Some(libc::ENOSPC) => TargetError::NoSpace {
            path: p,
            offset: 0,
            need: 0,
            free: free_bytes(path),
        },
        _ => TargetError::Io { path: p, op, err },
    }
}

/// Bytes free on the filesystem holding `path` (0 if unknown), for messages.
fn free_bytes(path: &Path) -> u64 {
    let f = File::open(path).or_else(|_| File::open(path.parent().unwrap_or(Path::new("."))));
    f.ok()
        .and_then(|f| dioscope_sys::fsinfo::fstatfs(f.as_raw_fd()).ok())
        .map(|s| s.blocks_free * s.block_size)
        .unwrap_or(0)
}

/// What a run needs of one target path.
#[derive(Debug, Clone)]
pub struct TargetNeed {
    pub path: PathBuf,
    pub direct: bool,
    pub write: bool,
    /// Bytes the file must hold (layout size); 0 for "whatever it has".
    pub min_size: u64,
    /// `create_on_open`: create a missing file empty and lay nothing out;
    /// the job's writes fill it.
    pub no_layout: bool,
}

/// The set of open targets of a run.
#[derive(Debug, Default)]
pub struct TargetTable {
    pub targets: Vec<Target>,
    index: HashMap<(PathBuf, bool), usize>,
}

impl TargetTable {
    pub fn get(&self, path: &Path, direct: bool) -> Option<&Target> {
        self.index
            .get(&(path.to_path_buf(), direct))
            .map(|&i| &self.targets[i])
    }

    /// Files created by this run.
    pub fn created_files(&self) -> Vec<PathBuf> {
        self.targets
            .iter()
            .filter(|t| t.created)
            .map(|t| t.path.clone())
            .collect()
    }

    /// Close every target and remove the files this run created: a run that
    /// fails before its first I/O leaves nothing behind. Files dioscope did
    /// not create are never removed.
    pub fn discard(self) {
        let created = self.created_files();
        drop(self);
        for p in &created {
            let _ = std::fs::remove_file(p);
            dioscope_sys::signal::unregister_scratch(p);
        }
    }

    /// Open every target once. `check_write` is called for a block device
    /// that will be written, before it is opened for writing.
    pub fn open_all(
        needs: &[TargetNeed],
        check_write: &dyn Fn(&Path) -> Result<(), String>,
    ) -> Result<TargetTable, TargetError> {
        // Merge needs per (path, direct).
        let mut merged: Vec<TargetNeed> = Vec::new();
        for n in needs {
            match merged
                .iter_mut()
                .find(|m| m.path == n.path && m.direct == n.direct)
            {
                Some(m) => {
                    m.write |= n.write;
                    m.min_size = m.min_size.max(n.min_size);
                    m.no_layout &= n.no_layout;
                }
                None => merged.push(n.clone()),
            }
        }
        let mut table = TargetTable::default();
        for n in &merged {
            let t = match open_one(n, check_write) {
                Ok(t) => t,
                Err(e) => {
                    table.discard();
                    return Err(e);
                }
            };
            table
                .index
                .insert((n.path.clone(), n.direct), table.targets.len());
            table.targets.push(t);
        }
        Ok(table)
    }
}

/// Block device queue values from sysfs by device number (no open needed).
pub fn sysfs_block_attr(rdev: (u32, u32), attr: &str) -> Option<String> {
    let base = format!("/sys/dev/block/{}:{}", rdev.0, rdev.1);
    std::fs::read_to_string(format!("{base}/{attr}"))
        .or_else(|_| std::fs::read_to_string(format!("{base}/../{attr}")))
        .ok()
        .map(|s| s.trim().to_string())
}

fn open_one(
    n: &TargetNeed,
    check_write: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<Target, TargetError> {
    let existing = statx_path(&n.path).ok();
    if let Some(st) = existing.filter(|s| s.is_block_device()) {
        if n.write {
            check_write(&n.path).map_err(TargetError::Refused)?;
        }
        let mut oo = OpenOptions::new();
        oo.read(true).write(n.write);
        if n.direct {
            oo.custom_flags(libc::O_DIRECT);
        }
        let file = oo
            .open(&n.path)
            .map_err(|e| io_err(&n.path, if n.write { "read-write" } else { "read-only" }, e))?;
        let size = dioscope_sys::block::size_bytes(file.as_raw_fd())
            .map_err(|e| io_err(&n.path, "BLKGETSIZE64", e))?;
        let lbs = dioscope_sys::block::logical_block_size(file.as_raw_fd())
            .ok()
            .or_else(|| {
                sysfs_block_attr(st.rdev, "queue/logical_block_size").and_then(|s| s.parse().ok())
            })
            .unwrap_or(512);
        return Ok(Target {
            file,
            info: TargetInfo {
                path: n.path.clone(),
                kind: TargetKind::BlockDevice,
                size,
                offset_align: lbs,
                mem_align: lbs,
                align_source: "the device's logical block size",
                direct: n.direct,
                writable: n.write,
                created: false,
            },
        });
    }
    if let Some(st) = existing {
        if !st.is_regular() {
            return Err(TargetError::Refused(format!(
                "{} is neither a regular file nor a block device; point filename= at a file or a block device",
                n.path.display()
            )));
        }
    }
    let created = existing.is_none();
    let have = existing.map(|s| s.size).unwrap_or(0);
    if created && n.path.starts_with("/dev") {
        // Never create regular files in /dev: a typo in a device name must not
        // turn into a file that fills the devtmpfs.
        return Err(TargetError::NoDevice {
            path: n.path.display().to_string(),
        });
    }
    if created && n.min_size == 0 {
        return Err(TargetError::NeedSize {
            path: n.path.display().to_string(),
        });
    }
    if n.no_layout {
        if created {
            create_empty(&n.path)?;
        }
    } else if have < n.min_size {
        layout(&n.path, have, n.min_size, created).map_err(|mut e| {
            if let TargetError::NoSpace { free, .. } = &mut e {
                // Free once the partial layout is gone and closed: what the user has.
                *free = free_bytes(&n.path);
            }
            e
        })?;
    }
    // From here on a failure must not leave the file this call created.
    let undo = |e: TargetError| {
        if created {
            let _ = std::fs::remove_file(&n.path);
            dioscope_sys::signal::unregister_scratch(&n.path);
        }
        e
    };
    let mut oo = OpenOptions::new();
    // Opened read-write only when a job writes; layout above used its own handle.
    oo.read(true).write(n.write);
    if n.direct {
        oo.custom_flags(libc::O_DIRECT);
    }
    let file = match oo.open(&n.path) {
        Ok(f) => f,
        Err(e) if n.direct && e.raw_os_error() == Some(libc::EINVAL) => {
            return Err(undo(TargetError::DirectUnsupported {
                path: n.path.display().to_string(),
            }))
        }
        Err(e) => {
            return Err(undo(io_err(
                &n.path,
                if n.write { "read-write" } else { "read-only" },
                e,
            )))
        }
    };
    let st = statx_fd(file.as_raw_fd()).map_err(|e| undo(io_err(&n.path, "statx", e)))?;
    let (mem_align, offset_align, src) = match st.dio_align {
        Some((0, 0)) if n.direct => {
            return Err(undo(TargetError::DirectUnsupported {
                path: n.path.display().to_string(),
            }))
        }
        Some((m, o)) if o > 0 => (m.max(1), o, "statx STATX_DIOALIGN"),
        _ => {
            // Kernel or filesystem does not say: the underlying device's logical block size.
            let lbs = sysfs_block_attr(st.dev, "queue/logical_block_size")
                .and_then(|s| s.parse().ok())
                .unwrap_or(512);
            (lbs, lbs, "the filesystem device's logical block size")
        }
    };
    Ok(Target {
        file,
        info: TargetInfo {
            path: n.path.clone(),
            kind: TargetKind::File,
            size: st.size,
            offset_align,
            mem_align,
            align_source: src,
            direct: n.direct,
            writable: n.write,
            created,
        },
    })
}

/// Create an empty file (create_on_open): removed like a laid-out one if the run stops.
fn create_empty(path: &Path) -> Result<(), TargetError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io_err(path, "create", e))?;
    dioscope_sys::signal::register_scratch(path);
    Ok(())
}

/// Create or extend a file to `need` bytes of incompressible data. Writes
/// with O_DIRECT where the filesystem allows (no page-cache pollution), in
/// 1 MiB chunks. Space is reserved first so a full disk fails early.
///
/// Whatever happens, the user's data survives: the bytes of an existing file
/// are never rewritten (an unaligned tail is extended with a buffered write
/// first), and on failure or a stop signal a created file is removed and an
/// extended one is cut back to its old size.
fn layout(path: &Path, have: u64, need: u64, create: bool) -> Result<(), TargetError> {
    let open = |direct: bool| {
        let mut oo = OpenOptions::new();
        oo.write(true);
        if create {
            // create_new: a file that appeared since the check is not ours to remove.
            oo.create_new(true);
        }
        if direct {
            oo.custom_flags(libc::O_DIRECT);
        }
        oo.open(path)
    };
    let (f, direct) = match open(true) {
        Ok(f) => (f, true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            (open(false).map_err(|e| io_err(path, "create", e))?, false)
        }
        Err(e) => return Err(io_err(path, "create", e)),
    };
    if create {
        dioscope_sys::signal::register_scratch(path);
    }
    let fd = f.as_raw_fd();
    let cleanup = |e: TargetError| {
        if create {
            let _ = std::fs::remove_file(path);
            dioscope_sys::signal::unregister_scratch(path);
        } else {
            let _ = dioscope_sys::fs::ftruncate(fd, have);
        }
        e
    };
    let no_space = |offset: u64| TargetError::NoSpace {
        path: path.display().to_string(),
        offset,
        need,
        free: 0,
    };
    match dioscope_sys::fs::fallocate(fd, have, need - have) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return Err(cleanup(no_space(have))),
        // Not supported (e.g. some filesystems): write it out instead.
        Err(_) => {}
    }
    const CHUNK: usize = 1 << 20;
    let mut arena = dioscope_sys::queue::SlotArena::new(1, CHUNK)
        .map_err(|e| cleanup(io_err(path, "allocate buffer", e)))?;
    let mut seed = 0x5eed_u64 ^ need;
    let mut off = have;
    if direct && !have.is_multiple_of(4096) {
        // Up to the next aligned boundary through the page cache, so the
        // existing bytes of the partial block are kept.
        let head = (have.next_multiple_of(4096).min(need) - have) as usize;
        arena.fill_random(seed);
        let wrote = OpenOptions::new().write(true).open(path).and_then(|b| {
            let n = dioscope_sys::io::pwrite(b.as_raw_fd(), &arena.slot_mut(0)[..head], have)?;
            dioscope_sys::io::fdatasync(b.as_raw_fd())?;
            Ok(n)
        });
        match wrote {
            Ok(n) if n == head => off += n as u64,
            Ok(_) => return Err(cleanup(no_space(have))),
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                return Err(cleanup(no_space(have)))
            }
            Err(e) => return Err(cleanup(io_err(path, "write (layout)", e))),
        }
    }
    while off < need {
        if dioscope_sys::signal::stop_count() > 0 {
            return Err(cleanup(TargetError::Interrupted {
                path: path.display().to_string(),
                offset: off,
                need,
            }));
        }
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        arena.fill_random(seed);
        let len = ((need - off) as usize).min(CHUNK);
        // O_DIRECT needs an aligned length: round the tail up, then trim.
        let wlen = if direct {
            len.div_ceil(4096) * 4096
        } else {
            len
        };
        let buf = &arena.slot_mut(0)[..wlen];
        match dioscope_sys::io::pwrite(fd, buf, off) {
            Ok(0) => return Err(cleanup(no_space(off))),
            Ok(n) => off += n as u64,
            Err(e)
                if e.raw_os_error() == Some(libc::ENOSPC)
                    || e.raw_os_error() == Some(libc::EDQUOT) =>
            {
                return Err(cleanup(no_space(off)))
            }
            Err(e) => return Err(cleanup(io_err(path, "write (layout)", e))),
        }
    }
    if off > need {
        dioscope_sys::fs::ftruncate(fd, need).map_err(|e| cleanup(io_err(path, "truncate", e)))?;
    }
    dioscope_sys::io::fsync(fd).map_err(|e| cleanup(io_err(path, "fsync", e)))?;
    let _ = dioscope_sys::fs::fadvise_dontneed(fd);
    Ok(())
}

/// Check that `value` is a multiple of the target's alignment.
pub fn check_aligned(t: &Target, what: &'static str, value: u64) -> Result<(), TargetError> {
    let a = t.offset_align.max(1) as u64;
    if value.is_multiple_of(a) {
        return Ok(());
    }
    let lower = (value / a * a).max(a);
    let upper = value.div_ceil(a) * a;
    let upper = if upper == lower { lower + a } else { upper };
    Err(TargetError::Misaligned {
        what,
        value,
        align: t.offset_align,
        path: t.path.display().to_string(),
        from: t.align_source,
        lower,
        upper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_lays_out_and_reopens_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.dat");
        let needs = vec![
            TargetNeed {
                path: p.clone(),
                direct: false,
                write: false,
                min_size: 3 << 20,
                no_layout: false,
            },
            TargetNeed {
                path: p.clone(),
                direct: false,
                write: true,
                min_size: 1 << 20,
                no_layout: false,
            },
        ];
        let t = TargetTable::open_all(&needs, &|_| Ok(())).unwrap();
        assert_eq!(t.targets.len(), 1, "one open per path");
        let tg = &t.targets[0];
        assert!(tg.created && tg.writable);
        assert_eq!(tg.size, 3 << 20);
        // Incompressible: no long runs of one byte, no holes.
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len(), 3 << 20);
        let zeros = data.iter().filter(|&&b| b == 0).count();
        assert!(zeros < data.len() / 100, "{zeros} zero bytes");
    }

    #[test]
    fn missing_file_without_size_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("nope");
        let e = TargetTable::open_all(
            &[TargetNeed {
                path: p,
                direct: false,
                write: false,
                min_size: 0,
                no_layout: false,
            }],
            &|_| Ok(()),
        )
        .unwrap_err();
        assert!(e.to_string().contains("size="), "{e}");
    }

    #[test]
    fn misalignment_names_nearest_values() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        std::fs::write(&p, vec![1u8; 8192]).unwrap();
        let t = TargetTable::open_all(
            &[TargetNeed {
                path: p,
                direct: false,
                write: false,
                min_size: 0,
                no_layout: false,
            }],
            &|_| Ok(()),
        )
        .unwrap();
        let mut tg = TargetTable::default();
        drop(tg.targets.drain(..));
        let t0 = &t.targets[0];
        let fake = Target {
            file: t0.file.try_clone().unwrap(),
            info: TargetInfo {
                offset_align: 512,
                ..t0.info.clone()
            },
        };
        let e = check_aligned(&fake, "bs", 1000).unwrap_err().to_string();
        assert!(
            e.contains("bs=1000")
                && e.contains("bs=512")
                && e.contains("bs=1024")
                && e.contains("512"),
            "{e}"
        );
        assert!(check_aligned(&fake, "bs", 4096).is_ok());
    }
}
