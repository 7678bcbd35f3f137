use serde::{Deserialize, Serialize};
use std::fmt;

use super::{list, num, Describe, Severity};

/// The trials fall into two separate groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BimodalTrials {
    pub metric: String,
    /// 1-based trial numbers of each group.
    pub low_trials: Vec<usize>,
    pub high_trials: Vec<usize>,
    pub low_mean: f64,
    pub high_mean: f64,
}

impl Describe for BimodalTrials {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            metric,
            low_trials,
            high_trials,
            low_mean,
            high_mean,
        } = self;
        write!(
            f,
            "trials fall into two groups: {} at {metric} ≈ {} and {} at ≈ {} ({:.0} % \
             apart). A condition that differs between runs is at work, such as page-cache \
             pages left on the target by a buffered reader in some runs only (fio's \
             seed-004 race). Compare the groups' page-cache counts and device counters; \
             report the groups separately rather than their mean.",
            list(low_trials),
            num(*low_mean),
            list(high_trials),
            num(*high_mean),
            100.0 * (high_mean - low_mean) / low_mean.abs().max(f64::MIN_POSITIVE)
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    BimodalTrials {
        metric: "MB/s".into(),
        low_trials: vec![2, 5],
        high_trials: vec![1, 3, 4],
        low_mean: 2400.0,
        high_mean: 3800.0,
    }
    .into()
}
