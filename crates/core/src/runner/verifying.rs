//! A worker's block hook and the verify plumbing around the worker loop:
//! the per-block work of one worker ([`JobHook`]: the write buffers'
//! contents, verify stamping and checking, verify_backlog, per-I/O
//! priorities), each trial's plan and hook, and after the trials the
//! read-back (verify_async, experimental_verify) and
//! verify_state_save/load.
//!
//! A job that asks for none of it runs with `NoHook`, whose calls compile
//! away.

use super::block_sizes::BsPicker;
use super::buffers::{Fill, PrioPicker};
use super::clock::{Clock, SysClock};
use super::execute::Execution;
use super::iolog::{IoLog, Op, OpKind};
use super::offsets::OffsetGen;
use super::result::FileUse;
use super::start::{run_worker, Gate};
use super::worker::{Progress, WorkerPlan, WorkerResult};
use crate::job::JobSpec;
use crate::results::measure::VerifyIo;
use crate::targets::TargetTable;
use crate::verify::backlog::Backlog;
use crate::verify::{Algo, BlockHook, Checker, VerifyReport, VerifySpec, Writer, Written};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The per-block work of one worker: contents, verify stamping and
/// checking, the backlog, priorities.
#[derive(Default)]
pub(super) struct JobHook {
    fill: Option<Fill>,
    writer: Option<Writer>,
    checker: Option<Checker>,
    backlog: Option<Backlog>,
    prio: Option<PrioPicker>,
}

impl JobHook {
    fn is_empty(&self) -> bool {
        self.fill.is_none()
            && self.writer.is_none()
            && self.checker.is_none()
            && self.backlog.is_none()
            && self.prio.is_none()
    }
}

impl BlockHook for JobHook {
    const ACTIVE: bool = true;
    #[inline]
    fn before_write(&mut self, buf: &mut [u8], file: u32, offset: u64) {
        if let Some(w) = &mut self.writer {
            w.before_write(buf, file, offset);
        } else if let Some(f) = &mut self.fill {
            f.before_write(buf, offset);
        }
    }
    #[inline]
    fn after_read(&mut self, buf: &[u8], file: u32, offset: u64) {
        if let Some(c) = &mut self.checker {
            c.after_read(buf, file, offset);
        }
    }
    #[inline]
    fn after_write(&mut self, file: u32, offset: u64, len: u32) {
        if let Some(w) = &mut self.writer {
            w.after_write(file, offset, len);
        }
        if let Some(b) = &mut self.backlog {
            b.written(file, offset, len);
        }
    }
    #[inline]
    fn after_trim(&mut self, file: u32, offset: u64, len: u64) {
        if let Some(w) = &mut self.writer {
            w.after_trim(file, offset, len);
        }
    }
    #[inline]
    fn io_prio(&mut self, write: bool, len: u64) -> u16 {
        match &mut self.prio {
            Some(p) => p.pick(write, len),
            None => 0,
        }
    }
    fn should_stop(&self) -> bool {
        self.checker.as_ref().is_some_and(|c| c.should_stop())
            || self
                .backlog
                .as_ref()
                .is_some_and(|b| b.checker.should_stop())
    }
}

/// The block hook of one worker, if it needs one.
pub(super) type HookKind = Option<Box<JobHook>>;

/// What a worker's hook leaves for the runner.
#[derive(Default)]
pub(super) struct HookOut {
    written: Option<Written>,
    checked: Vec<Checker>,
    read_errors: (u64, Option<String>),
}

/// The verify parameters of a job, if it verifies.
pub(super) fn verify_spec(j: &JobSpec, generation: u64) -> Option<VerifySpec> {
    let algo = Algo::parse(j.verify.as_deref()?)?;
    let interval = j.verify_interval_used();
    let mut s = VerifySpec::new(algo, interval as u32, j.randseed, generation);
    s.unit = j.verify_unit().unwrap_or(interval) as u32;
    s.pattern = j
        .verify_pattern
        .clone()
        .map(|p| Arc::new(p.every(j.verify_pattern_interval)));
    s.header_at = j.verify_offset as u32;
    s.check_seed = j.verify_header_seed;
    Some(s)
}

/// A sequential read over `regions`, in blocks that are whole multiples of
/// the verify unit (the interval, or the block it does not divide).
fn verify_read_plan(
    j: &JobSpec,
    files: &[FileUse],
    table: &TargetTable,
    regions: &[(u64, u64)],
    interval: u64,
) -> WorkerPlan {
    let mut p = WorkerPlan::new(j, files, table, 0, 0);
    let big = (j.max_bs().max(interval).div_ceil(interval) * interval)
        .min(1 << 20)
        .max(interval);
    let bs = if regions.iter().all(|r| r.1 % big == 0) {
        big
    } else {
        interval
    };
    p.read_pct = 100;
    p.bs = [
        BsPicker::new(&crate::job::BlockSizes::Fixed(bs), bs),
        BsPicker::new(&crate::job::BlockSizes::Fixed(bs), bs),
    ];
    p.offsets = OffsetGen::new(
        regions,
        bs,
        false,
        false,
        crate::job::RandomDist::Uniform,
        0,
    );
    p.io_limit = regions.iter().map(|r| r.1 / bs * bs).sum();
    quiet_read(&mut p);
    p
}

/// The most I/Os [`dry_run`] replays (a bound on its time and on a job
/// whose size is far beyond what a check reads).
const DRY_RUN_MAX_IOS: u64 = 1 << 26;

/// verify_only's record of what a writing job wrote, as fio's dry run
/// makes it (a read job with verify_only reads and checks as it reads):
/// the job's own plan for this clone and trial (the same seed, so the same
/// offsets, sizes and mix as the run that wrote), replayed without I/O,
/// its writes marked. The check then reads only those intervals, so a
/// block the writing run never touched (`norandommap` leaves some, a mixed
/// `rw` leaves the reads' blocks, `rw=write:4k` leaves holes) is not taken
/// for a lost write. `None` (every interval is checked, as before) where
/// the plan cannot be replayed to the same offsets: a seed from the clock
/// (`randrepeat=0`), `time_based`, a ramp, pacing, trims, an iolog replay,
/// or no size limit.
fn dry_run(
    j: &JobSpec,
    files: &[FileUse],
    table: &TargetTable,
    clone: u32,
    trial: u32,
    interval: u32,
) -> Option<Written> {
    let seeded = j.randrepeat || j.allrandrepeat || j.given.iter().any(|(k, _)| k == "randseed");
    let mut p = WorkerPlan::new(j, files, table, clone, trial);
    let paced = super::pacing::Pacer::new(&p.pace, 0).active;
    let plain = p.replay.is_none() && p.trim == super::worker::TrimMode::None && !paced;
    let limited = p.io_limit > 0 || p.number_ios > 0;
    if !seeded || j.time_based || p.ramp_ns > 0 || !plain || !limited {
        return None;
    }
    let regions: Vec<(u64, u64)> = files.iter().map(|f| f.region).collect();
    let mut w = Written::new(&regions, interval);
    let (mut bytes, mut ios) = (0u64, 0u64);
    // The worker's own order of draws (`stage_plain`): the direction, the
    // size, the size limit, then the offset.
    while ios < DRY_RUN_MAX_IOS {
        let write = match p.read_pct {
            100 => false,
            0 => true,
            pct => p.offsets.rng.below(100) >= pct as u64,
        };
        let len = p.bs[write as usize].pick(&mut p.offsets.rng);
        if (p.io_limit > 0 && bytes >= p.io_limit) || (p.number_ios > 0 && ios >= p.number_ios) {
            break;
        }
        let (file, offset, len) = p.offsets.next_dir(len, write);
        bytes += len;
        ios += 1;
        if write {
            w.wrote(file, offset, len);
        }
    }
    (ios < DRY_RUN_MAX_IOS).then_some(w)
}

/// A read-back plan: no timeline, syncs, rate, logs, trims or iolog.
fn quiet_read(p: &mut WorkerPlan) {
    p.read_pct = 100;
    p.number_ios = 0;
    p.trim = super::worker::TrimMode::None;
    p.replay = None;
    p.write_iolog = None;
    p.ramp_ns = 0;
    p.runtime_ns = 0;
    p.fsync_every = 0;
    p.fdatasync_every = 0;
    p.pace = super::pacing::PacePlan::default();
    p.end_fsync = false;
    p.complete_max = 0;
    p.log = None;
}

/// How many reads of the read-back are listed at once.
const READ_BACK_BATCH: usize = 1 << 16;

/// The plan of one read-back reader: the reads `ops`, in order, as fast as
/// the engine goes.
fn read_back_plan(j: &JobSpec, files: &[FileUse], table: &TargetTable, ops: &[Op]) -> WorkerPlan {
    let mut p = WorkerPlan::new(j, files, table, 0, 0);
    quiet_read(&mut p);
    p.io_limit = 0;
    p.replay = Some(Arc::new(IoLog {
        files: Vec::new(),
        ops: ops.to_vec(),
        timed: false,
    }));
    p.replay_timed = false;
    p
}

/// The state file fio names `local-JOB-N-verify.state`.
fn state_path(j: &JobSpec, clone: usize) -> PathBuf {
    crate::job::created::state_file(j, clone)
}

/// The plan and block hook of one worker in one trial.
pub(super) fn trial_plan(
    j: &JobSpec,
    files: &[FileUse],
    table: &TargetTable,
    clone: u32,
    trial: u32,
) -> (WorkerPlan, HookKind) {
    let mut plan = WorkerPlan::new(j, files, table, clone, trial);
    let seed = plan.offsets.rng.clone().next_u64();
    if trial == 0 {
        crate::job::debug::random_seed(plan.seed);
    }
    let mut hook = JobHook {
        prio: PrioPicker::of(j, seed ^ 0xc0de),
        ..Default::default()
    };
    let vs = verify_spec(j, trial as u64 + 1).filter(|_| !files.is_empty());
    match vs {
        None => hook.fill = Fill::of(j, seed),
        Some(vs) if j.verify_only || !j.rw.writes() => {
            // Check what an earlier run (or job) wrote: any generation.
            let regions: Vec<(u64, u64)> = files.iter().map(|f| f.region).collect();
            if j.verify_only {
                plan = verify_read_plan(j, files, table, &regions, vs.unit as u64);
            }
            let written = if j.verify_state_load {
                load_state(j, clone as usize).ok()
            } else if j.verify_only && j.rw.writes() {
                dry_run(j, files, table, clone, trial, vs.unit)
            } else {
                None
            };
            let mut c = Checker::new(vs, written, None, j.verify_fatal);
            if j.verify_dump {
                c = c.dump_to(PathBuf::from("."), paths(files));
            }
            hook.checker = Some(c);
        }
        Some(vs) => {
            let regions: Vec<(u64, u64)> = files.iter().map(|f| f.region).collect();
            if j.verify_backlog > 0 {
                let generation = j.verify_write_sequence.then_some(vs.generation);
                let c = Checker::new(vs.clone(), None, generation, j.verify_fatal);
                let c = if j.verify_dump {
                    c.dump_to(PathBuf::from("."), paths(files))
                } else {
                    c
                };
                // Without a read buffer the backlog is skipped; the
                // read-back after the trial still checks every block.
                hook.backlog = Backlog::new(
                    j.verify_backlog,
                    j.verify_backlog_batch,
                    plan.fds.clone(),
                    j.max_bs() as usize,
                    c,
                )
                .ok();
            }
            // experimental_verify reads back the same record: replaying
            // the job's plan would read what it read and miss what it
            // wrote (randrw, time_based, norandommap).
            hook.writer = Some(Writer::new(vs.clone(), Written::new(&regions, vs.unit)));
        }
    }
    let hook = (!hook.is_empty()).then(|| Box::new(hook));
    (plan, hook)
}

fn paths(files: &[FileUse]) -> Vec<String> {
    files.iter().map(|f| f.path.display().to_string()).collect()
}

pub(super) fn run_hooked<C: Clock>(
    j: &JobSpec,
    plan: WorkerPlan,
    b: &Gate,
    s: &AtomicBool,
    p: &Progress,
    hook: HookKind,
    clock: C,
) -> (WorkerResult, HookOut) {
    let mut out = HookOut {
        written: None,
        checked: Vec::new(),
        read_errors: (0, None),
    };
    let Some(mut h) = hook else {
        return (
            run_worker(j, plan, b, s, p, &mut super::worker::NoHook, clock),
            out,
        );
    };
    let r = run_worker(j, plan, b, s, p, h.as_mut(), clock);
    let h = *h;
    out.written = h.writer.map(|w| w.written);
    out.checked.extend(h.checker);
    if let Some(bl) = h.backlog {
        out.read_errors = (bl.read_errors, bl.first_read_error);
        out.checked.push(bl.checker);
    }
    (r, out)
}

/// The spec a read-back runs: the job's, with no exec_prerun/postrun (the
/// read-back is no run of the job), on verify_async_cpus with verify_async.
fn read_back_spec(job: &JobSpec) -> JobSpec {
    let mut spec = JobSpec {
        exec_prerun: None,
        exec_postrun: None,
        ..job.clone()
    };
    if spec.verify_async > 0 {
        if let Some(c) = &spec.verify_async_cpus {
            spec.cpus_allowed = Some(c.clone());
        }
    }
    spec
}

/// One checker per reader of a clone's read-back (dumping bad blocks with
/// verify_dump).
fn new_checkers(
    spec: &JobSpec,
    vs: &VerifySpec,
    generation: Option<u64>,
    readers: usize,
    paths: &[String],
) -> Vec<Checker> {
    (0..readers)
        .map(|_| {
            let ck = Checker::new(vs.clone(), None, generation, spec.verify_fatal);
            if spec.verify_dump {
                ck.dump_to(PathBuf::from("."), paths.to_vec())
            } else {
                ck
            }
        })
        .collect()
}

/// The reads of the next batch of the record's `pieces`: the record is read
/// in batches, and the list of one batch is all the read-back holds at once.
fn next_batch(pieces: &mut impl Iterator<Item = (u32, u64, u64)>) -> Vec<Op> {
    pieces
        .by_ref()
        .take(READ_BACK_BATCH)
        .map(|(file, offset, len)| Op {
            at_ns: 0,
            file,
            kind: OpKind::Read,
            offset,
            len,
        })
        .collect()
}

/// Run one batch's `plans`, each with its checker: one reader on this
/// thread; verify_async=N on N threads.
fn read_batch(
    spec: &JobSpec,
    plans: Vec<WorkerPlan>,
    checkers: &mut [Checker],
) -> Vec<WorkerResult> {
    // Untimed (no ramp, runtime or rate): the process's clock.
    let clock = SysClock::get();
    let read = |plan: WorkerPlan, ck: &mut Checker| {
        let barrier = Gate::new(1);
        let (stop, prog) = (AtomicBool::new(false), Progress::default());
        run_worker(spec, plan, &barrier, &stop, &prog, ck, clock)
    };
    if plans.len() == 1 {
        plans
            .into_iter()
            .zip(checkers.iter_mut())
            .map(|(p, ck)| read(p, ck))
            .collect()
    } else {
        std::thread::scope(|sc| {
            let handles: Vec<_> = plans
                .into_iter()
                .zip(checkers.iter_mut())
                .map(|(plan, ck)| {
                    let read = &read;
                    sc.spawn(move || read(plan, ck))
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        })
    }
}

/// Count a batch's reads and time into `io`, its failures into `report`.
fn tally_batch(
    results: Vec<WorkerResult>,
    io: &mut VerifyIo,
    report: &mut VerifyReport,
    paths: &[String],
) {
    let mut batch_ns = 0;
    for r in results {
        io.reads.merge(&r.dirs[0]);
        batch_ns = batch_ns.max(r.runtime_ns);
        if let Some(e) = &r.setup_failed {
            report.read_errors += 1;
            report
                .first_read_error
                .get_or_insert(format!("the read-back could not start: {}", e.msg));
        }
        if let Some(e) = r.first_error {
            report.read_errors += r.dirs[0].errors.max(1);
            report.first_read_error.get_or_insert(format!(
                "read of {} bytes at offset {} of {}: {}",
                e.len,
                e.offset,
                paths
                    .get(e.file as usize)
                    .map(String::as_str)
                    .unwrap_or("?"),
                std::io::Error::from_raw_os_error(e.errno)
            ));
        }
    }
    io.runtime_ns += batch_ns;
}

impl<C: Clock> Execution<'_, C> {
    /// Keep what a worker's block hook leaves: the intervals it wrote, or
    /// the blocks it checked.
    pub(super) fn keep_hook_out(&mut self, i: usize, clone: usize, out: HookOut) {
        let paths = paths(&self.jobs[i].resolved.clones[clone]);
        if !out.checked.is_empty() || out.read_errors.0 > 0 {
            let rep = self.jobs[i]
                .verify
                .get_or_insert_with(VerifyReport::default);
            for c in &out.checked {
                rep.add(c, &paths);
            }
            rep.read_errors += out.read_errors.0;
            if let Some(e) = out.read_errors.1 {
                rep.first_read_error.get_or_insert(e);
            }
        }
        if let Some(w) = out.written {
            let slot = &mut self.written[i];
            if slot.len() <= clone {
                slot.resize_with(clone + 1, || None);
            }
            slot[clone] = Some(w);
        }
    }

    /// Read back what job `i`'s verifying writers wrote in the group's last
    /// trial: exactly the blocks of their record, each once, in offset
    /// order (experimental_verify too); with verify_async=N, N threads per
    /// clone. The reads are kept per clone for the report's read direction,
    /// where fio counts them.
    pub(super) fn read_back(&mut self, i: usize, trials: u32) {
        let spec = read_back_spec(&self.jobs[i].resolved.spec);
        let expect = spec.verify_write_sequence.then_some(0);
        if !(spec.do_verify && spec.rw.writes() && !spec.verify_only) {
            return;
        }
        let Some(vs) = verify_spec(&spec, trials as u64) else {
            return;
        };
        let clones = self.jobs[i].resolved.clones.clone();
        let mut report = self.jobs[i].verify.take().unwrap_or_default();
        // Reads as long as the largest write, at most.
        let max_len = spec.max_bs().max(vs.unit as u64);
        let readers = spec.verify_async.max(1) as usize;
        for (c, files) in clones.iter().enumerate() {
            let Some(written) = self.written[i].get_mut(c).and_then(Option::take) else {
                continue;
            };
            let paths = paths(files);
            let generation = expect.map(|_| vs.generation);
            let mut checkers = new_checkers(&spec, &vs, generation, readers, &paths);
            let mut io = VerifyIo::default();
            let mut pieces = written.pieces(max_len);
            loop {
                let ops = next_batch(&mut pieces);
                if ops.is_empty() {
                    break;
                }
                let per = ops.len().div_ceil(readers);
                let plans: Vec<WorkerPlan> = ops
                    .chunks(per)
                    .map(|part| read_back_plan(&spec, files, self.table, part))
                    .collect();
                let results = read_batch(&spec, plans, &mut checkers);
                tally_batch(results, &mut io, &mut report, &paths);
                if checkers.iter().any(|ck| ck.should_stop())
                    || report.read_errors > 0
                    || dioscope_sys::signal::stop_count() > 0
                {
                    break;
                }
            }
            for ck in &checkers {
                report.add(ck, &paths);
            }
            let kept = &mut self.jobs[i].verify_io;
            if kept.len() <= c {
                kept.resize_with(c + 1, VerifyIo::default);
            }
            kept[c] = io;
        }
        self.jobs[i].verify = Some(report);
    }

    /// verify_state_save: the run stopped before a verifying job's
    /// read-back; record which intervals each clone wrote, for a later
    /// `verify_only=1 verify_state_load=1`.
    pub(super) fn save_verify_states(&mut self) {
        for (i, per_clone) in self.written.iter().enumerate() {
            let spec = &self.jobs[i].resolved.spec;
            if !spec.verify_state_save {
                continue;
            }
            for (c, w) in per_clone.iter().enumerate() {
                let Some(written) = w else { continue };
                let path = state_path(spec, c);
                let text = serde_json::to_string(written).unwrap_or_default();
                let written =
                    crate::outfile::check(&path, &crate::outfile::Rules::new("verify_state_save"))
                        .map_err(|e| std::io::Error::other(e.why))
                        .and_then(|o| crate::outfile::write_result(&o, text.as_bytes()));
                match written {
                    Ok(()) => self.notes.push(format!(
                        "job '{}' stopped before its verify read-back: the blocks it wrote are recorded in {} (check them later with verify_only=1 verify_state_load=1)",
                        spec.name,
                        path.display()
                    )),
                    Err(e) => self.notes.push(format!(
                        "verify_state_save: could not write {}: {e}",
                        path.display()
                    )),
                }
            }
        }
    }
}

pub(super) fn load_state(j: &JobSpec, clone: usize) -> Result<Written, String> {
    let path = state_path(j, clone);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "verify_state_load: {}: {e}; it is written when a verifying write job is stopped early (verify_state_save=1)",
            path.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "verify_state_load: {} is not a verify state: {e}",
            path.display()
        )
    })
}
