//! Two profiles side by side (`dioscope compare A.json B.json` when both
//! ran with `--profile`): per group of jobs, which subsystems and functions
//! of the process got cheaper or dearer per I/O, and whether the change is
//! beyond the sampling noise.
//!
//! The noise rule. perf's `cpu-clock` takes one sample per `period` of a
//! thread's CPU time, so the samples that land in a function are a count:
//! under sampling alone it varies like a Poisson count, σ(n) ≈ √n. A
//! function's cost per I/O is `n · period ÷ I/Os`, so the difference B − A
//! has σ = √(n_A · (period_A/ios_A)² + n_B · (period_B/ios_B)²) (a count of
//! 0 counts as 1, so that a function seen on one side only is not certain
//! on the strength of nothing). A change is *beyond the noise* when
//! |B − A| > 3 σ: about 1 row in 370 of those that did not change passes by
//! chance, so a table of ~50 rows is rarely wrong once. The bound covers
//! the sampling only: a run-to-run difference (another kernel state, the
//! page cache, a noisy neighbour) is not noise to it, which is why the
//! comparison of the runs' own CPU per I/O (with its trial CI) sits beside
//! it.
//!
//! Where the counts come from: the subsystems and the process's totals are
//! complete in the result; functions are counted from the folded stacks
//! (every sample of the process's threads, by its innermost frame), so a
//! function below one side's top list still gets its exact count.

use super::{GroupProfile, ProfileResult, ProfileStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// σ multiple beyond which a change counts.
const NOISE_SIGMAS: f64 = 3.0;
/// Functions listed per group (the largest changes first).
const TOP_CHANGES: usize = 20;

/// The rule, as the outputs state it.
const RULE: &str = "beyond the noise: |B − A| > 3 σ, σ from Poisson sampling counts \
                        (σ(n) = √n samples per side, n ≥ 1); run-to-run variation is not included";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Cheaper,
    Dearer,
    /// Within the sampling noise.
    Same,
}

impl Change {
    pub fn text(self) -> &'static str {
        match self {
            Change::Cheaper => "cheaper",
            Change::Dearer => "dearer",
            Change::Same => "within noise",
        }
    }
}

/// One row: a cost on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostDelta {
    pub name: String,
    /// A function's subsystem (as charged on the side where it costs most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsystem: Option<String>,
    pub a_us_per_io: f64,
    pub b_us_per_io: f64,
    pub delta_us_per_io: f64,
    /// (B/A − 1) · 100; none when A is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
    pub samples_a: u64,
    pub samples_b: u64,
    /// 3 σ of the difference (µs per I/O).
    pub noise_us_per_io: f64,
    pub change: Change,
}

/// One group of jobs on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupDelta {
    pub group: u32,
    pub jobs: Vec<String>,
    pub ios_a: u64,
    pub ios_b: u64,
    /// The process's CPU per I/O as each run measured it (getrusage).
    pub measured_a_us_per_io: f64,
    pub measured_b_us_per_io: f64,
    /// Process total, kernel, user.
    pub totals: Vec<CostDelta>,
    pub subsystems: Vec<CostDelta>,
    /// The largest changes first ([`TOP_CHANGES`]).
    pub functions: Vec<CostDelta>,
    /// Functions not listed, and how many of them are beyond the noise.
    pub other_functions: usize,
    pub other_beyond_noise: usize,
}

/// `compare`'s profile section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileComparison {
    pub rule: String,
    pub groups: Vec<GroupDelta>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One side's counts for one group, summed over its results.
#[derive(Default)]
struct SideCounts {
    ios: u64,
    /// µs of CPU per sample (the last seen; results of one side share it).
    period_us: f64,
    measured_cpu_us: f64,
    jobs: Vec<String>,
    total: u64,
    kernel: u64,
    subsystems: BTreeMap<String, u64>,
    functions: BTreeMap<String, u64>,
    /// Subsystem of each function as the breakdown charged it (most first).
    function_subsystem: BTreeMap<String, (String, f64)>,
}

fn samples(us_per_io: f64, ios: u64, period_us: f64) -> u64 {
    if period_us <= 0.0 {
        return 0;
    }
    (us_per_io * ios as f64 / period_us).round().max(0.0) as u64
}

impl SideCounts {
    fn add(&mut self, g: &GroupProfile, period_us: f64) {
        let b = &g.process;
        self.ios += g.ios;
        self.period_us = period_us;
        self.measured_cpu_us += g.measured_us_per_io * g.ios as f64;
        if self.jobs.is_empty() {
            self.jobs = g.jobs.clone();
        }
        self.total += b.samples;
        self.kernel += samples(b.kernel_us_per_io, g.ios, period_us);
        for s in &b.subsystems {
            *self.subsystems.entry(s.name.clone()).or_default() +=
                samples(s.us_per_io, g.ios, period_us);
        }
        for f in &b.functions {
            let e = self
                .function_subsystem
                .entry(f.function.clone())
                .or_insert((f.subsystem.clone(), 0.0));
            if f.us_per_io > e.1 {
                *e = (f.subsystem.clone(), f.us_per_io);
            }
        }
        // Every sample of the process's threads by its innermost frame.
        let ours: Vec<&str> = b.threads.iter().map(|t| t.name.as_str()).collect();
        for line in g.folded.lines() {
            let Some((stack, n)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else {
                continue;
            };
            let mut frames = stack.split(';');
            let Some(class) = frames.next() else {
                continue;
            };
            if !ours.contains(&class) {
                continue;
            }
            if let Some(leaf) = frames.next_back() {
                *self.functions.entry(leaf.to_string()).or_default() += n;
            }
        }
    }

    fn us(&self, n: u64) -> f64 {
        if self.ios == 0 {
            0.0
        } else {
            n as f64 * self.period_us / self.ios as f64
        }
    }
}

fn delta(
    name: &str,
    subsystem: Option<String>,
    a: &SideCounts,
    na: u64,
    b: &SideCounts,
    nb: u64,
) -> CostDelta {
    let (ua, ub) = (a.us(na), b.us(nb));
    let var = |s: &SideCounts, n: u64| {
        let per = if s.ios == 0 {
            0.0
        } else {
            s.period_us / s.ios as f64
        };
        n.max(1) as f64 * per * per
    };
    let noise = NOISE_SIGMAS * (var(a, na) + var(b, nb)).sqrt();
    let d = ub - ua;
    CostDelta {
        name: name.to_string(),
        subsystem,
        a_us_per_io: ua,
        b_us_per_io: ub,
        delta_us_per_io: d,
        change_pct: (ua > 0.0).then(|| (ub / ua - 1.0) * 100.0),
        samples_a: na,
        samples_b: nb,
        noise_us_per_io: noise,
        change: if d.abs() <= noise {
            Change::Same
        } else if d < 0.0 {
            Change::Cheaper
        } else {
            Change::Dearer
        },
    }
}

/// The recorded profiles of a side's results (those with a profile that
/// recorded something).
fn recorded<'a>(side: impl Iterator<Item = &'a ProfileResult>) -> Vec<&'a ProfileResult> {
    side.filter(|p| matches!(p.status, ProfileStatus::Recorded | ProfileStatus::Partial))
        .collect()
}

/// Compare the profiles of side A's results with side B's; `None` when
/// neither side has one. A side without one gets a note instead.
pub fn compare_profiles<'a>(
    a: impl Iterator<Item = &'a ProfileResult>,
    b: impl Iterator<Item = &'a ProfileResult>,
) -> Option<ProfileComparison> {
    let (pa, pb) = (recorded(a), recorded(b));
    if pa.is_empty() && pb.is_empty() {
        return None;
    }
    let mut notes = Vec::new();
    if pa.is_empty() || pb.is_empty() {
        notes.push(format!(
            "only side {} has a profile: run both with --profile to compare where the time goes",
            if pa.is_empty() { "B" } else { "A" }
        ));
        return Some(ProfileComparison {
            rule: RULE.into(),
            groups: Vec::new(),
            notes,
        });
    }
    let sum = |side: &[&ProfileResult]| {
        let mut m: BTreeMap<u32, SideCounts> = BTreeMap::new();
        for p in side {
            let period = p.perf.as_ref().map(|x| x.period_us).unwrap_or(0.0);
            for g in &p.groups {
                m.entry(g.group).or_default().add(g, period);
            }
        }
        m
    };
    let (sa, sb) = (sum(&pa), sum(&pb));
    let scope = |side: &[&ProfileResult]| {
        side.first()
            .and_then(|p| p.perf.as_ref())
            .map(|x| x.scope.clone())
    };
    if scope(&pa) != scope(&pb) {
        notes.push(format!(
            "perf recorded A as {} and B as {}: the process's figures compare, the kernel threads' do not",
            scope(&pa).unwrap_or_default(),
            scope(&pb).unwrap_or_default()
        ));
    }
    let mut groups = Vec::new();
    for (g, a) in &sa {
        let Some(b) = sb.get(g) else {
            notes.push(format!("group {g} was profiled on side A only"));
            continue;
        };
        if a.ios == 0 || b.ios == 0 {
            notes.push(format!("group {g}: no I/Os recorded on one side"));
            continue;
        }
        groups.push(group_delta(*g, a, b));
    }
    for g in sb.keys().filter(|g| !sa.contains_key(g)) {
        notes.push(format!("group {g} was profiled on side B only"));
    }
    Some(ProfileComparison {
        rule: RULE.into(),
        groups,
        notes,
    })
}

/// One group's changes from side A to side B: totals, subsystems, and the
/// functions that changed most.
fn group_delta(g: u32, a: &SideCounts, b: &SideCounts) -> GroupDelta {
    let totals = vec![
        delta("process (all threads)", None, a, a.total, b, b.total),
        delta("kernel", None, a, a.kernel, b, b.kernel),
        delta(
            "user",
            None,
            a,
            a.total.saturating_sub(a.kernel),
            b,
            b.total.saturating_sub(b.kernel),
        ),
    ];
    let by_change = |v: &mut Vec<CostDelta>| {
        v.sort_by(|x, y| {
            (y.change != Change::Same)
                .cmp(&(x.change != Change::Same))
                .then(y.delta_us_per_io.abs().total_cmp(&x.delta_us_per_io.abs()))
                .then(x.name.cmp(&y.name))
        })
    };
    let names = |x: &BTreeMap<String, u64>, y: &BTreeMap<String, u64>| {
        let mut n: Vec<String> = x.keys().chain(y.keys()).cloned().collect();
        n.sort();
        n.dedup();
        n
    };
    let mut subsystems: Vec<CostDelta> = names(&a.subsystems, &b.subsystems)
        .iter()
        .map(|s| {
            let c = |m: &BTreeMap<String, u64>| m.get(s).copied().unwrap_or(0);
            delta(s, None, a, c(&a.subsystems), b, c(&b.subsystems))
        })
        .collect();
    by_change(&mut subsystems);
    let mut functions: Vec<CostDelta> = names(&a.functions, &b.functions)
        .iter()
        .map(|f| {
            let c = |m: &BTreeMap<String, u64>| m.get(f).copied().unwrap_or(0);
            let sub = match (a.function_subsystem.get(f), b.function_subsystem.get(f)) {
                (Some(x), Some(y)) => Some(if x.1 >= y.1 { x.0.clone() } else { y.0.clone() }),
                (Some(x), None) | (None, Some(x)) => Some(x.0.clone()),
                (None, None) => None,
            };
            delta(f, sub, a, c(&a.functions), b, c(&b.functions))
        })
        .collect();
    by_change(&mut functions);
    let other = functions.split_off(functions.len().min(TOP_CHANGES));
    GroupDelta {
        group: g,
        jobs: a.jobs.clone(),
        ios_a: a.ios,
        ios_b: b.ios,
        measured_a_us_per_io: a.measured_cpu_us / a.ios as f64,
        measured_b_us_per_io: b.measured_cpu_us / b.ios as f64,
        totals,
        subsystems,
        functions,
        other_functions: other.len(),
        other_beyond_noise: other.iter().filter(|x| x.change != Change::Same).count(),
    }
}

/// The section of `compare`'s text output.
pub fn render_text(c: &ProfileComparison) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nprofile: CPU per I/O by subsystem and function, B against A ({})",
        c.rule
    );
    for g in &c.groups {
        let _ = writeln!(
            o,
            "group {} ({}): measured CPU per I/O {:.3} → {:.3} µs",
            g.group,
            g.jobs.join(", "),
            g.measured_a_us_per_io,
            g.measured_b_us_per_io
        );
        let head = |o: &mut String, what: &str| {
            let _ = writeln!(
                o,
                "  {:<44} {:>9} {:>9} {:>9} {:>8} {:>8}  change",
                what, "A µs/IO", "B µs/IO", "B − A", "± 3σ", "%"
            );
        };
        let row = |o: &mut String, r: &CostDelta| {
            let name = match &r.subsystem {
                Some(s) => format!("{} [{s}]", r.name),
                None => r.name.clone(),
            };
            let short: String = if name.chars().count() > 44 {
                let cut: String = name.chars().take(43).collect();
                format!("{cut}…")
            } else {
                name
            };
            let _ = writeln!(
                o,
                "  {:<44} {:>9.3} {:>9.3} {:>+9.3} {:>8.3} {:>8}  {}",
                short,
                r.a_us_per_io,
                r.b_us_per_io,
                r.delta_us_per_io,
                r.noise_us_per_io,
                r.change_pct
                    .map(|p| format!("{p:+.0}%"))
                    .unwrap_or("new".into()),
                r.change.text()
            );
        };
        head(&mut o, "total");
        g.totals.iter().for_each(|r| row(&mut o, r));
        head(&mut o, "subsystem");
        g.subsystems.iter().for_each(|r| row(&mut o, r));
        head(&mut o, "function [subsystem]");
        g.functions.iter().for_each(|r| row(&mut o, r));
        if g.other_functions > 0 {
            let _ = writeln!(
                o,
                "  ({} more functions, {} of them beyond the noise)",
                g.other_functions, g.other_beyond_noise
            );
        }
    }
    for n in &c.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// The section of `compare`'s markdown output.
pub fn render_markdown(c: &ProfileComparison) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "\n## Profile: CPU per I/O, B against A\n\n{}\n", c.rule);
    for g in &c.groups {
        let _ = writeln!(
            o,
            "### Group {} ({}): measured {:.3} → {:.3} µs per I/O\n",
            g.group,
            g.jobs.join(", "),
            g.measured_a_us_per_io,
            g.measured_b_us_per_io
        );
        let _ = writeln!(o, "| what | A µs/IO | B µs/IO | B − A | ± 3σ | change | |");
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---|");
        for r in g.totals.iter().chain(&g.subsystems).chain(&g.functions) {
            let name = match &r.subsystem {
                Some(s) => format!("`{}` ({s})", r.name.replace('|', "\\|")),
                None => r.name.replace('|', "\\|"),
            };
            let _ = writeln!(
                o,
                "| {name} | {:.3} | {:.3} | {:+.3} | {:.3} | {} | {} |",
                r.a_us_per_io,
                r.b_us_per_io,
                r.delta_us_per_io,
                r.noise_us_per_io,
                r.change_pct
                    .map(|p| format!("{p:+.0} %"))
                    .unwrap_or("new".into()),
                r.change.text()
            );
        }
        if g.other_functions > 0 {
            let _ = writeln!(
                o,
                "\n{} more functions, {} of them beyond the noise.",
                g.other_functions, g.other_beyond_noise
            );
        }
    }
    for n in &c.notes {
        let _ = writeln!(o, "\nNote: {n}");
    }
    o
}

/// The section of the HTML report: per group a table and a chart of the
/// changes (ids `cmp-profile-G`, `cmp-profile-table-G`).
pub fn render_html(o: &mut String, c: &ProfileComparison) {
    use crate::svg::esc;
    use std::fmt::Write;
    let _ = write!(
        o,
        "<section id=\"cmp-profile\"><h2>Where the CPU time went: B against A (perf)</h2>\
         <p class=\"muted\">{}</p>",
        esc(&c.rule)
    );
    for (k, g) in c.groups.iter().enumerate() {
        group_html(o, k, g);
    }
    for n in &c.notes {
        let _ = write!(o, "<p class=\"muted\">note: {}</p>", esc(n));
    }
    o.push_str("</section>");
}

/// One group's table of changes and its chart.
fn group_html(o: &mut String, k: usize, g: &GroupDelta) {
    use crate::svg::{self, esc, Line, LineChart};
    use std::fmt::Write;
    let _ = write!(
        o,
        "<h3>group {} ({}): measured CPU per I/O {:.3} → {:.3} µs</h3>\
         <table id=\"cmp-profile-table-{k}\"><tr><th class=\"l\">what</th><th class=\"l\">subsystem</th>\
         <th>A µs/IO</th><th>B µs/IO</th><th>B − A</th><th>± 3σ</th><th>change</th><th class=\"l\">verdict</th></tr>",
        g.group,
        esc(&g.jobs.join(", ")),
        g.measured_a_us_per_io,
        g.measured_b_us_per_io
    );
    let dots = |name: &str| Line {
        name: name.into(),
        markers: true,
        dots_only: true,
        ..Default::default()
    };
    let (mut cheaper, mut dearer, mut same) = (
        dots("cheaper in B"),
        dots("dearer in B"),
        dots("within noise"),
    );
    let mut cats = Vec::new();
    for (i, r) in g
        .totals
        .iter()
        .chain(&g.subsystems)
        .chain(&g.functions)
        .enumerate()
    {
        let cls = match r.change {
            Change::Cheaper => "up",
            Change::Dearer => "down",
            Change::Same => "",
        };
        let strong = if i < g.totals.len() { "b" } else { "span" };
        let _ = write!(
            o,
            "<tr><td class=\"l\"><{strong}>{}</{strong}></td><td class=\"l\">{}</td><td>{:.3}</td><td>{:.3}</td>\
             <td class=\"{cls}\">{:+.3}</td><td>{:.3}</td><td>{}</td><td class=\"l {cls}\">{}</td></tr>",
            esc(&r.name),
            esc(r.subsystem.as_deref().unwrap_or("")),
            r.a_us_per_io,
            r.b_us_per_io,
            r.delta_us_per_io,
            r.noise_us_per_io,
            r.change_pct.map(|p| format!("{p:+.0} %")).unwrap_or("new".into()),
            r.change.text()
        );
        // The chart: totals and subsystems, then the functions beyond the noise.
        if i < g.totals.len() + g.subsystems.len() || r.change != Change::Same {
            let x = cats.len() as f64;
            let (lo, hi) = (
                r.delta_us_per_io - r.noise_us_per_io,
                r.delta_us_per_io + r.noise_us_per_io,
            );
            let l = match r.change {
                Change::Cheaper => &mut cheaper,
                Change::Dearer => &mut dearer,
                Change::Same => &mut same,
            };
            l.points.push((x, r.delta_us_per_io));
            l.err.push((lo, hi));
            cats.push(r.name.chars().take(28).collect::<String>());
        }
    }
    o.push_str("</table>");
    if g.other_functions > 0 {
        let _ = write!(
            o,
            "<p class=\"muted\">{} more functions, {} of them beyond the noise (the JSON has the listed ones).</p>",
            g.other_functions, g.other_beyond_noise
        );
    }
    o.push_str(&svg::line_chart(&LineChart {
        id: &format!("cmp-profile-{k}"),
        title: &format!(
            "group {}: change of CPU per I/O, B − A, with ± 3σ of the sampling noise",
            g.group
        ),
        x_label: "total, subsystem, function",
        y_label: "B − A (µs per I/O)",
        lines: [cheaper, dearer, same]
            .into_iter()
            .filter(|l| !l.points.is_empty())
            .collect(),
        fmt_y: |v| format!("{v:+.2}"),
        x_categories: cats,
        signed: true,
        ..Default::default()
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Breakdown, Cost, Counters, FunctionCost, PerfInfo};

    /// A profile of `ios` I/Os with these (function, subsystem, samples)
    /// in one job thread, 10 µs per sample.
    fn profile(ios: u64, funcs: &[(&str, &str, u64)]) -> ProfileResult {
        let period = 10.0;
        let us = |n: u64| n as f64 * period / ios as f64;
        let total: u64 = funcs.iter().map(|f| f.2).sum();
        let mut subs: BTreeMap<&str, u64> = BTreeMap::new();
        for f in funcs {
            *subs.entry(f.1).or_default() += f.2;
        }
        ProfileResult {
            status: ProfileStatus::Recorded,
            message: None,
            fix: None,
            perf: Some(PerfInfo {
                path: "perf".into(),
                version: "6.1".into(),
                kernel: "6.1".into(),
                scope: "process".into(),
                event: "cpu-clock".into(),
                period_us: period,
            }),
            notes: Vec::new(),
            groups: vec![GroupProfile {
                warning: None,
                group: 0,
                jobs: vec!["j".into()],
                ios,
                measured_us_per_io: us(total),
                coverage: 1.0,
                process: Breakdown {
                    samples: total,
                    us_per_io: us(total),
                    kernel_us_per_io: us(total),
                    user_us_per_io: 0.0,
                    threads: vec![Cost {
                        name: "job j workers".into(),
                        us_per_io: us(total),
                        share: 1.0,
                    }],
                    subsystems: subs
                        .iter()
                        .map(|(s, n)| Cost {
                            name: s.to_string(),
                            us_per_io: us(*n),
                            share: 0.0,
                        })
                        .collect(),
                    // Only the first function is in the top list: the
                    // others must come from the folded stacks.
                    functions: funcs
                        .iter()
                        .take(1)
                        .map(|f| FunctionCost {
                            function: f.0.into(),
                            subsystem: f.1.into(),
                            kernel: true,
                            us_per_io: us(f.2),
                            share: 0.0,
                        })
                        .collect(),
                    other_functions_us_per_io: 0.0,
                    other_functions: 0,
                },
                kernel_threads: None,
                idle_interrupts_us_per_io: None,
                counters: Counters::default(),
                trials: Vec::new(),
                folded: funcs
                    .iter()
                    .map(|f| format!("job j workers;syscall;{} {}\n", f.0, f.2))
                    .chain(std::iter::once(
                        "kworker;worker_thread;io_schedule 999\n".into(),
                    ))
                    .collect(),
            }],
        }
    }

    #[test]
    fn changes_beyond_poisson_noise_are_flagged_and_small_ones_are_not() {
        // 100 000 I/Os per side, 10 µs per sample: 1 sample = 0.0001 µs/IO.
        let a = profile(
            100_000,
            &[
                ("io_submit_one", "aio", 20_000),
                ("blk_mq_submit_bio", "block", 10_000),
                ("tiny", "driver", 100),
            ],
        );
        let b = profile(
            100_000,
            &[
                ("io_submit_one", "aio", 10_000),
                ("blk_mq_submit_bio", "block", 10_050),
                ("tiny", "driver", 100),
            ],
        );
        let c = compare_profiles([&a].into_iter(), [&b].into_iter()).unwrap();
        let g = &c.groups[0];
        let f = |n: &str| g.functions.iter().find(|x| x.name == n).unwrap();
        // 20 000 → 10 000 samples: σ ≈ 173 samples, far beyond 3 σ.
        assert_eq!(f("io_submit_one").change, Change::Cheaper);
        assert!((f("io_submit_one").a_us_per_io - 2.0).abs() < 1e-9);
        assert!((f("io_submit_one").delta_us_per_io + 1.0).abs() < 1e-9);
        // +50 samples of 10 000: 0.35 σ: noise. Its count came from the
        // folded stacks (it is not in the top list).
        assert_eq!(f("blk_mq_submit_bio").change, Change::Same);
        assert_eq!(f("blk_mq_submit_bio").samples_b, 10_050);
        assert_eq!(f("blk_mq_submit_bio").subsystem, None);
        // The kernel thread's stack is not the process's.
        assert!(g.functions.iter().all(|x| x.name != "io_schedule"));
        let total = &g.totals[0];
        assert_eq!((total.samples_a, total.samples_b), (30_100, 20_150));
        assert_eq!(total.change, Change::Cheaper);
        let aio = g.subsystems.iter().find(|x| x.name == "aio").unwrap();
        assert_eq!(aio.change, Change::Cheaper);
        // The order: beyond the noise first.
        assert_eq!(g.functions[0].name, "io_submit_one");
        for text in [render_text(&c), render_markdown(&c)] {
            assert!(
                text.contains("io_submit_one") && text.contains("cheaper"),
                "{text}"
            );
            assert!(text.contains("3 σ"), "states the rule: {text}");
        }
        let mut html = String::new();
        render_html(&mut html, &c);
        assert!(html.contains("id=\"cmp-profile-0\"") && html.contains("cmp-profile-table-0"));
        let back: ProfileComparison =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn the_same_profile_twice_changes_nothing_and_one_sided_is_a_note() {
        let a = profile(50_000, &[("f", "block", 5000), ("g", "aio", 3)]);
        let c = compare_profiles([&a].into_iter(), [&a].into_iter()).unwrap();
        assert!(c.groups[0]
            .totals
            .iter()
            .chain(&c.groups[0].subsystems)
            .chain(&c.groups[0].functions)
            .all(|r| r.change == Change::Same && r.delta_us_per_io == 0.0));
        // A function seen on one side only, with few samples, is noise.
        let b = profile(50_000, &[("f", "block", 5000), ("h", "aio", 2)]);
        let c = compare_profiles([&a].into_iter(), [&b].into_iter()).unwrap();
        let h = c.groups[0]
            .functions
            .iter()
            .find(|x| x.name == "h")
            .unwrap();
        assert_eq!((h.samples_a, h.samples_b, h.change), (0, 2, Change::Same));
        assert_eq!(h.change_pct, None);
        let c = compare_profiles([&a].into_iter(), std::iter::empty()).unwrap();
        assert!(
            c.groups.is_empty() && c.notes[0].contains("only side A"),
            "{:?}",
            c.notes
        );
        assert!(compare_profiles(std::iter::empty(), std::iter::empty()).is_none());
    }
}
