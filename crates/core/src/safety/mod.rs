//! The destructive-write guard: before dioscope writes to a block device (or
//! to a file that backs one) it makes sure nothing lives there, unless the
//! user said, for this device, that its data may be destroyed.
//!
//! The rules live in one function, [`decide`]. It takes an [`Opened`]
//! target (a read-only descriptor, `O_EXCL` for block devices) and looks at
//! *that object*, never at a path again; writes then go through
//! [`Opened::reopen`], which reopens the same descriptor via
//! `/proc/self/fd/N` and proves it is the same device or inode. A symlink or
//! device node swapped between the check and the write does not matter.
//!
//! For a block device, [`decide`] looks up the stack ([`holders::family`]:
//! partitions, device-mapper/md/bcache holders, loop devices over it) and
//! down it ([`holders::below`]: a partition's disk, a loop device's backing
//! device or file) and refuses when a member is
//!
//! 1. mounted ([`mounts`], `/proc/self/mountinfo`),
//! 2. active swap (`/proc/swaps`),
//! 3. a device stacked on it exists at all (an LVM volume, a RAID, a loop),
//! 4. held open or mapped by another process ([`openers`], `/proc/*/fd` and
//!    `/proc/*/maps`; only users still there 0.3 s later, so a passing
//!    `losetup -f` or blkid does not count),
//! 5. claimed exclusively by the kernel (the `O_EXCL` open failed with EBUSY:
//!    mounts in other namespaces, multi-device btrfs, md members),
//! 6. carrying a signature ([`signatures`]: our magic-byte probe of the head
//!    and tail, and util-linux's `blkid -p`), on the device or on any of its
//!    partitions; below a loop device with an offset, a filesystem that
//!    starts before the range also counts.
//!
//! A regular file that backs an attached loop device is decided as that
//! device. Any check that cannot be made (sysfs or /proc unreadable, blkid
//! missing, not util-linux's or not startable) refuses: the guard fails
//! closed, and the message names the check and the override.
//!
//! Everything is read-only: the device is only ever opened `O_RDONLY` here,
//! so a refused check leaves it, and the page cache over it, as it was.

pub mod devnum;
pub mod holders;
pub mod mounts;
pub mod openers;
pub mod signatures;

pub use devnum::DevNum;
pub use openers::{other_openers, Opener};
pub use signatures::Signature;

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What the user allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteGuard<'a> {
    /// `allow_mounted_write=1` of the job(s) writing this target: skip the
    /// checks for this target. The caller scopes it (see
    /// `targets::TargetNeed::allow_mounted_write`).
    pub allow_mounted_write: bool,
    /// `--destroy-data-on=DEV` (repeatable): skip the checks for these devices.
    /// Matched by device number, so a symlink to the device counts.
    pub destroy_data_on: &'a [String],
}

/// Why a write to a block device was refused. Each message names the check,
/// the device, what was found and how to override.
#[derive(Debug, thiserror::Error)]
pub enum SafetyError {
    #[error(
        "refusing to write to {dev}: {member} is mounted on {mp} ({fstype}); unmount it first. \
         Writing under a mounted filesystem corrupts it and can crash the kernel, so even the \
         override ({hint}) is a bad idea here",
        dev = .device.display(), mp = .mount_point.display(), hint = override_hint(.device)
    )]
    Mounted {
        device: PathBuf,
        /// The family member that is mounted, phrased as a sentence subject.
        member: String,
        mount_point: PathBuf,
        fstype: String,
    },

    #[error(
        "refusing to write to {dev}: {member} is in use as swap ({swap}); `swapoff {swap}` \
         first. Overwriting active swap corrupts the memory of running processes, so even the \
         override ({hint}) is a bad idea here",
        dev = .device.display(), hint = override_hint(.device)
    )]
    Swap {
        device: PathBuf,
        member: String,
        swap: String,
    },

    #[error(
        "refusing to write to {dev}: {member} is built on it (device-mapper, md or loop), so \
         writing destroys that device's data; tear it down first, or {hint}",
        dev = .device.display(), hint = override_hint(.device)
    )]
    Stacked { device: PathBuf, member: String },

    #[error(
        "refusing to write to {dev}: it is held open by {list}; stop {them} first, or {hint}",
        dev = .device.display(), list = describe_openers(.openers),
        them = if .openers.len() == 1 { "it" } else { "them" }, hint = override_hint(.device)
    )]
    OpenedByOthers {
        device: PathBuf,
        openers: Vec<Opener>,
    },

    #[error(
        "refusing to write to {dev}: the kernel has claimed it exclusively (EBUSY on an O_EXCL \
         open: mounted in another mount namespace, part of a btrfs or md array, or held by a \
         driver); release it first, or {hint}",
        dev = .device.display(), hint = override_hint(.device)
    )]
    Busy { device: PathBuf },

    #[error(
        "refusing to write to {dev}: it carries {what} (`wipefs {dev}` lists the signatures); if \
         its data is expendable, {hint}",
        dev = .device.display(), what = describe_signatures(.found), hint = override_hint(.device)
    )]
    Signature {
        device: PathBuf,
        found: Vec<Signature>,
    },

    #[error(
        "refusing to write to {dev}: it is built on {below}, which {finding}; writing through it \
         destroys that data; if it is expendable, {hint}",
        dev = .device.display(), hint = override_hint(.device)
    )]
    Below {
        device: PathBuf,
        /// "the loop device's backing device /dev/loop3", "its disk /dev/sda".
        below: String,
        /// "is mounted on /mnt (ext4)", "carries ext4".
        finding: String,
    },

    #[error(
        "refusing to write to {file}: it is the backing file of the attached loop device {lo}, \
         so writing it writes that device, and {inner}",
        file = .file.display()
    )]
    BackingFile {
        file: PathBuf,
        lo: String,
        inner: Box<SafetyError>,
    },

    #[error(
        "refusing to write to {file}: it is an active swap file; `swapoff {file}` first",
        file = .file.display()
    )]
    SwapFile { file: PathBuf },

    #[error(
        "refusing to write to {dev}: a safety check could not run ({what}), so dioscope cannot \
         tell whether it holds data; fix that, or if you are sure it holds nothing, {hint}",
        dev = .device.display(), hint = override_hint(.device)
    )]
    Check { device: PathBuf, what: String },

    #[error(
        "refusing to write to {dev}: could not check whether it is in use ({what}: {source}); \
         if you are sure it holds nothing, {hint}",
        dev = .device.display(), hint = override_hint(.device)
    )]
    Inspect {
        device: PathBuf,
        what: String,
        source: io::Error,
    },
}

impl SafetyError {
    /// The device the write was meant for.
    pub fn device(&self) -> &Path {
        match self {
            SafetyError::Mounted { device, .. }
            | SafetyError::Swap { device, .. }
            | SafetyError::Stacked { device, .. }
            | SafetyError::OpenedByOthers { device, .. }
            | SafetyError::Busy { device }
            | SafetyError::Signature { device, .. }
            | SafetyError::Inspect { device, .. }
            | SafetyError::Below { device, .. }
            | SafetyError::Check { device, .. } => device,
            SafetyError::BackingFile { file, .. } | SafetyError::SwapFile { file } => file,
        }
    }
}

impl SafetyError {
    /// What was found, in a few words, for naming the further reasons after
    /// the first one's full message: "held open by pid 7 (`blkid`, read-only)".
    pub fn brief(&self) -> String {
        match self {
            SafetyError::Mounted {
                member,
                mount_point,
                ..
            } => format!("{member} is mounted on {}", mount_point.display()),
            SafetyError::Swap { member, swap, .. } => {
                format!("{member} is in use as swap ({swap})")
            }
            SafetyError::Stacked { member, .. } => format!("{member} is built on it"),
            SafetyError::OpenedByOthers { openers, .. } => {
                format!("held open by {}", describe_openers(openers))
            }
            SafetyError::Busy { .. } => "claimed exclusively by the kernel (EBUSY)".into(),
            SafetyError::Signature { found, .. } => {
                format!("carries {}", describe_signatures(found))
            }
            SafetyError::Below { below, finding, .. } => {
                format!("built on {below}, which {finding}")
            }
            SafetyError::BackingFile { lo, .. } => format!("backing file of {lo}"),
            SafetyError::SwapFile { .. } => "an active swap file".into(),
            SafetyError::Check { what, .. } => format!("a safety check could not run ({what})"),
            SafetyError::Inspect { what, .. } => format!("could not check it ({what})"),
        }
    }
}

/// The first (most serious) reason in full, then the others by
/// [`SafetyError::brief`]: "… (also found: it carries ext4; held open by …)".
pub fn describe_reasons(reasons: &[SafetyError]) -> String {
    let Some(first) = reasons.first() else {
        return String::new();
    };
    let rest: Vec<String> = reasons[1..].iter().map(SafetyError::brief).collect();
    if rest.is_empty() {
        first.to_string()
    } else {
        format!("{first} (also found: {})", rest.join("; "))
    }
}

fn override_hint(dev: &Path) -> String {
    format!(
        "pass --destroy-data-on={} (destroys its data) or allow_mounted_write=1",
        dev.display()
    )
}

fn describe_openers(openers: &[Opener]) -> String {
    let each: Vec<String> = openers
        .iter()
        .map(|o| {
            let mode = if o.writable {
                "for writing"
            } else {
                "read-only"
            };
            format!("pid {} (`{}`, {mode})", o.pid, o.comm)
        })
        .collect();
    each.join(", ")
}

fn describe_signatures(found: &[Signature]) -> String {
    let names: Vec<&str> = found.iter().map(Signature::name).collect();
    let kind = if found
        .iter()
        .all(|s| matches!(s, Signature::Gpt | Signature::Mbr))
    {
        "a partition table"
    } else {
        "a signature"
    };
    format!("{kind} ({})", names.join(", "))
}

/// Whether `destroy_data_on` names this object: a block device by device
/// number, a file by device and inode (so symlinks and other names count),
/// anything else by canonical path.
fn destroy_allowed(meta: &fs::Metadata, destroy_data_on: &[String]) -> bool {
    destroy_data_on
        .iter()
        .any(|entry| match fs::metadata(entry) {
            Ok(m) if m.file_type().is_block_device() => {
                meta.file_type().is_block_device() && m.rdev() == meta.rdev()
            }
            Ok(m) if m.file_type().is_file() => {
                meta.file_type().is_file() && m.dev() == meta.dev() && m.ino() == meta.ino()
            }
            _ => false,
        })
}

/// A target opened for the guard: read-only, `O_EXCL` for block devices,
/// non-blocking (a FIFO does not hang the open). The decision is made on
/// this descriptor and the writes go through [`Opened::reopen`].
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub meta: fs::Metadata,
    /// The `O_EXCL` claim succeeded (always true for non-devices opened by
    /// [`Opened::open`]). A block device claimed by the kernel (mounted
    /// elsewhere, an md or btrfs member) is opened without it and refused by
    /// [`decide`]; one opened by [`Opened::open_shared`] is probed by
    /// [`decide`] itself.
    pub exclusive: bool,
    /// Whether an `O_EXCL` claim was attempted.
    pub claimed: bool,
}

impl Opened {
    /// Open `path` read-only (following symlinks: whatever it is *now* is
    /// what gets checked and written), claiming a block device with `O_EXCL`.
    pub fn open(path: &Path) -> io::Result<Opened> {
        Opened::open_with(path, true)
    }

    /// Open `path` read-only without claiming it: for targets that are only
    /// read (reading a mounted disk is legitimate) and for looking at the
    /// layers below a device.
    pub fn open_shared(path: &Path) -> io::Result<Opened> {
        Opened::open_with(path, false)
    }

    fn open_with(path: &Path, claim: bool) -> io::Result<Opened> {
        let open = |excl: bool| {
            let flags = libc::O_NONBLOCK | libc::O_NOCTTY | if excl { libc::O_EXCL } else { 0 };
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(flags)
                .open(path)
        };
        // A tool that scans devices (LVM, mkfs, udev) may claim one for a
        // moment: only a claim that lasts 0.3 s counts as busy.
        let mut tries = 0;
        if !claim {
            let file = open(false)?;
            let meta = file.metadata()?;
            return Ok(Opened {
                file,
                meta,
                exclusive: false,
                claimed: false,
            });
        }
        let (file, exclusive) = loop {
            match open(true) {
                Ok(f) => break (f, true),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 3 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break (open(false)?, false),
                Err(e) => return Err(e),
            }
        };
        let meta = file.metadata()?;
        Ok(Opened {
            file,
            meta,
            exclusive,
            claimed: true,
        })
    }

    /// A new descriptor on the same object, opened through
    /// `/proc/self/fd/N` (not the path, which may point elsewhere by now)
    /// with the access the run needs, and checked to be the same device
    /// (`st_rdev`) or the same inode (`st_dev`, `st_ino`).
    pub fn reopen(&self, write: bool, custom_flags: i32) -> io::Result<File> {
        let f = fs::OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(custom_flags)
            .open(format!("/proc/self/fd/{}", self.file.as_raw_fd()))?;
        let m = f.metadata()?;
        if !same_object(&self.meta, &m) {
            return Err(io::Error::other(
                "the reopened descriptor is not the checked object (changed under us)",
            ));
        }
        Ok(f)
    }
}

/// Same block device, or same inode.
fn same_object(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    if a.file_type().is_block_device() || b.file_type().is_block_device() {
        return b.file_type().is_block_device()
            && a.file_type().is_block_device()
            && a.rdev() == b.rdev();
    }
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// The guard's verdict.
#[derive(Debug)]
pub enum Decision {
    Allow,
    /// Every reason found (the first is the most serious).
    Refuse(Vec<SafetyError>),
}

impl Decision {
    /// `Err` with the first reason, for callers that report one.
    fn into_result(self) -> Result<(), SafetyError> {
        match self {
            Decision::Allow => Ok(()),
            Decision::Refuse(mut r) => Err(r.remove(0)),
        }
    }
}

/// THE guard: may `o` (opened as [`Opened::open`] does, named `name` in
/// messages) be written, given the user's overrides? All the rules are
/// here; see the module docs.
pub fn decide(o: &Opened, name: &Path, guard: &WriteGuard) -> Decision {
    let ft = o.meta.file_type();
    if guard.allow_mounted_write || destroy_allowed(&o.meta, guard.destroy_data_on) {
        return Decision::Allow;
    }
    let mut out = Vec::new();
    if ft.is_block_device() {
        let proc = ProcView::read(name, &mut out);
        block_reasons(o, name, &proc, &mut out);
    } else if ft.is_file() {
        file_reasons(o, name, guard, &mut out);
    }
    if out.is_empty() {
        Decision::Allow
    } else {
        Decision::Refuse(out)
    }
}

/// Refuse to write to `dev` if it is a block device (or a file backing one)
/// that is in use or holds data, unless `guard` allows it: [`decide`] on a
/// fresh [`Opened`]. Missing paths pass: there is nothing to destroy.
pub fn check_block_device_write(dev: &Path, guard: &WriteGuard) -> Result<(), SafetyError> {
    match Opened::open(dev) {
        Ok(o) => decide(&o, dev, guard).into_result(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SafetyError::Inspect {
            device: dev.to_path_buf(),
            what: format!("read-only open of {}", dev.display()),
            source: e,
        }),
    }
}

/// mountinfo and swaps, read once per decision.
struct ProcView {
    mounts: Vec<mounts::Mount>,
    swaps: Vec<String>,
}

impl ProcView {
    fn read(dev: &Path, out: &mut Vec<SafetyError>) -> ProcView {
        let mounts = match fs::read_to_string("/proc/self/mountinfo") {
            Ok(t) => mounts::parse_mountinfo(&t, mounts::block_devnum),
            Err(e) => {
                out.push(SafetyError::Inspect {
                    device: dev.to_path_buf(),
                    what: "reading /proc/self/mountinfo".into(),
                    source: e,
                });
                Vec::new()
            }
        };
        // No /proc/swaps means a kernel without swap support: nothing to find.
        let swaps = match fs::read_to_string("/proc/swaps") {
            Ok(t) => mounts::parse_swaps(&t),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                out.push(SafetyError::Inspect {
                    device: dev.to_path_buf(),
                    what: "reading /proc/swaps".into(),
                    source: e,
                });
                Vec::new()
            }
        };
        ProcView { mounts, swaps }
    }

    fn mounted(&self, d: DevNum) -> Option<&mounts::Mount> {
        self.mounts.iter().find(|m| m.is_on(d))
    }

    fn swap(&self, d: DevNum) -> Option<&String> {
        self.swaps
            .iter()
            .find(|s| mounts::block_devnum(s) == Some(d))
    }
}

fn sys() -> &'static Path {
    Path::new("/sys")
}

/// Why a block device must not be written: its family (partitions,
/// holders) mounted, swapped on or stacked; the layers below it in use;
/// other processes holding it; no exclusive open; signatures of data.
fn block_reasons(o: &Opened, name: &Path, proc: &ProcView, out: &mut Vec<SafetyError>) {
    let dev = name.to_path_buf();
    let rdev = DevNum::from_dev_t(o.meta.rdev());
    let family = match holders::family(sys(), rdev) {
        Ok(f) => f,
        Err(e) => {
            out.push(SafetyError::Inspect {
                device: dev,
                what: format!("reading /sys/dev/block/{rdev}"),
                source: e,
            });
            return;
        }
    };
    family_in_use(&dev, &family, proc, out);
    let (users, files_below) = layers_below(&dev, rdev, &family, proc, out);
    held_open(&dev, users, files_below, out);
    let exclusive = o.exclusive
        || (!o.claimed
            && fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_EXCL | libc::O_NONBLOCK)
                .open(format!("/proc/self/fd/{}", o.file.as_raw_fd()))
                .is_ok());
    if !exclusive {
        out.push(SafetyError::Busy {
            device: dev.clone(),
        });
    }
    signatures_on(&dev, o, rdev, out);
}

/// A member of the device's family mounted, used as swap, or stacked.
fn family_in_use(
    dev: &Path,
    family: &[holders::Member],
    proc: &ProcView,
    out: &mut Vec<SafetyError>,
) {
    let dev = dev.to_path_buf();
    for m in family {
        if let Some(mount) = proc.mounted(m.devnum) {
            out.push(SafetyError::Mounted {
                device: dev.clone(),
                member: m.to_string(),
                mount_point: mount.mount_point.clone(),
                fstype: mount.fstype.clone(),
            });
        }
        if let Some(swap) = proc.swap(m.devnum) {
            out.push(SafetyError::Swap {
                device: dev.clone(),
                member: m.to_string(),
                swap: swap.clone(),
            });
        }
    }
    if let Some(m) = family.iter().find(|m| m.is_stacked()) {
        out.push(SafetyError::Stacked {
            device: dev,
            member: m.to_string(),
        });
    }
}

/// Looking down: the disk under a partition, the device or file under a
/// loop device (and further down, a loop over a loop). Returns every block
/// device that is this one's data (for the openers' check) and the files
/// at the bottom with what to call them.
fn layers_below(
    dev: &Path,
    rdev: DevNum,
    family: &[holders::Member],
    proc: &ProcView,
    out: &mut Vec<SafetyError>,
) -> (HashSet<DevNum>, Vec<(fs::Metadata, String)>) {
    let dev = dev.to_path_buf();
    let mut users: HashSet<DevNum> = family.iter().map(|m| m.devnum).collect();
    let mut cur = rdev;
    let mut files_below: Vec<(fs::Metadata, String)> = Vec::new();
    for _ in 0..16 {
        match holders::below(sys(), cur) {
            Ok(None) => break,
            Err(e) => {
                out.push(SafetyError::Inspect {
                    device: dev.clone(),
                    what: format!("reading the layer below /sys/dev/block/{cur}"),
                    source: e,
                });
                break;
            }
            Ok(Some(holders::Below::Disk { devnum, name, .. })) => {
                let what = format!("its disk {}", holders::dev_path(&name));
                // Its other partitions are other ranges: not ours to judge.
                below_in_use(&dev, devnum, &what, None, proc, out);
                users.insert(devnum);
                cur = devnum;
            }
            Ok(Some(holders::Below::LoopBacking {
                loop_name,
                backing,
                offset,
                len: _,
            })) => {
                let what = format!(
                    "{} (under the loop device {})",
                    backing.display(),
                    holders::dev_path(&loop_name)
                );
                let b = match Opened::open_shared(&backing) {
                    Ok(b) => b,
                    Err(e) => {
                        out.push(SafetyError::Inspect {
                            device: dev.clone(),
                            what: format!("opening the backing file {}", backing.display()),
                            source: e,
                        });
                        break;
                    }
                };
                if offset > 0 {
                    // A filesystem that starts before this range covers it.
                    signatures_before(&dev, &b, &what, out);
                }
                if b.meta.file_type().is_block_device() {
                    let bdev = DevNum::from_dev_t(b.meta.rdev());
                    below_in_use(&dev, bdev, &what, Some(family), proc, out);
                    users.insert(bdev);
                    cur = bdev;
                } else {
                    files_below.push((b.meta.clone(), what));
                    break;
                }
            }
        }
    }
    (users, files_below)
}

/// Other processes holding the device (any of `users`) or a file below it.
fn held_open(
    dev: &Path,
    users: HashSet<DevNum>,
    files_below: Vec<(fs::Metadata, String)>,
    out: &mut Vec<SafetyError>,
) {
    let dev = dev.to_path_buf();
    let id = openers::Identity::Block(users);
    match persistent_openers(&id) {
        Ok(openers) if !openers.is_empty() => out.push(SafetyError::OpenedByOthers {
            device: dev.clone(),
            openers,
        }),
        Ok(_) => {}
        Err(u) => out.push(unreadable(&dev, u)),
    }
    for (meta, what) in files_below {
        let id = openers::Identity::File {
            dev: meta.dev(),
            ino: meta.ino(),
        };
        match persistent_openers(&id) {
            Ok(v) if !v.is_empty() => out.push(SafetyError::Below {
                device: dev.clone(),
                below: what,
                finding: format!("is held open by {}", describe_openers(&v)),
            }),
            Ok(_) => {}
            Err(u) => out.push(unreadable(&dev, u)),
        }
    }
}

/// Signatures of data on the device, and on each of its partitions.
fn signatures_on(dev: &Path, o: &Opened, rdev: DevNum, out: &mut Vec<SafetyError>) {
    let dev = dev.to_path_buf();
    let len = match signatures::size_of(&o.file) {
        Ok(l) => l,
        Err(e) => {
            out.push(SafetyError::Inspect {
                device: dev,
                what: "reading its size".into(),
                source: e,
            });
            return;
        }
    };
    let mut found = Vec::new();
    let mut ranges = vec![(String::new(), 0, len)];
    ranges.extend(
        holders::partitions(sys(), rdev)
            .into_iter()
            .map(|(n, s, l)| (format!(" on its partition {}", holders::dev_path(&n)), s, l)),
    );
    for (where_, start, l) in ranges {
        match signatures::probe_fd(&o.file, start, l) {
            Ok(sigs) => {
                for s in sigs {
                    let s = if where_.is_empty() {
                        s
                    } else {
                        Signature::Other(format!("{}{where_}", s.name()))
                    };
                    if !found.contains(&s) {
                        found.push(s);
                    }
                }
            }
            Err(what) => out.push(SafetyError::Check {
                device: dev.clone(),
                what: format!("signature probe{where_}: {what}"),
            }),
        }
    }
    if !found.is_empty() {
        out.push(SafetyError::Signature { device: dev, found });
    }
}

fn unreadable(dev: &Path, u: openers::Unreadable) -> SafetyError {
    SafetyError::Check {
        device: dev.to_path_buf(),
        what: format!(
            "cannot read {} to see whether it uses the device: {} (run as root)",
            u.what, u.error
        ),
    }
}

/// A device below the target (not the target's own stack) is mounted or swap.
fn below_in_use(
    dev: &Path,
    below: DevNum,
    what: &str,
    ours: Option<&[holders::Member]>,
    proc: &ProcView,
    out: &mut Vec<SafetyError>,
) {
    if let Some(m) = proc.mounted(below) {
        out.push(SafetyError::Below {
            device: dev.to_path_buf(),
            below: what.to_string(),
            finding: format!("is mounted on {} ({})", m.mount_point.display(), m.fstype),
        });
    }
    if let Some(s) = proc.swap(below) {
        out.push(SafetyError::Below {
            device: dev.to_path_buf(),
            below: what.to_string(),
            finding: format!("is in use as swap ({s})"),
        });
    }
    // Anything else built on the lower device besides our own stack (a
    // mounted partition of it, another loop over it, a dm table) uses it.
    let Some(ours) = ours else {
        return;
    };
    if let Ok(fam) = holders::family(sys(), below) {
        let mine: HashSet<DevNum> = ours.iter().map(|m| m.devnum).collect();
        for m in fam.iter().skip(1) {
            if mine.contains(&m.devnum) {
                continue;
            }
            if let Some(mount) = proc.mounted(m.devnum) {
                out.push(SafetyError::Below {
                    device: dev.to_path_buf(),
                    below: what.to_string(),
                    finding: format!(
                        "has {} mounted on {} ({})",
                        holders::dev_path(&m.name),
                        mount.mount_point.display(),
                        mount.fstype
                    ),
                });
            }
        }
    }
}

/// Filesystem signatures at the start of the device or file below a loop
/// device with an offset: the filesystem spans the range the loop covers.
fn signatures_before(dev: &Path, b: &Opened, what: &str, out: &mut Vec<SafetyError>) {
    let len = signatures::size_of(&b.file).unwrap_or(0);
    if len == 0 {
        return;
    }
    match signatures::probe_fd(&b.file, 0, len) {
        Ok(sigs) => {
            let fs: Vec<&str> = sigs
                .iter()
                .filter(|s| !matches!(s, Signature::Gpt | Signature::Mbr))
                .map(Signature::name)
                .collect();
            if !fs.is_empty() {
                out.push(SafetyError::Below {
                    device: dev.to_path_buf(),
                    below: what.to_string(),
                    finding: format!("carries {}", fs.join(", ")),
                });
            }
        }
        Err(e) => out.push(SafetyError::Check {
            device: dev.to_path_buf(),
            what: format!("signature probe of {what}: {e}"),
        }),
    }
}

/// A regular file: an active swap file, or the backing file of an attached
/// loop device (decided as that device).
fn file_reasons(o: &Opened, name: &Path, guard: &WriteGuard, out: &mut Vec<SafetyError>) {
    if let Ok(t) = fs::read_to_string("/proc/swaps") {
        let active = mounts::parse_swaps(&t).iter().any(|s| {
            fs::metadata(s).is_ok_and(|m| m.dev() == o.meta.dev() && m.ino() == o.meta.ino())
        });
        if active {
            out.push(SafetyError::SwapFile {
                file: name.to_path_buf(),
            });
        }
    }
    for (_, lname) in holders::loops_over_file(sys(), o.meta.dev(), o.meta.ino()) {
        let lpath = PathBuf::from(holders::dev_path(&lname));
        let inner = match Opened::open(&lpath) {
            Ok(l) => match decide(&l, &lpath, guard) {
                Decision::Allow => continue,
                Decision::Refuse(mut r) => r.remove(0),
            },
            Err(e) => SafetyError::Inspect {
                device: lpath.clone(),
                what: format!("opening {}", lpath.display()),
                source: e,
            },
        };
        out.push(SafetyError::BackingFile {
            file: name.to_path_buf(),
            lo: lpath.display().to_string(),
            inner: Box::new(inner),
        });
    }
}

/// Processes holding the device open across several scans 0.1 s apart.
/// Some tools hold a device they do not use for a moment: blkid and udev
/// workers probe it, and a `losetup -f` that lost the race for a free loop
/// device keeps it open read-write while it sleeps 0.2 s before retrying.
/// Refusing because of them would make the guard fail at random, while
/// anything that really uses the device is still there 0.3 s later.
fn persistent_openers(id: &openers::Identity) -> Result<Vec<Opener>, openers::Unreadable> {
    const RESCANS: usize = 3;
    const GAP: std::time::Duration = std::time::Duration::from_millis(100);
    let scan = || openers::scan_strict(Path::new("/proc"), id, std::process::id() as i32);
    let mut found = scan()?;
    for _ in 0..RESCANS {
        if found.is_empty() {
            break;
        }
        std::thread::sleep(GAP);
        let again = scan()?;
        found.retain(|o| again.iter().any(|a| a.pid == o.pid));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev() -> PathBuf {
        PathBuf::from("/dev/loop9")
    }

    #[test]
    fn further_reasons_are_named_not_counted() {
        let reasons = vec![
            SafetyError::Mounted {
                device: dev(),
                member: "it".into(),
                mount_point: "/mnt/x".into(),
                fstype: "ext4".into(),
            },
            SafetyError::Signature {
                device: dev(),
                found: vec![Signature::Ext4],
            },
            SafetyError::OpenedByOthers {
                device: dev(),
                openers: vec![Opener {
                    pid: 7,
                    comm: "blkid".into(),
                    writable: false,
                }],
            },
        ];
        let s = describe_reasons(&reasons);
        assert!(s.starts_with(&reasons[0].to_string()), "{s}");
        assert!(
            s.ends_with(
                "(also found: carries a signature (ext4); held open by pid 7 (`blkid`, read-only))"
            ),
            "{s}"
        );
        assert!(!s.contains("more reason"), "{s}");
        assert_eq!(describe_reasons(&reasons[..1]), reasons[0].to_string());
    }

    #[test]
    fn messages_name_check_device_finding_and_override() {
        let e = SafetyError::Mounted {
            device: dev(),
            member: "its partition /dev/loop9p1".into(),
            mount_point: "/mnt/x".into(),
            fstype: "ext4".into(),
        };
        let s = e.to_string();
        for want in [
            "/dev/loop9",
            "its partition /dev/loop9p1 is mounted on /mnt/x (ext4)",
            "--destroy-data-on=/dev/loop9 (destroys its data) or allow_mounted_write=1",
            "bad idea",
        ] {
            assert!(s.contains(want), "{want:?} not in {s:?}");
        }

        let e = SafetyError::OpenedByOthers {
            device: dev(),
            openers: vec![
                Opener {
                    pid: 42,
                    comm: "fio".into(),
                    writable: true,
                },
                Opener {
                    pid: 7,
                    comm: "blkid".into(),
                    writable: false,
                },
            ],
        };
        let s = e.to_string();
        assert!(
            s.contains("pid 42 (`fio`, for writing), pid 7 (`blkid`, read-only)"),
            "{s}"
        );
        assert!(s.contains("stop them"), "{s}");

        let e = SafetyError::Signature {
            device: dev(),
            found: vec![Signature::Gpt],
        };
        assert!(e.to_string().contains("a partition table (gpt)"), "{e}");
        let e = SafetyError::Signature {
            device: dev(),
            found: vec![Signature::Ext4, Signature::Mbr],
        };
        assert!(e.to_string().contains("a signature (ext4, dos)"), "{e}");
        assert_eq!(e.device(), Path::new("/dev/loop9"));
    }

    #[test]
    fn files_and_missing_paths_are_not_block_devices() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, [0u8; 4096]).unwrap();
        let g = WriteGuard::default();
        assert!(check_block_device_write(&f, &g).is_ok());
        assert!(check_block_device_write(&dir.path().join("none"), &g).is_ok());
    }
}
