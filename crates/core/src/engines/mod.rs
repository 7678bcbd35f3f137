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
    /// Whether a completion's bytes are data moved. cpuio's and exec's
    /// "I/Os" are cycles of work: counted as I/Os with no bytes, as fio
    /// reports them.
    const MOVES_BYTES: bool = true;
    /// Whether [`Engine::ended`] can ever be true (the worker asks only then).
    const CAN_END: bool = false;
    /// The engine has nothing more to do (cpuio's `exit_on_io_done` once
    /// the I/O jobs are done): the worker issues no more.
    fn ended(&self) -> bool {
        false
    }
    /// Whether some completions are not timed (the metadata engines: as in
    /// fio, only the I/O that does a file's operation has a latency; the
    /// rest of the file's blocks complete at once, counted, untimed).
    const FAKES_SOME: bool = false;
    /// With [`Engine::FAKES_SOME`]: whether the last completion reaped was
    /// timed (asked only of synchronous engines, one I/O at a time).
    fn last_timed(&self) -> bool {
        true
    }
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
    /// Its "I/Os" are cycles of other work (cpuio burns CPU, exec watches a
    /// program): it never ends on its own, so it needs a runtime, and it is
    /// not an I/O job for `exit_on_io_done`.
    pub work_only: bool,
    /// fio "pretends" this engine's I/O verified (its FIO_FAKEIO null
    /// engine): a job with verify runs, checks nothing, and says so.
    pub fakes_verify: bool,
    /// Every operation changes the target or its files, whatever `rw=`
    /// says (falloc allocates on reads, filecreate makes files, e4defrag
    /// moves extents): `--readonly` refuses the job.
    pub changes_target: bool,
    /// The deepest queue the engine accepts and what sets that limit,
    /// checked before the run (io_uring: the kernel's IORING_MAX_ENTRIES).
    pub max_depth: Option<(u64, &'static str)>,
    /// Each I/O in flight takes one of the system's asynchronous I/O events
    /// (`fs.aio-max-nr`, libaio): the run checks there are enough first.
    pub aio_events: bool,
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
        work_only: false,
        fakes_verify: false,
        changes_target: false,
        max_depth: None,
        aio_events: false,
    };
}

static IO_JOBS_RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A worker of an I/O job (not `work_only`) from its set-up to its end:
/// cpuio's `exit_on_io_done` ends once none is left.
pub struct IoJobGuard(bool);

impl IoJobGuard {
    pub fn new(kind: EngineKind) -> IoJobGuard {
        let io = !kind.caps().work_only;
        if io {
            IO_JOBS_RUNNING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        IoJobGuard(io)
    }
}

impl Drop for IoJobGuard {
    fn drop(&mut self) {
        if self.0 {
            IO_JOBS_RUNNING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// Workers of I/O jobs running now (see [`IoJobGuard`]).
pub fn io_jobs_running() -> usize {
    IO_JOBS_RUNNING.load(std::sync::atomic::Ordering::SeqCst)
}

/// `cpumode=` of the cpuio engine: how it burns its CPU share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuMode {
    /// A loop that only reads the clock.
    #[default]
    Noop,
    /// Sorting arrays (more work per cycle: more power drawn).
    Qsort,
}

/// The options of the engines that take their own (`--enghelp=NAME` lists
/// them; `job/options/engines.rs` parses them), with fio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineParams {
    /// cpuio: percent of one CPU to burn (mandatory for cpuio).
    pub cpuload: u32,
    /// cpuio: length of one busy cycle, µs (`cpuchunks`, fio's 50000).
    pub cpuchunks_us: u32,
    pub cpumode: CpuMode,
    /// cpuio: end the job once every job that does I/O is done.
    pub exit_on_io_done: bool,
    /// exec: the program and its arguments (`%r` runtime in s, `%n` job name).
    pub program: Option<String>,
    pub arguments: Option<String>,
    /// exec: seconds between SIGTERM and SIGKILL at the end of the job.
    pub grace_time_s: u32,
    /// exec: the program's stdout/stderr go to JOBNAME.stdout/.stderr.
    pub std_redirect: bool,
    /// e4defrag: the donor file (in `directory=` when relative).
    pub donorname: Option<String>,
    /// e4defrag: allocate the donor's blocks per I/O and free them after
    /// (1), or once for the whole file at start (0).
    pub inplace: bool,
}

impl Default for EngineParams {
    fn default() -> EngineParams {
        EngineParams {
            cpuload: 0,
            cpuchunks_us: 50_000,
            cpumode: CpuMode::Noop,
            exit_on_io_done: false,
            program: None,
            arguments: None,
            grace_time_s: 1,
            std_redirect: true,
            donorname: None,
            inplace: false,
        }
    }
}

/// The job, as the engines that act on more than I/Os see it (exec's `%n`
/// and `%r`, e4defrag's donor in `directory=`, page_fault's mapping).
#[derive(Debug, Clone, Default)]
pub struct JobContext {
    pub name: String,
    pub runtime_us: u64,
    pub directory: Option<String>,
    /// The bytes a diskless engine's offsets span (the job's `size`).
    pub virtual_size: u64,
    pub params: EngineParams,
}

/// How a worker wants its engine, from the job's options. The runner builds
/// it; an engine reads the parts its [`Caps`] say it has.
#[derive(Debug, Clone, Default)]
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
    /// `iodepth_batch_complete_min=0`: poll for completions before sleeping.
    pub poll_reaps: bool,
    /// The metadata engines' options (stat_type, xattrs, unlink).
    pub meta: meta::MetaOpts,
    /// What engines that are not just reads and writes need of the job.
    pub job: JobContext,
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
    /// Whether the job's engine options are what this engine needs (a
    /// mandatory one given, values that go together); `Err` says what to
    /// set. Checked when the job is parsed.
    fn check(_: &EngineParams) -> Result<(), String> {
        Ok(())
    }
    /// A pause after each I/O the engine needs, µs, as fio's engines set
    /// their job's thinktime (cpuio's idle share, exec's polling interval).
    fn pause_us(_: &EngineParams) -> Option<u64> {
        None
    }
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

/// `impl Engine` for a kernel queue of crates/sys (io_uring, libaio, POSIX
/// aio) whose own methods already are the four steps: one forwarding body,
/// not one per engine.
macro_rules! queue_engine {
    ($Queue:ty) => {
        impl $crate::engines::Engine for $Queue {
            #[inline]
            fn stage(&mut self, d: $crate::engines::IoDesc) {
                Self::stage(self, d)
            }
            #[inline]
            fn commit(&mut self, min: u32) -> std::io::Result<u32> {
                Self::commit(self, min)
            }
            #[inline]
            fn reap(&mut self, out: &mut [$crate::engines::Completion]) -> usize {
                Self::reap(self, out)
            }
            fn arena(&mut self) -> &mut $crate::engines::SlotArena {
                Self::arena(self)
            }
        }
    };
}
pub(crate) use queue_engine;

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

            /// See [`EngineDef::check`].
            pub fn check(self, p: &EngineParams) -> Result<(), String> {
                match self {
                    $(EngineKind::$Kind => <$module::Def as EngineDef>::check(p),)*
                }
            }

            /// See [`EngineDef::pause_us`].
            pub fn pause_us(self, p: &EngineParams) -> Option<u64> {
                match self {
                    $(EngineKind::$Kind => <$module::Def as EngineDef>::pause_us(p),)*
                }
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
    cpuio => CpuIo,
    page_fault => PageFault,
    exec => Exec,
    e4defrag => E4Defrag,
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
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                text.contains("impl EngineDef for Def") || text.contains("plain_blocking_engine!(")
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

    /// Outside `engines/`, an engine's name is data (a recipe's list, the
    /// default job's value, a message), never a condition: no `== "libaio"`,
    /// no `matches!(e, "falloc" | …)`, no match arm on a name. Code that
    /// needs to know something of an engine asks its `Caps`. The few string
    /// literals that happen to equal an engine's name but name something
    /// else are listed with what they are.
    #[test]
    fn engine_names_are_data_outside_engines() {
        use std::path::Path;
        let not_engines: &[(&str, &str, &str)] = &[
            (
                "runner/iolog.rs",
                "sync",
                "an iolog action (fio's `sync` line)",
            ),
            (
                "job/options/buffers.rs",
                "mmap",
                "a mem= kind (mmap'ed buffers)",
            ),
            (
                "job/options/workload.rs",
                "sync",
                "a value of the sync= option",
            ),
            ("job/options/mod.rs", "null", "a verify= checksum (none)"),
            (
                "job/options/mod.rs",
                "filecreate",
                "an rw= value of fio 3.42",
            ),
            ("job/options/mod.rs", "filestat", "an rw= value of fio 3.42"),
            (
                "job/options/mod.rs",
                "filedelete",
                "an rw= value of fio 3.42",
            ),
            (
                "job/options/mod.rs",
                "dircreate",
                "an rw= value of fio 3.42",
            ),
            ("job/options/mod.rs", "dirstat", "an rw= value of fio 3.42"),
            (
                "job/options/mod.rs",
                "dirdelete",
                "an rw= value of fio 3.42",
            ),
        ];
        let names: Vec<&str> = EngineKind::ALL
            .iter()
            .flat_map(|k| k.names())
            .copied()
            .collect();
        let core = Path::new(env!("CARGO_MANIFEST_DIR"));
        let roots = [core.join("src"), core.join("../sys/src")];
        let mut found = Vec::new();
        let mut used = vec![false; not_engines.len()];
        for root in &roots {
            let mut dirs = vec![root.clone()];
            while let Some(d) = dirs.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        if p.file_name().is_some_and(|n| n != "engines") {
                            dirs.push(p);
                        }
                        continue;
                    }
                    if p.extension().is_none_or(|x| x != "rs") {
                        continue;
                    }
                    let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                    let text = std::fs::read_to_string(&p).unwrap_or_default();
                    let code = text.split("#[cfg(test)]").next().unwrap_or("");
                    for (n, line) in code.lines().enumerate() {
                        let line = line.split("//").next().unwrap_or("");
                        // A match arm's pattern is what comes before `=>`
                        // (an engine's name after it is data).
                        let (line, arm) = match line.split_once("=>") {
                            Some((pattern, _)) => (pattern, true),
                            None => (line, false),
                        };
                        let branches = arm
                            || ["==", "!=", "matches!", "| \"", "\" |"]
                                .iter()
                                .any(|op| line.contains(op));
                        if !branches {
                            continue;
                        }
                        for name in &names {
                            if !line.contains(&format!("\"{name}\"")) {
                                continue;
                            }
                            if let Some(i) = not_engines
                                .iter()
                                .position(|(f, l, _)| rel == *f && l == name)
                            {
                                used[i] = true;
                                continue;
                            }
                            found.push(format!(
                                "{}:{}: \"{name}\" in `{}`",
                                p.display(),
                                n + 1,
                                line.trim()
                            ));
                        }
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "code outside engines/ branches on an engine's name (ask its Caps instead):\n{}",
            found.join("\n")
        );
        // An entry of the list that matches nothing is stale: remove it.
        for (i, (f, l, _)) in not_engines.iter().enumerate() {
            assert!(
                used[i],
                "not_engines lists \"{l}\" in {f}, which no longer has it"
            );
        }
    }
}
