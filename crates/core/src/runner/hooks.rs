//! Hooks around each trial: hygiene, device accounting, profiling, and the
//! agreement points of a multi-process (`dist`) run. The trial loop
//! (runner/trial.rs) calls them from the runner's thread, never from a worker.

use super::result::ResolvedJob;
use super::status::Snapshots;
use crate::targets::TargetTable;

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
    /// `--stages` on io_uring: where the workers record each completion's
    /// delivery (runner/worker/delivery.rs); `None`: nothing is read.
    fn delivery_board(&self) -> Option<super::worker::delivery::DeliveryBoard> {
        None
    }
    /// Whether the workers get a snapshot cell for [`status`](Self::status)
    /// (`--status-interval`); without, they keep nothing for it.
    fn wants_snapshots(&self) -> bool {
        false
    }
    /// Asked every `poll_every_ns` while the trial's workers run, with
    /// their snapshot cells (runner/status.rs) when `wants_snapshots`.
    fn status(&mut self, _group: u32, _trial: u32, _workers: &Snapshots) {}
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
    fn wants_snapshots(&self) -> bool {
        self.0.wants_snapshots() || self.1.wants_snapshots()
    }
    fn delivery_board(&self) -> Option<super::worker::delivery::DeliveryBoard> {
        self.0.delivery_board().or_else(|| self.1.delivery_board())
    }
    fn status(&mut self, g: u32, t: u32, w: &Snapshots) {
        self.0.status(g, t, w);
        self.1.status(g, t, w);
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
