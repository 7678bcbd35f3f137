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
use crate::outfile::Rules;
use std::path::Path;

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
    if let Some(code) = answer_without_running(args) {
        return code;
    }
    let (plan, formats) = match validate(args) {
        Ok(x) => x,
        Err(e) => return eprint_err(&e),
    };
    let mut done = match execute(&plan) {
        Ok(d) => d,
        Err(code) => return code,
    };
    add_raw_names(&mut done.doc, &plan);
    let text = formats.render(&done.doc);
    if let Err(code) = write_output(&plan, &text) {
        return code;
    }
    if let Some(path) = &plan.global.report {
        let page = render::html::Html.render(&done.doc);
        let (targets, inputs) = (runner::target_paths(&plan), runner::input_paths(&plan));
        if let Err(e) = super::report::write_report("--report", path, &page, &targets, &inputs) {
            eprintln!("dioscope: error: {e}");
            return 1;
        }
    }
    report_errors(&done.result);
    exit_code(&done.result)
}

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

/// The output formats of a run, in the order given, each once
/// (`--output-format=normal,json`, `--minimal`, `--append-terse`).
#[derive(Debug, Clone)]
pub struct Formats(pub Vec<&'static Format<RunDoc>>);

impl Formats {
    /// Every format's output, one after the other.
    pub fn render(&self, doc: &RunDoc) -> String {
        // Names of raw bytes (osstr) are shown as \xHH, valid in every format.
        self.0
            .iter()
            .map(|f| {
                let text = f.exporter.render(doc);
                if f.name.starts_with("json") {
                    crate::osstr::shown_json(&text)
                } else {
                    crate::osstr::shown(&text)
                }
            })
            .collect()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|f| f.name).collect()
    }
}

/// Everything that can be checked before touching the system: fio's
/// invocation flags, the job options, the output formats, `--readonly`, the
/// output file's directory.
pub fn validate(args: &[String]) -> Result<(Plan, Formats), String> {
    let (flags, rest) = super::flags::split(args)?;
    let mut plan = job::parse_args(&rest).map_err(|e| e.to_string())?;
    if flags.warnings_fatal {
        if let Some(w) = plan.global.warnings.first() {
            return Err(format!("{w} (an error with --warnings-fatal)"));
        }
    }
    for w in &plan.global.warnings {
        eprintln!("dioscope: warning: {w}");
    }
    plan.global.eta_newline_s = flags.eta_newline_s;
    plan.global.status_interval_ms = flags.status_interval_ms;
    if !flags.sections.is_empty() {
        let names: Vec<String> = plan.jobs.iter().map(|j| j.name.clone()).collect();
        plan.jobs.retain(|j| flags.sections.contains(&j.name));
        if let Some(s) = flags.sections.iter().find(|s| !names.contains(s)) {
            return Err(format!(
                "--section={s}: no job section is named '{s}'; the sections are {}",
                names.join(", ")
            ));
        }
    }
    if let Some(max) = flags.max_jobs {
        let n: u32 = plan.jobs.iter().map(|j| j.numjobs).sum();
        if n > max {
            return Err(format!(
                "--max-jobs={max}: the jobs start {n} threads (numjobs counted); lower numjobs or raise --max-jobs"
            ));
        }
    }
    let formats = formats(&plan.global.output_format, &flags)?;
    if flags.readonly {
        readonly(&plan)?;
    }
    if plan.global.profile {
        crate::profile::check_tmpdir()?;
    }
    // The result's destination, checked before anything is opened or run
    // (outfile::check_output: targets, device nodes, /dev, writability).
    // Every file the run creates, checked before anything is opened or run
    // (outfile::check: never a target or an input, a device node, FIFO,
    // socket or directory, a symlink at the name, a new file in /dev).
    let targets = runner::target_paths(&plan);
    let inputs = runner::input_paths(&plan);
    let rules = |what| Rules::new(what).targets(&targets).inputs(&inputs);
    if let Some(out) = &plan.global.output {
        crate::outfile::check(Path::new(out), &rules("--output").streams())
            .map_err(|e| e.to_string())?;
    }
    if let Some(rep) = &plan.global.report {
        crate::outfile::check(Path::new(rep), &rules("--report"))
            .map_err(|e| e.to_string())?;
    }
    check_created(&plan)?;
    Ok((plan, formats))
}

/// Check every file the run's jobs create besides their targets (logs,
/// iologs, verify states, a program's output: each option the table marks
/// `Creates::Job`) against the targets and inputs, before the first I/O,
/// and protect those for the checks made while the run opens files.
pub fn check_created(plan: &Plan) -> Result<(), String> {
    let targets = runner::target_paths(plan);
    let inputs = runner::input_paths(plan);
    for (opt, p) in runner::created_files(plan) {
        let rules = Rules::new(opt).targets(&targets).inputs(&inputs);
        crate::outfile::check(&p, &rules).map_err(|e| {
            format!(
                "{e} (the {opt} option names this file; change it, or the job's name it is \
                 derived from)"
            )
        })?;
    }
    crate::outfile::protect(&targets, &inputs);
    Ok(())
}

/// `--output-format=a,b` (each once, in order; empty: the default), then
/// `--minimal` (terse instead of the default) and `--append-terse`.
fn formats(given: &str, flags: &super::flags::Flags) -> Result<Formats, String> {
    let mut out: Vec<&'static Format<RunDoc>> = Vec::new();
    for name in given.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let f = render::find(RUN_FORMATS, name).ok_or_else(|| render::unknown(RUN_FORMATS, name))?;
        if !out.iter().any(|o| o.name == f.name) {
            out.push(f);
        }
    }
    let terse = render::find(RUN_FORMATS, "terse").expect("terse is a run format");
    if flags.minimal && out.is_empty() {
        out.push(terse);
    }
    if out.is_empty() {
        out.push(&RUN_FORMATS[0]);
    }
    if (flags.minimal || flags.append_terse) && !out.iter().any(|o| o.name == terse.name) {
        out.push(terse);
    }
    Ok(Formats(out))
}

/// `--readonly`, as fio: refuse, before anything is opened, a job that
/// would write (its pattern, or a file it would have to lay out).
fn readonly(plan: &Plan) -> Result<(), String> {
    for j in &plan.jobs {
        // Engines whose every operation changes the target or its files,
        // whatever the direction: falloc allocates on reads, filecreate and
        // filedelete make and remove files, e4defrag moves extents.
        let e = j.ioengine.as_str();
        if matches!(e, "falloc" | "filecreate" | "filedelete" | "e4defrag") {
            return Err(format!(
                "--readonly: job '{}' uses ioengine={e}, which changes its target whatever \
                 rw= says; drop --readonly or use an engine that reads",
                j.name
            ));
        }
        // verify_only reads back what an earlier run wrote: no write.
        if j.rw.writes() && !j.verify_only {
            return Err(format!(
                "--readonly: job '{}' writes (rw={}); drop --readonly or make it read only (rw=read or rw=randread)",
                j.name,
                j.rw.as_str()
            ));
        }
    }
    if plan.is_default_job {
        return Err(
            "--readonly: the default job writes its scratch file first; give a job that reads an existing file or device".into(),
        );
    }
    if let Some(p) = runner::target_paths(plan).into_iter().find(|p| !p.exists()) {
        return Err(format!(
            "--readonly: {} does not exist and would be created and written; create it first or drop --readonly",
            p.display()
        ));
    }
    Ok(())
}

/// `--showcmd`, `--parse-only`, `--cmdhelp`, `--enghelp`: answered without
/// running anything; `Some(exit code)` when the invocation was one of them.
pub fn answer_without_running(args: &[String]) -> Option<i32> {
    let (flags, rest) = match super::flags::split(args) {
        Ok(x) => x,
        Err(e) => return Some(eprint_err(&e)),
    };
    if let Some(what) = &flags.cmdhelp {
        return Some(match super::flags::cmdhelp(what) {
            Ok(text) => {
                super::stdout(&text);
                0
            }
            Err(e) => eprint_err(&e),
        });
    }
    if let Some(what) = &flags.enghelp {
        return Some(match super::flags::enghelp(what) {
            Ok(text) => {
                super::stdout(&text);
                0
            }
            Err(e) => eprint_err(&e),
        });
    }
    if flags.showcmd {
        return Some(match super::flags::showcmd(&rest) {
            Ok(text) => {
                super::stdout(&text);
                0
            }
            Err(e) => eprint_err(&e),
        });
    }
    if flags.parse_only {
        return Some(match validate(args) {
            Ok(_) => 0,
            Err(e) => eprint_err(&e),
        });
    }
    None
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
    check_created(plan).map_err(|e| (e, 2))?;
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
    let mut newline = EtaNewline {
        every_s: plan.global.eta_newline_s.filter(|_| opts.progress),
        seconds: 0,
    };
    let mut status = StatusInterval::new(plan);
    let extra: &mut dyn runner::TrialHooks = &mut runner::Chain(&mut newline, extra);
    let extra: &mut dyn runner::TrialHooks = &mut runner::Chain(&mut status, extra);
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
    if !plan.global_options.is_empty() {
        doc.global_options = Some(plan.global_options.iter().cloned().collect());
    }
    if let Some(d) = doc.dioscope.as_mut() {
        d.profile = profile;
        d.command_line = std::env::args_os().map(|a| crate::osstr::escape(&a)).collect();
    }
    Ok(Finished {
        result,
        diagnosis,
        doc,
        created: left,
    })
}

/// `--eta-newline=T`: ends the live progress line every T seconds, so that
/// a log of stderr keeps one line per period (fio's behaviour).
struct EtaNewline {
    every_s: Option<u64>,
    seconds: u64,
}

impl runner::TrialHooks for EtaNewline {
    fn during_trial(&mut self, _group: u32, _trial: u32) {
        let Some(every) = self.every_s else {
            return;
        };
        self.seconds += 1;
        if self.seconds.is_multiple_of(every) {
            eprintln!();
        }
    }
}

/// `--status-interval=T`: while a trial runs, an interim status every T on
/// stdout, before the final report — in JSON one object per interval
/// (`{"status": {…}}`), otherwise one line. It carries what the workers
/// publish while they run (the I/Os and bytes measured so far in the trial,
/// all its jobs together, and the rates from them); latencies and per-job
/// figures are in the final report only, since the workers share nothing
/// else while they run.
struct StatusInterval {
    every_ns: Option<u64>,
    json: bool,
    start: u64,
    next: u64,
    measure_start: u64,
    jobs: Vec<String>,
}

impl StatusInterval {
    fn new(plan: &Plan) -> StatusInterval {
        let now = dioscope_sys::clock::now_ns();
        let every_ns = plan.global.status_interval_ms.map(|ms| ms * 1_000_000);
        StatusInterval {
            every_ns,
            json: plan
                .global
                .output_format
                .split(',')
                .any(|f| f.trim().starts_with("json")),
            start: now,
            next: now + every_ns.unwrap_or(0),
            measure_start: now,
            jobs: Vec::new(),
        }
    }
}

impl runner::TrialHooks for StatusInterval {
    fn before_trial(
        &mut self,
        _g: u32,
        _t: u32,
        jobs: &[&runner::ResolvedJob],
        _table: &crate::targets::TargetTable,
    ) {
        self.jobs = jobs.iter().map(|j| j.spec.name.clone()).collect();
    }
    fn measure_start(&mut self, _g: u32, _t: u32) {
        self.measure_start = dioscope_sys::clock::now_ns();
    }
    fn poll_every_ns(&self) -> u64 {
        self.every_ns.unwrap_or(u64::MAX)
    }
    fn stop_requested(&mut self, g: u32, t: u32, ios: u64, bytes: u64, done: bool) -> bool {
        let Some(every) = self.every_ns else {
            return false;
        };
        let now = dioscope_sys::clock::now_ns();
        if done || now < self.next {
            return false;
        }
        while self.next <= now {
            self.next += every;
        }
        let secs = now.saturating_sub(self.measure_start) as f64 / 1e9;
        let per_s = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let elapsed_ms = now.saturating_sub(self.start) / 1_000_000;
        let text = if self.json {
            let v = serde_json::json!({"status": {
                "elapsed_ms": elapsed_ms,
                "group": g,
                "trial": t + 1,
                "jobs": self.jobs,
                "total_ios": ios,
                "io_bytes": bytes,
                "iops": per_s(ios),
                "bw_bytes": per_s(bytes).round() as u64,
            }});
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
        } else {
            format!(
                "status at {:.1}s: group {g} trial {} ({}): {} I/Os, {} in {secs:.1}s: IOPS={}, BW={}/s\n",
                elapsed_ms as f64 / 1000.0,
                t + 1,
                self.jobs.join(", "),
                ios,
                crate::results::human_bytes(bytes),
                crate::results::human_count(per_s(ios)),
                crate::results::human_rate(per_s(bytes)),
            )
        };
        super::stdout(&text);
        false
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
        assert_eq!(f.names(), ["normal"]);
        for fmt in RUN_FORMATS {
            let a = format!("--output-format={}", fmt.name);
            let (_, f) = validate(&s(&["--name=x", "--ioengine=null", &a])).unwrap();
            assert_eq!(f.names(), [fmt.name]);
        }
        let e = validate(&s(&["--name=x", "--output-format=xml"]))
            .err()
            .unwrap();
        assert!(e.contains("'xml' is not an output format"), "{e}");
        assert!(e.contains(&render::names(RUN_FORMATS)), "{e}");
    }

    #[test]
    fn format_lists_minimal_and_append_terse() {
        let names = |a: &[&str]| {
            let mut v = vec!["--name=x", "--ioengine=null"];
            v.extend_from_slice(a);
            validate(&s(&v)).map(|(_, f)| f.names())
        };
        assert_eq!(
            names(&["--output-format=normal,json"]).unwrap(),
            ["normal", "json"]
        );
        // Each once, in the order given.
        assert_eq!(
            names(&["--output-format=json,normal,json"]).unwrap(),
            ["json", "normal"]
        );
        assert_eq!(names(&["--minimal"]).unwrap(), ["terse"]);
        assert_eq!(names(&["--output-format=minimal"]).unwrap(), ["terse"]);
        assert_eq!(
            names(&["--output-format=json", "--append-terse"]).unwrap(),
            ["json", "terse"]
        );
        assert_eq!(names(&["--append-terse"]).unwrap(), ["normal", "terse"]);
        assert_eq!(names(&["--terse-version=3", "--minimal"]).unwrap(), ["terse"]);
        let e = names(&["--output-format=json,xml"]).unwrap_err();
        assert!(e.contains("'xml' is not an output format"), "{e}");
        let e = names(&["--terse-version=4"]).unwrap_err();
        assert!(e.contains("not supported by dioscope") && e.contains("3"), "{e}");
    }

    #[test]
    fn section_and_max_jobs() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.fio");
        std::fs::write(
            &f,
            "[global]\nioengine=null\nsize=1m\n[default]\nrw=read\n[override]\nrw=write\nnumjobs=4\n",
        )
        .unwrap();
        let f = f.to_str().unwrap();
        let (p, _) = validate(&s(&[f, "--section=override"])).unwrap();
        assert_eq!(p.jobs.len(), 1);
        assert_eq!(p.jobs[0].name, "override");
        let e = validate(&s(&[f, "--section=nope"])).err().unwrap();
        assert!(e.contains("default, override"), "{e}");
        let e = validate(&s(&[f, "--max-jobs=4"])).err().unwrap();
        assert!(e.contains("5 threads"), "{e}");
        validate(&s(&[f, "--max-jobs=5"])).unwrap();
    }

    #[test]
    fn readonly_refuses_writes_before_opening_anything() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("data");
        let fa = format!("--filename={}", f.display());
        let e = validate(&s(&["--readonly", "--name=w", "--rw=write", "--size=1m", &fa]))
            .err()
            .unwrap();
        assert!(e.contains("--readonly") && e.contains("rw=write"), "{e}");
        assert!(!f.exists(), "nothing may be created");
        let e = validate(&s(&["--readonly", "--name=r", "--rw=read", "--size=1m", &fa]))
            .err()
            .unwrap();
        assert!(e.contains("does not exist"), "{e}");
        std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
        validate(&s(&["--readonly", "--name=r", "--rw=randread", "--size=1m", &fa])).unwrap();
        let e = validate(&s(&["--readonly"])).err().unwrap();
        assert!(e.contains("default job"), "{e}");
    }

    #[test]
    fn a_missing_output_directory_is_refused_before_running() {
        let e = validate(&s(&["--name=x", "--output=/nonexistent/dir/r.json"]))
            .err()
            .unwrap();
        assert!(e.contains("does not exist"), "{e}");
    }
}
