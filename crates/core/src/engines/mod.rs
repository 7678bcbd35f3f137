//! I/O engines: one file each, listed once in [`engine_list!`] at the end of
//! this file. That list generates [`EngineKind`] (the `ioengine=` values and
//! their fio aliases), the capabilities the rest of dioscope asks about, and
//! the dispatch from a kind to its monomorphised worker loop.
//!
//! The runner is generic over [`Engine`], so each engine gets its own worker
//! loop with no dynamic dispatch per I/O. Nothing outside this module
//! branches on an engine's name or kind: it asks for its [`Caps`].

mod blocking;
pub mod meta;
mod one_call;
pub mod refused;

pub use dioscope_sys::queue::{Completion, IoDesc, SlotArena};
use std::io;
use std::os::fd::RawFd;
use std::path::PathBuf;

/// Why an engine could not be set up on a worker: the kernel's errno and a
/// message naming the call that failed and a fix. The runner reports it as a
/// setup error (never as an I/O error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSetupError {
    pub errno: i32,
    pub msg: String,
}

impl EngineSetupError {
    /// From the error of the call `what`, with `fix` for this errno.
    pub fn new(what: &str, e: &io::Error, fix: &str) -> EngineSetupError {
        EngineSetupError {
            errno: e.raw_os_error().unwrap_or(libc::EIO),
            msg: format!("{what} failed: {e}; {fix}"),
        }
    }
}

/// One engine instance belongs to one worker thread.
pub trait Engine {
    /// Queue one I/O for the next `commit` (the slot must be idle).
    fn stage(&mut self, d: IoDesc);
    /// Hand the staged I/Os to the kernel and wait until at least `min`
    /// completions are ready. Returns how many were submitted.
    fn commit(&mut self, min: u32) -> io::Result<u32>;
    /// Move ready completions into `out`; returns how many.
    fn reap(&mut self, out: &mut [Completion]) -> usize;
    /// The slot buffers.
    fn arena(&mut self) -> &mut SlotArena;
}

/// What an engine can do; the core decides by these, never by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Each I/O completes inside its submission: at most one in flight.
    pub sync: bool,
    /// Does real I/O (false for null: no target is opened).
    pub real_io: bool,
    /// `hipri`: polled completions (RWF_HIPRI or IORING_SETUP_IOPOLL).
    pub hipri: bool,
    /// `nowait`: RWF_NOWAIT.
    pub nowait: bool,
    /// `sqthread_poll`: a kernel thread polls the submission queue.
    pub sqpoll: bool,
    /// `fixedbufs`: buffers registered with the kernel once.
    pub fixed_bufs: bool,
    /// `registerfiles`: files registered with the kernel once.
    pub registered_files: bool,
    /// Reads return the target's bytes and writes store the buffer's (false
    /// for null, and for falloc/ftruncate, whose I/Os are space
    /// operations): verify needs it.
    pub moves_data: bool,
    /// Its I/O goes through the page cache even with `direct=1` (mmap):
    /// cached pages of its targets are its own doing, not someone else's.
    pub page_cache: bool,
    /// A priority per I/O (`IoDesc::prio`: cmdprio_percentage, cmdprio_bssplit).
    pub per_io_prio: bool,
    /// Its I/Os act on the job's file names, not on open descriptors (the
    /// metadata engines, meta.rs): the runner opens nothing, gives each
    /// file a region of one block and hands the engine the paths.
    pub by_name: bool,
}

impl Caps {
    /// Nothing beyond plain asynchronous I/O; engines override what they have.
    pub const BASE: Caps = Caps {
        sync: false,
        real_io: true,
        hipri: false,
        nowait: false,
        sqpoll: false,
        fixed_bufs: false,
        registered_files: false,
        moves_data: true,
        page_cache: false,
        per_io_prio: false,
        by_name: false,
    };
}

/// How a worker wants its engine, from the job's options. The runner builds
/// it; an engine reads the parts its [`Caps`] say it has.
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineOpts {
    /// Queue depth (slots).
    pub depth: u32,
    /// `direct=1`: the targets are open with O_DIRECT; an engine that
    /// bypasses the descriptor (mmap) gives the same promise its own way.
    pub direct: bool,
    /// The job's offsets are random (read-ahead advice).
    pub random: bool,
    pub hipri: bool,
    pub nowait: bool,
    pub sqpoll: bool,
    pub fixed_bufs: bool,
    pub registered_files: bool,
    /// The metadata engines' options (stat_type, xattrs, unlink).
    pub meta: meta::MetaOpts,
}

impl EngineOpts {
    /// The RWF_* flags for engines that pass them per I/O.
    pub fn rw_flags(&self) -> dioscope_sys::io::RwfFlags {
        let mut f = 0;
        if self.hipri {
            f |= dioscope_sys::io::RWF_HIPRI;
        }
        if self.nowait {
            f |= dioscope_sys::io::RWF_NOWAIT;
        }
        f
    }
}

/// The work a worker does with its engine. Generic over the engine, so the
/// worker loop is compiled once per engine.
pub trait WithEngine {
    type Out;
    fn run<E: Engine>(self, e: &mut E) -> Self::Out;
}

/// One engine: its names, what it can do, and how it is built.
pub trait EngineDef {
    /// The `ioengine=` name first, then fio aliases that mean the same here.
    const NAMES: &'static [&'static str];
    /// One line for `--enghelp` and the docs: what the engine calls, and
    /// what a fio user should know about how it behaves here.
    const HELP: &'static str;
    /// The job options specific to this engine (`--enghelp=NAME` lists
    /// them with their help from the option table).
    const OPTIONS: &'static [&'static str] = &[];
    const CAPS: Caps;
    /// Build the engine on this thread over `arena` and `fds`, and run `f`
    /// with it. Returns `f`'s output and an optional note for the report
    /// (what the kernel accepted), or why the engine could not be set up,
    /// with a fix.
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), EngineSetupError>;
    /// As [`EngineDef::with`], with the job's file paths: an engine whose
    /// [`Caps::by_name`] is set gets no descriptors, only these.
    fn with_names<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        _names: &[PathBuf],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), EngineSetupError> {
        Self::with(arena, fds, opts, f)
    }
}

macro_rules! engine_list {
    ($($module:ident => $Kind:ident,)*) => {
        $(pub mod $module;)*

        /// I/O engine (`ioengine=`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum EngineKind {
            $($Kind,)*
        }

        impl EngineKind {
            pub const ALL: &'static [EngineKind] = &[$(EngineKind::$Kind,)*];
            /// Each engine's own name (aliases are accepted by [`EngineKind::parse`]).
            pub const NAMES: &'static [&'static str] = &[$(<$module::Def as EngineDef>::NAMES[0],)*];
            /// The list itself, `file => Kind` (for the test that keeps an
            /// engine one file and one line).
            #[cfg(test)]
            const LIST: &'static [(&'static str, &'static str)] =
                &[$((stringify!($module), stringify!($Kind)),)*];

            /// The name and the fio aliases of this engine.
            pub fn names(self) -> &'static [&'static str] {
                match self {
                    $(EngineKind::$Kind => <$module::Def as EngineDef>::NAMES,)*
                }
            }

            pub fn as_str(self) -> &'static str {
                self.names()[0]
            }

            /// One line: what the engine does (`--enghelp`).
            pub fn help(self) -> &'static str {
                match self {
                    $(EngineKind::$Kind => <$module::Def as EngineDef>::HELP,)*
                }
            }

            /// The job options specific to this engine.
            pub fn options(self) -> &'static [&'static str] {
                match self {
                    $(EngineKind::$Kind => <$module::Def as EngineDef>::OPTIONS,)*
                }
            }

            pub fn parse(s: &str) -> Option<EngineKind> {
                Self::ALL.iter().copied().find(|k| k.names().contains(&s))
            }

            pub fn caps(self) -> Caps {
                match self {
                    $(EngineKind::$Kind => <$module::Def as EngineDef>::CAPS,)*
                }
            }

            /// Build this engine and run `f` with it (see
            /// [`EngineDef::with_names`]): `fds` are the open targets,
            /// `names` their paths.
            pub fn with<W: WithEngine>(
                self,
                arena: SlotArena,
                fds: &[RawFd],
                names: &[PathBuf],
                opts: &EngineOpts,
                f: W,
            ) -> Result<(W::Out, Option<String>), EngineSetupError> {
                match self {
                    $(EngineKind::$Kind => <$module::Def as EngineDef>::with_names(arena, fds, names, opts, f),)*
                }
            }
        }
    };
}

/// What an engine can do (kept for callers that hold a kind).
pub fn caps(kind: EngineKind) -> Caps {
    kind.caps()
}

// The engine list: `file => Kind`, one line per engine.
engine_list! {
    psync => Psync,
    sync => Sync,
    vsync => Vsync,
    pvsync => Pvsync,
    pvsync2 => Pvsync2,
    libaio => Libaio,
    io_uring => IoUring,
    posixaio => PosixAio,
    mmap => Mmap,
    falloc => Falloc,
    ftruncate => Ftruncate,
    filecreate => FileCreate,
    filestat => FileStat,
    filedelete => FileDelete,
    dircreate => DirCreate,
    dirstat => DirStat,
    dirdelete => DirDelete,
    filesetxattr => FileSetXattr,
    filelistxattr => FileListXattr,
    null => Null,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut all: Vec<&str> = EngineKind::ALL
            .iter()
            .flat_map(|k| k.names())
            .copied()
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "an engine name or alias is listed twice");
        for &k in EngineKind::ALL {
            for name in k.names() {
                assert_eq!(EngineKind::parse(name), Some(k));
            }
            assert_eq!(EngineKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(EngineKind::NAMES.len(), EngineKind::ALL.len());
    }

    /// Adding an engine is one file and one line: every file of this
    /// directory that defines an engine is in `engine_list!`, and no code
    /// outside `engines/` names an engine's kind — it asks for its `Caps` —
    /// except the two defaults (fio's psync, SPEC's io_uring job).
    #[test]
    fn an_engine_is_one_file_and_one_line() {
        use std::path::Path;
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut defs: Vec<String> = std::fs::read_dir(src.join("engines"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name() != "mod.rs")
            .filter(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .contains("impl EngineDef for Def")
            })
            .map(|e| e.path().file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        defs.sort();
        let mut listed: Vec<String> = EngineKind::LIST
            .iter()
            .map(|(m, _)| m.to_string())
            .collect();
        listed.sort();
        assert_eq!(defs, listed, "engine files vs engine_list!");

        let allowed = [("spec.rs", "Psync"), ("parse.rs", "IoUring")];
        let mut dirs = vec![src.clone()];
        let mut found = Vec::new();
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "engines") {
                        dirs.push(p);
                    }
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                let file = p.file_name().unwrap().to_string_lossy().into_owned();
                for (_, kind) in EngineKind::LIST {
                    if code.contains(&format!("EngineKind::{kind}"))
                        && !allowed.contains(&(file.as_str(), *kind))
                    {
                        found.push(format!("{} names EngineKind::{kind}", p.display()));
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "code outside engines/ branches on an engine: {found:?}"
        );
    }
}
