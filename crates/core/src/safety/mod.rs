//! The destructive-write guard: before dioscope writes to a block device it
//! makes sure nothing lives there, unless the user said, for this device, that
//! its data may be destroyed.
//!
//! [`check_block_device_write`] looks at the device's whole family
//! ([`holders`]: the device, its partitions, and dm/md/loop devices stacked on
//! any of them) and refuses, in this order, when a member is
//!
//! 1. mounted ([`mounts`], `/proc/self/mountinfo`),
//! 2. active swap (`/proc/swaps`),
//! 3. a device stacked on it exists at all (an LVM volume, a RAID, a loop),
//! 4. held open by another process ([`openers`], `/proc/*/fd`; only openers
//!    that are still there 0.3 s later, so a passing `losetup -f` or blkid
//!    does not count),
//! 5. claimed exclusively by the kernel (an `O_EXCL` open fails with EBUSY:
//!    mounts in other namespaces, multi-device btrfs, md members),
//!
//! and finally when the device itself carries a partition table or a
//! filesystem, swap, LUKS or LVM signature ([`signatures`]).
//!
//! Everything is read-only: the device is only ever opened `O_RDONLY`, so a
//! refused check leaves it, and the page cache over it, as it was.

pub mod devnum;
pub mod holders;
pub mod mounts;
pub mod openers;
pub mod signatures;

pub use devnum::DevNum;
pub use openers::{other_openers, Opener};
pub use signatures::Signature;

use holders::Member;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What the user allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteGuard<'a> {
    /// `allow_mounted_write=1`: skip every check, for every device.
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
            | SafetyError::Inspect { device, .. } => device,
        }
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
            format!("pid {} ({}, {mode})", o.pid, o.comm)
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

/// Whether `destroy_data_on` names the device `rdev` (by device number, or by
/// canonical path when an entry cannot be stat'ed as a block device).
fn destroy_allowed(dev: &Path, rdev: DevNum, destroy_data_on: &[String]) -> bool {
    let canon = fs::canonicalize(dev).ok();
    destroy_data_on.iter().any(|entry| {
        let p = Path::new(entry);
        match fs::metadata(p) {
            Ok(m) if m.file_type().is_block_device() => DevNum::from_dev_t(m.rdev()) == rdev,
            _ => canon.is_some() && fs::canonicalize(p).ok() == canon,
        }
    })
}

/// Refuse to write to `dev` if it is a block device that is in use or holds
/// data, unless `guard` allows it. Paths that are not block devices (regular
/// files, or nothing yet) pass: there is nothing to destroy but the file
/// itself. Every check only reads; see the module docs for the order.
pub fn check_block_device_write(dev: &Path, guard: &WriteGuard) -> Result<(), SafetyError> {
    let inspect = |what: String, source: io::Error| SafetyError::Inspect {
        device: dev.to_path_buf(),
        what,
        source,
    };
    let meta = match fs::metadata(dev) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(inspect(format!("stat {}", dev.display()), e)),
    };
    if !meta.file_type().is_block_device() {
        return Ok(());
    }
    let rdev = DevNum::from_dev_t(meta.rdev());
    if guard.allow_mounted_write || destroy_allowed(dev, rdev, guard.destroy_data_on) {
        return Ok(());
    }

    let family = holders::family(Path::new("/sys"), rdev)
        .map_err(|e| inspect(format!("reading /sys/dev/block/{rdev}"), e))?;
    check_mounts(dev, &family)?;
    check_swaps(dev, &family)?;
    if let Some(m) = family.iter().find(|m| m.is_stacked()) {
        return Err(SafetyError::Stacked {
            device: dev.to_path_buf(),
            member: m.to_string(),
        });
    }
    let id = openers::Identity::Block(family.iter().map(|m| m.devnum).collect());
    let openers = persistent_openers(&id);
    if !openers.is_empty() {
        return Err(SafetyError::OpenedByOthers {
            device: dev.to_path_buf(),
            openers,
        });
    }
    check_exclusive(dev)?;

    let found = signatures::probe(dev, true)
        .map_err(|e| inspect(format!("reading the start of {}", dev.display()), e))?;
    if !found.is_empty() {
        return Err(SafetyError::Signature {
            device: dev.to_path_buf(),
            found,
        });
    }
    Ok(())
}

/// Processes holding the device open across several scans 0.1 s apart.
/// Some tools hold a device they do not use for a moment: blkid and udev
/// workers probe it, and a `losetup -f` that lost the race for a free loop
/// device keeps it open read-write while it sleeps 0.2 s before retrying.
/// Refusing because of them would make the guard fail at random, while
/// anything that really uses the device is still there 0.3 s later.
fn persistent_openers(id: &openers::Identity) -> Vec<Opener> {
    const RESCANS: usize = 3;
    const GAP: std::time::Duration = std::time::Duration::from_millis(100);
    let scan = || openers::scan(Path::new("/proc"), id, std::process::id() as i32);
    let mut found = scan();
    for _ in 0..RESCANS {
        if found.is_empty() {
            break;
        }
        std::thread::sleep(GAP);
        let again = scan();
        found.retain(|o| again.iter().any(|a| a.pid == o.pid));
    }
    found
}

fn check_mounts(dev: &Path, family: &[Member]) -> Result<(), SafetyError> {
    let text = fs::read_to_string("/proc/self/mountinfo").map_err(|e| SafetyError::Inspect {
        device: dev.to_path_buf(),
        what: "reading /proc/self/mountinfo".into(),
        source: e,
    })?;
    let mounts = mounts::parse_mountinfo(&text, mounts::block_devnum);
    for m in family {
        if let Some(mount) = mounts.iter().find(|x| x.is_on(m.devnum)) {
            return Err(SafetyError::Mounted {
                device: dev.to_path_buf(),
                member: m.to_string(),
                mount_point: mount.mount_point.clone(),
                fstype: mount.fstype.clone(),
            });
        }
    }
    Ok(())
}

fn check_swaps(dev: &Path, family: &[Member]) -> Result<(), SafetyError> {
    // No /proc/swaps means a kernel without swap support: nothing to find.
    let text = match fs::read_to_string("/proc/swaps") {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(SafetyError::Inspect {
                device: dev.to_path_buf(),
                what: "reading /proc/swaps".into(),
                source: e,
            })
        }
    };
    for swap in mounts::parse_swaps(&text) {
        let Some(num) = mounts::block_devnum(&swap) else {
            continue;
        };
        if let Some(m) = family.iter().find(|m| m.devnum == num) {
            return Err(SafetyError::Swap {
                device: dev.to_path_buf(),
                member: m.to_string(),
                swap,
            });
        }
    }
    Ok(())
}

/// An exclusive open fails with EBUSY while anything in the kernel holds the
/// device: this catches what the files in our own namespace cannot show.
fn check_exclusive(dev: &Path) -> Result<(), SafetyError> {
    match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(dev)
    {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Err(SafetyError::Busy {
            device: dev.to_path_buf(),
        }),
        Err(e) => Err(SafetyError::Inspect {
            device: dev.to_path_buf(),
            what: format!("exclusive read-only open of {}", dev.display()),
            source: e,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev() -> PathBuf {
        PathBuf::from("/dev/loop9")
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
            s.contains("pid 42 (fio, for writing), pid 7 (blkid, read-only)"),
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
