//! Reports: one file per format. [`summarize`] turns a [`RunResult`] into
//! per-job summaries (trials merged, per-trial metrics kept) that every
//! format renders.

pub mod json;
pub mod text;

use crate::runner::{DirStats, JobRun, RunResult, Tick};
use crate::stats::Summary;
use dioscope_sys::proc::Usage;
use serde::Serialize;

/// `12.3k`, `1.20M`.
pub fn human_count(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// `482MiB`, `1.2GiB`.
pub fn human_bytes(v: f64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = v;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v >= 100.0 || i == 0 {
        format!("{v:.0}{}", U[i])
    } else {
        format!("{v:.1}{}", U[i])
    }
}

/// Nanoseconds in a readable unit.
pub fn human_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// Metrics of one trial of one job, the unit the trial statistics work on.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TrialMetrics {
    pub trial: u32,
    pub iops: f64,
    pub bw_bytes: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub lat_mean_ns: f64,
    pub lat_p99_ns: f64,
    pub runtime_ms: f64,
    /// Process-wide CPU (all threads) per I/O, µs; the group's if jobs shared it.
    pub cpu_us_per_io: f64,
    /// System-wide busy CPU per I/O, µs.
    pub sys_cpu_us_per_io: f64,
    pub ctx_per_io: f64,
    /// IOPS per 1 s interval.
    pub iops_series: Vec<f64>,
    pub errors: u64,
    pub interrupted: bool,
}

/// Statistics of the main metrics over trials.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TrialStats {
    pub iops: Summary,
    pub bw_bytes: Summary,
    pub lat_mean_ns: Summary,
    pub lat_p99_ns: Summary,
    pub cpu_us_per_io: Summary,
}

/// One job (or reporting group) ready to render.
#[derive(Debug, Clone)]
pub struct JobSummary<'a> {
    pub name: String,
    pub group: u32,
    pub runs: Vec<&'a JobRun>,
    pub dirs: [DirStats; 2],
    pub sync: DirStats,
    /// Measured time summed over trials (ms).
    pub runtime_ms: f64,
    pub thread_cpu: Usage,
    pub process_cpu: Usage,
    pub system_busy_us: f64,
    pub system_pct: crate::stats::cpu::SysCpuPct,
    pub wall_ns: u64,
    pub trials: Vec<TrialMetrics>,
    pub stats: TrialStats,
    pub ticks: Vec<Tick>,
    pub queue: crate::runner::QueueStats,
    pub first_error: Option<(crate::runner::IoErrorInfo, String)>,
    pub max_worker_cpu: f64,
}

impl JobSummary<'_> {
    pub fn total_ios(&self) -> u64 {
        self.dirs[0].ios + self.dirs[1].ios
    }
    pub fn iops(&self, d: usize) -> f64 {
        if self.runtime_ms > 0.0 {
            self.dirs[d].ios as f64 * 1000.0 / self.runtime_ms
        } else {
            0.0
        }
    }
    pub fn bw_bytes(&self, d: usize) -> f64 {
        if self.runtime_ms > 0.0 {
            self.dirs[d].bytes as f64 * 1000.0 / self.runtime_ms
        } else {
            0.0
        }
    }
    /// Process-wide CPU µs per I/O (user + system, all threads).
    pub fn cpu_us_per_io(&self) -> f64 {
        let ios = self.total_ios().max(1) as f64;
        (self.process_cpu.user_us + self.process_cpu.sys_us) as f64 / ios
    }
    pub fn sys_cpu_us_per_io(&self) -> f64 {
        self.system_busy_us / self.total_ios().max(1) as f64
    }
}

fn tick_iops(ticks: &[Tick]) -> Vec<f64> {
    let mut prev = [0u64; 2];
    let mut prev_t = 0u64;
    let mut out = Vec::with_capacity(ticks.len());
    for t in ticks {
        let dt = (t.t_ns - prev_t).max(1) as f64 / 1e9;
        out.push((t.ios[0] + t.ios[1] - prev[0] - prev[1]) as f64 / dt);
        prev = t.ios;
        prev_t = t.t_ns;
    }
    out
}

/// Merge trials (and, with group_reporting, the jobs of a group).
pub fn summarize(r: &RunResult) -> Vec<JobSummary<'_>> {
    let mut units: Vec<Vec<&JobRun>> = Vec::new();
    for j in &r.jobs {
        let grouped = j.resolved.spec.group_reporting;
        match units.last_mut() {
            Some(u)
                if grouped
                    && u[0].resolved.group == j.resolved.group
                    && u[0].resolved.spec.group_reporting =>
            {
                u.push(j)
            }
            _ => units.push(vec![j]),
        }
    }
    units
        .into_iter()
        .filter(|u| u.iter().any(|j| !j.trials.is_empty()))
        .map(|runs| {
            let first = runs[0];
            let group = first.resolved.group;
            let genv = r.groups.iter().find(|g| g.id == group);
            let ntrials = runs.iter().map(|j| j.trials.len()).max().unwrap_or(0);
            let mut s = JobSummary {
                name: first.resolved.spec.name.clone(),
                group,
                runs: runs.clone(),
                dirs: Default::default(),
                sync: DirStats::default(),
                runtime_ms: 0.0,
                thread_cpu: Usage::default(),
                process_cpu: Usage::default(),
                system_busy_us: 0.0,
                system_pct: Default::default(),
                wall_ns: 0,
                trials: Vec::new(),
                stats: TrialStats::default(),
                ticks: Vec::new(),
                queue: Default::default(),
                first_error: None,
                max_worker_cpu: 0.0,
            };
            let mut sys_total = crate::stats::cpu::SysCpu::default();
            for t in 0..ntrials {
                let mut dirs: [DirStats; 2] = Default::default();
                let mut runtime_ns = 0u64;
                let mut ticks: Vec<Tick> = Vec::new();
                let mut errors = 0;
                let mut interrupted = false;
                for j in &runs {
                    let Some(tj) = j.trials.get(t) else { continue };
                    for (a, b) in dirs.iter_mut().zip(&tj.dirs) {
                        a.merge(b);
                    }
                    s.sync.merge(&tj.sync);
                    runtime_ns = runtime_ns.max(tj.runtime_ns);
                    s.thread_cpu.add(&tj.thread_cpu);
                    s.queue.add(&tj.queue);
                    s.max_worker_cpu = s.max_worker_cpu.max(tj.max_worker_cpu);
                    errors += tj.dirs[0].errors + tj.dirs[1].errors;
                    interrupted |= tj.interrupted;
                    if s.first_error.is_none() {
                        s.first_error = tj.first_error.clone();
                    }
                    crate::runner::merge_ticks(&mut ticks, &tj.ticks);
                }
                let env = genv.and_then(|g| g.trials.get(t));
                let ios = dirs[0].ios + dirs[1].ios;
                let rt_ms = runtime_ns as f64 / 1e6;
                let mut m = TrialMetrics {
                    trial: t as u32 + 1,
                    runtime_ms: rt_ms,
                    errors,
                    interrupted,
                    iops_series: tick_iops(&ticks),
                    ..Default::default()
                };
                if rt_ms > 0.0 {
                    m.iops = ios as f64 * 1000.0 / rt_ms;
                    m.read_iops = dirs[0].ios as f64 * 1000.0 / rt_ms;
                    m.write_iops = dirs[1].ios as f64 * 1000.0 / rt_ms;
                    m.bw_bytes = (dirs[0].bytes + dirs[1].bytes) as f64 * 1000.0 / rt_ms;
                }
                let mut lat = dirs[0].lat.clone();
                lat.merge(&dirs[1].lat);
                m.lat_mean_ns = lat.mean();
                m.lat_p99_ns = lat.percentile(99.0) as f64;
                if let Some(e) = env {
                    // Process-wide and system-wide figures belong to the whole group.
                    let gios = e.ios.max(1) as f64;
                    m.cpu_us_per_io = (e.process.user_us + e.process.sys_us) as f64 / gios;
                    m.sys_cpu_us_per_io = e.system.busy_us() as f64 / gios;
                    m.ctx_per_io = (e.process.vol_ctx + e.process.invol_ctx) as f64 / gios;
                    s.process_cpu.user_us += e.process.user_us;
                    s.process_cpu.sys_us += e.process.sys_us;
                    s.process_cpu.vol_ctx += e.process.vol_ctx;
                    s.process_cpu.invol_ctx += e.process.invol_ctx;
                    s.process_cpu.maxrss_kb = s.process_cpu.maxrss_kb.max(e.process.maxrss_kb);
                    s.system_busy_us += e.system.busy_us() as f64;
                    s.wall_ns += e.wall_ns;
                    let sc = &mut sys_total;
                    sc.user += e.system.user;
                    sc.nice += e.system.nice;
                    sc.system += e.system.system;
                    sc.idle += e.system.idle;
                    sc.iowait += e.system.iowait;
                    sc.irq += e.system.irq;
                    sc.softirq += e.system.softirq;
                    sc.steal += e.system.steal;
                }
                s.runtime_ms += rt_ms;
                for (a, b) in s.dirs.iter_mut().zip(&dirs) {
                    a.merge(b);
                }
                if t + 1 == ntrials {
                    s.ticks = ticks;
                }
                s.trials.push(m);
            }
            s.system_pct = sys_total.percents();
            let col = |f: fn(&TrialMetrics) -> f64| {
                Summary::of(
                    &s.trials
                        .iter()
                        .filter(|t| t.runtime_ms > 0.0)
                        .map(f)
                        .collect::<Vec<_>>(),
                )
            };
            s.stats = TrialStats {
                iops: col(|t| t.iops),
                bw_bytes: col(|t| t.bw_bytes),
                lat_mean_ns: col(|t| t.lat_mean_ns),
                lat_p99_ns: col(|t| t.lat_p99_ns),
                cpu_us_per_io: col(|t| t.cpu_us_per_io),
            };
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(human_count(123_456.0), "123.5k");
        assert_eq!(human_count(1_234_567.0), "1.23M");
        assert_eq!(human_bytes(482.0 * 1024.0 * 1024.0), "482MiB");
        assert_eq!(human_ns(1500.0), "1.5µs");
    }
}
