//! Trials that disagree: outliers, two groups, drift across and within
//! trials, and a confidence interval too wide to trust (the policy is in
//! docs/STATISTICS.md).

use super::{CheckDef, RunCtx};
use crate::diag::consistency::{high_variance, series_findings, trial_findings};
use crate::diag::findings::Finding;
use crate::results::TrialMetrics;

pub const CHECK: CheckDef = CheckDef {
    name: "trial consistency",
    doctor: None,
    after_run: Some(after_run),
};

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    ctx.sums
        .iter()
        .flat_map(|s| metric_findings(&s.name, &s.trials))
        .collect()
}

/// Findings over the trials of one job (or one group-reported unit).
/// Interrupted trials and those that did no I/O are left out; only a prefix
/// of the trials is used, so trial numbers stay those of the run.
pub fn metric_findings(job: &str, trials: &[TrialMetrics]) -> Vec<Finding> {
    let done: Vec<&TrialMetrics> = trials
        .iter()
        .take_while(|t| !t.interrupted && t.runtime_ms > 0.0)
        .collect();
    let metric = format!("{job} IOPS");
    let iops: Vec<f64> = done.iter().map(|t| t.iops).collect();
    let mut out = trial_findings(&metric, &iops);
    for t in &done {
        out.extend(series_findings(&metric, t.trial as usize, &t.iops_series));
    }
    out.extend(high_variance(&metric, &iops));
    out
}
