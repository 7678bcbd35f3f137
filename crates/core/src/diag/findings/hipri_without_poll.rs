use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// hipri=1 (polled completions) on a device without poll queues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HipriWithoutPoll {
    pub device: String,
    /// Whether the job asked for hipri (otherwise this is a doctor note).
    pub requested: bool,
}

impl Describe for HipriWithoutPoll {
    fn severity(&self) -> Severity {
        if self.requested {
            Severity::Critical
        } else {
            Severity::Info
        }
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let device = &self.device;
        if self.requested {
            write!(
                f,
                "hipri=1 needs polled completion queues but {device} has none \
                 (queue/io_poll = 0), so polling cannot work. Drop hipri, or for \
                 NVMe load the driver with poll queues (`nvme.poll_queues=N`)."
            )
        } else {
            write!(
                f,
                "{device} has no polled queues (queue/io_poll = 0): hipri=1 would \
                 be refused. For NVMe, load the driver with `nvme.poll_queues=N`."
            )
        }
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    HipriWithoutPoll {
        device: "vda".into(),
        requested: true,
    }
    .into()
}
