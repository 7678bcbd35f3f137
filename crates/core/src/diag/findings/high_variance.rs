use serde::{Deserialize, Serialize};
use std::fmt;

use super::{num, Describe, Severity};

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
}

impl Describe for HighVariance {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {} ± {:.1} % (95 % confidence, {} trials, trial-to-trial spread {:.1} %): \
             the mean is too uncertain to compare with another result at 5 % precision. \
             Run more trials (about {} at this spread, or --trials=auto), lengthen each \
             trial (runtime), and look for what varies between trials in the other findings.",
            self.metric,
            num(self.mean),
            self.ci_half_pct,
            self.trials,
            self.cv_pct,
            self.trials_needed
        )
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
    }
    .into()
}
