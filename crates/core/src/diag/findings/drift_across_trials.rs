use serde::{Deserialize, Serialize};
use std::fmt;

use super::{pct, remedies, touched, Describe, Severity, TrialCondition};

/// A monotonic trend over the trials (Mann–Kendall).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftAcrossTrials {
    pub metric: String,
    pub trials: usize,
    /// Change over the series relative to its median (Sen's slope × (n−1)).
    pub rel_change: f64,
    pub p_value: f64,
    /// What dioscope measured during the trials (CPU contention, other I/O,
    /// page cache).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<TrialCondition>,
}

impl Describe for DriftAcrossTrials {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} changed by {} over {} trials (Mann-Kendall p = {:.3})",
            self.metric,
            pct(self.rel_change),
            self.trials,
            self.p_value
        )?;
        let all: Vec<usize> = (1..=self.trials).collect();
        if let Some(measured) = touched(&self.conditions, &all) {
            write!(
                f,
                ": dioscope measured {measured}; a load that starts or stops mid-run makes \
                 a trend too, so it comes before any device cause. {}Then repeat the run; \
                 if the trend stays, the system is not in a steady state: precondition the \
                 device or lengthen ramp_time.",
                remedies(&self.conditions, &all)
            )
        } else {
            write!(
                f,
                ": the system is not in a steady state (SSD garbage collection, a filling \
                 write cache, thermal throttling). Precondition the device (write it fully \
                 first), lengthen ramp_time, or run until the trend stops."
            )
        }
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    DriftAcrossTrials {
        metric: "IOPS".into(),
        trials: 6,
        rel_change: -0.2,
        p_value: 0.01,
        conditions: Vec::new(),
    }
    .into()
}
