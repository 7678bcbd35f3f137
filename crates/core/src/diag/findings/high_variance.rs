use serde::{Deserialize, Serialize};
use std::fmt;

use super::{num, remedies, touched, Describe, Severity, TrialCondition};

/// The 95 % confidence interval of a result's mean is wider than ±5 %.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HighVariance {
    pub metric: String,
    pub trials: usize,
    pub mean: f64,
    /// Half-width of the 95 % CI (Student's t) relative to the mean, in %.
    pub ci_half_pct: f64,
    /// Coefficient of variation of the trials, in %.
    pub cv_pct: f64,
    /// Trials that would bring the half-width to 5 % at this spread.
    pub trials_needed: usize,
    /// What dioscope measured during the trials (CPU contention, other I/O,
    /// page cache).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<TrialCondition>,
}

impl Describe for HighVariance {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {}, 95 % CI [{}, {}] (half-width {:.1} % of the mean, {} trials, \
             trial-to-trial spread σ/mean {:.1} %): the mean is too uncertain to compare \
             with another result at 5 % precision. ",
            self.metric,
            num(self.mean),
            num(self.mean * (1.0 - self.ci_half_pct / 100.0)),
            num(self.mean * (1.0 + self.ci_half_pct / 100.0)),
            self.ci_half_pct,
            self.trials,
            self.cv_pct,
        )?;
        let all: Vec<usize> = (1..=self.trials).collect();
        if let Some(measured) = touched(&self.conditions, &all) {
            write!(
                f,
                "dioscope measured {measured}: more trials average such a condition in, \
                 they do not remove it. {}Then repeat the run, with about {} trials if the \
                 spread stays.",
                remedies(&self.conditions, &all),
                self.trials_needed
            )
        } else {
            write!(
                f,
                "Run more trials (about {} at this spread, or --trials=auto), lengthen each \
                 trial (runtime), and look for what varies between trials in the other findings.",
                self.trials_needed
            )
        }
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    HighVariance {
        metric: "j IOPS".into(),
        trials: 3,
        mean: 10000.0,
        ci_half_pct: 12.4,
        cv_pct: 5.0,
        trials_needed: 6,
        conditions: Vec::new(),
    }
    .into()
}
