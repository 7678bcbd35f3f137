use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, top_few, trials_word, Describe, Severity};

/// A process that held a device, or a file on its file system, open during
/// a trial and did block I/O meanwhile (`/proc/PID/io`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoProcess {
    pub pid: i32,
    pub comm: String,
    /// `read_bytes` / `write_bytes` of `/proc/PID/io` over the trial: I/O the
    /// process caused on any device (it held this one open, so likely here).
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// The device moved more data than the benchmark did: someone else did I/O
/// on it during the trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherDeviceIo {
    pub device: String,
    /// 1-based trials where it happened; empty for doctor's sample.
    pub trials: Vec<usize>,
    /// Bytes the benchmark's jobs transferred in those trials.
    pub our_bytes: u64,
    /// Bytes the device transferred (`/sys/block/*/stat` sectors × 512).
    pub device_bytes: u64,
    /// Who held the device or its file system open and did I/O, busiest
    /// first; empty when the culprit exited or is the kernel (writeback).
    pub processes: Vec<IoProcess>,
}

impl Describe for OtherDeviceIo {
    fn severity(&self) -> Severity {
        // Someone else moved as much as we did: the numbers are shared.
        // (Doctor's sample measured nothing yet: a warning.)
        if !self.trials.is_empty() && self.device_bytes >= 2 * self.our_bytes {
            Severity::Critical
        } else {
            Severity::Warning
        }
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let extra = self.device_bytes.saturating_sub(self.our_bytes);
        if self.trials.is_empty() {
            write!(
                f,
                "{} transferred {} while dioscope did nothing (doctor's short sample): \
                 someone else is using it, and a benchmark now would compete with them. ",
                self.device,
                human_bytes(self.device_bytes),
            )?;
        } else {
            write!(
                f,
                "{} transferred {} during {} but the benchmark only {}: {} came \
                 from someone else, competing for the device and distorting latency and \
                 throughput. ",
                self.device,
                human_bytes(self.device_bytes),
                trials_word(&self.trials),
                human_bytes(self.our_bytes),
                human_bytes(extra),
            )?;
        }
        if self.processes.is_empty() {
            write!(
                f,
                "No process holding it open did I/O (the culprit exited, or it is the \
                 kernel's writeback of buffered writes); find it with `iotop -o` or \
                 `fuser -vm /dev/{}`, stop it, and repeat the run.",
                self.device
            )
        } else {
            // Busiest first, whatever order the list came in.
            let mut busiest: Vec<&IoProcess> = self.processes.iter().collect();
            busiest.sort_by_key(|p| std::cmp::Reverse(p.read_bytes + p.write_bytes));
            let who = top_few(&busiest, |p| {
                format!(
                    "pid {} (`{}`, read {}, wrote {})",
                    p.pid,
                    p.comm,
                    human_bytes(p.read_bytes),
                    human_bytes(p.write_bytes)
                )
            });
            write!(
                f,
                "Processes with the device or a file on it open that did I/O meanwhile \
                 (busiest first): {who}. Stop them and repeat the run."
            )
        }
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    OtherDeviceIo {
        device: "loop7".into(),
        trials: vec![1, 2],
        our_bytes: 400 << 20,
        device_bytes: 650 << 20,
        processes: vec![IoProcess {
            pid: 4242,
            comm: "dd".into(),
            read_bytes: 0,
            write_bytes: 250 << 20,
        }],
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forty_processes_name_the_five_busiest_and_count_the_rest() {
        // Listed in pid order, not by what they did: the text ranks them.
        let processes: Vec<IoProcess> = (0..40)
            .map(|i| IoProcess {
                pid: 1000 + i,
                comm: format!("p{i}"),
                read_bytes: (i as u64) << 20,
                write_bytes: 4096,
            })
            .collect();
        let f = OtherDeviceIo {
            device: "vda".into(),
            trials: vec![1, 1, 2],
            our_bytes: 100 << 20,
            device_bytes: 900 << 20,
            processes,
        };
        let t = super::super::Finding::from(f.clone()).to_string();
        assert_eq!(t.matches("pid ").count(), 5, "{t}");
        for busiest in 35..40 {
            assert!(t.contains(&format!("pid {} (`p{busiest}`,", 1000 + busiest)), "{t}");
        }
        assert!(!t.contains("(p34,"), "{t}");
        assert!(t.contains("and 35 more (in the JSON)"), "{t}");
        // Two groups' trial 1 is one trial 1.
        assert!(t.contains("during trials 1, 2 "), "{t}");
        // The JSON keeps all of them.
        let v = serde_json::to_value(super::super::Finding::from(f).reported()).unwrap();
        assert_eq!(v["processes"].as_array().unwrap().len(), 40);
    }
}
