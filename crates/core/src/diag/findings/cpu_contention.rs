use serde::{Deserialize, Serialize};
use std::fmt;

use super::{top_few, trials_word, Describe, Severity};

/// A process that used CPU time during the trials (`/proc/PID/stat`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuProcess {
    pub pid: i32,
    pub comm: String,
    /// utime + stime over the trial, in % of one CPU.
    pub cpu_pct: f64,
    /// The part of that likely spent on the CPUs dioscope may run on: its
    /// time × the share of its allowed CPUs that are ours (all of it for a
    /// process pinned there). Processes are ranked by this: a busy process
    /// elsewhere is not the one taking our CPUs.
    #[serde(default)]
    pub our_cpus_pct: f64,
}

/// Other processes kept the CPUs the workers may run on busy during the
/// trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuContention {
    /// 1-based trials where it happened.
    pub trials: Vec<usize>,
    /// How many CPUs were judged: the workers' (cpus_allowed, cpumask,
    /// numa_cpu_nodes) when every worker is pinned, else the process's.
    pub cpus: usize,
    /// Which ones (absent in JSON written before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_list: Vec<usize>,
    /// The CPUs are the ones the workers are pinned to.
    #[serde(default)]
    pub pinned: bool,
    /// Busy time of those CPUs, in % of their capacity (the worst trial).
    pub busy_pct: f64,
    /// dioscope's own share of it, in % of one CPU.
    pub ours_pct: f64,
    /// Everyone else's, in % of one CPU.
    pub others_pct: f64,
    /// The busiest other processes, busiest first.
    pub top: Vec<CpuProcess>,
    /// `--stages`: what completion posting and delivery (the time after the
    /// device finished, which waits for a CPU) cost of the mean latency, in
    /// the direction where they cost most. Absent without `--stages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryCost>,
}

/// Completion posting + delivery of one direction, from `--stages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryCost {
    /// `read` or `write`.
    pub direction: String,
    /// Posting (device completed → CQE posted) + delivery (CQE → reaped),
    /// their contributions to the mean latency, ns.
    pub cost_ns: f64,
    /// dioscope's mean latency of the direction, ns.
    pub mean_ns: f64,
}

impl Describe for CpuContention {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "other processes used {:.0} % of a CPU during {} while dioscope used \
             {:.0} %, leaving {} {:.0} % busy: workers waited for a CPU, so IOPS and \
             latency measure the contention as well as the device",
            self.others_pct,
            trials_word(&self.trials),
            self.ours_pct,
            self.judged(),
            self.busy_pct,
        )?;
        if let Some(d) = &self.delivery {
            write!(
                f,
                "; completion posting and delivery (the time after the device finished) took \
                 {:.1} µs of the {:.1} µs mean {} latency ({:.0} %)",
                d.cost_ns / 1e3,
                d.mean_ns / 1e3,
                d.direction,
                100.0 * d.cost_ns / d.mean_ns.max(1.0),
            )?;
        }
        if !self.top.is_empty() {
            let who = top_few(&self.top, |p| {
                format!("pid {} (`{}`, {:.0} %)", p.pid, p.comm, p.cpu_pct)
            });
            write!(f, " (busiest: {who})")?;
        }
        write!(
            f,
            ". Stop them, or pin dioscope and them to different CPUs (`taskset`, \
             cpus_allowed=), and repeat the run."
        )
    }
}

impl CpuContention {
    /// The CPUs judged, in words: "CPU 0, the one its workers are pinned
    /// to (…)", "the 2 CPUs it may run on (0-1)".
    fn judged(&self) -> String {
        let list = cpu_ranges(&self.cpu_list);
        let one = self.cpus == 1;
        if self.pinned {
            format!(
                "CPU{} {list}, the {} its workers are pinned to (cpus_allowed, cpumask or \
                 numa_cpu_nodes),",
                if one { "" } else { "s" },
                if one { "one" } else { "ones" },
            )
        } else {
            let s = if one { "" } else { "s" };
            match list.is_empty() {
                true => format!("the {} CPU{s} it may run on", self.cpus),
                false => format!("the {} CPU{s} it may run on ({list})", self.cpus),
            }
        }
    }
}

/// `0-3,8`: a CPU list as `Cpus_allowed_list` and `taskset -c` write it.
pub fn cpu_ranges(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(match j > i {
            true => format!("{}-{}", cpus[i], cpus[j]),
            false => cpus[i].to_string(),
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    CpuContention {
        trials: vec![1],
        cpus: 2,
        cpu_list: vec![0, 1],
        pinned: false,
        busy_pct: 98.0,
        ours_pct: 95.0,
        others_pct: 100.0,
        top: vec![CpuProcess {
            pid: 777,
            comm: "hog".into(),
            cpu_pct: 99.0,
            our_cpus_pct: 99.0,
        }],
        delivery: Some(DeliveryCost {
            direction: "read".into(),
            cost_ns: 120e3,
            mean_ns: 200e3,
        }),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_ranges() {
        assert_eq!(cpu_ranges(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpu_ranges(&[0]), "0");
        assert_eq!(cpu_ranges(&[]), "");
    }
}
