//! The HTML report: one self-contained file (inline CSS, inline SVG, no
//! script, no network) with the statistics, the diagnosis and the charts of
//! one or more results — dioscope's own or fio's JSON (json and json+).
//!
//! Sections of a run: summary per job and direction (CI over trials); IOPS,
//! bandwidth and latency over time per trial with the ramp shaded; latency
//! percentiles from the merged histograms on a log scale and the histogram;
//! the spread of trials; CPU per I/O; device requests per I/O and request
//! size; findings; environment and the command line. Two or more results:
//! side by side, and each against the first through the one comparison
//! function (`experiment::compare`: the same changes, intervals and
//! verdicts as `dioscope compare`). Every chart's `id` is stable (`r1-iops-0`, …) so
//! tests can find them.

use crate::svg::{self, esc, ns, num, BarRow, DotGroup, Line, LineChart};
use super::html_experiments::MIB;
use super::{Exporter, Format};
use crate::experiment::compare::Comparison;
use crate::experiment::sweep::Sweep;
use crate::results::model::{DioscopeJob, Job, Lat, Severity};
use crate::results::series::TrialSeries;
use crate::results::{units::interval, RunDoc};
use crate::stats::Summary;
use serde_json::Value;
use std::fmt::Write;

/// `--output-format=html`: the report of this one run.
pub struct Html;

pub const FORMAT: Format<RunDoc> = Format {
    name: "html",
    aliases: &[],
    help: "one self-contained HTML report with charts (no network needed to view it)",
    exporter: &Html,
};

impl Exporter<RunDoc> for Html {
    fn render(&self, doc: &RunDoc) -> String {
        report(&[Input::Run {
            name: String::new(),
            doc: Box::new(doc.clone()),
        }])
    }
}

/// One input of a report.
#[derive(Debug, Clone)]
pub enum Input {
    /// A run: dioscope's result or fio's JSON. `name` is where it came from.
    Run { name: String, doc: Box<RunDoc> },
    /// `dioscope compare`'s JSON.
    Compare { name: String, cmp: Box<Comparison> },
    /// `dioscope sweep`'s JSON; a recipe's result adds its `recipe`
    /// section (tables, verdict, control verdict, the seed's figures).
    Sweep {
        name: String,
        sweep: Box<Sweep>,
        recipe: Option<Box<Value>>,
    },
    /// `dioscope doctor --output-format=json`: the checklist of a target.
    Doctor { name: String, doc: Box<Value> },
}

impl Input {
    fn name(&self) -> &str {
        match self {
            Input::Run { name, .. }
            | Input::Compare { name, .. }
            | Input::Sweep { name, .. }
            | Input::Doctor { name, .. } => name,
        }
    }
}

const CSS: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1500px;padding:0 16px 40px;color:#1a1a1a;background:#fff}\
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:26px 0 6px;border-bottom:1px solid #ccc}h3{font-size:15px;margin:16px 0 4px}\
table{border-collapse:collapse;margin:6px 0 10px}th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:right;vertical-align:top}\
th{background:#f2f2f2}td.l,th.l{text-align:left}.muted{color:#555}code,pre{font:12px ui-monospace,monospace;background:#f6f6f6}\
pre{padding:8px;white-space:pre-wrap;word-break:break-all}\
svg.chart{max-width:100%;height:auto;display:block;margin:6px 0 14px;font:11px system-ui,sans-serif}\
.ct{font-size:14px;font-weight:600}.xt{text-anchor:middle;fill:#333}.yt{text-anchor:end;fill:#333}.xl,.yl{text-anchor:middle;font-size:12px}\
.grid{stroke:#e3e3e3}.tick{stroke:#888}.axis{stroke:#333}.shade{fill:#999;fill-opacity:.18}.st{fill:#444;font-style:italic}\
.lg text,.lgt{font-size:11px}.note{font-size:11px;fill:#333}.empty{text-anchor:middle;fill:#777;font-size:14px}\
.sev-critical{background:#D55E00;color:#fff;font-weight:700}.sev-warning{background:#E69F00;font-weight:700}.sev-info{background:#56B4E9}\
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:18px}.up{color:#006d4f}.down{color:#a33c00}\
nav a{margin-right:12px}";

/// The whole page for `inputs`.
pub fn report(inputs: &[Input]) -> String {
    let mut o = String::with_capacity(64 * 1024);
    let title = match inputs {
        [one] if one.name().is_empty() => "dioscope report".to_string(),
        [one] => format!("dioscope report: {}", one.name()),
        many => format!("dioscope report: {} results", many.len()),
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    for i in inputs {
        match i {
            Input::Compare { name, cmp } => {
                super::html_experiments::comparison(&mut o, name, cmp, "cmp");
                compared_runs(&mut o, cmp);
            }
            Input::Sweep {
                name,
                sweep,
                recipe,
            } => {
                if let Some(r) = recipe {
                    super::html_experiments::recipe(&mut o, r);
                }
                super::html_experiments::sweep(&mut o, name, sweep)
            }
            Input::Doctor { name, doc } => doctor(&mut o, name, doc),
            Input::Run { .. } => {}
        }
    }
    let runs: Vec<(&str, &RunDoc)> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Run { name, doc } => Some((name.as_str(), &**doc)),
            _ => None,
        })
        .collect();
    if runs.len() >= 2 {
        comparison(&mut o, &runs);
        // Profiled runs: where the CPU time per I/O changed, B against A.
        fn prof(d: &RunDoc) -> Option<&crate::profile::ProfileResult> {
            d.dioscope.as_ref()?.profile.as_ref()
        }
        if let Some(p) = crate::profile::compare::compare_profiles(
            prof(runs[0].1).into_iter(),
            prof(runs[1].1).into_iter(),
        ) {
            crate::profile::compare::render_html(&mut o, &p);
        }
        o.push_str("<div class=\"cols\">\n");
        for (k, (name, doc)) in runs.iter().enumerate() {
            let _ = write!(o, "<section id=\"r{}\">", k + 1);
            let _ = write!(o, "<h2>{} {}</h2>", label(k), esc(name));
            run_section(&mut o, &format!("r{}", k + 1), doc);
            o.push_str("</section>\n");
        }
        o.push_str("</div>\n");
    } else if let Some((_, doc)) = runs.first() {
        o.push_str("<section id=\"r1\">");
        run_section(&mut o, "r1", doc);
        o.push_str("</section>\n");
    }
    let _ = write!(
        o,
        "<p class=\"muted\">Made by dioscope {} — one file, no network needed. \
         Hover a point for its value.</p>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    o
}

/// A comparison's own runs (its sides' first results), side by side:
/// chart ids `ca-…` (A) and `cb-…` (B).
fn compared_runs(o: &mut String, c: &Comparison) {
    let (Some(a), Some(b)) = (&c.a_run, &c.b_run) else {
        o.push_str(
            "<p class=\"muted\">This comparison does not carry its runs (made by an older \
             dioscope): give the result files too (dioscope report A.json B.json) to see them.</p>",
        );
        return;
    };
    o.push_str("<h2 id=\"cmp-runs\">The runs side by side</h2>");
    let more: Vec<String> = [(&c.a, "A"), (&c.b, "B")]
        .iter()
        .filter(|(s, _)| s.files.len() > 1)
        .map(|(s, l)| format!("side {l} has {} results: its first is shown, the comparison above uses all", s.files.len()))
        .collect();
    for m in more {
        let _ = write!(o, "<p class=\"muted\">{}</p>", esc(&m));
    }
    o.push_str("<div class=\"cols\">\n");
    for (p, side, doc) in [("ca", &c.a, a), ("cb", &c.b, b)] {
        let _ = write!(
            o,
            "<section id=\"{p}\"><h2>{} {}</h2>",
            esc(&side.label),
            esc(side.files.first().map(String::as_str).unwrap_or(""))
        );
        run_section(o, p, doc);
        o.push_str("</section>\n");
    }
    o.push_str("</div>\n");
}

/// "A", "B", … for the results of a comparison.
fn label(k: usize) -> String {
    if k < 26 {
        ((b'A' + k as u8) as char).to_string()
    } else {
        format!("#{}", k + 1)
    }
}

/// A job's per-direction view, whether the result is dioscope's or fio's.
struct JobView<'a> {
    name: String,
    fio: &'a Job,
    ds: Option<&'a DioscopeJob>,
    dirs: Vec<usize>,
}

fn job_views(doc: &RunDoc) -> Vec<JobView<'_>> {
    doc.jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let ds = doc.dioscope_job(i);
            let dirs: Vec<usize> = match ds {
                Some(d) if !d.directions.is_empty() => (0..2)
                    .filter(|&k| d.measures(["read", "write"][k]))
                    .collect(),
                _ => (0..2).filter(|&k| j.dir(k).total_ios > 0).collect(),
            };
            JobView {
                name: j.jobname.clone(),
                fio: j,
                ds,
                dirs,
            }
        })
        .collect()
}

const DIRS: [&str; 2] = ["read", "write"];

/// Per trial (IOPS, bytes/s) of one direction: from the time series when
/// present, else fio's single value.
/// `--trials=auto` chose the job's trials: its intervals are widened for
/// the stop ([`Summary::of_trials`]), as the result's own.
fn auto_stop(v: &JobView) -> bool {
    v.ds.is_some_and(|d| d.summary.iops.auto_stop)
}

fn dir_trials(v: &JobView, d: usize) -> Vec<(f64, f64)> {
    if let Some(ds) = v.ds {
        if !ds.series.is_empty() {
            // Interrupted trials are listed, not averaged in.
            let interrupted =
                |n: u32| ds.trials.iter().any(|t| t.trial == n && t.interrupted);
            return ds
                .series
                .iter()
                .filter(|s| !interrupted(s.trial))
                .filter_map(|s| measured_rate(s, d))
                .collect();
        }
        if !ds.trials.is_empty() {
            let dir = v.fio.dir(d);
            let per_io = if dir.total_ios > 0 {
                dir.io_bytes as f64 / dir.total_ios as f64
            } else {
                0.0
            };
            return ds
                .trials
                .iter()
                .filter(|t| t.runtime_ms > 0.0 && !t.interrupted)
                .map(|t| {
                    let iops = if d == 0 { t.read_iops } else { t.write_iops };
                    (iops, iops * per_io)
                })
                .collect();
        }
    }
    let dir = v.fio.dir(d);
    vec![(dir.iops, dir.bw_bytes as f64)]
}

/// IOPS and bytes/s over a trial's measured intervals.
fn measured_rate(s: &TrialSeries, d: usize) -> Option<(f64, f64)> {
    let ds = s.dir(d);
    let (mut t, mut ios, mut bytes) = (0.0, 0.0, 0.0);
    for i in s.measured().filter(|&i| i < ds.len()) {
        let sec = s.dur(i) / 1e3;
        t += sec;
        ios += ds.iops[i] * sec;
        bytes += ds.bw_bytes[i] * sec;
    }
    (t > 0.0).then(|| (ios / t, bytes / t))
}

/// `mean ± σ` and the 95 % CI as `[low, high]` (the conventions of every
/// output, `results::units::interval`); the mean alone for one trial.
fn ci_text(s: &Summary, fmt: fn(f64) -> String) -> String {
    if s.n >= 2 && s.ci95.0.is_finite() {
        format!(
            "{} <span class=\"muted\">± {}<br>{}</span>",
            esc(&fmt(s.mean)),
            esc(&fmt(s.stddev)),
            esc(&interval(s.ci_name(), &fmt(s.ci95.0), &fmt(s.ci95.1)))
        )
    } else {
        esc(&fmt(s.mean))
    }
}

fn rate_text(x: f64) -> String {
    crate::experiment::show("bytes", x)
}

fn pct_of(l: &Lat, p: f64) -> Option<u64> {
    l.percentiles()
        .into_iter()
        .find(|(q, _)| (q - p).abs() < 1e-9)
        .map(|x| x.1)
}

/// The latency distribution the report shows: completion latency (fio's
/// default percentiles), or total latency when only that has percentiles.
fn main_lat(dir: &crate::results::model::Dir) -> (&Lat, &'static str) {
    if dir.clat_ns.percentile.is_some() || dir.lat_ns.percentile.is_none() {
        (&dir.clat_ns, "completion latency")
    } else {
        (&dir.lat_ns, "total latency")
    }
}

fn run_section(o: &mut String, p: &str, doc: &RunDoc) {
    let views = job_views(doc);
    let ds = doc.dioscope.as_ref();
    let producer = if ds.is_some() {
        "dioscope"
    } else {
        "fio's JSON"
    };
    let _ = write!(
        o,
        "<p class=\"muted\">{} · {} · {}</p>",
        esc(producer),
        esc(&doc.fio_version),
        esc(&doc.time)
    );
    if let Some(d) = ds {
        if d.interrupted || d.stopped_by_error || d.partial {
            let _ = write!(
                o,
                "<p class=\"sev-critical\">PARTIAL RESULT: {}</p>",
                if d.interrupted {
                    "interrupted by a signal"
                } else {
                    "stopped by an I/O error"
                }
            );
        }
    }
    let stages_link = if ds.and_then(|d| d.section(crate::results::stages::KEY)).is_some() {
        format!("<a href=\"#{p}-stages\">stages</a>")
    } else {
        String::new()
    };
    let _ = write!(o, "<nav><a href=\"#{p}-summary\">summary</a><a href=\"#{p}-time\">over time</a><a href=\"#{p}-latency\">latency</a>{stages_link}<a href=\"#{p}-trials\">trials</a><a href=\"#{p}-cpu\">CPU</a><a href=\"#{p}-devices\">devices</a><a href=\"#{p}-findings\">findings</a><a href=\"#{p}-env\">environment</a></nav>");
    summary_table(o, p, &views);
    time_series(o, p, &views);
    latency(o, p, &views);
    let stages = ds.and_then(|d| crate::results::stages::parse(d.section(crate::results::stages::KEY)));
    super::html_stages::run_section(o, p, stages.as_ref());
    spread(o, p, &views);
    cpu(o, p, doc, &views);
    if let Some(prof) = ds.and_then(|d| d.profile.as_ref()) {
        crate::profile::render_html(o, p, prof);
    }
    devices(o, p, doc);
    findings(o, p, doc);
    environment(o, p, doc);
}

fn summary_table(o: &mut String, p: &str, views: &[JobView]) {
    let _ = write!(
        o,
        "<h2 id=\"{p}-summary\">Summary</h2><table id=\"{p}-summary-table\"><tr><th class=\"l\">job</th><th class=\"l\">direction</th>\
         <th>trials</th><th>IOPS (mean ± σ, 95 % CI)</th><th>bandwidth</th><th>latency mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>"
    );
    for v in views {
        for &d in &v.dirs {
            let tr = dir_trials(v, d);
            let auto = auto_stop(v);
            let iops = Summary::of_trials(&tr.iter().map(|t| t.0).collect::<Vec<_>>(), auto);
            let bw = Summary::of_trials(&tr.iter().map(|t| t.1).collect::<Vec<_>>(), auto);
            let dir = v.fio.dir(d);
            let (l, _) = main_lat(dir);
            let pc = |q| pct_of(l, q).map(|x| ns(x as f64)).unwrap_or("–".into());
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&v.name),
                DIRS[d],
                tr.len(),
                ci_text(&iops, num),
                ci_text(&bw, rate_text),
                esc(&ns(dir.lat_ns.mean)),
                pc(50.0),
                pc(99.0),
                pc(99.9),
                esc(&ns(l.max as f64))
            );
        }
        if let Some(ds) = v.ds {
            let s = &ds.summary;
            if s.iops.n >= 2 {
                let _ = write!(
                    o,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">all</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td></td><td>{}</td><td></td><td></td></tr>",
                    esc(&v.name),
                    s.iops.n,
                    ci_text(&s.iops, num),
                    ci_text(&s.bw_bytes, rate_text),
                    ci_text(&s.lat_mean_ns, ns),
                    ci_text(&s.lat_p99_ns, ns)
                );
            }
        }
    }
    o.push_str("</table><p class=\"muted\">Per direction: the mean over the trials that ran to their end ± their standard deviation σ, and the 95 % confidence interval of the mean (Student's t) as [low, high]; one trial has no spread and no interval; interrupted trials are left out; latency percentiles from the histogram merged over all trials (completion latency, as fio reports it). \"all\": both directions, CI over trials.</p>");
}

fn secs(x: f64) -> String {
    format!("{} s", num(x))
}

fn time_series(o: &mut String, p: &str, views: &[JobView]) {
    let _ = write!(o, "<h2 id=\"{p}-time\">Over time</h2>");
    let mut any = false;
    for (j, v) in views.iter().enumerate() {
        let Some(ds) = v.ds.filter(|d| !d.series.is_empty()) else {
            continue;
        };
        any = true;
        let ramp = ds.series.iter().map(|s| s.ramp_ms).fold(0.0, f64::max) / 1e3;
        let shade = if ramp > 0.0 {
            vec![(0.0, ramp, "ramp (not measured)")]
        } else {
            vec![]
        };
        let multi = v.dirs.len() > 1;
        // Colour: the trial; dash: the direction (read solid, write dashed).
        let lines = |f: &dyn Fn(&TrialSeries, usize, usize) -> f64,
                     what: &str,
                     dash0: usize|
         -> Vec<Line> {
            let mut out = Vec::new();
            for (k, s) in ds.series.iter().enumerate() {
                for &d in &v.dirs {
                    let sd = s.dir(d);
                    if sd.is_empty() {
                        continue;
                    }
                    out.push(Line {
                        name: format!(
                            "trial {}{}{}",
                            s.trial,
                            if multi {
                                format!(" {}", DIRS[d])
                            } else {
                                String::new()
                            },
                            what
                        ),
                        points: (0..sd.len().min(s.t_ms.len()))
                            .map(|i| (s.t_ms[i] / 1e3, f(s, d, i)))
                            .collect(),
                        color: k,
                        dash: dash0 + d,
                        markers: sd.len() <= 60,
                        ..Default::default()
                    });
                }
            }
            out
        };
        let _ = write!(o, "<h3>{}</h3>", esc(&v.name));
        o.push_str(&svg::line_chart(&LineChart {
            id: &format!("{p}-iops-{j}"),
            title: &format!("{}: IOPS per interval, each trial", v.name),
            x_label: "time since the job's start (s)",
            y_label: "IOPS (I/Os per second)",
            shade: shade.clone(),
            lines: lines(&|s, d, i| s.dir(d).iops[i], "", 0),
            fmt_y: num,
            fmt_x: secs,
            ..Default::default()
        }));
        o.push_str(&svg::line_chart(&LineChart {
            id: &format!("{p}-bw-{j}"),
            title: &format!("{}: bandwidth per interval, each trial", v.name),
            x_label: "time since the job's start (s)",
            y_label: "bandwidth (MiB/s)",
            shade: shade.clone(),
            lines: lines(&|s, d, i| s.dir(d).bw_bytes[i] / MIB, "", 0),
            fmt_y: num,
            fmt_x: secs,
            ..Default::default()
        }));
        let mut lat = lines(&|s, d, i| s.dir(d).lat_p99_ns[i] as f64, " p99", 0);
        let mut p50 = lines(&|s, d, i| s.dir(d).lat_p50_ns[i] as f64, " p50", 2);
        lat.append(&mut p50);
        o.push_str(&svg::line_chart(&LineChart {
            id: &format!("{p}-latt-{j}"),
            title: &format!("{}: latency per interval, p99 and p50 (dotted)", v.name),
            x_label: "time since the job's start (s)",
            y_label: "total latency (log scale)",
            log_y: true,
            shade,
            lines: lat,
            fmt_y: ns,
            fmt_x: secs,
            ..Default::default()
        }));
        let coarse = ds
            .series
            .iter()
            .any(|s| s.interval_ms > 0.0 && s.dur_ms.iter().any(|&d| d > 1.5 * s.interval_ms));
        if coarse {
            o.push_str("<p class=\"muted\">Long run: neighbouring intervals were merged to keep memory fixed (p99 of a merged interval is the larger of the two).</p>");
        }
    }
    if !any {
        o.push_str("<p class=\"muted\">No time series in this result (fio's JSON carries none; dioscope's results keep one per trial).</p>");
    }
}

/// Percentile → "nines" (90 → 1, 99 → 2, 99.9 → 3): the x of a
/// percentile curve, which spreads the tail.
fn nines(pct: f64) -> f64 {
    -(1.0 - pct / 100.0).max(1e-7).log10()
}

fn nines_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let s = format!("{p:.5}");
    format!("p{}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Percentile curve points of a latency: from the bins when present (fine
/// resolution), else from fio's percentile list.
fn curve(l: &Lat) -> Vec<(f64, f64)> {
    let bins = l.bin_counts();
    let total: u64 = bins.iter().map(|b| b.1).sum();
    if total > 0 {
        let mut out = Vec::new();
        let mut cum = 0u64;
        for (v, n) in bins {
            cum += n;
            let pct = 100.0 * cum as f64 / total as f64;
            if pct >= 100.0 {
                out.push((nines(100.0 * (1.0 - 0.5 / total as f64)), v as f64));
                break;
            }
            out.push((nines(pct), v as f64));
        }
        out
    } else {
        l.percentiles()
            .into_iter()
            .filter(|(q, _)| *q > 0.0 && *q < 100.0)
            .map(|(q, v)| (nines(q), v as f64))
            .collect()
    }
}

fn latency(o: &mut String, p: &str, views: &[JobView]) {
    let _ = write!(o, "<h2 id=\"{p}-latency\">Latency distribution</h2>");
    for (j, v) in views.iter().enumerate() {
        let mut lines = Vec::new();
        for (k, &d) in v.dirs.iter().enumerate() {
            let (l, what) = main_lat(v.fio.dir(d));
            lines.push(Line {
                name: format!("{} {what}", DIRS[d]),
                points: curve(l),
                color: k,
                dash: k,
                markers: l.bins.is_none(),
                ..Default::default()
            });
        }
        o.push_str(&svg::line_chart(&LineChart {
            id: &format!("{p}-pct-{j}"),
            title: &format!("{}: latency percentiles, all trials merged", v.name),
            x_label: "percentile (log scale of 1 − p: p90, p99, p99.9 equally spaced)",
            y_label: "latency (log scale)",
            log_y: true,
            lines,
            fmt_y: ns,
            fmt_x: nines_label,
            ..Default::default()
        }));
        for &d in &v.dirs {
            let (l, what) = main_lat(v.fio.dir(d));
            let bins = l.bin_counts();
            if bins.is_empty() {
                let _ = write!(o, "<p class=\"muted\">{} {}: no histogram in this result (write it with --output-format=json+).</p>", esc(&v.name), DIRS[d]);
                continue;
            }
            o.push_str(&svg::histogram(
                &format!("{p}-hist-{j}-{}", DIRS[d]),
                &format!("{}: {} {what} histogram", v.name, DIRS[d]),
                &bins,
            ));
        }
    }
}

fn spread(o: &mut String, p: &str, views: &[JobView]) {
    let _ = write!(o, "<h2 id=\"{p}-trials\">Spread of trials</h2>");
    let with: Vec<&JobView> = views
        .iter()
        .filter(|v| v.ds.is_some_and(|d| !d.trials.is_empty()))
        .collect();
    if with.is_empty() {
        o.push_str("<p class=\"muted\">One measurement per job (fio's JSON has no trials): nothing to spread.</p>");
        return;
    }
    type Get = fn(&crate::results::TrialMetrics) -> f64;
    type Stat = fn(&crate::results::TrialStats) -> &Summary;
    type Metric = (
        &'static str,
        &'static str,
        &'static str,
        Get,
        Stat,
        fn(f64) -> String,
    );
    let metrics: [Metric; 4] = [
        (
            "iops",
            "IOPS per trial",
            "IOPS",
            |t| t.iops,
            |s| &s.iops,
            num,
        ),
        (
            "bw",
            "bandwidth per trial",
            "MiB/s",
            |t| t.bw_bytes / MIB,
            |s| &s.bw_bytes,
            num,
        ),
        (
            "lat",
            "mean latency per trial",
            "latency",
            |t| t.lat_mean_ns,
            |s| &s.lat_mean_ns,
            ns,
        ),
        (
            "p99",
            "p99 latency per trial",
            "latency",
            |t| t.lat_p99_ns,
            |s| &s.lat_p99_ns,
            ns,
        ),
    ];
    for (key, title, unit, get, stat, fmt) in metrics {
        let groups: Vec<DotGroup> = with
            .iter()
            .map(|v| {
                let ds = v.ds.expect("filtered");
                let s = stat(&ds.summary);
                let scale = if key == "bw" { MIB } else { 1.0 };
                DotGroup {
                    name: v.name.clone(),
                    values: ds
                        .trials
                        .iter()
                        .filter(|t| t.runtime_ms > 0.0 && !t.interrupted)
                        .map(get)
                        .collect(),
                    mean: s.mean / scale,
                    ci: (s.ci95.0 / scale, s.ci95.1 / scale),
                }
            })
            .collect();
        let ci = if with.iter().any(|v| auto_stop(v)) {
            crate::stats::summary::AUTO_STOP_CI
        } else {
            "95 % CI"
        };
        o.push_str(&svg::dot_plot(
            &format!("{p}-spread-{key}"),
            &format!("{title}: each trial a dot, mean and {ci}"),
            unit,
            fmt,
            &groups,
        ));
    }
}

fn us(x: f64) -> String {
    format!("{} µs", num(x))
}

fn cpu(o: &mut String, p: &str, doc: &RunDoc, views: &[JobView]) {
    let _ = write!(o, "<h2 id=\"{p}-cpu\">CPU per I/O</h2>");
    let mut rows = Vec::new();
    for v in views {
        let ios: u64 = (0..2).map(|d| v.fio.dir(d).total_ios).sum();
        if ios == 0 {
            continue;
        }
        if let Some(ds) = v.ds {
            let c = &ds.cpu;
            let tot = (c.process_usr_us + c.process_sys_us).max(1) as f64;
            let per = c.process_us_per_io;
            rows.push(BarRow {
                name: format!("{} (dioscope)", v.name),
                parts: vec![
                    ("user".into(), per * c.process_usr_us as f64 / tot, 0),
                    ("system".into(), per * c.process_sys_us as f64 / tot, 1),
                ],
            });
            rows.push(BarRow {
                name: format!("{} (system-wide)", v.name),
                parts: vec![("system-wide busy".into(), c.system_us_per_io, 2)],
            });
        } else {
            // fio: usr_cpu/sys_cpu are % of the job's runtime.
            let rt_us = v.fio.job_runtime as f64 * 1e3;
            rows.push(BarRow {
                name: v.name.clone(),
                parts: vec![
                    ("user".into(), v.fio.usr_cpu / 100.0 * rt_us / ios as f64, 0),
                    (
                        "system".into(),
                        v.fio.sys_cpu / 100.0 * rt_us / ios as f64,
                        1,
                    ),
                ],
            });
        }
    }
    o.push_str(&svg::bars(
        &format!("{p}-cpu-chart"),
        "CPU time per I/O",
        "CPU per I/O (µs)",
        us,
        &rows,
    ));
    if doc.dioscope.is_some() {
        o.push_str("<p class=\"muted\">dioscope: the whole process's user and system time per I/O (all trials); system-wide: every CPU's busy time per I/O, which includes interrupts and other processes.</p>");
    }
}

/// Write and read amplification per device: the run's row, then each trial's.
fn amplification(o: &mut String, p: &str, a: &crate::results::amplification::Amplification) {
    let _ = write!(o, "<table id=\"{p}-amplification\"><tr><th class=\"l\">trial</th><th class=\"l\">device</th><th class=\"l\">role</th><th>write amplification</th><th>read amplification</th><th class=\"l\">source</th></tr>");
    let rows = a.run.iter().map(|d| ("run".to_string(), d)).chain(
        a.trials
            .iter()
            .flat_map(|t| t.devices.iter().map(move |d| (format!("g{} t{}", t.group, t.trial), d))),
    );
    for (when, d) in rows {
        let q = match &d.reason {
            Some(r) if d.qualified => format!(" ({r})"),
            _ => String::new(),
        };
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}{}</td></tr>",
            esc(&when),
            esc(&d.device),
            esc(d.role.as_str()),
            esc(&d.write.text()),
            esc(&d.read.text()),
            esc(d.source.as_str()),
            esc(&q)
        );
    }
    o.push_str("</table><p class=\"muted\">Amplification: bytes the device transferred ÷ bytes the jobs transferred in the measured window.</p>");
}

fn devices(o: &mut String, p: &str, doc: &RunDoc) {
    let _ = write!(o, "<h2 id=\"{p}-devices\">Devices</h2>");
    if let Some(a) = doc.dioscope.as_ref().and_then(|d| d.amplification.as_ref()) {
        amplification(o, p, a);
    }
    let totals = doc
        .dioscope
        .as_ref()
        .map(|d| d.device_totals.as_slice())
        .unwrap_or(&[]);
    if totals.is_empty() && doc.disk_util.is_empty() {
        o.push_str("<p class=\"muted\">No device counters (no block device under the target, or the null engine).</p>");
        return;
    }
    if !totals.is_empty() {
        let _ = write!(o, "<table id=\"{p}-devices-table\"><tr><th class=\"l\">device</th><th class=\"l\">role</th><th>requests per I/O</th><th>request size</th><th>merges</th><th>utilisation</th><th>wait</th></tr>");
        for t in totals {
            let f =
                |k: &str, fmt: &dyn Fn(f64) -> String| t.metric(k).map(fmt).unwrap_or("–".into());
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&t.device),
                esc(t.role.as_str()),
                f("requests_per_io", &|x| format!("{x:.2}")),
                esc(&f("avg_request_bytes", &|x| crate::results::human_bytes(x as u64))),
                f("merges", &|x| format!("{x:.0}")),
                f("util_pct", &|x| format!("{x:.0} %")),
                f("avg_wait_ms", &|x| format!("{x:.3} ms"))
            );
        }
        o.push_str("</table>");
        let rows: Vec<BarRow> = totals
            .iter()
            .filter_map(|t| {
                Some(BarRow {
                    name: format!("{} ({})", t.device, t.role.as_str()),
                    parts: vec![("requests per I/O".into(), t.metric("requests_per_io")?, 0)],
                })
            })
            .collect();
        o.push_str(&svg::bars(
            &format!("{p}-dev-chart"),
            "Device requests per application I/O",
            "requests per I/O",
            |x| format!("{x:.2}"),
            &rows,
        ));
    } else {
        let _ = write!(o, "<table id=\"{p}-devices-table\"><tr><th class=\"l\">device</th><th>read ios</th><th>write ios</th><th>merges</th><th>util</th></tr>");
        for d in &doc.disk_util {
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td></tr>",
                esc(&d.name),
                d.read_ios,
                d.write_ios,
                d.read_merges + d.write_merges,
                d.util
            );
        }
        o.push_str("</table>");
    }
}

fn findings(o: &mut String, p: &str, doc: &RunDoc) {
    let _ = write!(o, "<h2 id=\"{p}-findings\">Findings</h2>");
    let Some(d) = &doc.dioscope else {
        o.push_str("<p class=\"muted\">fio's JSON carries no diagnosis; run the job with dioscope for findings.</p>");
        return;
    };
    if d.findings.is_empty() {
        o.push_str("<p>No findings: nothing dioscope checks distorted this run.</p>");
    } else {
        let mut f: Vec<_> = d.findings.iter().collect();
        f.sort_by_key(|x| std::cmp::Reverse(x.severity));
        let _ = write!(o, "<table id=\"{p}-findings-table\"><tr><th class=\"l\">severity</th><th class=\"l\">finding</th><th class=\"l\">what happened and what to do</th></tr>");
        for x in f {
            let (cls, name) = match x.severity {
                Severity::Critical => ("sev-critical", "CRITICAL"),
                Severity::Warning => ("sev-warning", "warning"),
                Severity::Info => ("sev-info", "info"),
            };
            let _ = write!(
                o,
                "<tr><td class=\"l {cls}\">{name}</td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td></tr>",
                esc(x.kind()),
                esc(&x.message)
            );
        }
        o.push_str("</table>");
    }
    for n in &d.notes {
        let _ = write!(o, "<p class=\"muted\">note: {}</p>", esc(n));
    }
}

/// `OPT=VALUE` as the job gave it; a flag given without a value (fio's
/// `time_based`) shows the value it sets, 1.
fn option_text(k: &str, v: &str) -> String {
    if v.is_empty() {
        format!("{k}=1")
    } else {
        format!("{k}={v}")
    }
}

/// A doctor's checklist: what it says of the target (how many checks
/// pass, fail, warn), one row per check with its status, the findings with
/// their severity, and the environment it saw.
fn doctor(o: &mut String, name: &str, d: &Value) {
    let target = d["target"].as_str().unwrap_or("");
    let checks: &[Value] = d["checks"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let _ = write!(o, "<section id=\"doctor\"><h2>Doctor: {}</h2>", esc(target));
    if !name.is_empty() {
        let _ = write!(o, "<p class=\"muted\">from {}</p>", esc(name));
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for c in checks {
        let st = c["status"].as_str().unwrap_or("?").to_string();
        match counts.iter_mut().find(|(s, _)| *s == st) {
            Some((_, n)) => *n += 1,
            None => counts.push((st, 1)),
        }
    }
    let summary: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let _ = write!(
        o,
        "<p id=\"doctor-summary\">{} checks: {}.</p>",
        checks.len(),
        esc(&summary.join(", "))
    );
    let class = |st: &str| match st {
        "fail" => "sev-critical",
        "warn" => "sev-warning",
        "info" => "sev-info",
        _ => "",
    };
    o.push_str(
        "<table id=\"doctor-checks\"><tr><th class=\"l\">status</th><th class=\"l\">check</th>\
         <th class=\"l\">what it found</th></tr>",
    );
    for c in checks {
        let st = c["status"].as_str().unwrap_or("?");
        let _ = write!(
            o,
            "<tr><td class=\"l {}\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            class(st),
            esc(st),
            esc(c["name"].as_str().unwrap_or("")),
            ticks_as_code(&esc(c["detail"].as_str().unwrap_or("")))
        );
    }
    o.push_str("</table>");
    let findings: Vec<&Value> = checks
        .iter()
        .flat_map(|c| c["findings"].as_array().map(Vec::as_slice).unwrap_or(&[]))
        .filter(|f| f["severity"].as_str() != Some("info"))
        .collect();
    if !findings.is_empty() {
        o.push_str(
            "<h3>Findings</h3><table id=\"doctor-findings\"><tr><th class=\"l\">severity</th>\
             <th class=\"l\">finding</th><th class=\"l\">what to do</th></tr>",
        );
        for f in findings {
            let sev = f["severity"].as_str().unwrap_or("");
            let _ = write!(
                o,
                "<tr><td class=\"l sev-{}\">{}</td><td class=\"l\"><code>{}</code></td>\
                 <td class=\"l\">{}</td></tr>",
                esc(sev),
                esc(sev),
                esc(f["kind"].as_str().unwrap_or("")),
                ticks_as_code(&esc(f["message"].as_str().unwrap_or("")))
            );
        }
        o.push_str("</table>");
    }
    if d["environment"].is_object() {
        o.push_str("<h3>Environment</h3>");
        env_table(o, "doctor-env", &d["environment"], true);
    }
    o.push_str("</section>\n");
}

/// An environment (a JSON object) as a table of `key › key` rows, keys
/// as words.
/// `code`: values as code (the doctor's environment names kernel and
/// mount settings and paths as they are).
fn env_table(o: &mut String, id: &str, env: &Value, code: bool) {
    let mut rows = Vec::new();
    flatten("", env, &mut rows);
    if rows.is_empty() {
        return;
    }
    let _ = write!(o, "<table id=\"{id}\">");
    for (k, v) in rows {
        let _ = write!(
            o,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            esc(&k.replace('_', " ").replace('.', " › ")),
            if code {
                format!("<code>{}</code>", esc(&v))
            } else {
                esc(&v)
            }
        );
    }
    o.push_str("</table>");
}

/// `name` in a message (a command, a kernel setting) as code, and so a
/// path (`queue/io_poll`, `/dev/vda`).
fn ticks_as_code(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
            continue;
        }
        for (j, w) in part.split(' ').enumerate() {
            if j > 0 {
                out.push(' ');
            }
            let core = w.trim_matches(|c: char| "(),.:;".contains(c));
            if core.contains('/') && core.len() > 1 {
                let at = w.find(core).unwrap_or(0);
                let _ = write!(
                    out,
                    "{}<code>{core}</code>{}",
                    &w[..at],
                    &w[at + core.len()..]
                );
            } else {
                out.push_str(w);
            }
        }
    }
    out
}

/// `a.b.c = value` rows of a JSON object.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object()) => {
            let s: Vec<String> = a
                .iter()
                .map(|x| x.to_string().trim_matches('"').to_string())
                .collect();
            out.push((prefix.to_string(), s.join(", ")));
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        Value::Null => {}
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        x => out.push((prefix.to_string(), x.to_string())),
    }
}

fn environment(o: &mut String, p: &str, doc: &RunDoc) {
    let _ = write!(o, "<h2 id=\"{p}-env\">Environment and command</h2>");
    if let Some(d) = &doc.dioscope {
        if !d.command_line.is_empty() {
            let _ = write!(
                o,
                "<p>Command line:</p><pre id=\"{p}-command\">{}</pre>",
                esc(&shell_join(&d.command_line))
            );
        }
        if !d.context.is_empty() {
            let _ = write!(o, "<p>{}</p>", esc(&d.context));
        }
        env_table(
            o,
            &format!("{p}-env-table"),
            &serde_json::to_value(&d.environment).unwrap_or_default(),
            false,
        );
    }
    let _ = write!(o, "<h3>Job options</h3><table id=\"{p}-options\"><tr><th class=\"l\">job</th><th class=\"l\">options</th></tr>");
    if let Some(g) = &doc.global_options {
        let s: Vec<String> = g.iter().map(|(k, v)| option_text(k, v)).collect();
        let _ = write!(
            o,
            "<tr><td class=\"l\">(global)</td><td class=\"l\"><code>{}</code></td></tr>",
            esc(&s.join(" "))
        );
    }
    for j in &doc.jobs {
        let s: Vec<String> = j
            .job_options
            .iter()
            .map(|(k, v)| option_text(k, v))
            .collect();
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td></tr>",
            esc(&j.jobname),
            esc(&s.join(" "))
        );
    }
    o.push_str("</table>");
}

/// Arguments as one shell line (quoted where needed).
fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_=./:,+%@".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Two or more results: each job's metrics side by side, then each result
/// against the first as `dioscope compare` judges it (the one comparison
/// function, so a report and compare never give different changes).
fn comparison(o: &mut String, runs: &[(&str, &RunDoc)]) {
    o.push_str("<h2 id=\"compare\">Side by side</h2><p>");
    for (k, (name, _)) in runs.iter().enumerate() {
        let _ = write!(o, "<b>{}</b> = {} &nbsp; ", label(k), esc(name));
    }
    o.push_str(
        "</p><table id=\"compare-table\"><tr><th class=\"l\">job</th><th class=\"l\">metric</th>",
    );
    for k in 0..runs.len() {
        let _ = write!(o, "<th>{}</th>", label(k));
    }
    o.push_str("</tr>");
    let views: Vec<Vec<JobView>> = runs.iter().map(|(_, d)| job_views(d)).collect();
    let mut groups: Vec<DotGroup> = Vec::new();
    for (ji, base) in views[0].iter().enumerate() {
        for &d in &base.dirs {
            for (metric, idx, fmt) in [
                ("IOPS", 0usize, num as fn(f64) -> String),
                ("bandwidth", 1, rate_text),
            ] {
                let _ = write!(
                    o,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{} {metric}</td>",
                    esc(&base.name),
                    DIRS[d]
                );
                for (k, vs) in views.iter().enumerate() {
                    let Some(v) = vs
                        .iter()
                        .find(|v| v.name == base.name)
                        .or_else(|| vs.get(ji))
                    else {
                        o.push_str("<td>–</td>");
                        continue;
                    };
                    let b: Vec<f64> = dir_trials(v, d)
                        .iter()
                        .map(|t| if idx == 0 { t.0 } else { t.1 })
                        .collect();
                    let sb = Summary::of_trials(&b, auto_stop(v));
                    let _ = write!(o, "<td>{}</td>", ci_text(&sb, fmt));
                    if idx == 0 {
                        groups.push(DotGroup {
                            name: format!("{} {} {}", label(k), base.name, DIRS[d]),
                            values: b.clone(),
                            mean: sb.mean,
                            ci: sb.ci95,
                        });
                    }
                }
                o.push_str("</tr>");
            }
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{} p99 latency (merged)</td>",
                esc(&base.name),
                DIRS[d]
            );
            for vs in &views {
                let v = vs
                    .iter()
                    .find(|v| v.name == base.name)
                    .or_else(|| vs.get(ji));
                let b99 = v
                    .and_then(|v| pct_of(main_lat(v.fio.dir(d)).0, 99.0))
                    .unwrap_or(0) as f64;
                let _ = write!(o, "<td>{}</td>", esc(&ns(b99)));
            }
            o.push_str("</tr>");
        }
    }
    o.push_str("</table><p class=\"muted\">Each result's own figures; how each differs from A, with its interval and verdict, follows: the comparison of <code>dioscope compare</code>.</p>");
    o.push_str(&svg::dot_plot(
        "compare-iops",
        "IOPS per trial, each result",
        "IOPS",
        num,
        &groups,
    ));
    against_first(o, runs);
}

/// Each result after the first judged against it by `dioscope compare`'s
/// own function, rendered as its comparison section.
fn against_first(o: &mut String, runs: &[(&str, &RunDoc)]) {
    for (k, (name, doc)) in runs.iter().enumerate().skip(1) {
        let side = |label: &'static str, name: &str, d: &RunDoc| crate::experiment::Input {
            label,
            files: vec![name.to_string()],
            docs: vec![d.clone()],
        };
        // The report shows whatever differs (listed) rather than refusing.
        let settings = crate::experiment::CompareSettings {
            allow_all: true,
            ..Default::default()
        };
        let c = crate::experiment::compare(
            &side("A", runs[0].0, runs[0].1),
            &side("B", name, doc),
            &settings,
        );
        super::html_experiments::comparison(
            o,
            &format!("{} against A", label(k)),
            &c,
            &format!("cmp-r{}", k + 1),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_spread_the_tail() {
        assert!((nines(90.0) - 1.0).abs() < 1e-9);
        assert!((nines(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(nines_label(2.0), "p99");
        assert_eq!(nines_label(3.0), "p99.9");
    }

    #[test]
    fn shell_join_quotes() {
        assert_eq!(
            shell_join(&["dioscope".into(), "--name=a b".into(), "x'y".into()]),
            "dioscope '--name=a b' 'x'\\''y'"
        );
    }
}
