//! `trials=auto` that stopped at a limit before it was precise enough.

use super::{trials::conditions, CheckDef, RunCtx};
use crate::diag::consistency::two_modes;
use crate::diag::findings::{Finding, TrialCondition, TrialsNotConverged};

pub const CHECK: CheckDef = CheckDef {
    name: "trials=auto precision",
    doctor: None,
    after_run: Some(after_run),
};

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    ctx.result
        .auto_trials
        .iter()
        .filter(|o| !o.converged)
        .map(|o| {
            let conditions = conditions(ctx, o.group);
            let higher_is_better = matches!(o.metric.as_str(), "iops" | "bw");
            TrialsNotConverged {
                group: o.group,
                metric: o.metric.clone(),
                trials: o.trials,
                half_width_pct: o.half_width_pct,
                precision_pct: o.precision_pct,
                stopped_by: o.stopped_by.clone(),
                cause: likely_cause(&o.values, &conditions, higher_is_better).into(),
                conditions,
            }
            .into()
        })
        .collect()
}

/// The likely shape behind a series that did not converge, from the
/// detectors of [`crate::stats::trials`]: drift first (it also widens the
/// spread and can look bimodal), then two modes (searched, or the trials
/// under a measured condition against the rest), then single outliers.
/// The measured conditions themselves are named by the finding before this.
pub fn likely_cause(
    values: &[f64],
    conditions: &[TrialCondition],
    higher_is_better: bool,
) -> &'static str {
    use crate::stats::trials::{drift, outliers};
    if drift(values).is_some_and(|d| d.drifting) {
        "drift"
    } else if two_modes(values, conditions, higher_is_better).is_some() {
        "bimodal"
    } else if !outliers(values).is_empty() {
        "outliers"
    } else {
        "noise"
    }
}

#[cfg(test)]
mod tests {
    use super::likely_cause;

    #[test]
    fn causes_from_planted_series() {
        let drifting: Vec<f64> = (0..12).map(|i| 1000.0 + 40.0 * i as f64).collect();
        assert_eq!(likely_cause(&drifting, &[], true), "drift");
        let two: Vec<f64> = (0..12)
            .map(|i| if i % 2 == 0 { 1000.0 } else { 1500.0 } + (i % 3) as f64)
            .collect();
        assert_eq!(likely_cause(&two, &[], true), "bimodal");
        let mut one = vec![1000.0, 1003.0, 998.0, 1001.0, 999.0, 1002.0, 1000.5, 997.0];
        one.push(3000.0);
        assert_eq!(likely_cause(&one, &[], true), "outliers");
    }
}
