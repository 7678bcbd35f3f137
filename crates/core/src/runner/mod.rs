//! The runner: from a [`Plan`] to a [`RunResult`].
//!
//! Stage one resolves every job against its targets (paths, sizes, regions,
//! alignment) without doing any I/O; any error there exits before a byte is
//! written. Stage two runs the phases in order (a `stonewall` starts one;
//! `new_group` only starts a reporting group: runner/plan.rs); the jobs of a
//! phase run concurrently, each clone on its own thread with its own engine,
//! slots and statistics. A phase is repeated for its trials. Workers merge
//! nothing while running: the runner merges their results when they end.

pub mod buffers;
pub mod hint;
pub mod iolog;
pub mod latency_target;
pub mod logs;
mod offload;
pub mod offsets;
pub mod pacing;
pub mod plan;
pub mod preflight;
pub mod randgen;
pub mod sprandom;
pub mod steadystate;
pub mod stepped;
pub mod watch;
pub mod worker;

use crate::engines::{caps, Engine, EngineOpts, EngineSetupError, WithEngine};
use crate::job::{JobSpec, Plan};
pub use crate::results::measure::{TrialEnv, TrialJob};
use crate::stats::cpu::SysCpu;
use crate::targets::{
    check_aligned, sysfs_block_attr, TargetInfo, TargetKind, TargetNeed, TargetTable,
};
use crate::verify::{VerifyReport, Written};
pub use buffers::verify_spec;
use buffers::{run_hooked, trial_plan, HookOut};
use dioscope_sys::clock::now_ns;
use dioscope_sys::proc::{usage_self, Usage};
use offsets::{BsPicker, OffsetGen};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
pub use worker::{
    merge_ticks, DirStats, IoErrorInfo, Progress, QueueStats, Tick, WorkerPlan, WorkerResult,
};
use worker::{BlockHook, NoHook};

/// What a verifying writer left for the read-back: the intervals it wrote,
/// the bytes, and (experimental_verify) its plan to replay as reads.
type WrittenState = Written;

/// Errors before any I/O: bad job/target combinations. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Target(#[from] crate::targets::TargetError),
    #[error("job '{job}': {msg}")]
    Job { job: String, msg: String },
}

/// A worker of a phase could not start (engine set-up, I/O buffers, thread
/// spawn): no worker of that trial did any I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSetupError {
    /// The reporting group (fio's groupid) of the job that failed.
    pub group: u32,
    /// 0-based trial of the group.
    pub trial: u32,
    pub job: String,
    pub clone: u32,
    pub errno: i32,
    /// What failed, the kernel's error and a fix.
    pub msg: String,
}

impl std::fmt::Display for WorkerSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "group {} (job '{}', clone {}, trial {}): {} (errno {})",
            self.group,
            self.job,
            self.clone,
            self.trial + 1,
            self.msg,
            self.errno
        )
    }
}

/// The start line of a trial's workers: like `std::sync::Barrier`, but the
/// runner can lower the count when a worker thread could not be spawned
/// (a `Barrier` would then wait forever).
pub struct Gate {
    state: Mutex<(usize, usize)>,
    cv: Condvar,
}

impl Gate {
    pub fn new(n: usize) -> Gate {
        Gate {
            state: Mutex::new((0, n)),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, usize)> {
        // A poisoned gate only means a worker panicked: the counts are intact.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until every expected party arrived (one use per gate).
    pub fn wait(&self) {
        let mut st = self.lock();
        st.0 += 1;
        if st.0 >= st.1 {
            self.cv.notify_all();
            return;
        }
        while st.0 < st.1 {
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// `n` expected parties will never come.
    pub fn shrink(&self, n: usize) {
        let mut st = self.lock();
        st.1 = st.1.saturating_sub(n);
        if st.0 >= st.1 {
            self.cv.notify_all();
        }
    }
}

/// Run-wide knobs that are not job options.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub progress: bool,
    pub destroy_data_on: Vec<String>,
    /// Limits and precision of jobs with `trials=auto` (trials 0).
    pub auto: crate::stats::significance::AutoTrials,
}

/// One file of one job, resolved.
#[derive(Debug, Clone)]
pub struct FileUse {
    pub path: PathBuf,
    pub target_idx: usize,
    /// Offset and length; length 0 until the job's group starts for a file
    /// a fill_device job of an earlier group writes (`size_at_start`).
    pub region: (u64, u64),
}

/// A job with its targets resolved: one entry per clone (numjobs).
#[derive(Debug, Clone)]
pub struct ResolvedJob {
    pub spec: JobSpec,
    /// The run phase: the jobs of a phase start together (runner/plan.rs).
    pub phase: u32,
    /// fio's reporting group (`groupid`): `group_reporting`, the JSON and
    /// `exit_what=group` follow it.
    pub groupid: u32,
    pub clones: Vec<Vec<FileUse>>,
}

impl ResolvedJob {
    /// Its clones are reported one by one (numjobs > 1 without
    /// group_reporting), as fio writes them.
    pub fn reports_clones(&self) -> bool {
        self.spec.numjobs > 1 && !self.spec.group_reporting
    }
}

#[derive(Debug, Clone)]
pub struct JobRun {
    pub resolved: ResolvedJob,
    pub trials: Vec<TrialJob>,
    /// What pacing found per trial (steady state, latency target's depth);
    /// empty when the job uses neither.
    pub pace: Vec<pacing::TrialPace>,
    /// Read-back checks (`verify=`), when the job verifies.
    pub verify: Option<VerifyReport>,
    /// The read-back's reads, per clone (fio counts them as reads).
    pub verify_io: Vec<crate::results::measure::VerifyIo>,
}

/// One run phase: the jobs that started together, per trial.
#[derive(Debug, Clone, Default)]
pub struct PhaseRun {
    pub phase: u32,
    pub trials: Vec<TrialEnv>,
    /// Wall-clock ms since the epoch when the phase started (fio's job_start).
    pub start_ms: u64,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub jobs: Vec<JobRun>,
    pub phases: Vec<PhaseRun>,
    pub targets: Vec<TargetInfo>,
    pub interrupted: bool,
    pub signal: i32,
    pub start_ms: u64,
    pub notes: Vec<String>,
    /// How `trials=auto` ended, per phase that used it.
    pub auto_trials: Vec<crate::stats::significance::AutoOutcome>,
    /// A worker that could not start ended the run there.
    pub setup_error: Option<WorkerSetupError>,
    /// The reporting groups whose phases ran all their trials (and
    /// read-back), in order.
    pub completed_groups: Vec<u32>,
}

impl RunResult {
    /// Blocks that read back wrong, over all verifying jobs.
    pub fn verify_failures(&self) -> u64 {
        self.jobs
            .iter()
            .filter_map(|j| j.verify.as_ref())
            .map(|v| v.bad + v.read_errors)
            .sum()
    }

    pub fn io_errors(&self) -> u64 {
        self.jobs
            .iter()
            .flat_map(|j| &j.trials)
            .map(|t| t.dirs[0].errors + t.dirs[1].errors)
            .sum()
    }

    /// The first I/O error of the run: the job's name, the error, the path.
    pub fn first_error(&self) -> Option<(&str, &IoErrorInfo, &str)> {
        self.jobs.iter().find_map(|j| {
            j.trials.iter().find_map(|t| {
                t.first_error
                    .as_ref()
                    .map(|(e, p)| (j.resolved.spec.name.as_str(), e, p.as_str()))
            })
        })
    }

    /// The per-job summaries every renderer and the diagnosis read: trials
    /// merged, and with `group_reporting` the jobs of a reporting group.
    pub fn summarize(&self) -> Vec<crate::results::JobSummary> {
        // A job whose clones report apart is one input per clone (fio
        // writes one entry per clone); `of[k]` is (job index, clone).
        let mut of: Vec<(usize, Option<u32>)> = Vec::new();
        let mut per_clone: Vec<Vec<TrialJob>> = Vec::new();
        for (i, j) in self.jobs.iter().enumerate() {
            if j.resolved.reports_clones() && j.trials.iter().all(|t| !t.clones.is_empty()) {
                for c in 0..j.resolved.spec.numjobs {
                    of.push((i, Some(c)));
                    per_clone.push(
                        j.trials
                            .iter()
                            .map(|t| t.clones.get(c as usize).cloned().unwrap_or_default())
                            .collect(),
                    );
                }
            } else {
                of.push((i, None));
                per_clone.push(Vec::new());
            }
        }
        let jobs: Vec<crate::results::JobInput> = of
            .iter()
            .zip(&per_clone)
            .map(|(&(i, c), pc)| {
                let j = &self.jobs[i];
                crate::results::JobInput {
                    name: &j.resolved.spec.name,
                    groupid: j.resolved.groupid,
                    phase: j.resolved.phase,
                    group_reporting: j.resolved.spec.group_reporting,
                    trials: if c.is_some() { pc } else { &j.trials },
                }
            })
            .collect();
        let phases: Vec<crate::results::PhaseInput> = self
            .phases
            .iter()
            .map(|g| crate::results::PhaseInput {
                phase: g.phase,
                trials: &g.trials,
            })
            .collect();
        let mut sums = crate::results::summarize(&jobs, &phases);
        for s in &mut sums {
            s.clone_of = of[s.jobs[0]].1;
            for k in &mut s.jobs {
                *k = of[*k].0;
            }
        }
        sums
    }

    /// An I/O error ended the run early (one a job does not go on after:
    /// any, without `continue_on_error`; else all but fio's non-fatal ones):
    /// the result is partial.
    pub fn stopped_by_error(&self) -> bool {
        self.setup_error.is_some()
            || self
                .jobs
                .iter()
                .any(|j| j.trials.iter().any(|t| t.fatal_errno != 0))
    }

    /// True when no trial ran at all (a setup error in the first phase):
    /// nothing was measured and nothing written.
    pub fn nothing_ran(&self) -> bool {
        self.phases.iter().all(|g| g.trials.is_empty())
    }
}

/// The scratch file of the default job, in the current directory.
pub fn default_scratch_path() -> PathBuf {
    PathBuf::from(format!("dioscope-scratch.{}.dat", std::process::id()))
}

fn job_err(j: &JobSpec, msg: impl Into<String>) -> SetupError {
    SetupError::Job {
        job: j.name.clone(),
        msg: msg.into(),
    }
}

/// Every path the jobs of `plan` use as a target (for checks that must run
/// before anything is opened, such as `--output`).
pub fn target_paths(plan: &Plan) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for j in &plan.jobs {
        if !caps(j.ioengine).real_io {
            continue;
        }
        for c in 0..j.numjobs {
            out.extend(job_paths(j, c, plan.is_default_job));
        }
    }
    out
}

/// Every file the run may create besides its targets, with the option that
/// makes it: the names of each option the table marks `Creates::Job`, so
/// the run command checks them all before the first I/O.
pub fn created_files(plan: &Plan) -> Vec<(&'static str, PathBuf)> {
    use crate::job::created::{Creates, Shape};
    let mut out: Vec<(&'static str, PathBuf)> = Vec::new();
    let mut first_worker = 1;
    for j in &plan.jobs {
        let trials = match plan.global.trials.unwrap_or(j.trials) {
            0 => plan.global.auto.max_trials,
            n => n,
        };
        let shape = Shape {
            first_worker,
            trials,
        };
        for def in crate::job::options::all() {
            if let Creates::Job(names) = def.creates {
                for p in names(j, &shape) {
                    if !out.iter().any(|(_, q)| *q == p) {
                        out.push((def.name, p));
                    }
                }
            }
        }
        first_worker += j.numjobs.max(1) as usize;
    }
    out
}

/// The files the run reads besides its targets: job files and includes,
/// and `read_iolog`'s logs. No file dioscope creates may replace one.
/// (`verify_state_load`'s states are dioscope's own, rewritten by
/// `verify_state_save` as fio does.)
pub fn input_paths(plan: &Plan) -> Vec<PathBuf> {
    let mut out = plan.inputs.clone();
    for j in &plan.jobs {
        if let Some(l) = &j.read_iolog {
            out.push(crate::osstr::path(l));
        }
    }
    out
}

/// The paths one clone of a job uses.
fn job_paths(j: &JobSpec, clone: u32, default_job: bool) -> Vec<PathBuf> {
    if j.read_iolog.is_some() {
        // A replay uses the log's files (prepare reports a bad log).
        return replay_log(j).map(|l| l.files).unwrap_or_default();
    }
    // Names are text that may stand for any bytes (osstr).
    let dir = j.directory.as_deref().map(crate::osstr::path);
    let with_dir = |p: &str| match (&dir, Path::new(p).is_absolute()) {
        (Some(d), false) => d.join(crate::osstr::path(p)),
        _ => crate::osstr::path(p),
    };
    if !j.filenames.is_empty() {
        return j.filenames.iter().map(|f| with_dir(f)).collect();
    }
    if default_job {
        let p = default_scratch_path();
        return vec![with_dir(p.to_str().unwrap_or("dioscope-scratch.dat"))];
    }
    // fio's naming: filename_format, by default jobname.clone.file.
    (0..j.nrfiles.max(1))
        .map(|f| with_dir(&generated_name(j, clone, f)))
        .collect()
}

/// The job's `read_iolog`, loaded, with `replay_scale`, `replay_align`
/// and `replay_redirect` applied.
pub fn replay_log(j: &JobSpec) -> Result<iolog::IoLog, SetupError> {
    let path = j.read_iolog.as_deref().unwrap_or_default();
    let mut log = iolog::IoLog::load(Path::new(path)).map_err(|e| job_err(j, e.to_string()))?;
    log.adjust(
        j.replay_scale,
        j.replay_align,
        j.replay_redirect.as_deref().map(Path::new),
    );
    log.filter_and_pace(&j.replay_skip, j.replay_time_scale);
    Ok(log)
}

/// A generated file name: `filename_format` with `$jobname`, `$jobnum`
/// (the clone), `$filenum` and `$clientuid` (fio's client identity; here
/// the MPI rank, so ranks on one host get their own files) replaced.
pub fn generated_name(j: &JobSpec, clone: u32, file: u32) -> String {
    let fmt = j
        .filename_format
        .as_deref()
        .unwrap_or("$jobname.$jobnum.$filenum");
    let uid = std::env::var("DIOSCOPE_RANK").unwrap_or_else(|_| "0".into());
    fmt.replace("$jobname", &j.name)
        .replace("$jobnum", &clone.to_string())
        .replace("$filenum", &file.to_string())
        .replace("$clientuid", &uid)
}

/// Stage one: resolve and open everything, check alignment. No I/O yet.
/// The destructive-write guard runs on every target a job writes, with the
/// overrides of the jobs that write it (`targets::TargetNeed`).
pub fn prepare(plan: &Plan) -> Result<(Vec<ResolvedJob>, TargetTable), SetupError> {
    preflight::check(plan)?;
    buffers::preflight(plan)?;
    let mut needs = Vec::new();
    let placed = plan::place(&plan.jobs);
    for j in &plan.jobs {
        if !caps(j.ioengine).real_io {
            continue;
        }
        let replay = match j.read_iolog {
            Some(_) => Some(replay_log(j)?),
            None => None,
        };
        for c in 0..j.numjobs {
            let paths = job_paths(j, c, plan.is_default_job);
            let n = paths.len() as u64;
            for (fi, p) in paths.into_iter().enumerate() {
                let prior = existing_size(&p);
                needs.push(TargetNeed {
                    path: p,
                    direct: j.direct,
                    write: match &replay {
                        Some(l) => l.modifies(),
                        None => j.rw.writes() && !j.verify_only,
                    },
                    min_size: match &replay {
                        Some(l) => l.extent(fi as u32),
                        // fill_device: the job's own writes size the file.
                        None if j.fill_device => 1,
                        None => min_size(j, n, c, prior),
                    },
                    no_layout: j.create_on_open || j.fill_device,
                    // fio writes data at layout for a job that reads, or
                    // writes with overwrite=1.
                    fill: j.overwrite != Some(false) || j.rw.reads() || j.verify.is_some(),
                    allow_mounted_write: j.allow_mounted_write,
                    may_create: j.allow_file_create,
                    fallocate: j.fallocate,
                    make_dirs: j.filenames.is_empty()
                        && j.filename_format
                            .as_deref()
                            .is_some_and(|f| f.contains('/')),
                });
            }
        }
    }
    let table = TargetTable::open_all(&needs, &plan.global.destroy_data_on)?;
    match resolve(plan, &table, &placed) {
        Ok(out) => Ok((out, table)),
        Err(e) => {
            // Bad input found after layout: nothing this run created may stay.
            table.discard();
            Err(e)
        }
    }
}

/// The size of a regular file at `p` now (0: missing or not a file).
fn existing_size(p: &Path) -> u64 {
    std::fs::metadata(p)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len())
}

/// Bytes one of the `n` files of clone `c` must hold for the job's region
/// (0 when the job takes whatever the file has); `prior` is the file's
/// size before the run, which a percentage offset is of (as in fio, a file
/// too short for offset + size is extended).
fn min_size(j: &JobSpec, n: u64, c: u32, prior: u64) -> u64 {
    match (j.filesize, j.size) {
        (Some((_, hi)), _) => hi,
        (None, Some(crate::job::units::SizeOrPct::Bytes(b))) => {
            b / n + offset_of(j, prior) + j.offset_increment * c as u64
        }
        _ => 0,
    }
}

/// The job's start offset in a target of `size` bytes: a percentage is
/// rounded up to `offset_align`, else to the smallest block size (fio), so
/// `offset=33%` with direct=1 lands on a block boundary.
fn offset_of(j: &JobSpec, size: u64) -> u64 {
    match j.offset {
        crate::job::units::SizeOrPct::Bytes(b) => b,
        p => {
            let raw = p.resolve(size);
            let align = match j.offset_align {
                0 => j.bs[0].min().min(j.bs[1].min()).max(1),
                a => a,
            };
            raw.div_ceil(align) * align
        }
    }
}

/// A replayed log fits its target: every I/O inside it, and aligned for
/// direct I/O (each refusal names the line's offset and a fix).
fn check_replay(
    j: &JobSpec,
    log: &iolog::IoLog,
    f: u32,
    t: &crate::targets::Target,
) -> Result<(), SetupError> {
    let need = log.extent(f);
    if need > t.size {
        return Err(job_err(
            j,
            format!(
                "read_iolog: the log's I/Os reach byte {need} of {}, which holds {} bytes;                  replay onto a larger target (replay_redirect=) or scale the offsets (replay_scale=)",
                t.path.display(),
                t.size
            ),
        ));
    }
    if j.direct {
        let a = t.offset_align.max(1) as u64;
        let bad = log.ops.iter().find(|o| {
            o.file == f && o.len > 0 && (!o.offset.is_multiple_of(a) || !o.len.is_multiple_of(a))
        });
        if let Some(o) = bad {
            return Err(job_err(
                j,
                format!(
                    "read_iolog: the {} at offset {} length {} of {} is not aligned to {a} bytes                      for direct I/O; add replay_align={a} (offsets) or use direct=0",
                    o.kind.as_str(),
                    o.offset,
                    o.len,
                    t.path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Each job's regions on its open targets, checked (size, alignment, hipri).
fn resolve(
    plan: &Plan,
    table: &TargetTable,
    placed: &[plan::Placement],
) -> Result<Vec<ResolvedJob>, SetupError> {
    // The files fill_device jobs write, and their run phases: a later job
    // on one of them, with no size of its own, takes what the file holds
    // when its phase starts (`Executor::size_at_start`), as fio sizes a job's
    // files when it starts (create_serialize=0; fio's default fails it).
    let filled: Vec<(PathBuf, u32)> = plan
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.fill_device && caps(j.ioengine).real_io)
        .flat_map(|(i, j)| {
            (0..j.numjobs).flat_map(move |c| {
                job_paths(j, c, plan.is_default_job)
                    .into_iter()
                    .map(move |p| (p, placed[i].phase))
            })
        })
        .collect();
    let mut out = Vec::new();
    for (i, j) in plan.jobs.iter().enumerate() {
        let mut clones = Vec::new();
        let replay = match j.read_iolog {
            Some(_) if caps(j.ioengine).real_io => Some(replay_log(j)?),
            _ => None,
        };
        for c in 0..j.numjobs {
            let mut files = Vec::new();
            if caps(j.ioengine).real_io {
                let paths = job_paths(j, c, plan.is_default_job);
                let n = paths.len() as u64;
                for (fi, p) in paths.into_iter().enumerate() {
                    let (ti, t) = table
                        .targets
                        .iter()
                        .enumerate()
                        .find(|(_, t)| t.path == p && t.direct == j.direct)
                        .expect("every path was opened");
                    if let Some(log) = &replay {
                        check_replay(j, log, fi as u32, t)?;
                        files.push(FileUse {
                            path: p,
                            target_idx: ti,
                            region: (0, t.size),
                        });
                        continue;
                    }
                    if t.kind == TargetKind::File
                        && !j.fill_device
                        && j.size.is_none()
                        && j.filesize.is_none()
                        && filled
                            .iter()
                            .any(|(fp, g)| *fp == p && *g < placed[i].phase)
                    {
                        files.push(FileUse {
                            path: p,
                            target_idx: ti,
                            region: (offset_of(j, 0) + j.offset_increment * c as u64, 0),
                        });
                        continue;
                    }
                    // create_on_open: the file was not laid out; the job's
                    // writes give it the size its region needs.
                    let size = if j.fill_device && t.kind == TargetKind::File {
                        // What the file has plus what the file system has
                        // free: the writes stop at ENOSPC before its end.
                        let unit = j.bs[1].max().max(1);
                        (t.size + crate::targets::free_bytes(&p)) / unit * unit
                    } else if j.create_on_open && t.kind == TargetKind::File {
                        t.size.max(min_size(j, n, c, t.prior_size))
                    } else {
                        t.size
                    };
                    let off = offset_of(j, t.prior_size) + j.offset_increment * c as u64;
                    let len = match j.size {
                        Some(s) if !j.fill_device => s.resolve(size) / n,
                        _ => size.saturating_sub(off),
                    };
                    let len = match j.filesize {
                        Some((_, hi)) if j.size.is_none() && !j.fill_device => {
                            hi.min(size).saturating_sub(off)
                        }
                        _ => len,
                    };
                    if off + len > size || len == 0 {
                        return Err(crate::targets::TargetError::TooSmall {
                            path: p.display().to_string(),
                            have: size,
                            need: off + len.max(1),
                            offset: off,
                            size: len,
                        }
                        .into());
                    }
                    if j.direct {
                        let trim = if j.rw.trims() {
                            j.bs_trim.all()
                        } else {
                            Vec::new()
                        };
                        for bs in j.bs[0].all().into_iter().chain(j.bs[1].all()).chain(trim) {
                            check_aligned(t, "bs", bs)?;
                        }
                        check_aligned(t, "offset", off)?;
                        check_aligned(t, "offset_increment", j.offset_increment)?;
                    }
                    if j.sprandom {
                        sprandom::check(j, len).map_err(|m| job_err(j, m))?;
                    }
                    if len < j.max_bs() {
                        return Err(job_err(j, format!("the region of {} is {len} bytes, smaller than bs={}; raise size= or lower bs=", p.display(), j.max_bs())));
                    }
                    if j.hipri && t.kind == TargetKind::BlockDevice {
                        let rdev = dioscope_sys::fs::statx_path(&p)
                            .map(|s| s.rdev)
                            .unwrap_or((0, 0));
                        if sysfs_block_attr(rdev, "queue/io_poll").as_deref() == Some("0") {
                            return Err(job_err(j, format!("hipri needs polling queues, but {} has queue/io_poll = 0; drop hipri, or load the driver with poll queues (e.g. nvme.poll_queues=N)", p.display())));
                        }
                    }
                    files.push(FileUse {
                        path: p,
                        target_idx: ti,
                        region: (off, len),
                    });
                }
            }
            clones.push(files);
        }
        out.push(ResolvedJob {
            spec: j.clone(),
            phase: placed[i].phase,
            groupid: placed[i].groupid,
            clones,
        });
    }
    Ok(out)
}

fn worker_plan(
    j: &JobSpec,
    files: &[FileUse],
    table: &TargetTable,
    clone: u32,
    trial: u32,
) -> WorkerPlan {
    let c = caps(j.ioengine);
    let depth = if c.sync { 1 } else { j.iodepth.max(1) };
    // blockalign: offsets on the finest boundary asked for; each
    // direction's are then rounded to its own (offsets.rs).
    let unit = match j.blockalign.iter().filter(|&&b| b > 0).min() {
        None => j.bs[0].min().min(j.bs[1].min()).max(1),
        Some(&ba) => ba,
    };
    let unit = if j.direct {
        let a = files
            .iter()
            .map(|f| table.targets[f.target_idx].offset_align as u64)
            .max()
            .unwrap_or(1);
        unit.max(a)
    } else {
        unit
    };
    // An engine that works on names (engines/meta.rs) gets each of its
    // files as a region of one block: one operation per file per pass.
    let names = if c.by_name {
        job_paths(j, clone, false)
    } else {
        Vec::new()
    };
    let regions: Vec<(u64, u64)> = if c.by_name {
        names.iter().map(|_| (0, meta_file_bytes(j))).collect()
    } else if files.is_empty() {
        // null engine: a virtual region of `size`, else `filesize` (as
        // fio sizes its null files), else 1 GiB.
        vec![(0, virtual_size(j))]
    } else {
        files.iter().map(|f| f.region).collect()
    };
    let seed = if j.randrepeat {
        j.randseed
    } else {
        dioscope_sys::clock::now_ns()
    };
    let seed = seed ^ (clone as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (trial as u64) << 48;
    let mut offsets = OffsetGen::with(&regions, offset_cfg(j, unit), seed);
    let mut pass = offsets.pass_bytes();
    let mut io_size = j.io_size;
    if let (true, Some(&(start, len))) = (j.sprandom, regions.first()) {
        // fio: sprandom's io_size is the modelled physical size.
        let s = sprandom::Sprandom::for_job(j, start, len, seed);
        pass = s.physical_bytes();
        io_size = None;
        offsets.set_sprandom(s);
    }
    let io_limit = if j.time_based {
        0
    } else {
        io_size.unwrap_or(pass).saturating_mul(j.loops as u64)
    };
    WorkerPlan {
        depth,
        batch_submit: if c.sync { 1 } else { j.iodepth_batch_submit },
        complete_min: match j.iodepth_batch_complete_min {
            // Auto: wait for an eighth of the queue. On zram with io_uring
            // (bench/, docs/PERFORMANCE.md) 4 of 32 gave 1.3x the IOPS of
            // waiting for 1, at 0.8x the CPU per I/O; 8 of 32 gave no gain.
            // Asked for 0 (fio: check before queuing more): when the queue
            // is full, wait for one, after polling (engines that can).
            0 if j.poll_reaps => 1,
            0 => (depth / 8).max(1),
            n => n.min(depth),
        },
        complete_max: j.iodepth_batch_complete_max,
        read_pct: j.read_pct(),
        bs: [BsPicker::new(&j.bs[0], unit), BsPicker::new(&j.bs[1], unit)],
        offsets,
        ramp_ns: j.ramp_time_us * 1000,
        runtime_ns: j.runtime_us * 1000,
        io_limit,
        number_ios: j.number_ios,
        fsync_every: j.fsync,
        fdatasync_every: j.fdatasync,
        pace: pacing::PacePlan::for_job(j, [j.bs[0].min(), j.bs[1].min()], depth, seed),
        end_fsync: j.end_fsync && j.rw.writes(),
        go_on: go_on_sets(j),
        ignore: ignore_sets(j),
        until_full: j.fill_device,
        eof_reads: j.create_on_open && !c.sync,
        fds: files
            .iter()
            .map(|f| table.targets[f.target_idx].fd())
            .collect(),
        tick_ns: crate::results::series::INTERVAL_NS,
        log: None,
        lat: worker::LatStats {
            slat: !j.disable_slat,
            clat: !j.disable_clat,
            lat: !j.disable_lat,
        },
        gtod_reduce: j.gtod_reduce,
        trim: match j.rw {
            _ if !j.rw.trims() => worker::TrimMode::None,
            crate::job::RwMode::TrimWrite | crate::job::RwMode::RandTrimWrite => {
                worker::TrimMode::ThenWrite
            }
            _ => worker::TrimMode::Only,
        },
        trim_is_dev: files
            .iter()
            .map(|f| table.targets[f.target_idx].kind == TargetKind::BlockDevice)
            .collect(),
        bs_trim: BsPicker::new(&j.bs_trim, unit),
        serialize_overlap: j.serialize_overlap,
        // prepare loaded and checked the log; a log changed since then
        // replays nothing.
        replay: j
            .read_iolog
            .as_ref()
            .filter(|_| !files.is_empty())
            .map(|_| Arc::new(replay_log(j).unwrap_or_default())),
        replay_timed: !j.replay_no_stall,
        names,
        // The first trial's I/Os; clone N > 0 writes NAME.N.
        write_iolog: j.write_iolog.as_ref().filter(|_| trial == 0).map(|p| {
            (
                crate::job::created::iolog_file(p, clone),
                files.iter().map(|f| f.path.clone()).collect(),
            )
        }),
    }
}

/// Where a job's I/Os go, from its options (runner/offsets.rs).
fn offset_cfg(j: &JobSpec, unit: u64) -> offsets::OffsetCfg {
    use crate::job::spec::{RandomGenerator, ZoneMode};
    let random = j.rw.is_random();
    offsets::OffsetCfg {
        unit,
        random,
        // fio: blockalign turns the random map off; lfsr never repeats a
        // block within a pass, with or without it.
        randommap: (!j.norandommap && j.blockalign == [0; 2])
            || j.random_generator == RandomGenerator::Lfsr,
        dist: j.random_distribution.clone(),
        generator: j.random_generator,
        seq_stride: j.random_sequence_stride,
        center: j.random_center,
        seq_add: if random { 0 } else { j.rw_offset_mod },
        rand_run: if random {
            j.rw_offset_mod.max(1) as u64
        } else {
            1
        },
        run_identical: j.rw_sequencer_identical,
        blockalign: j.blockalign,
        pct_random: j.percentage_random,
        file_service: j.file_service,
        file_every: j.file_service_every,
        open_files: j.openfiles,
        zones: (j.zonemode == ZoneMode::Strided && j.zonesize > 0).then(|| {
            let range = if j.zonerange > 0 {
                j.zonerange
            } else {
                j.zonesize
            };
            (range, j.zonesize, j.zoneskip)
        }),
    }
}

/// Build the job's engine on this thread and run the worker.
fn run_worker<H: BlockHook>(
    j: &JobSpec,
    mut plan: WorkerPlan,
    barrier: &Gate,
    stop: &AtomicBool,
    prog: &Progress,
    hook: &mut H,
) -> WorkerResult {
    // Counted from before the gate, so a cpuio job with exit_on_io_done
    // sees the I/O workers that start with it.
    let _io_job = crate::engines::IoJobGuard::new(j.ioengine);
    // A worker that cannot start stops its trial before anyone's first I/O:
    // `stop` is raised before the gate, so every worker sees it after.
    let fail = |e: EngineSetupError| {
        stop.store(true, Ordering::Relaxed);
        barrier.wait();
        prog.done.store(true, Ordering::Relaxed);
        WorkerResult {
            setup_failed: Some(e),
            ..Default::default()
        }
    };
    let _thread = match buffers::setup_thread(j) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    // A replay's I/Os are as long as the log says.
    let buf_len = plan
        .replay
        .as_ref()
        .map_or(0, |l| l.max_len())
        .max(j.max_bs());
    let arena = match buffers::arena(j, plan.depth, buf_len).and_then(|a| {
        buffers::exec_hook(j, "prerun")?;
        Ok(a)
    }) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let opts = engine_opts(j, plan.depth);
    let fds = plan.fds.clone();
    let names = std::mem::take(&mut plan.names);
    let startdelay_us = plan.pace.start_delay_us;
    let run = RunOnEngine {
        plan,
        barrier,
        startdelay_us,
        stop,
        prog,
        hook,
    };
    match j.ioengine.with(arena, &fds, &names, &opts, run) {
        Ok((mut r, note)) => {
            if note.is_some() {
                r.setup_note = note;
            }
            if let Err(e) = buffers::exec_hook(j, "postrun") {
                r.setup_note = Some(e.msg);
            }
            r
        }
        Err(e) => fail(e),
    }
}

/// The engine options of a job.
fn engine_opts(j: &JobSpec, depth: u32) -> EngineOpts {
    EngineOpts {
        depth,
        direct: j.direct,
        random: j.rw.is_random(),
        hipri: j.hipri,
        nowait: j.nowait,
        sqpoll: j.sqthread_poll,
        fixed_bufs: j.fixedbufs,
        registered_files: j.registerfiles,
        poll_reaps: j.poll_reaps,
        meta: crate::engines::meta::MetaOpts {
            stat_type: j.stat_type,
            xattr_count: j.xattr_count,
            xattr_size: j.xattr_size,
            unlink: j.unlink,
            layout_size: meta_layout_size(j),
            per_file: meta_file_bytes(j),
        },
        job: crate::engines::JobContext {
            name: j.name.clone(),
            runtime_us: j.runtime_us,
            directory: j.directory.clone(),
            virtual_size: virtual_size(j),
            params: j.engine_params.clone(),
        },
    }
}

/// The bytes of each file of a metadata engine (engines/meta.rs), as fio
/// sizes them: `filesize`, else `size / nrfiles`, else one block.
fn meta_layout_size(j: &JobSpec) -> u64 {
    match (j.filesize, j.size) {
        (Some((_, hi)), _) => hi,
        (None, Some(crate::job::units::SizeOrPct::Bytes(b))) => b / j.nrfiles.max(1) as u64,
        _ => j.max_bs(),
    }
}

/// A metadata engine's file in whole blocks, at least one: the bytes its
/// I/Os go over in a pass (fio's fake I/Os after the operation).
fn meta_file_bytes(j: &JobSpec) -> u64 {
    let bs = j.max_bs().max(1);
    (meta_layout_size(j) / bs).max(1) * bs
}

/// The bytes a diskless engine's offsets span: `size`, else `filesize`
/// (as fio sizes its null files), else 1 GiB.
fn virtual_size(j: &JobSpec) -> u64 {
    j.size
        .map(|s| s.resolve(1 << 30))
        .or(j.filesize.map(|f| f.1))
        .unwrap_or(1 << 30)
}

/// What a worker does once its engine is built: wait for the common start,
/// then run its loop.
struct RunOnEngine<'a, H: BlockHook> {
    plan: WorkerPlan,
    barrier: &'a Gate,
    startdelay_us: u64,
    stop: &'a AtomicBool,
    prog: &'a Progress,
    hook: &'a mut H,
}

impl<H: BlockHook> WithEngine for RunOnEngine<'_, H> {
    type Out = WorkerResult;
    fn run<E: Engine>(self, e: &mut E) -> WorkerResult {
        self.barrier.wait();
        if self.stop.load(Ordering::Relaxed) {
            // Another worker of the trial could not start (or a stop signal
            // came first): no I/O.
            self.prog.done.store(true, Ordering::Relaxed);
            return WorkerResult::default();
        }
        if self.startdelay_us > 0 {
            // In slices: a stop signal during the delay ends it at once.
            let end = now_ns() + self.startdelay_us * 1000;
            while now_ns() < end
                && !self.stop.load(Ordering::Relaxed)
                && dioscope_sys::signal::stop_count() == 0
            {
                let left = end.saturating_sub(now_ns()).min(50_000_000);
                std::thread::sleep(std::time::Duration::from_nanos(left));
            }
        }
        let t = now_ns();
        worker::run_with_hook(e, self.plan, t, self.stop, self.prog, self.hook)
    }
}

fn panicked_worker() -> WorkerResult {
    WorkerResult {
        first_error: Some(IoErrorInfo {
            file: 0,
            offset: 0,
            len: 0,
            write: false,
            errno: libc::EIO,
        }),
        setup_note: Some(
            "a worker thread panicked; this is a dioscope bug, please report it".into(),
        ),
        fatal_errno: libc::EIO,
        ..Default::default()
    }
}

/// Sleep until `deadline` (monotonic ns) or until `done()`. A stop signal
/// raises `stop` (the workers also see the signal themselves) but does not
/// cut the sleep short: the caller must not spin while workers drain.
fn sleep_until(deadline: u64, done: &dyn Fn() -> bool, stop: &AtomicBool) {
    loop {
        let now = now_ns();
        if now >= deadline || done() {
            return;
        }
        if dioscope_sys::signal::stop_count() > 0 {
            stop.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(std::time::Duration::from_nanos(
            (deadline - now).min(50_000_000),
        ));
    }
}

/// Hook called around each trial (hygiene, device accounting). The runner
/// passes the group's jobs and the open targets.
pub trait TrialHooks {
    fn before_trial(
        &mut self,
        _group: u32,
        _trial: u32,
        _jobs: &[&ResolvedJob],
        _table: &TargetTable,
    ) {
    }
    fn measure_start(&mut self, _group: u32, _trial: u32) {}
    /// Called about once a second while the measured part of a trial runs,
    /// from the runner's thread (the workers do not wait for it).
    fn during_trial(&mut self, _group: u32, _trial: u32) {}
    fn measure_end(&mut self, _group: u32, _trial: u32, _ios: u64) {}
    fn after_trial(
        &mut self,
        _group: u32,
        _trial: u32,
        _jobs: &[&ResolvedJob],
        _table: &TargetTable,
    ) {
    }
    // Multi-process runs (`dist`): the trial loop's points of agreement.
    /// The workers are set up and about to start (ramp, then measure).
    fn workers_ready(&mut self, _group: u32, _trial: u32) {}
    /// How often `stop_requested` is asked while a trial runs.
    fn poll_every_ns(&self) -> u64 {
        1_000_000_000
    }
    /// Asked while the trial runs with the I/Os and bytes measured so far
    /// and whether this process's workers are all done; true stops them.
    fn stop_requested(
        &mut self,
        _group: u32,
        _trial: u32,
        _ios: u64,
        _bytes: u64,
        _done: bool,
    ) -> bool {
        false
    }
    /// After a trial: this process's "stop the run" → everyone's.
    fn agree_stop(&mut self, mine: bool) -> bool {
        mine
    }
    /// `trials=auto`: this process's "enough trials" → the decision all follow.
    fn agree_enough(&mut self, mine: bool) -> bool {
        mine
    }
}

/// No hooks.
pub struct NoHooks;
impl TrialHooks for NoHooks {}

/// Two sets of hooks, `0` then `1` (decisions: `1` has the last word).
pub struct Chain<'a>(pub &'a mut dyn TrialHooks, pub &'a mut dyn TrialHooks);

impl TrialHooks for Chain<'_> {
    fn before_trial(&mut self, g: u32, t: u32, jobs: &[&ResolvedJob], table: &TargetTable) {
        self.0.before_trial(g, t, jobs, table);
        self.1.before_trial(g, t, jobs, table);
    }
    fn measure_start(&mut self, g: u32, t: u32) {
        self.0.measure_start(g, t);
        self.1.measure_start(g, t);
    }
    fn during_trial(&mut self, g: u32, t: u32) {
        self.0.during_trial(g, t);
        self.1.during_trial(g, t);
    }
    fn measure_end(&mut self, g: u32, t: u32, ios: u64) {
        self.0.measure_end(g, t, ios);
        self.1.measure_end(g, t, ios);
    }
    fn after_trial(&mut self, g: u32, t: u32, jobs: &[&ResolvedJob], table: &TargetTable) {
        self.0.after_trial(g, t, jobs, table);
        self.1.after_trial(g, t, jobs, table);
    }
    fn workers_ready(&mut self, g: u32, t: u32) {
        self.0.workers_ready(g, t);
        self.1.workers_ready(g, t);
    }
    fn poll_every_ns(&self) -> u64 {
        self.0.poll_every_ns().min(self.1.poll_every_ns())
    }
    fn stop_requested(&mut self, g: u32, t: u32, ios: u64, bytes: u64, done: bool) -> bool {
        let a = self.0.stop_requested(g, t, ios, bytes, done);
        self.1.stop_requested(g, t, ios, bytes, done) || a
    }
    fn agree_stop(&mut self, mine: bool) -> bool {
        let a = self.0.agree_stop(mine);
        self.1.agree_stop(a)
    }
    fn agree_enough(&mut self, mine: bool) -> bool {
        let a = self.0.agree_enough(mine);
        self.1.agree_enough(a)
    }
}

/// Stage two: run every group and trial.
pub fn execute(
    mut resolved: Vec<ResolvedJob>,
    table: &TargetTable,
    opts: &RunOptions,
    hooks: &mut dyn TrialHooks,
) -> RunResult {
    let start_ms = dioscope_sys::clock::wall_ms();
    let notes = without_fake_verify(&mut resolved);
    // fio's gtod_cpu is the run's: one job's setting keeps every worker off it.
    let mut gtod: Vec<usize> = resolved
        .iter()
        .flat_map(|r| r.spec.gtod_cpus.clone())
        .collect();
    gtod.sort_unstable();
    gtod.dedup();
    for r in resolved.iter_mut() {
        r.spec.gtod_cpus.clone_from(&gtod);
    }
    // fio: `exitall` on any job makes the end of every job stop what that
    // job's exit_what names (a run-wide switch, not the one job's).
    if resolved.iter().any(|r| r.spec.exitall) {
        for r in resolved.iter_mut() {
            r.spec.exitall = true;
        }
    }
    let nphases = resolved.iter().map(|j| j.phase + 1).max().unwrap_or(0);
    let mut ex = Execution {
        written: resolved.iter().map(|_| Vec::new()).collect(),
        terminated: vec![false; resolved.len()],
        jobs: resolved
            .into_iter()
            .map(|r| JobRun {
                resolved: r,
                trials: Vec::new(),
                pace: Vec::new(),
                verify: None,
                verify_io: Vec::new(),
            })
            .collect(),
        table,
        opts,
        hooks,
        phases: Vec::new(),
        notes,
        interrupted: false,
        auto_trials: Vec::new(),
        setup_error: None,
    };
    let mut completed_groups: Vec<u32> = Vec::new();
    for g in 0..nphases {
        if !ex.run_phase(g) {
            break;
        }
        let ran = ex.jobs.iter().zip(&ex.terminated);
        for (j, _) in ran.filter(|(j, t)| j.resolved.phase == g && !**t) {
            if !completed_groups.contains(&j.resolved.groupid) {
                completed_groups.push(j.resolved.groupid);
            }
        }
    }
    ex.report_unstarted();
    if ex.interrupted {
        ex.save_verify_states();
    }
    RunResult {
        jobs: ex.jobs,
        phases: ex.phases,
        targets: table.targets.iter().map(|t| t.info.clone()).collect(),
        interrupted: ex.interrupted,
        signal: dioscope_sys::signal::last_signal(),
        start_ms,
        notes: ex.notes,
        auto_trials: ex.auto_trials,
        setup_error: ex.setup_error,
        completed_groups,
    }
}

/// `ignore_error` as the worker tests it: per direction the errnos'
/// bits, for the types `continue_on_error` covers (fio ignores nothing
/// of a type the job does not go on after).
fn ignore_sets(j: &JobSpec) -> [[u64; 3]; 2] {
    let mut sets = [[0u64; 3]; 2];
    for (d, set) in sets.iter_mut().enumerate() {
        if !j.continue_on[d] {
            continue;
        }
        for &e in j.ignore_error[d].iter().flatten() {
            let e = e as usize;
            if e < 192 {
                set[e / 64] |= 1 << (e % 64);
            }
        }
    }
    sets
}

/// fio's non-fatal errors as the worker tests them: per direction the
/// errnos' bits a job that goes on after errors of that type counts and
/// goes on after. fio's default list is EIO for reads and writes and
/// EILSEQ (a verify type); an `ignore_error` list of the type replaces it
/// (those errnos are then ignored, see `ignore_sets`), so every other
/// errno, EBUSY or EINVAL say, ends the job even with continue_on_error=all.
fn go_on_sets(j: &JobSpec) -> [[u64; 3]; 2] {
    let mut sets = [[0u64; 3]; 2];
    let bit = |set: &mut [u64; 3], e: i32| set[e as usize / 64] |= 1 << (e as usize % 64);
    for (d, set) in sets.iter_mut().enumerate() {
        if j.continue_on[d] && j.ignore_error[d].is_none() {
            bit(set, libc::EIO);
        }
        if j.continue_on[2] && j.ignore_error[2].is_none() {
            bit(set, libc::EILSEQ);
        }
    }
    sets
}

/// The submitters of an offloaded worker (runner/offload.rs), each its
/// share of the worker's `whole` plan.
fn offload_pool(
    spec: &JobSpec,
    whole: &WorkerPlan,
    files: &[FileUse],
    table: &TargetTable,
    clone: u32,
    trial: u32,
) -> Vec<offload::Submitter> {
    let n = offload::pool_size(spec, files);
    (0..n)
        .map(|k| {
            let sub = offload::sub_spec(spec, k, n);
            let mine = offload::sub_files(files, k, n, spec.max_bs());
            let (mut plan, hook) = trial_plan(&sub, &mine, table, clone, trial);
            offload::share_plan(&mut plan, whole, k, n);
            plan.log = None;
            plan.pace.flow.clone_from(&whole.pace.flow);
            (sub, plan, hook)
        })
        .collect()
}

/// fio's null engine "pretends it verified everything": its I/Os move no
/// data, so there is nothing to check. Such a job runs without verify,
/// and the result says so instead of reporting blocks as checked.
fn without_fake_verify(resolved: &mut [ResolvedJob]) -> Vec<String> {
    let mut notes = Vec::new();
    for r in resolved.iter_mut() {
        let j = &mut r.spec;
        if let Some(v) = j.verify.as_ref().filter(|_| j.ioengine.caps().fakes_verify) {
            notes.push(format!(
                "job '{}': verify={v} checked nothing: ioengine={} moves no data (fio \
                 pretends such I/O verified; dioscope reports no verify result for it)",
                j.name,
                j.ioengine.as_str()
            ));
            j.verify = None;
            j.do_verify = false;
        }
    }
    notes
}

/// What stage two accumulates while it runs the phases.
struct Execution<'a> {
    jobs: Vec<JobRun>,
    /// Per job: `exitall` stopped it before it started (fio's terminate of a
    /// job not yet created): it never runs, and reports zeros as in fio.
    terminated: Vec<bool>,
    table: &'a TargetTable,
    opts: &'a RunOptions,
    hooks: &'a mut dyn TrialHooks,
    phases: Vec<PhaseRun>,
    notes: Vec<String>,
    interrupted: bool,
    /// The intervals each write worker stamped in the last trial, per job and clone.
    written: Vec<Vec<Option<WrittenState>>>,
    auto_trials: Vec<crate::stats::significance::AutoOutcome>,
    setup_error: Option<WorkerSetupError>,
}

/// The running workers of one trial.
struct Spawned {
    /// (job index, clone, thread).
    handles: Vec<(usize, usize, WorkerThread)>,
    /// A worker thread that could not be spawned (job index, clone, error).
    failed: Option<(usize, usize, std::io::Error)>,
    barrier: Arc<Gate>,
    stop: Arc<AtomicBool>,
    progs: Vec<Arc<Progress>>,
}

/// Process and system counters at the start or end of a measurement.
struct Snapshot {
    usage: Usage,
    cpu: SysCpu,
    ns: u64,
}

impl Snapshot {
    fn take() -> Snapshot {
        Snapshot {
            usage: usage_self(),
            cpu: SysCpu::read(),
            ns: now_ns(),
        }
    }
}

impl Execution<'_> {
    /// Run every trial of phase `g`, then its read-back. False: stop the run.
    fn run_phase(&mut self, g: u32) -> bool {
        let idx: Vec<usize> = (0..self.jobs.len())
            .filter(|&i| self.jobs[i].resolved.phase == g && !self.terminated[i])
            .collect();
        if idx.is_empty() {
            // Every job of it was stopped before it started (exit_what=group).
            return true;
        }
        if let Err(e) = self.size_at_start(&idx) {
            self.setup_error = Some(e);
            return false;
        }
        let trials = idx
            .iter()
            .map(|&i| self.jobs[i].resolved.spec.trials)
            .max()
            .unwrap_or(1);
        let mut grun = PhaseRun {
            phase: g,
            trials: Vec::new(),
            start_ms: dioscope_sys::clock::wall_ms(),
        };
        // trials=auto (0): up to the limit, stopping once precise enough.
        let auto = (trials == 0).then(|| self.opts.auto.clone());
        let trials = auto.as_ref().map(|a| a.max_trials.max(1)).unwrap_or(trials);
        let t_start = now_ns();
        let mut ran = 0;
        for trial in 0..trials {
            let t_trial = now_ns();
            let (env, stop_now) = self.run_trial(g, trial, trials, &idx);
            if self.setup_error.is_some() {
                // That trial did no I/O: it is not a measurement.
                self.phases.push(grun);
                return false;
            }
            grun.trials.push(env);
            ran = trial + 1;
            if let Some(a) = &auto {
                if self.auto_step(a, g, &idx, &grun, t_start, t_trial) {
                    break;
                }
            }
            let local_stop = self.interrupted || dioscope_sys::signal::stop_count() > 0;
            if self.hooks.agree_stop(local_stop || stop_now) && !stop_now {
                self.interrupted = true;
                self.phases.push(grun);
                return false;
            }
            if stop_now {
                self.phases.push(grun);
                return false;
            }
        }
        for &i in &idx {
            self.read_back(i, ran);
        }
        self.phases.push(grun);
        if dioscope_sys::signal::stop_count() > 0 {
            // Stopped during the read-back: the verify report is partial too.
            self.interrupted = true;
            return false;
        }
        true
    }

    /// Jobs `exitall` stopped before they started: one empty trial each, so
    /// they are reported with zeros (fio lists such a job with no I/O).
    fn report_unstarted(&mut self) {
        for (j, _) in self
            .jobs
            .iter_mut()
            .zip(&self.terminated)
            .filter(|(j, t)| **t && j.trials.is_empty())
        {
            let mut t = TrialJob::default();
            if j.resolved.reports_clones() {
                // One zero entry per clone, as fio lists them.
                t.clones = vec![TrialJob::default(); j.resolved.clones.len()];
            }
            j.trials.push(t);
        }
    }

    /// After a trial of a `trials=auto` group: true when it may stop (the
    /// outcome is then recorded).
    fn auto_step(
        &mut self,
        a: &crate::stats::significance::AutoTrials,
        g: u32,
        idx: &[usize],
        grun: &PhaseRun,
        t_start: u64,
        t_trial: u64,
    ) -> bool {
        use crate::stats::significance::{AutoOutcome, AutoStep};
        let values: Vec<f64> = (0..grun.trials.len())
            .filter_map(|t| {
                group_metric(
                    &a.metric,
                    idx.iter().filter_map(|&i| self.jobs[i].trials.get(t)),
                    &grun.trials[t],
                )
            })
            .collect();
        let now = now_ns();
        let step = a.step(
            &values,
            (now - t_start) as f64 / 1e9,
            (now - t_trial) as f64 / 1e9,
        );
        if !self.hooks.agree_enough(!matches!(step, AutoStep::More)) {
            return false;
        }
        let (converged, half, by) = match step {
            // Another process (rank 0 of a distributed run) decided.
            AutoStep::More => (false, None, "rank 0"),
            AutoStep::Converged { half } => (true, Some(half), "converged"),
            AutoStep::Limit { half, by_time } => {
                (false, half, if by_time { "max-time" } else { "max-trials" })
            }
        };
        let o = AutoOutcome {
            group: g,
            metric: a.metric.clone(),
            trials: values.len() as u32,
            converged,
            half_width_pct: half.map(|h| h * 100.0),
            precision_pct: a.precision * 100.0,
            stopped_by: by.into(),
            values,
        };
        self.notes.push(format!(
            "trials=auto (group {g}): {} after {} trials: {} 95 % CI half-width {} of the mean, precision {} %{}",
            if converged {
                "converged"
            } else {
                "did NOT converge"
            },
            o.trials,
            o.metric,
            o.half_width_pct
                .map(|h| format!("{h:.1} %"))
                .unwrap_or_else(|| "-".into()),
            o.precision_pct,
            if converged {
                String::new()
            } else {
                format!(" (stopped by {by})")
            }
        ));
        self.auto_trials.push(o);
        true
    }

    /// The regions left open at prepare (a file an earlier phase's
    /// fill_device job writes, `resolve`): what the file holds now, in
    /// whole blocks, from the job's offset.
    fn size_at_start(&mut self, idx: &[usize]) -> Result<(), WorkerSetupError> {
        for &i in idx {
            let spec = self.jobs[i].resolved.spec.clone();
            let bs = spec.max_bs().max(1);
            let name = spec.name.clone();
            let groupid = self.jobs[i].resolved.groupid;
            for (c, files) in self.jobs[i].resolved.clones.iter_mut().enumerate() {
                for f in files.iter_mut().filter(|f| f.region.1 == 0) {
                    let fd = self.table.targets[f.target_idx].fd();
                    let size = dioscope_sys::mmap::fd_size(fd).unwrap_or(0);
                    // A percentage offset is of the size now.
                    f.region.0 = offset_of(&spec, size) + spec.offset_increment * c as u64;
                    let len = size.saturating_sub(f.region.0) / bs * bs;
                    if len == 0 {
                        return Err(WorkerSetupError {
                            group: groupid,
                            trial: 0,
                            job: name.clone(),
                            clone: c as u32,
                            errno: libc::EINVAL,
                            msg: format!(
                                "{} holds {size} bytes when job '{name}' starts (the fill_device \
                                 job before it wrote that much), less than offset {} plus one \
                                 block of {bs}; give the job size=",
                                f.path.display(),
                                f.region.0
                            ),
                        });
                    }
                    f.region.1 = len;
                }
            }
        }
        Ok(())
    }

    /// One trial of the jobs `idx` of group `g`. Returns the group's
    /// measurements and whether an I/O error ends the run.
    fn run_trial(&mut self, g: u32, trial: u32, trials: u32, idx: &[usize]) -> (TrialEnv, bool) {
        let gjobs: Vec<&ResolvedJob> = idx.iter().map(|&i| &self.jobs[i].resolved).collect();
        self.hooks.before_trial(g, trial, &gjobs, self.table);
        let mut sp = self.spawn(trial, idx);
        let spawn_failed = sp.failed.take().map(|(i, c, e)| WorkerSetupError {
            group: self.jobs[i].resolved.groupid,
            trial,
            job: self.jobs[i].resolved.spec.name.clone(),
            clone: c as u32,
            errno: e.raw_os_error().unwrap_or(libc::EAGAIN),
            msg: format!(
                "starting a worker thread failed: {e}; the user's process/thread limit \
                 (`ulimit -u`, counting every process of this user) or \
                 /proc/sys/kernel/threads-max is reached: raise it, or lower numjobs"
            ),
        });
        let watched: Vec<watch::Watched> = idx
            .iter()
            .map(|&i| watch::Watched {
                spec: &self.jobs[i].resolved.spec,
                clones: self.jobs[i].resolved.clones.len(),
                groupid: self.jobs[i].resolved.groupid,
            })
            .collect();
        let watch = watch::Watch::start(&watched, &sp.progs);
        self.hooks.workers_ready(g, trial);
        sp.barrier.wait();
        let t0 = now_ns();
        let ramp = gjobs
            .iter()
            .map(|j| j.spec.ramp_time_us * 1000)
            .max()
            .unwrap_or(0);
        let runtime = gjobs
            .iter()
            .map(|j| j.spec.runtime_us * 1000)
            .max()
            .unwrap_or(0);
        let all_done = || sp.progs.iter().all(|p| p.done.load(Ordering::Relaxed));
        sleep_until(t0 + ramp, &all_done, &sp.stop);
        let before = Snapshot::take();
        self.hooks.measure_start(g, trial);
        let mut meter = ProgressLine {
            label: format!("[group {g} trial {}/{trials}]", trial + 1),
            t0,
            total_ns: ramp + runtime,
            timed: runtime > 0,
            last: (now_ns(), 0, 0),
        };
        let poll = self.hooks.poll_every_ns().clamp(1_000_000, 1_000_000_000);
        let mut next_second = now_ns() + 1_000_000_000;
        let mut stonewalled = false;
        let measured = || {
            sp.progs.iter().fold((0, 0), |(i, b), p| {
                (
                    i + p.ios.load(Ordering::Relaxed),
                    b + p.bytes.load(Ordering::Relaxed),
                )
            })
        };
        loop {
            let done = all_done();
            let (ios, bytes) = measured();
            if self.hooks.stop_requested(g, trial, ios, bytes, done) {
                stonewalled = true;
                sp.stop.store(true, Ordering::Relaxed);
            }
            if done {
                break;
            }
            sleep_until(now_ns() + poll, &all_done, &sp.stop);
            if dioscope_sys::signal::stop_count() > 0 {
                sp.stop.store(true, Ordering::Relaxed);
            }
            if now_ns() < next_second {
                continue;
            }
            next_second += 1_000_000_000;
            if !all_done() {
                self.hooks.during_trial(g, trial);
            }
            if self.opts.progress {
                meter.show(&sp.progs);
            }
        }
        if self.opts.progress {
            eprint!("\r\x1b[K");
        }
        let after = Snapshot::take();
        let (mut per_job, setup_failed) = self.join(sp.handles, idx);
        let end_run = watch
            .map(|w| self.keep_watch(w.finish(), g, idx))
            .unwrap_or(false);
        let setup_failed = setup_failed.map(|(i, c, e)| WorkerSetupError {
            group: self.jobs[i].resolved.groupid,
            trial,
            job: self.jobs[i].resolved.spec.name.clone(),
            clone: c as u32,
            errno: e.errno,
            msg: e.msg,
        });
        if stonewalled && dioscope_sys::signal::stop_count() == 0 {
            // Stopped by the hooks (another rank finished first), not by a signal.
            for tj in &mut per_job {
                tj.interrupted = false;
            }
        }
        let ios: u64 = per_job.iter().map(|t| t.dirs[0].ios + t.dirs[1].ios).sum();
        self.hooks.measure_end(g, trial, ios);
        let env = TrialEnv {
            wall_ns: after.ns - before.ns,
            process: after.usage.since(&before.usage),
            system: after.cpu.since(&before.cpu),
            ios,
        };
        let gjobs: Vec<&ResolvedJob> = idx.iter().map(|&i| &self.jobs[i].resolved).collect();
        self.hooks.after_trial(g, trial, &gjobs, self.table);
        if let Some(e) = spawn_failed.or(setup_failed) {
            self.setup_error = Some(e);
            return (env, true);
        }
        let mut stop_now = end_run;
        for (pos, tj) in per_job.into_iter().enumerate() {
            let job = &mut self.jobs[idx[pos]];
            self.interrupted |= tj.interrupted;
            stop_now |= tj.fatal_errno != 0;
            job.trials.push(tj);
        }
        (env, stop_now)
    }

    /// Keep what the trial's watcher found (steady state per clone, why
    /// jobs ended early, what `exitall` stopped beyond phase `g`). True:
    /// `exit_what=all` ends the run.
    fn keep_watch(&mut self, out: watch::WatchOut, g: u32, idx: &[usize]) -> bool {
        // fio marks the jobs not yet started as terminated too: those of the
        // finisher's reporting group (exit_what=group), or all (=all).
        for (j, t) in self.jobs.iter().zip(self.terminated.iter_mut()) {
            let r = &j.resolved;
            if r.phase > g && (out.end_run || out.ended_groups.contains(&r.groupid)) {
                *t = true;
            }
        }
        let mut w = 0;
        for &i in idx {
            let t = self.jobs[i].trials.len();
            for c in 0..self.jobs[i].resolved.clones.len() {
                if let Some(s) = out.steady.get(w).cloned().flatten() {
                    pacing::TrialPace::clone_mut(&mut self.jobs[i].pace, t, c).steady = Some(s);
                }
                w += 1;
            }
        }
        for n in out.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        out.end_run
    }

    /// Start one thread per clone of the jobs `idx`; they wait at the barrier.
    fn spawn(&self, trial: u32, idx: &[usize]) -> Spawned {
        let nworkers: usize = idx
            .iter()
            .map(|&i| self.jobs[i].resolved.clones.len())
            .sum();
        let barrier = Arc::new(Gate::new(nworkers + 1));
        let stop = Arc::new(AtomicBool::new(false));
        let progs: Vec<Arc<Progress>> = (0..nworkers)
            .map(|_| Arc::new(Progress::default()))
            .collect();
        let mut handles = Vec::new();
        let mut failed = None;
        let mut k = 0;
        let flows = pacing::Flows::for_trial(idx.iter().map(|&i| {
            let r = &self.jobs[i].resolved;
            (&r.spec, r.clones.len())
        }));
        'jobs: for &i in idx {
            let rj = &self.jobs[i].resolved;
            for (c, files) in rj.clones.iter().enumerate() {
                let (mut plan, hook) = trial_plan(&rj.spec, files, self.table, c as u32, trial);
                // fio numbers logs 1..N over every job's clones.
                let index = self.jobs[..i]
                    .iter()
                    .map(|j| j.resolved.clones.len())
                    .sum::<usize>()
                    + c
                    + 1;
                plan.log = logs::plan_for(&rj.spec, index, trial);
                plan.pace.flow = flows.member(&rj.spec);
                let spec = buffers::placed(&rj.spec, index - 1);
                let (b, s, p) = (barrier.clone(), stop.clone(), progs[k].clone());
                k += 1;
                let pool = if spec.submit_offload {
                    offload_pool(&spec, &plan, files, self.table, c as u32, trial)
                } else {
                    Vec::new()
                };
                let spawned = std::thread::Builder::new()
                    .name(format!("{}.{}", spec.name, c))
                    .spawn(move || {
                        if pool.is_empty() {
                            run_hooked(&spec, plan, &b, &s, &p, hook)
                        } else {
                            offload::run_pool(pool, &b, &s, &p)
                        }
                    });
                match spawned {
                    Ok(h) => handles.push((i, c, h)),
                    Err(e) => {
                        // The threads already started must not run: stop
                        // them at the gate, which no longer waits for the
                        // ones that will never come.
                        stop.store(true, Ordering::Relaxed);
                        for p in &progs[k - 1..] {
                            p.done.store(true, Ordering::Relaxed);
                        }
                        barrier.shrink(nworkers - (k - 1));
                        failed = Some((i, c, e));
                        break 'jobs;
                    }
                }
            }
        }
        Spawned {
            handles,
            failed,
            barrier,
            stop,
            progs,
        }
    }

    /// Wait for the workers and merge their results per job (in `idx` order).
    /// Also the first worker that could not start (job index, clone, why).
    fn join(
        &mut self,
        handles: Vec<(usize, usize, WorkerThread)>,
        idx: &[usize],
    ) -> (Vec<TrialJob>, Option<(usize, usize, EngineSetupError)>) {
        let mut per_job: Vec<TrialJob> = idx.iter().map(|_| TrialJob::default()).collect();
        let mut failed = None;
        for (i, clone, h) in handles {
            let (mut r, out) = h
                .join()
                .unwrap_or_else(|_| (panicked_worker(), HookOut::default()));
            if let Some(e) = r.setup_failed.take() {
                failed.get_or_insert((i, clone, e));
            }
            self.keep_hook_out(i, clone, out);
            if let Some(st) = r.steps.take() {
                let t = self.jobs[i].trials.len();
                pacing::TrialPace::clone_mut(&mut self.jobs[i].pace, t, clone).steps = Some(st);
            }
            if let Some(d) = r.latency_depth {
                let t = self.jobs[i].trials.len();
                pacing::TrialPace::clone_mut(&mut self.jobs[i].pace, t, clone).latency_depth =
                    Some(d);
            }
            if let Some(n) = &r.setup_note {
                if !self.notes.contains(n) {
                    self.notes.push(n.clone());
                }
            }
            if r.ignored_errors > 0 {
                let name = &self.jobs[i].resolved.spec.name;
                self.notes.push(format!(
                    "job '{name}' (clone {clone}, trial {}): {} I/O error(s) ignore_error lists \
                     were ignored",
                    self.jobs[i].trials.len() + 1,
                    r.ignored_errors
                ));
            }
            let pos = idx.iter().position(|&x| x == i).expect("job index");
            let job = &self.jobs[i].resolved;
            if job.reports_clones() {
                // Kept apart too, for one result entry per clone (as fio).
                let mut one = TrialJob::default();
                one.add_worker(r, job);
                per_job[pos].absorb(&one);
                let c = &mut per_job[pos].clones;
                if c.len() <= clone {
                    c.resize_with(clone + 1, TrialJob::default);
                }
                c[clone] = one;
            } else {
                per_job[pos].add_worker(r, job);
            }
        }
        (per_job, failed)
    }
}

type WorkerThread = std::thread::JoinHandle<(WorkerResult, HookOut)>;

impl TrialJob {
    /// Merge one worker (clone) of `job` into the job's trial result.
    fn add_worker(&mut self, r: WorkerResult, job: &ResolvedJob) {
        for (a, b) in self.dirs.iter_mut().zip(&r.dirs) {
            a.merge(b);
        }
        self.sync.merge(&r.sync);
        self.trim.merge(&r.trim);
        self.runtime_ns = self.runtime_ns.max(r.runtime_ns);
        self.thread_cpu.add(&r.thread_cpu);
        self.max_worker_cpu = self.max_worker_cpu.max(r.cpu_busy);
        self.interrupted |= r.interrupted;
        self.workers += 1;
        self.queue.add(&r.queue);
        merge_ticks(&mut self.ticks, &r.ticks);
        if self.fatal_errno == 0 {
            self.fatal_errno = r.fatal_errno;
        }
        self.ignored_errors += r.ignored_errors;
        if self.first_ignored == 0 {
            self.first_ignored = r.first_ignored;
        }
        if self.first_error.is_none() {
            if let Some(e) = r.first_error {
                let path = job
                    .clones
                    .first()
                    .and_then(|f| f.get(e.file as usize))
                    .map(|f| f.path.display().to_string())
                    .unwrap_or_default();
                self.first_error = Some((e, path));
            }
        }
    }
}

/// The live line on stderr: elapsed, remaining, IOPS and bandwidth since the last update.
struct ProgressLine {
    label: String,
    t0: u64,
    total_ns: u64,
    timed: bool,
    /// (time, ios, bytes) at the last update.
    last: (u64, u64, u64),
}

impl ProgressLine {
    fn show(&mut self, progs: &[Arc<Progress>]) {
        let ios: u64 = progs.iter().map(|p| p.ios.load(Ordering::Relaxed)).sum();
        let bytes: u64 = progs.iter().map(|p| p.bytes.load(Ordering::Relaxed)).sum();
        let now = now_ns();
        let dt = (now - self.last.0).max(1) as f64 / 1e9;
        let el = (now - self.t0) as f64 / 1e9;
        let total = self.total_ns as f64 / 1e9;
        let remain = if self.timed {
            format!(" remaining {:.0}s", (total - el).max(0.0))
        } else {
            String::new()
        };
        eprint!(
            "\r\x1b[K{} elapsed {:.0}s{remain}  IOPS {}  BW {}/s",
            self.label,
            el,
            crate::results::human_count((ios.saturating_sub(self.last.1)) as f64 / dt),
            crate::results::human_rate((bytes.saturating_sub(self.last.2)) as f64 / dt)
        );
        self.last = (now, ios, bytes);
    }
}

/// One trial's value of a group's primary metric for `trials=auto`: the
/// group's jobs merged (their I/Os and bytes over the longest runtime).
fn group_metric<'a>(
    metric: &str,
    jobs: impl Iterator<Item = &'a TrialJob>,
    env: &TrialEnv,
) -> Option<f64> {
    let mut merged = TrialJob::default();
    for tj in jobs {
        for (a, b) in merged.dirs.iter_mut().zip(&tj.dirs) {
            a.merge(b);
        }
        merged.runtime_ns = merged.runtime_ns.max(tj.runtime_ns);
    }
    let ios = merged.dirs[0].ios + merged.dirs[1].ios;
    let secs = merged.runtime_ns as f64 / 1e9;
    if ios == 0 || secs <= 0.0 {
        return None;
    }
    let mut lat = merged.dirs[0].lat.clone();
    lat.merge(&merged.dirs[1].lat);
    Some(match metric {
        "bw" => (merged.dirs[0].bytes + merged.dirs[1].bytes) as f64 / secs,
        "lat_mean" => lat.mean(),
        "lat_p99" => lat.percentile(99.0) as f64,
        "cpu_us_per_io" => {
            (env.process.user_us + env.process.sys_us) as f64 / env.ios.max(1) as f64
        }
        _ => ios as f64 / secs,
    })
}

// Last: the audits read everything before the first `#[cfg(test)]` as code.
#[cfg(test)]
mod readback_tests;
