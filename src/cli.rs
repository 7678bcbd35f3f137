//! Commands: run (also the bare fio-style invocation), doctor, options, help.

use dioscope_core::diag::{self, Check, DiagHooks};
use dioscope_core::job::{self, OutputFormat, Plan};
use dioscope_core::profile::{self, Profiler};
use dioscope_core::report;
use dioscope_core::runner::{self, RunOptions};
use std::path::Path;

const USAGE: &str = "\
dioscope — benchmark and diagnose direct I/O (O_DIRECT) on Linux

USAGE:
  dioscope run [JOBFILE...] [--OPTION=VALUE...]   run jobs (fio job files and options)
  dioscope [JOBFILE...] [--OPTION=VALUE...]       the same, as fio is invoked
  dioscope run                                    the default job: 4 KiB random reads,
                                                  io_uring, QD 32, O_DIRECT, 1 GiB scratch
                                                  file here, 3 trials, removed afterwards
  dioscope doctor TARGET [--output-format=json]   check a file or block device without a
                                                  workload: page cache, other openers,
                                                  buffering, holes, layout, governor
                                                  (exit 1 when a check fails)
  dioscope options [--markdown]                   the option reference
  dioscope --help | --version

Exit codes: 0 ok, 1 I/O errors during the run, 2 bad input (nothing written),
128+N stopped by signal N (partial result printed and marked interrupted).

OPTIONS (fio's names, units and defaults; 4k = 4096, 1m, 1g, %, times in s/ms/us/m/h):
";

fn eprint_err(msg: &str) -> i32 {
    eprintln!("dioscope: error: {msg}");
    2
}

pub fn main(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("-h") | Some("--help") | Some("help") => {
            print!("{USAGE}{}", job::options::help_text());
            0
        }
        Some("--version") | Some("-V") => {
            println!("dioscope {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("options") => {
            if args.get(1).map(String::as_str) == Some("--markdown") {
                print!("{}", job::options::markdown_table());
            } else {
                print!("{}", job::options::help_text());
            }
            0
        }
        Some("run") => run(&args[1..]),
        Some("doctor") => doctor(&args[1..]),
        _ => run(&args),
    }
}

/// The context line: engines, then the environment (kernel, CPU, memory,
/// each target with its file system, device and queue limits).
fn context_line(plan: &Plan, env: &diag::Environment) -> String {
    let mut engines: Vec<&str> = Vec::new();
    for j in &plan.jobs {
        let e = j.ioengine.as_str();
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    let targets = if env.targets.is_empty() {
        " · no target (null engine)"
    } else {
        ""
    };
    format!("engine {} · {}{targets}", engines.join(","), env.one_line())
}

fn run(args: &[String]) -> i32 {
    dioscope_sys::signal::install();
    let plan = match job::parse_args(args) {
        Ok(p) => p,
        Err(e) => return eprint_err(&e.to_string()),
    };
    // The output file must be writable before anything is run.
    if let Some(out) = &plan.global.output {
        let dir = Path::new(out)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return eprint_err(&format!(
                "--output={out}: directory {} does not exist; create it or choose another path",
                dir.display()
            ));
        }
    }
    let destroy = plan.global.destroy_data_on.clone();
    let allow_any = plan.jobs.iter().any(|j| j.allow_mounted_write);
    let check_write = move |dev: &Path| -> Result<(), String> {
        dioscope_core::safety_check(dev, allow_any, &destroy)
    };
    let (resolved, table) = match runner::prepare(&plan, &check_write) {
        Ok(x) => x,
        Err(e) => {
            eprint_err(&e.to_string());
            // A stop signal during layout: nothing ran, so there is no result
            // to write; the exit status says which signal ended it.
            let sig = dioscope_sys::signal::last_signal();
            return if dioscope_sys::signal::stop_count() > 0 && sig > 0 {
                128 + sig
            } else {
                2
            };
        }
    };
    let opts = RunOptions {
        progress: dioscope_sys::proc::stderr_is_tty() && !plan.global.no_progress,
        destroy_data_on: plan.global.destroy_data_on.clone(),
    };
    let mut hooks = DiagHooks::new(&table);
    let mut profiler = plan.global.profile.then(Profiler::new);
    let result = match profiler.as_mut() {
        Some(p) => runner::execute(resolved, &table, &opts, &mut p.hooks(&mut hooks)),
        None => runner::execute(resolved, &table, &opts, &mut hooks),
    };
    let profile = profiler.map(|p| p.finish(&result));
    let diagnosis = diag::diagnose(&result, &hooks);

    // Remove what this run created when asked (the default job's scratch
    // file always). Files dioscope did not create are never removed.
    let remove = plan.is_default_job || plan.jobs.iter().any(|j| j.unlink);
    let created = table.created_files();
    drop(table);
    if remove {
        for p in &created {
            let _ = std::fs::remove_file(p);
            dioscope_sys::signal::unregister_scratch(p);
        }
    }

    let text = match plan.global.output_format {
        OutputFormat::Normal => {
            let mut context = context_line(&plan, &diagnosis.environment);
            for l in diagnosis.device_lines() {
                context.push_str("\n  ");
                context.push_str(&l);
            }
            let mut text = report::text::render(&result, &context, &diagnosis.finding_lines());
            if let Some(p) = &profile {
                text.push_str(&profile::render_text(p));
            }
            text
        }
        OutputFormat::Json | OutputFormat::JsonPlus => {
            let mut extra = diagnosis.json_extra();
            if let Some(p) = &profile {
                extra.insert("profile".into(), serde_json::to_value(p).unwrap_or_default());
            }
            report::json::render_with_disks(
                &result,
                plan.global.output_format == OutputFormat::JsonPlus,
                extra,
                diagnosis.disk_util(),
            )
        }
    };
    match &plan.global.output {
        Some(path) => {
            if let Err(e) = dioscope_core::outfile::write_atomic(Path::new(path), text.as_bytes()) {
                eprintln!("dioscope: error: cannot write --output={path}: {e}");
                print!("{text}");
                return 1;
            }
        }
        None => print!("{text}"),
    }
    if result.interrupted {
        let sig = result.signal;
        return if sig > 0 { 128 + sig } else { 130 };
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
            runner::hint::io_error_hint(e, path, &result)
        );
    }
    if result.verify_failures() > 0 {
        eprintln!(
            "dioscope: error: verify found {} bad blocks (offsets in the result); the data on the target is not what was written",
            result.verify_failures()
        );
    }
    if result.first_error().is_some() || result.io_errors() > 0 || result.verify_failures() > 0 {
        return 1;
    }
    0
}

/// `dioscope doctor TARGET`: the workload-free checks as a checklist (or
/// JSON). Exit 0 when nothing is critical, 1 when a check fails, 2 when the
/// target does not exist or the arguments are wrong.
fn doctor(args: &[String]) -> i32 {
    let mut json = false;
    let mut target: Option<&str> = None;
    for a in args {
        match a.as_str() {
            "--output-format=json" | "--output-format=json+" => json = true,
            "--output-format=normal" => json = false,
            s if s.starts_with("--") => {
                return eprint_err(&format!(
                    "doctor: unknown option {s}; the only option is --output-format=json \
                     (e.g. dioscope doctor /dev/nvme0n1 --output-format=json)"
                ))
            }
            s if target.is_none() => target = Some(s),
            s => {
                return eprint_err(&format!(
                    "doctor: one target at a time, got a second one: {s}"
                ))
            }
        }
    }
    let Some(target) = target else {
        return eprint_err(
            "doctor needs a target: dioscope doctor /dev/sdX or dioscope doctor FILE",
        );
    };
    let path = Path::new(target);
    let mut r = diag::doctor(path);
    let missing =
        r.environment.targets.first().map(|t| t.kind) == Some(diag::env::TargetKind::Missing);
    if !missing {
        let openers: Vec<diag::Opener> = dioscope_core::safety::other_openers(path)
            .into_iter()
            .map(|o| diag::Opener {
                pid: o.pid,
                comm: o.comm,
                writable: o.writable,
            })
            .collect();
        let findings = if openers.is_empty() {
            Vec::new()
        } else {
            vec![diag::Finding::OtherOpeners {
                target: target.to_string(),
                openers,
            }]
        };
        r.add_check(Check::from_findings(
            "other openers",
            "no other process has it open",
            findings,
        ));
    }
    if json {
        match serde_json::to_string_pretty(&r) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("dioscope: error: cannot render the report: {e}");
                return 1;
            }
        }
    } else {
        print!("{}", r.render_text());
    }
    if missing {
        eprintln!(
            "dioscope: error: {target} does not exist; give an existing file or block device"
        );
        2
    } else if r.failed() || r.worst() == Some(diag::Severity::Critical) {
        1
    } else {
        0
    }
}
