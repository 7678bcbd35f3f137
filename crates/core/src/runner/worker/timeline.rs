//! A worker's timeline: the ramp's end, the measuring window, the time
//! series' intervals, progress publication and the end of the job, checked
//! with one comparison per batch (`advance_timeline`); and the end of the
//! worker (`finish`): the last interval, runtime and CPU, the logs closed.

use super::{do_sync, Clock, Worker, WorkerResult};
use crate::engines::Engine;
use crate::results::measure::{QueueStats, Tick};
use crate::results::series::{coarsen, MAX_TICKS};
use crate::stats::Histogram;
use crate::verify::BlockHook;
use dioscope_sys::handoff::Handoff;
use dioscope_sys::proc::{usage_thread, Usage};
use std::sync::atomic::Ordering;

/// Progress counters are published this often (not per batch): the runner
/// reads them at most every 2 ms (distributed stonewalling) or 1 s.
const PUBLISH_NS: u64 = 250_000;

/// Ramp, measurement and interval boundaries of one worker.
pub(super) struct Timeline {
    pub(super) ramp_end: u64,
    /// End of the run (u64::MAX: no time limit).
    pub(super) end: u64,
    pub(super) measuring: bool,
    pub(super) meas_start: u64,
    pub(super) next_tick: u64,
    pub(super) tick_ns: u64,
    pub(super) cpu0: Usage,
    /// The job's start: interval times are from here.
    pub(super) start: u64,
    /// Start of the open interval.
    pub(super) tick_start: u64,
    /// Counters at the start of the open interval: ios, bytes, latency sum.
    pub(super) tick_base: [[u64; 3]; 2],
    /// The latency histograms at the start of the open interval, allocated
    /// once: the interval's percentiles are the difference.
    pub(super) tick_lat: [Histogram; 2],
    /// When progress is published next.
    pub(super) next_publish: u64,
    /// The earliest of the ramp's end, the next interval, the next
    /// publication and the end: the loop compares the clock with this one
    /// value per batch, and does the rest only when it is reached.
    pub(super) next_event: u64,
}

impl<E: Engine, H: BlockHook, C: Clock> Worker<'_, E, H, C> {
    /// End the ramp, close intervals, publish progress, stop at the end:
    /// one comparison per batch until the earliest of these is due. (The
    /// size limit is checked where I/Os are staged.)
    #[inline(always)]
    pub(super) fn advance_timeline(&mut self) {
        if self.now >= self.tl.next_event {
            self.timeline_event();
        }
    }

    #[inline(never)]
    pub(super) fn timeline_event(&mut self) {
        self.check_stop();
        let now = self.now;
        if !self.tl.measuring && now >= self.tl.ramp_end {
            self.start_measuring();
        }
        if now >= self.tl.next_tick {
            self.close_interval(now);
        }
        if self.tl.measuring && now >= self.tl.next_publish {
            self.publish();
            self.tl.next_publish = now + PUBLISH_NS;
        }
        if now >= self.tl.end {
            self.issuing = false;
        }
        let tl = &mut self.tl;
        let ramp = if tl.measuring { u64::MAX } else { tl.ramp_end };
        tl.next_event = ramp.min(tl.next_tick).min(tl.end).min(tl.next_publish);
    }

    /// Live counters for the runner's progress line and stonewalling.
    pub(super) fn publish(&self) {
        self.prog.ios.store(
            self.res.dirs[0].ios + self.res.dirs[1].ios,
            Ordering::Relaxed,
        );
        self.prog
            .bytes
            .store(self.measured_bytes, Ordering::Relaxed);
        let [r, w] = &self.res.dirs;
        self.prog
            .clat_ns
            .store(r.clat.sum_ns() + w.clat.sum_ns(), Ordering::Relaxed);
        self.prog
            .clat_n
            .store(r.clat.count() + w.clat.count(), Ordering::Relaxed);
        // `--status-interval`: one test of a field that is None without it.
        if let Some(h) = &self.prog.snapshot {
            if h.asked() {
                self.serve_snapshot(h);
            }
        }
    }

    /// Copy the measurements so far into the asker's preallocated buffer
    /// (runner/status.rs): runtime and CPU as if the job ended now.
    #[cold]
    #[inline(never)]
    fn serve_snapshot(&self, h: &Handoff<WorkerResult>) {
        h.serve(|buf| {
            buf.copy_live(&self.res);
            buf.runtime_ns = self.now.saturating_sub(self.tl.meas_start);
            buf.thread_cpu = usage_thread().since(&self.tl.cpu0);
            if buf.runtime_ns > 0 {
                buf.cpu_busy = buf.thread_cpu.cpu_us() as f64 * 1000.0 / buf.runtime_ns as f64;
            }
        });
    }

    /// iodepth_mode=stepped: forget what was counted since the last kept
    /// run (a ramp, the probe); the open interval closes first, so the
    /// time series keeps it.
    #[cold]
    #[inline(never)]
    pub(super) fn step_restore(&mut self) {
        if self.steps.is_none() {
            return;
        }
        let now = self.now;
        if now > self.tl.tick_start {
            self.close_interval(now);
        }
        if let Some(k) = &self.steps {
            k.restore(&mut self.res.dirs);
        }
        for (i, d) in self.res.dirs.iter().enumerate() {
            self.tl.tick_base[i] = [d.ios, d.bytes, d.lat.sum_ns()];
            self.tl.tick_lat[i].copy_from(&d.lat);
        }
    }

    /// The ramp is over: forget what it measured.
    #[cold]
    #[inline(never)]
    pub(super) fn start_measuring(&mut self) {
        let now = self.now;
        if now > self.tl.tick_start {
            self.close_interval(now);
        }
        self.tl.measuring = true;
        self.tl.meas_start = now;
        self.tl.next_tick = now + self.tl.tick_ns;
        self.tl.tick_base = [[0; 3]; 2];
        for h in &mut self.tl.tick_lat {
            h.reset();
        }
        self.tl.cpu0 = usage_thread();
        for d in &mut self.res.dirs {
            d.reset();
        }
        self.res.queue = QueueStats::default();
        self.res.sync.reset();
        self.tl.next_publish = now;
        self.res.trim.reset();
        if let Some(k) = &mut self.steps {
            k.reset();
        }
        self.pace.measuring_starts(now);
        self.prog.measuring.store(true, Ordering::Relaxed);
    }

    /// Close the open interval at `end` into the time series: the
    /// interval's counts and latency percentiles (the difference from its
    /// start). Memory is fixed: when the series is full, neighbours merge
    /// and the interval doubles (results/series.rs).
    #[cold]
    #[inline(never)]
    pub(super) fn close_interval(&mut self, end: u64) {
        let tl = &mut self.tl;
        if self.res.ticks.len() == MAX_TICKS {
            coarsen(&mut self.res.ticks);
            tl.tick_ns *= 2;
        }
        let mut t = Tick {
            end_ns: end - tl.start,
            dur_ns: end - tl.tick_start,
            ramp: !tl.measuring,
            ..Default::default()
        };
        for (k, d) in self.res.dirs.iter().enumerate() {
            let now = [d.ios, d.bytes, d.lat.sum_ns()];
            let base = tl.tick_base[k];
            t.ios[k] = now[0] - base[0];
            t.bytes[k] = now[1] - base[1];
            t.lat_sum_ns[k] = now[2].wrapping_sub(base[2]);
            [t.lat_p50_ns[k], t.lat_p99_ns[k]] =
                d.lat.percentiles_since(&tl.tick_lat[k], [50.0, 99.0]);
            tl.tick_lat[k].copy_from(&d.lat);
            tl.tick_base[k] = now;
        }
        self.res.ticks.push(t);
        tl.tick_start = end;
        // A stall longer than an interval skips the boundaries it missed
        // (the closed interval is that much longer) rather than closing
        // empty ones.
        tl.next_tick += tl.tick_ns;
        if tl.next_tick <= end {
            tl.next_tick = end + tl.tick_ns;
        }
    }

    /// `end_fsync`: flush every file written before the job's time ends.
    pub(super) fn end_fsync(&mut self) {
        if !self.p.end_fsync {
            return;
        }
        for &fd in &self.p.fds {
            do_sync(fd, false, &mut self.res.sync);
        }
    }

    /// Runtime and CPU of the measured part.
    pub(super) fn finish(mut self) -> WorkerResult {
        self.end_fsync();
        let end_ns = self.clk.now();
        if let Some(t) = self.p.delivery.take() {
            t.finish();
        }
        if let Some(w) = self.iolog.take() {
            if let Err(e) = w.finish(end_ns) {
                let n = format!("write_iolog: {e}");
                self.res.setup_note = Some(match self.res.setup_note.take() {
                    Some(a) => format!("{a}; {n}"),
                    None => n,
                });
            }
        }
        if let Some(l) = self.log.take() {
            let note = match l.finish() {
                Ok(0) => None,
                Ok(n) => Some(format!(
                    "the log writer fell behind {n} time(s): the worker waited for it (results slowed)"
                )),
                Err(e) => Some(e),
            };
            if let Some(n) = note {
                self.res.setup_note = Some(match self.res.setup_note.take() {
                    Some(a) => format!("{a}; {n}"),
                    None => n,
                });
            }
        }
        let mut stepped_ns = None;
        if self.tl.measuring && self.steps.is_some() {
            // A run the job's end cut short counts (its I/Os were measured),
            // without a step of its own; a ramp or probe does not.
            self.now = end_ns;
            if let Some(k) = &mut self.steps {
                k.run_ends(&self.res.dirs, end_ns, None);
            }
            self.step_restore();
            stepped_ns = self.steps.as_ref().map(|k| k.measured_ns);
        }
        if self.tl.measuring {
            // The last, partial interval, unless it is a sliver whose rate
            // would be noise.
            if end_ns.saturating_sub(self.tl.tick_start) * 10 >= self.tl.tick_ns {
                self.close_interval(end_ns);
            }
        } else {
            // Ended during the ramp: nothing was measured.
            for d in &mut self.res.dirs {
                d.reset();
            }
            self.res.trim.reset();
        }
        if self.tl.measuring {
            self.publish();
        }
        let mut res = self.res;
        res.runtime_ns = if self.tl.measuring {
            stepped_ns.unwrap_or(end_ns.saturating_sub(self.tl.meas_start))
        } else {
            0
        };
        res.steps = self
            .steps
            .take()
            .map(|k| super::super::stepped::StepReport {
                peak_iops: self.pace.step_peak().unwrap_or_default(),
                steps: k.samples,
            });
        res.thread_cpu = usage_thread().since(&self.tl.cpu0);
        if res.runtime_ns > 0 {
            res.cpu_busy = res.thread_cpu.cpu_us() as f64 * 1000.0 / res.runtime_ns as f64;
        }
        res.latency_depth = self.pace.depth_found();
        if res.fatal_errno != 0 {
            self.prog.failed.store(true, Ordering::Relaxed);
        }
        if let Some(h) = &self.prog.snapshot {
            // What `--status-interval` reads once this worker is gone.
            h.close(|buf| buf.copy_live(&res));
        }
        self.prog.done.store(true, Ordering::Relaxed);
        res
    }
}
