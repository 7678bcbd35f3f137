//! Result files: checked before the run ([`check_output`]) and written whole
//! ([`write_result`]) so a crash leaves the old result or the new one, never
//! half of one — and so the result never lands on anything but a regular
//! file of its own.

pub mod private;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the result goes, once [`check_output`] accepted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// `-`, `/dev/stdout`, `/dev/fd/1`: written directly (a pipe or terminal
    /// cannot be renamed over).
    Stdout,
    /// `/dev/stderr`, `/dev/fd/2`.
    Stderr,
    /// A regular file, replaced atomically. The path is resolved: a symlink
    /// to a result file keeps pointing at the new result.
    File(PathBuf),
}

/// Why `--output` was refused (before any I/O; exit 2).
#[derive(Debug, thiserror::Error)]
#[error("--output={given}: {why}")]
pub struct OutputError {
    pub given: String,
    pub why: String,
}

/// The descriptor number when `p` (already absolute or relative to the
/// current directory) names one of our own descriptors: `/proc/self/fd/N`,
/// `/proc/PID/fd/N` of this process, `/dev/fd/N` and anything linking there.
fn own_fd(p: &Path) -> Option<i32> {
    let parent = fs::canonicalize(p.parent()?).ok()?;
    let n: i32 = p.file_name()?.to_str()?.parse().ok()?;
    let me = format!("/proc/{}/", std::process::id());
    let s = parent.to_str()?;
    let ours = s == "/proc/self/fd"
        || s == "/proc/thread-self/fd"
        || (s.starts_with(&me) && s.ends_with("/fd"));
    ours.then_some(n)
}

/// Follow the symlinks of the last component by hand (at most 32), stopping
/// at one of our descriptors. Returns the final path and the descriptor.
fn resolve(p: &Path) -> (PathBuf, Option<i32>) {
    let mut cur = p.to_path_buf();
    for _ in 0..32 {
        if let Some(fd) = own_fd(&cur) {
            return (cur, Some(fd));
        }
        match fs::read_link(&cur) {
            Ok(t) if t.is_absolute() => cur = t,
            Ok(t) => cur = cur.parent().unwrap_or(Path::new(".")).join(t),
            Err(_) => break,
        }
    }
    (cur, None)
}

fn kind(ft: &fs::FileType) -> Option<&'static str> {
    if ft.is_dir() {
        Some("a directory")
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_socket() {
        Some("a socket")
    } else if ft.is_char_device() {
        Some("a character device (like /dev/null)")
    } else if ft.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

/// Check `--output` before anything runs: it must be standard output or a
/// regular file (existing or to be made) that is none of the run's
/// `targets`, in a writable directory outside /dev.
pub fn check_output(given: &str, targets: &[PathBuf]) -> Result<Output, OutputError> {
    let err = |why: String| OutputError {
        given: given.to_string(),
        why,
    };
    if given == "-" {
        return Ok(Output::Stdout);
    }
    if given.is_empty() {
        return Err(err(
            "an empty path; give a file name, or - for standard output".into(),
        ));
    }
    let (path, fd) = resolve(Path::new(given));
    match fd {
        Some(1) => return Ok(Output::Stdout),
        Some(2) => return Ok(Output::Stderr),
        Some(n) => {
            return Err(err(format!(
                "names descriptor {n} of dioscope itself; use - for standard output"
            )))
        }
        None => {}
    }
    let meta = match fs::metadata(&path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs::symlink_metadata(&path).is_ok() {
                return Err(err(format!(
                    "is a symlink to {}, which does not exist; point it at a real location",
                    path.display()
                )));
            }
            None
        }
        Err(e) => return Err(err(format!("cannot look at it: {e}"))),
    };
    if let Some(m) = &meta {
        if let Some(k) = kind(&m.file_type()) {
            return Err(err(format!(
                "is {k}, not a result file; give a regular file's path, or - for standard output"
            )));
        }
    }
    let name = path
        .file_name()
        .ok_or_else(|| err("has no file name; give a file's path".into()))?
        .to_owned();
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = fs::canonicalize(parent).map_err(|e| {
        err(format!(
            "directory {} does not exist ({e}); create it or choose another path",
            parent.display()
        ))
    })?;
    if !dir.is_dir() {
        return Err(err(format!("{} is not a directory", parent.display())));
    }
    if crate::targets::is_dev_dir(&dir) {
        return Err(err(format!(
            "resolves to {}, inside /dev: dioscope never creates regular files there (a typo \
             through a symlink or ..?); choose a path outside /dev",
            dir.join(&name).display()
        )));
    }
    let final_path = dir.join(&name);
    for t in targets {
        let same = match (&meta, fs::metadata(t)) {
            (Some(m), Ok(tm)) => m.dev() == tm.dev() && m.ino() == tm.ino(),
            _ => {
                let tp = t.parent().filter(|p| !p.as_os_str().is_empty());
                let tdir = fs::canonicalize(tp.unwrap_or(Path::new("."))).ok();
                tdir.zip(t.file_name())
                    .is_some_and(|(d, n)| d.join(n) == final_path)
            }
        };
        if same {
            return Err(err(format!(
                "is {}, a target of this run: the report would replace its data; choose \
                 another file",
                t.display()
            )));
        }
    }
    probe_writable(&dir).map_err(|e| {
        err(format!(
            "cannot create files in {} ({e}); choose a writable location",
            dir.display()
        ))
    })?;
    Ok(Output::File(final_path))
}

/// Prove the directory takes a new file now, before the run: an unnamed
/// `O_TMPFILE` file (gone when closed), or where the filesystem lacks
/// those, a named one removed at once by identity.
fn probe_writable(dir: &Path) -> io::Result<()> {
    let (f, named) = new_file_in(dir, ".dioscope-probe", 0o600)?;
    if let Some(p) = named {
        let m = f.metadata()?;
        crate::targets::remove_if_same(&p, m.dev(), m.ino());
    }
    Ok(())
}

/// A new file in `dir` that no other name can point at: an unnamed
/// `O_TMPFILE` file, or where the filesystem lacks those, an `O_EXCL` one
/// named `PREFIX.PID.NANOS` (returned, for the caller to rename or remove).
fn new_file_in(dir: &Path, prefix: &str, mode: u32) -> io::Result<(fs::File, Option<PathBuf>)> {
    match OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(mode)
        .open(dir)
    {
        Ok(f) => Ok((f, None)),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR)
            ) =>
        {
            let p = dir.join(format!("{prefix}.{}.{}", std::process::id(), nanos()));
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&p)?;
            Ok((f, Some(p)))
        }
        Err(e) => Err(e),
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Write the result where [`check_output`] said.
pub fn write_result(out: &Output, data: &[u8]) -> io::Result<()> {
    match out {
        Output::Stdout => {
            let mut o = io::stdout().lock();
            o.write_all(data)?;
            o.flush()
        }
        Output::Stderr => io::stderr().lock().write_all(data),
        Output::File(p) => write_atomic(p, data),
    }
}

/// The temporary name of a result file `NAME` being written by process
/// `pid` into inode `ino`: `.NAME.dioscope-tmp.PID.INO`. The inode number
/// is what proves a stale one is dioscope's: a file only carries its own
/// inode number in its name if dioscope put it there.
fn temp_name(name: &str, pid: u32, ino: u64) -> String {
    format!(".{name}.dioscope-tmp.{pid}.{ino}")
}

/// Write `data` to the regular file `path` atomically: an unnamed
/// `O_TMPFILE` file in the same directory, written and fsynced, linked under
/// [`temp_name`] and renamed over `path`. A crash leaves the old file or the
/// new one, never half of one. Replacing a result keeps its mode and owner.
///
/// A process killed between the link and the rename (microseconds) leaves
/// its temporary file; the next write of the same result removes it when it
/// is provably dioscope's: its name carries its own inode number and a pid
/// that is gone. Filesystems without `O_TMPFILE` get a named file created
/// with `O_EXCL` (`.NAME.dioscope-new.PID.NANOS`), renamed the same way;
/// those are never removed automatically.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    remove_stale_temps(dir, &name);
    let old = fs::metadata(path).ok().filter(|m| m.is_file());
    let (f, fallback) = new_file_in(dir, &format!(".{name}.dioscope-new"), 0o666)?;
    let ino = f.metadata()?.ino();
    let tmp = dir.join(temp_name(&name, std::process::id(), ino));
    let res = (|| {
        let mut f = &f;
        f.write_all(data)?;
        if let Some(m) = &old {
            f.set_permissions(fs::Permissions::from_mode(m.mode() & 0o7777))?;
            // Only root may give a file away; others keep their own.
            let _ = std::os::unix::fs::fchown(f, Some(m.uid()), Some(m.gid()));
            // chown clears set-id bits: set the mode again.
            f.set_permissions(fs::Permissions::from_mode(m.mode() & 0o7777))?;
        }
        f.sync_all()?;
        match &fallback {
            None => {
                use std::os::fd::AsRawFd;
                dioscope_sys::fs::link_fd(f.as_raw_fd(), &tmp)?;
            }
            Some(p) => fs::rename(p, &tmp)?,
        }
        fs::rename(&tmp, path)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if res.is_err() {
        for p in [Some(&tmp), fallback.as_ref()].into_iter().flatten() {
            crate::targets::remove_if_same(p, f.metadata()?.dev(), ino);
        }
    }
    res
}

/// Remove `.NAME.dioscope-tmp.PID.INO` files in `dir` that are provably a
/// dead dioscope's: the pid is gone, and the file is a regular file whose
/// inode number is the one its name carries.
fn remove_stale_temps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.dioscope-tmp.");
    let Ok(rd) = fs::read_dir(dir) else {
        return;
    };
    for ent in rd.flatten() {
        let f = ent.file_name();
        let Some((pid, ino)) = f
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|r| r.split_once('.'))
            .and_then(|(p, i)| Some((p.parse::<u32>().ok()?, i.parse::<u64>().ok()?)))
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if pid == std::process::id() || alive {
            continue;
        }
        if let Ok(m) = fs::symlink_metadata(ent.path()) {
            if m.is_file() && m.ino() == ino {
                crate::targets::remove_if_same(&ent.path(), m.dev(), ino);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn stale_temps_are_removed_only_when_provably_ours() {
        let d = tempfile::tempdir().unwrap();
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        // A dead dioscope's temporary file: its name carries its own inode.
        let tmp = d.path().join("x");
        fs::write(&tmp, b"{\"half").unwrap();
        let ino = fs::metadata(&tmp).unwrap().ino();
        let stale = d.path().join(temp_name("r.json", dead, ino));
        fs::rename(&tmp, &stale).unwrap();
        // A user's file with a made-up inode number, one of a live process,
        // the old naming scheme, another result's.
        // Far from ino: the files written next in this directory get the
        // following inode numbers on tmpfs, and one of them must not match.
        let forged = d.path().join(temp_name("r.json", dead, ino + (1 << 40)));
        let live = d.path().join(temp_name("r.json", 1, 5));
        let old_scheme = d.path().join(format!(".r.json.tmp.{dead}"));
        let other = d.path().join(format!(".other.json.dioscope-tmp.{dead}.1"));
        for p in [&forged, &live, &old_scheme, &other] {
            fs::write(p, b"mine").unwrap();
        }
        write_atomic(&d.path().join("r.json"), b"whole").unwrap();
        assert!(
            !stale.exists(),
            "a dead dioscope's temporary file is removed"
        );
        for p in [&forged, &live, &old_scheme, &other] {
            assert!(p.exists(), "{} was removed", p.display());
        }
    }

    #[test]
    fn output_checks() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t.dat");
        fs::write(&t, b"x").unwrap();
        assert_eq!(check_output("-", &[]).unwrap(), Output::Stdout);
        assert!(check_output(t.to_str().unwrap(), &[t.clone()]).is_err());
        let new_t = d.path().join("new.dat");
        let e = check_output(new_t.to_str().unwrap(), &[new_t.clone()]).unwrap_err();
        assert!(e.to_string().contains("target of this run"), "{e}");
        assert!(check_output(d.path().to_str().unwrap(), &[]).is_err());
        assert!(check_output("/dev/null", &[]).is_err());
        assert!(check_output("/dev/dioscope-typo.json", &[]).is_err());
        let ok = d.path().join("r.json");
        assert_eq!(
            check_output(ok.to_str().unwrap(), &[t]).unwrap(),
            Output::File(fs::canonicalize(d.path()).unwrap().join("r.json"))
        );
        let missing = d.path().join("no/such/dir/r.json");
        assert!(check_output(missing.to_str().unwrap(), &[]).is_err());
    }
}
