//! What the runner hands back: the resolved jobs (`ResolvedJob`, one
//! `FileUse` per file of each clone), the measured trials per job and phase
//! (`RunResult`), and the errors that stop a run before or at a worker's
//! start.

use super::pacing;
use super::worker::IoErrorInfo;
use crate::job::JobSpec;
use crate::results::measure::{TrialEnv, TrialJob};
use crate::targets::TargetInfo;
use crate::verify::VerifyReport;
use std::path::PathBuf;

/// Errors before any I/O: bad job/target combinations. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Target(#[from] crate::targets::TargetError),
    #[error("job '{job}': {msg}")]
    Job { job: String, msg: String },
}

/// A worker of a phase could not start (engine set-up, I/O buffers, thread
/// spawn): no worker of that trial did any I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSetupError {
    /// The reporting group (fio's groupid) of the job that failed.
    pub group: u32,
    /// 0-based trial of the group.
    pub trial: u32,
    pub job: String,
    pub clone: u32,
    pub errno: i32,
    /// What failed, the kernel's error and a fix.
    pub msg: String,
}

impl std::fmt::Display for WorkerSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "group {} (job '{}', clone {}, trial {}): {} (errno {})",
            self.group,
            self.job,
            self.clone,
            self.trial + 1,
            self.msg,
            self.errno
        )
    }
}

/// Run-wide knobs that are not job options.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub progress: bool,
    pub destroy_data_on: Vec<String>,
    /// Limits and precision of jobs with `trials=auto` (trials 0).
    pub auto: crate::stats::significance::AutoTrials,
}

/// One file of one job, resolved.
#[derive(Debug, Clone)]
pub struct FileUse {
    pub path: PathBuf,
    pub target_idx: usize,
    /// Offset and length; length 0 until the job's group starts for a file
    /// a fill_device job of an earlier group writes (`size_at_start`).
    pub region: (u64, u64),
}

/// A job with its targets resolved: one entry per clone (numjobs).
#[derive(Debug, Clone)]
pub struct ResolvedJob {
    pub spec: JobSpec,
    /// The run phase: the jobs of a phase start together (runner/plan.rs).
    pub phase: u32,
    /// fio's reporting group (`groupid`): `group_reporting`, the JSON and
    /// `exit_what=group` follow it.
    pub groupid: u32,
    pub clones: Vec<Vec<FileUse>>,
    /// The 0-based number of its first clone's worker over every job's
    /// clones (fio numbers logs by it; `cpus_allowed_policy=split` places
    /// worker N on the N-th CPU of the set).
    pub first_worker: usize,
}

impl ResolvedJob {
    /// The CPUs its workers are pinned to, as the runner places them
    /// (cpus_allowed, cpumask, numa_cpu_nodes, gtod_cpu,
    /// cpus_allowed_policy=split), over all its clones; `None` when a clone
    /// is not pinned (it runs wherever the process may).
    pub fn worker_cpus(&self) -> Option<Vec<usize>> {
        let mut cpus = Vec::new();
        for c in 0..self.clones.len() {
            cpus.extend(
                super::thread_setup::placed(&self.spec, self.first_worker + c).cpus_allowed?,
            );
        }
        cpus.sort_unstable();
        cpus.dedup();
        Some(cpus)
    }

    /// Its clones are reported one by one (numjobs > 1 without
    /// group_reporting), as fio writes them.
    pub(super) fn reports_clones(&self) -> bool {
        self.spec.numjobs > 1 && !self.spec.group_reporting
    }
}

#[derive(Debug, Clone)]
pub struct JobRun {
    pub resolved: ResolvedJob,
    pub trials: Vec<TrialJob>,
    /// What pacing found per trial (steady state, latency target's depth);
    /// empty when the job uses neither.
    pub pace: Vec<pacing::TrialPace>,
    /// Read-back checks (`verify=`), when the job verifies.
    pub verify: Option<VerifyReport>,
    /// The read-back's reads, per clone (fio counts them as reads).
    pub verify_io: Vec<crate::results::measure::VerifyIo>,
}

/// One run phase: the jobs that started together, per trial.
#[derive(Debug, Clone, Default)]
pub struct PhaseRun {
    pub phase: u32,
    pub trials: Vec<TrialEnv>,
    /// Wall-clock ms since the epoch when the phase started (fio's job_start).
    pub start_ms: u64,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub jobs: Vec<JobRun>,
    pub phases: Vec<PhaseRun>,
    pub targets: Vec<TargetInfo>,
    pub interrupted: bool,
    pub signal: i32,
    pub start_ms: u64,
    pub notes: Vec<String>,
    /// How `trials=auto` ended, per phase that used it.
    pub auto_trials: Vec<crate::stats::significance::AutoOutcome>,
    /// A worker that could not start ended the run there.
    pub setup_error: Option<WorkerSetupError>,
    /// The reporting groups whose phases ran all their trials (and
    /// read-back), in order.
    pub completed_groups: Vec<u32>,
}

impl RunResult {
    /// Blocks that read back wrong, over all verifying jobs.
    pub fn verify_failures(&self) -> u64 {
        self.jobs
            .iter()
            .filter_map(|j| j.verify.as_ref())
            .map(|v| v.bad + v.read_errors)
            .sum()
    }

    pub fn io_errors(&self) -> u64 {
        self.jobs
            .iter()
            .flat_map(|j| &j.trials)
            .map(|t| t.dirs[0].errors + t.dirs[1].errors)
            .sum()
    }

    /// The first I/O error of the run: the job's name, the error, the path.
    pub fn first_error(&self) -> Option<(&str, &IoErrorInfo, &str)> {
        self.jobs.iter().find_map(|j| {
            j.trials.iter().find_map(|t| {
                t.first_error
                    .as_ref()
                    .map(|(e, p)| (j.resolved.spec.name.as_str(), e, p.as_str()))
            })
        })
    }

    /// The per-job summaries every renderer and the diagnosis read: trials
    /// merged, and with `group_reporting` the jobs of a reporting group.
    pub fn summarize(&self) -> Vec<crate::results::JobSummary> {
        // A job whose clones report apart is one input per clone (fio
        // writes one entry per clone); `of[k]` is (job index, clone).
        let mut of: Vec<(usize, Option<u32>)> = Vec::new();
        let mut per_clone: Vec<Vec<TrialJob>> = Vec::new();
        for (i, j) in self.jobs.iter().enumerate() {
            if j.resolved.reports_clones() && j.trials.iter().all(|t| !t.clones.is_empty()) {
                for c in 0..j.resolved.spec.numjobs {
                    of.push((i, Some(c)));
                    per_clone.push(
                        j.trials
                            .iter()
                            .map(|t| t.clones.get(c as usize).cloned().unwrap_or_default())
                            .collect(),
                    );
                }
            } else {
                of.push((i, None));
                per_clone.push(Vec::new());
            }
        }
        let jobs: Vec<crate::results::JobInput> = of
            .iter()
            .zip(&per_clone)
            .map(|(&(i, c), pc)| {
                let j = &self.jobs[i];
                crate::results::JobInput {
                    name: &j.resolved.spec.name,
                    groupid: j.resolved.groupid,
                    phase: j.resolved.phase,
                    group_reporting: j.resolved.spec.group_reporting,
                    trials: if c.is_some() { pc } else { &j.trials },
                }
            })
            .collect();
        let phases: Vec<crate::results::PhaseInput> = self
            .phases
            .iter()
            .map(|g| crate::results::PhaseInput {
                phase: g.phase,
                trials: &g.trials,
                auto_stop: self.auto_trials.iter().any(|o| o.group == g.phase),
            })
            .collect();
        let mut sums = crate::results::summarize(&jobs, &phases);
        for s in &mut sums {
            s.clone_of = of[s.jobs[0]].1;
            for k in &mut s.jobs {
                *k = of[*k].0;
            }
        }
        sums
    }

    /// An I/O error ended the run early (one a job does not go on after:
    /// any, without `continue_on_error`; else all but fio's non-fatal ones):
    /// the result is partial.
    pub fn stopped_by_error(&self) -> bool {
        self.setup_error.is_some()
            || self
                .jobs
                .iter()
                .any(|j| j.trials.iter().any(|t| t.fatal_errno != 0))
    }

    /// True when no trial ran at all (a setup error in the first phase):
    /// nothing was measured and nothing written.
    pub fn nothing_ran(&self) -> bool {
        self.phases.iter().all(|g| g.trials.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::spec::CpuPolicy;

    fn job(cpus: Option<Vec<usize>>, split: bool, clones: usize, first: usize) -> ResolvedJob {
        ResolvedJob {
            spec: JobSpec {
                name: "j".into(),
                cpus_allowed: cpus,
                cpus_allowed_policy: if split {
                    CpuPolicy::Split
                } else {
                    CpuPolicy::Shared
                },
                ..Default::default()
            },
            phase: 0,
            groupid: 0,
            clones: vec![Vec::new(); clones],
            first_worker: first,
        }
    }

    #[test]
    fn worker_cpus_are_where_the_runner_pins_the_clones() {
        assert_eq!(job(None, false, 2, 0).worker_cpus(), None);
        assert_eq!(job(Some(vec![0]), false, 2, 0).worker_cpus(), Some(vec![0]));
        // split: worker N on the N-th CPU of the set, counted over every
        // job's clones (this job's first clone is worker 1).
        let split = job(Some(vec![0, 1, 2, 3]), true, 2, 1);
        assert_eq!(split.worker_cpus(), Some(vec![1, 2]));
        assert_eq!(
            job(Some(vec![0, 1]), true, 3, 0).worker_cpus(),
            Some(vec![0, 1])
        );
    }
}
