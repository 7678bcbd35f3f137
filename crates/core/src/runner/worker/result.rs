//! What a worker reports: its statistics and errors when it ends
//! ([`WorkerResult`]), and its live counters while it runs ([`Progress`]).

use super::SlotMeta;
use crate::results::measure::{DirStats, IoErrorInfo, QueueStats, Tick};
use dioscope_sys::handoff::Handoff;
use dioscope_sys::proc::Usage;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// Everything a worker reports when it ends.
#[derive(Debug, Clone, Default)]
pub struct WorkerResult {
    pub dirs: [DirStats; 2],
    pub sync: DirStats,
    /// Trims (`rw=trim`, `randtrim`, `trimwrite`): fio's third direction.
    pub trim: DirStats,
    pub runtime_ns: u64,
    pub thread_cpu: Usage,
    pub ticks: Vec<Tick>,
    pub first_error: Option<IoErrorInfo>,
    pub interrupted: bool,
    /// Fraction of the worker's wall time spent on CPU (user + sys).
    pub cpu_busy: f64,
    pub setup_note: Option<String>,
    /// The worker could not start (its engine or buffers): it did no I/O.
    pub setup_failed: Option<crate::engines::EngineSetupError>,
    pub queue: QueueStats,
    /// The depth `latency_target` settled on.
    pub latency_depth: Option<u32>,
    /// I/O errors `ignore_error` listed: counted here, not as errors.
    pub ignored_errors: u64,
    /// The errno of the error that ended the worker (0: none did; the
    /// errors it went on after, continue_on_error, do not).
    pub fatal_errno: i32,
    /// The first ignored error's errno (0: none), fio's `error` for a job
    /// whose only errors were ignored.
    pub first_ignored: i32,
    /// What `iodepth_mode=stepped` measured per step (runner/stepped.rs).
    pub steps: Option<super::super::stepped::StepReport>,
}

impl WorkerResult {
    /// An empty result with room for a running worker's copy
    /// ([`copy_live`](Self::copy_live)) made without allocating.
    pub fn with_room() -> WorkerResult {
        WorkerResult {
            ticks: Vec::with_capacity(crate::results::series::MAX_TICKS + 1),
            ..Default::default()
        }
    }

    /// Become a copy of `o`'s measurements so far (counts, histograms,
    /// intervals, queue, errors), reusing this one's memory: what a worker
    /// hands `--status-interval` from its periodic publish. Notes, steps
    /// and set-up errors are only in the final result.
    pub(crate) fn copy_live(&mut self, o: &WorkerResult) {
        for (a, b) in self.dirs.iter_mut().zip(&o.dirs) {
            a.copy_from(b);
        }
        self.sync.copy_from(&o.sync);
        self.trim.copy_from(&o.trim);
        self.runtime_ns = o.runtime_ns;
        self.thread_cpu = o.thread_cpu;
        self.ticks.clear();
        self.ticks.extend_from_slice(&o.ticks);
        self.first_error.clone_from(&o.first_error);
        self.interrupted = o.interrupted;
        self.cpu_busy = o.cpu_busy;
        self.queue = o.queue;
        self.latency_depth = o.latency_depth;
        self.ignored_errors = o.ignored_errors;
        self.fatal_errno = o.fatal_errno;
        self.first_ignored = o.first_ignored;
    }

    #[cold]
    #[inline(never)]
    pub(super) fn ignored(&mut self, errno: i32) {
        self.ignored_errors += 1;
        if self.first_ignored == 0 {
            self.first_ignored = errno;
        }
    }
}

/// Bucket of fio's iodepth_level map: 1, 2, 4, 8, 16, 32, >=64, each
/// holding depths from its key up to the next key.
#[inline(always)]
pub(super) fn depth_bucket(d: usize) -> usize {
    ((usize::BITS - 1 - d.max(1).leading_zeros()) as usize).min(6)
}

/// Bucket of fio's iodepth_submit/complete maps: 0, 1-4, 5-8, 9-16, 17-32,
/// 33-64, >64 (keys "0", "4", "8", "16", "32", "64", ">=64").
#[inline(always)]
pub(super) fn batch_bucket(n: usize) -> usize {
    const T: [u8; 65] = {
        let mut t = [0u8; 65];
        let mut i = 1;
        while i <= 64 {
            t[i] = match i {
                1..=4 => 1,
                5..=8 => 2,
                9..=16 => 3,
                17..=32 => 4,
                _ => 5,
            };
            i += 1;
        }
        t
    };
    if n <= 64 {
        T[n] as usize
    } else {
        6
    }
}

/// A write's negative result that means "the file system is full".
#[inline]
pub(super) fn is_full(res: i32) -> bool {
    res == -libc::ENOSPC || res == -libc::EDQUOT
}

/// Live counters the progress display reads; only this worker writes them.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Progress {
    pub ios: AtomicU64,
    pub bytes: AtomicU64,
    /// The completion latencies measured so far, summed (ns), and how many
    /// (steady state on latency, `ss=lat`).
    pub clat_ns: AtomicU64,
    pub clat_n: AtomicU64,
    pub measuring: AtomicBool,
    pub done: AtomicBool,
    /// Raised by the trial's watcher (runner/watch.rs: steady state,
    /// exitall): stop issuing, finish normally (not an interruption).
    pub halt: AtomicBool,
    /// The worker ended on an error that stops its job (for `exitall_on_error`).
    pub failed: AtomicBool,
    /// `--status-interval`: the worker's measurements so far, copied at
    /// its periodic publish when asked (and its final ones at its end);
    /// None (nothing checked) without a status interval.
    pub snapshot: Option<Box<Handoff<WorkerResult>>>,
}

impl Progress {
    /// Counters with a snapshot cell (`--status-interval`).
    pub fn with_snapshot() -> Progress {
        Progress {
            snapshot: Some(Box::new(Handoff::new(
                WorkerResult::with_room(),
                WorkerResult::with_room(),
            ))),
            ..Default::default()
        }
    }
}

/// Whether `errno` is in an `ignore_error` set.
#[cold]
pub fn ignores(set: &[u64; 3], errno: i32) -> bool {
    let e = errno.unsigned_abs() as usize;
    e < 192 && set[e / 64] & (1 << (e % 64)) != 0
}

#[cold]
#[inline(never)]
pub(super) fn record_error(r: &mut WorkerResult, m: &SlotMeta, res: i32) {
    r.dirs[m.write as usize].errors += 1;
    if r.first_error.is_none() {
        r.first_error = Some(IoErrorInfo {
            file: m.file,
            offset: m.offset,
            len: m.len,
            write: m.write,
            errno: -res,
        });
    }
}

#[cfg(test)]
mod bucket_tests {
    #[test]
    fn fio_buckets() {
        let d: Vec<usize> = [1, 2, 3, 4, 7, 8, 31, 32, 63, 64, 1000]
            .iter()
            .map(|&x| super::depth_bucket(x))
            .collect();
        assert_eq!(d, vec![0, 1, 1, 2, 2, 3, 4, 5, 5, 6, 6]);
        let b: Vec<usize> = [0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65]
            .iter()
            .map(|&x| super::batch_bucket(x))
            .collect();
        assert_eq!(b, vec![0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]);
    }
}
