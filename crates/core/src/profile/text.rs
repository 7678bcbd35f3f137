//! The profile in the text summary.

use super::{Breakdown, ProfileResult, ProfileStatus};
use std::fmt::Write;

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Short function names: long Rust paths keep their last two parts.
fn short(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        return name.to_string();
    }
    let tail: String = name
        .rsplit("::")
        .take(2)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("::");
    let s = if tail.len() < name.len() {
        format!("…{tail}")
    } else {
        name.to_string()
    };
    if s.chars().count() <= width {
        s
    } else {
        let cut: String = s.chars().take(width - 1).collect();
        format!("{cut}…")
    }
}

fn table(out: &mut String, b: &Breakdown) {
    let _ = writeln!(out, "    {:<26} {:>8} {:>7}", "subsystem", "µs/IO", "share");
    for s in &b.subsystems {
        let _ = writeln!(
            out,
            "    {:<26} {:>8.3} {:>7}",
            s.name,
            s.us_per_io,
            pct(s.share)
        );
    }
    let _ = writeln!(
        out,
        "    {:<44} {:>8} {:>7}  subsystem",
        "function", "µs/IO", "share"
    );
    for f in &b.functions {
        let _ = writeln!(
            out,
            "    {:<44} {:>8.3} {:>7}  {}",
            short(&f.function, 44),
            f.us_per_io,
            pct(f.share),
            f.subsystem
        );
    }
    if b.other_functions > 0 {
        let share = if b.us_per_io > 0.0 {
            b.other_functions_us_per_io / b.us_per_io
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "    {:<44} {:>8.3} {:>7}",
            format!("({} other functions)", b.other_functions),
            b.other_functions_us_per_io,
            pct(share)
        );
    }
}

/// The profile section of the text summary.
pub fn render_text(p: &ProfileResult) -> String {
    let mut out = String::new();
    if matches!(p.status, ProfileStatus::Unavailable | ProfileStatus::Failed) {
        let _ = writeln!(
            out,
            "profile: not recorded: {}",
            p.message.as_deref().unwrap_or("no reason given")
        );
        if let Some(f) = &p.fix {
            let _ = writeln!(out, "  fix: {f}");
        }
        return out;
    }
    if let Some(perf) = &p.perf {
        let _ = writeln!(
            out,
            "profile: perf {} (kernel {}), {} every {} µs of CPU, {}, measured windows only",
            perf.version, perf.kernel, perf.event, perf.period_us, perf.scope
        );
    }
    if p.status == ProfileStatus::Partial {
        let _ = writeln!(
            out,
            "  some trials were not recorded: {}",
            p.message.as_deref().unwrap_or("")
        );
    }
    for g in &p.groups {
        let _ = writeln!(
            out,
            "group {} ({}): {} I/Os in {} recorded trial(s)",
            g.group,
            g.jobs.join(", "),
            crate::results::human_count(g.ios as f64),
            g.trials.iter().filter(|t| t.error.is_none()).count()
        );
        if let Some(w) = &g.warning {
            let _ = writeln!(out, "  WARNING: {w}");
        }
        let b = &g.process;
        let _ = writeln!(
            out,
            "  process CPU per I/O: {:.3} µs measured, {:.3} µs sampled ({} of it): kernel {:.3}, user {:.3}",
            g.measured_us_per_io,
            b.us_per_io,
            pct(g.coverage),
            b.kernel_us_per_io,
            b.user_us_per_io
        );
        let threads: Vec<String> = b
            .threads
            .iter()
            .map(|t| format!("{} {:.3}", t.name, t.us_per_io))
            .collect();
        let _ = writeln!(out, "  threads (µs/IO): {}", threads.join(" · "));
        let c = &g.counters;
        let _ = writeln!(
            out,
            "  per I/O: {:.3} context switches ({:.3} voluntary) · {:.4} page faults · {:.5} migrations",
            c.context_switches_per_io,
            c.voluntary_switches_per_io,
            c.page_faults_per_io,
            c.migrations_per_io
        );
        if let Some(k) = &g.kernel_threads {
            let top: Vec<String> = k
                .threads
                .iter()
                .take(4)
                .map(|t| format!("{} {:.3}", t.name, t.us_per_io))
                .collect();
            let _ = writeln!(
                out,
                "  outside the process (system-wide, not all for us): kernel threads {:.3} µs/IO{}{}",
                k.us_per_io,
                if top.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", top.join(", "))
                },
                g.idle_interrupts_us_per_io
                    .map(|v| format!(" · interrupts while idle {v:.3} µs/IO"))
                    .unwrap_or_default()
            );
        }
        table(&mut out, b);
        let _ = writeln!(
            out,
            "  folded stacks for a flame graph: dioscope.profile.groups[{}].folded in the JSON",
            p.groups
                .iter()
                .position(|x| x.group == g.group)
                .unwrap_or(0)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::perf::Unavailable;

    #[test]
    fn unavailable_says_why_and_how_to_fix() {
        let p = ProfileResult::without(
            ProfileStatus::Unavailable,
            Unavailable {
                message: "perf is not installed".into(),
                fix: "apt-get install linux-perf".into(),
            },
        );
        let t = render_text(&p);
        assert!(
            t.contains("profile: not recorded: perf is not installed"),
            "{t}"
        );
        assert!(t.contains("fix: apt-get install linux-perf"), "{t}");
    }

    #[test]
    fn long_names_are_shortened() {
        assert_eq!(short("a::b::c::d", 44), "a::b::c::d");
        let s = short(
            "dioscope_core::runner::worker::something_long::<dioscope_sys::aio::AioQueue>::run_with_hook",
            44,
        );
        assert!(s.chars().count() <= 44, "{s}");
        assert!(s.starts_with('…'), "{s}");
    }
}
