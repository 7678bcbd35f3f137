//! `dioscope recipe list` and `dioscope recipe run NAME`: each seed's
//! experiment as one command (see `crate::recipes`).

use super::cli::{self, Arg, Cli, Flag, Sub, Value};
use super::{eprint_err, Command};
use crate::experiment::compare::{compare, CompareSettings, Input};
use crate::experiment::sweep::{CellStatus, Sweep};
use crate::recipes::{self, Ctx, Outcome, Stop, RECIPES};
use std::path::Path;

pub const COMMAND: Command = Command {
    name: "recipe",
    usage: &[
        (
            "recipe list",
            "the recipes, one line each on what they reproduce",
        ),
        (
            "recipe run NAME [--quick] [--control]",
            "make the scratch devices, run, print the seed's table (mean ± σ),\n\
             say whether the seed's effect is PRESENT, ABSENT or INCONCLUSIVE\n\
             (with the reason), remove the devices\n\
             ([--trials=N|auto] [--output=FILE.json] [--compare-with=SAVED.json];\n\
             --quick: a short run; --profile: every cell with --profile, quick or\n\
             not; --control: also plant the seed's effect on the recipe's scratch\n\
             devices and say whether the recipe sees it — ABSENT needs it;\n\
             --cap-request-kb=N (indirect-write): cap the devices' request size;\n\
             --contaminate (pagecache-interference): a buffered reader throughout)",
        ),
    ],
    cli: &CLI,
    main,
};

/// recipe's sub-commands and their flags.
pub static CLI: Cli = Cli {
    positional: "list|run",
    flags: &[],
    subcommands: &[
        Sub {
            name: "list",
            what: "the recipes, one line each on what they reproduce",
            cli: Cli::NONE,
        },
        Sub {
            name: "run",
            what: "run a recipe on scratch devices it makes and removes",
            cli: Cli {
                positional: "NAME",
                flags: &[
                    Flag {
                        name: "quick",
                        short: None,
                        value: Value::None,
                        example: "",
                        help: "a short run",
                    },
                    Flag {
                        name: "profile",
                        short: None,
                        value: Value::None,
                        example: "",
                        help: "every cell with --profile",
                    },
                    Flag {
                        name: "control",
                        short: None,
                        value: Value::None,
                        example: "",
                        help: "also plant the seed's effect on the recipe's scratch devices \
                               and say whether the recipe sees it (ABSENT needs it)",
                    },
                    Flag {
                        name: "cap-request-kb",
                        short: None,
                        value: Value::Text("N"),
                        example: "64",
                        help: "indirect-write: cap the devices' request size (KiB, a multiple of 4)",
                    },
                    Flag {
                        name: "contaminate",
                        short: None,
                        value: Value::None,
                        example: "",
                        help: "pagecache-interference: a buffered reader throughout",
                    },
                    Flag {
                        name: "trials",
                        short: None,
                        value: Value::Text("N|auto"),
                        example: "auto",
                        help: "trials per cell",
                    },
                    Flag {
                        name: "output",
                        short: None,
                        value: Value::Output,
                        example: "recipe.json",
                        help: "write the result's JSON to this file",
                    },
                    Flag {
                        name: "compare-with",
                        short: None,
                        value: Value::Input,
                        example: "saved.json",
                        help: "compare with a saved result of the same recipe",
                    },
                ],
                subcommands: &[],
                job_options: false,
            },
        },
    ],
    job_options: false,
};

struct Args {
    name: String,
    quick: bool,
    profile: bool,
    trials: String,
    output: Option<String>,
    compare_with: Option<String>,
    control: bool,
    cap_request_kb: Option<u32>,
    contaminate: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        name: String::new(),
        quick: false,
        profile: false,
        trials: String::new(),
        output: None,
        compare_with: None,
        control: false,
        cap_request_kb: None,
        contaminate: false,
    };
    let cli = &CLI.sub("run").expect("run is in the table").cli;
    for w in cli::parse("recipe run", cli, args)? {
        match w {
            Arg::Flag("trials", Some(v)) => {
                if v != "auto" && v.parse::<u32>().map(|n| n < 1).unwrap_or(true) {
                    return Err(format!("--trials={v}: a number ≥ 1 or auto"));
                }
                a.trials = v;
            }
            Arg::Flag("quick", _) => a.quick = true,
            Arg::Flag("profile", _) => a.profile = true,
            Arg::Flag("control", _) => a.control = true,
            Arg::Flag("contaminate", _) => a.contaminate = true,
            Arg::Flag("cap-request-kb", Some(v)) => match v.parse::<u32>() {
                Ok(n) if n >= 4 && n % 4 == 0 => a.cap_request_kb = Some(n),
                _ => return Err(format!("--cap-request-kb={v}: a multiple of 4 (KiB), at least 4")),
            },
            Arg::Flag("output", v) => a.output = v,
            Arg::Flag("compare-with", v) => a.compare_with = v,
            Arg::Flag(other, _) => return Err(cli::unhandled("recipe run", other)),
            Arg::Word(x) if a.name.is_empty() => a.name = x,
            Arg::Word(x) => return Err(format!("recipe run: one recipe at a time ('{x}' is extra)")),
        }
    }
    if a.name.is_empty() {
        return Err(format!("recipe run needs a NAME: {}", names()));
    }
    if recipes::find(&a.name).is_none() {
        return Err(format!("no recipe '{}': choose {}", a.name, names()));
    }
    if a.cap_request_kb.is_some() && a.name != "indirect-write" {
        return Err(format!(
            "--cap-request-kb is indirect-write's (it caps its loop devices), not {}'s",
            a.name
        ));
    }
    if a.contaminate && a.name != "pagecache-interference" {
        return Err(format!(
            "--contaminate is pagecache-interference's (a buffered reader on its device), not \
             {}'s",
            a.name
        ));
    }
    Ok(a)
}

fn names() -> String {
    RECIPES
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn main(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("list") if args.len() == 1 => {
            let w = RECIPES.iter().map(|r| r.name.len()).max().unwrap_or(0);
            for r in RECIPES {
                println!("{:w$}  seed {}  {}", r.name, r.seed, r.reproduces);
            }
            0
        }
        Some("run") => run(&args[1..]),
        _ => eprint_err(
            "recipe needs list or run NAME (e.g. dioscope recipe run indirect-write --quick)",
        ),
    }
}

fn run(args: &[String]) -> i32 {
    dioscope_sys::signal::install();
    // A second Ctrl-C finishes the removal of the scratch devices.
    dioscope_sys::signal::finish_cleanup_on_second_interrupt();
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => return eprint_err(&e),
    };
    if !crate::scratch::create::is_root() {
        return eprint_err("recipes make scratch devices and need root: run with sudo");
    }
    let out_path = a
        .output
        .clone()
        .unwrap_or_else(|| format!("dioscope-recipe-{}.json", a.name));
    let inputs: Vec<std::path::PathBuf> = a.compare_with.iter().map(Into::into).collect();
    crate::outfile::protect(&[], &inputs);
    let rules = crate::outfile::Rules::new("--output").streams();
    match crate::outfile::check(std::path::Path::new(&out_path), &rules) {
        Err(e) => return eprint_err(&e.to_string()),
        Ok(crate::outfile::Output::File(_)) => {
            // The per-cell results go beside it, in OUT.d/: checked now too.
            if let Err(e) = crate::outfile::check_dir(Path::new(&cells_dir(&out_path)), &rules) {
                return eprint_err(&format!("{e} (the folder of per-cell results beside --output)"));
            }
        }
        Ok(_) => eprintln!(
            "dioscope: note: --output={out_path} is a stream: the per-cell results (OUT.d/) are \
             not written; give a file to have them"
        ),
    }
    let saved = match &a.compare_with {
        Some(p) => match crate::infile::read(p, "--compare-with", crate::infile::MAX_INPUT_BYTES)
            .and_then(|t| Sweep::from_json(&t))
        {
            Ok(s) => Some(s),
            Err(e) => {
                return eprint_err(&format!("--compare-with={p}: {e} (give a recipe's JSON)"))
            }
        },
        None => None,
    };
    if a.profile {
        if let Err(e) = crate::profile::check_tmpdir() {
            return eprint_err(&e);
        }
    }
    let recipe = recipes::find(&a.name).expect("checked in parse");
    let mut ctx = Ctx::new(recipe.name, a.quick, &a.trials);
    ctx.profile = a.profile;
    ctx.control = a.control;
    ctx.cap_request_kb = a.cap_request_kb;
    ctx.contaminate = a.contaminate;
    let res = (recipe.run)(&mut ctx);
    // Tear down first: on success, failure and a stop signal alike.
    let clean = ctx.session.teardown();
    let (outcome, code) = match res {
        Ok(o) => (o, 0),
        Err(Stop::Interrupted) => {
            let sig = dioscope_sys::signal::last_signal();
            eprintln!("dioscope recipe: interrupted; the scratch devices are removed");
            (Outcome::default(), if sig > 0 { 128 + sig } else { 130 })
        }
        Err(Stop::Failed(e)) => {
            eprintln!("dioscope: error: {}: {e}", recipe.name);
            (Outcome::default(), 1)
        }
    };
    let interrupted = code >= 128;
    if !ctx.sweep.cells.is_empty() || code == 0 {
        write_results(recipe, &ctx, &outcome, interrupted, &out_path);
    }
    if code == 0 {
        print_outcome(recipe, &a, &ctx, &outcome, saved.as_ref(), &out_path);
    }
    if !clean && code == 0 {
        return 1;
    }
    code
}

/// What a finished recipe prints: its tables, the verdict, the control's
/// outcome, the seed's figures, notes, and where the result went.
fn print_outcome(
    recipe: &recipes::Recipe,
    a: &Args,
    ctx: &Ctx,
    outcome: &Outcome,
    saved: Option<&Sweep>,
    out_path: &str,
) {
    println!(
        "recipe {} (seed {}) on {}{}",
        recipe.name,
        recipe.seed,
        recipes::kernel(),
        if a.quick { " — quick run" } else { "" }
    );
    for t in &outcome.tables {
        println!("\n{}", t.render());
    }
    println!("This kernel: {}", outcome.verdict);
    println!("  {}", outcome.verdict_text);
    match outcome.control_verdict.as_deref() {
        Some("PRESENT") => println!("control: detected — {}", outcome.control_text),
        Some(v) => println!(
            "control: NOT detected — ABSENT above is not evidence ({v}; {})",
            outcome.control_text
        ),
        None => println!(
            "control: not run (--control plants the seed's effect; ABSENT needs it detected)"
        ),
    }
    println!("The seed:    {}", outcome.seed_reported);
    for n in &outcome.notes {
        println!("Note: {n}");
    }
    if let Some(s) = saved {
        print_comparison(s, ctx, a.compare_with.as_deref().unwrap_or(""));
    }
    println!("\nWritten to {out_path} (compare: dioscope compare {out_path}@cell=NAME …)");
}

fn write_results(
    recipe: &recipes::Recipe,
    ctx: &Ctx,
    out: &Outcome,
    interrupted: bool,
    path: &str,
) {
    let text = recipes::result_json(recipe, ctx, out, interrupted);
    let rules = crate::outfile::Rules::new("--output").streams();
    let out = crate::outfile::check(Path::new(path), &rules);
    let w = out
        .as_ref()
        .map_err(|e| std::io::Error::other(e.why.clone()))
        .and_then(|o| crate::outfile::write_result(o, text.as_bytes()));
    if let Err(e) = w {
        eprintln!("dioscope: warning: cannot write {path}: {e}");
    }
    // Each cell's run as a plain result, for `dioscope report`; not beside
    // a stream (`/dev/stdout.d/` is no place for files).
    if !matches!(out, Ok(crate::outfile::Output::File(_))) {
        return;
    }
    let dir = cells_dir(path);
    let dir = match crate::outfile::create_dir(Path::new(&dir), &rules) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("dioscope: warning: the per-cell results are not written: {e}");
            return;
        }
    };
    for c in ctx
        .sweep
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Done)
    {
        if let Some(doc) = c.runs.first() {
            let p = dir.join(format!("{}.json", c.values[0]));
            let w = crate::outfile::check(&p, &crate::outfile::Rules::new("a cell's result"))
                .map_err(|e| std::io::Error::other(e.why))
                .and_then(|o| crate::outfile::write_result(&o, doc.to_json(false).as_bytes()));
            if let Err(e) = w {
                eprintln!("dioscope: warning: cannot write {}: {e}", p.display());
            }
        }
    }
}

/// The folder of per-cell results beside a recipe's `OUT.json`: `OUT.d`.
fn cells_dir(out: &str) -> String {
    format!("{}.d", out.trim_end_matches(".json"))
}

/// Each cell against the same cell of a saved run (another kernel, usually).
fn print_comparison(saved: &Sweep, ctx: &Ctx, label: &str) {
    println!("\nAgainst {label}:");
    for c in ctx
        .sweep
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Done)
    {
        let Some(old) = saved
            .cells
            .iter()
            .find(|o| o.values == c.values && o.status == CellStatus::Done)
        else {
            println!("  {:<24} not in the saved result", c.values[0]);
            continue;
        };
        let a = Input {
            label: "saved",
            files: vec![label.to_string()],
            docs: old.runs.clone(),
        };
        let b = Input {
            label: "now",
            files: vec![],
            docs: c.runs.clone(),
        };
        let cmp = compare(&a, &b, &CompareSettings::default());
        let parts: Vec<String> = cmp
            .jobs
            .first()
            .map(|j| {
                j.metrics
                    .iter()
                    .filter(|m| m.change_pct.is_some())
                    .take(3)
                    .map(|m| {
                        format!(
                            "{} {:+.1} % ({})",
                            m.label,
                            m.change_pct.unwrap_or(0.0),
                            m.verdict.text()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        println!(
            "  {:<24} {:?}: {}",
            c.values[0],
            cmp.outcome,
            parts.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_table_parses_in_both_forms() {
        let run = &CLI.sub("run").unwrap().cli;
        // A recipe's own flag goes with that recipe (the others refuse it).
        crate::commands::cli::check_both_forms(run, &["indirect-write"], |args: &[String]| {
            let mut a = args.to_vec();
            if a.iter().any(|x| x == "--contaminate") {
                a[0] = "pagecache-interference".into();
            }
            parse(&a)
        });
    }
}
