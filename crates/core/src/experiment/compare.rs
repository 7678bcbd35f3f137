//! A comparison of two sides (A: the baseline, B: the candidate), each one
//! or more result documents: per job and metric the change with its
//! interval and the verdict read off that interval; the differences between
//! the sides; the environment each side ran in; the exit code. The one
//! procedure that estimates, bounds and judges a change is
//! [`super::sequential`] (for a fixed number of trials and for
//! `compare --run`'s looks); docs/STATISTICS.md says why these.

use super::differ::{
    differences, facts, finding_kinds, policed_findings, Difference, Fact, UNPOLICED_FINDINGS,
};
use super::samples::{metric_index, JobSamples, SideSamples, M, METRICS};
use super::sequential::{fixed_boundary, judge, Boundary, Design};
use crate::results::RunDoc;
use crate::stats::significance::{mann_whitney, min_p, u_critical};
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
    /// `compare --run`: the looks of the sequential design (per side). The
    /// gate intervals are then the repeated intervals of the look the data
    /// reached; `None`: one look, a fixed-size comparison.
    pub sequential: Option<Looks>,
}

/// The planned looks of `compare --run`: after every pair from `min_n` to
/// `max_n` trials per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Looks {
    pub min_n: usize,
    pub max_n: usize,
}

impl Default for CompareSettings {
    fn default() -> Self {
        CompareSettings {
            threshold_pct: 2.0,
            alpha: 0.05,
            expect: Vec::new(),
            allow_all: false,
            gate: vec![M::IOPS],
            sequential: None,
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
    /// Too few trials for an interval at the level asked (the test could
    /// never reach the significance level).
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
    /// The median of A's per-trial values (the change is estimated from the
    /// per-trial values, so the columns show their centre).
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub n_a: usize,
    pub n_b: usize,
    /// (B/A − 1) · 100 of the Hodges–Lehmann ratio: exp of the median of
    /// the pairwise differences ln b_j − ln a_i.
    pub change_pct: Option<f64>,
    /// The interval of the change in %, inverted from the U test at
    /// `level`; `None` with too few trials for that level.
    pub ci_pct: Option<(f64, f64)>,
    /// The confidence level of `ci_pct` on its own (gate metrics: after
    /// Bonferroni over the gate tests and, with `--run`, the look's
    /// boundary).
    #[serde(default)]
    pub level: Option<f64>,
    /// Two-sided Mann–Whitney p-value of no shift (for the record; the
    /// verdict comes from the interval).
    pub p: Option<f64>,
    pub verdict: Verdict,
    /// Every per-trial value of each side, in order, so that the verdict
    /// can be checked.
    #[serde(default)]
    pub values_a: Vec<f64>,
    #[serde(default)]
    pub values_b: Vec<f64>,
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
    /// A significant gate change measured while the sides' environments
    /// differed (e.g. CPU contention on one side only): exit 4.
    Confounded,
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
    /// The fewest trials per side with which the gate tests can reach their
    /// level (α over the number of gate tests).
    pub min_trials_per_side: usize,
    /// Gate tests (gate metrics × jobs): each gets α / this (Bonferroni).
    #[serde(default)]
    pub gate_tests: usize,
    pub differences: Vec<Difference>,
    /// The environment findings of each side and how many trials they
    /// touched; `differs` where a significant change would be confounded.
    #[serde(default)]
    pub environment: Vec<EnvFinding>,
    /// Trials per side the environment counts are out of.
    #[serde(default)]
    pub env_trials: (usize, usize),
    pub jobs: Vec<JobComparison>,
    pub notes: Vec<String>,
    pub outcome: Outcome,
    /// 0 no regression, 1 regression, 2 incomparable (3 is `--run`'s), 4 a
    /// significant change confounded with a difference in the environment.
    pub exit_code: i32,
    /// Filled by `compare --run`: the runs it made and why it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunLog>,
    /// Both sides ran with `--profile`: where the CPU time per I/O changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::compare::ProfileComparison>,
    /// Both sides ran with `--stages`: where the mean latency changed,
    /// stage by stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<crate::results::stages::StagesComparison>,
    /// Each side's first result (a profile's folded stacks left out), so that a report
    /// of the comparison shows the runs themselves side by side: summary,
    /// time series, latency, findings, environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_run: Option<Box<RunDoc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_run: Option<Box<RunDoc>>,
}

/// One kind of environment finding (the conditions dioscope measures
/// around the timed I/O: CPU contention, other I/O on the device, other
/// openers, page cache) and how many trials of each side it touched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvFinding {
    pub kind: String,
    pub a_trials: usize,
    pub b_trials: usize,
    /// The shares of trials it touched differ by half or more: a
    /// significant change may be the environment's, not B's.
    pub differs: bool,
}

/// Findings about the environment a trial ran in: listed per side, and a
/// significant change while they differ between the sides is confounded.
pub const ENV_FINDINGS: &[&str] = &[
    "cpu_contention",
    "other_device_io",
    "other_openers",
    "page_cache_on_target",
    "page_cache_kept",
];

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

/// The `--stages` sections of a side's results.
fn stages_of(docs: &[RunDoc]) -> Vec<crate::results::stages::StagesResult> {
    docs.iter()
        .filter_map(|d| {
            crate::results::stages::parse(d.dioscope.as_ref()?.section(crate::results::stages::KEY))
        })
        .collect()
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
    let mut notes = Vec::new();
    let diffs = all_differences(a, b, s, &mut notes);
    let mut sa = SideSamples::default();
    let mut sb = SideSamples::default();
    a.docs.iter().for_each(|d| sa.add(d));
    b.docs.iter().for_each(|d| sb.add(d));
    notes.extend(sa.notes.iter().map(|n| format!("A: {n}")));
    notes.extend(sb.notes.iter().map(|n| format!("B: {n}")));
    let pairs = job_pairs(&sa, &sb);
    let gates = GateFamily::of(pairs.len(), s);
    let jobs = gates.jobs(&pairs, s);
    let side = |i: &Input, ss: &SideSamples| Side {
        label: i.label.to_string(),
        files: i.files.clone(),
        trials: ss.jobs.first().map(|j| j.trials.len()).unwrap_or(0),
    };
    let (environment, env_trials) = environment(&a.docs, &b.docs);
    let mut c = Comparison {
        schema: COMPARISON_SCHEMA,
        kind: "comparison".into(),
        dioscope_version: env!("CARGO_PKG_VERSION").into(),
        a: side(a, &sa),
        b: side(b, &sb),
        threshold_pct: s.threshold_pct,
        alpha: s.alpha,
        test: test_text(s, gates.tests),
        min_trials_per_side: gates.floor,
        gate_tests: gates.tests,
        differences: diffs,
        environment,
        env_trials,
        jobs,
        notes,
        outcome: Outcome::NoChange,
        exit_code: 0,
        run: None,
        profile: crate::profile::compare::compare_profiles(
            a.docs
                .iter()
                .filter_map(|d| d.dioscope.as_ref()?.profile.as_ref()),
            b.docs
                .iter()
                .filter_map(|d| d.dioscope.as_ref()?.profile.as_ref()),
        ),
        stages: crate::results::stages::compare(&stages_of(&a.docs), &stages_of(&b.docs)),
        a_run: a.docs.first().map(embedded),
        b_run: b.docs.first().map(embedded),
    };
    if s.sequential.is_none() {
        too_few_note(&mut c, &gates);
    }
    decide(&mut c);
    c
}

/// What differs between the sides (first document of each) and within a
/// side (every later document against its first); the notes that go with
/// them (findings on one side only, fio JSON without an environment, an
/// `--expect-different` that differs nowhere) are added to `notes`.
fn all_differences(
    a: &Input,
    b: &Input,
    s: &CompareSettings,
    notes: &mut Vec<String>,
) -> Vec<Difference> {
    let mut diffs = Vec::new();
    if !a.docs.is_empty() && !b.docs.is_empty() {
        diffs.extend(differences(
            &with_side_findings(a),
            &with_side_findings(b),
            "A vs B",
            &s.expect,
            s.allow_all,
        ));
    }
    notes.extend(unpoliced_only_notes(a, b));
    for side in [a, b] {
        diffs.extend(within_side(side, s));
        if side.docs.iter().any(|d| d.dioscope.is_none()) {
            notes.push(format!(
                "side {}: fio's JSON records no environment (kernel, device, scheduler, …): \
                 only job options and versions could be checked for differences",
                side.label
            ));
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
    diffs
}

/// A side's facts with its findings over all of its documents (a finding
/// in any trial of A and none of B's is a difference; within a side they
/// are not policed).
fn with_side_findings(side: &Input) -> Vec<Fact> {
    let mut f = side.docs.first().map(facts).unwrap_or_default();
    if let Some(x) = f.iter_mut().find(|x| x.key == "findings") {
        x.value = policed_findings(&side.docs).join(", ");
    }
    f
}

/// Notes on unpoliced findings (noise, what the workload is bound by) that
/// only one side has.
fn unpoliced_only_notes(a: &Input, b: &Input) -> Vec<String> {
    let mut notes = Vec::new();
    for (x, y) in [(a, b), (b, a)] {
        let only: Vec<String> = finding_kinds(&x.docs, |k| {
            UNPOLICED_FINDINGS.contains(&k) && !ENV_FINDINGS.contains(&k)
        })
        .into_iter()
        .filter(|k| !finding_kinds(&y.docs, |j| j == k).contains(k))
        .collect();
        if !only.is_empty() {
            notes.push(format!(
                "findings in {} only (shown, not policed: noise or what the workload is bound by): {}",
                x.label,
                only.join(", ")
            ));
        }
    }
    notes
}

/// What differs between a side's later documents and its first.
fn within_side(side: &Input, s: &CompareSettings) -> Vec<Difference> {
    let Some(first) = side.docs.first() else {
        return Vec::new();
    };
    let without_findings = |d: &RunDoc| -> Vec<Fact> {
        facts(d)
            .into_iter()
            .filter(|f| f.key != "findings")
            .collect()
    };
    let f0 = without_findings(first);
    let name = |k: usize| {
        side.files
            .get(k)
            .cloned()
            .unwrap_or_else(|| format!("run {}", k + 1))
    };
    let mut diffs = Vec::new();
    for (i, d) in side.docs.iter().enumerate().skip(1) {
        let label = format!("within {}", side.label);
        for mut x in differences(&f0, &without_findings(d), &label, &s.expect, s.allow_all) {
            x.between = format!("within {}: {} vs {}", side.label, name(0), name(i));
            diffs.push(x);
        }
    }
    diffs
}

/// The family of gate tests: one per gate metric and job both sides have,
/// each at α over their number (Bonferroni: all intervals cover together
/// with probability ≥ 1 − α), and the fewest trials per side with which an
/// interval at that level exists.
struct GateFamily {
    tests: usize,
    alpha: f64,
    floor: usize,
}

impl GateFamily {
    /// The family for `jobs` jobs both sides have.
    fn of(jobs: usize, s: &CompareSettings) -> GateFamily {
        let tests = (jobs * s.gate.len()).max(1);
        let alpha = s.alpha / tests as f64;
        let floor = (1..=50)
            .find(|&n| u_critical(n, n, alpha).is_some())
            .unwrap_or(50);
        GateFamily {
            tests,
            alpha,
            floor,
        }
    }

    /// Every metric of every job both sides have, judged.
    fn jobs(
        &self,
        pairs: &[(&JobSamples, &JobSamples)],
        s: &CompareSettings,
    ) -> Vec<JobComparison> {
        pairs
            .iter()
            .map(|(ja, jb)| JobComparison {
                group: ja.group,
                name: ja.name.clone(),
                metrics: (0..METRICS.len())
                    .map(|k| metric(ja, jb, k, s, self.alpha))
                    .collect(),
            })
            .collect()
    }
}

/// The jobs of A that B has too (same group and name), paired.
fn job_pairs<'a>(
    sa: &'a SideSamples,
    sb: &'a SideSamples,
) -> Vec<(&'a JobSamples, &'a JobSamples)> {
    sa.jobs
        .iter()
        .filter_map(|ja| {
            sb.jobs
                .iter()
                .find(|j| j.group == ja.group && j.name == ja.name)
                .map(|jb| (ja, jb))
        })
        .collect()
}

/// A fixed-size comparison whose first job's gate has too few trials for
/// any interval: say how many are needed.
fn too_few_note(c: &mut Comparison, g: &GateFamily) {
    let Some(j) = c.jobs.first() else { return };
    let Some(m) = j
        .metrics
        .iter()
        .find(|m| m.gate && m.verdict == Verdict::TooFewTrials)
    else {
        return;
    };
    let note = format!(
        "{} trials against {}: no interval at the {:.1} % level exists with so few \
         (the smallest possible p is {:.3}); {} trials per side are needed \
         (--trials={} or more, or --trials=auto)",
        m.n_a,
        m.n_b,
        100.0 * (1.0 - g.alpha),
        min_p(m.n_a, m.n_b),
        g.floor,
        g.floor
    );
    c.notes.push(note);
}

/// What the interval of a comparison is, for its header.
fn test_text(s: &CompareSettings, gate_tests: usize) -> String {
    let design = match s.sequential {
        Some(l) => format!(
            "; with --run, O'Brien-Fleming alpha spending over the looks at {}..{} trials per side \
             (repeated confidence intervals: they cover at every look at once)",
            l.min_n, l.max_n
        ),
        None => String::new(),
    };
    format!(
        "change: Hodges-Lehmann ratio B/A of the per-trial values (A, B: their medians); \
         interval: inverted from the two-sided Mann-Whitney U test, so a verdict is \
         significant exactly when its interval lies outside ±threshold; gate intervals \
         Bonferroni-adjusted over {gate_tests} gate test{} (together {:.0} %){design}",
        if gate_tests == 1 { "" } else { "s" },
        100.0 * (1.0 - s.alpha)
    )
}

/// The comparison of metric `k` of one job.
fn metric(
    ja: &JobSamples,
    jb: &JobSamples,
    k: usize,
    s: &CompareSettings,
    gate_alpha: f64,
) -> MetricComparison {
    let def = &METRICS[k];
    let (xa, xb) = (ja.column(k), jb.column(k));
    let median = |v: &[f64]| (!v.is_empty()).then(|| crate::stats::summary::median(v));
    let gate = s.gate.contains(&k);
    let mut out = MetricComparison {
        metric: def.key.into(),
        label: def.label.into(),
        unit: def.unit.into(),
        higher_is_better: def.higher_is_better,
        gate,
        a: median(&xa),
        b: median(&xb),
        n_a: xa.len(),
        n_b: xb.len(),
        change_pct: None,
        ci_pct: None,
        level: None,
        p: None,
        verdict: Verdict::NoData,
        values_a: xa.clone(),
        values_b: xb.clone(),
    };
    // Gate metrics: α over the gate tests, and with --run the repeated
    // interval of the look reached; other metrics: a plain interval at α
    // (a pointer, not a gate).
    let bound: Option<Boundary> = match (gate, s.sequential) {
        (true, Some(l)) => Design {
            min_n: l.min_n,
            max_n: l.max_n,
            alpha: gate_alpha,
        }
        .boundary(xa.len().min(xb.len())),
        (true, None) => fixed_boundary(xa.len(), xb.len(), gate_alpha),
        (false, _) => fixed_boundary(xa.len(), xb.len(), s.alpha),
    };
    let Some(j) = judge(&xa, &xb, bound, s.threshold_pct, def.higher_is_better) else {
        return out;
    };
    out.change_pct = Some(j.change_pct);
    out.ci_pct = j.ci_pct;
    out.level = j.level;
    out.p = mann_whitney(&xa, &xb).map(|t| t.p);
    out.verdict = j.verdict;
    out
}

/// Each side's environment findings and the trials they touched, over all
/// of its documents, and the trials per side. A page-cache finding that
/// dioscope itself cleared before the first timed I/O (`invalidate=1`:
/// `dropped`, seen before the trial) is not a condition of the measurement
/// and is left out.
fn environment(a: &[RunDoc], b: &[RunDoc]) -> (Vec<EnvFinding>, (usize, usize)) {
    fn side(docs: &[RunDoc]) -> (Vec<(String, usize)>, usize) {
        let mut touched: Vec<(String, usize)> = Vec::new();
        let mut total = 0;
        for d in docs {
            let trials = d
                .dioscope
                .as_ref()
                .and_then(|x| x.jobs.iter().map(|j| j.trials.len()).max())
                .unwrap_or(1)
                .max(1);
            total += trials;
            let Some(x) = &d.dioscope else { continue };
            let mut per_kind: Vec<(String, Vec<u64>)> = Vec::new();
            for f in &x.findings {
                let kind = f.kind();
                if !ENV_FINDINGS.contains(&kind) {
                    continue;
                }
                let get = |k: &str| f.fields.get(k);
                let removed = kind == "page_cache_on_target"
                    && get("dropped").and_then(|v| v.as_bool()) == Some(true)
                    && get("phase").and_then(|v| v.as_str()) == Some("before");
                if removed {
                    continue;
                }
                let mut ts: Vec<u64> = get("trials")
                    .and_then(|v| v.as_array())
                    .map(|v| v.iter().filter_map(|t| t.as_u64()).collect())
                    .unwrap_or_default();
                ts.extend(get("trial").and_then(|v| v.as_u64()));
                if ts.is_empty() {
                    // No trial named: the whole run (e.g. other openers).
                    ts = (1..=trials as u64).collect();
                }
                match per_kind.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, v)) => v.extend(ts),
                    None => per_kind.push((kind.to_string(), ts)),
                }
            }
            for (k, mut ts) in per_kind {
                ts.sort_unstable();
                ts.dedup();
                let n = ts.len().min(trials);
                match touched.iter_mut().find(|(x, _)| *x == k) {
                    Some((_, c)) => *c += n,
                    None => touched.push((k, n)),
                }
            }
        }
        (touched, total)
    }
    let (ta, na) = side(a);
    let (tb, nb) = side(b);
    let mut out: Vec<EnvFinding> = Vec::new();
    for kind in ENV_FINDINGS {
        let count = |t: &[(String, usize)]| {
            t.iter()
                .find(|(k, _)| k == kind)
                .map(|(_, n)| *n)
                .unwrap_or(0)
        };
        let (ca, cb) = (count(&ta), count(&tb));
        if ca == 0 && cb == 0 {
            continue;
        }
        let share = |c: usize, n: usize| if n == 0 { 0.0 } else { c as f64 / n as f64 };
        out.push(EnvFinding {
            kind: kind.to_string(),
            a_trials: ca,
            b_trials: cb,
            differs: (share(ca, na) - share(cb, nb)).abs() >= 0.5,
        });
    }
    (out, (na, nb))
}

/// The outcome and the exit code from the gate verdicts, the differences
/// and the environment.
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
    let significant = matches!(c.outcome, Outcome::Regression | Outcome::Improvement);
    if significant && c.environment.iter().any(|e| e.differs) {
        c.outcome = Outcome::Confounded;
    }
    c.exit_code = match c.outcome {
        Outcome::Regression => 1,
        Outcome::Confounded => 4,
        _ => 0,
    };
}

/// The sequential design `compare --run` decides `c` with: the looks of
/// `s`, each gate test at α over the gate tests (as [`compare`] bounds them).
pub fn design(s: &CompareSettings, c: &Comparison) -> Option<Design> {
    s.sequential.map(|l| Design {
        min_n: l.min_n,
        max_n: l.max_n,
        alpha: s.alpha / c.gate_tests.max(1) as f64,
    })
}

/// The kinds of environment finding that differ between the sides.
pub fn confounders(c: &Comparison) -> Vec<&str> {
    c.environment
        .iter()
        .filter(|e| e.differs)
        .map(|e| e.kind.as_str())
        .collect()
}

/// The gate tests of a comparison, as [`super::sequential::decide`] takes
/// them: every gate metric of every job, with its per-trial values.
pub fn gates(c: &Comparison) -> Vec<super::sequential::Gate<'_>> {
    c.jobs
        .iter()
        .flat_map(|j| j.metrics.iter().filter(|m| m.gate))
        .map(|m| super::sequential::Gate {
            a: &m.values_a,
            b: &m.values_b,
            higher_is_better: m.higher_is_better,
        })
        .collect()
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
    use crate::render::Exporter;
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
    fn bonferroni_over_gates_needs_more_trials() {
        let a = input("A", doc(&[1000., 1001., 1002., 1003.], "1"));
        let b = input("B", doc(&[900., 901., 902., 903.], "1"));
        let c = compare(&a, &b, &CompareSettings::default());
        assert_eq!(c.jobs[0].metrics[M::IOPS].verdict, Verdict::Worse);
        assert_eq!((c.gate_tests, c.min_trials_per_side), (1, 4));
        // Two gates: each at 2.5 %; 4 against 4 (smallest p 2/70 = 0.029)
        // has no interval at 97.5 %.
        let s = CompareSettings {
            gate: vec![M::IOPS, M::BW],
            ..Default::default()
        };
        let c = compare(&a, &b, &s);
        let m = &c.jobs[0].metrics[M::IOPS];
        assert_eq!(
            (m.verdict, m.ci_pct),
            (Verdict::TooFewTrials, None),
            "{m:?}"
        );
        assert_eq!((c.gate_tests, c.min_trials_per_side), (2, 5));
        assert_eq!(c.outcome, Outcome::Undecided);
        // A metric that does not gate keeps its 95 % interval.
        let lat = &c.jobs[0].metrics[M::LAT_MEAN];
        assert_eq!(lat.verdict, Verdict::Worse);
        assert!(
            (lat.level.unwrap() - (1.0 - 2.0 / 70.0)).abs() < 1e-12,
            "{lat:?}"
        );
    }

    fn with(iops: &[f64], kinds: &[serde_json::Value]) -> RunDoc {
        use crate::results::model::FindingDoc;
        let mut d = doc(iops, "1");
        for k in kinds {
            let mut f = FindingDoc::default();
            for (key, v) in k.as_object().unwrap() {
                f.fields.insert(key, v.clone());
            }
            d.dioscope.as_mut().unwrap().findings.push(f);
        }
        d
    }

    #[test]
    fn setup_findings_are_policed_and_environment_findings_listed_per_side() {
        use serde_json::json;
        let plain = || input("B", doc(&[1000.; 4], "1"));
        let c = compare(
            &input("A", with(&[1000.; 4], &[json!({"kind": "buffered_io"})])),
            &plain(),
            &CompareSettings::default(),
        );
        assert_eq!(c.exit_code, 2);
        assert_eq!(c.unexpected()[0].name, "findings");
        let c = compare(
            &input(
                "A",
                with(
                    &[1000.; 4],
                    &[json!({"kind": "cpu_contention", "trials": [1, 3]})],
                ),
            ),
            &plain(),
            &CompareSettings::default(),
        );
        assert_eq!(c.exit_code, 0, "{:?}", c.differences);
        assert_eq!(c.env_trials, (4, 4));
        assert_eq!(
            c.environment,
            vec![EnvFinding {
                kind: "cpu_contention".into(),
                a_trials: 2,
                b_trials: 0,
                differs: true,
            }]
        );
        // A finding in any file of a side counts for the side; several runs
        // of one side (compare --run) name them by number.
        let a = Input {
            label: "A",
            files: vec!["a.fio".into()],
            docs: vec![
                doc(&[1000.; 2], "1"),
                with(&[1000.; 2], &[json!({"kind": "buffered_io"})]),
            ],
        };
        let c = compare(&a, &plain(), &CompareSettings::default());
        assert_eq!(c.exit_code, 2);
    }

    #[test]
    fn page_cache_dropped_before_the_timed_io_does_not_count() {
        use serde_json::json;
        let dropped = json!({"kind": "page_cache_on_target", "phase": "before", "trial": 1,
                             "dropped": true, "pages": 12, "page_size": 4096, "target": "/dev/x"});
        let during = json!({"kind": "page_cache_on_target", "phase": "during", "trial": 2,
                            "dropped": false, "pages": 12, "page_size": 4096, "target": "/dev/x"});
        let c = compare(
            &input("A", with(&[1000., 1001., 999., 1002.], &[dropped])),
            &input("B", doc(&[1000., 1001., 999., 1003.], "1")),
            &CompareSettings::default(),
        );
        assert_eq!((c.exit_code, c.environment.len()), (0, 0), "{c:?}");
        let c = compare(
            &input("A", with(&[1000., 1001., 999., 1002.], &[during])),
            &input("B", doc(&[1000., 1001., 999., 1003.], "1")),
            &CompareSettings::default(),
        );
        assert_eq!(c.exit_code, 0, "{:?}", c.differences);
        assert_eq!(
            (c.environment[0].a_trials, c.environment[0].b_trials),
            (1, 0)
        );
    }

    #[test]
    fn a_significant_change_with_different_environments_is_confounded_exit_4() {
        use serde_json::json;
        let a = [1000., 1010., 990., 1005., 995.];
        let b = [700., 707., 693., 703., 697.];
        let hog = json!({"kind": "cpu_contention", "trials": [1, 2, 3, 4, 5], "cpus": 2,
                         "busy_pct": 197.0, "ours_pct": 50.0, "others_pct": 147.0, "top": []});
        // The hog on B only: the regression is the environment's as much as B's.
        let c = compare(
            &input("A", doc(&a, "1")),
            &input("B", with(&b, std::slice::from_ref(&hog))),
            &CompareSettings::default(),
        );
        assert_eq!(c.jobs[0].metrics[M::IOPS].verdict, Verdict::Worse);
        assert_eq!((c.outcome, c.exit_code), (Outcome::Confounded, 4));
        assert_eq!(confounders(&c), vec!["cpu_contention"]);
        let text = crate::render::compare_text::CompareText.render(&c);
        assert!(
            text.contains("CONFOUNDED") && text.contains("cpu_contention"),
            "{text}"
        );
        assert!(text.contains("B: 5 of 5 trials"), "{text}");
        // The same hog on both sides: a plain regression (exit 1), listed.
        let c = compare(
            &input("A", with(&a, std::slice::from_ref(&hog))),
            &input("B", with(&b, std::slice::from_ref(&hog))),
            &CompareSettings::default(),
        );
        assert_eq!((c.outcome, c.exit_code), (Outcome::Regression, 1));
        assert!(!c.environment[0].differs);
        // No significant change: nothing to confound (exit 0).
        let c = compare(
            &input("A", doc(&a, "1")),
            &input("B", with(&a, std::slice::from_ref(&hog))),
            &CompareSettings::default(),
        );
        assert_eq!(c.exit_code, 0);
    }

    #[test]
    fn one_against_one_prints_no_interval_and_json_keeps_every_trial() {
        let c = compare(
            &input("A", doc(&[1000.], "1")),
            &input("B", doc(&[500.], "1")),
            &CompareSettings::default(),
        );
        let m = &c.jobs[0].metrics[M::IOPS];
        assert_eq!(
            (m.ci_pct, m.level, m.verdict),
            (None, None, Verdict::TooFewTrials)
        );
        for text in [
            crate::render::compare_text::CompareText.render(&c),
            crate::render::compare_markdown::CompareMarkdown.render(&c),
        ] {
            assert!(!text.contains("[+") && !text.contains("[-"), "{text}");
            assert!(!text.contains("95 % CI"), "{text}");
        }
        let c = compare(
            &input("A", doc(&[1000., 1010., 990., 1005., 995.], "1")),
            &input("B", doc(&[700., 707., 693., 703., 697.], "1")),
            &CompareSettings::default(),
        );
        let v: serde_json::Value = serde_json::to_value(&c).unwrap();
        let iops = &v["jobs"][0]["metrics"][0];
        assert_eq!(
            iops["values_a"],
            serde_json::json!([1000., 1010., 990., 1005., 995.])
        );
        assert_eq!(
            iops["values_b"],
            serde_json::json!([700., 707., 693., 703., 697.])
        );
        let back: Comparison = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn gate_names_parse() {
        assert_eq!(parse_metrics("iops,p99").unwrap(), vec![M::IOPS, M::P99]);
        assert!(parse_metrics("speed").unwrap_err().contains("lat_p99"));
    }
}
