//! `dioscope sweep JOB.fio --vary OPT=v1|v2 … [--pivot ROW,COL]`: the
//! cross product of option values, each cell run with its trials, the
//! sweep's JSON written after every cell (so `--resume FILE` runs only the
//! cells not done), then the table, JSON or CSV.
//!
//! Targets are opened per cell but laid out once: a file the first cell
//! created and filled is reused as it is by the others.

use super::cli::{self, Arg, Cli, Flag, Value};
use super::{eprint_err, Command};
use crate::experiment::sweep::{parse_axis, shuffled, Axis, CellStatus, Order, Sweep, SweepCell};
use crate::job::parse::{apply, validate, Origin, RawOpt};
use crate::job::{self, Plan};
use crate::render::{self, Format, SWEEP_FORMATS};
use std::time::Instant;

pub const COMMAND: Command = Command {
    name: "sweep",
    usage: &[
        (
            "sweep JOBFILE... --vary 'OPT=V1|V2'",
            "run the cross product of the values (one --vary per option;\n\
             values separated by '|', e.g. --vary 'bs=4k,64k|1m'), each\n\
             cell with --trials=N or auto; the sweep's JSON is written to\n\
             --output (default dioscope-sweep.json) after every cell",
        ),
        (
            "sweep ... --pivot=ROW,COL",
            "a table of ROW × COL, each cell mean ± σ [95 % CI] (trials) [findings]\n\
             (--metrics=bw,sys_cpu_us_per_io); --order=given|random|interleaved;\n\
             --output-format=normal|json|csv",
        ),
        (
            "sweep --resume=SWEEP.json",
            "run only the cells an interrupted sweep has not done",
        ),
    ],
    cli: &CLI,
    main,
};

fn sweep_formats() -> Vec<&'static str> {
    SWEEP_FORMATS.iter().map(|f| f.name).collect()
}

/// sweep's flags; other `--OPTION=VALUE` are job options for every cell.
pub static CLI: Cli = Cli {
    positional: "JOBFILE...",
    flags: &[
        Flag {
            name: "vary",
            short: None,
            value: Value::Text("OPT=V1|V2"),
            example: "bs=4k|64k",
            help: "run every value of OPT (one --vary per option; values separated by '|')",
        },
        Flag {
            name: "pivot",
            short: None,
            value: Value::Text("ROW,COL"),
            example: "iodepth,bs",
            help: "print a table of ROW × COL",
        },
        Flag {
            name: "metrics",
            short: None,
            value: Value::Text("METRIC,..."),
            example: "bw,sys_cpu_us_per_io",
            help: "the metrics of the table (default iops)",
        },
        Flag {
            name: "order",
            short: None,
            value: Value::Choice(&["given", "random", "interleaved"]),
            example: "random",
            help: "the order the cells run in",
        },
        Flag {
            name: "seed",
            short: None,
            value: Value::Text("N"),
            example: "42",
            help: "the seed of --order=random",
        },
        Flag {
            name: "resume",
            short: None,
            value: Value::Input,
            example: "dioscope-sweep.json",
            help: "run only the cells this interrupted sweep has not done",
        },
        Flag {
            name: "output",
            short: None,
            value: Value::Output,
            example: "sweep.json",
            help: "the sweep's JSON, written after every cell (default dioscope-sweep.json)",
        },
        Flag {
            name: "output-format",
            short: None,
            value: Value::Names(sweep_formats),
            example: "json",
            help: "how the result is printed",
        },
    ],
    subcommands: &[],
    job_options: true,
};

struct Args {
    base: Vec<String>,
    axes: Vec<Axis>,
    order: Option<Order>,
    seed: Option<u64>,
    pivot: Option<(String, String)>,
    metrics: Vec<String>,
    resume: Option<String>,
    output: Option<String>,
    format: &'static Format<Sweep>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        base: Vec::new(),
        axes: Vec::new(),
        order: None,
        seed: None,
        pivot: None,
        metrics: Vec::new(),
        resume: None,
        output: None,
        format: &SWEEP_FORMATS[0],
    };
    for w in cli::parse("sweep", &CLI, args)? {
        let (k, v) = match w {
            // Job files and job options, for every cell.
            Arg::Word(x) => {
                a.base.push(x);
                continue;
            }
            Arg::Flag(k, v) => (k, v.unwrap_or_default()),
        };
        match k {
            "vary" => {
                let ax = parse_axis(&v)?;
                if a.axes.iter().any(|x| x.option == ax.option) {
                    return Err(format!(
                        "--vary {}: the option is varied twice; give all its values in one --vary",
                        ax.option
                    ));
                }
                a.axes.push(ax);
            }
            "pivot" => {
                let (r, c) = v.split_once(',').ok_or_else(|| {
                    format!("--pivot={v}: write ROW,COL (e.g. --pivot=filename,bs)")
                })?;
                a.pivot = Some((r.trim().to_string(), c.trim().to_string()));
            }
            "metrics" => {
                for m in v.split(',').filter(|m| !m.trim().is_empty()) {
                    crate::experiment::compare::parse_metrics(m)
                        .map_err(|e| format!("--metrics: {e}"))?;
                    a.metrics.push(m.trim().to_string());
                }
            }
            "order" => a.order = Some(Order::parse(&v)?),
            "seed" => {
                a.seed = Some(
                    v.parse()
                        .map_err(|_| format!("--seed={v}: a whole number, e.g. --seed=42"))?,
                )
            }
            "resume" => a.resume = Some(v),
            "output" => a.output = Some(v),
            "output-format" => {
                a.format = render::find(SWEEP_FORMATS, &v)
                    .ok_or_else(|| render::unknown(SWEEP_FORMATS, &v))?
            }
            other => return Err(cli::unhandled("sweep", other)),
        }
    }
    Ok(a)
}

/// The base plan with one cell's values applied to every job.
fn cell_plan(base: &Plan, axes: &[Axis], values: &[String]) -> Result<Plan, String> {
    let mut plan = base.clone();
    for (ax, v) in axes.iter().zip(values) {
        let raw = RawOpt {
            key: ax.option.clone(),
            value: Some(v.clone()),
            origin: Origin::CommandLine,
        };
        let mut global = plan.global.clone();
        for j in &mut plan.jobs {
            apply(&raw, j, &mut global).map_err(|e| format!("--vary {}={v}: {e}", ax.option))?;
        }
        plan.global = global;
    }
    for j in &plan.jobs {
        validate(j).map_err(|e| format!("cell {}: {e}", values.join(" ")))?;
    }
    plan.global.output = None;
    Ok(plan)
}

fn main(args: &[String]) -> i32 {
    dioscope_sys::signal::install();
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => return eprint_err(&e),
    };
    let mut sweep = match setup(&a) {
        Ok(s) => s,
        Err(e) => return eprint_err(&e),
    };
    let out_path = a
        .output
        .clone()
        .or_else(|| a.resume.clone())
        .unwrap_or_else(|| "dioscope-sweep.json".into());
    let base = match job::parse_args(&sweep.base_args) {
        Ok(p) => p,
        Err(e) => return eprint_err(&e.to_string()),
    };
    // The sweep's state file: never a target, a job file or (when it is not
    // the state being resumed and updated) another input.
    let targets = crate::runner::target_paths(&base);
    let mut inputs = crate::runner::input_paths(&base);
    if let Some(r) = a.resume.as_ref().filter(|r| **r != out_path) {
        inputs.push(r.into());
    }
    crate::outfile::protect(&targets, &inputs);
    let rules = crate::outfile::Rules::new("--output")
        .targets(&targets)
        .inputs(&inputs);
    if let Err(e) = crate::outfile::check(std::path::Path::new(&out_path), &rules) {
        return eprint_err(&format!(
            "{e}{}",
            if e.why.contains("stream") {
                " (the sweep's JSON is also its --resume state, rewritten after each cell)"
            } else {
                ""
            }
        ));
    }
    // Every cell's options are checked before anything runs.
    let mut plans = Vec::new();
    for c in &sweep.cells {
        match cell_plan(&base, &sweep.axes, &c.values) {
            Ok(p) => plans.push(p),
            Err(e) => return eprint_err(&e),
        }
    }
    let trials = base.jobs.iter().map(|j| j.trials).max().unwrap_or(1);
    if sweep.order == Order::Interleaved && trials == 0 {
        return eprint_err(
            "--order=interleaved runs one trial of every cell per pass: give a fixed --trials=N \
             (or use --order=random with --trials=auto)",
        );
    }
    let code = run_cells(&mut sweep, &plans, trials, &out_path);
    let text = a.format.exporter.render(&sweep);
    super::stdout(&text);
    code
}

/// A new sweep from the arguments, or the one `--resume` names (checked
/// against the arguments when both are given).
fn setup(a: &Args) -> Result<Sweep, String> {
    let mut s = match &a.resume {
        Some(path) => {
            let text = crate::infile::read(path, "--resume", crate::infile::MAX_INPUT_BYTES)?;
            let s = Sweep::from_json(&text).map_err(|e| format!("--resume={path}: {e}"))?;
            if !a.base.is_empty() && a.base != s.base_args {
                return Err(format!(
                    "--resume={path} is a sweep of '{}', not of '{}'; resume with --resume alone",
                    s.base_args.join(" "),
                    a.base.join(" ")
                ));
            }
            if !a.axes.is_empty() && a.axes != s.axes {
                return Err(format!(
                    "--resume={path} varies other options or values; resume with --resume alone"
                ));
            }
            s
        }
        None => {
            if a.axes.is_empty() {
                return Err(
                    "sweep needs at least one --vary 'OPT=V1|V2' (e.g. --vary 'iodepth=1|32')"
                        .into(),
                );
            }
            // No job file and no --name: the default job, as `dioscope run`.
            let trials = a
                .base
                .iter()
                .find_map(|x| x.strip_prefix("--trials="))
                .unwrap_or("")
                .to_string();
            let seed = a.seed.unwrap_or_else(dioscope_sys::clock::now_ns);
            Sweep::new(
                a.base.clone(),
                a.axes.clone(),
                a.order.unwrap_or(Order::Given),
                seed,
                trials,
            )
        }
    };
    if let Some((r, c)) = &a.pivot {
        for x in [r, c] {
            if !s.axes.iter().any(|ax| &ax.option == x) {
                return Err(format!(
                    "--pivot: '{x}' is not varied; choose from {}",
                    s.axes
                        .iter()
                        .map(|ax| ax.option.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        s.pivot = a.pivot.clone();
    }
    if !a.metrics.is_empty() {
        s.table_metrics = a.metrics.clone();
    }
    s.interrupted = false;
    Ok(s)
}

/// Write the sweep's JSON (after every cell: an interruption loses at
/// most the cell that was running).
fn save(sweep: &Sweep, path: &str) {
    // Checked again each time (against the targets and inputs protected
    // at the start): the sweep may have run for hours.
    let written = crate::outfile::check(
        std::path::Path::new(path),
        &crate::outfile::Rules::new("--output"),
    )
    .map_err(|e| std::io::Error::other(e.why))
    .and_then(|out| crate::outfile::write_result(&out, sweep.to_json().as_bytes()));
    if let Err(e) = written {
        eprintln!("dioscope: warning: cannot write the sweep to {path}: {e}");
    }
}

/// Run the cells not done, in the sweep's order. Returns the exit code.
fn run_cells(sweep: &mut Sweep, plans: &[Plan], trials: u32, out_path: &str) -> i32 {
    let n = sweep.cells.len();
    let (steps, passes) = steps(sweep, trials);
    let prior = sweep.wall_s;
    let t0 = Instant::now();
    let total = steps.len();
    let mut step_times: Vec<f64> = Vec::new();
    let mut failed = false;
    let mut created: Vec<crate::targets::CreatedFile> = Vec::new();
    for (k, &(c, _pass)) in steps.iter().enumerate() {
        if dioscope_sys::signal::stop_count() > 0 {
            break;
        }
        let mut plan = plans[c].clone();
        if passes > 1 {
            for j in &mut plan.jobs {
                j.trials = 1;
            }
        }
        announce(sweep, c, k, total, &step_times, t0);
        let ts = Instant::now();
        // Files a cell would remove (scratch, unlink=1) stay until the end:
        // targets are laid out once per sweep, not per cell.
        let res = crate::pipeline::execute_keeping(&plan, true);
        let wall = ts.elapsed().as_secs_f64();
        step_times.push(wall);
        let cell = &mut sweep.cells[c];
        match res {
            Err(code) if code >= 128 => {
                sweep.interrupted = true;
                break;
            }
            Err(_) => {
                cell.status = CellStatus::Failed;
                cell.error = Some("the run could not be set up (the error is above)".into());
                failed = true;
            }
            Ok(mut done) => {
                for c in done.created.drain(..) {
                    if !created
                        .iter()
                        .any(|x: &crate::targets::CreatedFile| x.path == c.path)
                    {
                        created.push(c);
                    }
                }
                if done.result.interrupted {
                    // A partial cell is not a result: it runs again on resume.
                    sweep.interrupted = true;
                    break;
                }
                failed |= !record(cell, done, wall, passes);
            }
        }
        sweep.account(t0.elapsed().as_secs_f64(), prior);
        save(sweep, out_path);
    }
    for c in &created {
        c.remove();
    }
    sweep.account(t0.elapsed().as_secs_f64(), prior);
    save(sweep, out_path);
    eprintln!(
        "dioscope sweep: {} of {} cells done; written to {out_path}{}",
        sweep
            .cells
            .iter()
            .filter(|c| c.status == CellStatus::Done)
            .count(),
        n,
        if sweep.interrupted {
            format!(" (interrupted: dioscope sweep --resume={out_path} runs the rest)")
        } else {
            String::new()
        }
    );
    if sweep.interrupted {
        let sig = dioscope_sys::signal::last_signal();
        return if sig > 0 { 128 + sig } else { 130 };
    }
    if failed {
        1
    } else {
        0
    }
}

/// The runs still to do as (cell, pass), in the sweep's order, and the
/// passes: with `interleaved`, one trial of each cell per pass.
fn steps(sweep: &Sweep, trials: u32) -> (Vec<(usize, u32)>, u32) {
    let n = sweep.cells.len();
    let order: Vec<usize> = match sweep.order {
        Order::Random => shuffled(n, sweep.seed),
        _ => (0..n).collect(),
    };
    let passes = if sweep.order == Order::Interleaved {
        trials.max(1)
    } else {
        1
    };
    let mut steps: Vec<(usize, u32)> = Vec::new();
    for p in 0..passes {
        for &c in &order {
            let cell = &sweep.cells[c];
            let runs_needed = if passes > 1 { p as usize + 1 } else { 1 };
            if cell.status == CellStatus::Pending && cell.runs.len() < runs_needed {
                steps.push((c, p));
            }
        }
    }
    (steps, passes)
}

/// The progress line before run `k` of `total` (cell `c`): its values,
/// the time so far and the time left at the mean time per run.
fn announce(sweep: &Sweep, c: usize, k: usize, total: usize, step_times: &[f64], t0: Instant) {
    let eta = if step_times.is_empty() {
        "?".to_string()
    } else {
        let mean = step_times.iter().sum::<f64>() / step_times.len() as f64;
        format!("{:.0} s", mean * (total - k) as f64)
    };
    eprintln!(
        "[sweep {}/{} · {}] elapsed {:.0} s · ETA {eta}",
        k + 1,
        total,
        sweep
            .axes
            .iter()
            .zip(&sweep.cells[c].values)
            .map(|(a, v)| format!("{}={v}", a.option))
            .collect::<Vec<_>>()
            .join(" "),
        t0.elapsed().as_secs_f64()
    );
}

/// Keep a finished run in its cell: the run, its wall time and the time in
/// trials (ramps included). `false` when the run failed (I/O errors).
fn record(cell: &mut SweepCell, done: crate::pipeline::Finished, wall: f64, passes: u32) -> bool {
    let mut in_trials = 0.0;
    for g in &done.result.phases {
        let ramp = done
            .result
            .jobs
            .iter()
            .filter(|j| j.resolved.phase == g.phase)
            .map(|j| j.resolved.spec.ramp_time_us)
            .max()
            .unwrap_or(0) as f64
            / 1e6;
        in_trials += g
            .trials
            .iter()
            .map(|t| t.wall_ns as f64 / 1e9 + ramp)
            .sum::<f64>();
    }
    cell.wall_s += wall;
    cell.trials_s += in_trials.min(wall);
    let errors = done.result.io_errors();
    let code = crate::pipeline::exit_code(&done.result);
    cell.runs.push(done.doc);
    if code != 0 {
        cell.status = CellStatus::Failed;
        cell.error = Some(format!("{errors} I/O error(s); the run's result is kept"));
        return false;
    }
    if cell.runs.len() as u32 >= passes {
        cell.status = CellStatus::Done;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_table_parses_in_both_forms() {
        crate::commands::cli::check_both_forms(&CLI, &["--name=x", "--ioengine=null"], parse);
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments_and_cells() {
        let a = parse(&s(&[
            "--name=x",
            "--ioengine=null",
            "--vary",
            "bs=4k,64k|1m",
            "--vary=iodepth=1|32",
            "--pivot=iodepth,bs",
            "--order=random",
        ]))
        .unwrap();
        assert_eq!(a.base, s(&["--name=x", "--ioengine=null"]));
        assert_eq!(a.axes.len(), 2);
        assert_eq!(a.order, Some(Order::Random));
        let sw = setup(&a).unwrap();
        assert_eq!(sw.cells.len(), 4);
        let base = job::parse_args(&sw.base_args).unwrap();
        let p = cell_plan(&base, &sw.axes, &sw.cells[0].values).unwrap();
        assert_eq!(p.jobs[0].iodepth, 1);
        assert_eq!(p.jobs[0].bs[1], crate::job::BlockSizes::Fixed(65536));
        assert!(p.jobs[0]
            .given
            .iter()
            .any(|(k, v)| k == "iodepth" && v == "1"));
        assert!(parse(&s(&["--name=x", "--vary=bs=4k", "--vary=bs=8k"])).is_err());
        assert!(setup(&parse(&s(&["--name=x"])).unwrap())
            .unwrap_err()
            .contains("--vary"));
        let bad = parse(&s(&["--name=x", "--vary=iodepth=1|z"])).unwrap();
        let sw = setup(&bad).unwrap();
        let base = job::parse_args(&sw.base_args).unwrap();
        assert!(cell_plan(&base, &sw.axes, &sw.cells[1].values).is_err());
    }
}
