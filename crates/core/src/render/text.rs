//! The normal output: first fio 3.33's own text, line for line (per job
//! its block, per group its run status, the disk stats: `fio_text.rs`, a
//! fixed contract that scripts grep, tested by tests/integration/fio_text.rs),
//! describing each job's measured trials merged as one run; then one line
//! saying so and dioscope's sections: per job its options, the trial
//! statistics and the CPU per I/O; then the context, the devices, the
//! findings and whether the result is partial. It reads only the typed
//! result, so fio's own JSON renders too (fio's part only).

use super::{Exporter, Format};
use crate::results::model::{DeviceTotal, Dioscope, DioscopeJob, Job, Severity};
use crate::results::{
    human_bytes, human_count, human_ns, human_rate,
    units::{interval, wrap},
    RunDoc,
};
use std::fmt::Write;

/// The `normal` format.
pub struct Text;

pub const FORMAT: Format<RunDoc> = Format {
    name: "normal",
    aliases: &[],
    help: "fio's normal output (per job, group, disk), then dioscope's trials, CPU per I/O, findings",
    exporter: &Text,
};

impl Exporter<RunDoc> for Text {
    fn render(&self, doc: &RunDoc) -> String {
        let mut out = String::new();
        // fio 3.33's normal output, a fixed contract (see fio_text.rs).
        super::fio_text::render(&mut out, doc);
        if let Some(d) = &doc.dioscope {
            merged_line(&mut out, d);
            for (i, j) in doc.jobs.iter().enumerate() {
                job_block(&mut out, j, doc.dioscope_job(i));
            }
            verify_block(&mut out, d);
            if let Some(p) = &d.profile {
                out.push('\n');
                out.push_str(&crate::profile::render_text(p));
            }
            if let Some(st) =
                crate::results::stages::parse(d.section(crate::results::stages::KEY))
            {
                out.push('\n');
                out.push_str(&crate::results::stages::render_text(&st));
            }
            tail(&mut out, d);
        }
        out
    }
}

/// An option of the job as given, or what dioscope recorded.
fn opt<'a>(j: &'a Job, k: &str) -> Option<&'a str> {
    j.job_options.get(k).map(String::as_str)
}

fn header(out: &mut String, j: &Job, dj: Option<&DioscopeJob>) {
    let (rw, bs, engine, depth, direct, jobs) = match dj {
        Some(d) => (
            d.rw.clone(),
            d.bs.clone(),
            d.ioengine.clone(),
            d.iodepth.to_string(),
            (d.direct as u8).to_string(),
            d.numjobs.to_string(),
        ),
        // fio's JSON: what the job file said, fio's defaults otherwise.
        None => (
            opt(j, "rw")
                .or(opt(j, "readwrite"))
                .unwrap_or("read")
                .into(),
            opt(j, "bs").or(opt(j, "blocksize")).unwrap_or("4k").into(),
            opt(j, "ioengine").unwrap_or("psync").into(),
            opt(j, "iodepth").unwrap_or("1").into(),
            opt(j, "direct").unwrap_or("0").into(),
            opt(j, "numjobs").unwrap_or("1").into(),
        ),
    };
    let ntrials = dj.map(|d| d.trials.len()).unwrap_or(1);
    let _ = writeln!(
        out,
        "{}: (g={}) rw={rw} bs={bs} ioengine={engine} iodepth={depth} direct={direct} jobs={jobs}{}",
        j.jobname,
        j.groupid,
        if ntrials > 1 {
            format!(", {ntrials} trials")
        } else {
            String::new()
        }
    );
}

/// dioscope's section of one job (after the fio part): its options, the
/// stepped depths, errors, the trials and the CPU per I/O.
fn job_block(out: &mut String, j: &Job, dj: Option<&DioscopeJob>) {
    header(out, j, dj);
    if let Some(v) = j.other.get("iodepth_steps") {
        steps_block(out, v);
    }
    for (d, name) in ["read", "write"].iter().enumerate() {
        let errors = dj.map(|x| x.errors_by_direction[d]).unwrap_or(0);
        if errors > 0 || j.dir(d).short_ios > 0 {
            let _ = writeln!(
                out,
                "  {name}: errors={errors} short={}",
                j.dir(d).short_ios
            );
        }
    }
    if let Some(d) = dj {
        trials_block(out, d);
        cpu_block(out, j, d);
    }
}

/// The one line between fio's part and dioscope's: what fio's blocks are.
fn merged_line(out: &mut String, d: &Dioscope) {
    let mut counts: Vec<usize> = d.jobs.iter().map(|j| j.trials.len()).collect();
    counts.sort_unstable();
    counts.dedup();
    let what = match counts.as_slice() {
        [1] => "is the job's one measured trial".to_string(),
        [n] => format!("merges the job's {n} measured trials as one run"),
        _ => "merges the job's measured trials as one run".to_string(),
    };
    let _ = writeln!(
        out,
        "\ndioscope: each job block above {what}; dioscope's figures per job:"
    );
}

/// iodepth_mode=stepped: one line per step and direction (fio's
/// lat_step_report, with the depth and rate of each step).
fn steps_block(out: &mut String, v: &serde_json::Value) {
    let num = |x: &serde_json::Value, k: &str| x.get(k).and_then(|y| y.as_f64()).unwrap_or(0.0);
    let peak = &v["peak_iops"];
    let _ = writeln!(
        out,
        "  iodepth steps ({}; probe peak: read {} IOPS, write {} IOPS):",
        v["mode"].as_str().unwrap_or("stepped"),
        human_count(num(peak, "read")),
        human_count(num(peak, "write"))
    );
    for st in v["steps"].as_array().into_iter().flatten() {
        for name in ["read", "write"] {
            let x = &st[name];
            if num(x, "total_ios") == 0.0 {
                continue;
            }
            let rate = num(&st["rate_iops"], name);
            let _ = writeln!(
                out,
                "    step {:>2} load {:>3}% depth {:>3}{}: {name}: iops={}, bw={}/s, lat={} (in flight ≤ {})",
                num(st, "step"),
                num(st, "load_pct"),
                num(st, "depth"),
                if rate > 0.0 {
                    format!(" rate {}", human_count(rate))
                } else {
                    String::new()
                },
                human_count(num(x, "iops")),
                human_rate(num(x, "bw_bytes")),
                human_ns(num(x, "lat_mean_ns")),
                num(st, "max_inflight"),
            );
        }
    }
}

fn trials_block(out: &mut String, d: &DioscopeJob) {
    if d.trials.len() <= 1 {
        return;
    }
    // The statistics are over the trials that ran to their end
    // (results::summary::trial_stats); an interrupted one is listed as such.
    let st = &d.summary.iops;
    if st.n >= 2 {
        let _ = writeln!(
            out,
            "  trials: IOPS {} ± {} (mean ± σ over {} trials; median {}, range {}…{}, {}, CV {:.1}%)",
            human_count(st.mean),
            human_count(st.stddev),
            st.n,
            human_count(st.median),
            human_count(st.min),
            human_count(st.max),
            interval(st.ci_name(), &human_count(st.ci95.0), &human_count(st.ci95.1)),
            100.0 * st.cv
        );
    } else if st.n == 1 {
        let _ = writeln!(
            out,
            "  trials: IOPS {} (one complete trial: no spread, no interval)",
            human_count(st.mean)
        );
    } else {
        let _ = writeln!(out, "  trials: no complete trial");
    }
    let per: Vec<String> = d
        .trials
        .iter()
        .map(|t| {
            if t.interrupted {
                "interrupted".to_string()
            } else {
                human_count(t.iops)
            }
        })
        .collect();
    let _ = writeln!(out, "          per trial: {}", per.join(", "));
}

fn cpu_block(out: &mut String, j: &Job, d: &DioscopeJob) {
    let ios = (j.read.total_ios + j.write.total_ios).max(1) as f64;
    let c = &d.cpu;
    let p = &c.system_percent;
    let _ = writeln!(
        out,
        "  cpu: {:.2} µs/IO process (usr {:.2}, sys {:.2}), {:.2} µs/IO system-wide; ctx {:.3}/IO; system usr={:.1}% sys={:.1}% irq={:.1}% softirq={:.1}% iowait={:.1}%",
        c.process_us_per_io,
        c.process_usr_us as f64 / ios,
        c.process_sys_us as f64 / ios,
        c.system_us_per_io,
        c.ctx_per_io,
        p.user,
        p.system,
        p.irq,
        p.softirq,
        p.iowait
    );
    if let Some(e) = &d.first_error {
        let _ = writeln!(
            out,
            "  first error: {} of {} bytes at offset {} of {}: {} (errno {})",
            e.direction,
            e.length,
            e.offset,
            if e.path.is_empty() { "?" } else { &e.path },
            e.error,
            e.errno
        );
    }
}

fn verify_block(out: &mut String, d: &Dioscope) {
    for (name, v) in d.verify.iter().flat_map(|m| m.iter()) {
        let _ = writeln!(
            out,
            "{name}: verify ({}, {} B intervals): {} checked, {} bad (lost {}, torn {}, misplaced {}, stale {}){}",
            v.algo
                .and_then(|a| serde_json::to_value(a).ok())
                .and_then(|x| x.as_str().map(str::to_string))
                .unwrap_or_default(),
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

/// One line per device: requests per I/O, request size, merges, utilisation.
fn device_line(d: &DeviceTotal) -> String {
    let role = d.role_text();
    let mut s = format!("device {} ({role}):", d.device);
    match d.metric("requests_per_io") {
        Some(r) => {
            let _ = write!(s, " {r:.2} requests/IO");
        }
        None => s.push_str(" no application I/O"),
    }
    if let Some(b) = d.metric("avg_request_bytes") {
        let _ = write!(s, ", {}/request", human_bytes(b as u64));
    }
    let _ = write!(s, ", {} merges", d.metric("merges").unwrap_or(0.0));
    if let Some(u) = d.metric("util_pct") {
        let _ = write!(s, ", util {u:.0} %");
    }
    s
}

/// Write and read amplification per device: the run, then each trial.
fn amplification_lines(out: &mut String, a: &crate::results::amplification::Amplification) {
    use crate::results::amplification::DeviceAmp;
    let line = |d: &DeviceAmp| {
        let q = match &d.reason {
            Some(r) if d.qualified => format!(" [{r}]"),
            _ => String::new(),
        };
        format!(
            "{} ({}): write {}, read: {} ({}){q}",
            d.device,
            d.role.as_str(),
            d.write.text(),
            d.read.text(),
            d.source.as_str()
        )
    };
    let _ = writeln!(out, "amplification (device bytes / job bytes):");
    for d in &a.run {
        let _ = writeln!(out, "  run     {}", line(d));
    }
    for t in &a.trials {
        let tag = if a.trials.iter().any(|x| x.group != t.group) {
            format!("g{} t{}", t.group, t.trial)
        } else {
            format!("trial {}", t.trial)
        };
        if let Some(n) = &t.not_available {
            let _ = writeln!(out, "  {tag:<7} {n}");
        }
        for d in &t.devices {
            let _ = writeln!(out, "  {tag:<7} {}", line(d));
        }
    }
}

/// Context, devices, notes, findings and the partial-result banner.
fn tail(out: &mut String, d: &Dioscope) {
    if !d.context.is_empty() {
        let _ = write!(out, "\ncontext: {}", d.context);
        for t in &d.device_totals {
            let _ = write!(out, "\n  {}", device_line(t));
        }
        out.push('\n');
    }
    if let Some(a) = &d.amplification {
        amplification_lines(out, a);
    }
    for n in &d.notes {
        let _ = writeln!(out, "  {n}");
    }
    if !d.findings.is_empty() {
        let _ = writeln!(out, "\nfindings:");
        for f in &d.findings {
            let label = match f.severity {
                Severity::Critical => "CRITICAL",
                Severity::Warning => "WARNING ",
                Severity::Info => "info    ",
            };
            let _ = writeln!(out, "  {label} {}", wrap(&f.message, 11));
        }
    }
    if d.interrupted {
        let _ = writeln!(
            out,
            "\nINTERRUPTED (signal {}): the results above are partial.",
            d.signal.unwrap_or(0)
        );
    } else if let Some(e) = &d.setup_error {
        let done = if d.groups_completed.is_empty() {
            "none".to_string()
        } else {
            d.groups_completed
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "\nSTOPPED by a setup error in group {} (job '{}'): {} (errno {}). \
             Groups completed: {done}; the results above are partial.",
            e.group, e.job, e.message, e.errno
        );
    } else if d.stopped_by_error {
        let _ = writeln!(
            out,
            "\nSTOPPED by an I/O error ({} in all): the results above are partial.",
            d.io_errors
        );
    }
}
