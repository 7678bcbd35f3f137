//! One worker: a thread, its engine, its slots, its statistics.
//!
//! The loop stages I/Os into free slots, commits them, and accounts the
//! completions. Per I/O it allocates nothing, takes no lock and writes no
//! memory another worker writes. The clock is read twice per batch (before
//! committing and after the commit returns), not per I/O; the reading after
//! one commit is also the staging time of the next batch. Every I/O of a
//! batch shares those stamps, so its submission latency is `commit - stage`,
//! its completion latency `reaped - commit`, and its total latency the sum —
//! exact to within the time spent staging a batch (well under a
//! microsecond). With `disable_slat` and `disable_clat` the stamp before the
//! commit is not taken (one reading per batch); with `gtod_reduce` the one
//! after it is taken only every few batches.
//!
//! The loop and its per-I/O steps (stage, commit, reap, account) are here;
//! `plan.rs` is what a worker does (built before it starts), `setup.rs`
//! its state built from the plan, `timeline.rs` its ramp, intervals and
//! end, `pace.rs` its waits with nothing in flight, `result.rs` what it
//! reports. Time comes from a `Clock` type parameter
//! (runner/clock.rs), monomorphised like the engine and the hook.

pub mod delivery;
mod pace;
mod plan;
mod result;
mod setup;
mod timeline;

use super::clock::{Clock, SysClock};
use super::iolog::{IologWriter, OpKind};
use super::pacing::{PaceEvent, Pacer};
use crate::engines::{Completion, Engine, IoDesc};
pub use crate::verify::{BlockHook, NoHook};
use dioscope_sys::clock::now_ns;
pub(crate) use plan::engine_opts;
use plan::LatStats;
pub use plan::{TrimMode, WorkerPlan};
use result::{batch_bucket, depth_bucket};
pub use result::{ignores, Progress, WorkerResult};
use result::{is_full, record_error};
use std::sync::atomic::{AtomicBool, Ordering};
use timeline::Timeline;

use super::logs::{LogSink, Rec};
pub use crate::results::measure::{merge_ticks, DirStats, IoErrorInfo, QueueStats, Tick};

/// Trim `len` bytes at `offset` of `fd`: the time it took, or the errno.
#[cold]
#[inline(never)]
fn do_trim(fd: i32, is_dev: bool, offset: u64, len: u64) -> Result<u64, i32> {
    let t0 = now_ns();
    let r = if is_dev {
        dioscope_sys::block::discard(fd, offset, len)
    } else {
        dioscope_sys::fs::punch_hole(fd, offset, len)
    };
    match r {
        Ok(()) => Ok(now_ns() - t0),
        Err(e) => Err(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}

/// `gtod_reduce`'s next reading interval, in batches, after readings `gap`
/// ns apart: doubled under 1 µs, halved over 10 µs, within 1..=4096.
fn adapt_every(every: u32, gap: u64) -> u32 {
    if gap < 1_000 {
        (every * 2).min(4096)
    } else if gap > 10_000 {
        (every / 2).max(1)
    } else {
        every
    }
}

/// The latencies a job measures when some are off (disable_slat/clat/lat).
#[inline(never)]
fn record_some(st: &mut DirStats, on: LatStats, m: &SlotMeta, now: u64) {
    if on.slat {
        st.slat.record(m.commit_ns - m.stage_ns);
    }
    if on.clat {
        st.clat.record(now - m.commit_ns);
    }
    if on.lat {
        st.lat.record(now - m.stage_ns);
    }
}

#[cold]
#[inline(never)]
fn do_sync(fd: i32, data_only: bool, st: &mut DirStats) {
    let t0 = now_ns();
    let r = if fd < 0 {
        // The null engine's sync: nothing to do, timed as fio's null
        // engine times its syncs.
        Ok(())
    } else if data_only {
        dioscope_sys::io::fdatasync(fd)
    } else {
        dioscope_sys::io::fsync(fd)
    };
    let dt = now_ns() - t0;
    match r {
        Ok(()) => {
            st.ios += 1;
            st.lat.record(dt);
            st.clat.record(dt);
        }
        Err(_) => st.errors += 1,
    }
}

/// Run one worker to the end of its timeline. `start_ns` is the common start
/// (all workers of a group share it); `stop` is raised by the runner.
pub fn run<E: Engine>(
    eng: &mut E,
    p: WorkerPlan,
    start_ns: u64,
    stop: &AtomicBool,
    prog: &Progress,
) -> WorkerResult {
    run_with_hook(eng, p, start_ns, stop, prog, &mut NoHook)
}

/// [`run`] with a [`BlockHook`].
pub fn run_with_hook<E: Engine, H: BlockHook>(
    eng: &mut E,
    p: WorkerPlan,
    start_ns: u64,
    stop: &AtomicBool,
    prog: &Progress,
    hook: &mut H,
) -> WorkerResult {
    run_clocked(eng, p, start_ns, stop, prog, hook, SysClock::get())
}

/// [`run_with_hook`] on `clock` (runner/clock.rs): the loop is
/// monomorphised per clock, as per engine and hook.
pub fn run_clocked<E: Engine, H: BlockHook, C: Clock>(
    eng: &mut E,
    p: WorkerPlan,
    start_ns: u64,
    stop: &AtomicBool,
    prog: &Progress,
    hook: &mut H,
    clock: C,
) -> WorkerResult {
    let mut w = Worker::new(eng, hook, p, start_ns, stop, prog, clock);
    w.check_stop();
    loop {
        if H::ACTIVE && w.issuing && w.hook.should_stop() {
            w.issuing = false;
        }
        if E::CAN_END && w.eng.ended() {
            w.issuing = false;
        }
        w.stage_batch();
        if w.inflight == 0 {
            if !w.issuing {
                break;
            }
            if w.replay_due > w.now {
                w.sleep_for_replay();
                continue;
            }
            if w.pace.active {
                w.pace_wait();
                w.advance_timeline();
                continue;
            }
        }
        if w.commit().is_err() {
            break;
        }
        w.reap_and_account();
        w.maybe_sync();
        w.advance_timeline();
        if w.pace.checks {
            w.pace_tick();
        }
    }
    w.finish()
}

/// What the worker remembers of each slot while its I/O is in flight.
#[derive(Clone, Copy)]
struct SlotMeta {
    stage_ns: u64,
    commit_ns: u64,
    offset: u64,
    len: u32,
    file: u32,
    write: bool,
    /// The ioprio value it was issued with (cmdprio_*; 0: the thread's).
    prio: u16,
}

/// The slots of one worker: what each in-flight I/O is, which are idle, which
/// were staged in this batch, and room for one reap.
struct Slots {
    meta: Vec<SlotMeta>,
    free: Vec<u32>,
    staged: Vec<u32>,
    comps: Vec<Completion>,
}

impl Slots {
    fn new(depth: usize) -> Slots {
        Slots {
            meta: (0..depth)
                .map(|_| SlotMeta {
                    stage_ns: 0,
                    commit_ns: 0,
                    offset: 0,
                    len: 0,
                    file: 0,
                    write: false,
                    prio: 0,
                })
                .collect(),
            free: (0..depth as u32).rev().collect(),
            staged: Vec::with_capacity(depth),
            comps: vec![Completion::default(); depth],
        }
    }
}

/// I/Os staged in one batch share their staging and commit stamps, and the
/// I/Os of one reap share the reaping stamp: where those agree, so do all
/// three latencies. A reap of several completions records each such run
/// once with its count (`Histogram::record_n`) instead of once per I/O: the
/// same values in the same buckets, with fewer histogram lines touched per
/// I/O after each wake-up (B2 reaps ~7 I/Os a turn, mostly whole batches).
#[derive(Debug, Clone, Copy, Default)]
struct LatRun {
    stage_ns: u64,
    commit_ns: u64,
    /// I/Os in the run (0: none pending).
    n: u64,
    write: bool,
}

impl LatRun {
    /// Add one completed I/O reaped at `now`. A run whose stamps match
    /// continues even after a flush left it empty: that is a new run.
    #[inline(always)]
    fn add(&mut self, dirs: &mut [DirStats; 2], m: &SlotMeta, now: u64) {
        if self.commit_ns == m.commit_ns && self.stage_ns == m.stage_ns && self.write == m.write {
            self.n += 1;
            return;
        }
        self.flush(dirs, now);
        *self = LatRun {
            stage_ns: m.stage_ns,
            commit_ns: m.commit_ns,
            n: 1,
            write: m.write,
        };
    }

    /// Record the pending run (reaped at `now`) and empty it.
    #[inline(never)]
    fn flush(&mut self, dirs: &mut [DirStats; 2], now: u64) {
        if self.n == 0 {
            return;
        }
        let st = &mut dirs[self.write as usize];
        st.slat.record_n(self.commit_ns - self.stage_ns, self.n);
        st.clat.record_n(now - self.commit_ns, self.n);
        st.lat.record_n(now - self.stage_ns, self.n);
        self.n = 0;
    }
}

/// `gtod_reduce`: the clock is read every `every` batches, adapting so that
/// readings stay about 1–10 µs apart: rare on a fast loop, every batch on a
/// slow device (where a reading costs nothing beside the I/O).
struct ClockThrottle {
    on: bool,
    every: u32,
    left: u32,
}

/// The state of one running worker. Its steps are separate methods, inlined
/// into the one loop of [`run_with_hook`], which stays monomorphised per
/// engine and hook.
struct Worker<'a, E: Engine, H: BlockHook, C: Clock> {
    eng: &'a mut E,
    hook: &'a mut H,
    p: WorkerPlan,
    stop: &'a AtomicBool,
    prog: &'a Progress,
    res: WorkerResult,
    slots: Slots,
    depth: usize,
    batch: usize,
    complete_min: u32,
    /// Completions reaped at most at once.
    reap_max: usize,
    tl: Timeline,
    pace: Pacer,
    inflight: usize,
    issuing: bool,
    measured_bytes: u64,
    /// Bytes issued while measuring: the size limit stops issuing, not
    /// reaping, so a deep queue does not overshoot `size`.
    issued_bytes: u64,
    /// I/Os issued while measuring (`number_ios`).
    issued_ios: u64,
    writes_since_sync: u32,
    last_write_fd: i32,
    now: u64,
    log: Option<LogSink>,
    /// All three latencies on (the usual case: one test per I/O).
    lat_all: bool,
    /// The reap's pending run of equal latencies (all three on).
    run: LatRun,
    /// Whether the batch needs its commit time (slat or clat measured).
    stamp_commit: bool,
    /// No replay, trims, pacing, overlap serialization or iolog: staging
    /// skips their checks (decided once here, not per I/O).
    plain_stage: bool,
    clock: ClockThrottle,
    /// The clock of the two readings per batch.
    clk: C,
    /// serialize_overlap: an I/O (write, len, file, offset) waiting for
    /// an overlapping one to complete.
    deferred: Option<(bool, u64, u32, u64)>,
    /// read_iolog: the next I/O of the log, and when it is due (0: now).
    replay_idx: usize,
    replay_due: u64,
    /// write_iolog's recorder.
    iolog: Option<IologWriter>,
    /// iodepth_mode=stepped: the stats of the kept runs (runner/stepped.rs).
    steps: Option<Box<super::stepped::StepKeep>>,
}

impl<'a, E: Engine, H: BlockHook, C: Clock> Worker<'a, E, H, C> {
    /// Stop issuing on the runner's stop flag, a signal, or the watcher's
    /// halt. Checked at timeline events (at least every 250 µs while
    /// measuring, every turn during the ramp) and in the loop's sleeps, not
    /// every turn: the three flags are three cache lines of other threads
    /// and statics, re-read after every wake-up for a stop that comes once.
    #[inline(never)]
    fn check_stop(&mut self) {
        if self.issuing
            && (self.stop.load(Ordering::Relaxed) || dioscope_sys::signal::stop_count() > 0)
        {
            self.issuing = false;
            self.res.interrupted = true;
        }
        if self.issuing && self.prog.halt.load(Ordering::Relaxed) {
            self.issuing = false;
        }
    }

    /// Stage I/Os into free slots, up to the batch size, the queue depth,
    /// the size limit and the rate.
    #[inline(always)]
    fn stage_batch(&mut self) {
        let t_stage = self.now;
        self.slots.staged.clear();
        if self.plain_stage {
            self.stage_plain(t_stage);
            return;
        }
        let mut trims = 0;
        if self.p.replay.is_some() {
            self.stage_replay(t_stage);
            return;
        }
        if let Some((write, len, file, offset)) = self.deferred {
            // serialize_overlap: the I/O held back waits until nothing it
            // overlaps is in flight.
            if !self.issuing || self.overlaps(file, offset, len) {
                return;
            }
            self.deferred = None;
            self.stage_at(t_stage, write, len, file, offset);
        }
        while self.issuing && self.inflight < self.depth && self.slots.staged.len() < self.batch {
            let write = match self.p.read_pct {
                100 => false,
                0 => true,
                pct => self.p.offsets.rng.below(100) >= pct as u64,
            };
            let write = if self.pace.active {
                match self
                    .pace
                    .admit(write, t_stage, self.inflight, self.tl.measuring)
                {
                    Some(w) => w,
                    None => break,
                }
            } else {
                write
            };
            if self.p.trim == TrimMode::Only {
                let len = self.p.bs_trim.pick(&mut self.p.offsets.rng);
                if !self.within_size(len) {
                    break;
                }
                let (file, offset, cut) = self.p.offsets.next_dir(len, true);
                self.uncount(len - cut);
                self.trim(file, offset, cut);
                // The trims of a batch count against it like staged I/Os.
                trims += 1;
                if trims >= self.batch {
                    break;
                }
                continue;
            }
            let len = self.p.bs[write as usize].pick(&mut self.p.offsets.rng);
            if !self.within_size(len) {
                break;
            }
            let len = self.stage_one(t_stage, write, len);
            if self.pace.active {
                self.pace.issued(write, len);
            }
            if self.deferred.is_some() {
                break;
            }
        }
    }

    /// [`stage_batch`](Self::stage_batch) for the plain job: the room in
    /// the queue is known before the loop, and nothing in it can defer,
    /// trim or pace an I/O.
    #[inline(always)]
    fn stage_plain(&mut self, t_stage: u64) {
        if !self.issuing {
            return;
        }
        let room = (self.depth - self.inflight).min(self.batch);
        for _ in 0..room {
            let write = match self.p.read_pct {
                100 => false,
                0 => true,
                pct => self.p.offsets.rng.below(100) >= pct as u64,
            };
            let len = self.p.bs[write as usize].pick(&mut self.p.offsets.rng);
            if !self.within_size(len) {
                break;
            }
            let (file, offset, cut) = self.p.offsets.next_dir(len, write);
            self.uncount(len - cut);
            self.put(t_stage, write, cut, file, offset);
        }
    }

    /// `read_iolog`: stage the log's next I/Os, each at its recorded time
    /// unless `replay_no_stall`; trims and syncs are done on the spot.
    #[cold]
    #[inline(never)]
    fn stage_replay(&mut self, t_stage: u64) {
        let Some(log) = self.p.replay.clone() else {
            return;
        };
        self.replay_due = 0;
        while self.issuing && self.inflight < self.depth && self.slots.staged.len() < self.batch {
            let Some(op) = log.ops.get(self.replay_idx).copied() else {
                self.issuing = false;
                break;
            };
            if self.p.replay_timed {
                let due = self.tl.start + op.at_ns;
                if due > self.now {
                    self.replay_due = due;
                    break;
                }
            }
            self.replay_idx += 1;
            match op.kind {
                OpKind::Read | OpKind::Write => {
                    if !self.within_size(op.len) {
                        break;
                    }
                    self.stage_at(
                        t_stage,
                        op.kind == OpKind::Write,
                        op.len,
                        op.file,
                        op.offset,
                    );
                }
                OpKind::Trim => {
                    if !self.within_size(op.len) {
                        break;
                    }
                    self.trim(op.file, op.offset, op.len);
                }
                OpKind::Sync | OpKind::Datasync => {
                    if let Some(&fd) = self.p.fds.get(op.file as usize) {
                        do_sync(fd, op.kind == OpKind::Datasync, &mut self.res.sync);
                    }
                }
            }
        }
    }

    /// One trim, synchronously: accounted in the trim direction.
    #[cold]
    #[inline(never)]
    fn trim(&mut self, file: u32, offset: u64, len: u64) {
        let fd = self.p.fds.get(file as usize).copied().unwrap_or(-1);
        let is_dev = self
            .p
            .trim_is_dev
            .get(file as usize)
            .copied()
            .unwrap_or(false);
        if let Some(w) = &mut self.iolog {
            w.io(self.now, file, OpKind::Trim, offset, len);
        }
        let done = if fd < 0 {
            // No target (the null engine): the trim completes at once and
            // is counted, as fio's null engine counts it.
            Ok(0)
        } else {
            do_trim(fd, is_dev, offset, len)
        };
        match done {
            Ok(dt) => {
                if H::ACTIVE {
                    self.hook.after_trim(file, offset, len);
                }
                let st = &mut self.res.trim;
                st.ios += 1;
                st.bytes += len;
                let on = self.p.lat;
                if on.slat {
                    st.slat.record(0);
                }
                if on.clat {
                    st.clat.record(dt);
                }
                if on.lat {
                    st.lat.record(dt);
                }
                if self.tl.measuring {
                    self.measured_bytes += len;
                    if let Some(l) = &mut self.log {
                        // fio's per-I/O logs have the trims, direction 2.
                        l.push(Rec {
                            t_ns: self.now - self.tl.start,
                            offset,
                            slat_ns: 0,
                            clat_ns: dt.min(u32::MAX as u64) as u32,
                            len: len.min(u32::MAX as u64) as u32,
                            write: true,
                            trim: true,
                        });
                    }
                }
            }
            Err(errno) if ignores(&self.p.ignore[1], errno) => self.res.ignored(errno),
            Err(errno) => {
                self.res.trim.errors += 1;
                if self.res.first_error.is_none() {
                    self.res.first_error = Some(IoErrorInfo {
                        file,
                        offset,
                        len: len as u32,
                        write: true,
                        errno,
                    });
                }
                self.after_error(true, errno);
            }
        }
        self.now = self.clk.now();
    }

    /// Count `len` against the size limit; false (and stop issuing) when it is reached.
    #[inline(always)]
    fn within_size(&mut self, len: u64) -> bool {
        if self.p.io_limit > 0 && self.tl.measuring {
            if self.issued_bytes >= self.p.io_limit {
                self.issuing = false;
                return false;
            }
            self.issued_bytes += len;
        }
        if self.p.number_ios > 0 && self.tl.measuring {
            if self.issued_ios >= self.p.number_ios {
                self.issuing = false;
                return false;
            }
            self.issued_ios += 1;
        }
        true
    }

    /// Take back `by` bytes [`within_size`](Self::within_size) counted for
    /// an I/O the random map cut shorter (0 almost always).
    #[inline(always)]
    fn uncount(&mut self, by: u64) {
        if by > 0 && self.p.io_limit > 0 && self.tl.measuring {
            self.issued_bytes -= by;
        }
    }

    /// Whether `[offset, offset+len)` of `file` overlaps an I/O in flight
    /// (`serialize_overlap`; an idle slot has length 0).
    #[cold]
    #[inline(never)]
    fn overlaps(&self, file: u32, offset: u64, len: u64) -> bool {
        self.slots.meta.iter().any(|m| {
            m.len > 0
                && m.file == file
                && m.offset < offset + len
                && offset < m.offset + m.len as u64
        })
    }

    #[inline(always)]
    /// Stage an I/O of `len` bytes (or hold it back, `serialize_overlap`);
    /// returns its length, less where the random map cut it.
    fn stage_one(&mut self, t_stage: u64, write: bool, len: u64) -> u64 {
        let (file, offset, cut) = self.p.offsets.next_dir(len, write);
        self.uncount(len - cut);
        if self.p.serialize_overlap && self.overlaps(file, offset, cut) {
            self.deferred = Some((write, cut, file, offset));
            return cut;
        }
        self.stage_at(t_stage, write, cut, file, offset);
        cut
    }

    #[inline(always)]
    fn stage_at(&mut self, t_stage: u64, write: bool, len: u64, file: u32, offset: u64) {
        let t_stage = if self.p.trim == TrimMode::ThenWrite && write {
            // The write's submission starts after its trim.
            self.trim(file, offset, len);
            self.now
        } else {
            t_stage
        };
        if let Some(w) = &mut self.iolog {
            let kind = if write { OpKind::Write } else { OpKind::Read };
            w.io(t_stage, file, kind, offset, len);
        }
        self.put(t_stage, write, len, file, offset);
    }

    /// Give the I/O a free slot and hand it to the engine.
    #[inline(always)]
    fn put(&mut self, t_stage: u64, write: bool, len: u64, file: u32, offset: u64) {
        let slot = self
            .slots
            .free
            .pop()
            .expect("a free slot while inflight < depth");
        let m = &mut self.slots.meta[slot as usize];
        m.stage_ns = t_stage;
        m.offset = offset;
        m.len = len as u32;
        m.file = file;
        m.write = write;
        if H::ACTIVE && write {
            self.hook.before_write(
                &mut self.eng.arena().slot_mut(slot)[..len as usize],
                file,
                offset,
            );
        }
        let prio = if H::ACTIVE {
            self.hook.io_prio(write, len)
        } else {
            0
        };
        self.slots.meta[slot as usize].prio = prio;
        self.eng.stage(IoDesc {
            slot,
            write,
            file,
            offset,
            len: len as u32,
            prio,
        });
        self.slots.staged.push(slot);
        self.inflight += 1;
    }

    /// Hand the batch to the kernel, waiting only when the queue is full or
    /// nothing more will be issued. An error of the queue itself ends the worker.
    #[inline(always)]
    fn commit(&mut self) -> Result<(), ()> {
        let wait = self.inflight >= self.depth
            || !self.issuing
            || (self.pace.active && self.slots.staged.is_empty())
            || self.deferred.is_some()
            || self.replay_due > self.now;
        let min = if wait {
            self.complete_min.min(self.inflight as u32)
        } else {
            0
        };
        if self.stamp_commit {
            let t_commit = self.clk.now();
            for &s in &self.slots.staged {
                self.slots.meta[s as usize].commit_ns = t_commit;
            }
        }
        if let Err(e) = self.eng.commit(min) {
            self.queue_failed(e);
            return Err(());
        }
        if self.clock.on {
            self.read_clock_reduced();
        } else {
            self.now = self.clk.now();
        }
        Ok(())
    }

    /// `gtod_reduce`: read the clock only when its countdown runs out, and
    /// adapt the countdown to how far apart readings were.
    #[inline(always)]
    fn read_clock_reduced(&mut self) {
        let c = &mut self.clock;
        c.left -= 1;
        if c.left > 0 {
            return;
        }
        let t = self.clk.now();
        c.every = adapt_every(c.every, t - self.now);
        c.left = c.every;
        self.now = t;
    }

    #[cold]
    #[inline(never)]
    fn queue_failed(&mut self, e: std::io::Error) {
        self.res.first_error.get_or_insert(IoErrorInfo {
            file: 0,
            offset: 0,
            len: 0,
            write: false,
            errno: e.raw_os_error().unwrap_or(libc::EIO),
        });
        self.res.dirs[0].errors += 1;
        if self.res.fatal_errno == 0 {
            self.res.fatal_errno = e.raw_os_error().unwrap_or(libc::EIO);
        }
    }

    /// Take the ready completions and account each one.
    #[inline(always)]
    fn reap_and_account(&mut self) {
        let n = self.eng.reap(&mut self.slots.comps[..self.reap_max]);
        if self.p.delivery.is_some() {
            self.deliveries(n);
        }
        if self.tl.measuring {
            let q = &mut self.res.queue;
            q.depth_level[depth_bucket(self.inflight)] += 1;
            q.submit_batches[batch_bucket(self.slots.staged.len())] += 1;
            q.complete_batches[batch_bucket(n)] += 1;
        }
        // One completion (QD 1) has no run to share: record it directly.
        let runs = n > 1;
        for i in 0..n {
            let c = self.slots.comps[i];
            self.complete(c, runs);
        }
        if runs {
            self.run.flush(&mut self.res.dirs, self.now);
        }
        self.inflight -= n;
    }

    /// `--stages`: each of the `n` completions just reaped, how long after
    /// its CQE was posted (runner/worker/delivery.rs), against one reading
    /// of CLOCK_MONOTONIC (the program's clock) for the reap. Entries are
    /// taken during the ramp too, so none is left over for a later I/O of
    /// the slot; only the measured part's are recorded.
    #[inline(never)]
    fn deliveries(&mut self, n: usize) {
        let now = dioscope_sys::clock::monotonic_ns();
        let Some(t) = &mut self.p.delivery else {
            return;
        };
        for c in &self.slots.comps[..n] {
            let Some(posted) = t.take(c.slot) else {
                continue;
            };
            if self.tl.measuring && c.res >= 0 {
                let write = self.slots.meta[c.slot as usize].write;
                t.record(write, now.saturating_sub(posted));
            }
        }
    }

    /// Account one completion; `runs`: its latencies join the reap's
    /// pending run (see [`LatRun`]).
    #[inline(always)]
    fn complete(&mut self, c: Completion, runs: bool) {
        // A copy: one bounds check, and nothing below changes the slot.
        let m = self.slots.meta[c.slot as usize];
        if c.res < 0 && ignores(&self.p.ignore[m.write as usize], c.res) {
            self.res.ignored(-c.res);
        } else if c.res < 0 {
            if self.p.until_full && m.write && is_full(c.res) {
                self.issuing = false;
            } else {
                record_error(&mut self.res, &m, c.res);
                self.after_error(m.write, -c.res);
            }
        } else {
            if H::ACTIVE {
                if m.write {
                    self.hook.after_write(m.file, m.offset, c.res as u32);
                } else {
                    self.hook.after_read(
                        &self.eng.arena().slot_mut(c.slot)[..c.res as usize],
                        m.file,
                        m.offset,
                    );
                }
            }
            if (c.res as u32) < m.len {
                self.short_io(c.slot, c.res);
            }
            // Counted during the ramp too (its intervals are in the time
            // series); start_measuring forgets them.
            let timed = !E::FAKES_SOME || self.eng.last_timed();
            let st = &mut self.res.dirs[m.write as usize];
            st.ios += 1;
            st.bytes += if E::MOVES_BYTES { c.res as u64 } else { 0 };
            // Untimed: a block of a metadata engine's file after its operation.
            if timed && self.lat_all {
                if runs {
                    self.run.add(&mut self.res.dirs, &m, self.now);
                } else {
                    st.slat.record(m.commit_ns - m.stage_ns);
                    st.clat.record(self.now - m.commit_ns);
                    st.lat.record(self.now - m.stage_ns);
                }
            } else if timed {
                record_some(st, self.p.lat, &m, self.now);
            }
            if H::ACTIVE && timed {
                if let Some(total) = self.p.prio_lat {
                    let t0 = if total { m.stage_ns } else { m.commit_ns };
                    self.res.dirs[m.write as usize]
                        .prio_hist(m.prio)
                        .record(self.now - t0);
                }
            }
            if self.pace.per_completion {
                let ev = self.pace.completed(self.now - m.stage_ns, self.now);
                if ev != PaceEvent::Nothing {
                    self.pace_event(ev, Some(c.slot));
                }
            }
            if self.tl.measuring {
                self.measured_bytes += c.res as u64;
                if let Some(l) = &mut self.log {
                    l.push(Rec {
                        t_ns: self.now - self.tl.start,
                        offset: m.offset,
                        slat_ns: (m.commit_ns - m.stage_ns).min(u32::MAX as u64) as u32,
                        clat_ns: (self.now - m.commit_ns).min(u32::MAX as u64) as u32,
                        len: c.res as u32,
                        write: m.write,
                        trim: false,
                    });
                }
            }
        }
        if m.write {
            if let Some(&fd) = self.p.fds.get(m.file as usize) {
                self.last_write_fd = fd;
            }
            self.writes_since_sync += 1;
        }
        if self.p.serialize_overlap {
            // Idle slots have length 0 (see `overlaps`).
            self.slots.meta[c.slot as usize].len = 0;
        }
        self.slots.free.push(c.slot);
    }

    /// After an error that was counted: go on if it is one of fio's
    /// non-fatal errors for a job that goes on after errors, else end the
    /// job with it as its error.
    #[cold]
    #[inline(never)]
    fn after_error(&mut self, write: bool, errno: i32) {
        if !ignores(&self.p.go_on[write as usize], errno) {
            self.issuing = false;
            if self.res.fatal_errno == 0 {
                self.res.fatal_errno = errno;
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn short_io(&mut self, slot: u32, res: i32) {
        let m = &self.slots.meta[slot as usize];
        self.res.dirs[m.write as usize].short_ios += 1;
        if res == 0 && m.write && self.p.until_full {
            // fill_device: the file system is full, which is the end.
            self.issuing = false;
        } else if res == 0 && !m.write && self.p.eof_reads {
            // Past the end of a file created empty: counted, nothing read.
        } else if res == 0 {
            // Nothing read or written: the target shrank or is full. An
            // error, counted even when the job goes on.
            let errno = if m.write { -libc::ENOSPC } else { -libc::EIO };
            if ignores(&self.p.ignore[m.write as usize], errno) {
                self.res.ignored(-errno);
                return;
            }
            let write = m.write;
            record_error(&mut self.res, m, errno);
            self.after_error(write, -errno);
        }
    }

    /// The file a sync after writes syncs: none (-1) for an engine whose
    /// sync is a timed no-op.
    fn sync_fd(&self) -> i32 {
        if E::TIMES_NO_OP_SYNC {
            -1
        } else {
            self.last_write_fd
        }
    }

    /// fsync / fdatasync after every N writes.
    #[inline(always)]
    fn maybe_sync(&mut self) {
        if self.last_write_fd < 0 && !E::TIMES_NO_OP_SYNC {
            // No file to sync.
        } else if self.p.fsync_every > 0 && self.writes_since_sync >= self.p.fsync_every {
            do_sync(self.sync_fd(), false, &mut self.res.sync);
            self.writes_since_sync = 0;
        } else if self.p.fdatasync_every > 0 && self.writes_since_sync >= self.p.fdatasync_every {
            do_sync(self.sync_fd(), true, &mut self.res.sync);
            self.writes_since_sync = 0;
        }
    }
}

#[cfg(test)]
mod tests;
