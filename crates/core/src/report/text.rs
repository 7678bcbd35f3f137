//! The human summary: per job IOPS, bandwidth, latency percentiles, CPU per
//! I/O, and the trial statistics; then a context line.

use crate::results::{human_bytes, human_count, human_ns, human_rate, JobSummary};
use crate::runner::RunResult;
use std::fmt::Write;

/// The block sizes as given: `4.0KiB`, `4.0KiB-64.0KiB`, `4.0KiB/60:64.0KiB/40`,
/// and `R,W` when reads and writes differ.
fn bs_text(spec: &crate::job::JobSpec) -> String {
    use crate::job::BlockSizes;
    let one = |b: &BlockSizes| match b {
        BlockSizes::Fixed(x) => human_bytes(*x),
        BlockSizes::Range(lo, hi) => {
            format!("{}-{}", human_bytes(*lo), human_bytes(*hi))
        }
        BlockSizes::Split(v) => v
            .iter()
            .map(|(sz, pct)| format!("{}/{pct}", human_bytes(*sz)))
            .collect::<Vec<_>>()
            .join(":"),
    };
    let (r, w) = (one(&spec.bs[0]), one(&spec.bs[1]));
    if r == w || !spec.rw.writes() {
        r
    } else if !spec.rw.reads() {
        w
    } else {
        format!("{r},{w}")
    }
}

fn dir_block(out: &mut String, r: &RunResult, s: &JobSummary, d: usize) {
    let st = &s.dirs[d];
    let name = if d == 0 { "read" } else { "write" };
    let spec = &r.jobs[s.jobs[0]].resolved.spec;
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}/s ({} in {:.1}s)",
        human_count(s.iops(d)),
        human_rate(s.bw_bytes(d)),
        human_bytes(st.bytes),
        s.runtime_ms / 1000.0
    );
    let l = &st.lat;
    let _ = writeln!(
        out,
        "    lat: min={} mean={} σ={} max={}   (slat mean={}, clat mean={})",
        human_ns(l.min() as f64),
        human_ns(l.mean()),
        human_ns(l.stddev()),
        human_ns(l.max() as f64),
        human_ns(st.slat.mean()),
        human_ns(st.clat.mean())
    );
    if spec.clat_percentiles && st.clat.count() > 0 {
        let ps: Vec<String> = spec
            .percentile_list
            .iter()
            .filter(|p| {
                [1.0, 50.0, 90.0, 99.0, 99.9, 99.99].contains(*p) || spec.percentile_list.len() <= 8
            })
            .map(|&p| format!("p{p}={}", human_ns(st.clat.percentile(p) as f64)))
            .collect();
        let _ = writeln!(out, "    clat percentiles: {}", ps.join(" "));
    }
    if st.errors > 0 || st.short_ios > 0 {
        let _ = writeln!(out, "    errors={} short={}", st.errors, st.short_ios);
    }
}

/// Render the whole summary. `context` is the environment line; `findings`
/// are already-rendered finding lines.
pub fn render(r: &RunResult, context: &str, findings: &[String]) -> String {
    let mut out = String::new();
    for s in r.summarize() {
        let spec = &r.jobs[s.jobs[0]].resolved.spec;
        let _ = writeln!(
            out,
            "{}: (g={}) rw={} bs={} ioengine={} iodepth={} direct={} jobs={}{}",
            s.name,
            s.group,
            spec.rw.as_str(),
            bs_text(spec),
            spec.ioengine.as_str(),
            spec.iodepth,
            spec.direct as u8,
            s.jobs
                .iter()
                .map(|&i| r.jobs[i].resolved.spec.numjobs)
                .sum::<u32>(),
            if s.trials.len() > 1 {
                format!(", {} trials", s.trials.len())
            } else {
                String::new()
            }
        );
        // verify_only turns a write job into a read-back: show what ran.
        if spec.rw.reads() || s.dirs[0].ios > 0 {
            dir_block(&mut out, r, &s, 0);
        }
        if spec.rw.writes() && !spec.verify_only || s.dirs[1].ios > 0 {
            dir_block(&mut out, r, &s, 1);
        }
        if s.sync.ios > 0 {
            let _ = writeln!(
                out,
                "  sync: {} calls, mean {}",
                s.sync.ios,
                human_ns(s.sync.lat.mean())
            );
        }
        if s.trials.len() > 1 {
            let st = &s.stats.iops;
            let _ = writeln!(
                out,
                "  trials: IOPS {} ± {} (median {}, range {}…{}, 95% CI {}…{}, CV {:.1}%)",
                human_count(st.mean),
                human_count(st.stddev),
                human_count(st.median),
                human_count(st.min),
                human_count(st.max),
                human_count(st.ci95.0),
                human_count(st.ci95.1),
                100.0 * st.cv
            );
            let per: Vec<String> = s.trials.iter().map(|t| human_count(t.iops)).collect();
            let _ = writeln!(out, "          per trial: {}", per.join(", "));
        }
        let ios = s.total_ios().max(1) as f64;
        let _ = writeln!(
            out,
            "  cpu: {:.2} µs/IO process (usr {:.2}, sys {:.2}), {:.2} µs/IO system-wide; ctx {:.3}/IO; system usr={:.1}% sys={:.1}% irq={:.1}% softirq={:.1}% iowait={:.1}%",
            s.cpu_us_per_io(),
            s.process_cpu.user_us as f64 / ios,
            s.process_cpu.sys_us as f64 / ios,
            s.sys_cpu_us_per_io(),
            (s.process_cpu.vol_ctx + s.process_cpu.invol_ctx) as f64 / ios,
            s.system_pct.user,
            s.system_pct.system,
            s.system_pct.irq,
            s.system_pct.softirq,
            s.system_pct.iowait
        );
        if let Some((e, path)) = &s.first_error {
            let _ = writeln!(
                out,
                "  first error: {} of {} bytes at offset {} of {}: {} (errno {})",
                if e.write { "write" } else { "read" },
                e.len,
                e.offset,
                if path.is_empty() { "?" } else { path },
                std::io::Error::from_raw_os_error(e.errno),
                e.errno
            );
        }
    }
    for j in &r.jobs {
        if let Some(v) = &j.verify {
            let _ = writeln!(
                out,
                "{}: verify ({}, {} B intervals): {} checked, {} bad (lost {}, torn {}, misplaced {}, stale {}){}",
                j.resolved.spec.name,
                v.algo.map(|a| format!("{a:?}").to_lowercase()).unwrap_or_default(),
                v.interval,
                v.checked,
                v.bad,
                v.lost_writes,
                v.torn_writes,
                v.misplaced_writes,
                v.stale_generations,
                if v.read_errors > 0 { format!(", {} read errors", v.read_errors) } else { String::new() }
            );
            for (path, b) in v.bad_blocks.iter().take(20) {
                let _ = writeln!(
                    out,
                    "  BAD {path} offset {} ({} bytes): {}",
                    b.offset,
                    b.len,
                    b.kind.describe()
                );
            }
            if v.bad_blocks.len() > 20 {
                let _ = writeln!(out, "  … {} more in the JSON result", v.bad - 20);
            }
            if let Some(e) = &v.first_read_error {
                let _ = writeln!(out, "  read-back error: {e}");
            }
        }
    }
    if !context.is_empty() {
        let _ = writeln!(out, "\ncontext: {context}");
    }
    for n in &r.notes {
        let _ = writeln!(out, "  {n}");
    }
    if !findings.is_empty() {
        let _ = writeln!(out, "\nfindings:");
        for f in findings {
            let _ = writeln!(out, "  {f}");
        }
    }
    if r.interrupted {
        let _ = writeln!(
            out,
            "\nINTERRUPTED (signal {}): the results above are partial.",
            r.signal
        );
    } else if r.stopped_by_error() {
        let _ = writeln!(
            out,
            "\nSTOPPED by an I/O error ({} in all): the results above are partial.",
            r.io_errors()
        );
    }
    out
}
