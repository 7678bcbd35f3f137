//! `io_submit_mode=offload`: a pool of submitter threads per worker, as
//! fio's offload mode hands each I/O to one of `iodepth` submit threads.
//!
//! Each submitter is an ordinary dioscope worker at depth 1 with its own
//! engine: it submits one I/O and waits for it, like fio's offload
//! threads, so a slow I/O holds up only its own thread and the others keep
//! submitting on schedule. The job's work is divided among them:
//!
//! - the rate (`rate`, `rate_iops`, and the floors) in equal shares; with
//!   linear arrivals submitter k starts k/R after the first (R the job's
//!   I/Os per second), so together they issue on the job's exact
//!   schedule, one I/O every 1/R; Poisson arrivals are split into
//!   independent Poisson streams, whose sum is the job's Poisson stream;
//! - the region: each submitter takes one slice of every file (like
//!   `numjobs` with `offset_increment`), so a random job still touches each
//!   block once per pass; a sequential job becomes one sequential stream per
//!   submitter, where fio keeps one stream handed out in order;
//! - `size`/`io_size`/`number_ios`: equal shares.
//!
//! The inline path (`io_submit_mode=inline`, the default) is untouched:
//! this module only runs for jobs that ask for offload. The runner sees one
//! worker per clone: the pool's coordinator thread waits at the trial's
//! gate like any worker, forwards the submitters' progress (I/O counts for
//! the watcher and steady state, halts back to them) and merges their
//! results into one.

use super::clock::Clock;
use super::result::FileUse;
use super::start::Gate;
use super::verifying::{run_hooked, HookKind, HookOut};
use super::worker::{Progress, WorkerPlan, WorkerResult};
use crate::job::JobSpec;
use std::sync::atomic::{AtomicBool, Ordering};

/// One submitter: its job as it runs it, its plan and block hook.
pub(super) type Submitter = (JobSpec, WorkerPlan, HookKind);

/// How many submitters a job's worker gets: `iodepth`, fewer if the
/// region has fewer blocks than that.
pub(super) fn pool_size(j: &JobSpec, files: &[FileUse]) -> usize {
    let want = j.iodepth.max(1) as usize;
    let blocks = files
        .iter()
        .map(|f| f.region.1 / j.max_bs().max(1))
        .min()
        .unwrap_or(u64::MAX);
    want.min(blocks.max(1) as usize)
}

/// Submitter `k` of `n`'s job: depth 1, its own random sequence.
pub(super) fn sub_spec(j: &JobSpec, k: usize, n: usize) -> JobSpec {
    let mut s = j.clone();
    s.iodepth = 1;
    s.iodepth_batch_submit = 1;
    s.iodepth_batch_complete_min = 1;
    s.iodepth_batch_complete_max = 0;
    s.randseed = j.randseed ^ (k as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f);
    if !j.ioengine.caps().real_io {
        // A diskless engine's region is its size: each takes a share
        // (a file's region is sliced instead: `sub_files`).
        if let Some(crate::job::units::SizeOrPct::Bytes(b)) = j.size {
            s.size = Some(crate::job::units::SizeOrPct::Bytes(share(b, k, n).max(1)));
        }
    }
    s
}

/// Submitter `k`'s slice of each file's region, whole blocks of `bs`.
pub(super) fn sub_files(files: &[FileUse], k: usize, n: usize, bs: u64) -> Vec<FileUse> {
    files
        .iter()
        .map(|f| {
            let (start, len) = f.region;
            let blocks = len / bs.max(1);
            let per = blocks / n as u64;
            let extra = blocks % n as u64;
            let k64 = k as u64;
            let first = k64 * per + k64.min(extra);
            let mine = per + u64::from(k64 < extra);
            FileUse {
                path: f.path.clone(),
                target_idx: f.target_idx,
                region: (start + first * bs, mine * bs),
            }
        })
        .collect()
}

/// Share `k` of `n` of `total`; the first ones take the remainder.
fn share(total: u64, k: usize, n: usize) -> u64 {
    let (n, k) = (n as u64, k as u64);
    total / n + u64::from(k < total % n)
}

/// Adjust submitter `k`'s plan to its share of the job's plan `whole`.
pub(super) fn share_plan(p: &mut WorkerPlan, whole: &WorkerPlan, k: usize, n: usize) {
    if whole.io_limit > 0 {
        p.io_limit = share(whole.io_limit, k, n).max(1);
    }
    if whole.number_ios > 0 {
        p.number_ios = share(whole.number_ios, k, n).max(1);
    }
    for d in 0..2 {
        p.pace.bps[d] = share(whole.pace.bps[d], k, n);
        p.pace.min_bps[d] = share(whole.pace.min_bps[d], k, n);
        p.pace.min_iops[d] = share(whole.pace.min_iops[d], k, n);
    }
    p.pace.seed = whole.pace.seed ^ (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // Linear arrivals: stagger the starts by one gap of the whole job, so
    // the submitters' schedules interleave into the job's.
    if !whole.pace.poisson {
        let ios_per_s = (0..2)
            .filter(|&d| whole.pace.bps[d] > 0)
            .map(|d| whole.pace.bps[d] as f64 / whole.pace.min_bs[d].max(1) as f64)
            .fold(0.0, f64::max);
        if ios_per_s > 0.0 {
            p.pace.start_delay_us += (k as f64 * 1e6 / ios_per_s) as u64;
        }
    }
}

/// The pool's coordinator: run the submitters, stand in for them at the
/// trial's gate and in its progress, and merge their results.
pub(super) fn run_pool<C: Clock>(
    subs: Vec<Submitter>,
    gate: &Gate,
    stop: &AtomicBool,
    prog: &Progress,
    clock: C,
) -> (WorkerResult, HookOut) {
    let n = subs.len();
    let local = Gate::new(n + 1);
    let progs: Vec<Progress> = (0..n).map(|_| Progress::default()).collect();
    // Named after the worker ("job.clone"): "job.clone.sK".
    let base = std::thread::current()
        .name()
        .unwrap_or("dioscope")
        .to_string();
    let results = std::thread::scope(|sc| {
        let mut handles = Vec::with_capacity(n);
        for (k, (spec, plan, hook)) in subs.into_iter().enumerate() {
            let (local, p, clock) = (&local, &progs[k], clock.clone());
            let h = std::thread::Builder::new()
                .name(format!("{base}.s{k}"))
                .spawn_scoped(sc, move || {
                    run_hooked(&spec, plan, local, stop, p, hook, clock).0
                });
            match h {
                Ok(h) => handles.push(h),
                Err(_) => {
                    // Fewer submitters: the gate does not wait for this one.
                    local.shrink(1);
                    progs[k].done.store(true, Ordering::Relaxed);
                }
            }
        }
        gate.wait();
        local.wait();
        forward(prog, &progs);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| super::start::panicked_worker()))
            .collect::<Vec<_>>()
    });
    let mut r = WorkerResult::default();
    for s in results {
        absorb(&mut r, s);
    }
    if r.first_error.is_some() && progs.iter().any(|p| p.failed.load(Ordering::Relaxed)) {
        prog.failed.store(true, Ordering::Relaxed);
    }
    if let Some(h) = &prog.snapshot {
        // `--status-interval` gets an offloaded worker's figures at its
        // end only: its submitters are not asked while they run.
        h.close(|buf| buf.copy_live(&r));
    }
    prog.done.store(true, Ordering::Relaxed);
    (r, HookOut::default())
}

/// Until every submitter is done: their summed counts into the worker's
/// progress (what the watcher reads), and its halt out to them.
fn forward(prog: &Progress, subs: &[Progress]) {
    loop {
        let done = subs.iter().all(|p| p.done.load(Ordering::Relaxed));
        let sum = |f: fn(&Progress) -> u64| subs.iter().map(f).sum::<u64>();
        prog.ios
            .store(sum(|p| p.ios.load(Ordering::Relaxed)), Ordering::Relaxed);
        prog.bytes
            .store(sum(|p| p.bytes.load(Ordering::Relaxed)), Ordering::Relaxed);
        if subs.iter().any(|p| p.measuring.load(Ordering::Relaxed)) {
            prog.measuring.store(true, Ordering::Relaxed);
        }
        if prog.halt.load(Ordering::Relaxed) {
            subs.iter()
                .for_each(|p| p.halt.store(true, Ordering::Relaxed));
        }
        if done {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Fold one submitter's result into the pool's.
fn absorb(r: &mut WorkerResult, s: WorkerResult) {
    for d in 0..2 {
        r.dirs[d].merge(&s.dirs[d]);
    }
    r.sync.merge(&s.sync);
    r.trim.merge(&s.trim);
    r.runtime_ns = r.runtime_ns.max(s.runtime_ns);
    r.thread_cpu.add(&s.thread_cpu);
    crate::results::series::merge_ticks(&mut r.ticks, &s.ticks);
    if r.first_error.is_none() {
        r.first_error = s.first_error;
    }
    r.interrupted |= s.interrupted;
    r.cpu_busy += s.cpu_busy;
    if r.setup_note.is_none() {
        r.setup_note = s.setup_note;
    }
    if r.setup_failed.is_none() {
        r.setup_failed = s.setup_failed;
    }
    r.queue.add(&s.queue);
    r.ignored_errors += s.ignored_errors;
    if r.fatal_errno == 0 {
        r.fatal_errno = s.fatal_errno;
    }
    if r.first_ignored == 0 {
        r.first_ignored = s.first_ignored;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_region_once_in_whole_blocks() {
        let f = FileUse {
            path: "x".into(),
            target_idx: 0,
            region: (4096, 10 * 4096),
        };
        let parts: Vec<(u64, u64)> = (0..4)
            .map(|k| sub_files(std::slice::from_ref(&f), k, 4, 4096)[0].region)
            .collect();
        assert_eq!(
            parts,
            [
                (4096, 3 * 4096),
                (4 * 4096, 3 * 4096),
                (7 * 4096, 2 * 4096),
                (9 * 4096, 2 * 4096)
            ]
        );
        assert_eq!(
            (0..3).map(|k| share(10, k, 3)).collect::<Vec<_>>(),
            [4, 3, 3]
        );
    }
}
