//! What each rank sends rank 0 after the run, and how rank 0 makes one
//! result of them: counters and CPU summed, latency histograms merged
//! bucket by bucket (exact: the same bucket layout on every rank), each
//! trial's time the window from the first rank's start to the last rank's
//! end, and every rank's own figures kept in the `ranks` section.

use crate::results::measure::{DirStats, QueueStats, Tick, TrialEnv, TrialJob};
use crate::results::ranks::{AggregateTrial, RankDoc, RankJob, Ranks, Window};
use crate::runner::RunResult;
use crate::stats::histogram::HistParts;
use crate::stats::Histogram;
use dioscope_sys::proc::Usage;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireDir {
    ios: u64,
    bytes: u64,
    short_ios: u64,
    errors: u64,
    slat: HistParts,
    clat: HistParts,
    lat: HistParts,
    /// Per I/O priority (cmdprio_*): the priority and its histogram.
    #[serde(default)]
    prios: Vec<(u16, HistParts)>,
}

impl WireDir {
    fn from(d: &DirStats) -> WireDir {
        WireDir {
            ios: d.ios,
            bytes: d.bytes,
            short_ios: d.short_ios,
            errors: d.errors,
            slat: d.slat.to_parts(),
            clat: d.clat.to_parts(),
            lat: d.lat.to_parts(),
            prios: d.prios.iter().map(|(p, h)| (*p, h.to_parts())).collect(),
        }
    }
    fn stats(&self) -> DirStats {
        DirStats {
            ios: self.ios,
            bytes: self.bytes,
            short_ios: self.short_ios,
            errors: self.errors,
            slat: Histogram::from_parts(&self.slat),
            clat: Histogram::from_parts(&self.clat),
            lat: Histogram::from_parts(&self.lat),
            prios: self
                .prios
                .iter()
                .map(|(p, h)| (*p, Histogram::from_parts(h)))
                .collect(),
        }
    }
}

type WireUsage = [u64; 7];

/// One interval: end, length, ramp, then ios, bytes, latency sum, p50, p99
/// per direction.
type WireTick = (u64, u64, bool, [[u64; 2]; 5]);

fn usage_wire(u: &Usage) -> WireUsage {
    [
        u.user_us,
        u.sys_us,
        u.vol_ctx,
        u.invol_ctx,
        u.minflt,
        u.majflt,
        u.maxrss_kb,
    ]
}

fn add_usage(u: &mut Usage, w: &WireUsage) {
    u.user_us += w[0];
    u.sys_us += w[1];
    u.vol_ctx += w[2];
    u.invol_ctx += w[3];
    u.minflt += w[4];
    u.majflt += w[5];
    u.maxrss_kb = u.maxrss_kb.max(w[6]);
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireTrial {
    dirs: [WireDir; 2],
    sync: WireDir,
    trim: WireDir,
    cpu: WireUsage,
    ticks: Vec<WireTick>,
    workers: u32,
    max_worker_cpu: f64,
    queue: [[u64; 7]; 3],
    interrupted: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireEnv {
    process: WireUsage,
    ios: u64,
}

/// Everything rank 0 needs from one rank.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankReport {
    pub rank: u32,
    pub host: String,
    pub exit_code: i32,
    /// Per job (in job order), per trial.
    jobs: Vec<Vec<WireTrial>>,
    /// Per group (in order), per trial.
    groups: Vec<Vec<WireEnv>>,
    pub windows: Vec<Window>,
    rank_jobs: Vec<RankJob>,
    pub findings: serde_json::Value,
    /// The rank's errors, as it would have printed them.
    pub errors: Vec<String>,
}

impl RankReport {
    pub fn new(
        rank: u32,
        host: &str,
        exit_code: i32,
        r: &RunResult,
        doc: &crate::results::RunDoc,
        mut windows: Vec<Window>,
        errors: Vec<String>,
    ) -> RankReport {
        // Each window's counts from the result itself (the trial hooks only
        // see the progress counters).
        for w in &mut windows {
            let (mut ios, mut bytes) = (0, 0);
            for j in r.jobs.iter().filter(|j| j.resolved.phase == w.group) {
                if let Some(t) = j.trials.get(w.trial as usize) {
                    ios += t.dirs[0].ios + t.dirs[1].ios;
                    bytes += t.dirs[0].bytes + t.dirs[1].bytes;
                }
            }
            if w.ios_first_done == u64::MAX {
                w.ios_first_done = ios;
                w.bytes_first_done = bytes;
            }
            w.ios = ios;
            w.bytes = bytes;
        }
        RankReport {
            rank,
            host: host.to_string(),
            exit_code,
            jobs: r
                .jobs
                .iter()
                .map(|j| j.trials.iter().map(wire_trial).collect())
                .collect(),
            groups: r
                .phases
                .iter()
                .map(|g| {
                    g.trials
                        .iter()
                        .map(|e| WireEnv {
                            process: usage_wire(&e.process),
                            ios: e.ios,
                        })
                        .collect()
                })
                .collect(),
            windows,
            rank_jobs: doc
                .jobs
                .iter()
                .map(|j| RankJob {
                    jobname: j.jobname.clone(),
                    read_ios: j.read.total_ios,
                    read_bytes: j.read.io_bytes,
                    read_iops: j.read.iops,
                    read_bw_bytes: j.read.bw_bytes,
                    write_ios: j.write.total_ios,
                    write_bytes: j.write.io_bytes,
                    write_iops: j.write.iops,
                    write_bw_bytes: j.write.bw_bytes,
                })
                .collect(),
            findings: doc
                .dioscope
                .as_ref()
                .and_then(|d| serde_json::to_value(&d.findings).ok())
                .unwrap_or(serde_json::Value::Array(Vec::new())),
            errors,
        }
    }
}

fn wire_trial(t: &TrialJob) -> WireTrial {
    WireTrial {
        dirs: [WireDir::from(&t.dirs[0]), WireDir::from(&t.dirs[1])],
        sync: WireDir::from(&t.sync),
        trim: WireDir::from(&t.trim),
        cpu: usage_wire(&t.thread_cpu),
        ticks: t
            .ticks
            .iter()
            .map(|k| {
                (
                    k.end_ns,
                    k.dur_ns,
                    k.ramp,
                    [k.ios, k.bytes, k.lat_sum_ns, k.lat_p50_ns, k.lat_p99_ns],
                )
            })
            .collect(),
        workers: t.workers,
        max_worker_cpu: t.max_worker_cpu,
        queue: [
            t.queue.depth_level,
            t.queue.submit_batches,
            t.queue.complete_batches,
        ],
        interrupted: t.interrupted,
    }
}

fn add_trial(into: &mut TrialJob, w: &WireTrial) {
    for d in 0..2 {
        into.dirs[d].merge(&w.dirs[d].stats());
    }
    into.sync.merge(&w.sync.stats());
    into.trim.merge(&w.trim.stats());
    add_usage(&mut into.thread_cpu, &w.cpu);
    let ticks: Vec<Tick> = w
        .ticks
        .iter()
        .map(
            |&(end_ns, dur_ns, ramp, [ios, bytes, lat_sum_ns, lat_p50_ns, lat_p99_ns])| Tick {
                end_ns,
                dur_ns,
                ramp,
                ios,
                bytes,
                lat_sum_ns,
                lat_p50_ns,
                lat_p99_ns,
            },
        )
        .collect();
    crate::results::measure::merge_ticks(&mut into.ticks, &ticks);
    into.workers += w.workers;
    into.max_worker_cpu = into.max_worker_cpu.max(w.max_worker_cpu);
    into.queue.add(&QueueStats {
        depth_level: w.queue[0],
        submit_batches: w.queue[1],
        complete_batches: w.queue[2],
    });
    into.interrupted |= w.interrupted;
}

/// The aggregate figures of every (group, trial) over all ranks' windows.
pub fn aggregate(reports: &[RankReport], stonewalling: bool) -> Vec<AggregateTrial> {
    let mut keys: Vec<(u32, u32)> = reports
        .iter()
        .flat_map(|r| r.windows.iter().map(|w| (w.group, w.trial)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(group, trial)| {
            let ws: Vec<&Window> = reports
                .iter()
                .filter_map(|r| {
                    r.windows
                        .iter()
                        .find(|w| (w.group, w.trial) == (group, trial))
                })
                .collect();
            let first_start = ws.iter().map(|w| w.start_ns).min().unwrap_or(0);
            let last_start = ws.iter().map(|w| w.start_ns).max().unwrap_or(0);
            let last_end = ws.iter().map(|w| w.end_ns).max().unwrap_or(0);
            let first_done = ws.iter().map(|w| w.done_ns).min().unwrap_or(0);
            let window_ns = last_end.saturating_sub(first_start);
            let first_done_ns = first_done.saturating_sub(first_start);
            let ios: u64 = ws.iter().map(|w| w.ios).sum();
            let bytes: u64 = ws.iter().map(|w| w.bytes).sum();
            let (ios_f, bytes_f) = if stonewalling {
                (
                    ws.iter().map(|w| w.ios_first_done).sum(),
                    ws.iter().map(|w| w.bytes_first_done).sum(),
                )
            } else {
                (0, 0)
            };
            let per_s = |n: u64, ns: u64| {
                if ns > 0 {
                    n as f64 * 1e9 / ns as f64
                } else {
                    0.0
                }
            };
            AggregateTrial {
                group,
                trial,
                window_ns,
                ios,
                bytes,
                iops: per_s(ios, window_ns),
                bw_bytes: per_s(bytes, window_ns),
                first_done_ns,
                ios_first_done: ios_f,
                bytes_first_done: bytes_f,
                iops_first_done: per_s(ios_f, first_done_ns),
                bw_bytes_first_done: per_s(bytes_f, first_done_ns),
                start_spread_ns: last_start.saturating_sub(first_start),
                end_spread_ns: last_end.saturating_sub(first_done),
            }
        })
        .collect()
}

/// Rank 0's result with every other rank's measurements added in: the
/// aggregate the fio-compatible top of the document shows. `reports[0]`
/// is rank 0's own.
pub fn merge(mine: &RunResult, reports: &[RankReport], agg: &[AggregateTrial]) -> RunResult {
    let mut out = mine.clone();
    if reports.len() > 1 {
        // Clones are reported apart only within one process: over ranks
        // the job's entry is the sum of every rank's clones.
        for t in out.jobs.iter_mut().flat_map(|j| j.trials.iter_mut()) {
            t.clones.clear();
        }
    }
    for rep in reports.iter().skip(1) {
        for (j, trials) in out.jobs.iter_mut().zip(&rep.jobs) {
            for (t, w) in j.trials.iter_mut().zip(trials) {
                add_trial(t, w);
            }
        }
        for (g, envs) in out.phases.iter_mut().zip(&rep.groups) {
            for (e, w) in g.trials.iter_mut().zip(envs) {
                add_usage(&mut e.process, &w.process);
                e.ios += w.ios;
            }
        }
    }
    // Each trial's time: first start → last end over the ranks.
    for a in agg {
        for j in out.jobs.iter_mut().filter(|j| j.resolved.phase == a.group) {
            if let Some(t) = j.trials.get_mut(a.trial as usize) {
                t.runtime_ns = a.window_ns;
            }
        }
        if let Some(g) = out.phases.iter_mut().find(|g| g.phase == a.group) {
            if let Some(e) = g.trials.get_mut(a.trial as usize) {
                let e: &mut TrialEnv = e;
                e.wall_ns = a.window_ns;
            }
        }
    }
    out
}

/// The `ranks` section.
pub fn section(reports: &[RankReport], agg: Vec<AggregateTrial>, stonewall: &str) -> Ranks {
    Ranks {
        size: reports.len() as u32,
        stonewall: stonewall.to_string(),
        aggregate: agg,
        ranks: reports
            .iter()
            .map(|r| RankDoc {
                rank: r.rank,
                host: r.host.clone(),
                exit_code: r.exit_code,
                jobs: r.rank_jobs.clone(),
                windows: r.windows.clone(),
                findings: r.findings.clone(),
            })
            .collect(),
    }
}
