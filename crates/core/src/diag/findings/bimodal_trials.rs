use serde::{Deserialize, Serialize};
use std::fmt;

use super::{list, num, remedies, touched, Describe, Severity, TrialCondition};

/// The trials fall into two separate groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BimodalTrials {
    pub metric: String,
    /// 1-based trial numbers of each group.
    pub low_trials: Vec<usize>,
    pub high_trials: Vec<usize>,
    pub low_mean: f64,
    pub high_mean: f64,
    /// What dioscope measured during the trials (CPU contention, other I/O,
    /// page cache), for all trials of the series.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<TrialCondition>,
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
            conditions,
        } = self;
        write!(
            f,
            "trials fall into two groups: {} at {metric} ≈ {} and {} at ≈ {} ({:.0} % apart)",
            list(low_trials),
            num(*low_mean),
            list(high_trials),
            num(*high_mean),
            100.0 * (high_mean - low_mean) / low_mean.abs().max(f64::MIN_POSITIVE)
        )?;
        // A measured condition that is exactly one group explains the split.
        let exact = conditions.iter().find(|c| {
            let mut t = c.trials.clone();
            t.sort_unstable();
            t == *low_trials || t == *high_trials
        });
        if let Some(c) = exact {
            let low = low_trials.first().is_some_and(|t| c.trials.contains(t));
            let which = if low { "low" } else { "high" };
            return write!(
                f,
                ": the {which} group is exactly the trials with {}, so that condition, \
                 measured during the run, explains the two groups before any device cause. \
                 {}. Then repeat the run.",
                c.condition.what(),
                c.condition.remedy()
            );
        }
        match touched(conditions, low_trials) {
            Some(measured) => write!(
                f,
                ". dioscope measured {measured}, which explains at least those before any \
                 device cause. {}Then repeat the run, and compare the groups' page-cache \
                 counts and device counters if they stay.",
                remedies(conditions, low_trials)
            ),
            None => write!(
                f,
                ". A condition that differs between runs is at work, such as page-cache \
                 pages left on the target by a buffered reader in some runs only (fio's \
                 seed-004 race). Compare the groups' page-cache counts and device counters; \
                 report the groups separately rather than their mean."
            ),
        }
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
        conditions: Vec::new(),
    }
    .into()
}
