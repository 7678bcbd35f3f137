//! Stage two: run the phases in order, each phase's trials, then its
//! read-back. A phase ends the run early on an interrupt, an I/O error a
//! job does not go on after, `exit_what=all`, or a worker that could not
//! start; `trials=auto` stops a phase's trials once the group's metric is
//! precise enough (stats/significance.rs). One trial is runner/trial.rs.

use super::clock::{Clock, SysClock};
use super::hooks::TrialHooks;
use super::resolve::offset_of;
use super::result::{JobRun, PhaseRun, ResolvedJob, RunOptions, RunResult, WorkerSetupError};
use crate::results::measure::{TrialEnv, TrialJob};
use crate::targets::TargetTable;
use crate::verify::Written;

/// Stage two: run every group and trial.
pub fn execute(
    resolved: Vec<ResolvedJob>,
    table: &TargetTable,
    opts: &RunOptions,
    hooks: &mut dyn TrialHooks,
) -> RunResult {
    execute_on(resolved, table, opts, hooks, SysClock::get())
}

/// [`execute`] on `clock`: the trial loop and every worker read time and
/// the stop signal from it (runner/clock.rs; unit tests use a fake one).
pub(super) fn execute_on<C: Clock>(
    mut resolved: Vec<ResolvedJob>,
    table: &TargetTable,
    opts: &RunOptions,
    hooks: &mut dyn TrialHooks,
    clock: C,
) -> RunResult {
    let start_ms = dioscope_sys::clock::wall_ms();
    let notes = without_fake_verify(&mut resolved);
    // fio's gtod_cpu is the run's: one job's setting keeps every worker off it.
    let mut gtod: Vec<usize> = resolved
        .iter()
        .flat_map(|r| r.spec.gtod_cpus.clone())
        .collect();
    gtod.sort_unstable();
    gtod.dedup();
    for r in resolved.iter_mut() {
        r.spec.gtod_cpus.clone_from(&gtod);
    }
    // fio: `exitall` on any job makes the end of every job stop what that
    // job's exit_what names (a run-wide switch, not the one job's).
    if resolved.iter().any(|r| r.spec.exitall) {
        for r in resolved.iter_mut() {
            r.spec.exitall = true;
        }
    }
    let nphases = resolved.iter().map(|j| j.phase + 1).max().unwrap_or(0);
    let mut ex = Execution {
        written: resolved.iter().map(|_| Vec::new()).collect(),
        terminated: vec![false; resolved.len()],
        jobs: resolved
            .into_iter()
            .map(|r| JobRun {
                resolved: r,
                trials: Vec::new(),
                pace: Vec::new(),
                verify: None,
                verify_io: Vec::new(),
            })
            .collect(),
        table,
        opts,
        hooks,
        phases: Vec::new(),
        notes,
        interrupted: false,
        auto_trials: Vec::new(),
        setup_error: None,
        clock,
    };
    let mut completed_groups: Vec<u32> = Vec::new();
    for g in 0..nphases {
        if !ex.run_phase(g) {
            break;
        }
        let ran = ex.jobs.iter().zip(&ex.terminated);
        for (j, _) in ran.filter(|(j, t)| j.resolved.phase == g && !**t) {
            if !completed_groups.contains(&j.resolved.groupid) {
                completed_groups.push(j.resolved.groupid);
            }
        }
    }
    ex.report_unstarted();
    if ex.interrupted {
        ex.save_verify_states();
    }
    RunResult {
        jobs: ex.jobs,
        phases: ex.phases,
        targets: table.targets.iter().map(|t| t.info.clone()).collect(),
        interrupted: ex.interrupted,
        signal: dioscope_sys::signal::last_signal(),
        start_ms,
        notes: ex.notes,
        auto_trials: ex.auto_trials,
        setup_error: ex.setup_error,
        completed_groups,
    }
}

/// fio's null engine "pretends it verified everything": its I/Os move no
/// data, so there is nothing to check. Such a job runs without verify,
/// and the result says so instead of reporting blocks as checked.
fn without_fake_verify(resolved: &mut [ResolvedJob]) -> Vec<String> {
    let mut notes = Vec::new();
    for r in resolved.iter_mut() {
        let j = &mut r.spec;
        if let Some(v) = j.verify.as_ref().filter(|_| j.ioengine.caps().fakes_verify) {
            notes.push(format!(
                "job '{}': verify={v} checked nothing: ioengine={} moves no data (fio \
                 pretends such I/O verified; dioscope reports no verify result for it)",
                j.name,
                j.ioengine.as_str()
            ));
            j.verify = None;
            j.do_verify = false;
        }
    }
    notes
}

/// What stage two accumulates while it runs the phases.
pub(super) struct Execution<'a, C: Clock = SysClock> {
    pub(super) jobs: Vec<JobRun>,
    /// Per job: `exitall` stopped it before it started (fio's terminate of a
    /// job not yet created): it never runs, and reports zeros as in fio.
    pub(super) terminated: Vec<bool>,
    pub(super) table: &'a TargetTable,
    pub(super) opts: &'a RunOptions,
    pub(super) hooks: &'a mut dyn TrialHooks,
    pub(super) phases: Vec<PhaseRun>,
    pub(super) notes: Vec<String>,
    pub(super) interrupted: bool,
    /// The intervals each write worker stamped in the last trial, per job and clone.
    pub(super) written: Vec<Vec<Option<Written>>>,
    pub(super) auto_trials: Vec<crate::stats::significance::AutoOutcome>,
    pub(super) setup_error: Option<WorkerSetupError>,
    /// Time and the stop signal (runner/clock.rs).
    pub(super) clock: C,
}

impl<C: Clock> Execution<'_, C> {
    /// Run every trial of phase `g`, then its read-back. False: stop the run.
    fn run_phase(&mut self, g: u32) -> bool {
        let idx: Vec<usize> = (0..self.jobs.len())
            .filter(|&i| self.jobs[i].resolved.phase == g && !self.terminated[i])
            .collect();
        if idx.is_empty() {
            // Every job of it was stopped before it started (exit_what=group).
            return true;
        }
        if let Err(e) = self.size_at_start(&idx) {
            self.setup_error = Some(e);
            return false;
        }
        let trials = idx
            .iter()
            .map(|&i| self.jobs[i].resolved.spec.trials)
            .max()
            .unwrap_or(1);
        let mut grun = PhaseRun {
            phase: g,
            trials: Vec::new(),
            start_ms: dioscope_sys::clock::wall_ms(),
        };
        // trials=auto (0): up to the limit, stopping once precise enough.
        let auto = (trials == 0).then(|| self.opts.auto.clone());
        let trials = auto.as_ref().map(|a| a.max_trials.max(1)).unwrap_or(trials);
        let t_start = self.clock.peek();
        let mut ran = 0;
        for trial in 0..trials {
            let t_trial = self.clock.peek();
            let (env, stop_now) = self.run_trial(g, trial, trials, &idx);
            if self.setup_error.is_some() {
                // That trial did no I/O: it is not a measurement.
                self.phases.push(grun);
                return false;
            }
            grun.trials.push(env);
            ran = trial + 1;
            if let Some(a) = &auto {
                if self.auto_step(a, g, &idx, &grun, t_start, t_trial) {
                    break;
                }
            }
            let local_stop = self.interrupted || self.clock.stop_signalled();
            if self.hooks.agree_stop(local_stop || stop_now) && !stop_now {
                self.interrupted = true;
                self.phases.push(grun);
                return false;
            }
            if stop_now {
                self.phases.push(grun);
                return false;
            }
        }
        for &i in &idx {
            self.read_back(i, ran);
        }
        self.phases.push(grun);
        if self.clock.stop_signalled() {
            // Stopped during the read-back: the verify report is partial too.
            self.interrupted = true;
            return false;
        }
        true
    }

    /// Jobs `exitall` stopped before they started: one empty trial each, so
    /// they are reported with zeros (fio lists such a job with no I/O).
    fn report_unstarted(&mut self) {
        for (j, _) in self
            .jobs
            .iter_mut()
            .zip(&self.terminated)
            .filter(|(j, t)| **t && j.trials.is_empty())
        {
            let mut t = TrialJob::default();
            if j.resolved.reports_clones() {
                // One zero entry per clone, as fio lists them.
                t.clones = vec![TrialJob::default(); j.resolved.clones.len()];
            }
            j.trials.push(t);
        }
    }

    /// After a trial of a `trials=auto` group: true when it may stop (the
    /// outcome is then recorded).
    fn auto_step(
        &mut self,
        a: &crate::stats::significance::AutoTrials,
        g: u32,
        idx: &[usize],
        grun: &PhaseRun,
        t_start: u64,
        t_trial: u64,
    ) -> bool {
        use crate::stats::significance::{AutoOutcome, AutoStep};
        let values: Vec<f64> = (0..grun.trials.len())
            .filter_map(|t| {
                group_metric(
                    &a.metric,
                    idx.iter().filter_map(|&i| self.jobs[i].trials.get(t)),
                    &grun.trials[t],
                )
            })
            .collect();
        let now = self.clock.peek();
        let step = a.step(
            &values,
            (now - t_start) as f64 / 1e9,
            (now - t_trial) as f64 / 1e9,
        );
        if !self.hooks.agree_enough(!matches!(step, AutoStep::More)) {
            return false;
        }
        let (converged, half, by) = match step {
            // Another process (rank 0 of a distributed run) decided.
            AutoStep::More => (false, None, "rank 0"),
            AutoStep::Converged { half } => (true, Some(half), "converged"),
            AutoStep::Limit { half, by_time } => {
                (false, half, if by_time { "max-time" } else { "max-trials" })
            }
        };
        let o = AutoOutcome {
            group: g,
            metric: a.metric.clone(),
            trials: values.len() as u32,
            converged,
            half_width_pct: half.map(|h| h * 100.0),
            precision_pct: a.precision * 100.0,
            stopped_by: by.into(),
            values,
        };
        self.notes.push(format!(
            "trials=auto (group {g}): {} after {} trials: {} 95 % CI half-width (widened for the stop) {} of the mean, precision {} %{}",
            if converged {
                "converged"
            } else {
                "did NOT converge"
            },
            o.trials,
            o.metric,
            o.half_width_pct
                .map(|h| format!("{h:.1} %"))
                .unwrap_or_else(|| "-".into()),
            o.precision_pct,
            if converged {
                String::new()
            } else {
                format!(" (stopped by {by})")
            }
        ));
        self.auto_trials.push(o);
        true
    }

    /// The regions left open at prepare (a file an earlier phase's
    /// fill_device job writes, `resolve`): what the file holds now, in
    /// whole blocks, from the job's offset.
    fn size_at_start(&mut self, idx: &[usize]) -> Result<(), WorkerSetupError> {
        for &i in idx {
            let spec = self.jobs[i].resolved.spec.clone();
            let bs = spec.max_bs().max(1);
            let name = spec.name.clone();
            let groupid = self.jobs[i].resolved.groupid;
            for (c, files) in self.jobs[i].resolved.clones.iter_mut().enumerate() {
                for f in files.iter_mut().filter(|f| f.region.1 == 0) {
                    let fd = self.table.targets[f.target_idx].fd();
                    let size = dioscope_sys::mmap::fd_size(fd).unwrap_or(0);
                    // A percentage offset is of the size now.
                    f.region.0 = offset_of(&spec, size) + spec.offset_increment * c as u64;
                    let len = size.saturating_sub(f.region.0) / bs * bs;
                    if len == 0 {
                        return Err(WorkerSetupError {
                            group: groupid,
                            trial: 0,
                            job: name.clone(),
                            clone: c as u32,
                            errno: libc::EINVAL,
                            msg: format!(
                                "{} holds {size} bytes when job '{name}' starts (the fill_device \
                                 job before it wrote that much), less than offset {} plus one \
                                 block of {bs}; give the job size=",
                                f.path.display(),
                                f.region.0
                            ),
                        });
                    }
                    f.region.1 = len;
                }
            }
        }
        Ok(())
    }
}

/// One trial's value of a group's primary metric for `trials=auto`: the
/// group's jobs merged (their I/Os and bytes over the longest runtime).
fn group_metric<'a>(
    metric: &str,
    jobs: impl Iterator<Item = &'a TrialJob>,
    env: &TrialEnv,
) -> Option<f64> {
    let mut merged = TrialJob::default();
    for tj in jobs {
        for (a, b) in merged.dirs.iter_mut().zip(&tj.dirs) {
            a.merge(b);
        }
        merged.runtime_ns = merged.runtime_ns.max(tj.runtime_ns);
    }
    let ios = merged.dirs[0].ios + merged.dirs[1].ios;
    let secs = merged.runtime_ns as f64 / 1e9;
    if ios == 0 || secs <= 0.0 {
        return None;
    }
    let mut lat = merged.dirs[0].lat.clone();
    lat.merge(&merged.dirs[1].lat);
    Some(match metric {
        "bw" => (merged.dirs[0].bytes + merged.dirs[1].bytes) as f64 / secs,
        "lat_mean" => lat.mean(),
        "lat_p99" => lat.percentile(99.0) as f64,
        "cpu_us_per_io" => {
            (env.process.user_us + env.process.sys_us) as f64 / env.ios.max(1) as f64
        }
        _ => ios as f64 / secs,
    })
}

#[cfg(test)]
mod tests;
