//! The report's sections for experiments: a comparison (`dioscope compare`
//! JSON: per job and metric A, B, the change with the interval of its test, the
//! test and the verdict) and a sweep (`dioscope sweep` JSON: each metric
//! against the varied option, one line per combination of the other
//! options, 95 % CI bars). Chart ids: `cmp-change-J`, `sweep-KEY`.

use crate::experiment::compare::{Comparison, Outcome, Verdict};
use crate::experiment::samples::METRICS;
use crate::experiment::sweep::{cell_stat, CellStatus, Sweep};
use crate::svg::{self, esc, ns, num, Line, LineChart};
use std::fmt::Write;

/// A metric's value as text, by its unit: the one formatting of the text
/// and Markdown views ([`crate::experiment::show`]: MiB/s, the same
/// rounding), so a figure reads the same in every view.
fn fmt_unit(unit: &str, v: f64) -> String {
    crate::experiment::show(unit, v)
}

/// Bytes per second → MiB/s, the unit of the charts' bandwidth axes.
pub const MIB: f64 = 1024.0 * 1024.0;

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "up",
        Verdict::Worse => "down",
        _ => "",
    }
}

/// A comparison: outcome, per job a table and a chart of the changes.
/// `id` prefixes the ids of its section, tables and charts (`cmp` for a
/// comparison's JSON).
pub fn comparison(o: &mut String, name: &str, c: &Comparison, id: &str) {
    comparison_header(o, name, c, id);
    comparison_lists(o, c);
    for (j, job) in c.jobs.iter().enumerate() {
        job_changes(
            o,
            job,
            &format!("{id}-table-{j}"),
            &format!("{id}-change-{j}"),
        );
    }
    for n in &c.notes {
        let _ = write!(o, "<p class=\"muted\">note: {}</p>", esc(n));
    }
    o.push_str("<p class=\"muted\">Higher is better for IOPS and bandwidth, lower for latency and CPU. The verdict is read off the interval: significant exactly when it lies outside ±threshold.</p></section>");
    if let Some(p) = &c.profile {
        crate::profile::compare::render_html(o, p);
    }
    if let Some(st) = &c.stages {
        super::html_stages::comparison(o, st, id);
    }
}

/// The comparison's section start: the sides, the outcome and exit code,
/// the test, how `--run` went, the outcome line.
fn comparison_header(o: &mut String, name: &str, c: &Comparison, id: &str) {
    let (cls, what) = match c.outcome {
        Outcome::Regression => ("sev-critical", "REGRESSION"),
        Outcome::Improvement => ("sev-info", "improvement"),
        Outcome::NoChange => ("", "no change"),
        Outcome::Undecided => ("sev-warning", "undecided (too few trials)"),
        Outcome::Incomparable => ("sev-critical", "INCOMPARABLE"),
        Outcome::Confounded => ("sev-critical", "CONFOUNDED"),
    };
    let _ = write!(
        o,
        "<section id=\"{id}\"><h2>Comparison {}</h2>\
         <p><b>A</b> = {} ({} trials) &nbsp; <b>B</b> = {} ({} trials)</p>\
         <p>Outcome: <span class=\"{cls}\" id=\"{id}-outcome\">{what}</span> (exit code {}). \
         {}, α = {}, threshold ±{} %; at least {} trials per side can reach the gates' level.</p>",
        esc(name),
        esc(&format!("{} {}", c.a.label, c.a.files.join(", "))),
        c.a.trials,
        esc(&format!("{} {}", c.b.label, c.b.files.join(", "))),
        c.b.trials,
        c.exit_code,
        esc(&c.test),
        c.alpha,
        c.threshold_pct,
        c.min_trials_per_side
    );
    if let Some(r) = &c.run {
        let _ = write!(
            o,
            "<p>Runs: order {}, stopped because {}, {:.0} s.</p>",
            esc(&r.order),
            esc(&r.stopped_because),
            r.elapsed_s
        );
    }
    let _ = write!(
        o,
        "<p id=\"{id}-outcome-line\">{}</p>",
        esc(&super::compare_text::outcome_line(c))
    );
}

/// Each side's environment and what differs between the sides.
fn comparison_lists(o: &mut String, c: &Comparison) {
    if !c.environment.is_empty() {
        o.push_str("<h3>Environment of each side</h3><ul>");
        for l in super::compare_text::environment_lines(c) {
            let _ = write!(o, "<li><code>{}</code></li>", esc(&l));
        }
        o.push_str("</ul>");
    }
    if !c.differences.is_empty() {
        o.push_str("<h3>Differences between A and B</h3><ul>");
        for d in &c.differences {
            let _ = write!(
                o,
                "<li>{}</li>",
                esc(&super::compare_text::difference_sentence(d))
            );
        }
        o.push_str("</ul>");
    }
}

/// One job's table of metrics (A, B, the change, its interval, the
/// verdict) and the chart of its changes with their intervals.
fn job_changes(
    o: &mut String,
    job: &crate::experiment::compare::JobComparison,
    table_id: &str,
    chart_id: &str,
) {
    let _ = write!(
            o,
            "<h3>{} (group {})</h3><table id=\"{table_id}\"><tr><th class=\"l\">metric</th><th>A median</th><th>B median</th>\
             <th>change B vs A</th><th>interval of the change (level)</th><th class=\"l\">verdict</th></tr>",
            esc(&job.name),
            job.group
        );
    let mut line = Line {
        name: "change of B against A".into(),
        markers: true,
        dots_only: true,
        ..Default::default()
    };
    let mut cats = Vec::new();
    for m in &job.metrics {
        let f = |v: Option<f64>| v.map(|x| fmt_unit(&m.unit, x)).unwrap_or("–".into());
        let _ = write!(
                o,
                "<tr><td class=\"l\">{}{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td class=\"l {}\">{}</td></tr>",
                esc(&m.label),
                if m.gate { "" } else { " <span class=\"muted\">(not gating)</span>" },
                esc(&f(m.a)),
                esc(&f(m.b)),
                verdict_class(m.verdict),
                m.change_pct.map(|x| format!("{x:+.1} %")).unwrap_or("–".into()),
                esc(&super::compare_text::interval_text(m)),
                verdict_class(m.verdict),
                m.verdict.text()
            );
        if let Some(ch) = m.change_pct {
            line.points.push((cats.len() as f64, ch));
            line.err.push(m.ci_pct.unwrap_or((f64::NAN, f64::NAN)));
            cats.push(m.label.clone());
        }
    }
    o.push_str("</table>");
    o.push_str(&svg::line_chart(&LineChart {
        id: chart_id,
        title: &format!("{}: change of B against A, with its interval", job.name),
        x_label: "metric",
        y_label: "change (%)",
        lines: vec![line],
        fmt_y: |v| format!("{v:+.0} %"),
        x_categories: cats,
        signed: true,
        ..Default::default()
    }));
}

/// A recipe's own section: what it reproduces, its verdict (and the
/// control's, when the result has one), what the seed reported, its tables
/// and notes — all from the result's `recipe` section.
pub fn recipe(o: &mut String, r: &serde_json::Value) {
    let text = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    let _ = write!(
        o,
        "<section id=\"recipe\"><h2>Recipe {} (seed {})</h2><p>{}</p>",
        esc(&text("name")),
        esc(&text("seed")),
        esc(&text("reproduces"))
    );
    let _ = write!(
        o,
        "<p>On kernel {} with {} CPUs{}.</p>",
        esc(&text("kernel")),
        r.get("cpus").and_then(|v| v.as_u64()).unwrap_or(0),
        if r.get("quick").and_then(|v| v.as_bool()) == Some(true) {
            ", quick (fewer trials: a smoke test, not a measurement)"
        } else {
            ""
        }
    );
    let _ = write!(
        o,
        "<p id=\"recipe-verdict\"><b>Verdict:</b> {}</p>",
        esc(&text("verdict"))
    );
    if let Some(cv) = r.get("control_verdict").and_then(|v| v.as_str()) {
        let _ = write!(
            o,
            "<p id=\"recipe-control\"><b>Control:</b> {}</p>",
            esc(cv)
        );
    }
    let _ = write!(
        o,
        "<p id=\"recipe-seed\"><b>What the seed reported:</b> {}</p>",
        esc(&text("seed_reported"))
    );
    for (i, t) in r
        .get("tables")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .enumerate()
    {
        recipe_table(o, i, t);
    }
    for n in r
        .get("notes")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let _ = write!(
            o,
            "<p class=\"muted\">note: {}</p>",
            esc(n.as_str().unwrap_or(""))
        );
    }
    o.push_str("</section>");
}

/// One of a recipe's tables (title, header, rows of text).
fn recipe_table(o: &mut String, i: usize, t: &serde_json::Value) {
    let strs = |v: Option<&serde_json::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string())
            })
            .collect()
    };
    let title = t.get("title").and_then(|v| v.as_str()).unwrap_or("");
    let _ = write!(
        o,
        "<h3>{}</h3><table id=\"recipe-table-{i}\"><tr>",
        esc(title)
    );
    for h in strs(t.get("header")) {
        let _ = write!(o, "<th class=\"l\">{}</th>", esc(&h));
    }
    o.push_str("</tr>");
    for row in t
        .get("rows")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        o.push_str("<tr>");
        for cell in strs(Some(row)) {
            let _ = write!(o, "<td class=\"l\">{}</td>", esc(&cell));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
}

/// The charted sweep metrics (keys of the metric table) and whether their
/// axis is logarithmic.
const SWEEP_CHARTS: &[(&str, bool)] = &[
    ("iops", false),
    ("bw", false),
    ("lat_mean", true),
    ("lat_p99", true),
    ("cpu_us_per_io", false),
];

/// A sweep: each metric against the first varied option, one line per
/// job and combination of the other options, CI bars; and the cell table.
pub fn sweep(o: &mut String, name: &str, s: &Sweep) {
    sweep_header(o, name, s);
    let Some(x_axis) = s.axes.first() else {
        o.push_str("<p>No varied option.</p></section>");
        return;
    };
    let mut jobs: Vec<String> = Vec::new();
    for c in &s.cells {
        for j in c.samples().jobs {
            if !jobs.contains(&j.name) {
                jobs.push(j.name);
            }
        }
    }
    // The other options' combinations: one line each.
    let mut combos: Vec<Vec<String>> = Vec::new();
    for c in &s.cells {
        let rest = c.values[1..].to_vec();
        if !combos.contains(&rest) {
            combos.push(rest);
        }
    }
    for &(key, log_y) in SWEEP_CHARTS {
        let Some(k) = METRICS.iter().position(|m| m.key == key) else {
            continue;
        };
        let def = METRICS[k];
        let mut lines = Vec::new();
        for (ji, job) in jobs.iter().enumerate() {
            for (ci, combo) in combos.iter().enumerate() {
                let mut l = Line {
                    name: sweep_line_name(s, combo, job, jobs.len(), def.label),
                    color: ci + ji * combos.len(),
                    dash: ji,
                    markers: true,
                    ..Default::default()
                };
                sweep_points(&mut l, s, combo, job, k);
                if !l.points.is_empty() {
                    lines.push(l);
                }
            }
        }
        let y_label = match def.unit {
            "ns" => format!("{} (log scale)", def.label),
            "bytes" => "bandwidth (MiB/s)".into(),
            "us" => format!("{} (µs)", def.label),
            _ => def.label.to_string(),
        };
        o.push_str(&svg::line_chart(&LineChart {
            id: &format!("sweep-{key}"),
            title: &format!("{} vs {} (mean, 95 % CI bars)", def.label, x_axis.option),
            x_label: &x_axis.option,
            y_label: &y_label,
            log_y,
            lines,
            fmt_y: if def.unit == "ns" { ns } else { num },
            x_categories: x_axis.values.clone(),
            ..Default::default()
        }));
    }
    sweep_table(o, s);
}

/// The sweep's section start: axes, order, progress, wall time, base.
fn sweep_header(o: &mut String, name: &str, s: &Sweep) {
    let axes: Vec<String> = s
        .axes
        .iter()
        .map(|a| format!("{} = {}", a.option, a.values.join(" | ")))
        .collect();
    let _ = write!(
        o,
        "<section id=\"sweep\"><h2>Sweep {}</h2><p>Varied: <code>{}</code>; order {}; {} of {} cells done{}; \
         wall {:.0} s ({:.0} % outside trials).</p><p>Base: <code>{}</code></p>",
        esc(name),
        esc(&axes.join("; ")),
        s.order.word(),
        s.cells.iter().filter(|c| c.status == CellStatus::Done).count(),
        s.cells.len(),
        if s.interrupted { ", INTERRUPTED" } else { "" },
        s.wall_s,
        s.overhead_pct,
        esc(&s.base_args.join(" "))
    );
}

/// A line's name: the other options' values (and the job, when there are
/// several), or the metric's label when nothing else varies.
fn sweep_line_name(s: &Sweep, combo: &[String], job: &str, jobs: usize, label: &str) -> String {
    let mut parts: Vec<String> = s.axes[1..]
        .iter()
        .zip(combo)
        .map(|(a, v)| format!("{}={v}", a.option))
        .collect();
    if jobs > 1 {
        parts.insert(0, job.to_string());
    }
    if parts.is_empty() {
        label.to_string()
    } else {
        parts.join(" ")
    }
}

/// A line's points: metric `k` of `job` at each value of the first axis,
/// with the 95 % CI bars (none for one trial).
fn sweep_points(l: &mut Line, s: &Sweep, combo: &[String], job: &str, k: usize) {
    let Some(x_axis) = s.axes.first() else { return };
    let scale = if METRICS[k].key == "bw" { MIB } else { 1.0 };
    for (xi, xv) in x_axis.values.iter().enumerate() {
        let cell = s
            .cells
            .iter()
            .find(|c| c.values[0] == *xv && c.values[1..] == combo[..]);
        if let Some(st) = cell.and_then(|c| cell_stat(c, Some(job), k)) {
            l.points.push((xi as f64, st.mean / scale));
            l.err.push(if st.n >= 2 && st.half.is_finite() {
                ((st.mean - st.half) / scale, (st.mean + st.half) / scale)
            } else {
                (f64::NAN, f64::NAN)
            });
        }
    }
}

/// The table of cells: the axes' values, status, IOPS, bandwidth, p99 and
/// findings.
fn sweep_table(o: &mut String, s: &Sweep) {
    o.push_str("<table id=\"sweep-table\"><tr>");
    for a in &s.axes {
        let _ = write!(o, "<th class=\"l\">{}</th>", esc(&a.option));
    }
    o.push_str("<th class=\"l\">status</th>");
    for key in ["iops", "bw", "lat_p99"] {
        if let Some(m) = METRICS.iter().find(|m| m.key == key) {
            let _ = write!(o, "<th>{}</th>", esc(m.label));
        }
    }
    o.push_str("<th class=\"l\">findings</th></tr>");
    for c in &s.cells {
        o.push_str("<tr>");
        for v in &c.values {
            let _ = write!(o, "<td class=\"l\">{}</td>", esc(v));
        }
        let status = match c.status {
            CellStatus::Done => "done".to_string(),
            CellStatus::Pending => "pending".into(),
            CellStatus::Failed => format!("failed: {}", c.error.clone().unwrap_or_default()),
        };
        let _ = write!(o, "<td class=\"l\">{}</td>", esc(&status));
        for key in ["iops", "bw", "lat_p99"] {
            let k = METRICS.iter().position(|m| m.key == key).unwrap_or(0);
            let txt = match cell_stat(c, None, k) {
                Some(st) if st.n >= 2 => {
                    let u = METRICS[k].unit;
                    format!(
                        "{} ± {} [{}, {}] ({})",
                        fmt_unit(u, st.mean),
                        fmt_unit(u, st.sigma().unwrap_or(f64::NAN)),
                        if st.mean - st.half < 0.0 {
                            "reaches 0".to_string()
                        } else {
                            fmt_unit(u, st.mean - st.half)
                        },
                        fmt_unit(u, st.mean + st.half),
                        st.n
                    )
                }
                Some(st) => format!("{} ({})", fmt_unit(METRICS[k].unit, st.mean), st.n),
                None => "–".into(),
            };
            let _ = write!(o, "<td>{}</td>", esc(&txt));
        }
        let f: Vec<String> = c
            .findings()
            .iter()
            .map(|k| format!("<code>{}</code>", esc(k)))
            .collect();
        let _ = write!(o, "<td class=\"l\">{}</td></tr>", f.join(", "));
    }
    o.push_str("</table><p class=\"muted\">Each cell: mean over its trials ± σ (their standard deviation), the 95 % CI of the mean as [low, high], (trials); one trial: the value alone. The first job is shown in the table; the charts have a line per job.</p></section>");
}

#[cfg(test)]
mod tests {
    use super::super::compare_markdown::CompareMarkdown;
    use super::super::compare_text::CompareText;
    use super::super::Exporter;
    use crate::experiment::compare::Comparison;

    /// Over one fixed comparison, every metric's A and B read the same —
    /// same unit (MiB/s for bandwidth), same rounding — in the text, the
    /// Markdown and the HTML report.
    #[test]
    fn a_metric_reads_the_same_in_text_markdown_and_html() {
        let c: Comparison =
            serde_json::from_str(include_str!("testdata/compare_two_runs.json")).unwrap();
        let text = CompareText.render(&c);
        let md = CompareMarkdown.render(&c);
        let html = super::super::html::report(&[super::super::html::Input::Compare {
            name: "cmp.json".into(),
            cmp: Box::new(c.clone()),
        }]);
        let mut checked = 0;
        for m in &c.jobs[0].metrics {
            for v in [m.a, m.b].into_iter().flatten() {
                let shown = crate::experiment::show(&m.unit, v);
                for (view, out) in [("text", &text), ("Markdown", &md), ("HTML", &html)] {
                    assert!(
                        out.contains(&shown),
                        "{} {shown} is not in the {view} view",
                        m.label
                    );
                }
                checked += 1;
            }
        }
        assert!(checked >= 10, "only {checked} values checked");
    }
}
