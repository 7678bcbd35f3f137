//! The profile in the HTML report: per group, a bar of CPU per I/O by
//! subsystem beside the measured figure, the costliest functions, and what
//! the figures cover; or why there is no profile and how to get one.

use super::{ProfileResult, ProfileStatus};
use crate::svg::{self, esc, BarRow};
use std::fmt::Write;

fn us(x: f64) -> String {
    format!("{} µs", svg::num(x))
}

/// Append the profile section; `p` is the section's id prefix.
pub fn render_html(o: &mut String, p: &str, prof: &ProfileResult) {
    let _ = write!(
        o,
        "<h2 id=\"{p}-profile\">Where the CPU time goes (perf)</h2>"
    );
    if matches!(
        prof.status,
        ProfileStatus::Unavailable | ProfileStatus::Failed
    ) {
        let _ = write!(
            o,
            "<p class=\"sev-warning\">Not recorded: {}</p><p>Fix: {}</p>",
            esc(prof.message.as_deref().unwrap_or("no reason given")),
            esc(prof.fix.as_deref().unwrap_or(""))
        );
        return;
    }
    if let Some(perf) = &prof.perf {
        let _ = write!(
            o,
            "<p class=\"muted\">perf {} (kernel {}), {} every {} µs of CPU, {}, measured windows only.</p>",
            esc(&perf.version),
            esc(&perf.kernel),
            esc(&perf.event),
            perf.period_us,
            esc(&perf.scope)
        );
    }
    if prof.status == ProfileStatus::Partial {
        let _ = write!(
            o,
            "<p class=\"sev-warning\">Some trials were not recorded: {}</p>",
            esc(prof.message.as_deref().unwrap_or(""))
        );
    }
    let rows = bar_rows(prof);
    o.push_str(&svg::bars(
        &format!("{p}-profile-chart"),
        "CPU per I/O by subsystem",
        "CPU per I/O (µs)",
        us,
        &rows,
    ));
    for (k, g) in prof.groups.iter().enumerate() {
        group_html(o, p, k, g);
    }
    o.push_str("<p class=\"muted\">");
    for n in &prof.notes {
        let _ = write!(o, "{}. ", esc(n));
    }
    o.push_str(
        "Folded stacks for a flame graph are in the JSON (dioscope.profile.groups[].folded).</p>",
    );
}

/// The chart's rows: per group, the sampled CPU per I/O by subsystem (one
/// colour per subsystem, the same in every group) and the measured figure.
fn bar_rows(prof: &ProfileResult) -> Vec<BarRow> {
    // One colour per subsystem, the same in every group.
    let mut names: Vec<&str> = Vec::new();
    for g in &prof.groups {
        for s in &g.process.subsystems {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
    }
    let mut rows = Vec::new();
    for g in &prof.groups {
        let label = format!("group {} ({})", g.group, g.jobs.join(", "));
        rows.push(BarRow {
            name: format!("{label}: sampled"),
            parts: g
                .process
                .subsystems
                .iter()
                .map(|s| {
                    let c = names.iter().position(|n| *n == s.name).unwrap_or(0);
                    (s.name.clone(), s.us_per_io, c)
                })
                .collect(),
        });
        rows.push(BarRow {
            name: format!("{label}: measured (getrusage)"),
            parts: vec![("process CPU".into(), g.measured_us_per_io, names.len())],
        });
    }
    rows
}

/// One group's figures and its costliest functions.
fn group_html(o: &mut String, p: &str, k: usize, g: &super::result::GroupProfile) {
    if let Some(w) = &g.warning {
        let _ = write!(
            o,
            "<p class=\"sev-warning\">Group {}: {}.</p>",
            g.group,
            esc(w)
        );
    }
    let b = &g.process;
    let _ = write!(
        o,
        "<p>Group {} ({}): {:.3} µs per I/O sampled, {:.1} % of the {:.3} µs measured; kernel {:.3}, user {:.3}. \
         Threads: {}. Per I/O: {:.3} context switches, {:.4} page faults, {:.5} migrations.{}</p>",
        g.group,
        esc(&g.jobs.join(", ")),
        b.us_per_io,
        100.0 * g.coverage,
        g.measured_us_per_io,
        b.kernel_us_per_io,
        b.user_us_per_io,
        esc(&b
            .threads
            .iter()
            .map(|t| format!("{} {:.3} µs", t.name, t.us_per_io))
            .collect::<Vec<_>>()
            .join(", ")),
        g.counters.context_switches_per_io,
        g.counters.page_faults_per_io,
        g.counters.migrations_per_io,
        g.kernel_threads
            .as_ref()
            .map(|kt| format!(
                " Kernel threads (system-wide, not all for us): {:.3} µs per I/O.",
                kt.us_per_io
            ))
            .unwrap_or_default()
    );
    let _ = write!(
        o,
        "<table id=\"{p}-profile-functions-{k}\"><tr><th class=\"l\">function</th><th class=\"l\">subsystem</th><th>µs per I/O</th><th>share</th></tr>"
    );
    for f in &b.functions {
        let _ = write!(
            o,
            "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{:.3}</td><td>{:.1} %</td></tr>",
            esc(&f.function),
            esc(&f.subsystem),
            f.us_per_io,
            100.0 * f.share
        );
    }
    if b.other_functions > 0 {
        let _ = write!(
            o,
            "<tr><td class=\"l\">({} other functions)</td><td></td><td>{:.3}</td><td></td></tr>",
            b.other_functions, b.other_functions_us_per_io
        );
    }
    o.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::perf::Unavailable;

    #[test]
    fn unavailable_is_explained() {
        let p = ProfileResult::without(
            ProfileStatus::Unavailable,
            Unavailable {
                message: "perf is not installed".into(),
                fix: "apt-get install linux-perf".into(),
            },
        );
        let mut o = String::new();
        render_html(&mut o, "r1", &p);
        assert!(o.contains("Not recorded: perf is not installed"), "{o}");
        assert!(o.contains("apt-get install linux-perf"), "{o}");
    }
}
