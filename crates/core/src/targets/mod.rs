//! Targets: each file or block device is opened once per run and shared by
//! the jobs that use it (seed 004: a second open-and-close of a block device
//! makes udev run blkid, which fills the page cache). Files are created and
//! laid out with incompressible data when missing or short; alignment is
//! taken from the kernel (statx STATX_DIOALIGN, the logical block size) and
//! checked before any I/O.

use dioscope_sys::fs::statx_fd;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

// Plain data in the result layer; opening and layout are here.
pub use crate::results::targets::{TargetInfo, TargetKind};

/// An open target: its description and the one open file all jobs share.
#[derive(Debug)]
pub struct Target {
    pub info: TargetInfo,
    pub file: File,
    /// The read-only descriptor the guard decided on (`O_EXCL` on a block
    /// device: kept for the run, so nothing can mount it meanwhile).
    pub checked: Option<crate::safety::Opened>,
    /// Device and inode of a file this run created, to remove it by
    /// identity only.
    pub identity: Option<(u64, u64)>,
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
    #[error("{path}: operation not permitted (EPERM) {mode}, even though the permissions allow it: the file is probably immutable or append-only (`lsattr {path}` shows i or a; `chattr -i -a {path}` clears them), or a security module refused; choose another target or clear the flag")]
    NotPermitted { path: String, mode: &'static str },
    #[error("{path} is read-only ({why}); make it writable (`blockdev --setrw {path}`) or run a read-only job")]
    ReadOnly { path: String, why: String },
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
        from: std::borrow::Cow<'static, str>,
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
            _ if lands_in_dev(path) => TargetError::NoDevice { path: p },
            _ => TargetError::NotFound { path: p },
        },
        Some(libc::EPERM) if std::fs::metadata(path).is_ok_and(|m| m.is_file()) => {
            TargetError::NotPermitted {
                path: p,
                mode: match op {
                    "read-only" => "opening it read-only",
                    "read-write" => "opening it read-write",
                    _ => "opening it for writing",
                },
            }
        }
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

/// Bytes free where writes to `path` need space, for messages: the
/// filesystem holding a file; for a loop device, the filesystem holding its
/// backing file (a device node's own filesystem is /dev, which says nothing);
/// 0 when unknown. Returns the place it measured too.
pub fn free_space(path: &Path) -> (u64, PathBuf) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut place = path.to_path_buf();
    if let Ok(m) = std::fs::metadata(path) {
        if m.file_type().is_block_device() {
            let rdev = crate::safety::DevNum::from_dev_t(m.rdev());
            let backing =
                std::fs::read_to_string(format!("/sys/dev/block/{rdev}/loop/backing_file"));
            match backing {
                Ok(b) => {
                    let b = b.trim_end_matches('\n');
                    place = PathBuf::from(b.strip_suffix(" (deleted)").unwrap_or(b));
                }
                // Not a loop device: its size is fixed; nothing is "free".
                Err(_) => return (0, place),
            }
        }
    }
    let f = File::open(&place).or_else(|_| File::open(place.parent().unwrap_or(Path::new("."))));
    let free = f
        .ok()
        .and_then(|f| dioscope_sys::fsinfo::fstatfs(f.as_raw_fd()).ok())
        .map(|s| s.blocks_free * s.block_size)
        .unwrap_or(0);
    (free, place)
}

/// [`free_space`] in bytes alone.
pub fn free_bytes(path: &Path) -> u64 {
    free_space(path).0
}

/// What a run needs of one target path.
#[derive(Debug, Clone)]
pub struct TargetNeed {
    pub path: PathBuf,
    pub direct: bool,
    /// `sync=`: O_SYNC, O_DSYNC or 0, opened besides O_DIRECT; a path used
    /// with two of them is two descriptors, as direct and buffered are.
    pub open_sync: i32,
    pub write: bool,
    /// Bytes the file must hold (layout size); 0 for "whatever it has".
    pub min_size: u64,
    /// `create_on_open`: a missing file is created empty and nothing is laid
    /// out; the job's writes fill it.
    pub no_layout: bool,
    /// `allow_mounted_write=1` of the job that needs it. Overrides are
    /// scoped: a target shared by several writing jobs is covered only when
    /// every one of them says so (a reader's setting does not count).
    pub allow_mounted_write: bool,
    /// `allow_file_create`: a missing file may be created (every job
    /// using the path must allow it).
    pub may_create: bool,
    /// `fallocate=`: how layout reserves the space before writing it.
    pub fallocate: Fallocate,
    /// Layout writes data (false: `overwrite=0` on a job that only writes:
    /// the file is sized and its space reserved, as fio does).
    pub fill: bool,
    /// A generated name with directories (`filename_format=a/b/$jobnum`):
    /// create the missing directories, as fio does.
    pub make_dirs: bool,
}

pub use crate::job::spec::Fallocate;

/// The set of open targets of a run.
#[derive(Debug, Default)]
pub struct TargetTable {
    pub targets: Vec<Target>,
    index: HashMap<(PathBuf, bool, i32), usize>,
}

impl TargetTable {
    pub fn get(&self, path: &Path, direct: bool, open_sync: i32) -> Option<&Target> {
        self.index
            .get(&(path.to_path_buf(), direct, open_sync))
            .map(|&i| &self.targets[i])
    }

    /// Files created by this run, with their identity.
    pub fn created_files(&self) -> Vec<CreatedFile> {
        self.targets
            .iter()
            .filter(|t| t.created)
            .filter_map(|t| {
                t.identity.map(|(dev, ino)| CreatedFile {
                    path: t.path.clone(),
                    dev,
                    ino,
                })
            })
            .collect()
    }

    /// Close every target and remove the files this run created: a run that
    /// fails before its first I/O leaves nothing behind. Files dioscope did
    /// not create are never removed.
    pub fn discard(self) {
        let created = self.created_files();
        drop(self);
        for c in &created {
            c.remove();
        }
    }

    /// Open every target once. `check_write` is called for a block device
    /// that will be written, before it is opened for writing.
    pub fn open_all(
        needs: &[TargetNeed],
        destroy_data_on: &[String],
    ) -> Result<TargetTable, TargetError> {
        // Merge needs per (path, direct, sync).
        let mut merged: Vec<TargetNeed> = Vec::new();
        for n in needs {
            match merged
                .iter_mut()
                .find(|m| m.path == n.path && m.direct == n.direct && m.open_sync == n.open_sync)
            {
                Some(m) => {
                    m.allow_mounted_write = match (m.write, n.write) {
                        (true, true) => m.allow_mounted_write && n.allow_mounted_write,
                        (false, true) => n.allow_mounted_write,
                        _ => m.allow_mounted_write,
                    };
                    m.write |= n.write;
                    m.min_size = m.min_size.max(n.min_size);
                    m.no_layout &= n.no_layout;
                    m.fill |= n.fill;
                    m.may_create &= n.may_create;
                }
                None => merged.push(n.clone()),
            }
        }
        // One file used with and without O_DIRECT (fio's falloc.fio: buffered
        // jobs, then a direct one on the same file) is laid out once, to the
        // larger size, by whichever entry comes first.
        for i in 0..merged.len() {
            let most = merged
                .iter()
                .filter(|m| m.path == merged[i].path)
                .map(|m| m.min_size)
                .max()
                .unwrap_or(0);
            merged[i].min_size = most;
        }
        // Every target is opened and judged before any is created or laid
        // out: a refusal for the last job leaves the first job's file as it was.
        let mut checked = Vec::with_capacity(merged.len());
        for n in &merged {
            checked.push(check_one(n, destroy_data_on)?);
        }
        let mut table = TargetTable::default();
        for (n, opened) in merged.iter().zip(checked) {
            // A missing file an earlier entry of this run just created is
            // opened as it is now, not created a second time.
            let opened = match opened {
                None if table.targets.iter().any(|t| t.info.path == n.path) => {
                    match check_one(n, destroy_data_on) {
                        Ok(o) => o,
                        Err(e) => {
                            table.discard();
                            return Err(e);
                        }
                    }
                }
                o => o,
            };
            let t = match open_one(n, opened) {
                Ok(t) => t,
                Err(e) => {
                    table.discard();
                    return Err(e);
                }
            };
            table
                .index
                .insert((n.path.clone(), n.direct, n.open_sync), table.targets.len());
            table.targets.push(t);
        }
        Ok(table)
    }
}

/// A file this run created, known by device and inode.
#[derive(Debug, Clone)]
pub struct CreatedFile {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
}

impl CreatedFile {
    /// Remove the file only if the path still names the inode this run
    /// created: a user's file put there meanwhile (or a symlink) stays.
    /// Returns whether it was removed.
    pub fn remove(&self) -> bool {
        dioscope_sys::signal::unregister_scratch(&self.path);
        remove_if_same(&self.path, self.dev, self.ino)
    }
}

pub use crate::outfile::{is_dev_dir, lands_in_dev, remove_if_same};

/// Block device queue values from sysfs by device number (no open needed).
pub fn sysfs_block_attr(rdev: (u32, u32), attr: &str) -> Option<String> {
    let base = format!("/sys/dev/block/{}:{}", rdev.0, rdev.1);
    std::fs::read_to_string(format!("{base}/{attr}"))
        .or_else(|_| std::fs::read_to_string(format!("{base}/../{attr}")))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Phase one: open `n` read-only and let the guard judge it when a job
/// writes it. `None`: it does not exist and may be created (phase two).
fn check_one(
    n: &TargetNeed,
    destroy_data_on: &[String],
) -> Result<Option<crate::safety::Opened>, TargetError> {
    use crate::safety::{decide, Decision, Opened, WriteGuard};
    use std::os::unix::fs::FileTypeExt;
    let p = || n.path.display().to_string();
    // Open first, then decide on what was opened: the path is never looked
    // at again, so a symlink or node swapped meanwhile cannot redirect the
    // writes.
    let open = if n.write {
        Opened::open
    } else {
        Opened::open_shared
    };
    let opened = match open(&n.path) {
        Ok(o) => o,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if lands_in_dev(&n.path) {
                // Never create regular files in /dev: a typo in a device name
                // must not turn into a file that fills the devtmpfs.
                return Err(TargetError::NoDevice { path: p() });
            }
            if !n.may_create {
                return Err(TargetError::Refused(format!(
                    "{}: no such file, and allow_file_create=0 forbids creating it; create it first \
                     or drop allow_file_create=0",
                    p()
                )));
            }
            if n.min_size == 0 {
                return Err(TargetError::NeedSize { path: p() });
            }
            return Ok(None);
        }
        Err(e) => {
            let is_dev = std::fs::metadata(&n.path).is_ok_and(|m| m.file_type().is_block_device());
            if n.write && is_dev {
                // The guard could not look at the device: that is its refusal.
                return Err(TargetError::Refused(
                    crate::safety::SafetyError::Inspect {
                        device: n.path.clone(),
                        what: format!("read-only open of {} to check it", n.path.display()),
                        source: e,
                    }
                    .to_string(),
                ));
            }
            return Err(io_err(&n.path, "read-only", e));
        }
    };
    let ft = opened.meta.file_type();
    if is_null_device(&opened.meta) {
        // Writes vanish and reads come from nowhere: no data to guard.
        return Ok(Some(opened));
    }
    if !ft.is_block_device() && !ft.is_file() {
        return Err(TargetError::Refused(format!(
            "{} is neither a regular file nor a block device ({}); point filename= at a file or a block device",
            n.path.display(),
            kind_name(&ft)
        )));
    }
    if n.write && ft.is_block_device() {
        use std::os::unix::fs::MetadataExt;
        let rdev = crate::safety::DevNum::from_dev_t(opened.meta.rdev());
        if sysfs_block_attr((rdev.major, rdev.minor), "ro").as_deref() == Some("1") {
            return Err(TargetError::ReadOnly {
                path: p(),
                why: format!("/sys/dev/block/{rdev}/ro is 1"),
            });
        }
    }
    if n.write {
        let guard = WriteGuard {
            allow_mounted_write: n.allow_mounted_write,
            destroy_data_on,
        };
        if let Decision::Refuse(reasons) = decide(&opened, &n.path, &guard) {
            return Err(TargetError::Refused(crate::safety::describe_reasons(
                &reasons,
            )));
        }
    }
    Ok(Some(opened))
}

/// Phase two: create a missing file, lay out a short one, and open the
/// descriptor the run uses — always through the judged descriptor.
fn open_one(n: &TargetNeed, checked: Option<crate::safety::Opened>) -> Result<Target, TargetError> {
    use std::os::unix::fs::FileTypeExt;
    let (opened, created) = match checked {
        Some(o) => (o, false),
        None => (create_target(n)?, true),
    };
    if is_null_device(&opened.meta) {
        return open_null_device(n, opened);
    }
    if opened.meta.file_type().is_block_device() {
        return open_block_device(n, opened);
    }
    open_file(n, opened, created)
}

/// How a target's descriptor is opened: `read-write` or `read-only` (for
/// errors) and the flags the job asks for: O_DIRECT, and `sync=`'s O_SYNC
/// or O_DSYNC.
fn open_mode(n: &TargetNeed) -> (&'static str, i32) {
    let mode = if n.write { "read-write" } else { "read-only" };
    let direct = if n.direct { libc::O_DIRECT } else { 0 };
    (mode, direct | n.open_sync)
}

/// A device target's descriptor, opened with O_NOATIME as fio opens every
/// target that is not a regular file: each read through a descriptor
/// without it updates the device node's access time (touch_atime in the
/// kernel's read path, about 2 % of a 4 KiB read's CPU on zram). Where the
/// kernel refuses O_NOATIME (EPERM: not the node's owner), it is opened
/// without, as fio does.
fn reopen_device(opened: &crate::safety::Opened, write: bool, flags: i32) -> io::Result<File> {
    match opened.reopen(write, flags | libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => opened.reopen(write, flags),
        r => r,
    }
}

/// A missing target file, created (with its directories when the job
/// asks): the inode is ours, registered for removal on a stop signal.
fn create_target(n: &TargetNeed) -> Result<crate::safety::Opened, TargetError> {
    if n.make_dirs {
        if let Some(d) = n.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d).map_err(|e| io_err(&n.path, "create", e))?;
        }
    }
    // create_new (O_CREAT|O_EXCL, no symlink followed): the inode is ours.
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&n.path)
        .map_err(|e| io_err(&n.path, "create", e))?;
    let meta = f.metadata().map_err(|e| io_err(&n.path, "fstat", e))?;
    dioscope_sys::signal::register_scratch(&n.path);
    Ok(crate::safety::Opened {
        file: f,
        meta,
        exclusive: true,
        claimed: true,
    })
}

/// `/dev/null` or `/dev/zero` as a target: the job's `size` is its size.
fn open_null_device(n: &TargetNeed, opened: crate::safety::Opened) -> Result<Target, TargetError> {
    let p = || n.path.display().to_string();
    let (mode, direct_flag) = open_mode(n);
    if n.min_size == 0 {
        return Err(TargetError::Refused(format!(
            "{} has no size of its own; add size=, for example size=1g",
            p()
        )));
    }
    let file = match reopen_device(&opened, n.write, direct_flag) {
        Ok(f) => f,
        Err(e) if n.direct && e.raw_os_error() == Some(libc::EINVAL) => {
            return Err(TargetError::Refused(format!(
                "{}: the kernel refuses O_DIRECT on this character device (EINVAL; fio \
                 fails the same way); use direct=0",
                p()
            )))
        }
        Err(e) => return Err(io_err(&n.path, mode, e)),
    };
    Ok(Target {
        file,
        checked: Some(opened),
        identity: None,
        info: TargetInfo {
            path: n.path.clone(),
            kind: TargetKind::NullDevice,
            size: n.min_size,
            offset_align: 512,
            mem_align: 512,
            align_source: "a character device (no alignment of its own)".into(),
            direct: n.direct,
            writable: n.write,
            created: false,
            prior_size: n.min_size,
            open_sync: n.open_sync,
        },
    })
}

/// A block device: its size and logical block size from the kernel.
fn open_block_device(n: &TargetNeed, opened: crate::safety::Opened) -> Result<Target, TargetError> {
    use std::os::unix::fs::MetadataExt;
    let (mode, direct_flag) = open_mode(n);
    let file =
        reopen_device(&opened, n.write, direct_flag).map_err(|e| io_err(&n.path, mode, e))?;
    let size = dioscope_sys::block::size_bytes(file.as_raw_fd())
        .map_err(|e| io_err(&n.path, "BLKGETSIZE64", e))?;
    let rdev = crate::safety::DevNum::from_dev_t(opened.meta.rdev());
    let lbs = dioscope_sys::block::logical_block_size(file.as_raw_fd())
        .ok()
        .or_else(|| {
            sysfs_block_attr((rdev.major, rdev.minor), "queue/logical_block_size")
                .and_then(|s| s.parse().ok())
        })
        .unwrap_or(512);
    Ok(Target {
        file,
        checked: Some(opened),
        identity: None,
        info: TargetInfo {
            path: n.path.clone(),
            kind: TargetKind::BlockDevice,
            size,
            offset_align: lbs,
            mem_align: lbs,
            align_source: "the device's logical block size".into(),
            direct: n.direct,
            writable: n.write,
            created: false,
            prior_size: size,
            open_sync: n.open_sync,
        },
    })
}

/// A regular file: laid out to the job's size when short, then opened
/// with its direct-I/O alignment; a file created here is removed again
/// when this fails.
fn open_file(
    n: &TargetNeed,
    opened: crate::safety::Opened,
    created: bool,
) -> Result<Target, TargetError> {
    use std::os::unix::fs::MetadataExt;
    let p = || n.path.display().to_string();
    let (mode, direct_flag) = open_mode(n);
    let identity = created.then(|| (opened.meta.dev(), opened.meta.ino()));
    let undo = |e: TargetError| {
        if let Some((dev, ino)) = identity {
            dioscope_sys::signal::unregister_scratch(&n.path);
            remove_if_same(&n.path, dev, ino);
        }
        e
    };
    let have = opened.meta.len();
    if have < n.min_size && !n.no_layout {
        let w = opened
            .reopen(true, 0)
            .map_err(|e| undo(io_err(&n.path, "create", e)))?;
        layout(
            &n.path,
            &opened,
            &w,
            have,
            n.min_size,
            created,
            n.fallocate,
            n.fill,
        )
        .map_err(|mut e| {
            if let TargetError::NoSpace { free, .. } = &mut e {
                // Free once the partial layout is gone: what the user has.
                *free = free_bytes(&n.path);
            }
            undo(e)
        })?;
    }
    // Opened read-write only when a job writes; layout used its own handle.
    let file = match opened.reopen(n.write, direct_flag) {
        Ok(f) => f,
        Err(e) if n.direct && e.raw_os_error() == Some(libc::EINVAL) => {
            return Err(undo(TargetError::DirectUnsupported { path: p() }))
        }
        Err(e) => return Err(undo(io_err(&n.path, mode, e))),
    };
    let st = statx_fd(file.as_raw_fd()).map_err(|e| undo(io_err(&n.path, "statx", e)))?;
    let (mem_align, offset_align, src) = match st.dio_align {
        Some((0, 0)) if n.direct => return Err(undo(TargetError::DirectUnsupported { path: p() })),
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
        checked: Some(opened),
        identity,
        info: TargetInfo {
            path: n.path.clone(),
            kind: TargetKind::File,
            size: st.size,
            offset_align,
            mem_align,
            align_source: src.into(),
            direct: n.direct,
            writable: n.write,
            created,
            prior_size: if created { 0 } else { have },
            open_sync: n.open_sync,
        },
    })
}

/// `/dev/null` (1:3) or `/dev/zero` (1:5), known by device number, not
/// by name: another character device (a tty, /dev/mem) stays refused.
fn is_null_device(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let rdev = crate::safety::DevNum::from_dev_t(meta.rdev());
    meta.file_type().is_char_device() && rdev.major == 1 && matches!(rdev.minor, 3 | 5)
}

fn kind_name(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else {
        "not a file"
    }
}

/// Create or extend a file to `need` bytes of incompressible data. Writes
/// with O_DIRECT where the filesystem allows (no page-cache pollution), in
/// 1 MiB chunks. Space is reserved first so a full disk fails early.
///
/// Whatever happens, the user's data survives: the bytes of an existing file
/// are never rewritten (an unaligned tail is extended with a buffered write
/// first), and on failure or a stop signal a created file is removed and an
/// extended one is cut back to its old size.
#[allow(clippy::too_many_arguments)] // each is one fact of the layout; a struct would only rename them
fn layout(
    path: &Path,
    opened: &crate::safety::Opened,
    plain: &File,
    have: u64,
    need: u64,
    create: bool,
    how: Fallocate,
    fill: bool,
) -> Result<(), TargetError> {
    // Everything goes through descriptors proven to be the opened inode.
    let (f, direct) = match opened.reopen(true, libc::O_DIRECT) {
        Ok(f) => (f, true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (
            plain.try_clone().map_err(|e| io_err(path, "create", e))?,
            false,
        ),
        Err(e) => return Err(io_err(path, "create", e)),
    };
    let fd = f.as_raw_fd();
    // The caller removes a created file (by identity) on error.
    let cleanup = |e: TargetError| {
        if !create {
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
    reserve(path, fd, how, have, need).map_err(|e| match e {
        Some(e) => cleanup(e),
        None => cleanup(no_space(have)),
    })?;
    if !fill {
        // overwrite=0: the size is the file's, the data is the job's writes.
        dioscope_sys::fs::ftruncate(fd, need).map_err(|e| cleanup(io_err(path, "truncate", e)))?;
        return Ok(());
    }
    const CHUNK: usize = 1 << 20;
    let mut arena = dioscope_sys::queue::SlotArena::new(1, CHUNK)
        .map_err(|e| cleanup(io_err(path, "allocate buffer", e)))?;
    let mut seed = 0x5eed_u64 ^ need;
    let mut off = have;
    if direct && !have.is_multiple_of(4096) {
        off += write_unaligned_head(path, plain, &mut arena, seed, have, need)
            .map_err(|e| cleanup(e.unwrap_or_else(|| no_space(have))))?;
    }
    let mut progress =
        crate::console::Progress::new(format!("laying out {}", path.display()), need - have);
    while off < need {
        progress.update(off - have);
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

/// fio's `fallocate=`: reserve the space from `have` to `need` before the
/// data is written (the data is written in every mode, so reads never hit
/// holes). `Err(None)`: no space left; a mode the file system lacks is no
/// error (the data is written out instead), except `posix`.
fn reserve(
    path: &Path,
    fd: RawFd,
    how: Fallocate,
    have: u64,
    need: u64,
) -> Result<(), Option<TargetError>> {
    let reserved = match how {
        Fallocate::None => Ok(()),
        Fallocate::Native => dioscope_sys::fs::fallocate(fd, have, need - have),
        Fallocate::Posix => dioscope_sys::fs::posix_fallocate(fd, have, need - have),
        Fallocate::Keep => dioscope_sys::fs::fallocate_keep_size(fd, have, need - have),
        Fallocate::Truncate => dioscope_sys::fs::ftruncate(fd, need),
    };
    match reserved {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => Err(None),
        Err(e) if how == Fallocate::Posix => {
            Err(Some(io_err(path, "posix_fallocate (fallocate=posix)", e)))
        }
        // Not supported (e.g. some filesystems): write it out instead.
        Err(_) => Ok(()),
    }
}

/// Up to the next aligned boundary through the page cache (`plain`), so
/// the existing bytes of the partial block are kept: the bytes written.
/// `Err(None)`: no space left.
fn write_unaligned_head(
    path: &Path,
    plain: &File,
    arena: &mut dioscope_sys::queue::SlotArena,
    seed: u64,
    have: u64,
    need: u64,
) -> Result<u64, Option<TargetError>> {
    let head = (have.next_multiple_of(4096).min(need) - have) as usize;
    arena.fill_random(seed);
    let wrote = (|| -> io::Result<usize> {
        let n = dioscope_sys::io::pwrite(plain.as_raw_fd(), &arena.slot_mut(0)[..head], have)?;
        dioscope_sys::io::fdatasync(plain.as_raw_fd())?;
        Ok(n)
    })();
    match wrote {
        Ok(n) if n == head => Ok(n as u64),
        Ok(_) => Err(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => Err(None),
        Err(e) => Err(Some(io_err(path, "write (layout)", e))),
    }
}

/// Check that `value` is a multiple of the target's alignment.
pub fn check_aligned(t: &TargetInfo, what: &'static str, value: u64) -> Result<(), TargetError> {
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
        from: t.align_source.clone(),
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
                open_sync: 0,
                write: false,
                min_size: 3 << 20,
                no_layout: false,
                fill: true,
                allow_mounted_write: false,
                may_create: true,
                fallocate: Fallocate::Native,
                make_dirs: false,
            },
            TargetNeed {
                path: p.clone(),
                direct: false,
                open_sync: 0,
                write: true,
                min_size: 1 << 20,
                no_layout: false,
                fill: true,
                allow_mounted_write: false,
                may_create: true,
                fallocate: Fallocate::Native,
                make_dirs: false,
            },
        ];
        let t = TargetTable::open_all(&needs, &[]).unwrap();
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
                open_sync: 0,
                write: false,
                min_size: 0,
                no_layout: false,
                fill: true,
                allow_mounted_write: false,
                may_create: true,
                fallocate: Fallocate::Native,
                make_dirs: false,
            }],
            &[],
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
                open_sync: 0,
                write: false,
                min_size: 0,
                no_layout: false,
                fill: true,
                allow_mounted_write: false,
                may_create: true,
                fallocate: Fallocate::Native,
                make_dirs: false,
            }],
            &[],
        )
        .unwrap();
        let mut tg = TargetTable::default();
        drop(tg.targets.drain(..));
        let t0 = &t.targets[0];
        let fake = Target {
            file: t0.file.try_clone().unwrap(),
            checked: None,
            identity: None,
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
