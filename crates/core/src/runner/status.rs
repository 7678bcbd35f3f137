//! `--status-interval`'s view of a running trial: each worker's
//! measurements so far, asked for and read through its snapshot cell
//! ([`Progress::snapshot`], a `dioscope_sys::handoff::Handoff`), and merged
//! per job as the final report merges them (runner/trial.rs).
//!
//! The worker copies its statistics into the cell's preallocated buffer at
//! its periodic publish (about every 250 µs while measuring,
//! runner/worker/timeline.rs), never per I/O, and only when asked; a
//! worker that has ended left its final figures there. Nothing is shared
//! between workers, and without a status interval no cell exists.

use super::result::ResolvedJob;
use super::worker::{Progress, WorkerResult};
use crate::results::measure::{TrialEnv, TrialJob};
use crate::stats::cpu::SysCpu;
use dioscope_sys::clock::now_ns;
use dioscope_sys::proc::{usage_self, Usage};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The workers of the running trial, for [`super::TrialHooks::status`].
pub struct Snapshots<'a> {
    /// One per worker, in spawn order.
    pub(super) progs: &'a [Arc<Progress>],
    /// Per worker: (its job's position among the trial's jobs, clone).
    pub(super) owners: &'a [(usize, usize)],
    /// At the start of measurement: clock ns, process and system CPU.
    pub(super) since: (u64, Usage, SysCpu),
}

impl Snapshots<'_> {
    /// The trial's workers.
    pub fn len(&self) -> usize {
        self.progs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.progs.is_empty()
    }

    /// Per worker, its job's position among the trial's jobs and its clone.
    pub fn owner(&self, w: usize) -> (usize, usize) {
        self.owners[w]
    }

    /// The trial's process and system measurements from the start of
    /// measurement to now, with `ios` I/Os, as the final report has them.
    pub fn trial_env(&self, ios: u64) -> TrialEnv {
        TrialEnv {
            wall_ns: now_ns().saturating_sub(self.since.0),
            process: usage_self().since(&self.since.1),
            system: SysCpu::read().since(&self.since.2),
            ios,
        }
    }

    /// Ask every worker for its measurements and wait up to `wait_ns` for
    /// the answers: per worker, its copy, or None when it did not answer
    /// in time (busy in a long I/O, or not measuring yet) or never started.
    pub fn collect(&self, wait_ns: u64) -> Vec<Option<WorkerResult>> {
        let mut got: Vec<Option<WorkerResult>> = self.progs.iter().map(|_| None).collect();
        let mut pending: Vec<usize> = Vec::new();
        for (w, p) in self.progs.iter().enumerate() {
            let Some(h) = &p.snapshot else { continue };
            // An answer to an earlier request that came too late: taken
            // (it frees the cell), then a fresh one asked for.
            got[w] = h.read(WorkerResult::clone);
            if h.closed() {
                continue;
            }
            h.ask();
            pending.push(w);
        }
        let deadline = now_ns() + wait_ns;
        while !pending.is_empty() {
            pending.retain(|&w| {
                let p = &self.progs[w];
                let Some(h) = &p.snapshot else { return false };
                if let Some(r) = h.read(WorkerResult::clone) {
                    got[w] = Some(r);
                    return false;
                }
                // Done without closing its cell: it never ran (spawn failed).
                !p.done.load(Ordering::Acquire) || h.closed()
            });
            if pending.is_empty() || now_ns() >= deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        got
    }
}

/// Merge the workers' copies into one trial result per job (`jobs`, the
/// trial's jobs in order), as the final report merges the workers' ends.
pub fn merge_snapshots(
    jobs: &[&ResolvedJob],
    owners: &[(usize, usize)],
    snaps: &[Option<WorkerResult>],
) -> Vec<TrialJob> {
    let mut per_job: Vec<TrialJob> = jobs.iter().map(|_| TrialJob::default()).collect();
    for (&(pos, clone), snap) in owners.iter().zip(snaps) {
        if let Some(r) = snap {
            super::trial::merge_worker(&mut per_job[pos], r.clone(), jobs[pos], clone);
        }
    }
    per_job
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;

    fn job(numjobs: u32, group_reporting: bool) -> ResolvedJob {
        ResolvedJob {
            spec: JobSpec {
                name: "j".into(),
                numjobs,
                group_reporting,
                ..Default::default()
            },
            phase: 0,
            groupid: 0,
            clones: vec![Vec::new(); numjobs as usize],
            first_worker: 0,
        }
    }

    fn answered(ios: u64, runtime_ns: u64) -> WorkerResult {
        let mut r = WorkerResult::with_room();
        r.dirs[0].ios = ios;
        r.dirs[0].bytes = ios * 4096;
        for k in 0..ios {
            r.dirs[0].clat.record(1000 + k);
        }
        r.runtime_ns = runtime_ns;
        r
    }

    /// Workers answer from their own threads at their publish point (here
    /// a loop); one ends and leaves its final figures; one never started.
    #[test]
    fn collect_gets_every_answer_and_the_ended_workers_last_figures() {
        let progs: Vec<Arc<Progress>> = (0..3)
            .map(|_| Arc::new(Progress::with_snapshot()))
            .collect();
        progs[2].done.store(true, Ordering::Release);
        let owners = [(0, 0), (0, 1), (0, 2)];
        let live = {
            let p = progs[0].clone();
            std::thread::spawn(move || {
                let h = p.snapshot.as_ref().unwrap();
                let mine = answered(5, 7);
                while !h.serve(|b| b.copy_live(&mine)) {
                    std::hint::spin_loop();
                }
            })
        };
        progs[1]
            .snapshot
            .as_ref()
            .unwrap()
            .close(|b| b.copy_live(&answered(9, 11)));
        progs[1].done.store(true, Ordering::Release);
        let s = Snapshots {
            progs: &progs,
            owners: &owners,
            since: Default::default(),
        };
        let got = s.collect(5_000_000_000);
        live.join().unwrap();
        assert_eq!(
            got[0].as_ref().map(|r| (r.dirs[0].ios, r.runtime_ns)),
            Some((5, 7))
        );
        assert_eq!(
            got[1].as_ref().map(|r| (r.dirs[0].ios, r.runtime_ns)),
            Some((9, 11))
        );
        assert!(got[2].is_none(), "never started: nothing to report");
        // Merged as the final report merges: one job, its clones summed,
        // the runtime the longest, the histograms together.
        let j = job(3, true);
        let merged = merge_snapshots(&[&j], &owners, &got);
        assert_eq!(merged[0].dirs[0].ios, 14);
        assert_eq!(merged[0].dirs[0].clat.count(), 14);
        assert_eq!(merged[0].runtime_ns, 11);
        assert_eq!(merged[0].workers, 2);
    }

    #[test]
    fn a_worker_that_does_not_answer_in_time_is_left_out() {
        let progs = vec![Arc::new(Progress::with_snapshot())];
        let s = Snapshots {
            progs: &progs,
            owners: &[(0, 0)],
            since: Default::default(),
        };
        let t0 = now_ns();
        assert!(s.collect(20_000_000)[0].is_none());
        assert!(now_ns() - t0 >= 20_000_000, "waited its time");
        // Its late answer is taken by the next collection.
        let h = progs[0].snapshot.as_ref().unwrap();
        assert!(h.serve(|b| b.copy_live(&answered(3, 1))));
        assert_eq!(s.collect(0)[0].as_ref().map(|r| r.dirs[0].ios), Some(3));
    }

    #[test]
    fn clones_reported_apart_keep_their_own_entries() {
        let j = job(2, false);
        let snaps = [Some(answered(2, 5)), Some(answered(4, 6))];
        let merged = merge_snapshots(&[&j], &[(0, 0), (0, 1)], &snaps);
        assert_eq!(merged[0].dirs[0].ios, 6);
        let c: Vec<u64> = merged[0].clones.iter().map(|c| c.dirs[0].ios).collect();
        assert_eq!(c, vec![2, 4]);
    }
}
