use serde::{Deserialize, Serialize};
use std::fmt;

use super::{num, remedies, touched, Describe, Severity, TrialCondition, TrialValue};

/// Trials far from the others (see docs/STATISTICS.md for the rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutlierTrials {
    pub metric: String,
    pub median: f64,
    pub outliers: Vec<TrialValue>,
    /// What dioscope measured during the trials (CPU contention, other I/O,
    /// page cache), for all trials of the series.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<TrialCondition>,
}

impl Describe for OutlierTrials {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            metric,
            median,
            outliers,
            conditions,
        } = self;
        let each: Vec<String> = outliers
            .iter()
            .map(|o| {
                let off = if *median != 0.0 {
                    format!(", {:+.0} %", 100.0 * (o.value - median) / median.abs())
                } else {
                    String::new()
                };
                format!(
                    "trial {} ({metric} {}{off}, modified Z {:.1})",
                    o.trial,
                    num(o.value),
                    o.score
                )
            })
            .collect();
        let flagged: Vec<usize> = outliers.iter().map(|o| o.trial).collect();
        let s = if flagged.len() == 1 { "it" } else { "them" };
        write!(
            f,
            "{} far from the median {metric} of {}",
            each.join(", "),
            num(*median)
        )?;
        match touched(conditions, &flagged) {
            Some(measured) => write!(
                f,
                ": dioscope measured {measured}, which explains it before any device \
                 cause. {}Then repeat the run; only an outlier that stays on a quiet \
                 machine points at the device (garbage collection, thermal throttling).",
                remedies(conditions, &flagged)
            ),
            None => write!(
                f,
                ": nothing dioscope measures (CPU contention, other I/O on the device, \
                 page cache) touched {s}, so something it does not see ran during {s}, or \
                 the device changed state (garbage collection, thermal throttling). Look \
                 at its time series and the page-cache counts, and run more trials to \
                 see whether it repeats."
            ),
        }
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    OutlierTrials {
        metric: "IOPS".into(),
        median: 1000.0,
        outliers: vec![TrialValue {
            trial: 3,
            value: 600.0,
            score: -9.0,
        }],
        conditions: vec![TrialCondition {
            condition: super::Condition::CpuContention,
            trials: vec![3],
        }],
    }
    .into()
}
