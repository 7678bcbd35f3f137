//! A worker's set-up, before its first I/O: [`Worker::new`] builds the
//! running state from the plan — the timeline, the logs and the iolog
//! recorder it writes, the clock throttle. Nothing here runs per I/O.

use super::super::iolog::IologWriter;
use super::super::logs::LogSink;
use super::super::pacing::Pacer;
use super::timeline::Timeline;
use super::{
    Clock, ClockThrottle, LatRun, LatStats, Progress, Slots, TrimMode, Worker, WorkerPlan,
    WorkerResult,
};
use crate::engines::Engine;
use crate::results::series::MAX_TICKS;
use crate::stats::Histogram;
use crate::verify::BlockHook;
use dioscope_sys::proc::usage_thread;
use std::sync::atomic::{AtomicBool, Ordering};

impl<'a, E: Engine, H: BlockHook, C: Clock> Worker<'a, E, H, C> {
    /// The worker of plan `p` on `eng` and `hook`, its timeline starting at
    /// `start_ns`.
    pub(super) fn new(
        eng: &'a mut E,
        hook: &'a mut H,
        p: WorkerPlan,
        start_ns: u64,
        stop: &'a AtomicBool,
        prog: &'a Progress,
        clk: C,
    ) -> Self {
        let depth = p.depth.max(1) as usize;
        let batch = if p.batch_submit == 0 {
            depth
        } else {
            p.batch_submit as usize
        };
        let tl = new_timeline(&p, start_ns);
        if tl.measuring {
            prog.measuring.store(true, Ordering::Relaxed);
        }
        let mut setup_note = None;
        let log = start_log(&p, start_ns, &mut setup_note);
        let lat = p.lat;
        let pace = Pacer::new(&p.pace, start_ns);
        let throttle = throttles_clock(&p, &pace);
        let iolog = start_iolog(&p, start_ns, &mut setup_note);
        let plain_stage = p.replay.is_none()
            && !p.serialize_overlap
            && p.trim == TrimMode::None
            && !pace.active
            && iolog.is_none();
        Worker {
            plain_stage,
            lat_all: lat == LatStats::ALL,
            run: LatRun::default(),
            stamp_commit: lat.slat || lat.clat,
            clock: ClockThrottle {
                on: throttle,
                every: 1,
                left: 1,
            },
            eng,
            hook,
            stop,
            prog,
            res: WorkerResult {
                ticks: Vec::with_capacity(MAX_TICKS),
                setup_note,
                ..Default::default()
            },
            slots: Slots::new(depth),
            depth,
            batch,
            complete_min: p.complete_min.max(1),
            reap_max: reap_max(&p, depth),
            tl,
            pace,
            inflight: 0,
            issuing: true,
            measured_bytes: 0,
            issued_bytes: 0,
            issued_ios: 0,
            writes_since_sync: 0,
            last_write_fd: p.fds.first().copied().unwrap_or(-1),
            now: clk.now(),
            clk,
            log,
            deferred: None,
            replay_idx: 0,
            replay_due: 0,
            iolog,
            steps: p
                .pace
                .step
                .as_ref()
                .map(|s| Box::new(super::super::stepped::StepKeep::new(s.levels.len()))),
            p,
        }
    }
}

/// The timeline of plan `p` starting at `start_ns`: the ramp, the end, the
/// first interval.
fn new_timeline(p: &WorkerPlan, start_ns: u64) -> Timeline {
    let ramp_end = start_ns + p.ramp_ns;
    Timeline {
        ramp_end,
        end: if p.runtime_ns > 0 {
            ramp_end + p.runtime_ns
        } else {
            u64::MAX
        },
        measuring: p.ramp_ns == 0,
        meas_start: start_ns,
        next_tick: start_ns + p.tick_ns,
        tick_ns: p.tick_ns,
        cpu0: usage_thread(),
        start: start_ns,
        tick_start: start_ns,
        tick_base: [[0; 3]; 2],
        tick_lat: [Histogram::new(), Histogram::new()],
        next_publish: start_ns,
        next_event: start_ns,
    }
}

/// Start writing fio's logs the plan asks for; on failure, none, and a
/// note for the report in `setup_note`.
fn start_log(p: &WorkerPlan, start_ns: u64, setup_note: &mut Option<String>) -> Option<LogSink> {
    p.log
        .as_ref()
        .and_then(|lp| match LogSink::start(lp, start_ns) {
            Ok(s) => Some(s),
            Err(e) => {
                *setup_note = Some(format!("no logs written: {e}"));
                None
            }
        })
}

/// Whether `gtod_reduce` may skip clock readings: not when latencies, logs,
/// an iolog, a timed replay or pacing want the time of every batch.
fn throttles_clock(p: &WorkerPlan, pace: &Pacer) -> bool {
    let lat = p.lat;
    // Rate limits, logs and timed replays want the time of every batch.
    let throttle = p.gtod_reduce
        && !(lat.slat || lat.clat || lat.lat)
        && p.log.is_none()
        && p.write_iolog.is_none()
        && p.replay.is_none();
    // Pacing (rates, think times, latency targets) works from the time
    // of every batch.
    throttle && !(pace.active || pace.checks || pace.per_completion)
}

/// Start `write_iolog`'s recorder; on failure, none, and a note added to
/// `setup_note`.
fn start_iolog(
    p: &WorkerPlan,
    start_ns: u64,
    setup_note: &mut Option<String>,
) -> Option<IologWriter> {
    p.write_iolog.as_ref().and_then(|(path, files)| {
        match IologWriter::create(path, files, start_ns) {
            Ok(w) => Some(w),
            Err(e) => {
                let n = format!("write_iolog={} not written: {e}", path.display());
                *setup_note = Some(match setup_note.take() {
                    Some(a) => format!("{a}; {n}"),
                    None => n,
                });
                None
            }
        }
    })
}

/// Completions reaped at most at once: `iodepth_batch_complete_max`, at
/// least `iodepth_batch_complete_min`, at most the depth (0: the depth).
fn reap_max(p: &WorkerPlan, depth: usize) -> usize {
    match p.complete_max as usize {
        0 => depth,
        n => n.clamp(p.complete_min.max(1) as usize, depth),
    }
}
