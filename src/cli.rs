//! Commands: run (also the bare fio-style invocation), doctor, options, help.

use dioscope_core::job::{self, OutputFormat, Plan};
use dioscope_core::report;
use dioscope_core::runner::{self, NoHooks, RunOptions};
use std::path::Path;

const USAGE: &str = "\
dioscope — benchmark and diagnose direct I/O (O_DIRECT) on Linux

USAGE:
  dioscope run [JOBFILE...] [--OPTION=VALUE...]   run jobs (fio job files and options)
  dioscope [JOBFILE...] [--OPTION=VALUE...]       the same, as fio is invoked
  dioscope run                                    the default job: 4 KiB random reads,
                                                  io_uring, QD 32, O_DIRECT, 1 GiB scratch
                                                  file here, 3 trials, removed afterwards
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
        _ => run(&args),
    }
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn context_line(plan: &Plan, r: &runner::RunResult) -> String {
    let engines: Vec<&str> = {
        let mut v: Vec<&str> = plan.jobs.iter().map(|j| j.ioengine.as_str()).collect();
        v.dedup();
        v
    };
    let targets: Vec<String> = r
        .targets
        .iter()
        .map(|t| {
            format!(
                "{} ({}, {}, dio align {} from {})",
                t.path,
                match t.kind {
                    dioscope_core::target::TargetKind::File => "file",
                    dioscope_core::target::TargetKind::BlockDevice => "block device",
                },
                report::human_bytes(t.size as f64),
                t.offset_align,
                t.align_source
            )
        })
        .collect();
    format!(
        "engine {}; target {}; kernel {}; {} CPUs",
        engines.join(","),
        if targets.is_empty() {
            "none (null engine)".to_string()
        } else {
            targets.join(", ")
        },
        kernel(),
        dioscope_sys::proc::ncpus()
    )
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
    let result = runner::execute(resolved, &table, &opts, &mut NoHooks);

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
        OutputFormat::Normal => report::text::render(&result, &context_line(&plan, &result), &[]),
        OutputFormat::Json => report::json::render(&result, false, Default::default()),
        OutputFormat::JsonPlus => report::json::render(&result, true, Default::default()),
    };
    match &plan.global.output {
        Some(path) => {
            if let Err(e) = report::write_atomic(Path::new(path), text.as_bytes()) {
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
            "dioscope: error: job '{job}': {} of {} bytes at offset {} of {} failed: {} (errno {}); {} I/O error(s) in all; {}",
            if e.write { "write" } else { "read" },
            e.len,
            e.offset,
            if path.is_empty() { "?" } else { path },
            std::io::Error::from_raw_os_error(e.errno),
            e.errno,
            result.io_errors(),
            if went_on {
                "the job went on (continue_on_error)"
            } else {
                "the run stopped there and the result is partial (continue_on_error=all counts errors and goes on)"
            }
        );
        eprintln!(
            "dioscope: hint: {}",
            report::io_error_hint(e, path, &result)
        );
        return 1;
    }
    if result.io_errors() > 0 {
        return 1;
    }
    0
}
