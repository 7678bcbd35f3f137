//! The typed result: one document per run, serialised as fio's JSON (same
//! keys, same types, same order) with dioscope's own measurements under
//! `"dioscope"`. The same types read fio 3.x JSON (`json` and `json+`):
//! everything dioscope adds is optional, and keys fio writes that dioscope
//! does not model are kept (in `other`) so they render back unchanged.
//!
//! The sections other layers fill (environment, targets, verify details,
//! device counters, page-cache and opener samples) are typed too: their plain
//! data types live in this layer (`environment`, `targets`, `verify`,
//! `devices`, `pagecache`), the code that fills them where it measures.
//! Optional dioscope sections added later go into [`Dioscope::sections`]
//! without touching the renderers.

use super::devices::{DeviceMetrics, DeviceReport};
use super::environment::{DevRole, Environment};
use super::ordered::OrderedMap;
use super::pagecache::{OpenerSample, PageCacheSample};
use super::series::TrialSeries;
use super::summary::{TrialMetrics, TrialStats};
use super::targets::TargetInfo;
use super::verify::VerifyReport;
use crate::stats::cpu::SysCpuPct;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the `"dioscope"` section's layout; bump on incompatible change.
/// The fio release whose options, job-file syntax and JSON layout dioscope
/// follows (FIO-COMPAT.md): fio 3.33, the reference on the machines this
/// was built and tested on, where every fio 3.33 option is classified
/// (works, accepted with a note, refused with its reason).
pub const FIO_COMPAT: &str = "3.33";

/// What `--version`, the JSON's "fio version" and the terse line's version
/// field say: fio's form first, so that readers of fio's output which
/// check the version (fio-plot's bench-fio looks for "fio-3", blktests
/// compares "fio-X.Y") accept it, and dioscope named after it.
pub fn version_string() -> String {
    format!("fio-{FIO_COMPAT} (dioscope {})", env!("CARGO_PKG_VERSION"))
}

pub const SCHEMA: u32 = 1;

/// One run: fio's top level plus dioscope's section.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunDoc {
    #[serde(rename = "fio version")]
    pub fio_version: String,
    pub timestamp: u64,
    pub timestamp_ms: u64,
    pub time: String,
    #[serde(
        rename = "global options",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub global_options: Option<OrderedMap<String>>,
    pub jobs: Vec<Job>,
    #[serde(default)]
    pub disk_util: Vec<DiskUtil>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dioscope: Option<Dioscope>,
    /// Top-level keys fio writes that are not modelled.
    #[serde(flatten)]
    pub other: OrderedMap<Value>,
}

/// fio's per-job object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Job {
    pub jobname: String,
    pub groupid: u32,
    /// When the job started, ms since the epoch (fio 3.36+; absent in
    /// older fio's JSON, and then not written back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_start: Option<u64>,
    pub error: i32,
    #[serde(default)]
    pub eta: u64,
    #[serde(default)]
    pub elapsed: u64,
    #[serde(rename = "job options", default)]
    pub job_options: OrderedMap<String>,
    /// The directions; `unified_rw_reporting=mixed` folds them into
    /// `mixed` (they are kept, for dioscope's own views, but not written).
    #[serde(default, skip_serializing_if = "Dir::is_folded")]
    pub read: Dir,
    #[serde(default, skip_serializing_if = "Dir::is_folded")]
    pub write: Dir,
    #[serde(default, skip_serializing_if = "Dir::is_folded")]
    pub trim: Dir,
    #[serde(default, skip_serializing_if = "Sync::is_folded")]
    pub sync: Sync,
    /// fio's `mixed` direction (`unified_rw_reporting=mixed|both`): reads,
    /// writes and trims summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed: Option<Dir>,
    pub job_runtime: u64,
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    pub iodepth_level: OrderedMap<f64>,
    #[serde(default)]
    pub iodepth_submit: OrderedMap<f64>,
    #[serde(default)]
    pub iodepth_complete: OrderedMap<f64>,
    pub latency_ns: OrderedMap<f64>,
    pub latency_us: OrderedMap<f64>,
    pub latency_ms: OrderedMap<f64>,
    /// Errors counted, and the first one's errno: fio writes both only
    /// for a job with `continue_on_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_err: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<i32>,
    #[serde(default)]
    pub latency_depth: u32,
    #[serde(default)]
    pub latency_target: u64,
    /// fio 3.42 repeats `latency_target` (ns) and `latency_window` (us)
    /// under names with their unit; older fio writes neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target_ns: Option<u64>,
    #[serde(default)]
    pub latency_percentile: f64,
    #[serde(default)]
    pub latency_window: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_window_us: Option<u64>,
    /// `description=` of the job, when it has one (fio's `desc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    /// Keys fio writes that are not modelled (e.g. `steadystate`).
    #[serde(flatten)]
    pub other: OrderedMap<Value>,
}

impl Job {
    pub fn dir(&self, d: usize) -> &Dir {
        if d == 0 {
            &self.read
        } else {
            &self.write
        }
    }
}

/// One direction of one job.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Dir {
    pub io_bytes: u64,
    pub io_kbytes: u64,
    pub bw_bytes: u64,
    pub bw: u64,
    pub iops: f64,
    pub runtime: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    pub slat_ns: Lat,
    pub clat_ns: Lat,
    pub lat_ns: Lat,
    /// Per I/O priority (cmdprio_percentage, cmdprio_bssplit), when the
    /// direction's I/Os had more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prios: Option<Vec<Prio>>,
    pub bw_min: u64,
    pub bw_max: u64,
    pub bw_agg: f64,
    pub bw_mean: f64,
    pub bw_dev: f64,
    pub bw_samples: u64,
    pub iops_min: u64,
    pub iops_max: u64,
    pub iops_mean: f64,
    pub iops_stddev: f64,
    pub iops_samples: u64,
    /// Folded into the job's `mixed` (`unified_rw_reporting=mixed`): not
    /// written.
    #[serde(skip)]
    pub folded: bool,
}

impl Dir {
    pub fn is_folded(&self) -> bool {
        self.folded
    }
}

/// One I/O priority's latency (fio's `prios` entries): completion latency,
/// or total latency when the job has `lat_percentiles`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prio {
    pub prioclass: u32,
    pub prio: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clat_ns: Option<Lat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_ns: Option<Lat>,
}

impl Prio {
    pub fn lat(&self) -> Option<&Lat> {
        self.clat_ns.as_ref().or(self.lat_ns.as_ref())
    }
}

/// A latency distribution: summary, percentiles (`"99.000000": ns`) and,
/// in json+, the histogram bins (`"ns": count`, only when there are samples).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Lat {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stddev: f64,
    #[serde(rename = "N")]
    pub n: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<OrderedMap<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<OrderedMap<u64>>,
}

impl Lat {
    /// The percentiles as numbers, in their order.
    pub fn percentiles(&self) -> Vec<(f64, u64)> {
        self.percentile
            .iter()
            .flat_map(|m| m.iter())
            .filter_map(|(k, v)| k.parse().ok().map(|p| (p, *v)))
            .collect()
    }
    /// The json+ bins as (latency ns, count), in their order.
    pub fn bin_counts(&self) -> Vec<(u64, u64)> {
        self.bins
            .iter()
            .flat_map(|m| m.iter())
            .filter_map(|(k, v)| k.parse().ok().map(|ns| (ns, *v)))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sync {
    pub total_ios: u64,
    pub lat_ns: Lat,
    /// Not written (`unified_rw_reporting=mixed`, as fio).
    #[serde(skip)]
    pub folded: bool,
}

impl Sync {
    pub fn is_folded(&self) -> bool {
        self.folded
    }
}

/// fio's `disk_util` entry (counters over the measured time).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    /// dioscope adds the sector counts; fio does not write them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_sectors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_sectors: Option<u64>,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    pub util: f64,
    /// fio's `aggr_*` keys for md and other stacked devices.
    #[serde(flatten)]
    pub other: OrderedMap<Value>,
}

/// dioscope's own section: status, per-job trials and CPU, diagnosis.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Dioscope {
    #[serde(default)]
    pub schema: u32,
    pub version: String,
    pub interrupted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub io_errors: u64,
    pub partial: bool,
    pub stopped_by_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<RunError>,
    /// A worker that could not start (engine set-up, thread spawn) ended the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_error: Option<SetupErrorDoc>,
    /// The groups that ran all their trials; with a setup error or a stop,
    /// the later ones did not run.
    #[serde(default)]
    pub groups_completed: Vec<u32>,
    #[serde(default)]
    pub targets: Vec<TargetInfo>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub jobs: Vec<DioscopeJob>,
    /// Per job name: the read-back check's report (verify's own shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<OrderedMap<VerifyReport>>,
    /// The exact command line of the run (program name first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_line: Vec<String>,
    /// The engines and the environment in one line, as the text shows it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context: String,
    /// `None` (null) in a document not made by a run (e.g. a test's).
    #[serde(default)]
    pub environment: Option<Environment>,
    #[serde(default)]
    pub findings: Vec<FindingDoc>,
    /// Per trial: the devices' counters (diag's shape).
    #[serde(default)]
    pub devices: Vec<TrialDevices>,
    #[serde(default)]
    pub device_totals: Vec<DeviceTotal>,
    /// Device bytes ÷ job bytes per direction, per trial and for the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amplification: Option<super::amplification::Amplification>,
    #[serde(default)]
    pub page_cache: Vec<PageCacheSample>,
    #[serde(default)]
    pub openers: Vec<OpenerSample>,
    /// `--profile`: CPU per I/O by function and subsystem (perf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::profile::ProfileResult>,
    /// Optional sections other layers add, in order.
    #[serde(flatten)]
    pub sections: OrderedMap<Value>,
}

impl Dioscope {
    /// An optional section (`profile`, …) by its key.
    pub fn section(&self, key: &str) -> Option<&Value> {
        self.sections.get(key)
    }

    /// Add or replace an optional section; it renders after the built-in
    /// ones, in the order added. A key the model already has (`jobs`,
    /// `findings`, …) is refused: the JSON would hold it twice.
    pub fn set_section(&mut self, key: &str, v: Value) -> Result<(), String> {
        let builtin = serde_json::to_value(Dioscope::default())
            .ok()
            .and_then(|d| d.as_object().map(|o| o.contains_key(key)))
            .unwrap_or(false);
        // Keys left out when empty are built-in too.
        if builtin
            || [
                "signal",
                "first_error",
                "setup_error",
                "verify",
                "context",
                "profile",
            ]
            .contains(&key)
        {
            return Err(format!("'{key}' is a built-in key of the dioscope section"));
        }
        self.sections.set(key, v);
        Ok(())
    }
}

/// A worker that could not start: where, the kernel's errno, what failed and a fix.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SetupErrorDoc {
    pub group: u32,
    pub job: String,
    pub clone: u32,
    /// 1-based.
    pub trial: u32,
    pub errno: i32,
    pub message: String,
}

/// The run's first I/O error with the hint the CLI prints.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunError {
    pub job: String,
    #[serde(flatten)]
    pub error: IoError,
    pub hint: String,
}

/// Where an I/O failed and why.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IoError {
    pub path: String,
    pub offset: u64,
    pub length: u32,
    pub direction: String,
    pub errno: i32,
    pub error: String,
}

/// dioscope's measurements of one job (or reporting group).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DioscopeJob {
    pub jobname: String,
    pub groupid: u32,
    pub ioengine: String,
    pub iodepth: u32,
    pub direct: bool,
    /// `rw=` and the block sizes as given (`4.00 KiB,64.0 KiB`).
    #[serde(default)]
    pub rw: String,
    #[serde(default)]
    pub bs: String,
    /// Threads over all merged jobs.
    #[serde(default)]
    pub numjobs: u32,
    /// The directions the job measures (`read`, `write`).
    #[serde(default)]
    pub directions: Vec<String>,
    pub trials: Vec<TrialMetrics>,
    pub summary: TrialStats,
    pub cpu: Cpu,
    pub errors: u64,
    /// Errors per direction: read, write.
    #[serde(default)]
    pub errors_by_direction: [u64; 2],
    pub first_error: Option<IoError>,
    /// Per trial: IOPS, bandwidth and latency (mean, p50, p99) per
    /// interval, per direction (results/series.rs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<TrialSeries>,
}

impl DioscopeJob {
    pub fn measures(&self, dir: &str) -> bool {
        self.directions.iter().any(|d| d == dir)
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Cpu {
    pub process_usr_us: u64,
    pub process_sys_us: u64,
    pub process_us_per_io: f64,
    pub system_busy_us: f64,
    pub system_us_per_io: f64,
    pub system_percent: SysCpuPct,
    pub ctx_per_io: f64,
    pub workers_thread_us: u64,
    pub busiest_worker_cpu_fraction: f64,
    pub peak_rss_kb: u64,
}

/// A finding as reported: severity, message, then `kind` and its fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FindingDoc {
    pub severity: Severity,
    pub message: String,
    #[serde(flatten)]
    pub fields: OrderedMap<Value>,
}

impl FindingDoc {
    pub fn kind(&self) -> &str {
        self.fields
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// How much a finding matters (the same scale as the diagnosis').
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Info,
    Warning,
    Critical,
}

/// The devices' counters during one trial of one group.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TrialDevices {
    pub group: u32,
    pub trial: u32,
    pub jobs: Vec<String>,
    pub app_ios: u64,
    pub wall_us: u64,
    pub devices: Vec<DeviceReport>,
}

/// One device's counters over the whole run with the derived metrics
/// (requests per I/O, request size, merges, utilisation): the same shape as
/// one trial's [`DeviceReport`].
pub type DeviceTotal = DeviceReport;

impl DeviceReport {
    /// A derived metric by its JSON key (`requests_per_io`, `util_pct`, …;
    /// `None` when unknown or not defined for this interval).
    pub fn metric(&self, k: &str) -> Option<f64> {
        let m: &DeviceMetrics = &self.metrics;
        Some(match k {
            "requests" => m.requests as f64,
            "read_requests" => m.read_requests as f64,
            "write_requests" => m.write_requests as f64,
            "bytes" => m.bytes as f64,
            "requests_per_io" => m.requests_per_io?,
            "avg_request_bytes" => m.avg_request_bytes?,
            "merges" => m.merges as f64,
            "util_pct" => m.util_pct?,
            "avg_wait_ms" => m.avg_wait_ms?,
            "discards" => m.discards as f64,
            "flushes" => m.flushes as f64,
            _ => return None,
        })
    }

    /// How the device relates to the target, in words.
    pub fn role_text(&self) -> &'static str {
        match self.role {
            DevRole::Target => "target",
            DevRole::Filesystem => "file system",
            DevRole::ParentDisk => "parent disk",
            DevRole::LoopBacking => "under the loop's backing file",
            DevRole::Slave => "component",
        }
    }
}

/// The format a JSON document was read from.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a fio or dioscope JSON result: {0} (write one with --output-format=json)")]
    Json(#[from] serde_json::Error),
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    File {
        path: String,
        source: Box<ReadError>,
    },
    #[error("dioscope result schema {found} is newer than this dioscope reads ({SCHEMA}); upgrade dioscope")]
    Schema { found: u32 },
    /// Well-formed JSON whose numbers cannot be a run's (no job, a
    /// negative count or rate).
    #[error("not a result a run could have written: {0}")]
    Invalid(String),
}

/// The path of the first negative number under `v` (named `at`), if any.
fn negative(v: &serde_json::Value, at: &str) -> Option<String> {
    match v {
        serde_json::Value::Number(n) => n.as_f64().filter(|x| *x < 0.0).map(|_| at.to_string()),
        serde_json::Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| negative(x, &format!("{at}.{k}"))),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| negative(x, &format!("{at}[{i}]"))),
        _ => None,
    }
}

impl RunDoc {
    /// Read dioscope's or fio's (3.x, json or json+) JSON result.
    pub fn from_json(text: &str) -> Result<RunDoc, ReadError> {
        let doc: RunDoc = serde_json::from_str(text)?;
        if let Some(d) = &doc.dioscope {
            if d.schema > SCHEMA {
                return Err(ReadError::Schema { found: d.schema });
            }
        }
        // Every number of a job's directions is a count, a rate, a time or
        // a percentage: a negative one (or NaN) is bad input, not a result.
        let v: serde_json::Value = serde_json::from_str(text)?;
        if let Some(jobs) = v.get("jobs").and_then(|j| j.as_array()) {
            for (i, j) in jobs.iter().enumerate() {
                for dir in ["read", "write", "trim", "sync"] {
                    if let Some(bad) = j.get(dir).and_then(|d| negative(d, dir)) {
                        return Err(ReadError::Invalid(format!("jobs[{i}].{bad} is negative")));
                    }
                }
            }
        }
        Ok(doc)
    }

    /// Read a result file (dioscope's or fio's); errors name the file.
    pub fn read(path: &std::path::Path) -> Result<RunDoc, ReadError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io {
            path: p.clone(),
            source,
        })?;
        RunDoc::from_json(&text).map_err(|e| ReadError::File {
            path: p,
            source: Box::new(e),
        })
    }

    /// The JSON text: pretty, with a final newline, as dioscope writes it.
    /// `bins` keeps the json+ latency bins; without it they are left out.
    pub fn to_json(&self, bins: bool) -> String {
        let mut s = if bins {
            serde_json::to_string_pretty(self)
        } else {
            let mut d = self.clone();
            d.strip_bins();
            serde_json::to_string_pretty(&d)
        }
        .unwrap_or_else(|_| "{}".into());
        s.push('\n');
        s
    }

    /// Whether any latency carries json+ bins.
    pub fn has_bins(&self) -> bool {
        self.lats().any(|l| l.bins.is_some())
    }

    fn lats(&self) -> impl Iterator<Item = &Lat> {
        self.jobs.iter().flat_map(|j| {
            [&j.read, &j.write, &j.trim]
                .into_iter()
                .chain(j.mixed.as_ref())
                .flat_map(|d| {
                    [&d.slat_ns, &d.clat_ns, &d.lat_ns]
                        .into_iter()
                        .chain(d.prios.iter().flatten().filter_map(|p| p.lat()))
                })
                .chain([&j.sync.lat_ns])
        })
    }

    fn strip_bins(&mut self) {
        for j in &mut self.jobs {
            for d in [&mut j.read, &mut j.write, &mut j.trim]
                .into_iter()
                .chain(j.mixed.as_mut())
            {
                for l in [&mut d.slat_ns, &mut d.clat_ns, &mut d.lat_ns] {
                    l.bins = None;
                }
                for p in d.prios.iter_mut().flatten() {
                    for l in [&mut p.clat_ns, &mut p.lat_ns].into_iter().flatten() {
                        l.bins = None;
                    }
                }
            }
            j.sync.lat_ns.bins = None;
        }
    }

    /// dioscope's measurements of fio job `i` (dioscope writes one entry
    /// per fio job, in the same order).
    pub fn dioscope_job(&self, i: usize) -> Option<&DioscopeJob> {
        self.dioscope.as_ref()?.jobs.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_sections_render_after_the_built_in_ones_and_read_back() {
        let mut doc = RunDoc {
            dioscope: Some(Dioscope::default()),
            ..Default::default()
        };
        let d = doc.dioscope.as_mut().unwrap();
        d.set_section("example", serde_json::json!({"samples": 3}))
            .unwrap();
        assert!(d.set_section("jobs", Value::Null).is_err());
        assert!(d.set_section("signal", Value::Null).is_err());
        // `profile` is a typed field (crate::profile), not a free section.
        assert!(d.set_section("profile", Value::Null).is_err());
        let text = doc.to_json(true);
        let back = RunDoc::from_json(&text).unwrap();
        let d = back.dioscope.as_ref().unwrap();
        assert_eq!(d.section("example").unwrap()["samples"], 3);
        assert_eq!(back.to_json(true), text);
        let dir = std::env::temp_dir().join(format!("dioscope-model-{}", std::process::id()));
        std::fs::write(&dir, &text).unwrap();
        assert_eq!(RunDoc::read(&dir).unwrap(), back);
        std::fs::write(&dir, "{}").unwrap();
        let e = RunDoc::read(&dir).unwrap_err().to_string();
        let _ = std::fs::remove_file(&dir);
        assert!(e.starts_with(&dir.display().to_string()), "{e}");
        assert!(e.contains("--output-format=json"), "{e}");
        let openers = text.find("\"openers\"").unwrap();
        assert!(text.find("\"example\"").unwrap() > openers);
    }
}
