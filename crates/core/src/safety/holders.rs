//! The "family" of a block device in sysfs: the device, its partitions, and
//! everything stacked on any of them (device-mapper, md, bcache: the
//! `holders/` links; loop devices whose backing file is one of them).
//!
//! Writing to a disk destroys what lives on its partitions and on every device
//! built from it, so the other checks look at the whole family, not just the
//! device node the user named.

use super::devnum::DevNum;
use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How a member of the family relates to the device being checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relation {
    /// The device itself.
    Itself,
    /// A partition of the named device.
    PartitionOf(String),
    /// A device-mapper/md/... device listed in the named device's `holders/`.
    HolderOf(String),
    /// A loop device whose backing file is the named device.
    LoopOver(String),
}

/// One device of the family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub devnum: DevNum,
    /// The kernel's name (`loop3p1`, `dm-0`).
    pub name: String,
    pub relation: Relation,
}

impl Member {
    /// Whether this device is built on top of the checked one (as opposed to
    /// being it or one of its partitions).
    pub fn is_stacked(&self) -> bool {
        matches!(self.relation, Relation::HolderOf(_) | Relation::LoopOver(_))
    }
}

/// `/dev/` path of a kernel block device name (`cciss!c0d0` → `/dev/cciss/c0d0`).
pub fn dev_path(name: &str) -> String {
    format!("/dev/{}", name.replace('!', "/"))
}

impl fmt::Display for Member {
    /// Phrased to be followed by a verb: "it is mounted", "its partition
    /// /dev/loop3p1 is mounted", "/dev/dm-0 (stacked on /dev/loop3) is mounted".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let me = dev_path(&self.name);
        match &self.relation {
            Relation::Itself => write!(f, "it"),
            Relation::PartitionOf(_) => write!(f, "its partition {me}"),
            Relation::HolderOf(base) => write!(f, "{me} (stacked on {})", dev_path(base)),
            Relation::LoopOver(base) => {
                write!(f, "{me} (a loop device over {})", dev_path(base))
            }
        }
    }
}

fn read_devnum(dir: &Path) -> io::Result<DevNum> {
    let text = fs::read_to_string(dir.join("dev"))?;
    DevNum::parse(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}/dev holds {:?}, not MAJOR:MINOR", dir.display(), text),
        )
    })
}

fn name_of(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Loop devices backed by a block device: (backing device, loop's sysfs dir).
fn loop_backings(sys: &Path) -> Vec<(DevNum, PathBuf)> {
    let Ok(entries) = fs::read_dir(sys.join("class/block")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(dir) = fs::canonicalize(e.path()) else {
            continue;
        };
        let Ok(backing) = fs::read_to_string(dir.join("loop/backing_file")) else {
            continue;
        };
        let backing = backing.trim_end_matches('\n');
        let backing = backing.strip_suffix(" (deleted)").unwrap_or(backing);
        if let Ok(m) = fs::metadata(backing) {
            if m.file_type().is_block_device() {
                out.push((DevNum::from_dev_t(m.rdev()), dir));
            }
        }
    }
    out
}

/// The device `dev`, its partitions, and everything stacked on any of them,
/// recursively, read from the sysfs tree mounted at `sys` (normally `/sys`).
/// The device itself comes first.
pub fn family(sys: &Path, dev: DevNum) -> io::Result<Vec<Member>> {
    let root = fs::canonicalize(sys.join("dev/block").join(dev.to_string()))?;
    let loops = loop_backings(sys);
    let mut seen = HashSet::from([dev]);
    let mut out = vec![Member {
        devnum: dev,
        name: name_of(&root),
        relation: Relation::Itself,
    }];
    let mut queue = VecDeque::from([(root, dev)]);
    while let Some((dir, devnum)) = queue.pop_front() {
        let base = name_of(&dir);
        let mut found: Vec<(PathBuf, Relation)> = Vec::new();
        // Partitions are subdirectories that carry a `partition` file.
        if let Ok(entries) = fs::read_dir(&dir) {
            for e in entries.flatten() {
                let p = e.path();
                if p.join("partition").is_file() && p.join("dev").is_file() {
                    found.push((p, Relation::PartitionOf(base.clone())));
                }
            }
        }
        if let Ok(entries) = fs::read_dir(dir.join("holders")) {
            for e in entries.flatten() {
                if let Ok(p) = fs::canonicalize(e.path()) {
                    found.push((p, Relation::HolderOf(base.clone())));
                }
            }
        }
        for (backing, loop_dir) in &loops {
            if *backing == devnum {
                found.push((loop_dir.clone(), Relation::LoopOver(base.clone())));
            }
        }
        for (p, relation) in found {
            let Ok(d) = read_devnum(&p) else { continue };
            if seen.insert(d) {
                out.push(Member {
                    devnum: d,
                    name: name_of(&p),
                    relation,
                });
                queue.push_back((p, d));
            }
        }
    }
    Ok(out)
}

/// What a block device is built on, looking down the stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Below {
    /// The disk a partition lives on; the partition covers `len` bytes of it
    /// from `start`.
    Disk {
        devnum: DevNum,
        name: String,
        start: u64,
        len: u64,
    },
    /// The device or file a loop device reads, from `offset` for `len` bytes
    /// (`len` is the loop device's size).
    LoopBacking {
        loop_name: String,
        backing: PathBuf,
        offset: u64,
        len: u64,
    },
}

fn read_u64(p: &Path) -> Option<u64> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// The next layer down from `dev`, if any: a partition's disk or a loop
/// device's backing device or file (with the range it covers).
pub fn below(sys: &Path, dev: DevNum) -> io::Result<Option<Below>> {
    let dir = fs::canonicalize(sys.join("dev/block").join(dev.to_string()))?;
    let size = read_u64(&dir.join("size")).unwrap_or(0) * 512;
    if dir.join("partition").is_file() {
        let disk = dir
            .parent()
            .ok_or_else(|| io::Error::other("a partition without a disk in sysfs"))?;
        let start = read_u64(&dir.join("start")).unwrap_or(0) * 512;
        return Ok(Some(Below::Disk {
            devnum: read_devnum(disk)?,
            name: name_of(disk),
            start,
            len: size,
        }));
    }
    let backing = match fs::read_to_string(dir.join("loop/backing_file")) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let backing = backing.trim_end_matches('\n');
    let backing = backing.strip_suffix(" (deleted)").unwrap_or(backing);
    Ok(Some(Below::LoopBacking {
        loop_name: name_of(&dir),
        backing: PathBuf::from(backing),
        offset: read_u64(&dir.join("loop/offset")).unwrap_or(0),
        len: size,
    }))
}

/// Attached loop devices whose backing file is the regular file with this
/// device and inode number: writing the file writes them.
pub fn loops_over_file(sys: &Path, dev: u64, ino: u64) -> Vec<(DevNum, String)> {
    let Ok(entries) = fs::read_dir(sys.join("class/block")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(dir) = fs::canonicalize(e.path()) else {
            continue;
        };
        let Ok(backing) = fs::read_to_string(dir.join("loop/backing_file")) else {
            continue;
        };
        let backing = backing.trim_end_matches('\n');
        let backing = backing.strip_suffix(" (deleted)").unwrap_or(backing);
        let same = fs::metadata(backing).is_ok_and(|m| m.dev() == dev && m.ino() == ino);
        if let (true, Ok(d)) = (same, read_devnum(&dir)) {
            out.push((d, name_of(&dir)));
        }
    }
    out
}

/// Partitions of `dev` in sysfs with their byte ranges on it.
pub fn partitions(sys: &Path, dev: DevNum) -> Vec<(String, u64, u64)> {
    let Ok(dir) = fs::canonicalize(sys.join("dev/block").join(dev.to_string())) else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.join("partition").is_file() {
            let start = read_u64(&p.join("start")).unwrap_or(0) * 512;
            let len = read_u64(&p.join("size")).unwrap_or(0) * 512;
            if len > 0 {
                out.push((name_of(&p), start, len));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn blockdir(base: &Path, name: &str, dev: &str) -> PathBuf {
        let d = base.join(name);
        fs::create_dir_all(d.join("holders")).unwrap();
        fs::write(d.join("dev"), format!("{dev}\n")).unwrap();
        d
    }

    /// A fake sysfs: sdz with partitions sdz1 and sdz2; dm-7 stacked on sdz2,
    /// md9 stacked on dm-7; an unrelated sdy.
    fn fake_sys() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let devices = t.path().join("devices/virtual/block");
        let sdz = blockdir(&devices, "sdz", "8:240");
        let p1 = blockdir(&sdz, "sdz1", "8:241");
        fs::write(p1.join("partition"), "1\n").unwrap();
        let p2 = blockdir(&sdz, "sdz2", "8:242");
        fs::write(p2.join("partition"), "2\n").unwrap();
        let dm = blockdir(&devices, "dm-7", "254:7");
        let md = blockdir(&devices, "md9", "9:9");
        blockdir(&devices, "sdy", "8:224");
        symlink(&dm, p2.join("holders/dm-7")).unwrap();
        symlink(&md, dm.join("holders/md9")).unwrap();
        let by_num = t.path().join("dev/block");
        fs::create_dir_all(&by_num).unwrap();
        for (num, dir) in [("8:240", &sdz), ("8:242", &p2), ("254:7", &dm)] {
            symlink(dir, by_num.join(num)).unwrap();
        }
        t
    }

    #[test]
    fn whole_disk_family_has_partitions_and_stacked_devices() {
        let t = fake_sys();
        let fam = family(t.path(), DevNum::parse("8:240").unwrap()).unwrap();
        let names: Vec<_> = fam.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(fam[0].relation, Relation::Itself);
        assert_eq!(names.len(), 5, "{names:?}");
        for n in ["sdz", "sdz1", "sdz2", "dm-7", "md9"] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
        let md = fam.iter().find(|m| m.name == "md9").unwrap();
        assert_eq!(md.relation, Relation::HolderOf("dm-7".into()));
        assert!(md.is_stacked());
        assert_eq!(md.to_string(), "/dev/md9 (stacked on /dev/dm-7)");
        let p1 = fam.iter().find(|m| m.name == "sdz1").unwrap();
        assert_eq!(p1.to_string(), "its partition /dev/sdz1");
        assert!(!p1.is_stacked());
    }

    #[test]
    fn partition_family_excludes_siblings() {
        let t = fake_sys();
        let fam = family(t.path(), DevNum::parse("8:242").unwrap()).unwrap();
        let names: Vec<_> = fam.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["sdz2", "dm-7", "md9"]);
    }

    #[test]
    fn unknown_device_is_an_error() {
        let t = fake_sys();
        assert!(family(t.path(), DevNum::parse("1:99").unwrap()).is_err());
    }
}
