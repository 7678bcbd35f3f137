//! Trials that disagree: outliers, two groups, drift across and within
//! trials, and a confidence interval too wide to trust (the policy is in
//! docs/STATISTICS.md). Each finding carries what dioscope measured during
//! the trials (CPU contention, other I/O on the device, page cache), which
//! it names before any device cause and which the two-modes rule tests as a
//! given split.

use super::{device_sharing, CheckDef, RunCtx};
use crate::diag::consistency::{high_variance, series_findings, trial_findings};
use crate::diag::findings::{Condition, Finding, PageCacheCause, TrialCondition};
use crate::diag::hooks::TrialRecord;
use crate::diag::sharing::{contended, other_io};
use crate::results::TrialMetrics;

pub const CHECK: CheckDef = CheckDef {
    name: "trial consistency",
    doctor: None,
    after_run: Some(after_run),
};

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    ctx.sums
        .iter()
        .flat_map(|s| metric_findings(&s.name, &s.trials, &conditions(ctx, s.phase)))
        .collect()
}

/// What dioscope measured during the trials of run phase `phase`, per
/// condition with its 1-based trials (conditions seen in no trial left out).
pub fn conditions(ctx: &RunCtx, phase: u32) -> Vec<TrialCondition> {
    let recs: Vec<&TrialRecord> = ctx.hooks.trials.iter().filter(|r| r.group == phase).collect();
    let with_pages = |r: &TrialRecord| {
        // A file on tmpfs is its pages: no condition anyone can stop.
        r.page_cache.iter().any(|tp| {
            !matches!(tp.cause, PageCacheCause::MemoryFilesystem { .. })
                && (tp.pages.before.unwrap_or(0) > 0 || tp.pages.during_max.unwrap_or(0) > 0)
        })
    };
    let measured = |condition: Condition, rule: &dyn Fn(&TrialRecord) -> bool| TrialCondition {
        condition,
        trials: recs
            .iter()
            .filter(|r| rule(r))
            .map(|r| r.trial as usize)
            .collect(),
    };
    [
        measured(Condition::CpuContention, &contended),
        measured(Condition::OtherDeviceIo, &|r| {
            other_io(r, device_sharing::ours(ctx, r))
        }),
        measured(Condition::PageCache, &with_pages),
    ]
    .into_iter()
    .filter(|c| !c.trials.is_empty())
    .collect()
}

/// Findings over the trials of one job (or one group-reported unit), with
/// what dioscope measured during them (`conditions`, 1-based trials).
/// Interrupted trials and those that did no I/O are left out; only a prefix
/// of the trials is used, so trial numbers stay those of the run.
fn metric_findings(
    job: &str,
    trials: &[TrialMetrics],
    conditions: &[TrialCondition],
) -> Vec<Finding> {
    let done: Vec<&TrialMetrics> = trials
        .iter()
        .take_while(|t| !t.interrupted && t.runtime_ms > 0.0)
        .collect();
    let metric = format!("{job} IOPS");
    let iops: Vec<f64> = done.iter().map(|t| t.iops).collect();
    let mut out = trial_findings(&metric, &iops, conditions);
    for t in &done {
        out.extend(series_findings(&metric, t.trial as usize, &t.iops_series));
    }
    out.extend(high_variance(&metric, &iops, conditions));
    out
}
