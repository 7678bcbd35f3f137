//! What a worker writes and how it runs: the contents of its write buffers
//! (zero_buffers, buffer_pattern, scramble_buffers, refill_buffers,
//! buffer_compress_percentage, dedupe_percentage), per-I/O priorities
//! (cmdprio_*), the thread's placement and priority (prio, nice,
//! cpus_allowed_policy, numa_*, lockmem, mem/iomem), exec_prerun/postrun,
//! and the verify plumbing around the worker loop (the block hook, the
//! read-back, verify_backlog, verify_async, experimental_verify,
//! verify_state_save/load).
//!
//! Everything per I/O lives in one [`JobHook`]; a job that asks for none of
//! it runs with `NoHook`, whose calls compile away.

use super::clock::{Clock, SysClock};
use super::execute::Execution;
use super::iolog::{IoLog, Op, OpKind};
use super::offsets::{BsPicker, OffsetGen};
use super::paths::job_err;
use super::result::{FileUse, SetupError};
use super::start::{run_worker, Gate};
use super::worker::{Progress, WorkerPlan, WorkerResult};
use crate::engines::EngineSetupError;
use crate::job::spec::{CpuPolicy, MemKind};
use crate::job::{JobSpec, Plan};
use crate::results::measure::VerifyIo;
use crate::targets::TargetTable;
use crate::verify::backlog::Backlog;
use crate::verify::{Algo, BlockHook, Checker, VerifyReport, VerifySpec, Writer, Written};
use dioscope_sys::buf::{AlignedBuf, BufKind, BufOptions};
use dioscope_sys::queue::SlotArena;
use dioscope_sys::sched;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

// ---------------------------------------------------------------- contents

/// How each write's buffer is prepared.
pub struct Fill {
    /// New contents for every write (`None`: the buffer keeps what it has).
    refill: Option<Refill>,
    /// `scramble_buffers`: stamp every 512 bytes with the offset and a counter.
    scramble: bool,
    rng: u64,
    count: u64,
}

enum Refill {
    /// The pattern at the write's offset (`%o`, or a job that also reads
    /// into the same buffers).
    Pattern(Arc<crate::verify::pattern::Pattern>),
    Zero,
    /// Random bytes; with `compress`, each chunk is this percentage
    /// compressible (zeros or the pattern after the random part); with
    /// `dedupe`, this percentage of writes repeat the last unique one.
    Random {
        compress: Option<(u32, usize)>,
        fixed: Option<Arc<crate::verify::pattern::Pattern>>,
        dedupe: Dedupe,
    },
}

#[inline]
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// splitmix64's finaliser: unrelated streams from neighbouring seeds (a
/// seed taken from one xorshift stream would only shift that stream, which
/// a compressor finds).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fill_random(buf: &mut [u8], seed: u64) {
    let mut x = mix(seed) | 1;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&xorshift(&mut x).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&xorshift(&mut x).to_le_bytes()[..n]);
}

/// dedupe_percentage: which earlier contents a deduplicable write repeats.
/// Contents are generated from a seed, so a buffer is its number: unique
/// write k has `base ^ mix(k)`.
struct Dedupe {
    percentage: u32,
    /// This worker's unique writes.
    base: u64,
    /// The buffers repeated (dedupe_global: one base for every job).
    dup_base: u64,
    uniques: u64,
    /// dedupe_mode=working_set: pick among this many buffers; 0: repeat
    /// the last unique write.
    working_set: u64,
}

impl Dedupe {
    #[inline]
    fn seed(&mut self, rng: &mut u64) -> u64 {
        if self.percentage > 0 && xorshift(rng) % 100 < self.percentage as u64 {
            let k = if self.working_set > 0 {
                let n = if self.dup_base == self.base {
                    self.working_set.min(self.uniques.max(1))
                } else {
                    self.working_set
                };
                xorshift(rng) % n
            } else if self.dup_base == self.base {
                self.uniques.saturating_sub(1)
            } else {
                0
            };
            return self.dup_base ^ mix(k);
        }
        self.uniques += 1;
        self.base ^ mix(self.uniques - 1)
    }
}

impl Fill {
    /// The fill of a writing job without verify, or `None` when its buffers
    /// need no per-write work.
    pub fn of(j: &JobSpec, seed: u64) -> Option<Fill> {
        if !j.rw.writes() || j.verify.is_some() {
            return None;
        }
        let pattern = j.buffer_pattern.clone().map(Arc::new);
        let dedupe = |percentage: u32| {
            let base = mix(seed ^ 0x5eed);
            let working_set = match (j.dedupe_working_set, &j.size) {
                (true, Some(crate::job::units::SizeOrPct::Bytes(b))) => {
                    (b * j.dedupe_working_set_percentage as u64 / 100 / j.bs[1].min().max(1)).max(1)
                }
                _ => 0,
            };
            Dedupe {
                percentage,
                base,
                // Shared buffers: the same numbers in every job.
                dup_base: if j.dedupe_global {
                    0x0dd5_eed5_6a1b_a15e
                } else {
                    base
                },
                uniques: 0,
                working_set,
            }
        };
        let refill =
            if j.buffer_compress_percentage.is_some_and(|p| p > 0) || j.dedupe_percentage > 0 {
                Some(Refill::Random {
                    compress: j
                        .buffer_compress_percentage
                        .filter(|&p| p > 0)
                        .map(|p| (p, j.buffer_compress_chunk as usize)),
                    fixed: pattern,
                    dedupe: dedupe(j.dedupe_percentage),
                })
            } else if let Some(p) = pattern {
                // Reads land in the same buffers: a job that also reads must
                // put its pattern back before each write (fio does the same).
                (p.has_offset() || j.rw.reads() || j.refill_buffers).then_some(Refill::Pattern(p))
            } else if j.zero_buffers {
                (j.rw.reads() || j.refill_buffers).then_some(Refill::Zero)
            } else if j.refill_buffers {
                Some(Refill::Random {
                    compress: None,
                    fixed: None,
                    dedupe: dedupe(0),
                })
            } else {
                None
            };
        // fio: scramble unless asked not to or to zero the buffers, and
        // never on top of contents made for each write.
        let scramble = refill.is_none() && j.scramble_buffers.unwrap_or(!j.zero_buffers);
        (refill.is_some() || scramble).then_some(Fill {
            refill,
            scramble,
            rng: seed | 1,
            count: 0,
        })
    }

    /// What every slot holds before the first write.
    pub fn initial(j: &JobSpec, arena: &mut SlotArena) {
        if !j.rw.writes() {
            return;
        }
        if let Some(p) = &j.buffer_pattern {
            for s in 0..arena.nslots() {
                p.fill(arena.slot_mut(s), 0);
            }
        } else if !j.zero_buffers {
            arena.fill_random(j.randseed ^ 0xD10);
        }
        // zero_buffers: the mapping is zeroed.
    }

    #[inline]
    fn before_write(&mut self, buf: &mut [u8], offset: u64) {
        self.count += 1;
        match &mut self.refill {
            None => {}
            Some(Refill::Pattern(p)) => p.fill(buf, offset),
            Some(Refill::Zero) => buf.fill(0),
            Some(Refill::Random {
                compress,
                fixed,
                dedupe,
            }) => {
                let seed = dedupe.seed(&mut self.rng);
                match compress {
                    None => fill_random(buf, seed),
                    Some((pct, chunk)) => {
                        let chunk = if *chunk == 0 { buf.len() } else { *chunk };
                        for (k, c) in buf.chunks_mut(chunk).enumerate() {
                            // The random head of each chunk, then the
                            // compressible tail.
                            let head = c.len() * (100 - *pct as usize) / 100;
                            fill_random(&mut c[..head], seed ^ mix(k as u64));
                            match fixed {
                                Some(p) => p.fill(&mut c[head..], offset),
                                None => c[head..].fill(0),
                            }
                        }
                    }
                }
            }
        }
        if self.scramble {
            self.scramble(buf, offset);
        }
    }

    /// Overwrite the first 16 bytes of every 512 with the sector's offset
    /// and this write's number, masked with random constants so they look
    /// like the rest (no runs of zeros): no two writes are identical
    /// (deduplication finds nothing), the rest of the data stays as it was,
    /// and the cost is two stores per sector.
    #[inline]
    fn scramble(&self, buf: &mut [u8], offset: u64) {
        let stamp = (self.count ^ mix(self.rng)).to_le_bytes();
        let mask = mix(!self.rng);
        for (i, sector) in buf.chunks_exact_mut(512).enumerate() {
            let off = offset + (i as u64) * 512;
            sector[..8].copy_from_slice(&(off ^ mask).to_le_bytes());
            sector[8..16].copy_from_slice(&stamp);
        }
    }
}

// ---------------------------------------------------------------- priorities

/// Chooses each I/O's priority (cmdprio_percentage / cmdprio_bssplit).
pub struct PrioPicker {
    /// Per direction: (block size or 0 for any, percentage, ioprio value).
    rules: [Vec<(u64, u32, u16)>; 2],
    rng: u64,
}

impl PrioPicker {
    pub fn of(j: &JobSpec, seed: u64) -> Option<PrioPicker> {
        let c = &j.cmdprio;
        if !c.active() {
            return None;
        }
        let rules = [0, 1].map(|d| {
            let class = c.class[d].unwrap_or(sched::IOPRIO_CLASS_RT);
            if c.bssplit[d].is_empty() {
                vec![(0, c.percentage[d], sched::ioprio_value(class, c.level[d]))]
            } else {
                c.bssplit[d]
                    .iter()
                    .map(|&(bs, pct, cl, lv)| {
                        (
                            bs,
                            pct,
                            sched::ioprio_value(cl.unwrap_or(class), lv.unwrap_or(c.level[d])),
                        )
                    })
                    .collect()
            }
        });
        Some(PrioPicker {
            rules,
            rng: seed | 1,
        })
    }

    /// Entries of one block size share its I/Os: `64k/25/1/1:64k/75/3/2`
    /// gives a quarter of the 64 KiB I/Os one priority, the rest another.
    #[inline]
    fn pick(&mut self, write: bool, len: u64) -> u16 {
        let roll = xorshift(&mut self.rng) % 100;
        let mut below = 0;
        for &(bs, pct, value) in &self.rules[write as usize] {
            if bs == 0 || bs == len {
                below += pct as u64;
                if roll < below {
                    return value;
                }
            }
        }
        0
    }
}

// ---------------------------------------------------------------- the hook

/// The per-block work of one worker: contents, verify stamping and
/// checking, the backlog, priorities.
#[derive(Default)]
pub struct JobHook {
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
pub fn verify_spec(j: &JobSpec, generation: u64) -> Option<VerifySpec> {
    let algo = Algo::parse(j.verify.as_deref()?)?;
    let interval = j.verify_interval_used();
    let mut s = VerifySpec::new(algo, interval as u32, j.randseed, generation);
    s.pattern = j.verify_pattern.clone().map(Arc::new);
    s.header_at = j.verify_offset as u32;
    s.check_seed = j.verify_header_seed;
    Some(s)
}

/// A sequential read over `regions`, in blocks that are whole multiples of
/// the verify interval.
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
                plan = verify_read_plan(j, files, table, &regions, vs.interval as u64);
            }
            let written = j
                .verify_state_load
                .then(|| load_state(j, clone as usize).ok())
                .flatten();
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
            hook.writer = Some(Writer::new(vs.clone(), Written::new(&regions, vs.interval)));
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
        // The read-back is no run of the job: no exec_prerun/postrun.
        let mut spec = JobSpec {
            exec_prerun: None,
            exec_postrun: None,
            ..self.jobs[i].resolved.spec.clone()
        };
        if spec.verify_async > 0 {
            if let Some(c) = &spec.verify_async_cpus {
                spec.cpus_allowed = Some(c.clone());
            }
        }
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
        let max_len = spec.max_bs().max(vs.interval as u64);
        let readers = spec.verify_async.max(1) as usize;
        for (c, files) in clones.iter().enumerate() {
            let Some(written) = self.written[i].get_mut(c).and_then(Option::take) else {
                continue;
            };
            let paths = paths(files);
            let generation = expect.map(|_| vs.generation);
            let mut checkers: Vec<Checker> = (0..readers)
                .map(|_| {
                    let ck = Checker::new(vs.clone(), None, generation, spec.verify_fatal);
                    if spec.verify_dump {
                        ck.dump_to(PathBuf::from("."), paths.clone())
                    } else {
                        ck
                    }
                })
                .collect();
            let mut io = VerifyIo::default();
            let mut pieces = written.pieces(max_len);
            loop {
                // The record is read in batches: the list of reads of one
                // batch is all the read-back holds at once.
                let ops: Vec<Op> = pieces
                    .by_ref()
                    .take(READ_BACK_BATCH)
                    .map(|(file, offset, len)| Op {
                        at_ns: 0,
                        file,
                        kind: OpKind::Read,
                        offset,
                        len,
                    })
                    .collect();
                if ops.is_empty() {
                    break;
                }
                let per = ops.len().div_ceil(readers);
                let plans: Vec<WorkerPlan> = ops
                    .chunks(per)
                    .map(|part| read_back_plan(&spec, files, self.table, part))
                    .collect();
                // Untimed (no ramp, runtime or rate): the process's clock.
                let clock = SysClock::get();
                let read = |plan: WorkerPlan, ck: &mut Checker| {
                    let barrier = Gate::new(1);
                    let (stop, prog) = (AtomicBool::new(false), Progress::default());
                    run_worker(&spec, plan, &barrier, &stop, &prog, ck, clock)
                };
                // One reader runs on this thread; verify_async=N on N threads.
                let results: Vec<WorkerResult> = if plans.len() == 1 {
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
                };
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

fn load_state(j: &JobSpec, clone: usize) -> Result<Written, String> {
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

// ---------------------------------------------------------------- the thread

/// Set-up checks that need the system: NUMA nodes, saved verify states.
pub(super) fn preflight(plan: &Plan) -> Result<(), SetupError> {
    for j in &plan.jobs {
        let wanted = j.numa_cpu_nodes.iter().flatten().chain(
            j.numa_mem_policy
                .iter()
                .flat_map(|m| m.nodes.iter().flatten()),
        );
        let online = online_nodes();
        for &n in wanted {
            if !online.contains(&n) {
                return Err(job_err(
                    j,
                    format!(
                        "NUMA node {n} does not exist here (online nodes: {}); use one of those",
                        online
                            .iter()
                            .map(|n| n.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                ));
            }
        }
        if j.verify_only && j.verify_state_load {
            for c in 0..j.numjobs as usize {
                load_state(j, c).map_err(|e| job_err(j, e))?;
            }
        }
    }
    Ok(())
}

fn online_nodes() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|s| crate::job::units::parse_cpu_list(&s).ok())
        .unwrap_or_else(|| vec![0])
}

fn node_cpus(nodes: &[usize]) -> Vec<usize> {
    let nodes = if nodes.is_empty() {
        online_nodes()
    } else {
        nodes.to_vec()
    };
    let mut cpus: Vec<usize> = nodes
        .iter()
        .filter_map(|n| {
            std::fs::read_to_string(format!("/sys/devices/system/node/node{n}/cpulist")).ok()
        })
        .filter_map(|s| crate::job::units::parse_cpu_list(s.trim()).ok())
        .flatten()
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The job as worker number `index` (over every job's clones) runs it: its
/// CPU set resolved (numa_cpu_nodes, cpus_allowed_policy=split).
pub(super) fn placed(j: &JobSpec, index: usize) -> JobSpec {
    let mut j = j.clone();
    if !j.gtod_cpus.is_empty() {
        // fio's gtod_cpu: that CPU leaves every job's set.
        let base = j.cpus_allowed.take().unwrap_or_else(allowed_cpus);
        j.cpus_allowed = Some(
            base.into_iter()
                .filter(|c| !j.gtod_cpus.contains(c))
                .collect(),
        );
    }
    if let Some(nodes) = &j.numa_cpu_nodes {
        let cpus = node_cpus(nodes);
        j.cpus_allowed = Some(match j.cpus_allowed.take() {
            Some(a) => a.into_iter().filter(|c| cpus.contains(c)).collect(),
            None => cpus,
        });
    }
    if j.cpus_allowed_policy == CpuPolicy::Split {
        if let Some(cpus) = &j.cpus_allowed {
            if !cpus.is_empty() {
                j.cpus_allowed = Some(vec![cpus[index % cpus.len()]]);
            }
        }
    }
    j
}

/// The CPUs this process may run on (`taskset`), from /proc/self/status.
fn allowed_cpus() -> Vec<usize> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(|v| crate::job::units::parse_cpu_list(v.trim()).ok())
        })
        .unwrap_or_else(|| (0..dioscope_sys::proc::ncpus()).collect())
}

/// What a worker thread holds while it runs: pinned memory (lockmem).
pub(super) struct ThreadSetup {
    _locked: Option<AlignedBuf>,
}

/// Apply the job's thread settings on the calling (worker) thread, before
/// its buffers are allocated (the memory policy applies to them).
pub(super) fn setup_thread(j: &JobSpec) -> Result<ThreadSetup, EngineSetupError> {
    if j.cpus_allowed.as_ref().is_some_and(|c| c.is_empty()) && !j.gtod_cpus.is_empty() {
        return Err(EngineSetupError::new(
            &format!("pinning away from gtod_cpu={:?}", j.gtod_cpus),
            &std::io::Error::from_raw_os_error(libc::EINVAL),
            "gtod_cpu takes the only CPU this job may use: choose another gtod_cpu or widen cpus_allowed",
        ));
    }
    if let Some(cpus) = &j.cpus_allowed {
        dioscope_sys::proc::set_affinity(cpus).map_err(|e| {
            EngineSetupError::new(
                &format!("pinning to CPUs {cpus:?} (cpus_allowed/cpumask/numa_cpu_nodes)"),
                &e,
                "choose CPUs this process may use (see `taskset -p $$`)",
            )
        })?;
    }
    if let Some(m) = &j.numa_mem_policy {
        let nodes = match &m.nodes {
            Some(n) => n.clone(),
            None => online_nodes(),
        };
        sched::set_mempolicy(m.mode, &nodes).map_err(|e| {
            EngineSetupError::new(
                "set_mempolicy (numa_mem_policy)",
                &e,
                "use nodes listed in /sys/devices/system/node/online, or a kernel with NUMA support",
            )
        })?;
    }
    if j.prio.is_some() || j.prioclass.is_some() {
        let class = j.prioclass.unwrap_or(sched::IOPRIO_CLASS_BE);
        // A level given alone is best-effort; a class alone takes the
        // middle level (idle has none).
        let level = j.prio.unwrap_or(if class == sched::IOPRIO_CLASS_IDLE {
            0
        } else {
            4
        });
        sched::set_thread_ioprio(sched::ioprio_value(class, level)).map_err(|e| {
            EngineSetupError::new(
                &format!("ioprio_set(class {class}, level {level}) (prio/prioclass)"),
                &e,
                "the real-time class needs root (CAP_SYS_ADMIN); use prioclass=2 (best-effort)",
            )
        })?;
    }
    if j.nice != 0 {
        sched::set_thread_nice(j.nice).map_err(|e| {
            EngineSetupError::new(
                &format!("setpriority(nice {})", j.nice),
                &e,
                "a negative nice value needs root (CAP_SYS_NICE); use 0..19",
            )
        })?;
    }
    let locked = if j.lockmem > 0 {
        let limit = sched::memlock_limit();
        let b = AlignedBuf::new(j.lockmem as usize)
            .and_then(|b| b.lock().map(|()| b))
            .map_err(|e| {
                EngineSetupError::new(
                    &format!("mlock of lockmem={} bytes", j.lockmem),
                    &e,
                    &format!(
                        "the locked-memory limit (`ulimit -l`) is {}; raise it (ulimit -l unlimited, or LimitMEMLOCK= in a service) or lower lockmem",
                        if limit == u64::MAX { "unlimited".to_string() } else { format!("{limit} bytes") }
                    ),
                )
            })?;
        Some(b)
    } else {
        None
    };
    Ok(ThreadSetup { _locked: locked })
}

/// The worker's slot buffers in the memory `mem=`/`iomem=` asks for, filled
/// as the job's first writes expect.
pub(super) fn arena(j: &JobSpec, depth: u32, slot_len: u64) -> Result<SlotArena, EngineSetupError> {
    let kind = match &j.iomem {
        MemKind::Malloc | MemKind::Mmap(None) => BufKind::Anonymous,
        MemKind::Mmap(Some(p)) | MemKind::MmapHuge(Some(p)) => BufKind::File(PathBuf::from(p)),
        MemKind::MmapHuge(None) => BufKind::Huge,
        MemKind::MmapShared => BufKind::Shared,
        MemKind::Shm => BufKind::Shm { huge: false },
        MemKind::ShmHuge => BufKind::Shm { huge: true },
    };
    let huge = matches!(j.iomem, MemKind::ShmHuge | MemKind::MmapHuge(_));
    let opts = BufOptions {
        kind,
        align: j.iomem_align as usize,
    };
    let mut arena = SlotArena::new_in(depth, slot_len as usize, &opts).map_err(|e| {
        EngineSetupError::new(
            &format!("allocating {depth} buffers of {slot_len} bytes ({:?})", j.iomem),
            &e,
            if huge {
                "huge pages must be reserved first: echo N > /proc/sys/vm/nr_hugepages (and mount hugetlbfs for mmaphuge:FILE)"
            } else {
                "lower iodepth, bs or numjobs, or raise the memory limit (`ulimit -v`)"
            },
        )
    })?;
    Fill::initial(j, &mut arena);
    Ok(arena)
}

/// exec_prerun / exec_postrun: the command through `sh -c`, its output in
/// `JOB.prerun.txt` / `JOB.postrun.txt` (fio's names).
pub(super) fn exec_hook(j: &JobSpec, what: &str) -> Result<(), EngineSetupError> {
    let cmd = match what {
        "prerun" => &j.exec_prerun,
        _ => &j.exec_postrun,
    };
    let Some(cmd) = cmd else { return Ok(()) };
    let out = crate::job::created::exec_output(j, what);
    let fail = |msg: String| EngineSetupError {
        errno: libc::EIO,
        msg,
    };
    let opt = if what == "prerun" {
        "exec_prerun"
    } else {
        "exec_postrun"
    };
    let file = crate::outfile::open(
        &out,
        crate::outfile::Mode::Truncate,
        &crate::outfile::Rules::new(opt),
    )
    .map_err(|e| {
        fail(format!(
            "exec_{what}: creating {} failed: {}",
            out.display(),
            e.why
        ))
    })?;
    let err = file
        .try_clone()
        .map_err(|e| fail(format!("exec_{what}: {e}")))?;
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdout(file)
        .stderr(err)
        .status()
        .map_err(|e| fail(format!("exec_{what}: running /bin/sh failed: {e}")))?;
    if !status.success() {
        return Err(fail(format!(
            "exec_{what} '{cmd}' failed ({status}); its output is in {}",
            out.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::RwMode;
    use std::collections::HashSet;

    fn writer_job() -> JobSpec {
        JobSpec {
            rw: RwMode::Write,
            ..JobSpec::default()
        }
    }

    #[test]
    fn scramble_is_fio_default_and_off_for_zero_buffers() {
        let j = writer_job();
        let mut f = Fill::of(&j, 1).expect("scramble by default");
        assert!(f.scramble && f.refill.is_none());
        let mut a = vec![7u8; 4096];
        let mut b = vec![7u8; 4096];
        f.before_write(&mut a, 0);
        f.before_write(&mut b, 0);
        assert_ne!(a, b, "two writes of one buffer differ");
        let changed = a.iter().filter(|&&x| x != 7).count();
        assert!(changed <= 8 * 16, "a light touch: {changed} bytes");
        let z = JobSpec {
            zero_buffers: true,
            ..writer_job()
        };
        assert!(Fill::of(&z, 1).is_none(), "zero_buffers: no per-write work");
        let zs = JobSpec {
            zero_buffers: true,
            scramble_buffers: Some(true),
            ..writer_job()
        };
        assert!(Fill::of(&zs, 1).unwrap().scramble);
        let reads = JobSpec {
            rw: RwMode::Read,
            ..JobSpec::default()
        };
        assert!(Fill::of(&reads, 1).is_none());
    }

    #[test]
    fn compress_and_dedupe_fill() {
        let j = JobSpec {
            buffer_compress_percentage: Some(75),
            buffer_compress_chunk: 1024,
            ..writer_job()
        };
        let mut f = Fill::of(&j, 3).unwrap();
        let mut b = vec![1u8; 8192];
        f.before_write(&mut b, 0);
        for c in b.chunks(1024) {
            assert!(c[256..].iter().all(|&x| x == 0), "tail zero");
            assert!(
                c[..256].iter().filter(|&&x| x == 0).count() < 16,
                "head random"
            );
        }
        let d = JobSpec {
            dedupe_percentage: 50,
            ..writer_job()
        };
        let mut f = Fill::of(&d, 3).unwrap();
        let mut seen = HashSet::new();
        for _ in 0..1000 {
            let mut b = vec![0u8; 512];
            f.before_write(&mut b, 0);
            seen.insert(b);
        }
        assert!(
            (400..600).contains(&seen.len()),
            "{} unique of 1000",
            seen.len()
        );
    }

    #[test]
    fn dedupe_working_set_and_global_share_buffers() {
        let one = |seed: u64, global: bool| {
            let j = JobSpec {
                dedupe_percentage: 50,
                dedupe_working_set: true,
                dedupe_working_set_percentage: 10,
                dedupe_global: global,
                size: Some(crate::job::units::SizeOrPct::Bytes(400 * 4096)),
                ..writer_job()
            };
            let mut f = Fill::of(&j, seed).unwrap();
            (0..2000)
                .map(|_| {
                    let mut b = vec![0u8; 64];
                    f.before_write(&mut b, 0);
                    b
                })
                .collect::<Vec<_>>()
        };
        // 10 % of 400 blocks: repeats come from 40 buffers.
        let a = one(1, false);
        let mut count = std::collections::HashMap::new();
        for b in &a {
            *count.entry(b.clone()).or_insert(0) += 1;
        }
        let repeated = count.values().filter(|&&n| n > 1).count();
        assert!((30..=40).contains(&repeated), "{repeated} buffers repeated");
        // Two jobs: their repeats are the same buffers only with dedupe_global.
        let shared = |x: &[Vec<u8>], y: &[Vec<u8>]| {
            let xs: HashSet<&Vec<u8>> = x.iter().collect();
            y.iter().filter(|b| xs.contains(b)).count()
        };
        assert_eq!(shared(&one(1, false), &one(2, false)), 0);
        assert!(shared(&one(1, true), &one(2, true)) > 500);
    }

    #[test]
    fn cmdprio_picks_the_share_asked() {
        let mut j = writer_job();
        j.cmdprio.percentage = [0, 30];
        j.cmdprio.level = [0, 5];
        let mut p = PrioPicker::of(&j, 9).unwrap();
        assert!((0..100).all(|_| p.pick(false, 4096) == 0));
        let hi = (0..10_000).filter(|_| p.pick(true, 4096) != 0).count();
        assert!((2700..3300).contains(&hi), "{hi}");
        assert_eq!(
            (0..100).map(|_| p.pick(true, 4096)).max(),
            Some(sched::ioprio_value(1, 5))
        );
        j.cmdprio.bssplit = [vec![], vec![(8192, 100, Some(2), Some(1))]];
        let mut p = PrioPicker::of(&j, 9).unwrap();
        assert_eq!(p.pick(true, 8192), sched::ioprio_value(2, 1));
        assert_eq!(
            p.pick(true, 4096),
            0,
            "sizes not listed keep the thread's priority"
        );
    }
}
