//! Aggregation: the trials of a job (and, with `group_reporting`, the jobs
//! of a group) merged into one [`JobSummary`], with one [`TrialMetrics`] per
//! trial and the [`TrialStats`] over them. Every renderer and the diagnosis
//! read these; nothing here knows the runner or the job parser, only the raw
//! measurements of [`super::measure`].

use super::measure::{merge_ticks, DirStats, IoErrorInfo, QueueStats, Tick, TrialEnv, TrialJob};
use crate::stats::cpu::{SysCpu, SysCpuPct};
use crate::stats::Summary;
use dioscope_sys::proc::Usage;
use serde::{Deserialize, Serialize};

/// Metrics of one trial of one job, the unit the trial statistics work on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialMetrics {
    pub trial: u32,
    pub iops: f64,
    pub bw_bytes: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub lat_mean_ns: f64,
    pub lat_p99_ns: f64,
    /// Median and p99.9 of the trial's latencies (0 in results written
    /// before they were recorded).
    #[serde(default)]
    pub lat_p50_ns: f64,
    #[serde(default)]
    pub lat_p999_ns: f64,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialStats {
    pub iops: Summary,
    pub bw_bytes: Summary,
    pub lat_mean_ns: Summary,
    pub lat_p99_ns: Summary,
    pub cpu_us_per_io: Summary,
}

/// One job of a run as the aggregation sees it.
#[derive(Debug, Clone, Copy)]
pub struct JobInput<'a> {
    pub name: &'a str,
    /// fio's reporting group (`group_reporting` merges within it).
    pub groupid: u32,
    /// The run phase it ran in (whose whole-process figures it shares).
    pub phase: u32,
    pub group_reporting: bool,
    pub trials: &'a [TrialJob],
}

/// One run phase's whole-process and system-wide figures, per trial.
#[derive(Debug, Clone, Copy)]
pub struct PhaseInput<'a> {
    pub phase: u32,
    pub trials: &'a [TrialEnv],
    /// `--trials=auto` chose how many trials: the intervals are widened
    /// for its stop ([`Summary::of_trials`]).
    pub auto_stop: bool,
}

/// One job (or reporting group) ready to render.
#[derive(Debug, Clone, Default)]
pub struct JobSummary {
    pub name: String,
    /// fio's `groupid`.
    pub groupid: u32,
    /// The run phase (runner/plan.rs) of its first job.
    pub phase: u32,
    /// Indices of the merged jobs in the input (the first names the unit).
    pub jobs: Vec<usize>,
    /// The clone this entry is, when a job's clones are reported apart.
    pub clone_of: Option<u32>,
    pub dirs: [DirStats; 2],
    pub sync: DirStats,
    /// Trims (fio's third direction).
    pub trim: DirStats,
    /// Measured time summed over trials (ms).
    pub runtime_ms: f64,
    pub thread_cpu: Usage,
    pub process_cpu: Usage,
    pub system_busy_us: f64,
    pub system_pct: SysCpuPct,
    pub wall_ns: u64,
    pub trials: Vec<TrialMetrics>,
    pub stats: TrialStats,
    /// Per-interval counters of every trial (index = trial - 1).
    pub ticks: Vec<Vec<Tick>>,
    pub queue: QueueStats,
    pub first_error: Option<(IoErrorInfo, String)>,
    /// Errors `ignore_error` lists, which the job went on after, and the
    /// first one's errno (0: none).
    pub ignored_errors: u64,
    pub first_ignored: i32,
    pub max_worker_cpu: f64,
}

impl JobSummary {
    pub fn total_ios(&self) -> u64 {
        self.dirs[0].ios + self.dirs[1].ios
    }
    pub fn iops(&self, d: usize) -> f64 {
        per_second(self.dirs[d].ios, self.runtime_ms)
    }
    pub fn bw_bytes(&self, d: usize) -> f64 {
        per_second(self.dirs[d].bytes, self.runtime_ms)
    }
    /// Process-wide CPU µs per I/O (user + system, all threads).
    pub fn cpu_us_per_io(&self) -> f64 {
        let ios = self.total_ios().max(1) as f64;
        self.process_cpu.cpu_us() as f64 / ios
    }
    pub fn sys_cpu_us_per_io(&self) -> f64 {
        self.system_busy_us / self.total_ios().max(1) as f64
    }
    pub fn ctx_per_io(&self) -> f64 {
        self.process_cpu.ctx_switches() as f64 / self.total_ios().max(1) as f64
    }
}

/// `n` per second over `ms` milliseconds (0 when no time was measured).
pub fn per_second(n: u64, ms: f64) -> f64 {
    if ms > 0.0 {
        n as f64 * 1000.0 / ms
    } else {
        0.0
    }
}

/// IOPS (both directions) per measured interval of a tick series.
fn tick_iops(ticks: &[Tick]) -> Vec<f64> {
    ticks
        .iter()
        .filter(|t| !t.ramp)
        .map(|t| (t.ios[0] + t.ios[1]) as f64 / (t.dur_ns.max(1) as f64 / 1e9))
        .collect()
}

/// The units a run reports: each job alone, or with `group_reporting` the
/// consecutive jobs of one reporting group together (indices into `jobs`).
fn units(jobs: &[JobInput]) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        match units.last_mut() {
            Some(u)
                if j.group_reporting
                    && jobs[u[0]].groupid == j.groupid
                    && jobs[u[0]].group_reporting =>
            {
                u.push(i)
            }
            _ => units.push(vec![i]),
        }
    }
    units
}

/// Merge trials (and, with group_reporting, the jobs of a group).
pub fn summarize(jobs: &[JobInput], phases: &[PhaseInput]) -> Vec<JobSummary> {
    units(jobs)
        .into_iter()
        .filter(|u| u.iter().any(|&i| !jobs[i].trials.is_empty()))
        .map(|u| summarize_unit(jobs, phases, u))
        .collect()
}

/// One unit's trials, merged trial by trial, then the statistics over them.
fn summarize_unit(jobs: &[JobInput], phases: &[PhaseInput], unit: Vec<usize>) -> JobSummary {
    let first = &jobs[unit[0]];
    // A reporting group lies within one phase (stonewall opens both) but
    // across a wait_for boundary: its whole-process figures are the first's.
    let genv = phases.iter().find(|g| g.phase == first.phase);
    let ntrials = unit
        .iter()
        .map(|&i| jobs[i].trials.len())
        .max()
        .unwrap_or(0);
    let mut s = JobSummary {
        name: first.name.to_string(),
        groupid: first.groupid,
        phase: first.phase,
        ..Default::default()
    };
    let mut sys_total = SysCpu::default();
    for t in 0..ntrials {
        let merged = merge_trial(&mut s, unit.iter().filter_map(|&i| jobs[i].trials.get(t)));
        let env = genv.and_then(|g| g.trials.get(t));
        let mut m = trial_metrics(t, &merged);
        if let Some(e) = env {
            add_group_env(&mut s, &mut sys_total, &mut m, e);
        }
        s.runtime_ms += m.runtime_ms;
        for (a, b) in s.dirs.iter_mut().zip(&merged.dirs) {
            a.merge(b);
        }
        s.ticks.push(merged.ticks);
        s.trials.push(m);
    }
    s.jobs = unit;
    s.system_pct = sys_total.percents();
    s.stats = trial_stats(&s.trials, genv.is_some_and(|g| g.auto_stop));
    s
}

/// The jobs of a unit in one trial, merged; the per-unit totals that do not
/// depend on the trial's time (sync, thread CPU, queue) go straight into `s`.
fn merge_trial<'a>(s: &mut JobSummary, trials: impl Iterator<Item = &'a TrialJob>) -> TrialJob {
    let mut out = TrialJob::default();
    for tj in trials {
        for (a, b) in out.dirs.iter_mut().zip(&tj.dirs) {
            a.merge(b);
        }
        s.sync.merge(&tj.sync);
        s.trim.merge(&tj.trim);
        out.runtime_ns = out.runtime_ns.max(tj.runtime_ns);
        s.thread_cpu.add(&tj.thread_cpu);
        s.queue.add(&tj.queue);
        s.max_worker_cpu = s.max_worker_cpu.max(tj.max_worker_cpu);
        out.interrupted |= tj.interrupted;
        if s.first_error.is_none() {
            s.first_error = tj.first_error.clone();
        }
        s.ignored_errors += tj.ignored_errors;
        if s.first_ignored == 0 {
            s.first_ignored = tj.first_ignored;
        }
        merge_ticks(&mut out.ticks, &tj.ticks);
    }
    out
}

/// The metrics of one merged trial (CPU figures come from the group).
fn trial_metrics(t: usize, merged: &TrialJob) -> TrialMetrics {
    let dirs = &merged.dirs;
    let rt_ms = merged.runtime_ns as f64 / 1e6;
    let mut lat = dirs[0].lat.clone();
    lat.merge(&dirs[1].lat);
    TrialMetrics {
        trial: t as u32 + 1,
        runtime_ms: rt_ms,
        errors: dirs[0].errors + dirs[1].errors,
        interrupted: merged.interrupted,
        iops_series: tick_iops(&merged.ticks),
        iops: per_second(dirs[0].ios + dirs[1].ios, rt_ms),
        read_iops: per_second(dirs[0].ios, rt_ms),
        write_iops: per_second(dirs[1].ios, rt_ms),
        bw_bytes: per_second(dirs[0].bytes + dirs[1].bytes, rt_ms),
        lat_mean_ns: lat.mean(),
        lat_p99_ns: lat.percentile(99.0) as f64,
        lat_p50_ns: lat.percentile(50.0) as f64,
        lat_p999_ns: lat.percentile(99.9) as f64,
        ..Default::default()
    }
}

/// Process-wide and system-wide figures belong to the whole group: per I/O
/// of the group into the trial, summed into the unit.
fn add_group_env(s: &mut JobSummary, sys: &mut SysCpu, m: &mut TrialMetrics, e: &TrialEnv) {
    let gios = e.ios.max(1) as f64;
    m.cpu_us_per_io = e.process.cpu_us() as f64 / gios;
    m.sys_cpu_us_per_io = e.system.busy_us() as f64 / gios;
    m.ctx_per_io = e.process.ctx_switches() as f64 / gios;
    s.process_cpu.add(&e.process);
    s.system_busy_us += e.system.busy_us() as f64;
    s.wall_ns += e.wall_ns;
    sys.add(&e.system);
}

/// The statistics over the trials that ran to their end and measured
/// anything: an interrupted trial measured a different (shorter) window, so
/// it is listed as interrupted, not averaged in. `auto_stop`: the trials
/// were chosen by `--trials=auto` ([`Summary::of_trials`]).
pub fn trial_stats(trials: &[TrialMetrics], auto_stop: bool) -> TrialStats {
    let col = |f: fn(&TrialMetrics) -> f64| {
        Summary::of_trials(
            &trials
                .iter()
                .filter(|t| t.runtime_ms > 0.0 && !t.interrupted)
                .map(f)
                .collect::<Vec<_>>(),
            auto_stop,
        )
    };
    TrialStats {
        iops: col(|t| t.iops),
        bw_bytes: col(|t| t.bw_bytes),
        lat_mean_ns: col(|t| t.lat_mean_ns),
        lat_p99_ns: col(|t| t.lat_p99_ns),
        cpu_us_per_io: col(|t| t.cpu_us_per_io),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::TrialSeries;

    #[test]
    fn series_are_per_interval_rates() {
        // Ticks are per interval (the worker takes the differences).
        let tick = |t_s: u64, ios: [u64; 2], lat: [u64; 2]| Tick {
            end_ns: t_s * 1_000_000_000,
            dur_ns: 1_000_000_000,
            ios,
            bytes: [ios[0] * 4096, ios[1] * 4096],
            lat_sum_ns: lat,
            ..Default::default()
        };
        let s = TrialSeries::from_ticks(
            2,
            1_000_000_000,
            0,
            &[
                tick(1, [100, 0], [100_000, 0]),
                tick(2, [200, 10], [400_000, 50_000]),
            ],
        );
        assert_eq!(s.trial, 2);
        assert_eq!(s.t_ms, [1000.0, 2000.0]);
        assert_eq!(s.read.iops, [100.0, 200.0]);
        assert_eq!(s.read.bw_bytes, [409_600.0, 819_200.0]);
        assert_eq!(s.read.lat_mean_ns, [1000.0, 2000.0]);
        assert_eq!(s.write.iops, [0.0, 10.0]);
        assert_eq!(s.write.lat_mean_ns, [0.0, 5000.0]);
    }

    fn trial(ios: u64, ms: u64) -> TrialJob {
        let mut t = TrialJob {
            runtime_ns: ms * 1_000_000,
            ..Default::default()
        };
        t.dirs[0].ios = ios;
        t.dirs[0].bytes = ios * 4096;
        t
    }

    #[test]
    fn group_reporting_merges_jobs_and_trials_stay_apart() {
        let a = [trial(1000, 1000), trial(2000, 1000)];
        let b = [trial(500, 500), trial(500, 1000)];
        let c = [trial(7, 1000)];
        let jobs = [
            JobInput {
                name: "a",
                groupid: 0,
                phase: 0,
                group_reporting: true,
                trials: &a,
            },
            JobInput {
                name: "a",
                groupid: 0,
                phase: 0,
                group_reporting: true,
                trials: &b,
            },
            JobInput {
                name: "c",
                groupid: 1,
                phase: 0,
                group_reporting: false,
                trials: &c,
            },
        ];
        let s = summarize(&jobs, &[]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].jobs, [0, 1]);
        assert_eq!(s[0].dirs[0].ios, 4000);
        // A trial lasts as long as its longest job.
        assert_eq!(s[0].runtime_ms, 2000.0);
        assert_eq!(s[0].trials[0].iops, 1500.0);
        assert_eq!(s[0].trials[1].iops, 2500.0);
        assert_eq!(s[0].stats.iops.mean, 2000.0);
        assert_eq!(s[0].ticks.len(), 2, "every trial's series");
        assert_eq!(s[1].name, "c");
        assert_eq!(s[1].iops(0), 7.0);
    }
}
