//! Other processes holding a file or block device open, found by walking
//! `/proc/*/fd`. The descriptors are compared by what they point at (device
//! number for block devices, device and inode for files), never by name, so
//! `/dev/loop0`, a udev symlink to it and a second node with the same number
//! all count as the same target.

use super::devnum::DevNum;
// Plain data in the result layer; finding the openers is here.
pub use crate::results::pagecache::Opener;
use std::collections::{BTreeMap, HashSet};
use std::fs::{self, Metadata};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// What the descriptors are compared against.
#[derive(Debug, Clone)]
pub enum Identity {
    /// Any of these block devices (`st_rdev`).
    Block(HashSet<DevNum>),
    /// A file (`st_dev`, `st_ino`).
    File { dev: u64, ino: u64 },
}

impl Identity {
    /// The identity of `path` (following symlinks); `None` when it cannot be
    /// stat'ed or is neither a file nor a block device.
    pub fn of(path: &Path) -> Option<Identity> {
        let m = fs::metadata(path).ok()?;
        let ft = m.file_type();
        if ft.is_block_device() {
            Some(Identity::Block(HashSet::from([DevNum::from_dev_t(
                m.rdev(),
            )])))
        } else if ft.is_file() {
            Some(Identity::File {
                dev: m.dev(),
                ino: m.ino(),
            })
        } else {
            None
        }
    }

    fn matches(&self, m: &Metadata) -> bool {
        match self {
            Identity::Block(set) => {
                m.file_type().is_block_device() && set.contains(&DevNum::from_dev_t(m.rdev()))
            }
            Identity::File { dev, ino } => {
                m.file_type().is_file() && m.dev() == *dev && m.ino() == *ino
            }
        }
    }
}

/// The `flags:` line of `/proc/PID/fdinfo/FD` (octal `open(2)` flags).
fn parse_fdinfo_flags(text: &str) -> Option<u32> {
    let v = text.lines().find_map(|l| l.strip_prefix("flags:"))?;
    u32::from_str_radix(v.trim(), 8).ok()
}

/// Whether open flags allow writing (`O_WRONLY` or `O_RDWR` in `O_ACCMODE`).
fn flags_writable(flags: u32) -> bool {
    let acc = flags & libc::O_ACCMODE as u32;
    acc == libc::O_WRONLY as u32 || acc == libc::O_RDWR as u32
}

/// Why a scan could not be completed: a process whose descriptors or
/// mappings we may not read could be using the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub pid: i32,
    pub what: String,
    pub error: String,
}

/// Walk `proc` (normally `/proc`) for processes other than `self_pid` with a
/// descriptor on `id` or a mapping of it (`/proc/PID/maps`: a process may
/// close the descriptor and keep the mapping). One entry per process, sorted
/// by pid. Processes that exit while we look are skipped; one whose `fd/`
/// we may not read makes the scan fail, since it could be a user.
pub fn scan_strict(proc: &Path, id: &Identity, self_pid: i32) -> Result<Vec<Opener>, Unreadable> {
    let mut found: BTreeMap<i32, Opener> = BTreeMap::new();
    let procs = fs::read_dir(proc).map_err(|e| Unreadable {
        pid: 0,
        what: proc.display().to_string(),
        error: e.to_string(),
    })?;
    let gone = |e: &std::io::Error| {
        e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == self_pid {
            continue;
        }
        let comm = || {
            fs::read_to_string(p.path().join("comm"))
                .map(|c| c.trim_end().to_string())
                .unwrap_or_else(|_| "?".into())
        };
        let fds = match fs::read_dir(p.path().join("fd")) {
            Ok(f) => f,
            Err(e) if gone(&e) => continue,
            Err(e) => {
                return Err(Unreadable {
                    pid,
                    what: format!("{}/fd ({})", p.path().display(), comm()),
                    error: e.to_string(),
                })
            }
        };
        for fd in fds.flatten() {
            // Sockets, pipes and anonymous inodes read as "type:[inode]";
            // skipping them saves a stat per descriptor.
            match fs::read_link(fd.path()) {
                Ok(t) if t.is_absolute() => {}
                _ => continue,
            }
            // The /proc fd link is "magic": stat follows it to the open
            // object even when its path has since been renamed or unlinked.
            let Ok(m) = fs::metadata(fd.path()) else {
                continue;
            };
            if !id.matches(&m) {
                continue;
            }
            let fdinfo = p.path().join("fdinfo").join(fd.file_name());
            let writable = fs::read_to_string(fdinfo)
                .ok()
                .and_then(|t| parse_fdinfo_flags(&t))
                .is_some_and(flags_writable);
            let entry = found.entry(pid).or_insert_with(|| Opener {
                pid,
                comm: comm(),
                writable: false,
            });
            entry.writable |= writable;
        }
        // Mappings are read where the kernel lets us: a process whose fd/
        // we may read but whose maps we may not (a ptrace-protected one in a
        // sandbox) is judged by its descriptors alone.
        let Ok(maps) = fs::read_to_string(p.path().join("maps")) else {
            continue;
        };
        if let Some(writable) = maps_use(&p.path(), &maps, id) {
            let entry = found.entry(pid).or_insert_with(|| Opener {
                pid,
                comm: comm(),
                writable: false,
            });
            entry.writable |= writable;
        }
    }
    Ok(found.into_values().collect())
}

/// Whether a process maps the target: each distinct mapped file (by the
/// device and inode maps prints) is stat'ed once through `map_files/`,
/// which follows to the mapped object itself. `Some(writable)` when found.
fn maps_use(pid_dir: &Path, maps: &str, id: &Identity) -> Option<bool> {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut hit: Option<bool> = None;
    let mut matched: HashSet<(&str, &str)> = HashSet::new();
    for line in maps.lines() {
        // addr perms offset dev inode path
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(_), Some(dev), Some(ino)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        if ino == "0" {
            continue;
        }
        let key = (dev, ino);
        let writable = perms.contains('w') && perms.contains('s');
        if matched.contains(&key) {
            hit = Some(hit.unwrap_or(false) | writable);
            continue;
        }
        if !seen.insert(key) {
            continue;
        }
        let Ok(m) = fs::metadata(pid_dir.join("map_files").join(range)) else {
            continue;
        };
        if id.matches(&m) {
            matched.insert(key);
            hit = Some(hit.unwrap_or(false) | writable);
        }
    }
    hit
}

/// [`scan_strict`], with processes we may not look at skipped (for the
/// diagnostics, which report what they can see).
pub fn scan(proc: &Path, id: &Identity, self_pid: i32) -> Vec<Opener> {
    match scan_strict(proc, id, self_pid) {
        Ok(v) => v,
        Err(_) => scan_lenient(proc, id, self_pid),
    }
}

fn scan_lenient(proc: &Path, id: &Identity, self_pid: i32) -> Vec<Opener> {
    let mut found: BTreeMap<i32, Opener> = BTreeMap::new();
    let Ok(procs) = fs::read_dir(proc) else {
        return Vec::new();
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == self_pid {
            continue;
        }
        let Ok(fds) = fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(m) = fs::metadata(fd.path()) else {
                continue;
            };
            if !id.matches(&m) {
                continue;
            }
            let fdinfo = p.path().join("fdinfo").join(fd.file_name());
            let writable = fs::read_to_string(fdinfo)
                .ok()
                .and_then(|t| parse_fdinfo_flags(&t))
                .is_some_and(flags_writable);
            let entry = found.entry(pid).or_insert_with(|| Opener {
                pid,
                comm: fs::read_to_string(p.path().join("comm"))
                    .map(|c| c.trim_end().to_string())
                    .unwrap_or_else(|_| "?".into()),
                writable: false,
            });
            entry.writable |= writable;
        }
    }
    found.into_values().collect()
}

/// Processes other than this one that hold `target` open: the same file (by
/// `st_dev` and `st_ino`) or the same block device (by `st_rdev`). Empty when
/// `target` does not exist. Without root, other users' processes are invisible.
pub fn other_openers(target: &Path) -> Vec<Opener> {
    match Identity::of(target) {
        Some(id) => scan(Path::new("/proc"), &id, std::process::id() as i32),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn fdinfo_flags_are_octal() {
        let t = "pos:\t0\nflags:\t0100002\nmnt_id:\t29\nino:\t5\n";
        assert_eq!(parse_fdinfo_flags(t), Some(0o100002));
        assert!(flags_writable(0o100002));
        assert!(flags_writable(0o1));
        assert!(!flags_writable(0o100000));
        assert_eq!(parse_fdinfo_flags("pos:\t0\n"), None);
    }

    /// Kills the child even when an assertion fails first.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn finds_a_child_holding_a_file_and_not_ourselves() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held");
        fs::write(&path, b"x").unwrap();
        let _mine = fs::File::open(&path).unwrap();
        assert!(
            other_openers(&path).is_empty(),
            "our own descriptor counted"
        );

        let ro = Kill(
            Command::new("sleep")
                .arg("30")
                .stdin(fs::File::open(&path).unwrap())
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let wr = Kill(
            Command::new("sleep")
                .arg("30")
                .stdin(Stdio::null())
                .stdout(fs::OpenOptions::new().append(true).open(&path).unwrap())
                .spawn()
                .unwrap(),
        );
        // The descriptors were installed before exec, so they are visible as
        // soon as spawn() returns.
        let got = other_openers(&path);
        let by_pid = |pid: u32| got.iter().find(|o| o.pid == pid as i32);
        let r = by_pid(ro.0.id()).unwrap_or_else(|| panic!("reader missing: {got:?}"));
        let w = by_pid(wr.0.id()).unwrap_or_else(|| panic!("writer missing: {got:?}"));
        assert!(!r.writable);
        assert!(w.writable);
        assert_eq!(r.comm, "sleep");

        let other = dir.path().join("other");
        fs::write(&other, b"y").unwrap();
        let got = other_openers(&other);
        assert!(got.is_empty(), "{got:?}");
    }
}
