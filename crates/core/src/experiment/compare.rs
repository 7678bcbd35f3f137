//! A comparison of two sides (A: the baseline, B: the candidate), each one
//! or more result documents: per job and metric the change with its 95 %
//! interval, a p-value and a verdict; the differences between the sides;
//! the exit code. The statistics are in [`crate::stats::significance`];
//! docs/STATISTICS.md says why these.

use super::differ::{
    differences, facts, finding_kinds, policed_findings, Difference, Fact, UNPOLICED_FINDINGS,
};
use super::samples::{metric_index, SideSamples, M, METRICS};
use crate::results::RunDoc;
use crate::stats::significance::{
    bootstrap_ratio_of, mann_whitney, min_p, min_trials_per_side, Statistic, RESAMPLES,
};
use serde::{Deserialize, Serialize};

/// Version of the comparison document's layout.
pub const COMPARISON_SCHEMA: u32 = 1;

/// What the user asked of a comparison.
#[derive(Debug, Clone)]
pub struct CompareSettings {
    /// Changes smaller than this (in %) are "no meaningful change".
    pub threshold_pct: f64,
    pub alpha: f64,
    /// Names of facts the experiment varies (`--expect-different`).
    pub expect: Vec<String>,
    /// `--allow-different`: any difference is fine.
    pub allow_all: bool,
    /// The metrics whose verdict decides the exit code (`--gate`).
    pub gate: Vec<usize>,
}

impl Default for CompareSettings {
    fn default() -> Self {
        CompareSettings {
            threshold_pct: 2.0,
            alpha: 0.05,
            expect: Vec::new(),
            allow_all: false,
            gate: vec![M::IOPS],
        }
    }
}

/// One side as the comparison shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub label: String,
    pub files: Vec<String>,
    /// Trials of the side's first job.
    pub trials: usize,
}

/// The verdict on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    /// Significant but smaller than the threshold.
    NoMeaningfulChange,
    NoSignificantChange,
    /// Too few trials for the test to ever reach the significance level.
    TooFewTrials,
    /// Not measured on one side.
    NoData,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoMeaningfulChange => "no meaningful change",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::TooFewTrials => "too few trials",
            Verdict::NoData => "not measured",
        }
    }
}

/// One metric of one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    pub metric: String,
    pub label: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// Whether this metric's verdict decides the exit code.
    pub gate: bool,
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub n_a: usize,
    pub n_b: usize,
    /// (B/A − 1) · 100 of the per-trial means (latencies: medians).
    pub change_pct: Option<f64>,
    /// 95 % bootstrap interval of the change, in %.
    pub ci_pct: Option<(f64, f64)>,
    /// Two-sided Mann–Whitney p-value.
    pub p: Option<f64>,
    /// The p-value the verdict used (Holm-adjusted across gate tests).
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
}

/// One job (matched by group and name) on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobComparison {
    pub group: u32,
    pub name: String,
    pub metrics: Vec<MetricComparison>,
}

/// The outcome over all gate metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Regression,
    Improvement,
    NoChange,
    /// Some gate metric had too few trials to decide.
    Undecided,
    /// Refused: a difference nobody named, or no job in common.
    Incomparable,
}

/// The whole comparison, as rendered and written as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub schema: u32,
    pub kind: String,
    pub dioscope_version: String,
    pub a: Side,
    pub b: Side,
    pub threshold_pct: f64,
    pub alpha: f64,
    pub test: String,
    /// The fewest trials per side with which the test can reach alpha.
    pub min_trials_per_side: usize,
    pub differences: Vec<Difference>,
    pub jobs: Vec<JobComparison>,
    pub notes: Vec<String>,
    pub outcome: Outcome,
    /// 0 no regression, 1 regression, 2 incomparable (3 is `--run`'s).
    pub exit_code: i32,
    /// Filled by `compare --run`: the runs it made and why it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunLog>,
    /// Both sides ran with `--profile`: where the CPU time per I/O changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::compare::ProfileComparison>,
    /// Each side's first result (a profile's folded stacks left out), so that a report
    /// of the comparison shows the runs themselves side by side: summary,
    /// time series, latency, findings, environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_run: Option<Box<RunDoc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_run: Option<Box<RunDoc>>,
}

/// What `compare --run` did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunLog {
    /// The order of the runs, e.g. `ABBAABBA`.
    pub order: String,
    pub stopped_because: String,
    pub elapsed_s: f64,
}

impl Comparison {
    pub fn unexpected(&self) -> Vec<&Difference> {
        self.differences.iter().filter(|d| !d.expected).collect()
    }
}

/// A side: its label, its files' names and their documents.
pub struct Input<'a> {
    pub label: &'a str,
    pub files: Vec<String>,
    pub docs: Vec<RunDoc>,
}

/// A side's result as the comparison keeps it: whole, but for the folded
/// stacks of its profile (the comparison has the figures; the stacks stay
/// in the result file).
fn embedded(d: &RunDoc) -> Box<RunDoc> {
    let mut d = d.clone();
    if let Some(p) = d.dioscope.as_mut().and_then(|x| x.profile.as_mut()) {
        for g in &mut p.groups {
            g.folded.clear();
        }
    }
    Box::new(d)
}

/// Compare side `a` (baseline) with side `b`.
pub fn compare(a: &Input, b: &Input, s: &CompareSettings) -> Comparison {
    let floor = min_trials_per_side(s.alpha);
    let mut notes = Vec::new();
    // What differs: between the sides (first document of each), and within
    // a side (every later document against its first).
    let mut diffs = Vec::new();
    // Findings: over all documents of a side (a finding in any trial of A
    // and none of B's is a difference); within a side they are not policed.
    let with_side_findings = |side: &Input| -> Vec<Fact> {
        let mut f = side.docs.first().map(facts).unwrap_or_default();
        if let Some(x) = f.iter_mut().find(|x| x.key == "findings") {
            x.value = policed_findings(&side.docs).join(", ");
        }
        f
    };
    if !a.docs.is_empty() && !b.docs.is_empty() {
        diffs.extend(differences(
            &with_side_findings(a),
            &with_side_findings(b),
            "A vs B",
            &s.expect,
            s.allow_all,
        ));
    }
    for (x, y) in [(a, b), (b, a)] {
        let only: Vec<String> = finding_kinds(&x.docs, |k| UNPOLICED_FINDINGS.contains(&k))
            .into_iter()
            .filter(|k| !finding_kinds(&y.docs, |j| j == k).contains(k))
            .collect();
        if !only.is_empty() {
            notes.push(format!(
                "findings in {} only (shown, not policed: noise, load or what the workload is bound by): {}",
                x.label,
                only.join(", ")
            ));
        }
    }
    for side in [a, b] {
        let Some(first) = side.docs.first() else {
            continue;
        };
        let f0: Vec<Fact> = facts(first)
            .into_iter()
            .filter(|f| f.key != "findings")
            .collect();
        for (i, d) in side.docs.iter().enumerate().skip(1) {
            let fi: Vec<Fact> = facts(d)
                .into_iter()
                .filter(|f| f.key != "findings")
                .collect();
            let name = |k: usize| {
                side.files
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("run {}", k + 1))
            };
            for mut x in differences(
                &f0,
                &fi,
                &format!("within {}", side.label),
                &s.expect,
                s.allow_all,
            ) {
                x.between = format!("within {}: {} vs {}", side.label, name(0), name(i));
                diffs.push(x);
            }
        }
        if side.docs.iter().any(|d| d.dioscope.is_none()) {
            let n = format!(
                "side {}: fio's JSON records no environment (kernel, device, scheduler, …): \
                 only job options and versions could be checked for differences",
                side.label
            );
            notes.push(n);
        }
    }
    for e in &s.expect {
        let n = super::differ::canonical_name(e);
        if !diffs.iter().any(|d| d.name == n) {
            notes.push(format!(
                "--expect-different names '{e}', but it is the same on both sides"
            ));
        }
    }

    let mut sa = SideSamples::default();
    let mut sb = SideSamples::default();
    a.docs.iter().for_each(|d| sa.add(d));
    b.docs.iter().for_each(|d| sb.add(d));
    notes.extend(sa.notes.iter().map(|n| format!("A: {n}")));
    notes.extend(sb.notes.iter().map(|n| format!("B: {n}")));

    let mut jobs = Vec::new();
    for ja in &sa.jobs {
        let Some(jb) = sb
            .jobs
            .iter()
            .find(|j| j.group == ja.group && j.name == ja.name)
        else {
            continue;
        };
        let metrics = (0..METRICS.len())
            .map(|k| metric(ja, jb, k, s, floor))
            .collect();
        jobs.push(JobComparison {
            group: ja.group,
            name: ja.name.clone(),
            metrics,
        });
    }
    holm(&mut jobs, s);

    let side = |i: &Input, ss: &SideSamples| Side {
        label: i.label.to_string(),
        files: i.files.clone(),
        trials: ss.jobs.first().map(|j| j.trials.len()).unwrap_or(0),
    };
    let mut c = Comparison {
        schema: COMPARISON_SCHEMA,
        kind: "comparison".into(),
        dioscope_version: env!("CARGO_PKG_VERSION").into(),
        a: side(a, &sa),
        b: side(b, &sb),
        threshold_pct: s.threshold_pct,
        alpha: s.alpha,
        test: "two-sided Mann-Whitney U on the per-trial values; 95 % percentile-bootstrap \
               interval of the ratio of means; Holm's correction across the gate metrics of all jobs"
            .into(),
        min_trials_per_side: floor,
        differences: diffs,
        jobs,
        notes,
        outcome: Outcome::NoChange,
        exit_code: 0,
        run: None,
        profile: crate::profile::compare::compare_profiles(
            a.docs.iter().filter_map(|d| d.dioscope.as_ref()?.profile.as_ref()),
            b.docs.iter().filter_map(|d| d.dioscope.as_ref()?.profile.as_ref()),
        ),
        a_run: a.docs.first().map(embedded),
        b_run: b.docs.first().map(embedded),
    };
    if let Some(j) = c.jobs.first() {
        let few: Vec<&MetricComparison> = j
            .metrics
            .iter()
            .filter(|m| m.gate && m.verdict == Verdict::TooFewTrials)
            .collect();
        if let Some(m) = few.first() {
            c.notes.push(format!(
                "{} trials against {}: the test can never reach p < {} with so few \
                 (the smallest possible p is {:.3}); {} trials per side are needed \
                 (--trials={} or more, or --trials=auto)",
                m.n_a,
                m.n_b,
                s.alpha,
                min_p(m.n_a, m.n_b),
                floor,
                floor
            ));
        }
    }
    decide(&mut c);
    c
}

/// The comparison of metric `k` of one job.
fn metric(
    ja: &super::samples::JobSamples,
    jb: &super::samples::JobSamples,
    k: usize,
    s: &CompareSettings,
    floor: usize,
) -> MetricComparison {
    let def = &METRICS[k];
    let (xa, xb) = (ja.column(k), jb.column(k));
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let median = |v: &[f64]| (!v.is_empty()).then(|| crate::stats::summary::median(v));
    // Latency figures: over every I/O (merged histograms) where the side
    // has them; otherwise the per-trial median.
    let center = |merged: Option<f64>, v: &[f64]| {
        if is_latency(k) {
            merged.or_else(|| median(v))
        } else {
            mean(v)
        }
    };
    let mut out = MetricComparison {
        metric: def.key.into(),
        label: def.label.into(),
        unit: def.unit.into(),
        higher_is_better: def.higher_is_better,
        gate: s.gate.contains(&k),
        a: center(ja.merged[k], &xa),
        b: center(jb.merged[k], &xb),
        n_a: xa.len(),
        n_b: xb.len(),
        change_pct: None,
        ci_pct: None,
        p: None,
        p_adjusted: None,
        verdict: Verdict::NoData,
    };
    if xa.is_empty() || xb.is_empty() {
        return out;
    }
    let seed = 0x5eed ^ k as u64;
    // Latencies: the ratio of per-trial medians (one trial that met a stall
    // must not make the change); throughput and CPU: of means.
    let stat = if is_latency(k) {
        Statistic::Median
    } else {
        Statistic::Mean
    };
    if let Some(r) = bootstrap_ratio_of(&xa, &xb, stat, 0.95, RESAMPLES, seed) {
        out.change_pct = Some((r.ratio - 1.0) * 100.0);
        out.ci_pct = Some(((r.low - 1.0) * 100.0, (r.high - 1.0) * 100.0));
    }
    out.p = mann_whitney(&xa, &xb).map(|t| t.p);
    out.p_adjusted = out.p;
    out.verdict = verdict(&out, s, floor);
    out
}

fn is_latency(k: usize) -> bool {
    [M::LAT_MEAN, M::P50, M::P99, M::P999].contains(&k)
}

fn verdict(m: &MetricComparison, s: &CompareSettings, floor: usize) -> Verdict {
    let (Some(p), Some(change)) = (m.p_adjusted, m.change_pct) else {
        return Verdict::NoData;
    };
    if p >= s.alpha {
        if m.n_a.min(m.n_b) < floor && min_p(m.n_a, m.n_b) >= s.alpha {
            return Verdict::TooFewTrials;
        }
        return Verdict::NoSignificantChange;
    }
    if change.abs() < s.threshold_pct {
        return Verdict::NoMeaningfulChange;
    }
    if (change > 0.0) == m.higher_is_better {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

/// Holm–Bonferroni (Holm 1979, "A simple sequentially rejective multiple
/// test procedure", Scand. J. Statist. 6:65–70) over the gate metrics of
/// every job: with several jobs or gate metrics, one false alarm in twenty
/// per test would make a CI gate fail by chance.
fn holm(jobs: &mut [JobComparison], s: &CompareSettings) {
    let floor = min_trials_per_side(s.alpha);
    let mut idx: Vec<(usize, usize, f64)> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        for (k, m) in j.metrics.iter().enumerate() {
            if let (true, Some(p)) = (m.gate, m.p) {
                idx.push((i, k, p));
            }
        }
    }
    let n = idx.len();
    if n <= 1 {
        return;
    }
    idx.sort_by(|x, y| x.2.total_cmp(&y.2));
    let mut running = 0.0f64;
    for (rank, (i, k, p)) in idx.into_iter().enumerate() {
        running = running.max(((n - rank) as f64 * p).min(1.0));
        let m = &mut jobs[i].metrics[k];
        m.p_adjusted = Some(running);
        m.verdict = verdict(m, s, floor);
    }
}

/// The outcome and the exit code from the gate verdicts and differences.
fn decide(c: &mut Comparison) {
    if !c.unexpected().is_empty() || c.jobs.is_empty() {
        c.outcome = Outcome::Incomparable;
        c.exit_code = 2;
        return;
    }
    let gates: Vec<Verdict> = c
        .jobs
        .iter()
        .flat_map(|j| j.metrics.iter().filter(|m| m.gate).map(|m| m.verdict))
        .collect();
    c.outcome = if gates.contains(&Verdict::Worse) {
        Outcome::Regression
    } else if gates.contains(&Verdict::Better) {
        Outcome::Improvement
    } else if gates.contains(&Verdict::TooFewTrials) || gates.is_empty() {
        Outcome::Undecided
    } else {
        Outcome::NoChange
    };
    c.exit_code = if c.outcome == Outcome::Regression {
        1
    } else {
        0
    };
}

/// Whether `compare --run` may stop: every gate metric of every job is
/// clearly beyond the threshold (significant) or clearly within it (its
/// whole interval inside ±threshold).
pub fn is_clear(c: &Comparison) -> bool {
    !c.jobs.is_empty()
        && c.jobs.iter().all(|j| {
            j.metrics
                .iter()
                .filter(|m| m.gate)
                .all(|m| match m.verdict {
                    Verdict::Better | Verdict::Worse => true,
                    _ => m
                        .ci_pct
                        .is_some_and(|(lo, hi)| lo > -c.threshold_pct && hi < c.threshold_pct),
                })
        })
}

/// Parse `--gate=iops,lat_p99` (metric keys or labels).
pub fn parse_metrics(list: &str) -> Result<Vec<usize>, String> {
    list.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| {
            metric_index(x).ok_or_else(|| {
                format!(
                    "'{x}' is not a metric; choose from {}",
                    METRICS.iter().map(|m| m.key).collect::<Vec<_>>().join(", ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::{Dioscope, DioscopeJob, Job};
    use crate::results::TrialMetrics;

    fn doc(iops: &[f64], iodepth: &str) -> RunDoc {
        let mut j = Job {
            jobname: "j".into(),
            ..Default::default()
        };
        j.job_options.insert("iodepth", iodepth.to_string());
        let trials = iops
            .iter()
            .enumerate()
            .map(|(i, &x)| TrialMetrics {
                trial: i as u32 + 1,
                iops: x,
                bw_bytes: x * 4096.0,
                lat_mean_ns: 1e9 / x,
                runtime_ms: 1000.0,
                ..Default::default()
            })
            .collect();
        RunDoc {
            jobs: vec![j],
            dioscope: Some(Dioscope {
                version: "t".into(),
                jobs: vec![DioscopeJob {
                    jobname: "j".into(),
                    trials,
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn input(label: &str, d: RunDoc) -> Input<'_> {
        Input {
            label,
            files: vec![format!("{label}.json")],
            docs: vec![d],
        }
    }

    #[test]
    fn a_clear_slowdown_is_a_regression_exit_1() {
        let a = input("A", doc(&[1000., 1010., 990., 1005., 995.], "32"));
        let b = input("B", doc(&[500., 505., 495., 502., 498.], "1"));
        let s = CompareSettings {
            expect: vec!["iodepth".into()],
            ..Default::default()
        };
        let c = compare(&a, &b, &s);
        let iops = &c.jobs[0].metrics[M::IOPS];
        assert_eq!(iops.verdict, Verdict::Worse, "{iops:?}");
        assert!((iops.change_pct.unwrap() + 50.0).abs() < 1.0);
        let lat = &c.jobs[0].metrics[M::LAT_MEAN];
        assert_eq!(lat.verdict, Verdict::Worse, "latency up is worse: {lat:?}");
        assert_eq!((c.outcome, c.exit_code), (Outcome::Regression, 1));
        // B faster: an improvement, exit 0.
        let c = compare(&b, &a, &s);
        assert_eq!((c.outcome, c.exit_code), (Outcome::Improvement, 0));
    }

    #[test]
    fn an_unnamed_difference_refuses_exit_2() {
        let a = input("A", doc(&[1000.; 5], "32"));
        let b = input("B", doc(&[500.; 5], "1"));
        let c = compare(&a, &b, &CompareSettings::default());
        assert_eq!((c.outcome, c.exit_code), (Outcome::Incomparable, 2));
        assert_eq!(c.unexpected()[0].name, "iodepth");
    }

    #[test]
    fn noise_and_small_changes_are_no_change() {
        let a = input("A", doc(&[1000., 1030., 970., 1010., 990.], "1"));
        let b = input("B", doc(&[1005., 985., 1020., 995., 1001.], "1"));
        let c = compare(&a, &b, &CompareSettings::default());
        assert_eq!(
            c.jobs[0].metrics[M::IOPS].verdict,
            Verdict::NoSignificantChange
        );
        assert_eq!((c.outcome, c.exit_code), (Outcome::NoChange, 0));
        // Significant but 1 %: below the 2 % threshold.
        let a = input("A", doc(&[1000., 1001., 1002., 1003., 1004.], "1"));
        let b = input("B", doc(&[1010., 1011., 1012., 1013., 1014.], "1"));
        let c = compare(&a, &b, &CompareSettings::default());
        assert_eq!(
            c.jobs[0].metrics[M::IOPS].verdict,
            Verdict::NoMeaningfulChange
        );
    }

    #[test]
    fn three_trials_say_how_many_are_needed() {
        let a = input("A", doc(&[1000., 1001., 1002.], "1"));
        let b = input("B", doc(&[500., 501., 502.], "1"));
        let c = compare(&a, &b, &CompareSettings::default());
        assert_eq!(c.jobs[0].metrics[M::IOPS].verdict, Verdict::TooFewTrials);
        assert_eq!(c.outcome, Outcome::Undecided);
        assert!(
            c.notes.iter().any(|n| n.contains("4 trials per side")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn holm_adjusts_across_gates() {
        let a = input("A", doc(&[1000., 1001., 1002., 1003.], "1"));
        let b = input("B", doc(&[900., 901., 902., 903.], "1"));
        let s = CompareSettings {
            gate: vec![M::IOPS, M::BW],
            ..Default::default()
        };
        let c = compare(&a, &b, &s);
        let m = &c.jobs[0].metrics[M::IOPS];
        // 2/70 doubled by Holm: 0.057 > 0.05 — no longer significant.
        assert!((m.p_adjusted.unwrap() - 4.0 / 70.0).abs() < 1e-9, "{m:?}");
        assert_eq!(m.verdict, Verdict::NoSignificantChange);
    }

    #[test]
    fn setup_findings_are_policed_and_load_findings_noted() {
        use crate::results::model::FindingDoc;
        let with = |kind: &str| {
            let mut d = doc(&[1000.; 4], "1");
            let mut f = FindingDoc::default();
            f.fields.insert("kind", serde_json::Value::from(kind));
            d.dioscope.as_mut().unwrap().findings.push(f);
            d
        };
        let plain = || input("B", doc(&[1000.; 4], "1"));
        let c = compare(
            &input("A", with("page_cache_on_target")),
            &plain(),
            &CompareSettings::default(),
        );
        assert_eq!(c.exit_code, 2);
        assert_eq!(c.unexpected()[0].name, "findings");
        let c = compare(
            &input("A", with("cpu_contention")),
            &plain(),
            &CompareSettings::default(),
        );
        assert_eq!(c.exit_code, 0, "{:?}", c.differences);
        assert!(
            c.notes.iter().any(|n| n.contains("cpu_contention")),
            "{:?}",
            c.notes
        );
        // A finding in any file of a side counts for the side; several runs
        // of one side (compare --run) name them by number.
        let a = Input {
            label: "A",
            files: vec!["a.fio".into()],
            docs: vec![doc(&[1000.; 2], "1"), with("page_cache_on_target")],
        };
        let c = compare(&a, &plain(), &CompareSettings::default());
        assert_eq!(c.exit_code, 2);
    }

    #[test]
    fn gate_names_parse() {
        assert_eq!(parse_metrics("iops,p99").unwrap(), vec![M::IOPS, M::P99]);
        assert!(parse_metrics("speed").unwrap_err().contains("lat_p99"));
    }
}
