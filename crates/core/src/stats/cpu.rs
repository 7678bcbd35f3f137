//! System-wide CPU time from /proc/stat (what `sar -u` shows).

use serde::Serialize;

/// Jiffies per state, summed over all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SysCpu {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    steal: u64,
}

impl SysCpu {
    pub fn read() -> SysCpu {
        std::fs::read_to_string("/proc/stat")
            .map(|s| Self::parse(&s))
            .unwrap_or_default()
    }

    pub fn parse(text: &str) -> SysCpu {
        let line = text.lines().find(|l| l.starts_with("cpu ")).unwrap_or("");
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        SysCpu {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
        }
    }

    pub fn since(&self, b: &SysCpu) -> SysCpu {
        SysCpu {
            user: self.user.saturating_sub(b.user),
            nice: self.nice.saturating_sub(b.nice),
            system: self.system.saturating_sub(b.system),
            idle: self.idle.saturating_sub(b.idle),
            iowait: self.iowait.saturating_sub(b.iowait),
            irq: self.irq.saturating_sub(b.irq),
            softirq: self.softirq.saturating_sub(b.softirq),
            steal: self.steal.saturating_sub(b.steal),
        }
    }

    /// Add another interval's ticks (trials summed into a run).
    pub fn add(&mut self, o: &SysCpu) {
        self.user += o.user;
        self.nice += o.nice;
        self.system += o.system;
        self.idle += o.idle;
        self.iowait += o.iowait;
        self.irq += o.irq;
        self.softirq += o.softirq;
        self.steal += o.steal;
    }

    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Busy time (everything but idle and iowait) in microseconds.
    pub fn busy_us(&self) -> u64 {
        (self.user + self.nice + self.system + self.irq + self.softirq + self.steal) * 1_000_000
            / clk_tck()
    }

    /// Percentages of total time: (user, system, irq, softirq, iowait, idle).
    pub fn percents(&self) -> SysCpuPct {
        let t = self.total().max(1) as f64;
        let p = |x: u64| 100.0 * x as f64 / t;
        SysCpuPct {
            user: p(self.user + self.nice),
            system: p(self.system),
            irq: p(self.irq),
            softirq: p(self.softirq),
            iowait: p(self.iowait),
            idle: p(self.idle),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct SysCpuPct {
    pub user: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    pub iowait: f64,
    pub idle: f64,
}

pub use dioscope_sys::proc::clk_tck;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat() {
        let s = SysCpu::parse("cpu  10 1 20 300 4 5 6 7 0 0\ncpu0 1 2 3 4\n");
        assert_eq!(s.user, 10);
        assert_eq!(s.system, 20);
        assert_eq!(s.idle, 300);
        assert_eq!(s.softirq, 6);
        assert_eq!(s.total(), 10 + 1 + 20 + 300 + 4 + 5 + 6 + 7);
        let p = s.percents();
        assert!((p.system - 100.0 * 20.0 / 353.0).abs() < 1e-9);
    }
}
