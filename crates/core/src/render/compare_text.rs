//! A comparison for the terminal: the differences first, then per job one
//! row per metric (A, B, change with its interval, p, verdict), then notes
//! and the outcome.

use super::Exporter;
use crate::experiment::compare::{Comparison, MetricComparison, Outcome};
use crate::experiment::show;

pub struct CompareText;

/// The cells of one metric row: metric, A, B, change, 95 % CI, p, verdict.
pub fn row(m: &MetricComparison) -> [String; 7] {
    let v = |x: Option<f64>| x.map(|x| show(&m.unit, x)).unwrap_or_else(|| "-".into());
    let arrow = if m.higher_is_better { "↑" } else { "↓" };
    [
        format!("{}{} {arrow}", m.label, if m.gate { "*" } else { "" }),
        format!("{} (n={})", v(m.a), m.n_a),
        format!("{} (n={})", v(m.b), m.n_b),
        m.change_pct
            .map(|c| format!("{c:+.1} %"))
            .unwrap_or_else(|| "-".into()),
        m.ci_pct
            .map(|(l, h)| format!("[{l:+.1}, {h:+.1}] %"))
            .unwrap_or_else(|| "-".into()),
        match (m.p, m.p_adjusted) {
            (Some(p), Some(q)) if (p - q).abs() > 1e-12 => format!("{p:.3} ({q:.3})"),
            (Some(p), _) => format!("{p:.3}"),
            _ => "-".into(),
        },
        m.verdict.text().into(),
    ]
}

pub const HEADER: [&str; 7] = ["metric", "A", "B", "change", "95 % CI", "p", "verdict"];

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
        for j in &c.jobs {
            out.push_str(&format!("\nJob '{}' (group {}):\n", j.name, j.group));
            let rows: Vec<[String; 7]> = j.metrics.iter().map(row).collect();
            let mut w = [0usize; 7];
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
                    if i == 0 || i == 6 {
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
        out.push_str(&format!(
            "\n* decides the exit code. ↑ higher is better, ↓ lower is better. p: two-sided \
             Mann-Whitney U on trials (Holm-adjusted in brackets); CI: bootstrap of the ratio \
             of means. Threshold {} %.\n",
            c.threshold_pct
        ));
        for n in &c.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        if let Some(p) = &c.profile {
            out.push_str(&crate::profile::compare::render_text(p));
        }
        out.push_str(&format!("\n{}\n", outcome_line(c)));
        out
    }
}
