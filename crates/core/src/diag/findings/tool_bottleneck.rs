use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// A worker thread used (nearly) a whole CPU, mostly in user space: the
/// tool itself limits the result. (Mostly in the kernel is
/// [`super::KernelCpuBound`].)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolBottleneck {
    pub job: String,
    /// The busiest worker's CPU time over its wall time, in %.
    pub cpu_pct: f64,
}

impl Describe for ToolBottleneck {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the busiest worker of job {} used {:.0} % of a CPU, mostly in dioscope's own \
             user-space code: the benchmark itself is the bottleneck and the results are a \
             lower bound for the device. Add workers (numjobs), batch submissions \
             (iodepth_batch_submit), or use io_uring with fixed buffers and registered files.",
            self.job, self.cpu_pct
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    ToolBottleneck {
        job: "j".into(),
        cpu_pct: 99.0,
    }
    .into()
}
