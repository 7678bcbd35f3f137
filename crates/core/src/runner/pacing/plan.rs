//! The data around a worker's [`Pacer`](super::Pacer): its plan, built
//! from the job's options before the worker starts ([`PacePlan`]: rate
//! caps and floors, `thinktime`, `flow`, the latency target, stepped depth,
//! `startdelay`), and what pacing found in each trial ([`TrialPace`]), with
//! dioscope's `pacing` section of the JSON.

use super::flow::FlowShare;
use crate::job::JobSpec;
use crate::runner::distributions::Rng;
use crate::runner::latency_target::LatPlan;
use crate::runner::stepped::StepPlan;
use std::sync::Arc;

/// What a worker's pacing is, computed before it starts.
#[derive(Debug, Clone, Default)]
pub struct PacePlan {
    /// Bytes per second for reads and writes (0: no cap): `rate`, or
    /// `rate_iops` times the direction's smallest block size, as fio counts it.
    pub bps: [u64; 2],
    /// The smallest block of each direction: the unit of Poisson arrivals.
    pub min_bs: [u64; 2],
    pub poisson: bool,
    pub seed: u64,
    /// Floors: bytes and I/Os per second (0: none), judged every `cycle_ns`.
    pub min_bps: [u64; 2],
    pub min_iops: [u64; 2],
    pub cycle_ns: u64,
    pub think: Option<ThinkPlan>,
    pub flow: Option<FlowPlan>,
    pub lat: Option<LatPlan>,
    /// `iodepth_mode=stepped` (runner/stepped.rs).
    pub step: Option<StepPlan>,
    /// Which directions the job issues.
    pub issues: [bool; 2],
    /// `startdelay` for this worker (a range is drawn from its seed).
    pub start_delay_us: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThinkPlan {
    pub think_ns: u64,
    pub spin_ns: u64,
    /// Stall after this many I/Os (0: only by `iotime_ns`).
    pub blocks: u64,
    /// Count I/Os when issued (fio's `thinktime_blocks_type=issue`), not completed.
    pub on_issue: bool,
    /// Stall after this much time doing I/O (0: only by `blocks`).
    pub iotime_ns: u64,
    /// `rate_ignore_thinktime`: the rate does not catch up after a stall.
    pub rate_ignores: bool,
}

#[derive(Debug, Clone)]
pub struct FlowPlan {
    pub share: Arc<FlowShare>,
    /// Negative: the other side of a balanced flow.
    pub weight: i64,
    pub sleep_ns: u64,
}

impl PacePlan {
    /// The pacing of job `j` for one worker. `seed` is the worker's own
    /// (job seed, clone and trial mixed in): Poisson arrivals are
    /// reproducible with the job's seed.
    pub fn for_job(j: &JobSpec, min_bs: [u64; 2], depth: u32, seed: u64) -> PacePlan {
        let bps = [0, 1].map(|d| {
            if j.rate[d] > 0 {
                j.rate[d]
            } else {
                j.rate_iops[d].saturating_mul(min_bs[d].max(1))
            }
        });
        let think = (j.thinktime_us > 0).then(|| ThinkPlan {
            think_ns: j.thinktime_us * 1000,
            spin_ns: j.thinktime_spin_us.min(j.thinktime_us) * 1000,
            // fio: thinktime_blocks defaults to 1, unless only thinktime_iotime is given.
            blocks: match (j.thinktime_blocks, j.thinktime_iotime_us) {
                (0, 0) => 1,
                (b, _) => b,
            },
            on_issue: j.thinktime_blocks_type == crate::job::options::pacing::ThinkBlocks::Issue,
            iotime_ns: j.thinktime_iotime_us * 1000,
            rate_ignores: j.rate_ignore_thinktime,
        });
        let lat = (j.latency_target_ns > 0).then(|| LatPlan {
            target_ns: j.latency_target_ns,
            window_ns: j.latency_window_us * 1000,
            percentile: j.latency_percentile,
            keep_running: j.latency_run,
            max_depth: depth,
        });
        PacePlan {
            bps,
            min_bs,
            poisson: j.rate_process == crate::job::options::pacing::RateProcess::Poisson,
            seed,
            min_bps: [j.rate_min[0], j.rate_min[1]],
            min_iops: [j.rate_iops_min[0], j.rate_iops_min[1]],
            cycle_ns: j.rate_cycle_ms.max(1) * 1_000_000,
            think,
            flow: None,
            lat,
            step: j
                .iodepth_mode
                .map(|m| StepPlan::new(m, depth, [j.rw.reads(), j.rw.writes()])),
            issues: [j.rw.reads(), j.rw.writes()],
            start_delay_us: match j.startdelay_us {
                (lo, hi) if hi > lo => lo + Rng::new(seed ^ 0x5354_4152).below(hi - lo + 1),
                (lo, _) => lo,
            },
        }
    }
}

/// What pacing found in one trial of one job, per clone.
#[derive(Debug, Clone, Default)]
pub struct TrialPace {
    pub clones: Vec<ClonePace>,
}

#[derive(Debug, Clone, Default)]
pub struct ClonePace {
    pub steady: Option<crate::runner::steadystate::SteadyReport>,
    pub latency_depth: Option<u32>,
    /// iodepth_mode=stepped: the probe and the steps.
    pub steps: Option<crate::runner::stepped::StepReport>,
}

impl TrialPace {
    /// The entry of `clone` in trial `trial`, made when missing.
    pub fn clone_mut(trials: &mut Vec<TrialPace>, trial: usize, clone: usize) -> &mut ClonePace {
        if trials.len() <= trial {
            trials.resize_with(trial + 1, TrialPace::default);
        }
        let t = &mut trials[trial];
        if t.clones.len() <= clone {
            t.clones.resize_with(clone + 1, ClonePace::default);
        }
        &mut t.clones[clone]
    }
}

/// dioscope's `pacing` section: per job and trial, whether and when steady
/// state was reached and the depth the latency target settled on (fio's
/// fields show the last trial; this shows every one). None when no job
/// judged either.
pub fn trials_section(r: &crate::runner::RunResult) -> Option<serde_json::Value> {
    let jobs: Vec<serde_json::Value> = r
        .jobs
        .iter()
        .filter(|j| !j.pace.is_empty())
        .map(|j| {
            let trials: Vec<serde_json::Value> = j
                .pace
                .iter()
                .enumerate()
                .map(|(t, tp)| {
                    let clones: Vec<serde_json::Value> = tp
                        .clones
                        .iter()
                        .map(|c| {
                            serde_json::json!({
                                "steady_attained": c.steady.as_ref().map(|s| s.detector.attained),
                                "steady_after_s": c.steady.as_ref().and_then(|s| s.attained_after_s),
                                "latency_depth": c.latency_depth,
                            })
                        })
                        .collect();
                    serde_json::json!({"trial": t + 1, "clones": clones})
                })
                .collect();
            serde_json::json!({"jobname": j.resolved.spec.name, "trials": trials})
        })
        .collect();
    (!jobs.is_empty()).then(|| serde_json::json!({ "jobs": jobs }))
}
