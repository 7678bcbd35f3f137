//! The last steps of a run: the context line, the result written to
//! `--output` or stdout, the errors on stderr, the exit code.

use crate::diag::RunDiagnosis;
use crate::job::Plan;
use crate::outfile::Rules;
use crate::results::RunDoc;
use crate::runner::{self, RunResult};
use std::path::Path;

/// Names that are not UTF-8 (osstr) are shown as `\xHH` in every format;
/// the JSON also carries their exact bytes: `dioscope.raw_names`, one
/// `{"shown": …, "hex": …}` per job name, file name and directory.
pub fn add_raw_names(doc: &mut RunDoc, plan: &Plan) {
    let mut names: Vec<&str> = Vec::new();
    for j in &plan.jobs {
        let all = std::iter::once(j.name.as_str())
            .chain(j.filenames.iter().map(String::as_str))
            .chain(j.directory.as_deref());
        for n in all {
            if crate::osstr::has_raw(n) && !names.contains(&n) {
                names.push(n);
            }
        }
    }
    if names.is_empty() {
        return;
    }
    let v: Vec<serde_json::Value> = names
        .iter()
        .map(|n| serde_json::json!({"shown": crate::osstr::shown(n), "hex": crate::osstr::hex(n)}))
        .collect();
    if let Some(d) = doc.dioscope.as_mut() {
        let _ = d.set_section("raw_names", serde_json::Value::Array(v));
    }
}

/// The context line: engines, then the environment (kernel, CPU, memory,
/// each target with its file system, device and queue limits).
pub fn context_line(plan: &Plan, diagnosis: &RunDiagnosis) -> String {
    let mut engines: Vec<&str> = Vec::new();
    for j in &plan.jobs {
        let e = j.ioengine.as_str();
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    let env = &diagnosis.environment;
    let targets = if env.targets.is_empty() {
        " · no target (null engine)"
    } else {
        ""
    };
    format!("engine {} · {}{targets}", engines.join(","), env.one_line())
}

/// Print the result, or write it to `--output` atomically. `Err(1)` when
/// the file cannot be written (the result then goes to stdout: nothing is
/// lost).
pub fn write_output(plan: &Plan, text: &str) -> Result<(), i32> {
    // `--debug=random`'s lines go where the report goes, before it (fio).
    let debug = crate::job::debug::take_pending();
    let with_debug;
    let text = if debug.is_empty() {
        text
    } else {
        with_debug = debug + text;
        &with_debug
    };
    match &plan.global.output {
        Some(path) => {
            // Checked again now: the run may have taken hours.
            let (targets, inputs) = (runner::target_paths(plan), runner::input_paths(plan));
            let rules = Rules::new("--output")
                .targets(&targets)
                .inputs(&inputs)
                .streams();
            let written = crate::outfile::check(Path::new(path), &rules)
                .map_err(|e| std::io::Error::other(e.why))
                .and_then(|out| crate::outfile::write_result(&out, text.as_bytes()));
            if let Err(e) = written {
                eprintln!("dioscope: error: cannot write --output={path}: {e}");
                crate::console::stdout(text);
                return Err(1);
            }
        }
        None => crate::console::stdout(text),
    }
    Ok(())
}

/// The first I/O error with its hint, and verify failures, on stderr.
pub fn report_errors(result: &RunResult) {
    if result.interrupted {
        return;
    }
    if let Some(e) = &result.setup_error {
        let done: Vec<String> = result.completed_groups.iter().map(u32::to_string).collect();
        eprintln!(
            "dioscope: error: {e}; groups completed: {}; the run stopped there and the result is partial",
            if done.is_empty() {
                "none".to_string()
            } else {
                done.join(", ")
            }
        );
    }
    if let Some((job, e, path)) = result.first_error() {
        let spec = result
            .jobs
            .iter()
            .find(|j| j.resolved.spec.name == job)
            .map(|j| &j.resolved.spec);
        let goes_on = spec.is_some_and(|s| s.continue_on_error);
        let stopped = result
            .jobs
            .iter()
            .filter(|j| j.resolved.spec.name == job)
            .any(|j| j.trials.iter().any(|t| t.fatal_errno != 0));
        let went_on = goes_on && !stopped;
        eprintln!(
            "dioscope: error: job '{job}': {} of {} bytes at offset {} of {} failed: {}; {} I/O error(s) in all; {}",
            if e.write { "write" } else { "read" },
            e.len,
            e.offset,
            if path.is_empty() { "?" } else { path },
            std::io::Error::from_raw_os_error(e.errno),
            result.io_errors(),
            if went_on {
                "the job went on (continue_on_error)"
            } else if goes_on {
                "the job stopped there and the result is partial: continue_on_error goes on only \
                 after fio's non-fatal errors (EIO, EILSEQ), or after the errnos ignore_error= \
                 lists instead"
            } else {
                "the run stopped there and the result is partial (with continue_on_error=all a job \
                 goes on after EIO, as in fio; ignore_error=,ENOSPC:EDQUOT lists other errnos)"
            }
        );
        eprintln!(
            "dioscope: hint: {}",
            runner::hint::io_error_hint(e, path, result)
        );
    }
    if result.verify_failures() > 0 {
        eprintln!(
            "dioscope: error: verify found {} bad blocks (offsets in the result); the data on the target is not what was written",
            result.verify_failures()
        );
    }
}

/// The one line said on stderr after a stop signal: where the partial
/// result went and what it holds. `dest`: the `--output` file, or `None`
/// for stdout. `None` when the run was not interrupted.
///
/// "dioscope: interrupted (SIGINT): partial result in F (trials 1–2 of 5
/// kept; trial 3 cut at 1.4 s, listed apart, not averaged in)"
pub fn interrupt_summary(result: &RunResult, dest: Option<&str>) -> Option<String> {
    if !result.interrupted {
        return None;
    }
    let sig = match result.signal {
        libc::SIGINT => "SIGINT".to_string(),
        libc::SIGTERM => "SIGTERM".to_string(),
        libc::SIGHUP => "SIGHUP".to_string(),
        0 => "a stop signal".to_string(),
        n => format!("signal {n}"),
    };
    let whereto = match dest {
        Some(f) => format!("partial result in {f}"),
        None => "partial result on standard output".to_string(),
    };
    // The job the stop cut (else the one that ran the most trials).
    let job = result
        .jobs
        .iter()
        .find(|j| j.trials.iter().any(|t| t.interrupted))
        .or_else(|| result.jobs.iter().max_by_key(|j| j.trials.len()));
    let Some(j) = job else {
        return Some(format!(
            "dioscope: interrupted ({sig}): {whereto} (no trial ran)"
        ));
    };
    let kept = j.trials.iter().filter(|t| !t.interrupted).count();
    let planned = j.resolved.spec.trials;
    let of = if planned > 0 {
        format!(" of {planned}")
    } else {
        " (trials=auto)".to_string()
    };
    let kept = match kept {
        0 => format!("no trial{of} finished"),
        1 => format!("trial 1{of} kept"),
        n => format!("trials 1–{n}{of} kept"),
    };
    let cut = j
        .trials
        .iter()
        .enumerate()
        .find(|(_, t)| t.interrupted)
        .map(|(i, t)| {
            format!(
                "; trial {} cut at {:.1} s, listed apart, not averaged in",
                i + 1,
                t.runtime_ns as f64 / 1e9
            )
        })
        .unwrap_or_default();
    let job_name = if result.jobs.len() > 1 {
        format!("job '{}': ", j.resolved.spec.name)
    } else {
        String::new()
    };
    Some(format!(
        "dioscope: interrupted ({sig}): {whereto} ({job_name}{kept}{cut})"
    ))
}

/// 128+N when stopped by signal N, 1 after I/O errors, bad blocks or a
/// setup error after earlier groups ran, else 0.
pub fn exit_code(result: &RunResult) -> i32 {
    if result.interrupted {
        let sig = result.signal;
        return if sig > 0 { 128 + sig } else { 130 };
    }
    if result.setup_error.is_some()
        || result.first_error().is_some()
        || result.io_errors() > 0
        || result.verify_failures() > 0
    {
        return 1;
    }
    0
}
