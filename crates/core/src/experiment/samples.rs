//! From result documents to per-trial samples: one side of a comparison is
//! one or more [`RunDoc`]s (dioscope's, with several trials each, or fio's,
//! one trial per file); every job (matched by group and name, clones
//! merged) gets one value per trial for each metric of [`METRICS`].

use crate::results::model::{Job, Lat};
use crate::results::RunDoc;
use crate::stats::Histogram;
use serde::{Deserialize, Serialize};

/// One metric a comparison reports: its key, label, unit and direction.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub key: &'static str,
    pub label: &'static str,
    /// `ops` (per second), `bytes` (per second), `ns`, `us`, `count`.
    pub unit: &'static str,
    pub higher_is_better: bool,
}

/// Every metric, in the order the tables show them. Index with [`M`].
pub const METRICS: &[MetricDef] = &[
    MetricDef {
        key: "iops",
        label: "IOPS",
        unit: "ops",
        higher_is_better: true,
    },
    MetricDef {
        key: "bw",
        label: "bandwidth",
        unit: "bytes",
        higher_is_better: true,
    },
    MetricDef {
        key: "lat_mean",
        label: "latency mean",
        unit: "ns",
        higher_is_better: false,
    },
    MetricDef {
        key: "lat_p50",
        label: "latency p50",
        unit: "ns",
        higher_is_better: false,
    },
    MetricDef {
        key: "lat_p99",
        label: "latency p99",
        unit: "ns",
        higher_is_better: false,
    },
    MetricDef {
        key: "lat_p99.9",
        label: "latency p99.9",
        unit: "ns",
        higher_is_better: false,
    },
    MetricDef {
        key: "cpu_us_per_io",
        label: "CPU/IO process",
        unit: "us",
        higher_is_better: false,
    },
    MetricDef {
        key: "sys_cpu_us_per_io",
        label: "CPU/IO system",
        unit: "us",
        higher_is_better: false,
    },
    MetricDef {
        key: "requests_per_io",
        label: "dev requests/IO",
        unit: "count",
        higher_is_better: false,
    },
];

/// Indices into [`METRICS`].
pub mod m {
    pub const IOPS: usize = 0;
    pub const BW: usize = 1;
    pub const LAT_MEAN: usize = 2;
    pub const P50: usize = 3;
    pub const P99: usize = 4;
    pub const P999: usize = 5;
    pub const CPU: usize = 6;
    pub const SYS_CPU: usize = 7;
    pub const REQS: usize = 8;
}
pub use m as M;

/// The metric named `key` (also its label, case-insensitive).
pub fn metric_index(key: &str) -> Option<usize> {
    let k = key.trim().to_ascii_lowercase();
    let k = match k.as_str() {
        "bandwidth" | "bw_bytes" => "bw",
        "lat" | "latency" => "lat_mean",
        "p50" => "lat_p50",
        "p99" => "lat_p99",
        "p99.9" | "p999" | "lat_p999" => "lat_p99.9",
        "cpu" => "cpu_us_per_io",
        other => other,
    };
    METRICS
        .iter()
        .position(|d| d.key == k || d.label.eq_ignore_ascii_case(k))
}

/// One value per metric (None: not measured in this trial).
pub type Values = [Option<f64>; 9];

/// One job of one side: its trials and the figures from its merged
/// latency histograms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSamples {
    pub group: u32,
    pub name: String,
    pub trials: Vec<Values>,
    /// Latency mean/p50/p99/p99.9 over every I/O of every trial, from the
    /// merged histograms (`None` where no histogram or percentile list
    /// allows it).
    pub merged: Values,
    /// `--trials=auto` chose the trials of a document: intervals over
    /// them are widened for its stop (`Summary::of_trials`).
    #[serde(default)]
    pub auto_stop: bool,
}

impl JobSamples {
    /// The per-trial values of metric `k` that were measured.
    pub fn column(&self, k: usize) -> Vec<f64> {
        self.trials.iter().filter_map(|t| t[k]).collect()
    }
}

/// The jobs of one side, in the order first seen, and notes on what could
/// not be computed.
#[derive(Debug, Clone, Default)]
pub struct SideSamples {
    pub jobs: Vec<JobSamples>,
    pub notes: Vec<String>,
    /// Per job: every document's latency bins merged, while every document
    /// had bins (json+); `None` once one had none.
    hists: Vec<Option<Histogram>>,
}

/// One job of one document: group, name, trials, merged figures, bins,
/// whether `--trials=auto` chose the trials.
type DocJob = (u32, String, Vec<Values>, Values, Option<Histogram>, bool);

fn tails(h: &Histogram) -> Values {
    let mut v: Values = [None; 9];
    v[M::LAT_MEAN] = pos(h.mean());
    v[M::P50] = pos(h.percentile(50.0) as f64);
    v[M::P99] = pos(h.percentile(99.0) as f64);
    v[M::P999] = pos(h.percentile(99.9) as f64);
    v
}

impl SideSamples {
    /// Add every trial of one document.
    pub fn add(&mut self, doc: &RunDoc) {
        for (group, name, trials, merged, hist, auto_stop) in doc_trials(doc, &mut self.notes) {
            match self
                .jobs
                .iter()
                .position(|j| j.group == group && j.name == name)
            {
                Some(i) => {
                    let j = &mut self.jobs[i];
                    j.trials.extend(trials);
                    j.auto_stop |= auto_stop;
                    // Several files: exact tails only from merged bins.
                    self.hists[i] = match (self.hists[i].take(), hist) {
                        (Some(mut a), Some(b)) => {
                            a.merge(&b);
                            Some(a)
                        }
                        _ => None,
                    };
                    j.merged = match &self.hists[i] {
                        Some(h) => tails(h),
                        None => merge_merged(&j.merged, &merged),
                    };
                }
                None => {
                    self.jobs.push(JobSamples {
                        group,
                        name,
                        trials,
                        merged,
                        auto_stop,
                    });
                    self.hists.push(hist);
                }
            }
        }
    }
}

fn merge_merged(a: &Values, b: &Values) -> Values {
    // Without bins the merged figures of two files cannot be combined
    // exactly; keep none rather than a wrong one (the comparison then falls
    // back on the per-trial median and says so).
    let mut out = [None; 9];
    for k in [M::LAT_MEAN, M::P50, M::P99, M::P999] {
        out[k] = match (a[k], b[k]) {
            (Some(_), Some(_)) => None,
            (x, None) => x,
            (None, y) => y,
        };
    }
    out
}

/// Per job of a document: (group, name, trials, merged figures).
fn doc_trials(doc: &RunDoc, notes: &mut Vec<String>) -> Vec<DocJob> {
    match &doc.dioscope {
        Some(d) if !d.jobs.is_empty() => {
            let mut out = Vec::new();
            for (i, dj) in d.jobs.iter().enumerate() {
                let fj = doc.jobs.get(i);
                let mut trials = Vec::new();
                for t in &dj.trials {
                    if t.runtime_ms <= 0.0 {
                        continue;
                    }
                    let mut v: Values = [None; 9];
                    v[M::IOPS] = Some(t.iops);
                    v[M::BW] = Some(t.bw_bytes);
                    v[M::LAT_MEAN] = pos(t.lat_mean_ns);
                    v[M::P50] = pos(t.lat_p50_ns);
                    v[M::P99] = pos(t.lat_p99_ns);
                    v[M::P999] = pos(t.lat_p999_ns);
                    v[M::CPU] = pos(t.cpu_us_per_io);
                    v[M::SYS_CPU] = pos(t.sys_cpu_us_per_io);
                    v[M::REQS] = d
                        .devices
                        .iter()
                        .find(|td| {
                            td.group == dj.groupid
                                && td.trial == t.trial
                                && td.jobs.contains(&dj.jobname)
                        })
                        .and_then(|td| td.devices.first())
                        .and_then(|dv| dv.metrics.requests_per_io);
                    trials.push(v);
                }
                let merged = fj.map(job_merged).unwrap_or([None; 9]);
                let hist = fj.and_then(|j| histogram(&pick_lats(&[j])));
                let auto_stop = dj.summary.iops.auto_stop;
                out.push((
                    dj.groupid,
                    dj.jobname.clone(),
                    trials,
                    merged,
                    hist,
                    auto_stop,
                ));
            }
            out
        }
        _ => fio_trials(doc, notes),
    }
}

fn pos(x: f64) -> Option<f64> {
    (x > 0.0 && x.is_finite()).then_some(x)
}

/// The latency distribution of a job over both directions: bins when the
/// document has them, else the percentile list of the one direction that
/// did I/O.
fn job_merged(j: &Job) -> Values {
    let mut v: Values = [None; 9];
    let lats = pick_lats(&[j]);
    if lats.is_empty() {
        return v;
    }
    if let Some(h) = histogram(&lats) {
        return tails(&h);
    }
    let n: u64 = lats.iter().map(|l| l.n).sum();
    v[M::LAT_MEAN] = pos(lats.iter().map(|l| l.mean * l.n as f64).sum::<f64>() / n as f64);
    if lats.len() == 1 {
        let ps = lats[0].percentiles();
        let find = |p: f64| {
            ps.iter()
                .find(|(q, _)| (q - p).abs() < 1e-9)
                .map(|(_, x)| *x as f64)
        };
        v[M::P50] = find(50.0);
        v[M::P99] = find(99.0);
        v[M::P999] = find(99.9);
    }
    v
}

/// The latency distributions of the directions that did I/O: total
/// latency (`lat_ns`) where it has bins or percentiles, else completion
/// latency (`clat_ns`: fio writes percentiles and bins only for it unless
/// `lat_percentiles` is set).
fn pick_lats<'a>(jobs: &[&'a Job]) -> Vec<&'a Lat> {
    jobs.iter()
        .flat_map(|j| [&j.read, &j.write])
        .filter(|d| d.lat_ns.n > 0 || d.clat_ns.n > 0)
        .map(|d| {
            if d.lat_ns.bins.is_some() || d.lat_ns.percentile.is_some() || d.clat_ns.n == 0 {
                &d.lat_ns
            } else {
                &d.clat_ns
            }
        })
        .collect()
}

/// All `lats` merged into one histogram, when every one of them has bins.
fn histogram(lats: &[&Lat]) -> Option<Histogram> {
    if lats.iter().any(|l| l.bins.is_none()) {
        return None;
    }
    let mut h = Histogram::new();
    for l in lats {
        for (ns, c) in l.bin_counts() {
            h.record_n(ns, c);
        }
    }
    Some(h)
}

/// fio's own JSON: one trial per file; a job's clones (fio repeats the name
/// per clone without group_reporting) merged.
fn fio_trials(doc: &RunDoc, notes: &mut Vec<String>) -> Vec<DocJob> {
    let mut units: Vec<(u32, String, Vec<&Job>)> = Vec::new();
    for j in &doc.jobs {
        match units
            .iter_mut()
            .find(|u| u.0 == j.groupid && u.1 == j.jobname)
        {
            Some(u) => u.2.push(j),
            None => units.push((j.groupid, j.jobname.clone(), vec![j])),
        }
    }
    let all_ios: u64 = doc
        .jobs
        .iter()
        .map(|j| j.read.total_ios + j.write.total_ios)
        .sum();
    let dev_reqs: u64 = doc
        .disk_util
        .iter()
        .take(1)
        .map(|d| d.read_ios + d.write_ios)
        .sum();
    let mut out = Vec::new();
    for (group, name, jobs) in units {
        let mut v: Values = [None; 9];
        let iops: f64 = jobs.iter().map(|j| j.read.iops + j.write.iops).sum();
        let bw: f64 = jobs
            .iter()
            .map(|j| (j.read.bw_bytes + j.write.bw_bytes) as f64)
            .sum();
        v[M::IOPS] = Some(iops);
        v[M::BW] = Some(bw);
        let lats = pick_lats(&jobs);
        let hist = histogram(&lats);
        if let Some(h) = &hist {
            let t = tails(h);
            for k in [M::LAT_MEAN, M::P50, M::P99, M::P999] {
                v[k] = t[k];
            }
        } else if !lats.is_empty() {
            let n: u64 = lats.iter().map(|l| l.n).sum();
            v[M::LAT_MEAN] = pos(lats.iter().map(|l| l.mean * l.n as f64).sum::<f64>() / n as f64);
            if lats.len() == 1 {
                let m = job_merged(jobs[0]);
                v[M::P50] = m[M::P50];
                v[M::P99] = m[M::P99];
                v[M::P999] = m[M::P999];
            } else {
                let note = format!(
                    "job '{name}': fio's JSON has {} latency distributions and no bins; \
                     their percentiles cannot be merged (write json+ for tail latencies)",
                    lats.len()
                );
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        }
        // usr_cpu/sys_cpu are % of the job's runtime (ms) per clone.
        let ios: u64 = jobs
            .iter()
            .map(|j| j.read.total_ios + j.write.total_ios)
            .sum();
        let cpu_us: f64 = jobs
            .iter()
            .map(|j| (j.usr_cpu + j.sys_cpu) / 100.0 * j.job_runtime as f64 * 1000.0)
            .sum();
        if ios > 0 {
            v[M::CPU] = pos(cpu_us / ios as f64);
        }
        if all_ios > 0 && dev_reqs > 0 && all_ios == ios {
            v[M::REQS] = Some(dev_reqs as f64 / all_ios as f64);
        }
        let merged = [
            None,
            None,
            v[M::LAT_MEAN],
            v[M::P50],
            v[M::P99],
            v[M::P999],
            None,
            None,
            None,
        ];
        out.push((group, name, vec![v], merged, hist, false));
    }
    out
}
