//! `dioscope run [JOBFILE…] [--OPTION=VALUE…]` (and fio's invocation without
//! the command name): the command's face — answer `--cmdhelp`-style
//! questions, then drive the run pipeline ([`crate::pipeline`]: check,
//! prepare, run, build the result, write) and write `--report`.

use super::{eprint_err, Command};
use crate::pipeline::{
    add_raw_names, execute, exit_code, interrupt_summary, report_errors, validate, write_output,
};
use crate::render::{self, Exporter};
use crate::runner;

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
    // fio's syntax: its flags and options have their own tables
    // (job::flags::FLAGS, job::options), which completions and man read.
    cli: &super::cli::Cli::NONE,
    main,
};
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
    // The interim reports kept for `--output` come first in the file.
    let text = std::mem::take(&mut done.interim) + &formats.render(&done.doc);
    if let Err(code) = write_output(&plan, &text) {
        return code;
    }
    if plan.global.bandwidth_log {
        match runner::logs::agg::write(&done.result, std::path::Path::new(".")) {
            Ok(notes) => notes.iter().for_each(|n| eprintln!("dioscope: note: {n}")),
            Err(e) => return eprint_err(&e),
        }
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
    if let Some(line) = interrupt_summary(&done.result, plan.global.output.as_deref()) {
        eprintln!("{line}");
    }
    exit_code(&done.result)
}

/// `--showcmd`, `--parse-only`, `--cmdhelp`, `--enghelp`: answered without
/// running anything; `Some(exit code)` when the invocation was one of them.
fn answer_without_running(args: &[String]) -> Option<i32> {
    let (flags, rest) = match crate::job::flags::split(args) {
        Ok(x) => x,
        Err(e) => return Some(eprint_err(&e)),
    };
    if flags.debug == Some(crate::job::debug::Request::Help) {
        crate::console::stdout(&crate::job::debug::help_text());
        return Some(0);
    }
    if let Some(what) = &flags.cmdhelp {
        return Some(match crate::job::flags::cmdhelp(what) {
            Ok(text) => {
                crate::console::stdout(&text);
                0
            }
            Err(e) => eprint_err(&e),
        });
    }
    if let Some(what) = &flags.enghelp {
        return Some(match crate::job::flags::enghelp(what) {
            Ok(text) => {
                crate::console::stdout(&text);
                0
            }
            Err(e) => eprint_err(&e),
        });
    }
    if flags.showcmd {
        return Some(match crate::job::flags::showcmd(&rest) {
            Ok(text) => {
                crate::console::stdout(&text);
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
