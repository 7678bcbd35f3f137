//! The raw measurements of a run, as the runner collects them: per
//! direction counters and latency histograms, per-interval ticks, the first
//! I/O error, queue-depth buckets, and one job's and one group's trial.
//! The runner fills these (the worker loop updates [`DirStats`] in place);
//! [`super::summary`] aggregates them. They live here, below the runner, so
//! aggregation and rendering never import the runner.

use crate::stats::cpu::SysCpu;
use crate::stats::Histogram;
use dioscope_sys::proc::Usage;

/// Counters of one direction.
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    pub ios: u64,
    pub bytes: u64,
    pub short_ios: u64,
    pub errors: u64,
    pub slat: Histogram,
    pub clat: Histogram,
    pub lat: Histogram,
    /// Per I/O priority (the ioprio value the I/O was issued with, 0: the
    /// thread's), its completion or total latency: only for jobs with
    /// per-I/O priorities (cmdprio_*), as fio's `prios`.
    pub prios: Vec<(u16, Histogram)>,
}

impl DirStats {
    pub fn merge(&mut self, o: &DirStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.short_ios += o.short_ios;
        self.errors += o.errors;
        self.slat.merge(&o.slat);
        self.clat.merge(&o.clat);
        self.lat.merge(&o.lat);
        for (p, h) in &o.prios {
            self.prio_hist(*p).merge(h);
        }
    }
    /// Become a copy of `o`, reusing this one's histograms: no allocation
    /// (`--status-interval`'s snapshot, taken by the worker itself) unless
    /// `o` has more priority histograms than this one has had.
    pub fn copy_from(&mut self, o: &DirStats) {
        self.copy_measures_from(o);
        self.errors = o.errors;
        self.prios.truncate(o.prios.len());
        for (k, (p, h)) in o.prios.iter().enumerate() {
            match self.prios.get_mut(k) {
                Some(mine) => {
                    mine.0 = *p;
                    mine.1.copy_from(h);
                }
                None => self.prios.push((*p, h.clone())),
            }
        }
    }
    /// Copy `o`'s counts and latency histograms only (its errors and
    /// priority histograms stay as they are here), without allocating.
    pub fn copy_measures_from(&mut self, o: &DirStats) {
        self.ios = o.ios;
        self.bytes = o.bytes;
        self.short_ios = o.short_ios;
        self.slat.copy_from(&o.slat);
        self.clat.copy_from(&o.clat);
        self.lat.copy_from(&o.lat);
    }

    /// The histogram of priority `prio`, added when new.
    #[inline]
    pub fn prio_hist(&mut self, prio: u16) -> &mut Histogram {
        let i = match self.prios.iter().position(|(p, _)| *p == prio) {
            Some(i) => i,
            None => {
                self.prios.push((prio, Histogram::new()));
                self.prios.len() - 1
            }
        };
        &mut self.prios[i].1
    }
    /// Forget the measurements (end of ramp). Errors are kept: a fault
    /// during the ramp is still a fault of the run.
    pub fn reset(&mut self) {
        self.ios = 0;
        self.bytes = 0;
        self.short_ios = 0;
        self.slat.reset();
        self.clat.reset();
        self.lat.reset();
        self.prios.clear();
    }
}

/// The reads of one clone's verify read-back: not part of the measured
/// run, but fio counts them in the job's read direction (its bytes, I/Os,
/// latencies, and the read-back's time in the read runtime).
#[derive(Debug, Clone, Default)]
pub struct VerifyIo {
    pub reads: DirStats,
    pub runtime_ns: u64,
}

pub use super::series::{merge_ticks, Tick};

/// The first I/O error a worker saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoErrorInfo {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    pub write: bool,
    pub errno: i32,
}

/// How deep the queue ran and how big the batches were (fio's
/// iodepth_level, iodepth_submit and iodepth_complete).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Commits by in-flight depth after staging: 1, 2, 4, 8, 16, 32, >=64.
    pub depth_level: [u64; 7],
    /// Commits by I/Os submitted: 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
    pub submit_batches: [u64; 7],
    /// Reaps by I/Os completed, same buckets.
    pub complete_batches: [u64; 7],
}

impl QueueStats {
    pub fn add(&mut self, o: &QueueStats) {
        for b in 0..7 {
            self.depth_level[b] += o.depth_level[b];
            self.submit_batches[b] += o.submit_batches[b];
            self.complete_batches[b] += o.complete_batches[b];
        }
    }
}

/// One job's result in one trial (all its clones merged).
#[derive(Debug, Clone, Default)]
pub struct TrialJob {
    pub dirs: [DirStats; 2],
    pub sync: DirStats,
    /// Trims: fio's third direction (`rw=trim`, `randtrim`, `trimwrite`).
    pub trim: DirStats,
    pub runtime_ns: u64,
    pub thread_cpu: Usage,
    pub ticks: Vec<Tick>,
    pub first_error: Option<(IoErrorInfo, String)>,
    /// The errno that ended a worker (0: none; errors a job went on after,
    /// continue_on_error, are not).
    pub fatal_errno: i32,
    /// Errors `ignore_error` lists, which the job went on after, and the
    /// first one's errno (0: none).
    pub ignored_errors: u64,
    pub first_ignored: i32,
    pub interrupted: bool,
    /// Busiest worker's CPU share of its wall time (1.0 = a full CPU).
    pub max_worker_cpu: f64,
    pub workers: u32,
    pub queue: QueueStats,
    /// Each clone alone, by clone number, when the job reports its clones
    /// apart (numjobs > 1 without group_reporting, as fio writes them).
    pub clones: Vec<TrialJob>,
}

impl TrialJob {
    /// Add another worker's (or clone's) result of the same trial.
    pub fn absorb(&mut self, o: &TrialJob) {
        for (a, b) in self.dirs.iter_mut().zip(&o.dirs) {
            a.merge(b);
        }
        self.sync.merge(&o.sync);
        self.runtime_ns = self.runtime_ns.max(o.runtime_ns);
        self.thread_cpu.add(&o.thread_cpu);
        self.max_worker_cpu = self.max_worker_cpu.max(o.max_worker_cpu);
        self.interrupted |= o.interrupted;
        self.workers += o.workers;
        self.queue.add(&o.queue);
        merge_ticks(&mut self.ticks, &o.ticks);
        if self.first_error.is_none() {
            self.first_error = o.first_error.clone();
        }
        if self.fatal_errno == 0 {
            self.fatal_errno = o.fatal_errno;
        }
        self.ignored_errors += o.ignored_errors;
        if self.first_ignored == 0 {
            self.first_ignored = o.first_ignored;
        }
    }
}

/// Whole-process and system-wide measurements of one group trial.
#[derive(Debug, Clone, Default)]
pub struct TrialEnv {
    pub wall_ns: u64,
    pub process: Usage,
    pub system: SysCpu,
    pub ios: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-priority histograms merge by priority, and a reset forgets them.
    #[test]
    fn priorities_merge_by_value() {
        let mut a = DirStats::default();
        a.prio_hist(0).record(100);
        a.prio_hist(8195).record(200);
        let mut b = DirStats::default();
        b.prio_hist(8195).record(300);
        b.prio_hist(16387).record(400);
        a.merge(&b);
        let got: Vec<(u16, u64)> = a.prios.iter().map(|(p, h)| (*p, h.count())).collect();
        assert_eq!(got, [(0, 1), (8195, 2), (16387, 1)]);
        a.reset();
        assert!(a.prios.is_empty());
    }
}
