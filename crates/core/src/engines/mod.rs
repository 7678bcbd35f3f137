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
    /// Its fsync/fdatasync is a no-op that is still timed and counted
    /// (the null engine, as fio's: `fsync=N` shows sync latencies).
    const TIMES_NO_OP_SYNC: bool = false;
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
    /// `uncached` and `atomic`: RWF_DONTCACHE and RWF_ATOMIC per I/O.
    pub rwf_flags: bool,
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
    /// How `--stages` tells where its I/O's time goes ([`Traced`]).
    pub traced: Traced,
}

/// The tracepoints `--stages` follows an engine's I/O by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traced {
    /// None (the reason is the engine's kind: no block I/O, or calls the
    /// tracer cannot tell from dioscope's own).
    No,
    /// io_uring's own: `io_uring_submit_req` → `io_uring_complete`, keyed
    /// by request; hand-offs to io-wq by `io_uring_queue_async_work`.
    Uring,
    /// One blocking system call per I/O, entered and left by the same
    /// thread: `sys_enter_*` → `sys_exit_*` of these calls, keyed by thread.
    Syscall {
        read: &'static str,
        write: &'static str,
    },
    /// Linux AIO: `io_submit` queues each I/O's bio in the caller's
    /// context; no tracepoint ends an I/O (io_getevents reaps a batch).
    Aio,
}

impl Caps {
    /// Nothing beyond plain asynchronous I/O; engines override what they have.
    pub const BASE: Caps = Caps {
        sync: false,
        real_io: true,
        hipri: false,
        nowait: false,
        rwf_flags: false,
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
        traced: Traced::No,
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

/// The kind of value an engine option takes. The option table parses a
/// value by it (and checks [`OptionInfo::at_least`] and
/// [`OptionInfo::at_most`]) before the engine's `apply` sees it, as for
/// every option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// A number (`u32`).
    Int,
    /// A number of bytes (`u32`), with fio's units (`64k`): an
    /// [`OptionValue::Int`].
    Size,
    /// A boolean that may appear bare.
    Flag,
    /// Text (empty: none).
    Str,
    /// One of these words; `apply` gets the word and refuses another.
    Choice(&'static [&'static str]),
}

/// An engine option's value, parsed by its [`OptionKind`].
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue<'a> {
    Int(u32),
    Flag(bool),
    Str(Option<String>),
    Choice(&'a str),
}

/// What the option table shows of an engine option: it lists it under
/// "Engine-specific options" in `--cmdhelp`, `--enghelp` and
/// docs/OPTIONS.md like any other option.
#[derive(Debug, Clone, Copy)]
pub struct OptionInfo {
    pub name: &'static str,
    pub kind: OptionKind,
    /// The value when not given, as a user would write it.
    pub default: Option<&'static str>,
    /// The smallest number it accepts.
    pub at_least: Option<u64>,
    /// The largest number it accepts.
    pub at_most: Option<u64>,
    /// A valid value, shown in errors and help.
    pub example: &'static str,
    /// Its help line, starting with the engine's name (`cpuio: …`).
    pub help: &'static str,
    /// Whether its value names files the engine creates besides the
    /// targets (see [`EngineOption::creates`]).
    pub creates: bool,
}

impl OptionInfo {
    /// An option with no default, no lower bound, that creates nothing.
    pub const fn new(
        name: &'static str,
        kind: OptionKind,
        example: &'static str,
        help: &'static str,
    ) -> OptionInfo {
        OptionInfo {
            name,
            kind,
            default: None,
            at_least: None,
            at_most: None,
            example,
            help,
            creates: false,
        }
    }

    /// With the default `d`.
    pub const fn defaults_to(self, d: &'static str) -> OptionInfo {
        OptionInfo {
            default: Some(d),
            ..self
        }
    }

    /// Accepting numbers from `n` up.
    pub const fn min(self, n: u64) -> OptionInfo {
        OptionInfo {
            at_least: Some(n),
            ..self
        }
    }

    /// Accepting numbers up to `n`.
    pub const fn max(self, n: u64) -> OptionInfo {
        OptionInfo {
            at_most: Some(n),
            ..self
        }
    }
}

/// One option of an engine, declared in the engine's file
/// ([`EngineDef::OWN_OPTIONS`]): what the table shows, how a value sets the
/// engine's [`EngineDef::Params`], and the files it makes.
pub struct EngineOption<P: 'static> {
    pub info: OptionInfo,
    pub apply: fn(&mut P, OptionValue) -> Result<(), String>,
    /// With [`OptionInfo::creates`]: the files the engine makes from this
    /// option for the job `name` in `directory` (checked before the first
    /// I/O, `outfile::check`, and opened through `outfile::open`).
    pub creates: fn(&P, &str, Option<&str>) -> Vec<PathBuf>,
}

impl<P> EngineOption<P> {
    /// An option that creates no file.
    pub const fn new(
        info: OptionInfo,
        apply: fn(&mut P, OptionValue) -> Result<(), String>,
    ) -> Self {
        EngineOption {
            info,
            apply,
            creates: |_, _, _| Vec::new(),
        }
    }

    /// An option whose value names files the engine creates: `files`
    /// lists them.
    pub const fn creating(
        info: OptionInfo,
        apply: fn(&mut P, OptionValue) -> Result<(), String>,
        files: fn(&P, &str, Option<&str>) -> Vec<PathBuf>,
    ) -> Self {
        EngineOption {
            info: OptionInfo {
                creates: true,
                ..info
            },
            apply,
            creates: files,
        }
    }
}

/// The text of a value that [`OptionKind::Str`] parsed (or `None`).
pub fn text(v: OptionValue) -> Result<Option<String>, String> {
    match v {
        OptionValue::Str(s) => Ok(s),
        other => Err(format!("{other:?} is not text")),
    }
}

/// The number of an [`OptionKind::Int`] or [`OptionKind::Size`] value.
pub fn int(v: OptionValue) -> Result<u32, String> {
    match v {
        OptionValue::Int(n) => Ok(n),
        other => Err(format!("{other:?} is not a number")),
    }
}

/// The boolean of an [`OptionKind::Flag`] value.
pub fn flag(v: OptionValue) -> Result<bool, String> {
    match v {
        OptionValue::Flag(b) => Ok(b),
        other => Err(format!("{other:?} is not 0 or 1")),
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
    /// `uncached=1`: RWF_DONTCACHE on every I/O.
    pub uncached: bool,
    /// `atomic=1`: RWF_ATOMIC on every write.
    pub atomic: bool,
    pub sqpoll: bool,
    pub fixed_bufs: bool,
    pub registered_files: bool,
    /// `iodepth_batch_complete_min=0`: poll for completions before sleeping.
    pub poll_reaps: bool,
    /// What the metadata engines need of the job besides their own
    /// options (`opts.job.params.meta`): `unlink`, the files' size.
    pub meta: meta::MetaOpts,
    /// What engines that are not just reads and writes need of the job.
    pub job: JobContext,
    /// io_uring: the worker's tag in each SQE's user_data (its `--stages`
    /// delivery part, runner/worker/delivery.rs; 0: none).
    pub ud_tag: u32,
}

impl EngineOpts {
    /// The RWF_* flags of every I/O (hipri, nowait) for engines that pass
    /// them per I/O.
    pub fn rw_flags_base(&self) -> dioscope_sys::io::RwfFlags {
        let mut f = 0;
        if self.hipri {
            f |= dioscope_sys::io::RWF_HIPRI;
        }
        if self.nowait {
            f |= dioscope_sys::io::RWF_NOWAIT;
        }
        f
    }

    /// The RWF_* flags of a read: the base ones and RWF_DONTCACHE (uncached).
    pub fn read_rw_flags(&self) -> dioscope_sys::io::RwfFlags {
        let mut f = self.rw_flags_base();
        if self.uncached {
            f |= dioscope_sys::io::RWF_DONTCACHE;
        }
        f
    }

    /// The RWF_* flags of a write: a read's and RWF_ATOMIC (atomic).
    pub fn write_rw_flags(&self) -> dioscope_sys::io::RwfFlags {
        let mut f = self.read_rw_flags();
        if self.atomic {
            f |= dioscope_sys::io::RWF_ATOMIC;
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
    /// The values of the engine's own options (`()` for none): its part
    /// of the job's [`EngineParams`], starting from `Default` and set by
    /// [`EngineDef::OWN_OPTIONS`].
    type Params: Default + Clone + std::fmt::Debug + PartialEq + Send + Sync + 'static;
    /// The options only this engine takes, declared here and nowhere else:
    /// the option table, `--enghelp=NAME` and docs/OPTIONS.md list them.
    const OWN_OPTIONS: &'static [EngineOption<Self::Params>] = &[];
    /// Options of the shared table this engine honours (`hipri`,
    /// `stat_type`, …), listed by `--enghelp=NAME` after its own.
    const OPTIONS: &'static [&'static str] = &[];
    const CAPS: Caps;
    /// Whether the job's engine options are what this engine needs (a
    /// mandatory one given, values that go together); `Err` says what to
    /// set. Checked when the job is parsed.
    fn check(_: &Self::Params) -> Result<(), String> {
        Ok(())
    }
    /// A pause after each I/O the engine needs, µs, as fio's engines set
    /// their job's thinktime (cpuio's idle share, exec's polling interval).
    fn pause_us(_: &Self::Params) -> Option<u64> {
        None
    }
    /// With [`Caps::work_only`]: whether the job ends on its own without
    /// a runtime (cpuio's `exit_on_io_done`).
    fn ends_itself(_: &Self::Params) -> bool {
        false
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
    ($($(#[$a:meta])* $module:ident => $Kind:ident,)* ; $(shared $group:ident,)*) => {
        $($(#[$a])* pub mod $module;)*

        /// I/O engine (`ioengine=`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum EngineKind {
            $($(#[$a])* $Kind,)*
        }

        /// The values of the engines' own options, one field per engine
        /// (its [`EngineDef::Params`]), named as its file; then one per
        /// group of engines that share options (its `Params`), named as
        /// the file of their common part.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct EngineParams {
            $($(#[$a])* pub $module: <$module::Def as EngineDef>::Params,)*
            $(pub $group: $group::Params,)*
        }

        impl EngineParams {
            /// Set the engine option `name` to `v`; `None` when no engine
            /// has that option.
            pub fn apply(&mut self, name: &str, v: OptionValue) -> Option<Result<(), String>> {
                $(
                    $(#[$a])*
                    if let Some(o) = <$module::Def as EngineDef>::OWN_OPTIONS.iter().find(|o| o.info.name == name) {
                        return Some((o.apply)(&mut self.$module, v));
                    }
                )*
                $(
                    if let Some(o) = $group::SHARED_OPTIONS.iter().find(|o| o.info.name == name) {
                        return Some((o.apply)(&mut self.$group, v));
                    }
                )*
                None
            }

            /// The files the option `option` of `kind` makes for the job
            /// `name` in `directory` (another engine's option makes nothing).
            pub fn created(
                &self,
                kind: EngineKind,
                option: &str,
                name: &str,
                directory: Option<&str>,
            ) -> Vec<PathBuf> {
                match kind {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::OWN_OPTIONS
                        .iter()
                        .filter(|o| o.info.creates && o.info.name == option)
                        .flat_map(|o| (o.creates)(&self.$module, name, directory))
                        .collect(),)*
                }
            }
        }

        /// Every engine's own options, in the order of the engine list,
        /// then the options each group of engines shares.
        pub fn all_options() -> impl Iterator<Item = &'static OptionInfo> {
            let mut all: Vec<&'static OptionInfo> = Vec::new();
            $($(#[$a])* all.extend(<$module::Def as EngineDef>::OWN_OPTIONS.iter().map(|o| &o.info));)*
            $(all.extend($group::SHARED_OPTIONS.iter().map(|o| &o.info));)*
            all.into_iter()
        }

        impl EngineKind {
            pub const ALL: &'static [EngineKind] = &[$($(#[$a])* EngineKind::$Kind,)*];
            /// Each engine's own name (aliases are accepted by [`EngineKind::parse`]).
            pub const NAMES: &'static [&'static str] = &[$($(#[$a])* <$module::Def as EngineDef>::NAMES[0],)*];
            /// The list itself, `file => Kind` (for the test that keeps an
            /// engine one file and one line).
            #[cfg(test)]
            const LIST: &'static [(&'static str, &'static str)] =
                &[$($(#[$a])* (stringify!($module), stringify!($Kind)),)*];

            /// The name and the fio aliases of this engine.
            pub fn names(self) -> &'static [&'static str] {
                match self {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::NAMES,)*
                }
            }

            pub fn as_str(self) -> &'static str {
                self.names()[0]
            }

            /// One line: what the engine does (`--enghelp`).
            pub fn help(self) -> &'static str {
                match self {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::HELP,)*
                }
            }

            /// The names of the job options specific to this engine: its
            /// own, then the shared ones it honours.
            pub fn options(self) -> Vec<&'static str> {
                match self {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::OWN_OPTIONS
                        .iter()
                        .map(|o| o.info.name)
                        .chain(<$module::Def as EngineDef>::OPTIONS.iter().copied())
                        .collect(),)*
                }
            }

            pub fn parse(s: &str) -> Option<EngineKind> {
                Self::ALL.iter().copied().find(|k| k.names().contains(&s))
            }

            /// See [`EngineDef::check`].
            pub fn check(self, p: &EngineParams) -> Result<(), String> {
                match self {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::check(&p.$module),)*
                }
            }

            /// See [`EngineDef::pause_us`].
            pub fn pause_us(self, p: &EngineParams) -> Option<u64> {
                match self {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::pause_us(&p.$module),)*
                }
            }

            /// See [`EngineDef::ends_itself`].
            pub fn ends_itself(self, p: &EngineParams) -> bool {
                match self {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::ends_itself(&p.$module),)*
                }
            }

            pub fn caps(self) -> Caps {
                match self {
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::CAPS,)*
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
                    $($(#[$a])* EngineKind::$Kind => <$module::Def as EngineDef>::with_names(arena, fds, names, opts, f),)*
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
    // docs/ARCHITECTURE.md's "Add an engine" followed to the letter by a
    // test-only engine (its test `adding_an_engine_is_one_file_and_one_line`).
    #[cfg(test)]
    example_engine => Example,
    ;
    // Options several engines share, declared once in the file of their
    // common part (`SHARED_OPTIONS` and `Params`); each engine that honours
    // one names it in its `OPTIONS`.
    shared meta,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source_scan::{rust_files, without_test_code};

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
    /// of crates/*/src or src/ outside `engines/` names an engine's kind —
    /// it asks for its `Caps` — except the two defaults (fio's psync,
    /// SPEC's io_uring job) as a value, never in a condition or match arm.
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

        // The two defaults are data (a field's value); even there, a kind
        // in a condition or a match arm is not allowed.
        let allowed = [("spec.rs", "Psync"), ("parse.rs", "IoUring")];
        let core = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for d in [src.clone(), core.join("../sys/src"), core.join("../../src")] {
            rust_files(&d, &mut files);
        }
        let mut found = Vec::new();
        for p in files.iter().filter(|p| !p.starts_with(src.join("engines"))) {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let code = without_test_code(&text);
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            for (n, line) in code.lines().enumerate() {
                let line = line.split("//").next().unwrap_or("");
                for (_, kind) in EngineKind::LIST {
                    let Some(at) = line.find(&format!("EngineKind::{kind}")) else {
                        continue;
                    };
                    // A kind before `=>` is a match arm's pattern; two
                    // kinds on a line, an or-pattern or a comparison.
                    let arm = line.find("=>").is_some_and(|a| a > at);
                    let condition = arm
                        || line.matches("EngineKind::").count() > 1
                        || ["==", "!=", "matches!", "if "]
                            .iter()
                            .any(|op| line.contains(op));
                    if condition || !allowed.contains(&(file.as_str(), *kind)) {
                        found.push(format!(
                            "{}:{}: EngineKind::{kind} in `{}`",
                            p.display(),
                            n + 1,
                            line.trim()
                        ));
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
            let mut files = Vec::new();
            rust_files(root, &mut files);
            for p in files
                .iter()
                .filter(|p| !p.starts_with(root.join("engines")))
            {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(p).unwrap_or_default();
                let code = without_test_code(&text);
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
