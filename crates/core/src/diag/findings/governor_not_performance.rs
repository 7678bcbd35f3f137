use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// CPUs whose frequency governor is not `performance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GovernorNotPerformance {
    /// Distinct governors in use, with how many CPUs use each.
    pub governors: Vec<(String, usize)>,
}

impl Describe for GovernorNotPerformance {
    fn severity(&self) -> Severity {
        Severity::Info
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g: Vec<String> = self
            .governors
            .iter()
            .map(|(g, n)| format!("{g} on {n} CPU{}", if *n == 1 { "" } else { "s" }))
            .collect();
        write!(
            f,
            "CPU frequency governor is {} rather than performance: clock speed \
             follows load, so latency and CPU time per I/O change with it and \
             between runs. For stable numbers: `cpupower frequency-set -g \
             performance`.",
            g.join(", ")
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    GovernorNotPerformance {
        governors: vec![("powersave".into(), 2)],
    }
    .into()
}
