//! The metadata engines' common part (fio's filecreate, filestat,
//! filedelete, dircreate, dirstat, dirdelete, filesetxattr, filelistxattr):
//! no data moves; each I/O is one metadata operation on one of the job's
//! names, timed as the I/O's latency.
//!
//! As in fio (3.33), a job's files are its names (`filename=`, or `nrfiles`
//! names from `filename_format` in `directory=`), each of the size fio
//! gives it (`filesize`, else `size / nrfiles`, else one block; whole
//! blocks), and the I/Os go over those bytes as for any engine, in the
//! direction of the job's `rw` (reads by default). The operation is fio's
//! "open" of the file: the first I/O of each file in each pass does it and
//! is timed; the file's other blocks complete at once, counted in
//! `io_bytes` and `total_ios` but with no latency (fio's fake I/Os). So
//! `total_ios` is size / bs, and the latency samples (`clat_ns.N`) are the
//! operations, one per file per pass.
//!
//! Before the run (not timed) the names an operation needs are made, as
//! fio lays them out: files of `filesize` for filestat, filedelete and the
//! xattr engines, directories for dirstat and dirdelete. The guard of this
//! module: a name that exists as anything but what the engine works on (a
//! device, a directory for a file engine) is refused; a delete engine
//! refuses a name it did not make itself, so it removes only what the run
//! created; whatever the run made and did not remove is removed at the end
//! with `unlink=1`, and a delete engine's leftovers (a run stopped early)
//! always.

use super::one_call::{OneAtATime, OneCall};
use super::{
    int, Caps, EngineOption, EngineOpts, EngineSetupError, IoDesc, OptionInfo, OptionKind,
    OptionValue, SlotArena, WithEngine,
};
use dioscope_sys::meta as sys;
pub use dioscope_sys::meta::StatKind;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The capabilities every metadata engine has.
pub const CAPS: Caps = Caps {
    sync: true,
    real_io: false,
    moves_data: false,
    by_name: true,
    ..Caps::BASE
};

/// A metadata engine's capabilities: [`CAPS`], and whether its operation
/// changes what it acts on (creating, deleting, setting attributes).
pub const fn caps(op: Op) -> Caps {
    Caps {
        changes_target: matches!(
            op,
            Op::FileCreate | Op::FileDelete | Op::DirCreate | Op::DirDelete | Op::SetXattr
        ),
        ..CAPS
    }
}

/// The options only the metadata engines take, with fio's defaults
/// (`EngineParams::meta`, set by [`SHARED_OPTIONS`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// filestat, dirstat: stat, lstat or statx.
    pub stat_type: StatKind,
    /// filesetxattr: attributes per file, and bytes of each value.
    pub xattr_count: u32,
    pub xattr_size: u32,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            stat_type: StatKind::Stat,
            xattr_count: 1,
            xattr_size: 64,
        }
    }
}

/// The options the metadata engines share, declared here and nowhere else
/// (the engines that honour one name it in their `OPTIONS`).
pub const SHARED_OPTIONS: &[EngineOption<Params>] = &[
    EngineOption::new(
        OptionInfo::new(
            "stat_type",
            OptionKind::Choice(&["stat", "lstat", "statx"]),
            "statx",
            "filestat, dirstat: the call that looks each name up: stat(2) (default), lstat(2) or \
             statx(2)",
        )
        .defaults_to("stat"),
        |p, v| {
            p.stat_type = match v {
                OptionValue::Choice("stat") => StatKind::Stat,
                OptionValue::Choice("lstat") => StatKind::Lstat,
                OptionValue::Choice("statx") => StatKind::Statx,
                OptionValue::Choice(o) => return Err(format!("'{o}' is not stat, lstat or statx")),
                o => return Err(format!("{o:?} is not stat, lstat or statx")),
            };
            Ok(())
        },
    ),
    EngineOption::new(
        OptionInfo::new(
            "xattr_count",
            OptionKind::Int,
            "2",
            "filesetxattr: extended attributes set on each file (user.dioscope.0 …; default 1)",
        )
        .defaults_to("1")
        .min(1),
        |p, v| {
            p.xattr_count = int(v)?;
            Ok(())
        },
    ),
    EngineOption::new(
        OptionInfo::new(
            "xattr_size",
            OptionKind::Size,
            "128",
            "filesetxattr: bytes of each attribute's value (default 64; at most 64k, the \
             kernel's limit)",
        )
        .defaults_to("64")
        .max(65536),
        // The range keeps it at most 64k, the largest attribute Linux takes.
        |p, v| {
            p.xattr_size = int(v)?;
            Ok(())
        },
    ),
];

/// What the metadata engines need of the job besides their own options.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetaOpts {
    /// `unlink=1`: remove at the end what the run made.
    pub unlink: bool,
    /// Bytes of each file laid out before the run (`filesize`, else
    /// `size / nrfiles`, else one block).
    pub layout_size: u64,
    /// Bytes of each file's pass (`layout_size` in whole blocks, at
    /// least one): its first I/O in a pass does the operation.
    pub per_file: u64,
}

/// The operation one I/O does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `open(O_CREAT)` + `close`.
    FileCreate,
    /// `stat`/`lstat`/`statx` of a file laid out before.
    FileStat,
    /// `unlink` of a file laid out before.
    FileDelete,
    /// `mkdir`.
    DirCreate,
    /// `stat`/`lstat`/`statx` of a directory made before.
    DirStat,
    /// `rmdir` of a directory made before.
    DirDelete,
    /// `setxattr`, `xattr_count` times, on a file laid out before.
    SetXattr,
    /// `listxattr` of a file laid out before.
    ListXattr,
}

/// What must exist before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prep {
    Nothing,
    Files,
    Dirs,
}

impl Op {
    fn engine(self) -> &'static str {
        match self {
            Op::FileCreate => "filecreate",
            Op::FileStat => "filestat",
            Op::FileDelete => "filedelete",
            Op::DirCreate => "dircreate",
            Op::DirStat => "dirstat",
            Op::DirDelete => "dirdelete",
            Op::SetXattr => "filesetxattr",
            Op::ListXattr => "filelistxattr",
        }
    }

    fn on_dirs(self) -> bool {
        matches!(self, Op::DirCreate | Op::DirStat | Op::DirDelete)
    }

    fn prep(self) -> Prep {
        match self {
            Op::FileCreate | Op::DirCreate => Prep::Nothing,
            Op::DirStat | Op::DirDelete => Prep::Dirs,
            Op::FileStat | Op::FileDelete | Op::SetXattr | Op::ListXattr => Prep::Files,
        }
    }

    fn deletes(self) -> bool {
        matches!(self, Op::FileDelete | Op::DirDelete)
    }
}

/// One name of the job: its path, NUL-terminated once, and whether this
/// run made it or will (it did not exist before): only then may the run
/// remove it.
struct Name {
    path: PathBuf,
    c: CString,
    made: bool,
}

/// Build engine `op` over `names`, make what it needs, run `f`, clean up.
pub fn with<W: WithEngine>(
    op: Op,
    arena: SlotArena,
    names: &[PathBuf],
    opts: &EngineOpts,
    f: W,
) -> Result<(W::Out, Option<String>), EngineSetupError> {
    let m = opts.meta;
    let p = opts.job.params.meta;
    let mut set = prepare(op, names, &m)?;
    let xattr_names = (0..p.xattr_count.max(1))
        .map(|i| CString::new(format!("user.dioscope.{i}")).expect("no NUL"))
        .collect();
    let mut e = OneAtATime::new(
        arena,
        MetaOps {
            op,
            stat: p.stat_type,
            names: set.iter().map(|n| n.c.clone()).collect(),
            xattr_names,
            xattr_value: vec![0x5a; p.xattr_size as usize],
            list_buf: vec![0; if op == Op::ListXattr { 65536 } else { 0 }],
            per_file: m.per_file.max(1),
            done: vec![0; set.len()],
            timed: true,
        },
    );
    let out = f.run(&mut e);
    let note = finish(op, &mut set, &m);
    Ok((out, note))
}

/// The error for name `p` that the engine cannot work on.
fn refuse(op: Op, p: &Path, why: &str, fix: &str) -> EngineSetupError {
    EngineSetupError {
        errno: libc::EINVAL,
        msg: format!("ioengine={}: {} {why}; {fix}", op.engine(), p.display()),
    }
}

/// Check each name and make what the operation needs (fio's layout).
fn prepare(op: Op, names: &[PathBuf], m: &MetaOpts) -> Result<Vec<Name>, EngineSetupError> {
    let mut out: Vec<Name> = Vec::with_capacity(names.len());
    for p in names {
        let named = CString::new(p.as_os_str().as_bytes())
            .map_err(|_| refuse(op, p, "holds a NUL byte", "name the files without one"))
            .and_then(|c| {
                let mut n = Name {
                    path: p.clone(),
                    c,
                    made: false,
                };
                match std::fs::symlink_metadata(p) {
                    Ok(md) => check_existing(op, p, &md.file_type()),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => make(op, &mut n, m),
                    Err(e) => Err(EngineSetupError::new(
                        &format!("looking up {}", p.display()),
                        &e,
                        "point directory= at a place this user may read",
                    )),
                }
                .map(|()| n)
            });
        match named {
            Ok(n) => out.push(n),
            Err(e) => {
                // Nothing this setup made stays behind a refusal.
                remove_made(op, &out);
                return Err(e);
            }
        }
    }
    Ok(out)
}

/// A name that exists already: right only when it is of the kind the
/// operation works on and the operation neither deletes nor makes it.
fn check_existing(op: Op, p: &Path, ft: &std::fs::FileType) -> Result<(), EngineSetupError> {
    let right = if op.on_dirs() {
        ft.is_dir()
    } else {
        ft.is_file()
    };
    if !right {
        let what = if ft.is_dir() {
            "a directory"
        } else if ft.is_file() {
            "a regular file"
        } else if ft.is_symlink() {
            "a symbolic link"
        } else {
            "a device or special file"
        };
        let works_on = if op.on_dirs() {
            "directories"
        } else {
            "regular files"
        };
        return Err(refuse(
            op,
            p,
            &format!("is {what}, and this engine works only on {works_on} of its own"),
            "point directory= or filename= at names in a file system that do not exist yet",
        ));
    }
    if op.deletes() || op == Op::DirCreate {
        let what = if op.deletes() {
            "deletes only names it made itself"
        } else {
            "times mkdir of new directories"
        };
        return Err(refuse(
            op,
            p,
            &format!(
                "exists already, so it was not made by this run (or trial); ioengine={} {what}",
                op.engine()
            ),
            "remove it, choose another directory= or filename_format=, or set unlink=1 so that \
             each trial removes what it made",
        ));
    }
    Ok(())
}

/// A name that does not exist: its directory, and what the operation needs
/// before the run (filecreate and dircreate make theirs during the run).
fn make(op: Op, n: &mut Name, m: &MetaOpts) -> Result<(), EngineSetupError> {
    let p = &n.path;
    if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            EngineSetupError::new(
                &format!("creating the directory {}", parent.display()),
                &e,
                "point directory= at a writable place",
            )
        })?;
    }
    let made = match op.prep() {
        Prep::Nothing => Ok(true),
        Prep::Dirs => sys::mkdir(&n.c, 0o700).map(|_| true),
        Prep::Files => lay_out(&n.c, m.layout_size).map(|_| true),
    };
    n.made = made.map_err(|e| {
        EngineSetupError::new(
            &format!("making {}", p.display()),
            &e,
            "point directory= at a writable file system",
        )
    })?;
    Ok(())
}

/// A new file of `size` bytes, written (not sparse) and synced, as fio lays files out.
fn lay_out(c: &CString, size: u64) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::from(sys::create_new(c)?);
    let chunk = vec![0xa5u8; size.clamp(1, 1 << 20) as usize];
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    // fio's create_fsync (on by default): the laid-out files are on the
    // device, not dirty in the cache, when the timed operations start.
    f.sync_all()
}

/// Remove the names this run made that still exist.
fn remove_made(op: Op, names: &[Name]) -> usize {
    let mut n = 0;
    for name in names.iter().filter(|n| n.made) {
        let r = if op.on_dirs() {
            sys::rmdir(&name.c)
        } else {
            sys::unlink(&name.c)
        };
        n += r.is_ok() as usize;
    }
    n
}

/// After the run: a delete engine's leftovers go; with `unlink=1`,
/// everything the run made. Returns a note for the report.
fn finish(op: Op, names: &mut [Name], m: &MetaOpts) -> Option<String> {
    if !(op.deletes() || m.unlink) {
        return None;
    }
    let n = remove_made(op, names);
    (op.deletes() && n > 0).then(|| {
        format!(
            "ioengine={}: the run ended before deleting {n} of the {} names it made (first: {}); \
             they were removed",
            op.engine(),
            names.len(),
            names[0].path.display()
        )
    })
}

/// The call all metadata engines share (under `OneAtATime`).
struct MetaOps {
    op: Op,
    stat: StatKind,
    names: Vec<CString>,
    xattr_names: Vec<CString>,
    xattr_value: Vec<u8>,
    list_buf: Vec<u8>,
    /// Bytes of one file's pass, and per file the bytes done in this pass.
    per_file: u64,
    done: Vec<u64>,
    /// The last I/O did the operation (not one of the file's other blocks).
    timed: bool,
}

impl OneCall for MetaOps {
    const FAKES_SOME: bool = true;

    fn last_timed(&self) -> bool {
        self.timed
    }

    fn call(&mut self, _: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        let f = d.file as usize;
        let first = self.done[f] == 0;
        self.done[f] += d.len as u64;
        if self.done[f] >= self.per_file {
            // The file's pass is done: the next I/O on it opens it again.
            self.done[f] = 0;
        }
        self.timed = first;
        if !first {
            return Ok(d.len as usize);
        }
        let p = &self.names[f];
        match self.op {
            Op::FileCreate => sys::create_close(p),
            Op::FileStat | Op::DirStat => sys::stat(p, self.stat),
            Op::FileDelete => sys::unlink(p),
            // The mode of the directories fio's setup makes.
            Op::DirCreate => sys::mkdir(p, 0o700),
            Op::DirDelete => sys::rmdir(p),
            Op::SetXattr => self
                .xattr_names
                .iter()
                .try_for_each(|n| sys::setxattr(p, n, &self.xattr_value)),
            Op::ListXattr => sys::listxattr(p, &mut self.list_buf).map(|_| ()),
        }?;
        Ok(d.len as usize)
    }
}

/// The items of a metadata engine's `EngineDef` implementation besides its
/// names, help and options: its capabilities and its construction, `$op`
/// over the job's names.
macro_rules! meta_def {
    ($op:expr) => {
        type Params = ();
        const CAPS: super::Caps = super::meta::caps($op);
        fn with<W: super::WithEngine>(
            arena: super::SlotArena,
            _: &[std::os::fd::RawFd],
            opts: &super::EngineOpts,
            f: W,
        ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
            super::meta::with($op, arena, &[], opts, f)
        }
        fn with_names<W: super::WithEngine>(
            arena: super::SlotArena,
            _: &[std::os::fd::RawFd],
            names: &[std::path::PathBuf],
            opts: &super::EngineOpts,
            f: W,
        ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
            super::meta::with($op, arena, names, opts, f)
        }
    };
}
pub(crate) use meta_def;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::EngineKind;

    /// A shared option is one that several engines honour: each is named
    /// in the `OPTIONS` of an engine, and none makes files
    /// (`EngineParams::created` looks only at an engine's own options).
    #[test]
    fn each_shared_option_is_honoured_by_an_engine_and_creates_nothing() {
        for o in SHARED_OPTIONS {
            assert!(!o.info.creates, "{} creates files", o.info.name);
            assert!(
                EngineKind::ALL
                    .iter()
                    .any(|k| k.options().contains(&o.info.name)),
                "no engine names {} in its OPTIONS",
                o.info.name
            );
        }
    }
}
