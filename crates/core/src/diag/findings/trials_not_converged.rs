use serde::{Deserialize, Serialize};
use std::fmt;

use super::{remedies, touched, Describe, Severity, TrialCondition};

/// `trials=auto` stopped at a limit before the primary metric's 95 % CI
/// was within the precision asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialsNotConverged {
    pub group: u32,
    pub metric: String,
    pub trials: u32,
    /// The half-width reached, relative to the mean, in % (None: not
    /// computable, e.g. one trial).
    pub half_width_pct: Option<f64>,
    pub precision_pct: f64,
    /// `max-trials` or `max-time`.
    pub stopped_by: String,
    /// The likely cause from the trial series: `drift`, `bimodal`,
    /// `outliers`, or `noise` when none of those explains it.
    pub cause: String,
    /// What dioscope measured during the trials (CPU contention, other I/O,
    /// page cache): named before the shape of the series.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<TrialCondition>,
}

impl Describe for TrialsNotConverged {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reached = self
            .half_width_pct
            .map(|h| format!("a 95 % CI half-width of {} % of the mean", pct(h)))
            .unwrap_or_else(|| "no interval".into());
        let why = match self.cause.as_str() {
            "drift" => "the trials drift in one direction (warm-up, thermal throttling, a filling SSD, background work): precondition the target or lengthen ramp_time, then rerun",
            "bimodal" => "the trials fall into two groups (a device or kernel switching between two states, CPU placement): pin the job (cpus_allowed) and look for what alternates",
            "outliers" => "a few trials are far from the others (interference from other processes or a stall): find and stop the interference, or run on a quiet machine",
            _ => "the trial-to-trial spread is too large for this precision: lengthen each trial (runtime), or accept a coarser --precision",
        };
        write!(
            f,
            "trials=auto did not converge for group {}: {} reached {reached} after {} trials, \
             not the {} % asked for; it stopped at --{}. ",
            self.group,
            self.metric,
            self.trials,
            pct(self.precision_pct),
            self.stopped_by
        )?;
        let all: Vec<usize> = (1..=self.trials as usize).collect();
        if let Some(measured) = touched(&self.conditions, &all) {
            write!(
                f,
                "dioscope measured {measured}, the first suspect for trials that disagree. \
                 {}Then rerun; if it still does not converge, look at the likely cause \
                 the shape of the series shows: {why}.",
                remedies(&self.conditions, &all)
            )
        } else {
            write!(f, "Look at the likely cause: {why}.")
        }
    }
}

/// A percentage with the digits that matter (0.0001 % stays readable).
fn pct(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2e}")
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    TrialsNotConverged {
        group: 0,
        metric: "iops".into(),
        trials: 30,
        half_width_pct: Some(6.5),
        precision_pct: 2.0,
        stopped_by: "max-trials".into(),
        cause: "drift".into(),
        conditions: Vec::new(),
    }
    .into()
}
