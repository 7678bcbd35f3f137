//! `dioscope run [JOBFILE…] [--OPTION=VALUE…]` (and fio's invocation without
//! the command name): parse, check before touching anything, lay out, run
//! the trials with the diagnosis hooks, diagnose, clean up, render the
//! typed result in the chosen format, and choose the exit code.

use super::{eprint_err, Command};
use crate::diag::{self, DiagHooks, RunDiagnosis};
use crate::job::{self, Plan};
use crate::render::{self, Exporter, Format, RUN_FORMATS};
use crate::results::RunDoc;
use crate::runner::{self, RunOptions, RunResult};

pub const COMMAND: Command = Command {
    name: "run",
    usage: &[
        (
            "run [JOBFILE...] [--OPTION=VALUE...]",
            "run jobs (fio job files and options)",
        ),
        (
            "[JOBFILE...] [--OPTION=VALUE...]",
            "the same, as fio is invoked",
        ),
        (
            "run",
            "the default job: 4 KiB random reads,\n\
             io_uring, QD 32, O_DIRECT, 1 GiB scratch\n\
             file here, 3 trials, removed afterwards",
        ),
    ],
    main,
};

/// A run that finished (completely or not): its result, diagnosed.
pub struct Finished {
    pub result: RunResult,
    pub diagnosis: RunDiagnosis,
    pub doc: RunDoc,
    /// Files this run created and would have removed, left to the caller
    /// by [`execute_keeping`] (sweep and compare --run lay out once).
    pub created: Vec<crate::targets::CreatedFile>,
}

fn main(args: &[String]) -> i32 {
    dioscope_sys::signal::install();
    // Started by mpirun: every rank runs the jobs, rank 0 reports (docs/DISTRIBUTED.md).
    #[cfg(feature = "mpi")]
    if let Some(d) = crate::dist::Dist::from_env() {
        return crate::dist::run::main(d, args);
    }
    let (plan, format) = match validate(args) {
        Ok(x) => x,
        Err(e) => return eprint_err(&e),
    };
    let done = match execute(&plan) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let text = format.exporter.render(&done.doc);
    if let Err(code) = write_output(&plan, &text) {
        return code;
    }
    if let Some(path) = &plan.global.report {
        let page = render::html::Html.render(&done.doc);
        if let Err(e) = super::report::write_report(path, &page) {
            eprintln!("dioscope: error: --report={path}: {e}");
            return 1;
        }
    }
    report_errors(&done.result);
    exit_code(&done.result)
}

/// Everything that can be checked before touching the system: the job
/// options, the output format, the output file's directory.
pub fn validate(args: &[String]) -> Result<(Plan, &'static Format<RunDoc>), String> {
    let plan = job::parse_args(args).map_err(|e| e.to_string())?;
    let given = plan.global.output_format.as_str();
    let format = if given.is_empty() {
        &RUN_FORMATS[0]
    } else {
        render::find(RUN_FORMATS, given).ok_or_else(|| render::unknown(RUN_FORMATS, given))?
    };
    // The result's destination, checked before anything is opened or run
    // (outfile::check_output: targets, device nodes, /dev, writability).
    if let Some(out) = &plan.global.output {
        crate::outfile::check_output(out, &runner::target_paths(&plan))
            .map_err(|e| e.to_string())?;
    }
    if let Some(rep) = &plan.global.report {
        crate::outfile::check_output(rep, &runner::target_paths(&plan))
            .map_err(|e| format!("--report: {e}"))?;
    }
    Ok((plan, format))
}

/// Lay out, run, diagnose and clean up. `Err` is the exit code when
/// nothing ran (bad job/target combination: 2; a stop signal during
/// layout: 128+N), the message already printed.
pub fn execute(plan: &Plan) -> Result<Finished, i32> {
    execute_keeping(plan, false)
}

/// [`execute`], but with `keep` the files the run created and would remove
/// (the default job's scratch file, `unlink=1`) stay for the next run and
/// are handed back in [`Finished::created`].
pub fn execute_keeping(plan: &Plan, keep: bool) -> Result<Finished, i32> {
    let (resolved, table) = prepare(plan).map_err(|(msg, code)| {
        eprint_err(&msg);
        code
    })?;
    run_prepared(plan, resolved, table, keep, &mut runner::NoHooks)
}

/// Stage one (`runner::prepare`); `Err` is the message and the exit code.
pub fn prepare(
    plan: &Plan,
) -> Result<(Vec<runner::ResolvedJob>, crate::targets::TargetTable), (String, i32)> {
    runner::prepare(plan).map_err(|e| {
        // A stop signal during layout: nothing ran, so there is no result
        // to write; the exit status says which signal ended it.
        let sig = dioscope_sys::signal::last_signal();
        let code = if dioscope_sys::signal::stop_count() > 0 && sig > 0 {
            128 + sig
        } else {
            2
        };
        (e.to_string(), code)
    })
}

/// Run prepared jobs with the diagnosis hooks and `extra` (a distributed
/// run's agreement points), diagnose, clean up (unless `keep`), build the result.
pub fn run_prepared(
    plan: &Plan,
    resolved: Vec<runner::ResolvedJob>,
    table: crate::targets::TargetTable,
    keep: bool,
    extra: &mut dyn runner::TrialHooks,
) -> Result<Finished, i32> {
    let opts = RunOptions {
        progress: plan.global.eta.shows(dioscope_sys::proc::stderr_is_tty()),
        destroy_data_on: plan.global.destroy_data_on.clone(),
        auto: plan.global.auto.clone(),
    };
    let mut hooks = DiagHooks::new(&table);
    let mut profiler = plan.global.profile.then(crate::profile::Profiler::new);
    let result = match profiler.as_mut() {
        Some(p) => runner::execute(
            resolved,
            &table,
            &opts,
            &mut runner::Chain(&mut p.hooks(&mut hooks), extra),
        ),
        None => runner::execute(
            resolved,
            &table,
            &opts,
            &mut runner::Chain(&mut hooks, extra),
        ),
    };
    let profile = profiler.map(|p| p.finish(&result));
    let diagnosis = diag::diagnose(&result, &hooks);

    // Remove what this run created when asked (the default job's scratch
    // file always). Files dioscope did not create are never removed.
    // A worker that could not start before anything ran: a setup error like
    // those of `prepare`, and what layout created goes too.
    let setup_failed = result.setup_error.is_some() && result.nothing_ran();
    let remove = plan.is_default_job
        || plan.jobs.iter().any(|j| j.unlink || j.unlink_each_loop)
        || setup_failed;
    let created = table.created_files();
    drop(table);
    let mut left = Vec::new();
    if remove && keep {
        left = created;
    } else if remove {
        for c in &created {
            c.remove();
        }
    }
    if let (true, Some(e)) = (setup_failed, &result.setup_error) {
        eprint_err(&format!("{e}; nothing was run"));
        return Err(2);
    }
    let mut doc = render::build::run_doc(&result, &diagnosis, context_line(plan, &diagnosis));
    if let Some(d) = doc.dioscope.as_mut() {
        d.profile = profile;
        d.command_line = std::env::args().collect();
    }
    Ok(Finished {
        result,
        diagnosis,
        doc,
        created: left,
    })
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
    match &plan.global.output {
        Some(path) => {
            // Checked again now: the run may have taken hours.
            let written = crate::outfile::check_output(path, &runner::target_paths(plan))
                .map_err(|e| std::io::Error::other(e.why))
                .and_then(|out| crate::outfile::write_result(&out, text.as_bytes()));
            if let Err(e) = written {
                eprintln!("dioscope: error: cannot write --output={path}: {e}");
                super::stdout(text);
                return Err(1);
            }
        }
        None => super::stdout(text),
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
        let went_on = spec.is_some_and(|s| s.continue_on_error);
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
            } else {
                "the run stopped there and the result is partial (continue_on_error=all counts errors and goes on)"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn formats_come_from_the_table() {
        let (_, f) = validate(&s(&["--name=x", "--ioengine=null", "--size=1m"])).unwrap();
        assert_eq!(f.name, "normal");
        for fmt in RUN_FORMATS {
            let a = format!("--output-format={}", fmt.name);
            let (_, f) = validate(&s(&["--name=x", "--ioengine=null", &a])).unwrap();
            assert_eq!(f.name, fmt.name);
        }
        let e = validate(&s(&["--name=x", "--output-format=xml"]))
            .err()
            .unwrap();
        assert!(e.contains("'xml' is not an output format"), "{e}");
        assert!(e.contains(&render::names(RUN_FORMATS)), "{e}");
        // fio's terse format is refused as not implemented, not silently
        // replaced by another format.
        for terse in ["terse", "minimal"] {
            let a = format!("--output-format={terse}");
            let e = validate(&s(&["--name=x", &a])).err().unwrap();
            assert!(e.contains("not implemented"), "{e}");
        }
    }

    #[test]
    fn a_missing_output_directory_is_refused_before_running() {
        let e = validate(&s(&["--name=x", "--output=/nonexistent/dir/r.json"]))
            .err()
            .unwrap();
        assert!(e.contains("does not exist"), "{e}");
    }
}
