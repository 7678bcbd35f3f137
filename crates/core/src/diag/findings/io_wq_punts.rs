use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// `--stages` saw io_uring hand (nearly) every I/O of a direction to its
/// io-wq worker threads instead of issuing it inline: the device or file
/// does not take non-blocking (nowait) I/O, or its queue was full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoWqPunts {
    /// `read` or `write`.
    pub direction: String,
    /// The traced devices.
    pub devices: Vec<String>,
    /// I/Os punted (`io_uring_queue_async_work`).
    pub punted: u64,
    /// This run's traced I/Os of the direction.
    pub ios: u64,
    /// What no per-I/O join covered (the hand-off, the worker's wake-up and
    /// the way back, where the hand-off is not joined), its contribution to
    /// the mean latency, ns.
    pub not_joined_ns: f64,
    /// The io-wq hand-off measured per I/O (raw backend, a whole block
    /// device: handed over → the worker queued the bio), its contribution
    /// to the mean latency, ns; the finding's cost where present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_ns: Option<f64>,
    /// dioscope's mean latency of the direction, ns.
    pub mean_ns: f64,
}

impl IoWqPunts {
    /// What the hand-off cost: measured where it was, else what no join
    /// covered.
    pub fn cost_ns(&self) -> f64 {
        self.handoff_ns.unwrap_or(self.not_joined_ns)
    }
}

impl Describe for IoWqPunts {
    fn severity(&self) -> Severity {
        Severity::Info
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "io_uring handed {} of the {} {} I/Os ({:.0} %) on {} to its io-wq worker threads \
             instead of issuing them inline (the device or file does not take non-blocking \
             I/O, or its queue was full): each waited for a worker to wake, queue it and \
             complete it, and that hand-off ({}) took {:.1} µs \
             of the {:.1} µs mean latency ({:.0} %). Use a device or file system that takes \
             nowait I/O (a request-based disk, ext4 or XFS on one) or polled I/O (hipri=1 with \
             poll queues), or compare with ioengine=libaio or psync, which do not go through \
             io-wq.",
            self.punted,
            self.ios,
            self.direction,
            100.0 * self.punted as f64 / self.ios.max(1) as f64,
            self.devices.join(", "),
            if self.handoff_ns.is_some() {
                "the stages' \"io-wq hand-off\", measured per I/O"
            } else {
                "the stages' \"not joined per I/O\""
            },
            self.cost_ns() / 1e3,
            self.mean_ns / 1e3,
            100.0 * self.cost_ns() / self.mean_ns.max(1.0),
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    IoWqPunts {
        direction: "write".into(),
        devices: vec!["/dev/zram1 (bio-based)".into()],
        punted: 16384,
        ios: 16384,
        not_joined_ns: 80e3,
        handoff_ns: None,
        mean_ns: 100e3,
    }
    .into()
}
