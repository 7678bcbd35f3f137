//! A comparison for the terminal: the differences first, the environment
//! of each side, then per job one row per metric (A, B, change with its
//! interval and level, verdict), then notes and the outcome.

use super::Exporter;
use crate::experiment::compare::{confounders, Comparison, MetricComparison, Outcome, Verdict};
use crate::experiment::show;

pub struct CompareText;

/// A confidence level as text: `95 %`, `97.5 %`, `99.93 %`.
pub fn level_text(l: f64) -> String {
    let p = 100.0 * l;
    let t = if p >= 99.9 {
        format!("{p:.2}")
    } else {
        format!("{p:.1}")
    };
    format!("{} %", t.trim_end_matches('0').trim_end_matches('.'))
}

/// A metric's interval as `[low, high] % (level)`, or `-` (none: too few
/// trials for one).
pub fn interval_text(m: &MetricComparison) -> String {
    match (m.ci_pct, m.level) {
        (Some((l, h)), Some(level)) => format!("[{l:+.1}, {h:+.1}] % ({})", level_text(level)),
        _ => "-".into(),
    }
}

/// The cells of one metric row: metric, A, B, change, interval, verdict.
pub fn row(m: &MetricComparison) -> [String; 6] {
    let v = |x: Option<f64>| x.map(|x| show(&m.unit, x)).unwrap_or_else(|| "-".into());
    let arrow = if m.higher_is_better { "↑" } else { "↓" };
    [
        format!("{}{} {arrow}", m.label, if m.gate { "*" } else { "" }),
        format!("{} (n={})", v(m.a), m.n_a),
        format!("{} (n={})", v(m.b), m.n_b),
        m.change_pct
            .map(|c| format!("{c:+.1} %"))
            .unwrap_or_else(|| "-".into()),
        interval_text(m),
        m.verdict.text().into(),
    ]
}

pub const HEADER: [&str; 6] = [
    "metric",
    "A median",
    "B median",
    "change",
    "interval (level)",
    "verdict",
];

/// The environment of both sides, one line per kind of finding.
pub fn environment_lines(c: &Comparison) -> Vec<String> {
    let (na, nb) = c.env_trials;
    c.environment
        .iter()
        .map(|e| {
            format!(
                "{:<22} A: {} of {na} trials   B: {} of {nb} trials{}",
                e.kind,
                e.a_trials,
                e.b_trials,
                if e.differs { "   DIFFERS" } else { "" }
            )
        })
        .collect()
}

/// The footer: what A, B, the change and the interval are.
/// One difference between the sides as a sentence: what, A's and B's
/// value, where, and whether `--expect-different` named it.
pub fn difference_sentence(d: &crate::experiment::differ::Difference) -> String {
    let shown = |v: &str| {
        if v.is_empty() {
            "(not set)".to_string()
        } else {
            v.to_string()
        }
    };
    let side = if d.between == "A vs B" {
        String::new()
    } else {
        format!(" ({})", d.between)
    };
    format!(
        "{} differs{side}: {} in A, {} in B{}.",
        d.what,
        shown(&d.a),
        shown(&d.b),
        if d.expected {
            " (expected: named by --expect-different)"
        } else {
            " (not named by --expect-different)"
        }
    )
}

pub fn legend(c: &Comparison) -> String {
    format!(
        "* decides the exit code. ↑ higher is better, ↓ lower is better. A, B: median of the          per-trial values. {}. Threshold ±{} %.",
        c.test, c.threshold_pct
    )
}

/// The outcome in one sentence.
pub fn outcome_line(c: &Comparison) -> String {
    match c.outcome {
        Outcome::Regression => format!(
            "REGRESSION: B is significantly worse than A by more than {} % (exit 1)",
            c.threshold_pct
        ),
        Outcome::Improvement => format!(
            "improvement: B is significantly better than A by more than {} % (exit 0)",
            c.threshold_pct
        ),
        Outcome::NoChange => format!(
            "no significant change beyond {} % (exit 0)",
            c.threshold_pct
        ),
        Outcome::Undecided => format!(
            "undecided: too few trials to reach significance ({} per side needed; exit 0)",
            c.min_trials_per_side
        ),
        Outcome::Confounded => {
            let worse = c
                .jobs
                .iter()
                .flat_map(|j| &j.metrics)
                .any(|m| m.gate && m.verdict == Verdict::Worse);
            let what: Vec<String> = c
                .environment
                .iter()
                .filter(|e| e.differs)
                .map(|e| {
                    format!(
                        "{} (A {} of {}, B {} of {} trials)",
                        e.kind, e.a_trials, c.env_trials.0, e.b_trials, c.env_trials.1
                    )
                })
                .collect();
            format!(
                "CONFOUNDED: B is significantly {} than A, but the sides ran in different                  environments: {}. The change may be the environment's; remove the cause and                  repeat (exit 4)",
                if worse { "worse" } else { "better" },
                what.join(", ")
            )
        }
        Outcome::Incomparable => {
            let names: Vec<String> = c.unexpected().iter().map(|d| d.name.clone()).collect();
            let mut names_u = names.clone();
            names_u.dedup();
            if c.jobs.is_empty() && names.is_empty() {
                "REFUSED: the two sides have no job in common (exit 2)".into()
            } else {
                format!(
                    "REFUSED: the sides differ in what nobody named: {}. If the experiment \
                     varies it, say so with --expect-different={} (or --allow-different); exit 2",
                    names_u.join(", "),
                    names_u.join(",")
                )
            }
        }
    }
}

impl Exporter<Comparison> for CompareText {
    fn render(&self, c: &Comparison) -> String {
        let mut out = format!(
            "dioscope compare  A: {} ({} trials)  B: {} ({} trials)\n",
            c.a.files.join(" "),
            c.a.trials,
            c.b.files.join(" "),
            c.b.trials
        );
        if let Some(r) = &c.run {
            out.push_str(&format!(
                "runs: {} in {:.0} s; stopped: {}\n",
                r.order, r.elapsed_s, r.stopped_because
            ));
        }
        out.push('\n');
        if c.differences.is_empty() {
            out.push_str("Differences: none\n");
        } else {
            out.push_str("Differences:\n");
            for d in &c.differences {
                out.push_str(&format!(
                    "  {} {:<36} A: {:<20} B: {}{}\n",
                    if d.expected { " " } else { "!" },
                    d.what,
                    d.a,
                    d.b,
                    if d.between == "A vs B" {
                        String::new()
                    } else {
                        format!("   ({})", d.between)
                    }
                ));
            }
            if !c.unexpected().is_empty() {
                out.push_str("  (! = not named by --expect-different)\n");
            }
        }
        if c.environment.is_empty() {
            out.push_str("Environment: no findings about it on either side\n");
        } else {
            out.push_str("Environment (findings per side, trials they touched):\n");
            for l in environment_lines(c) {
                out.push_str(&format!("  {l}\n"));
            }
            let conf = confounders(c);
            if !conf.is_empty() {
                out.push_str(&format!(
                    "  (DIFFERS: a significant change is confounded with {})\n",
                    conf.join(", ")
                ));
            }
        }
        for j in &c.jobs {
            out.push_str(&format!("\nJob '{}' (group {}):\n", j.name, j.group));
            let rows: Vec<[String; 6]> = j.metrics.iter().map(row).collect();
            let mut w = [0usize; 6];
            for (i, h) in HEADER.iter().enumerate() {
                w[i] = h.chars().count();
            }
            for r in &rows {
                for (i, x) in r.iter().enumerate() {
                    w[i] = w[i].max(x.chars().count());
                }
            }
            let line = |cells: &[String]| {
                let mut s = String::from(" ");
                for (i, x) in cells.iter().enumerate() {
                    let pad = w[i] - x.chars().count();
                    if i == 0 || i == 5 {
                        s.push_str(&format!(" {x}{}", " ".repeat(pad)));
                    } else {
                        s.push_str(&format!(" {}{x}", " ".repeat(pad)));
                    }
                    s.push(' ');
                }
                s.trim_end().to_string() + "\n"
            };
            out.push_str(&line(&HEADER.map(String::from)));
            for r in &rows {
                out.push_str(&line(r));
            }
        }
        out.push_str(&format!("\n{}\n", legend(c)));
        for n in &c.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        if let Some(p) = &c.profile {
            out.push_str(&crate::profile::compare::render_text(p));
        }
        if let Some(st) = &c.stages {
            out.push_str(&crate::results::stages::render_compare_text(st));
        }
        out.push_str(&format!("\n{}\n", outcome_line(c)));
        out
    }
}
