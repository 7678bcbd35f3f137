//! Result files: checked before the run ([`check_output`]) and written whole
//! ([`write_result`]) so a crash leaves the old result or the new one, never
//! half of one — and so the result never lands on anything but a regular
//! file of its own.

pub mod private;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Unlink `path` when it is (not follows to) the regular file `dev`/`ino`.
/// The gap between this lstat and the unlink is a few instructions; a
/// replacement by the user in between is the remaining window (Linux has no
/// compare-and-unlink).
pub fn remove_if_same(path: &Path, dev: u64, ino: u64) -> bool {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() && m.dev() == dev && m.ino() == ino => {
            std::fs::remove_file(path).is_ok()
        }
        _ => false,
    }
}

/// Whether `path`, once resolved (symlinks, `..`, a relative path), would
/// land on the filesystem of /dev (devtmpfs): such a path names a device,
/// never a place to create a regular file. Separate mounts below /dev
/// (/dev/shm) are ordinary filesystems.
pub fn lands_in_dev(path: &Path) -> bool {
    let parent = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => p.to_path_buf(),
        None => PathBuf::from("."),
    };
    match std::fs::canonicalize(&parent) {
        Ok(dir) => is_dev_dir(&dir),
        Err(_) => path.starts_with("/dev"),
    }
}

/// Whether a directory is on the filesystem of /dev.
pub fn is_dev_dir(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(dir), std::fs::metadata("/dev")) {
        (Ok(a), Ok(b)) => a.dev() == b.dev(),
        _ => dir.starts_with("/dev"),
    }
}

/// Where a created file goes, once [`check`] accepted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// `-`, `/dev/stdout`, `/dev/fd/1`: written directly (a pipe or terminal
    /// cannot be renamed over). Streams are for `--output` and `-o` only.
    Stdout,
    /// `/dev/stderr`, `/dev/fd/2`.
    Stderr,
    /// `/dev/fd/N` (or `/proc/self/fd/N`) of an inherited pipe, socket or
    /// terminal, as `>(…)` gives: written directly.
    Fd(i32),
    /// `/dev/null`: accepted as a discard; nothing is written.
    Null,
    /// A regular file (existing or to be made) in a checked directory, by
    /// its resolved directory and its own name; never a symbolic link.
    File(PathBuf),
}

/// What a file dioscope creates must never be, and who asks for it.
///
/// Every file and folder dioscope creates or truncates — results, reports,
/// logs, iologs, verify states, a program's output, working folders,
/// scratch files — is checked with these rules by [`check`] before the
/// first I/O and opened by [`open`], [`write_result`] or [`create_dir`],
/// which check again on the descriptor itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules<'a> {
    /// Who asks, named in errors: `--output`, `write_bw_log`, `report -o`.
    pub what: &'a str,
    /// The run's targets: never replaced, truncated or appended to.
    pub targets: &'a [PathBuf],
    /// The command's inputs (job files, results being read, `--resume`'s
    /// state): never replaced.
    pub inputs: &'a [PathBuf],
    /// Standard output and error, an inherited `/dev/fd/N` pipe or terminal
    /// are accepted (`--output`, `-o`); elsewhere they are refused.
    pub streams: bool,
}

impl<'a> Rules<'a> {
    /// The rules for `what`, with no target and no input.
    pub fn new(what: &'a str) -> Rules<'a> {
        Rules {
            what,
            ..Default::default()
        }
    }
    pub fn targets(mut self, t: &'a [PathBuf]) -> Self {
        self.targets = t;
        self
    }
    pub fn inputs(mut self, i: &'a [PathBuf]) -> Self {
        self.inputs = i;
        self
    }
    pub fn streams(mut self) -> Self {
        self.streams = true;
        self
    }
}

/// Why a created file was refused (before any I/O; exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", label(what, given))]
pub struct OutputError {
    pub what: String,
    pub given: String,
    pub why: String,
}

/// `--output=FILE` for a flag or option, `report -o FILE` for anything
/// named in words.
fn label(what: &str, given: &str) -> String {
    if what.contains(' ') {
        format!("{what} {}", shown(given))
    } else {
        format!("{what}={}", shown(given))
    }
}

/// A value as echoed in a message: whole up to 200 characters, else its
/// start and its length (a 1 MB value would bury the message).
pub fn shown(v: &str) -> String {
    const MAX: usize = 200;
    if v.len() <= MAX {
        return v.to_string();
    }
    let mut end = MAX;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &v[..end], v.len())
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
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_symlink() {
        Some("a symbolic link")
    } else {
        None
    }
}

/// `/dev/null` by what it is (character device 1:3), not by its name.
fn is_dev_null(m: &fs::Metadata) -> bool {
    m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3)
}

/// A terminal by its device number: pts (majors 136–143), the console and
/// ttys (4 and 5).
pub(crate) fn is_terminal(m: &fs::Metadata) -> bool {
    m.file_type().is_char_device() && matches!((m.rdev() >> 8) & 0xfff, 4 | 5 | 136..=143)
}

/// Whether descriptor `n` of this process is a stream dioscope may write
/// to as it is: a pipe, a socket or a terminal (pts: majors 136–143; the
/// console and ttys: 4 and 5).
fn stream_fd(n: i32) -> Result<(), String> {
    let m = fs::metadata(format!("/proc/self/fd/{n}"))
        .map_err(|_| format!("descriptor {n} is not open in dioscope"))?;
    let ft = m.file_type();
    if ft.is_fifo() || ft.is_socket() || is_terminal(&m) {
        return Ok(());
    }
    let what = kind(&ft).unwrap_or("a regular file");
    Err(format!(
        "descriptor {n} is {what}, not a pipe or terminal; give the file's own path instead"
    ))
}

/// The (device, inode) of each existing path.
fn identities(paths: &[PathBuf]) -> Vec<(u64, u64, &PathBuf)> {
    paths
        .iter()
        .filter_map(|p| fs::metadata(p).ok().map(|m| (m.dev(), m.ino(), p)))
        .collect()
}

/// `path` as a new file would resolve it: its canonical directory joined
/// with its name (`None` when the directory does not exist).
fn resolved_new(p: &Path) -> Option<PathBuf> {
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()?;
    Some(dir.join(p.file_name()?))
}

/// Whether the existing file `(dev, ino)` or the new path `new` is one of
/// the run's targets or the command's inputs: the message, if so.
fn forbidden(rules: &Rules, id: Option<(u64, u64)>, new: Option<&Path>) -> Option<String> {
    let (mut targets, mut inputs) = {
        let p = PROTECTED.lock().unwrap_or_else(|e| e.into_inner());
        (p.0.clone(), p.1.clone())
    };
    targets.extend(rules.targets.iter().cloned());
    inputs.extend(rules.inputs.iter().cloned());
    let hit = |list: &[PathBuf]| -> Option<PathBuf> {
        if let Some((dev, ino)) = id {
            if let Some((_, _, p)) = identities(list)
                .into_iter()
                .find(|(d, i, _)| (*d, *i) == (dev, ino))
            {
                return Some(p.clone());
            }
        }
        let new = new?;
        list.iter()
            .find(|t| resolved_new(t).as_deref() == Some(new))
            .cloned()
    };
    if let Some(t) = hit(&targets) {
        return Some(format!(
            "is {}, a target of this run: writing it would replace the target's data; choose \
             another file",
            t.display()
        ));
    }
    if let Some(i) = hit(&inputs) {
        return Some(format!(
            "is {}, an input of this command: writing it would replace what is being read; \
             choose another file",
            i.display()
        ));
    }
    None
}

/// The run's targets and the command's inputs, for checks made deep in the
/// run (a log opened by a worker) that were not handed them.
static PROTECTED: std::sync::Mutex<(Vec<PathBuf>, Vec<PathBuf>)> =
    std::sync::Mutex::new((Vec::new(), Vec::new()));

/// Record the run's targets and the command's inputs: every later [`check`]
/// and [`open`] refuses them even when its [`Rules`] do not list them.
pub fn protect(targets: &[PathBuf], inputs: &[PathBuf]) {
    let mut p = PROTECTED.lock().unwrap_or_else(|e| e.into_inner());
    for t in targets {
        if !p.0.contains(t) {
            p.0.push(t.clone());
        }
    }
    for i in inputs {
        if !p.1.contains(i) {
            p.1.push(i.clone());
        }
    }
}

/// Check a file dioscope is to create (or replace), before anything runs:
/// a regular file (existing or new) that is no target of the run and no
/// input of the command, not a device node, FIFO, socket or directory, not
/// a symbolic link (one planted at the name could point anywhere), not a
/// new file inside /dev, in an existing writable directory. `/dev/null` is
/// a discard; with [`Rules::streams`], `-`, `/dev/stdout`, `/dev/stderr` and
/// an inherited `/dev/fd/N` pipe or terminal are streams.
pub fn check(given: &Path, rules: &Rules) -> Result<Output, OutputError> {
    // Text that stands for bytes that are not UTF-8 (osstr) names those.
    let real = given
        .to_str()
        .filter(|s| crate::osstr::has_raw(s))
        .map(crate::osstr::path);
    let given = real.as_deref().unwrap_or(given);
    let err = |why: String| OutputError {
        what: rules.what.to_string(),
        given: given.to_string_lossy().into_owned(),
        why,
    };
    let stream_only = |s: &str| {
        err(format!(
            "{s} is a stream, and {} must be a file of its own; give a file's path",
            rules.what
        ))
    };
    if given.as_os_str() == "-" {
        return if rules.streams {
            Ok(Output::Stdout)
        } else {
            Err(stream_only("standard output"))
        };
    }
    if given.as_os_str().is_empty() {
        return Err(err("an empty path; give a file name".into()));
    }
    let (_, fd) = resolve(given);
    if let Some(n) = fd {
        if !rules.streams {
            return Err(stream_only(&format!("descriptor {n}")));
        }
        return match n {
            1 => Ok(Output::Stdout),
            2 => Ok(Output::Stderr),
            n => stream_fd(n).map(|()| Output::Fd(n)).map_err(err),
        };
    }
    let lmeta = match fs::symlink_metadata(given) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(err(format!("cannot look at it: {e}"))),
    };
    if let Some(m) = &lmeta {
        if let Some(out) = existing(given, m).map_err(err)? {
            return Ok(out);
        }
    }
    let (dir, name) = directory_of(given).map_err(err)?;
    let final_path = dir.join(&name);
    let id = lmeta.as_ref().map(|m| (m.dev(), m.ino()));
    if let Some(why) = forbidden(rules, id, Some(&final_path)) {
        return Err(err(why));
    }
    probe_writable(&dir).map_err(|e| {
        err(format!(
            "cannot create files in {} ({e}); choose a writable location",
            dir.display()
        ))
    })?;
    Ok(Output::File(final_path))
}

/// What is at the name already: a symbolic link or a node dioscope never
/// writes (`Err`), `/dev/null` (a discard), or a regular file (`None`: go on).
fn existing(given: &Path, m: &fs::Metadata) -> Result<Option<Output>, String> {
    if m.file_type().is_symlink() {
        let to = fs::read_link(given)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        return Err(format!(
            "is a symbolic link (to {to}): dioscope never writes through a link at the name \
             of a file it creates, since one planted there could point anywhere; give the \
             real path, or remove the link"
        ));
    }
    if is_dev_null(m) {
        return Ok(Some(Output::Null));
    }
    if let Some(k) = kind(&m.file_type()) {
        return Err(format!(
            "is {k}, not a file dioscope may write; give a regular file's path"
        ));
    }
    Ok(None)
}

/// The directory the file goes in, resolved (it must exist, be a
/// directory and not be /dev), and the file's name in it.
fn directory_of(given: &Path) -> Result<(PathBuf, std::ffi::OsString), String> {
    let name = given
        .file_name()
        .ok_or_else(|| "has no file name; give a file's path".to_string())?
        .to_owned();
    let parent = given
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = fs::canonicalize(parent).map_err(|e| {
        format!(
            "directory {} does not exist ({e}); create it or choose another path",
            parent.display()
        )
    })?;
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", parent.display()));
    }
    if is_dev_dir(&dir) {
        return Err(format!(
            "resolves to {}, inside /dev: dioscope never creates regular files there (a typo, \
             a name derived from a stream like /dev/stdout, or a symlink or .. leading there?); \
             choose a path outside /dev",
            dir.join(&name).display()
        ));
    }
    Ok((dir, name))
}

/// How [`open`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Emptied once it is proven a file of its own (logs, a program's output).
    Truncate,
    /// Written at its end (`write_iolog`, logs shared by several workers).
    Append,
    /// Kept as it is (e4defrag's donor file, resized by the engine).
    Keep,
}

/// Open a file dioscope writes as it goes (logs, iologs, a program's
/// output) at `given`: [`check`] first, then the name is opened in the
/// checked directory's own descriptor without following a symbolic link
/// (`O_NOFOLLOW`, `O_NONBLOCK`: a FIFO put there in the meantime is not
/// waited on), and the descriptor itself is checked to be a regular file
/// that is no target and no input before it is truncated or written.
pub fn open(given: &Path, mode: Mode, rules: &Rules) -> Result<File, OutputError> {
    let out = check(given, rules)?;
    open_checked(&out, mode, rules).map_err(|e| OutputError {
        what: rules.what.to_string(),
        given: given.to_string_lossy().into_owned(),
        why: e.to_string(),
    })
}

/// [`open`] of what [`check`] returned.
fn open_checked(out: &Output, mode: Mode, rules: &Rules) -> io::Result<File> {
    let reopen = |p: &str| OpenOptions::new().append(true).open(p);
    match out {
        Output::Stdout => reopen("/proc/self/fd/1"),
        Output::Stderr => reopen("/proc/self/fd/2"),
        Output::Fd(n) => reopen(&format!("/proc/self/fd/{n}")),
        Output::Null => OpenOptions::new().write(true).open("/dev/null"),
        Output::File(p) => {
            let (dir, name) = split(p);
            let d = open_dir(dir)?;
            let bad = |why: String| io::Error::other(why);
            match dioscope_sys::dirfd::lstatat(d.as_raw_fd(), name) {
                Ok((mode_bits, ..)) if mode_bits & libc::S_IFMT != libc::S_IFREG => {
                    return Err(bad(format!(
                        "{} is no longer a regular file; nothing was written",
                        p.display()
                    )))
                }
                _ => {}
            }
            let mut flags = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_NOFOLLOW
                | libc::O_NOCTTY
                | libc::O_NONBLOCK;
            if mode == Mode::Append {
                flags |= libc::O_APPEND;
            }
            let fd = dioscope_sys::dirfd::openat(d.as_raw_fd(), name, flags, 0o666)?;
            let f = File::from(fd);
            let m = f.metadata()?;
            if !m.file_type().is_file() {
                return Err(bad(format!(
                    "{} is not a regular file; nothing was written",
                    p.display()
                )));
            }
            if let Some(why) = forbidden(rules, Some((m.dev(), m.ino())), None) {
                return Err(bad(why));
            }
            if mode == Mode::Truncate {
                f.set_len(0)?;
            }
            Ok(f)
        }
    }
}

/// What [`create_dir`] would do with `given`: `Ok(true)` when it is a
/// folder of its own already (not a symbolic link, not in /dev), `Ok(false)`
/// when it may be made. Checked before any work (exit 2).
pub fn check_dir(given: &Path, rules: &Rules) -> Result<bool, OutputError> {
    let err = |why: String| OutputError {
        what: rules.what.to_string(),
        given: given.to_string_lossy().into_owned(),
        why,
    };
    match fs::symlink_metadata(given) {
        Ok(m) if m.file_type().is_dir() => {
            let dir = fs::canonicalize(given).map_err(|e| err(e.to_string()))?;
            if is_dev_dir(&dir) {
                return Err(err("is inside /dev; choose a folder outside /dev".into()));
            }
            Ok(true)
        }
        Ok(m) => Err(err(format!(
            "is {}, not a folder; remove it or choose another name",
            kind(&m.file_type()).unwrap_or("a regular file")
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match check(given, rules)? {
            Output::File(_) => Ok(false),
            _ => Err(err(
                "is a stream or a discard; a folder of files cannot be made there".into(),
            )),
        },
        Err(e) => Err(err(format!("cannot look at it: {e}"))),
    }
}

/// Make the folder `given` (or use it when it is a folder of its own
/// already), for files dioscope writes beside a result (`OUT.d/`): checked
/// by [`check_dir`], then made with `mkdirat` in its checked parent.
pub fn create_dir(given: &Path, rules: &Rules) -> Result<PathBuf, OutputError> {
    let err = |why: String| OutputError {
        what: rules.what.to_string(),
        given: given.to_string_lossy().into_owned(),
        why,
    };
    if check_dir(given, rules)? {
        return fs::canonicalize(given).map_err(|e| err(e.to_string()));
    }
    let Output::File(p) = check(given, rules)? else {
        return Err(err("is a stream; a folder cannot be made there".into()));
    };
    let (dir, name) = split(&p);
    let d = open_dir(dir).map_err(|e| err(e.to_string()))?;
    dioscope_sys::dirfd::mkdirat(d.as_raw_fd(), name, 0o777).map_err(|e| err(e.to_string()))?;
    Ok(p)
}

fn split(p: &Path) -> (&Path, &std::ffi::OsStr) {
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    (dir, p.file_name().unwrap_or(p.as_os_str()))
}

/// A directory's descriptor, for `openat`/`mkdirat` (`O_PATH`: no read
/// permission needed).
fn open_dir(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_PATH)
        .open(dir)
}

/// Prove the directory takes a new file now, before the run: an unnamed
/// `O_TMPFILE` file (gone when closed), or where the filesystem lacks
/// those, a named one removed at once by identity.
fn probe_writable(dir: &Path) -> io::Result<()> {
    let (f, named) = new_file_in(dir, ".dioscope-probe", 0o600)?;
    if let Some(p) = named {
        let m = f.metadata()?;
        remove_if_same(&p, m.dev(), m.ino());
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
        Output::Fd(n) => OpenOptions::new()
            .append(true)
            .open(format!("/proc/self/fd/{n}"))?
            .write_all(data),
        Output::Null => Ok(()),
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
    let old = fs::symlink_metadata(path).ok().filter(|m| m.is_file());
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
            remove_if_same(p, f.metadata()?.dev(), ino);
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
                remove_if_same(&ent.path(), m.dev(), ino);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`check`] of `--output` (streams allowed) against `targets`.
    fn check_output(given: &str, targets: &[PathBuf]) -> Result<Output, OutputError> {
        check(
            Path::new(given),
            &Rules::new("--output").targets(targets).streams(),
        )
    }

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
    fn open_refuses_links_fifos_targets_and_inputs_and_never_blocks() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        let link = d.path().join("x_bw.1.log");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let r = Rules::new("write_bw_log");
        let e = open(&link, Mode::Truncate, &r).unwrap_err();
        assert!(e.why.contains("symbolic link"), "{e}");
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        // A FIFO nobody reads: refused at once, not waited on.
        let fifo = d.path().join("fifo.log");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = open(&fifo, Mode::Append, &r).unwrap_err();
        assert!(e.why.contains("FIFO"), "{e}");
        // A target and an input, by identity.
        let t = d.path().join("t.dat");
        fs::write(&t, b"data").unwrap();
        let targets = [t.clone()];
        let e = open(
            &t,
            Mode::Truncate,
            &Rules::new("write_iolog").targets(&targets),
        )
        .unwrap_err();
        assert!(e.why.contains("target"), "{e}");
        let e = open(
            &t,
            Mode::Append,
            &Rules::new("write_iolog").inputs(&targets),
        )
        .unwrap_err();
        assert!(e.why.contains("input"), "{e}");
        assert_eq!(fs::read(&t).unwrap(), b"data");
        // A plain log: created, then truncated on the next open.
        let log = d.path().join("ok.log");
        std::io::Write::write_all(&mut open(&log, Mode::Truncate, &r).unwrap(), b"12345").unwrap();
        std::io::Write::write_all(&mut open(&log, Mode::Append, &r).unwrap(), b"6").unwrap();
        assert_eq!(fs::read(&log).unwrap(), b"123456");
        open(&log, Mode::Truncate, &r).unwrap();
        assert_eq!(fs::read(&log).unwrap(), b"");
        // Streams only where allowed.
        assert!(check(Path::new("-"), &r).is_err());
        assert!(check(Path::new("/dev/stdout"), &r).is_err());
        assert_eq!(check(Path::new("/dev/null"), &r).unwrap(), Output::Null);
    }

    #[test]
    fn create_dir_makes_a_folder_or_uses_one_but_never_a_link_or_dev() {
        let d = tempfile::tempdir().unwrap();
        let r = Rules::new("--output");
        let p = d.path().join("out.d");
        create_dir(&p, &r).unwrap();
        assert!(p.is_dir());
        create_dir(&p, &r).unwrap();
        let l = d.path().join("link.d");
        std::os::unix::fs::symlink(d.path(), &l).unwrap();
        assert!(create_dir(&l, &r).is_err());
        assert!(create_dir(Path::new("/dev/dioscope-never.d"), &r).is_err());
        assert!(!Path::new("/dev/dioscope-never.d").exists());
    }

    #[test]
    fn output_checks() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t.dat");
        fs::write(&t, b"x").unwrap();
        assert_eq!(check_output("-", &[]).unwrap(), Output::Stdout);
        assert!(check_output(t.to_str().unwrap(), std::slice::from_ref(&t)).is_err());
        let new_t = d.path().join("new.dat");
        let e = check_output(new_t.to_str().unwrap(), std::slice::from_ref(&new_t)).unwrap_err();
        assert!(e.to_string().contains("target of this run"), "{e}");
        assert!(check_output(d.path().to_str().unwrap(), &[]).is_err());
        assert_eq!(check_output("/dev/null", &[]).unwrap(), Output::Null);
        assert!(check_output("/dev/zero", &[]).is_err());
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
