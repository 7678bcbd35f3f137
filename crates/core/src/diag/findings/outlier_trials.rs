use serde::{Deserialize, Serialize};
use std::fmt;

use super::{num, Describe, Severity, TrialValue};

/// Trials far from the others (see docs/STATISTICS.md for the rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutlierTrials {
    pub metric: String,
    pub median: f64,
    pub outliers: Vec<TrialValue>,
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
        write!(
            f,
            "{} far from the median {metric} of {}: something else ran during it, or \
             the device changed state (garbage collection, thermal throttling). Look \
             at its time series and the page-cache counts, and run more trials to \
             see whether it repeats.",
            each.join(", "),
            num(*median)
        )
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
    }
    .into()
}
