//! `mpirun -np N dioscope run …`: the run command's steps, with every rank
//! agreeing after each one (so a rank that fails stops them all, with its
//! rank and host in the message), then rank 0 merging and reporting.

use super::hooks::DistHooks;
use super::merge::{self, RankReport};
use super::Dist;
use crate::console::eprint_err;
use crate::job::{Plan, RankStonewall};
use crate::pipeline as cmd;
use crate::runner;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One rank's outcome of a step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Step {
    host: String,
    /// The error and its exit code.
    error: Option<(String, i32)>,
    /// Files and devices this rank writes (first step only).
    writes: Vec<String>,
    shared_ok: bool,
}

/// Replace `${DIOSCOPE_RANK}` and `${DIOSCOPE_HOST}` in a command-line
/// argument (job files get them from the environment, like any `${VAR}`).
pub fn expand(arg: &str, rank: i32, host: &str) -> String {
    arg.replace("${DIOSCOPE_RANK}", &rank.to_string())
        .replace("${DIOSCOPE_HOST}", host)
}

/// The paths the plan's writing jobs use, absolute and (when they exist)
/// with symlinks resolved, so two names of one file compare equal.
fn written_paths(plan: &Plan) -> Vec<String> {
    let writers = Plan {
        jobs: plan
            .jobs
            .iter()
            .filter(|j| j.rw.writes() && !j.verify_only)
            .cloned()
            .collect(),
        ..plan.clone()
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut out: Vec<String> = runner::target_paths(&writers)
        .into_iter()
        .map(|p| {
            let abs = if p.is_absolute() { p } else { cwd.join(p) };
            std::fs::canonicalize(&abs)
                .unwrap_or(abs)
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Rank 0's verdict on a step: the failures of every rank (named), and —
/// on the first step — two ranks of one host writing one file.
fn verdict(all: Vec<Step>, what: &str) -> Option<(String, i32)> {
    let mut msgs = Vec::new();
    let mut code = 0;
    for (r, s) in all.iter().enumerate() {
        if let Some((e, c)) = &s.error {
            msgs.push(format!("rank {r} (host {}): {e}", s.host));
            code = code.max(*c);
        }
    }
    if !all.first().is_some_and(|s| s.shared_ok) {
        for (a, sa) in all.iter().enumerate() {
            for (b, sb) in all.iter().enumerate().skip(a + 1) {
                if sa.host != sb.host {
                    continue;
                }
                if let Some(p) = sa.writes.iter().find(|p| sb.writes.contains(p)) {
                    msgs.push(format!(
                        "ranks {a} and {b} (host {}) would both write {p}: give each rank its own \
                         target (filename=/path/f.${{DIOSCOPE_RANK}}), or allow it with --rank_shared_files=1",
                        sa.host
                    ));
                    code = code.max(2);
                }
            }
        }
    }
    if msgs.is_empty() {
        None
    } else {
        Some((format!("{what}: {}", msgs.join("; ")), code))
    }
}

/// Every rank's outcome of a step → `Some(exit code)` when the run stops
/// (rank 0 prints why).
fn agree(d: &Dist, what: &str, mine: Step) -> Option<i32> {
    let v: Option<(String, i32)> = d.decide(&mine, what, |all| verdict(all, what));
    let (msg, code) = v?;
    if d.is_root() {
        eprint_err(&msg);
    }
    Some(code)
}

fn step(d: &Dist, error: Option<(String, i32)>) -> Step {
    Step {
        host: d.host.clone(),
        error,
        writes: Vec::new(),
        shared_ok: false,
    }
}

/// Every write target passes the destructive-write guard (run again when
/// the targets are opened; here so no rank writes before every rank passed).
fn guard(plan: &Plan) -> Result<(), String> {
    runner::preflight::check(plan).map_err(|e| e.to_string())?;
    for j in plan.jobs.iter().filter(|j| j.rw.writes() && !j.verify_only) {
        let one = Plan {
            jobs: vec![j.clone()],
            ..plan.clone()
        };
        let g = crate::safety::WriteGuard {
            allow_mounted_write: j.allow_mounted_write,
            destroy_data_on: &plan.global.destroy_data_on,
        };
        for p in runner::target_paths(&one) {
            crate::safety::check_block_device_write(Path::new(&p), &g)
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

pub fn main(mut d: Dist, args: &[String]) -> i32 {
    // Job files see them as ${DIOSCOPE_RANK} and ${DIOSCOPE_HOST}.
    std::env::set_var("DIOSCOPE_RANK", d.rank.to_string());
    std::env::set_var("DIOSCOPE_HOST", &d.host);
    let args: Vec<String> = args.iter().map(|a| expand(a, d.rank, &d.host)).collect();
    let (plan, format, resolved, table) = match start(&mut d, &args) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mode = plan.global.rank_stonewall;
    let mut hooks = DistHooks::new(&d, mode);
    let done = match cmd::run_prepared(&plan, resolved, table, false, &mut hooks) {
        Ok(d) => d,
        // A worker could not start (message printed): end every rank now.
        Err(_) => d.abort("a worker could not start, nothing was run"),
    };
    let windows = std::mem::take(&mut hooks.windows);
    drop(hooks);

    let code = cmd::exit_code(&done.result);
    let report = RankReport::new(
        d.rank as u32,
        &d.host,
        code,
        &done.result,
        &done.doc,
        windows,
        errors(&done.result),
    );
    let bytes = serde_json::to_vec(&report).unwrap_or_default();
    let Some(all) = d.gather(bytes, "the results") else {
        // Only rank 0 prints and writes.
        return code;
    };
    let reports: Vec<RankReport> = all
        .iter()
        .enumerate()
        .map(|(r, b)| {
            serde_json::from_slice(b)
                .unwrap_or_else(|e| d.abort(&format!("unreadable result from rank {r}: {e}")))
        })
        .collect();
    let text = format.render(&merged_doc(&d, &plan, &done, &reports));
    let mut worst = code;
    if let Err(c) = cmd::write_output(&plan, &text) {
        worst = worst.max(c);
    }
    for r in &reports {
        for e in &r.errors {
            eprintln!("dioscope: error: rank {} (host {}): {e}", r.rank, r.host);
        }
        worst = worst.max(r.exit_code);
    }
    worst
}

/// The steps before the trials, every rank agreeing after each: the jobs
/// (no two ranks of a host writing one file), preflight and the guard, the
/// targets set up. `Err` is the exit code every rank ends with.
#[allow(clippy::type_complexity)]
fn start(
    d: &mut Dist,
    args: &[String],
) -> Result<
    (
        Plan,
        cmd::Formats,
        Vec<runner::ResolvedJob>,
        crate::targets::TargetTable,
    ),
    i32,
> {
    let (plan, format) = match cmd::validate(args) {
        Ok(x) => x,
        Err(e) => {
            let code = agree(d, "the jobs", step(d, Some((e, 2))));
            return Err(code.unwrap_or(2));
        }
    };
    if let Some(us) = plan.global.rank_timeout_us {
        d.timeout = std::time::Duration::from_micros(us);
    }
    let first = Step {
        writes: written_paths(&plan),
        shared_ok: plan.global.rank_shared_files,
        ..step(d, None)
    };
    if let Some(code) = agree(d, "the jobs", first) {
        return Err(code);
    }
    // All ranks passed preflight and the guard before any rank writes.
    if let Some(code) = agree(d, "preflight", step(d, guard(&plan).err().map(|e| (e, 2)))) {
        return Err(code);
    }
    let prepared = cmd::prepare(&plan);
    let err = prepared.as_ref().err().cloned();
    if let Some(code) = agree(d, "setting up the targets", step(d, err)) {
        if let Ok((_, table)) = prepared {
            table.discard();
        }
        return Err(code);
    }
    let Ok((resolved, table)) = prepared else {
        return Err(2);
    };
    Ok((plan, format, resolved, table))
}

/// Rank 0's result: every rank's run merged into one document, with the
/// ranks' section.
fn merged_doc(
    d: &Dist,
    plan: &Plan,
    done: &cmd::Finished,
    reports: &[RankReport],
) -> crate::results::RunDoc {
    let mode = plan.global.rank_stonewall;
    let agg = merge::aggregate(reports, mode != RankStonewall::Off);
    let merged = merge::merge(&done.result, reports, &agg);
    let mut doc = crate::render::build::run_doc(
        &merged,
        &done.diagnosis,
        format!(
            "{} ranks · {}",
            d.size,
            cmd::context_line(plan, &done.diagnosis)
        ),
    );
    let name = match mode {
        RankStonewall::Off => "off",
        RankStonewall::Stop => "stop",
        RankStonewall::Wearout => "wearout",
    };
    let section = merge::section(reports, agg, name);
    if let Some(ds) = doc.dioscope.as_mut() {
        ds.command_line = std::env::args_os()
            .map(|a| crate::osstr::escape(&a))
            .collect();
        if let Ok(v) = serde_json::to_value(&section) {
            let _ = ds.set_section(crate::results::ranks::KEY, v);
        }
    }
    doc
}

/// A rank's errors, one line each (rank 0 prints them with the rank).
fn errors(r: &runner::RunResult) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((job, e, path)) = r.first_error() {
        out.push(format!(
            "job '{job}': {} of {} bytes at offset {} of {} failed: {}; {} I/O error(s) in all",
            if e.write { "write" } else { "read" },
            e.len,
            e.offset,
            if path.is_empty() { "?" } else { path },
            std::io::Error::from_raw_os_error(e.errno),
            r.io_errors()
        ));
    }
    if r.verify_failures() > 0 {
        out.push(format!(
            "verify found {} bad blocks (offsets in the result)",
            r.verify_failures()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(host: &str, writes: &[&str]) -> Step {
        Step {
            host: host.into(),
            error: None,
            writes: writes.iter().map(|s| s.to_string()).collect(),
            shared_ok: false,
        }
    }

    #[test]
    fn ranks_on_one_host_may_not_write_one_file() {
        let v = verdict(vec![st("a", &["/f"]), st("a", &["/f"])], "the jobs").unwrap();
        assert!(
            v.0.contains("ranks 0 and 1 (host a) would both write /f"),
            "{}",
            v.0
        );
        assert!(v.0.contains("--rank_shared_files=1"), "{}", v.0);
        assert_eq!(v.1, 2);
        // Other hosts, other files, or allowed: fine.
        assert!(verdict(vec![st("a", &["/f"]), st("b", &["/f"])], "x").is_none());
        assert!(verdict(vec![st("a", &["/f.0"]), st("a", &["/f.1"])], "x").is_none());
        let mut ok = st("a", &["/f"]);
        ok.shared_ok = true;
        assert!(verdict(vec![ok, st("a", &["/f"])], "x").is_none());
    }

    #[test]
    fn a_failing_rank_is_named_with_its_host() {
        let mut bad = st("h2", &[]);
        bad.error = Some(("no such device".into(), 2));
        let v = verdict(vec![st("h1", &[]), bad], "preflight").unwrap();
        assert_eq!(v, ("preflight: rank 1 (host h2): no such device".into(), 2));
    }

    #[test]
    fn rank_and_host_expand_in_arguments() {
        assert_eq!(
            expand("--filename=/m/f.${DIOSCOPE_RANK}.${DIOSCOPE_HOST}", 3, "n1"),
            "--filename=/m/f.3.n1"
        );
    }
}
