use serde::{Deserialize, Serialize};
use std::fmt;

use super::{pct, Describe, Severity};

/// A monotonic trend over one trial's intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftWithinTrial {
    pub metric: String,
    /// 1-based trial.
    pub trial: usize,
    pub intervals: usize,
    pub rel_change: f64,
    pub p_value: f64,
}

impl Describe for DriftWithinTrial {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} changed by {} during trial {} ({} intervals, \
             Mann-Kendall p = {:.3}): the trial did not reach a steady state. \
             Lengthen ramp_time so the trend ends before measuring, or precondition the \
             device.",
            self.metric,
            pct(self.rel_change),
            self.trial,
            self.intervals,
            self.p_value
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    DriftWithinTrial {
        metric: "IOPS".into(),
        trial: 1,
        intervals: 30,
        rel_change: 0.1,
        p_value: 0.001,
    }
    .into()
}
