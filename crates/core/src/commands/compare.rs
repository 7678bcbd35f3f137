//! `dioscope compare A.json B.json`, `compare base/*.json -- new/*.json`
//! (one trial per file; dioscope's or fio's JSON; `SWEEP.json@OPT=V` takes
//! a sweep's cell) and `compare --run A.fio B.fio` (runs both, interleaved
//! A B B A …, until the verdict is clear or a limit is reached).
//!
//! Exit codes: 0 no regression beyond the threshold, 1 a significant
//! regression, 2 bad or incomparable input, 3 a run of `--run` could not
//! finish (I/O errors or a failed set-up), 4 a significant change while the
//! sides' environments differed (confounded), 128+N stopped by signal N.

use super::cli::{self, Arg, Cli, Flag, Value};
use super::{eprint_err, Command};
use crate::experiment::compare::{compare, design, gates, parse_metrics, Looks, RunLog};
use crate::experiment::sequential::{self, Step, Stop};
use crate::experiment::sweep::Sweep;
use crate::experiment::{CompareSettings, Comparison, Input};
use crate::job::{self, Plan};
use crate::render::{self, Format, COMPARISON_FORMATS};
use crate::results::RunDoc;
use crate::stats::significance::min_trials_per_side;

pub const COMMAND: Command = Command {
    name: "compare",
    usage: &[
        (
            "compare A.json B.json",
            "did B change? per job and metric: change with its interval,\n\
             better/worse (--threshold=2%); exit 1 on a significant regression,\n\
             4 when it is confounded with a difference in the environment,\n\
             2 when the sides differ in what --expect-different=OPT,... does\n\
             not name (--allow-different: anything); --gate=iops,lat_p99: the\n\
             metrics that decide the exit code; --output-format=normal|json|markdown",
        ),
        (
            "compare A1.json ... -- B1.json ...",
            "each file one trial (dioscope's or fio's own JSON);\n\
             SWEEP.json@OPT=V,OPT2=W takes one cell of a sweep",
        ),
        (
            "compare --run A.fio B.fio",
            "run both, interleaved (A B B A ...), until the verdict is clear\n\
             (--max-trials=30 per side, --max-time=10m); other --OPTION=VALUE\n\
             apply to both; exit 3 when a run cannot finish",
        ),
    ],
    cli: &CLI,
    main,
};

/// Everything `compare` was asked, checked.
struct Args {
    a: Vec<String>,
    b: Vec<String>,
    settings: CompareSettings,
    format: &'static Format<Comparison>,
    output: Option<String>,
    run: bool,
    max_trials: usize,
    max_time_s: f64,
    /// Options for both runs of `--run`.
    pass: Vec<String>,
}

fn comparison_formats() -> Vec<&'static str> {
    COMPARISON_FORMATS.iter().map(|f| f.name).collect()
}

/// compare's flags (with `--run`, other `--OPTION=VALUE` are job options
/// for both sides).
pub static CLI: Cli = Cli {
    positional: "A.json B.json | A1.json ... -- B1.json ... | --run A.fio B.fio",
    flags: &[
        Flag {
            name: "threshold",
            short: None,
            value: Value::Text("PCT"),
            example: "2%",
            help: "a change smaller than this is no change (default 2%)",
        },
        Flag {
            name: "expect-different",
            short: None,
            value: Value::Text("OPT,..."),
            example: "iodepth,kernel",
            help: "the options and environment facts that are meant to differ between the sides",
        },
        Flag {
            name: "allow-different",
            short: None,
            value: Value::None,
            example: "",
            help: "compare whatever differs between the sides",
        },
        Flag {
            name: "gate",
            short: None,
            value: Value::Text("METRIC,..."),
            example: "iops,lat_p99",
            help: "the metrics that decide the exit code (default: all)",
        },
        Flag {
            name: "output-format",
            short: None,
            value: Value::Names(comparison_formats),
            example: "json",
            help: "how the comparison is printed",
        },
        Flag {
            name: "output",
            short: None,
            value: Value::Output,
            example: "cmp.json",
            help: "write the comparison to this file instead of standard output",
        },
        Flag {
            name: "run",
            short: None,
            value: Value::None,
            example: "",
            help: "the two files are job files: run both, interleaved, until the verdict is clear",
        },
        Flag {
            name: "max-trials",
            short: None,
            value: Value::Text("N"),
            example: "30",
            help: "with --run: at most N trials per side (default 30)",
        },
        Flag {
            name: "max-time",
            short: None,
            value: Value::Text("TIME"),
            example: "10m",
            help: "with --run: stop after this long (default 10m)",
        },
    ],
    subcommands: &[],
    job_options: true,
};

fn parse(args: &[String]) -> Result<Args, String> {
    let mut s = CompareSettings::default();
    let mut sides: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut side = 0;
    let mut split = false;
    let mut format = &COMPARISON_FORMATS[0];
    let (mut output, mut run) = (None, false);
    let (mut max_trials, mut max_time_s) = (30usize, 600.0);
    let mut pass = Vec::new();
    for w in cli::parse("compare", &CLI, args)? {
        let (k, v) = match w {
            Arg::Word(x) if x == "--" => {
                if split {
                    return Err("compare takes one '--' (between the A files and the B files)".into());
                }
                split = true;
                side = 1;
                continue;
            }
            // A job option: only --run has jobs to apply it to.
            Arg::Word(x) if x.starts_with("--") => {
                pass.push(x);
                continue;
            }
            Arg::Word(x) => {
                sides[side].push(x);
                continue;
            }
            Arg::Flag(k, v) => (k, v.unwrap_or_default()),
        };
        let v = v.as_str();
        match k {
            "threshold" => s.threshold_pct = threshold_pct(v)?,
            "expect-different" => {
                s.expect.extend(
                    v.split(',')
                        .filter(|x| !x.trim().is_empty())
                        .map(|x| x.trim().to_string()),
                );
            }
            "allow-different" => s.allow_all = true,
            "gate" => s.gate = parse_metrics(v).map_err(|e| format!("--gate: {e}"))?,
            "output-format" => {
                format = render::find(COMPARISON_FORMATS, v)
                    .ok_or_else(|| render::unknown(COMPARISON_FORMATS, v))?;
            }
            "output" => output = Some(v.to_string()),
            "run" => run = true,
            "max-trials" => {
                max_trials = v
                    .parse()
                    .ok()
                    .filter(|&n: &usize| n >= 1)
                    .ok_or_else(|| format!("--max-trials={v}: a whole number ≥ 1, e.g. --max-trials=30"))?;
            }
            "max-time" => {
                let us = job::units::parse_time_us(v, 1_000_000)
                    .map_err(|e| format!("--max-time={v}: {e} (e.g. --max-time=10m)"))?;
                max_time_s = us as f64 / 1e6;
            }
            other => return Err(cli::unhandled("compare", other)),
        }
    }
    if !run {
        if let Some(x) = pass.first() {
            return Err(format!(
                "{} (job options only with --run)",
                cli::unknown("compare", &CLI, x)
            ));
        }
    }
    let (a, b) = split_sides(sides, split)?;
    check_run(run, &a, &b, max_trials)?;
    if run {
        // The looks of the sequential design: after every pair from the
        // floor of the U test to --max-trials.
        s.sequential = Some(Looks {
            min_n: min_trials_per_side(s.alpha).min(max_trials),
            max_n: max_trials,
        });
    }
    Ok(Args {
        a,
        b,
        settings: s,
        format,
        output,
        run,
        max_trials,
        max_time_s,
        pass,
    })
}

/// `--threshold`'s value: a percentage ≥ 0, with or without `%`.
fn threshold_pct(t: &str) -> Result<f64, String> {
    t.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("--threshold={t}: give a percentage, e.g. --threshold=2%"))
}

/// The A and B files: two files without `--`, else the files before and
/// after it; neither side empty.
fn split_sides(sides: [Vec<String>; 2], split: bool) -> Result<(Vec<String>, Vec<String>), String> {
    let [mut a, mut b] = sides;
    if !split {
        if a.len() != 2 {
            return Err(format!(
                "compare needs two results (compare A.json B.json), or two sets \
                 separated by '--' (compare a1.json a2.json -- b1.json b2.json); got {} file(s)",
                a.len()
            ));
        }
        b = vec![a.pop().expect("two")];
    }
    if a.is_empty() || b.is_empty() {
        return Err(
            "compare: a side has no files; put the A files before '--' and the B files after it"
                .into(),
        );
    }
    Ok((a, b))
}

/// `--run` takes one job file a side and at most 100 trials a side.
fn check_run(run: bool, a: &[String], b: &[String], max_trials: usize) -> Result<(), String> {
    if run && (a.len() != 1 || b.len() != 1) {
        return Err("compare --run takes two job files: compare --run A.fio B.fio".into());
    }
    if run && max_trials > 100 {
        // The boundaries are calibrated by simulation in O(max-trials²)
        // per path: beyond 100 per side it would take minutes.
        return Err(format!(
            "--max-trials={max_trials}: compare --run looks at up to 100 trials per side; \
             give --max-trials=100 or fewer"
        ));
    }
    Ok(())
}

/// What compare reads and, with `--run`, what the runs write: the files of
/// both sides (a sweep's cell by its file), and the runs' targets and job
/// files.
fn side_paths(a: &Args) -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
    let (mut targets, mut inputs) = (Vec::new(), Vec::new());
    for f in a.a.iter().chain(&a.b) {
        let file = match f.rsplit_once('@') {
            Some((file, _)) if !std::path::Path::new(f).exists() => file,
            _ => f,
        };
        inputs.push(std::path::PathBuf::from(file));
        if a.run {
            if let Ok(p) = side_plan(f, &a.pass) {
                targets.extend(crate::runner::target_paths(&p));
                inputs.extend(crate::runner::input_paths(&p));
            }
        }
    }
    (targets, inputs)
}

/// Read one result file (or `SWEEP.json@OPT=V` cell) into its documents.
fn load(path: &str) -> Result<Vec<RunDoc>, String> {
    let (file, cell) = match path.rsplit_once('@') {
        Some((f, c)) if !std::path::Path::new(path).exists() => (f, Some(c)),
        _ => (path, None),
    };
    let text = crate::infile::read(file, "compare", crate::infile::MAX_INPUT_BYTES)?;
    let is_sweep = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some("sweep"));
    if is_sweep {
        let s = Sweep::from_json(&text).map_err(|e| format!("{file}: {e}"))?;
        let Some(sel) = cell else {
            return Err(format!(
                "{file} is a sweep: name a cell, e.g. {file}@{}",
                s.axes
                    .iter()
                    .map(|a| format!("{}={}", a.option, a.values[0]))
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        };
        let c = s.find_cell(sel).map_err(|e| format!("{file}: {e}"))?;
        if c.runs.is_empty() {
            return Err(format!(
                "{file}: cell '{sel}' has not run yet (resume the sweep)"
            ));
        }
        return Ok(c.runs.clone());
    }
    let doc = RunDoc::from_json(&text).map_err(|e| format!("{file}: {e}"))?;
    if doc.jobs.is_empty() {
        return Err(format!("{file}: the result has no jobs"));
    }
    Ok(vec![doc])
}

fn main(args: &[String]) -> i32 {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => return eprint_err(&e),
    };
    // The files read, and with --run the runs' targets: never replaced by
    // the comparison (checked before any work: exit 2).
    let (targets, inputs) = side_paths(&a);
    let rules = || {
        crate::outfile::Rules::new("--output")
            .targets(&targets)
            .inputs(&inputs)
            .streams()
    };
    if let Some(o) = &a.output {
        if let Err(e) = crate::outfile::check(std::path::Path::new(o), &rules()) {
            return eprint_err(&e.to_string());
        }
    }
    let c = if a.run {
        dioscope_sys::signal::install();
        match run_both(&a) {
            Ok(c) => c,
            Err(code) => return code,
        }
    } else {
        let mut docs = [Vec::new(), Vec::new()];
        for (i, files) in [&a.a, &a.b].into_iter().enumerate() {
            for f in files {
                match load(f) {
                    Ok(d) => docs[i].extend(d),
                    Err(e) => return eprint_err(&e),
                }
            }
        }
        let [da, db] = docs;
        let (fa, fb) = (a.a.clone(), a.b.clone());
        compare(
            &Input {
                label: "A",
                files: fa,
                docs: da,
            },
            &Input {
                label: "B",
                files: fb,
                docs: db,
            },
            &a.settings,
        )
    };
    let text = a.format.exporter.render(&c);
    match &a.output {
        Some(o) => {
            let written = crate::outfile::check(std::path::Path::new(o), &rules())
                .map_err(|e| std::io::Error::other(e.why))
                .and_then(|out| crate::outfile::write_result(&out, text.as_bytes()));
            if let Err(e) = written {
                eprintln!("dioscope: error: cannot write --output={o}: {e}");
                super::stdout(&text);
            }
        }
        None => super::stdout(&text),
    }
    if c.exit_code == 2 {
        eprintln!(
            "dioscope: error: {}",
            crate::render::compare_text::outcome_line(&c)
        );
    }
    if dioscope_sys::signal::stop_count() > 0 {
        let sig = dioscope_sys::signal::last_signal();
        return if sig > 0 { 128 + sig } else { 130 };
    }
    c.exit_code
}

/// The plan of one side of `--run`: the job file, the options for both,
/// one trial per run (the interleaving makes the trials).
fn side_plan(file: &str, pass: &[String]) -> Result<Plan, String> {
    let mut args = vec![file.to_string()];
    args.extend(pass.iter().cloned());
    args.push("--trials=1".into());
    let mut plan = job::parse_args(&args).map_err(|e| format!("{file}: {e}"))?;
    plan.global.output = None;
    Ok(plan)
}

/// `compare --run`: A B B A … until clear or a limit. `Err` is the exit code.
fn run_both(a: &Args) -> Result<Comparison, i32> {
    let plans = [
        side_plan(&a.a[0], &a.pass).map_err(|e| eprint_err(&e))?,
        side_plan(&a.b[0], &a.pass).map_err(|e| eprint_err(&e))?,
    ];
    let t0 = std::time::Instant::now();
    let mut docs: [Vec<RunDoc>; 2] = [Vec::new(), Vec::new()];
    let mut order = String::new();
    let pattern = [0usize, 1, 1, 0];
    let mut step = 0usize;
    // Scratch files stay for the next run of the side (laid out once);
    // removed when compare --run ends, however it ends.
    let mut created: Vec<crate::targets::CreatedFile> = Vec::new();
    let stopped_because = loop {
        let side = pattern[step % 4];
        step += 1;
        let label = if side == 0 { "A" } else { "B" };
        eprintln!(
            "dioscope compare --run: {label} run {} ({} A, {} B so far, {:.0} s)",
            docs[side].len() + 1,
            docs[0].len(),
            docs[1].len(),
            t0.elapsed().as_secs_f64()
        );
        let first = docs[0].is_empty() && docs[1].is_empty();
        match one_run(&plans[side], label, first, &mut created) {
            Ok(doc) => docs[side].push(doc),
            Err(code) => {
                remove_all(&created);
                return Err(code);
            }
        }
        order.push_str(label);
        if docs[0].len() == docs[1].len() {
            if let Some(why) = after_pair(a, &docs, t0.elapsed().as_secs_f64()) {
                break why;
            }
        }
    };
    remove_all(&created);
    let mut c = build(a, &docs);
    c.run = Some(RunLog {
        order,
        stopped_because,
        elapsed_s: t0.elapsed().as_secs_f64(),
    });
    Ok(c)
}

/// One run of a side; the files it laid out are added to `created`. `Err`
/// is the exit code: before any run, the run's own (bad input is 2); later
/// 3 (a run that could not start or finish); a signal's 128 + N.
fn one_run(
    plan: &Plan,
    label: &str,
    first: bool,
    created: &mut Vec<crate::targets::CreatedFile>,
) -> Result<RunDoc, i32> {
    let mut done = match crate::pipeline::execute_keeping(plan, true) {
        Ok(d) => d,
        Err(code) if code >= 128 => return Err(code),
        Err(code) => {
            eprintln!("dioscope: error: compare --run: the {label} run could not start (see above)");
            return Err(if first { code } else { 3 });
        }
    };
    created.append(&mut done.created);
    if done.result.interrupted {
        let sig = done.result.signal;
        return Err(if sig > 0 { 128 + sig } else { 130 });
    }
    if crate::pipeline::exit_code(&done.result) != 0 {
        eprintln!(
            "dioscope: error: compare --run: the {label} run had {} I/O error(s); no comparison",
            done.result.io_errors()
        );
        return Err(3);
    }
    Ok(done.doc)
}

/// After each pair: why `compare --run` stops now, or `None` to go on —
/// the sides differ in what nobody named, the design says stop, or one more
/// pair (at the mean time per pair) would overrun `--max-time`.
fn after_pair(a: &Args, docs: &[Vec<RunDoc>; 2], elapsed: f64) -> Option<String> {
    let na = docs[0].len();
    let c = build(a, docs);
    if !c.unexpected().is_empty() {
        return Some("the sides differ in what nobody named".to_string());
    }
    let Some(d) = design(&a.settings, &c) else {
        return Some("no sequential design".to_string());
    };
    match sequential::decide(&gates(&c), &d, a.settings.threshold_pct) {
        Step::Stop(Stop::Clear, _) => {
            return Some(format!("the verdict is clear after {na} runs per side"));
        }
        Step::Stop(Stop::MaxTrials, judged) => {
            let clear = judged.iter().all(|j| {
                j.is_some_and(|j| {
                    sequential::significant(j.verdict)
                        || j.verdict == crate::experiment::Verdict::NoMeaningfulChange
                })
            });
            return Some(if clear {
                format!("the verdict is clear after {na} runs per side (--max-trials)")
            } else {
                format!(
                    "--max-trials={} reached; the verdict is not clear",
                    a.max_trials
                )
            });
        }
        Step::Continue => {}
    }
    let per_pair = elapsed / na as f64;
    (elapsed + per_pair > a.max_time_s).then(|| {
        format!(
            "--max-time={:.0}s would be exceeded by another pair; the verdict is not clear",
            a.max_time_s
        )
    })
}

fn remove_all(files: &[crate::targets::CreatedFile]) {
    for f in files {
        f.remove();
    }
}

fn build(a: &Args, docs: &[Vec<RunDoc>; 2]) -> Comparison {
    compare(
        &Input {
            label: "A",
            files: a.a.clone(),
            docs: docs[0].clone(),
        },
        &Input {
            label: "B",
            files: a.b.clone(),
            docs: docs[1].clone(),
        },
        &a.settings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_table_parses_in_both_forms() {
        crate::commands::cli::check_both_forms(&CLI, &["a.json", "b.json"], parse);
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments() {
        let a = parse(&s(&[
            "a.json",
            "b.json",
            "--threshold=5%",
            "--expect-different=iodepth,kernel",
        ]))
        .unwrap();
        assert_eq!((a.a, a.b), (s(&["a.json"]), s(&["b.json"])));
        assert_eq!(a.settings.threshold_pct, 5.0);
        assert_eq!(a.settings.expect, s(&["iodepth", "kernel"]));
        let a = parse(&s(&["a1", "a2", "--", "b1"])).unwrap();
        assert_eq!((a.a.len(), a.b.len()), (2, 1));
        assert!(parse(&s(&["a.json"]))
            .err()
            .unwrap()
            .contains("two results"));
        assert!(parse(&s(&["a", "b", "--iodepth=3"]))
            .err()
            .unwrap()
            .contains("unknown option"));
        let a = parse(&s(&[
            "--run",
            "a.fio",
            "b.fio",
            "--runtime=1",
            "--max-time=30s",
        ]))
        .unwrap();
        assert_eq!(a.pass, s(&["--runtime=1"]));
        assert_eq!(a.max_time_s, 30.0);
        assert!(parse(&s(&["--run", "a", "b", "--max-trials=101"]))
            .err()
            .unwrap()
            .contains("100"));
        let a = parse(&s(&["--run", "a", "b", "--max-trials=12"])).unwrap();
        assert_eq!(
            a.settings.sequential,
            Some(Looks {
                min_n: 4,
                max_n: 12
            })
        );
        assert!(parse(&s(&["a", "b", "--output-format=xml"]))
            .err()
            .unwrap()
            .contains("markdown"));
    }
}
