//! A finished run, diagnosed: from the [`RunResult`] and what the
//! [`DiagHooks`] saw, every finding that applies, and the entries the JSON
//! carries under `"dioscope"` (environment, findings, per-trial device
//! accounting and page-cache counts) and in fio's top-level `disk_util`.
//!
//! The findings come from the run side of every check in
//! [`super::checks::CHECKS`].

use serde::Serialize;
use serde_json::Value;

use super::amplification::amplification;
use super::checks::{after_run_all, RunCtx};
use super::device::{DevRole, DeviceMetrics, DiskStat};
use super::env::Environment;
use super::findings::{Finding, Severity};
use super::hooks::{DiagHooks, TrialRecord};
use crate::results::amplification::Amplification;
use crate::results::model::{Dioscope, DiskUtil, TrialDevices};
use crate::results::pagecache::{OpenerSample, PageCacheSample};
use crate::runner::RunResult;

/// One device's counters summed over every trial that touched it.
pub use crate::results::model::DeviceTotal;

/// Everything the run's diagnosis produced.
#[derive(Debug, Clone)]
pub struct RunDiagnosis {
    pub environment: Environment,
    /// Most severe first; within a severity, in the order found.
    pub findings: Vec<Finding>,
    pub trials: Vec<TrialRecord>,
    pub devices: Vec<DeviceTotal>,
    /// Device bytes ÷ job bytes per trial and run.
    pub amplification: Amplification,
}

/// Diagnose a finished run: the run side of every check in
/// [`super::checks::CHECKS`], most severe first.
pub fn diagnose(r: &RunResult, hooks: &DiagHooks) -> RunDiagnosis {
    let sums = r.summarize();
    let mut found = after_run_all(&RunCtx {
        result: r,
        hooks,
        sums: &sums,
    });
    // The sort is stable: within a severity, the table's order stays.
    found.sort_by_key(|f| std::cmp::Reverse(f.severity()));
    RunDiagnosis {
        environment: hooks.environment.clone(),
        findings: found,
        trials: hooks.trials.clone(),
        devices: device_totals(&hooks.trials),
        amplification: amplification(r, &hooks.trials),
    }
}

fn add(a: &mut DiskStat, b: &DiskStat) {
    a.read_ios += b.read_ios;
    a.read_merges += b.read_merges;
    a.read_sectors += b.read_sectors;
    a.read_ticks_ms += b.read_ticks_ms;
    a.write_ios += b.write_ios;
    a.write_merges += b.write_merges;
    a.write_sectors += b.write_sectors;
    a.write_ticks_ms += b.write_ticks_ms;
    a.in_flight = b.in_flight;
    a.io_ticks_ms += b.io_ticks_ms;
    a.time_in_queue_ms += b.time_in_queue_ms;
    a.discard_ios += b.discard_ios;
    a.discard_merges += b.discard_merges;
    a.discard_sectors += b.discard_sectors;
    a.discard_ticks_ms += b.discard_ticks_ms;
    a.flush_ios += b.flush_ios;
    a.flush_ticks_ms += b.flush_ticks_ms;
}

/// Each device's counters over all trials, with the application I/Os and
/// measured time of the trials it served.
fn device_totals(trials: &[TrialRecord]) -> Vec<DeviceTotal> {
    let mut acc: Vec<(String, DevRole, DiskStat, u64, u64)> = Vec::new();
    for rec in trials {
        for d in &rec.devices {
            let i = match acc.iter().position(|a| a.0 == d.device) {
                Some(i) => i,
                None => {
                    acc.push((d.device.clone(), d.role, DiskStat::default(), 0, 0));
                    acc.len() - 1
                }
            };
            add(&mut acc[i].2, &d.delta);
            acc[i].3 += rec.app_ios;
            acc[i].4 += rec.wall_us;
        }
    }
    acc.into_iter()
        .map(|(device, role, delta, ios, wall)| DeviceTotal {
            device,
            role,
            metrics: DeviceMetrics::derive(&delta, ios, wall),
            delta,
        })
        .collect()
}

impl RunDiagnosis {
    /// Fill the result's findings alone (again, after `--stages` added to
    /// them: [`super::stage_findings::apply`]).
    pub fn fill_findings(&self, d: &mut Dioscope) {
        d.findings = self
            .findings
            .iter()
            .map(|f| from_value(value(f.reported())))
            .collect();
    }

    /// Fill the result's diagnosis entries: environment, findings, per-trial
    /// device accounting, device totals, page-cache and opener samples.
    pub fn fill(&self, d: &mut Dioscope) {
        d.environment = Some(self.environment.clone());
        self.fill_findings(d);
        d.devices = self
            .trials
            .iter()
            .map(|t| TrialDevices {
                group: t.group,
                trial: t.trial,
                jobs: t.jobs.clone(),
                app_ios: t.app_ios,
                wall_us: t.wall_us,
                devices: t.devices.clone(),
            })
            .collect();
        d.device_totals = self.devices.clone();
        d.amplification =
            (!self.amplification.trials.is_empty()).then(|| self.amplification.clone());
        d.page_cache.clear();
        d.openers.clear();
        for t in &self.trials {
            for p in &t.page_cache {
                d.page_cache.push(PageCacheSample {
                    pages: p.clone(),
                    group: t.group,
                    trial: t.trial,
                });
            }
            for o in &t.openers {
                d.openers.push(OpenerSample {
                    group: t.group,
                    trial: t.trial,
                    target: o.target.clone(),
                    before: o.before.clone(),
                    after: o.after.clone(),
                });
            }
        }
    }

    /// fio's top-level `disk_util`: one entry per device, counters summed
    /// over the measured intervals; `util` is the share of that time the
    /// device was busy, in %.
    pub fn disk_util(&self) -> Vec<DiskUtil> {
        self.devices
            .iter()
            .map(|d| {
                let s = &d.delta;
                DiskUtil {
                    name: d.device.clone(),
                    read_ios: s.read_ios,
                    write_ios: s.write_ios,
                    read_merges: s.read_merges,
                    write_merges: s.write_merges,
                    read_sectors: Some(s.read_sectors),
                    write_sectors: Some(s.write_sectors),
                    read_ticks: s.read_ticks_ms,
                    write_ticks: s.write_ticks_ms,
                    in_queue: s.time_in_queue_ms,
                    util: d.metrics.util_pct.unwrap_or(0.0),
                    other: Default::default(),
                }
            })
            .collect()
    }

    /// Whether any finding is critical.
    pub fn critical(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.severity() == Severity::Critical)
    }
}

/// A diagnosis value in its own JSON shape.
fn value<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// A diagnosis value in the result model's type (the same JSON shape).
fn from_value<T: serde::de::DeserializeOwned + Default>(v: Value) -> T {
    serde_json::from_value(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;
    use crate::runner::{JobRun, PhaseRun, ResolvedJob, TrialEnv, TrialJob};

    /// A run of one job whose trials did `ios[i]` I/Os in one second each.
    fn fabricated(ios: &[u64]) -> RunResult {
        let spec = JobSpec {
            name: "x".into(),
            trials: ios.len() as u32,
            ..Default::default()
        };
        let trials = ios
            .iter()
            .map(|&n| {
                let mut t = TrialJob {
                    runtime_ns: 1_000_000_000,
                    ..Default::default()
                };
                t.dirs[1].ios = n;
                t.dirs[1].bytes = n * 4096;
                t
            })
            .collect();
        RunResult {
            jobs: vec![JobRun {
                resolved: ResolvedJob {
                    spec,
                    phase: 0,
                    groupid: 0,
                    clones: vec![Vec::new()],
                    first_worker: 0,
                },
                trials,
                verify: None,
                verify_io: Vec::new(),
                pace: Vec::new(),
            }],
            phases: vec![PhaseRun {
                phase: 0,
                trials: vec![TrialEnv::default(); ios.len()],
                start_ms: 0,
            }],
            targets: Vec::new(),
            interrupted: false,
            signal: 0,
            start_ms: 0,
            notes: Vec::new(),
            auto_trials: Vec::new(),
            setup_error: None,
            completed_groups: vec![0],
        }
    }

    fn codes(d: &RunDiagnosis) -> Vec<&'static str> {
        d.findings.iter().map(|f| f.code()).collect()
    }

    #[test]
    fn bimodal_trials_are_flagged_end_to_end() {
        // Seed 004: two tight clusters 35 % apart.
        let r = fabricated(&[3810, 2390, 3795, 3820, 2405, 3790]);
        let d = diagnose(&r, &DiagHooks::empty());
        assert!(codes(&d).contains(&"bimodal_trials"), "{:?}", d.findings);
        match d.findings.iter().find(|f| f.code() == "bimodal_trials") {
            Some(Finding::BimodalTrials(crate::diag::findings::BimodalTrials {
                low_trials,
                high_trials,
                metric,
                ..
            })) => {
                assert_eq!(low_trials, &vec![2, 5]);
                assert_eq!(high_trials, &vec![1, 3, 4, 6]);
                assert_eq!(metric, "x IOPS");
            }
            f => panic!("{f:?}"),
        }
        // And in the result, with severity, kind and message.
        let mut doc = Dioscope::default();
        d.fill(&mut doc);
        assert_eq!(doc.findings.len(), d.findings.len());
        for (v, f) in doc.findings.iter().zip(&d.findings) {
            assert_eq!(v.kind(), f.code());
            assert_eq!(v.message, f.to_string());
        }
        assert_eq!(
            doc.findings[0].severity,
            crate::results::model::Severity::Warning
        );
    }

    #[test]
    fn unimodal_trials_are_not() {
        let r = fabricated(&[3800, 3790, 3810, 3805, 3795, 3802]);
        let d = diagnose(&r, &DiagHooks::empty());
        let c = codes(&d);
        assert!(!c.contains(&"bimodal_trials"), "{:?}", d.findings);
        assert!(!c.contains(&"outlier_trials"), "{:?}", d.findings);
        assert!(!c.contains(&"drift_across_trials"), "{:?}", d.findings);
    }

    #[test]
    fn interrupted_trials_are_left_out() {
        let mut r = fabricated(&[3800, 3790, 3810, 3805, 3795, 10]);
        r.jobs[0].trials[5].interrupted = true;
        let d = diagnose(&r, &DiagHooks::empty());
        assert!(!codes(&d).contains(&"outlier_trials"), "{:?}", d.findings);
        r.jobs[0].trials[5].interrupted = false;
        let d = diagnose(&r, &DiagHooks::empty());
        assert!(codes(&d).contains(&"outlier_trials"), "{:?}", d.findings);
    }

    #[test]
    fn busy_worker_and_buffered_job() {
        let mut r = fabricated(&[1000]);
        r.jobs[0].trials[0].max_worker_cpu = 0.99;
        r.jobs[0].resolved.spec.direct = false;
        let d = diagnose(&r, &DiagHooks::empty());
        assert!(codes(&d).contains(&"tool_bottleneck"), "{:?}", d.findings);
        // No target: the job/target checks (direct=0) need one.
        assert!(!codes(&d).contains(&"buffered_io"));
    }

    #[test]
    fn device_totals_and_disk_util() {
        let rec = |trial, w: u64, ios| TrialRecord {
            group: 0,
            trial,
            jobs: vec!["x".into()],
            app_ios: ios,
            wall_us: 1_000_000,
            page_cache: Vec::new(),
            openers: Vec::new(),
            devices: vec![super::super::device::DeviceReport {
                device: "loop0".into(),
                role: DevRole::Filesystem,
                delta: DiskStat {
                    write_ios: w,
                    write_sectors: w * 8,
                    io_ticks_ms: 500,
                    ..Default::default()
                },
                metrics: DeviceMetrics::default(),
            }],
            io_procs: Vec::new(),
            cpu: None,
        };
        let totals = device_totals(&[rec(1, 64, 8), rec(2, 64, 8)]);
        assert_eq!(totals.len(), 1);
        assert_eq!(totals[0].delta.write_ios, 128);
        assert_eq!(totals[0].metrics.requests_per_io, Some(8.0));
        assert_eq!(totals[0].metrics.util_pct, Some(50.0));
        let d = RunDiagnosis {
            environment: DiagHooks::empty().environment,
            findings: Vec::new(),
            trials: Vec::new(),
            devices: totals,
            amplification: Default::default(),
        };
        let u = d.disk_util();
        assert_eq!(u[0].name, "loop0");
        assert_eq!(u[0].write_ios, 128);
        assert_eq!(u[0].write_sectors, Some(1024));
        assert_eq!(u[0].util, 50.0);
        let mut doc = Dioscope::default();
        d.fill(&mut doc);
        assert_eq!(doc.device_totals[0].role.as_str(), "filesystem");
        assert_eq!(doc.device_totals[0].metric("requests_per_io"), Some(8.0));
    }
}
