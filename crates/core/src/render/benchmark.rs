//! The JSON that github-action-benchmark's custom tools read
//! (`customBiggerIsBetter`, `customSmallerIsBetter`): an array of
//! `{"name", "unit", "value", "range"?, "extra"?}`, one entry per job and
//! metric, for a run (`--output-format=benchmark-bigger|benchmark-smaller`)
//! and a comparison (`compare … --output-format=…`). The metrics are
//! compare's ([`METRICS`]); a run's value is the mean over its trials with
//! its 95 % interval as the range, a comparison's is B's median with the
//! change and its interval in `extra`. docs/CI.md shows the workflow.

use super::{Exporter, Format};
use crate::experiment::samples::{SideSamples, METRICS};
use crate::experiment::Comparison;
use crate::results::RunDoc;
use crate::stats::Summary;
use serde_json::{json, Value};

/// A value in the unit the entry states: IOPS, MiB/s, µs, requests per I/O.
fn scaled(unit: &str, v: f64) -> (f64, &'static str) {
    match unit {
        "ops" => (v, "IOPS"),
        "bytes" => (v / 1048576.0, "MiB/s"),
        "ns" => (v / 1000.0, "us"),
        "us" => (v, "us"),
        _ => (v, "requests/IO"),
    }
}

fn round(v: f64) -> f64 {
    // Six significant figures: enough for any chart, stable in a diff.
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let digits = 6 - (v.abs().log10().floor() as i32 + 1);
    let p = 10f64.powi(digits.clamp(-12, 12));
    (v * p).round() / p
}

fn job_name(group: u32, name: &str, groups: bool) -> String {
    if groups {
        format!("group {group}/{name}")
    } else {
        name.to_string()
    }
}

/// A run's entries whose metrics are better when higher (`bigger`) or lower.
pub fn run_entries(doc: &RunDoc, bigger: bool) -> Vec<Value> {
    let mut side = SideSamples::default();
    side.add(doc);
    let groups = side.jobs.iter().any(|j| j.group != 0);
    let mut out = Vec::new();
    for j in &side.jobs {
        for (k, m) in METRICS.iter().enumerate() {
            if m.higher_is_better != bigger {
                continue;
            }
            let xs = j.column(k);
            if xs.is_empty() {
                continue;
            }
            let s = Summary::of_trials(&xs, j.auto_stop);
            let (value, unit) = scaled(m.unit, s.mean);
            if !value.is_finite() {
                continue;
            }
            let mut e = json!({
                "name": format!("{} {}", job_name(j.group, &j.name, groups), m.label),
                "unit": unit,
                "value": round(value),
            });
            if s.n >= 2 {
                let (lo, _) = scaled(m.unit, s.ci95.0);
                let (hi, _) = scaled(m.unit, s.ci95.1);
                e["range"] = json!(format!("± {}", round((hi - lo) / 2.0)));
                e["extra"] = json!(format!(
                    "mean of {} trials; {} [{}, {}] {unit}",
                    s.n,
                    s.ci_name(),
                    round(lo),
                    round(hi)
                ));
            } else {
                e["extra"] = json!("1 trial: no interval");
            }
            out.push(e);
        }
    }
    out
}

/// A comparison's entries: B's value per job and metric, with A's, the
/// change and its interval, and the verdict in `extra`.
pub fn comparison_entries(c: &Comparison, bigger: bool) -> Vec<Value> {
    let groups = c.jobs.iter().any(|j| j.group != 0);
    let mut out = Vec::new();
    for j in &c.jobs {
        for m in &j.metrics {
            if m.higher_is_better != bigger {
                continue;
            }
            let Some(b) = m.b else { continue };
            let (value, unit) = scaled(&m.unit, b);
            if !value.is_finite() {
                continue;
            }
            let a =
                m.a.map(|a| format!("A {} {unit}", round(scaled(&m.unit, a).0)))
                    .unwrap_or_else(|| "A not measured".into());
            let change = match (m.change_pct, m.ci_pct) {
                (Some(ch), Some((lo, hi))) => format!(
                    "; change {ch:+.1} % [{lo:+.1}, {hi:+.1}]{}",
                    m.level
                        .map(|l| format!(" at {:.1} %", l * 100.0))
                        .unwrap_or_default()
                ),
                (Some(ch), None) => format!("; change {ch:+.1} % (no interval)"),
                _ => String::new(),
            };
            out.push(json!({
                "name": format!("{} {}", job_name(j.group, &j.name, groups), m.label),
                "unit": unit,
                "value": round(value),
                "extra": format!(
                    "B median of {} trials; {a} ({} trials){change}; {}{}",
                    m.n_b,
                    m.n_a,
                    verdict_words(m.verdict),
                    if m.gate { "" } else { " (not a gate metric)" }
                ),
            }));
        }
    }
    out
}

fn verdict_words(v: crate::experiment::compare::Verdict) -> &'static str {
    use crate::experiment::compare::Verdict::*;
    match v {
        Better => "better",
        Worse => "worse",
        NoMeaningfulChange => "significant but below the threshold",
        NoSignificantChange => "no significant change",
        TooFewTrials => "too few trials to decide",
        NoData => "not measured on one side",
    }
}

fn print(entries: Vec<Value>) -> String {
    let mut s =
        serde_json::to_string_pretty(&Value::Array(entries)).unwrap_or_else(|_| "[]".into());
    s.push('\n');
    s
}

pub struct RunBigger;
pub struct RunSmaller;
pub struct CompareBigger;
pub struct CompareSmaller;

impl Exporter<RunDoc> for RunBigger {
    fn render(&self, doc: &RunDoc) -> String {
        print(run_entries(doc, true))
    }
}
impl Exporter<RunDoc> for RunSmaller {
    fn render(&self, doc: &RunDoc) -> String {
        print(run_entries(doc, false))
    }
}
impl Exporter<Comparison> for CompareBigger {
    fn render(&self, c: &Comparison) -> String {
        print(comparison_entries(c, true))
    }
}
impl Exporter<Comparison> for CompareSmaller {
    fn render(&self, c: &Comparison) -> String {
        print(comparison_entries(c, false))
    }
}

const BIGGER_HELP: &str =
    "github-action-benchmark's customBiggerIsBetter JSON: IOPS and bandwidth per job";
const SMALLER_HELP: &str =
    "github-action-benchmark's customSmallerIsBetter JSON: latencies and CPU per I/O per job";

pub const RUN_BIGGER: Format<RunDoc> = Format {
    name: "benchmark-bigger",
    aliases: &[],
    help: BIGGER_HELP,
    exporter: &RunBigger,
};
pub const RUN_SMALLER: Format<RunDoc> = Format {
    name: "benchmark-smaller",
    aliases: &[],
    help: SMALLER_HELP,
    exporter: &RunSmaller,
};
pub const COMPARE_BIGGER: Format<Comparison> = Format {
    name: "benchmark-bigger",
    aliases: &[],
    help: BIGGER_HELP,
    exporter: &CompareBigger,
};
pub const COMPARE_SMALLER: Format<Comparison> = Format {
    name: "benchmark-smaller",
    aliases: &[],
    help: SMALLER_HELP,
    exporter: &CompareSmaller,
};
