//! Private working folders: new, ours, and emptied of only what we made.
//!
//! A folder dioscope works in (`--profile`'s, a recipe's) is made with a
//! random name and mode 0700 (`mkdtemp`), never reused when it exists
//! already, and on removal loses only the files made in it through
//! [`PrivateDir`]: a user's file that appeared there is left alone.
//!
//! Every file is made through the folder's own descriptor (`openat` with
//! `O_CREAT | O_EXCL | O_NOFOLLOW`) and recorded with its inode, in memory
//! and in a manifest inside the folder (`.dioscope-owner`, which also names
//! the creating process: pid, start time, boot id). Removal unlinks only the
//! recorded entries that are still the recorded inodes, then the folder
//! (`rmdir`: it stays, with a note, if anything else is in it). A folder
//! left by a killed run is removed by a later one only when it is provably
//! ours: owned by us, mode 0700, its manifest names a process that is gone,
//! and then again only the entries the manifest records.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The manifest's name inside a private folder.
const MANIFEST: &str = ".dioscope-owner";
const MAGIC: &str = "dioscope private folder v1";

/// A process, as it can be told from a later one that got the same pid:
/// its pid, its start time (clock ticks after boot, `/proc/PID/stat` field
/// 22) and the boot it ran in.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ProcessId {
    pub pid: u32,
    pub start: u64,
    pub boot: String,
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The start time of process `pid` (field 22 of `/proc/PID/stat`).
pub fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything.
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl ProcessId {
    /// This process.
    pub fn current() -> ProcessId {
        let pid = std::process::id();
        ProcessId {
            pid,
            start: start_time(pid).unwrap_or(0),
            boot: boot_id(),
        }
    }

    /// Whether that process still runs: same boot, same pid, same start
    /// time. Unknown parts (an old record) count as alive while the pid is.
    pub fn alive(&self) -> bool {
        if self.pid == std::process::id() && self.start == ProcessId::current().start {
            return true;
        }
        if !self.boot.is_empty() && self.boot != boot_id() {
            return false;
        }
        match start_time(self.pid) {
            None => false,
            Some(s) => self.start == 0 || s == self.start,
        }
    }

    fn line(&self) -> String {
        format!("creator {} {} {}", self.pid, self.start, self.boot)
    }
}

/// Our effective uid, from /proc (no unsafe in this crate).
fn euid() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

#[derive(Debug)]
struct Entry {
    /// Held open while the folder is ours: its inode cannot be freed and
    /// its number given to another file meanwhile.
    _hold: Option<File>,
    name: OsString,
    dev: u64,
    ino: u64,
    /// Birth time (ns; 0: not kept by the file system): an inode number
    /// freed and given to a new file at once is told apart by it.
    btime: u64,
}

impl Entry {
    fn is(&self, id: &dioscope_sys::dirfd::FileId) -> bool {
        id.dev == self.dev && id.ino == self.ino && id.btime_ns == self.btime
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A random suffix for a new folder's name (12 letters and digits).
fn random_suffix() -> String {
    const ABC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut seed = [0u8; 16];
    let got = File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .is_ok();
    let mut x = u128::from_le_bytes(seed);
    if !got {
        x ^= (dioscope_sys::clock::now_ns() as u128) << 32 ^ std::process::id() as u128;
    }
    (0..12)
        .map(|_| {
            let c = ABC[(x % ABC.len() as u128) as usize];
            x /= ABC.len() as u128;
            c as char
        })
        .collect()
}

/// A new folder of ours, removed (only what was made in it) when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
    dir: File,
    dev: u64,
    ino: u64,
    made: Vec<Entry>,
    manifest: Option<File>,
    keep: bool,
}

impl PrivateDir {
    /// A new folder `PARENT/PREFIX.XXXXXXXXXXXX` (random), mode 0700. An
    /// existing name is never used: another is drawn.
    pub fn new(parent: &Path, prefix: &str) -> io::Result<PrivateDir> {
        let pm = std::fs::metadata(parent)?;
        if !pm.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "not a directory",
            ));
        }
        for _ in 0..100 {
            let path = parent.join(format!("{prefix}.{}", random_suffix()));
            // mkdir(2) never follows or reuses what is at the name.
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return PrivateDir::open_new(path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "100 random names were all taken",
        ))
    }

    fn open_new(path: PathBuf) -> io::Result<PrivateDir> {
        let made = std::fs::symlink_metadata(&path)?;
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(&path)?;
        let m = dir.metadata()?;
        if m.dev() != made.dev() || m.ino() != made.ino() || m.mode() & 0o7777 != 0o700 {
            // Replaced between mkdir and open, or a umask/ACL we did not
            // expect: not a folder we can call ours.
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{}: changed as it was made", path.display()),
            ));
        }
        let mut d = PrivateDir {
            path,
            dev: m.dev(),
            ino: m.ino(),
            dir,
            made: Vec::new(),
            manifest: None,
            keep: false,
        };
        let mut mf =
            dioscope_sys::dirfd::create_new_at(d.dir.as_raw_fd(), OsStr::new(MANIFEST), 0o600)?;
        writeln!(mf, "{MAGIC}\n{}", ProcessId::current().line())?;
        d.manifest = Some(mf);
        Ok(d)
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new regular file `name` in the folder (never one that exists,
    /// never through a symbolic link), recorded for removal.
    pub fn create_file(&mut self, name: &str) -> io::Result<File> {
        let f = dioscope_sys::dirfd::create_new_at(self.dir.as_raw_fd(), OsStr::new(name), 0o600)?;
        let id = dioscope_sys::dirfd::stat_fd(f.as_raw_fd())?;
        self.record(name, &id, Some(f.try_clone()?))?;
        Ok(f)
    }

    /// Record a regular file another program (e.g. perf) made in the
    /// folder, so that it goes with the folder. A symbolic link or anything
    /// but a regular file is refused.
    pub fn adopt(&mut self, name: &str) -> io::Result<()> {
        let id = dioscope_sys::dirfd::stat_at(self.dir.as_raw_fd(), OsStr::new(name))?;
        if id.mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name}: not a regular file"),
            ));
        }
        if self.made.iter().any(|e| e.is(&id)) {
            return Ok(());
        }
        let hold = dioscope_sys::dirfd::open_at_readonly(self.dir.as_raw_fd(), OsStr::new(name))?;
        if dioscope_sys::dirfd::stat_fd(hold.as_raw_fd())? != id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name}: replaced while it was adopted"),
            ));
        }
        self.record(name, &id, Some(hold))
    }

    fn record(
        &mut self,
        name: &str,
        id: &dioscope_sys::dirfd::FileId,
        hold: Option<File>,
    ) -> io::Result<()> {
        let e = Entry {
            _hold: hold,
            name: OsString::from(name),
            dev: id.dev,
            ino: id.ino,
            btime: id.btime_ns,
        };
        if let Some(mf) = self.manifest.as_mut() {
            writeln!(
                mf,
                "file {} {} {} {}",
                hex(e.name.as_bytes()),
                e.dev,
                e.ino,
                e.btime
            )?;
        }
        self.made.push(e);
        Ok(())
    }

    /// Leave the folder and its files in place (e.g. to look at them).
    pub fn keep(&mut self) {
        self.keep = true;
    }

    /// Remove what was made in the folder, then the folder. `Ok(None)`:
    /// all gone; `Ok(Some(note))`: the folder stays because something
    /// dioscope did not make is in it (the note says what).
    pub fn remove(mut self) -> io::Result<Option<String>> {
        self.keep = true; // Drop has nothing left to do
        let dir = self.dir.as_raw_fd();
        let mut left = Vec::new();
        for e in self.made.iter().rev() {
            match dioscope_sys::dirfd::stat_at(dir, &e.name) {
                Ok(id) if e.is(&id) => dioscope_sys::dirfd::unlink_at(dir, &e.name, false)?,
                Ok(_) => left.push(e.name.to_string_lossy().to_string()),
                Err(x) if x.kind() == io::ErrorKind::NotFound => {}
                Err(x) => return Err(x),
            }
        }
        self.manifest = None;
        match dioscope_sys::dirfd::unlink_at(dir, OsStr::new(MANIFEST), false) {
            Err(x) if x.kind() != io::ErrorKind::NotFound => return Err(x),
            _ => {}
        }
        remove_folder(&self.path, self.dev, self.ino, &left)
    }
}

/// `rmdir` of `path` if it is still the folder (dev, ino): a non-empty
/// folder stays, with a note naming what is in it.
fn remove_folder(
    path: &Path,
    dev: u64,
    ino: u64,
    replaced: &[String],
) -> io::Result<Option<String>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.dev() == dev && m.ino() == ino => {}
        Ok(_) => {
            return Ok(Some(format!(
                "{} is no longer the folder dioscope made: left alone",
                path.display()
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    match std::fs::remove_dir(path) {
        Ok(()) => Ok(None),
        Err(e)
            if e.raw_os_error() == Some(libc::ENOTEMPTY)
                || e.raw_os_error() == Some(libc::EEXIST) =>
        {
            let mut names: Vec<String> = std::fs::read_dir(path)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().to_string())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            let _ = replaced;
            Ok(Some(format!(
                "left {}: it holds files dioscope did not make ({}); remove them and the folder \
                 yourself",
                path.display(),
                names.join(", ")
            )))
        }
        Err(e) => Err(e),
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let d = PrivateDir {
            path: std::mem::take(&mut self.path),
            dir: match self.dir.try_clone() {
                Ok(f) => f,
                Err(_) => return,
            },
            dev: self.dev,
            ino: self.ino,
            made: std::mem::take(&mut self.made),
            manifest: self.manifest.take(),
            keep: true,
        };
        match d.remove() {
            Ok(None) => {}
            Ok(Some(note)) => eprintln!("dioscope: note: {note}"),
            Err(e) => eprintln!("dioscope: warning: cannot remove a working folder: {e}"),
        }
    }
}

/// Remove the folders `PARENT/PREFIX.*` left by runs that were killed,
/// when provably ours: a directory (not a link) owned by us with mode
/// 0700, whose manifest names a process that is gone; of it only the
/// entries the manifest records (and still the same inodes) go, then the
/// folder if that empties it. Returns a note per folder that stayed.
pub fn sweep_leftovers(parent: &Path, prefix: &str) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(rd) = std::fs::read_dir(parent) else {
        return notes;
    };
    let me = euid();
    let start = format!("{prefix}.");
    for e in rd.flatten() {
        let name = e.file_name();
        if !name.as_bytes().starts_with(start.as_bytes()) {
            continue;
        }
        let path = e.path();
        if let Some(n) = sweep_one(&path, me) {
            notes.push(n);
        }
    }
    notes
}

fn sweep_one(path: &Path, me: Option<u32>) -> Option<String> {
    let m = std::fs::symlink_metadata(path).ok()?;
    if !m.is_dir() || Some(m.uid()) != me || m.mode() & 0o7777 != 0o700 {
        return None;
    }
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let dm = dir.metadata().ok()?;
    if dm.dev() != m.dev() || dm.ino() != m.ino() {
        return None;
    }
    let mid = dioscope_sys::dirfd::stat_at(dir.as_raw_fd(), OsStr::new(MANIFEST)).ok()?;
    if mid.mode & libc::S_IFMT != libc::S_IFREG {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(path.join(MANIFEST))
        .ok()?
        .take(1 << 20)
        .read_to_string(&mut text)
        .ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return None;
    }
    let c: Vec<&str> = lines.next()?.split_whitespace().collect();
    let creator = match c.as_slice() {
        ["creator", pid, start, boot] => ProcessId {
            pid: pid.parse().ok()?,
            start: start.parse().ok()?,
            boot: boot.to_string(),
        },
        _ => return None,
    };
    if creator.alive() {
        return None;
    }
    let mut made = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let ["file", n, dev, ino, btime] = f.as_slice() {
            made.push(Entry {
                _hold: None,
                name: OsString::from_vec(unhex(n)?),
                dev: dev.parse().ok()?,
                ino: ino.parse().ok()?,
                btime: btime.parse().ok()?,
            });
        }
    }
    let d = PrivateDir {
        path: path.to_path_buf(),
        dir,
        dev: m.dev(),
        ino: m.ino(),
        made,
        manifest: None,
        keep: true,
    };
    match d.remove() {
        Ok(n) => n,
        Err(e) => Some(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_dir_is_new_0700_and_loses_only_what_it_made() {
        let t = tempfile::tempdir().unwrap();
        let mut d = PrivateDir::new(t.path(), "dioscope-test").unwrap();
        let p = d.path().to_path_buf();
        assert!(p.starts_with(t.path()));
        let md = std::fs::metadata(&p).unwrap();
        assert_eq!(md.permissions().mode() & 0o7777, 0o700);
        // A second one has another name.
        let d2 = PrivateDir::new(t.path(), "dioscope-test").unwrap();
        assert_ne!(d2.path(), p);
        drop(d2);
        let mut f = d.create_file("a.err").unwrap();
        f.write_all(b"x").unwrap();
        assert!(d.create_file("a.err").is_err(), "O_EXCL");
        std::fs::write(p.join("user.txt"), b"mine").unwrap();
        let note = d.remove().unwrap();
        assert!(note.unwrap().contains("user.txt"));
        assert!(!p.join("a.err").exists());
        assert_eq!(std::fs::read(p.join("user.txt")).unwrap(), b"mine");
    }

    #[test]
    fn private_dir_never_writes_through_a_planted_link_and_keeps_a_replaced_file() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let mut d = PrivateDir::new(t.path(), "p").unwrap();
        let p = d.path().to_path_buf();
        std::os::unix::fs::symlink(&victim, p.join("x.err")).unwrap();
        assert!(d.create_file("x.err").is_err());
        assert!(d.adopt("x.err").is_err(), "a link is not adopted");
        drop(d.create_file("y").unwrap());
        // y replaced by the user's own file: it stays.
        std::fs::remove_file(p.join("y")).unwrap();
        std::fs::write(p.join("y"), b"user").unwrap();
        drop(d);
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(p.join("y")).unwrap(), b"user");
    }

    #[test]
    fn private_dir_leftover_of_a_dead_process_is_swept_only_when_ours() {
        let t = tempfile::tempdir().unwrap();
        let mut d = PrivateDir::new(t.path(), "dioscope-profile").unwrap();
        drop(d.create_file("g0t0.err").unwrap());
        let p = d.path().to_path_buf();
        d.keep();
        drop(d);
        // A live creator (this process): not swept.
        assert!(sweep_leftovers(t.path(), "dioscope-profile").is_empty());
        assert!(p.exists());
        // The creator is made a dead one: swept.
        let text = std::fs::read_to_string(p.join(MANIFEST)).unwrap();
        let dead = text.replace(
            &ProcessId::current().line(),
            &format!("creator 999999999 1 {}", boot_id()),
        );
        std::fs::write(p.join(MANIFEST), dead).unwrap();
        // A look-alike that is not ours (mode 0755, no manifest) stays.
        let other = t.path().join("dioscope-profile.userdir");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("g0t0.err"), b"user").unwrap();
        assert!(sweep_leftovers(t.path(), "dioscope-profile").is_empty());
        assert!(!p.exists());
        assert_eq!(std::fs::read(other.join("g0t0.err")).unwrap(), b"user");
    }

    #[test]
    fn private_dir_refuses_a_parent_that_is_not_a_directory() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("file");
        std::fs::write(&f, b"").unwrap();
        assert!(PrivateDir::new(&f, "x").is_err());
        assert!(PrivateDir::new(&t.path().join("missing"), "x").is_err());
    }

    #[test]
    fn private_dir_hex_round_trip() {
        assert_eq!(unhex(&hex(b"a\xff/")).unwrap(), b"a\xff/");
        assert!(unhex("abc").is_none());
    }
}
