use serde::{Deserialize, Serialize};
use std::fmt;

use super::{pct, Describe, Severity};

/// A monotonic trend over the trials (Mann–Kendall).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftAcrossTrials {
    pub metric: String,
    pub trials: usize,
    /// Change over the series relative to its median (Sen's slope × (n−1)).
    pub rel_change: f64,
    pub p_value: f64,
}

impl Describe for DriftAcrossTrials {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} changed by {} over {} trials (Mann-Kendall p = {:.3}): \
             the system is not in a steady state (SSD garbage collection, a filling \
             write cache, thermal throttling). Precondition the device (write it fully \
             first), lengthen ramp_time, or run until the trend stops.",
            self.metric,
            pct(self.rel_change),
            self.trials,
            self.p_value
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    DriftAcrossTrials {
        metric: "IOPS".into(),
        trials: 6,
        rel_change: -0.2,
        p_value: 0.01,
    }
    .into()
}
