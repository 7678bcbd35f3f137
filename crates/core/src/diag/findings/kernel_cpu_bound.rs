use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// A worker thread used (nearly) a whole CPU, mostly in the kernel: the
/// kernel's I/O path on that CPU is the limit, not dioscope's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCpuBound {
    pub job: String,
    /// The busiest worker's CPU time over its wall time, in %.
    pub cpu_pct: f64,
    /// Share of the workers' CPU time spent in the kernel, in %.
    pub kernel_pct: f64,
}

impl Describe for KernelCpuBound {
    fn severity(&self) -> Severity {
        Severity::Info
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the busiest worker of job {} used {:.0} % of a CPU, {:.0} % of it in the \
             kernel: the run is CPU-bound in the kernel, not in dioscope. The system \
             calls, block layer and driver run on the submitting thread, and a RAM-backed \
             device (zram, brd, a loop device over cached data) does its copy there too, so \
             the result is the kernel's CPU cost per I/O rather than a device limit. Add \
             workers (numjobs) to use more CPUs, or use io_uring/libaio with a deeper queue \
             to cut the system calls per I/O.",
            self.job, self.cpu_pct, self.kernel_pct
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    KernelCpuBound {
        job: "j".into(),
        cpu_pct: 99.0,
        kernel_pct: 85.0,
    }
    .into()
}
