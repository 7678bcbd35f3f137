//! `dioscope report RESULT.json [MORE.json…] [-o report.html]`: one
//! self-contained HTML file from results already written — dioscope's or
//! fio's JSON (json and json+). Two or more results are shown side by side
//! with the change of each against the first.

use super::cli::{self, Arg, Cli, Flag, Value};
use super::{eprint_err, Command};
use crate::experiment::compare::Comparison;
use crate::experiment::sweep::Sweep;
use crate::render::html::{self, Input};
use crate::results::RunDoc;

pub const COMMAND: Command = Command {
    name: "report",
    usage: &[(
        "report RESULT.json [MORE.json...] [-o report.html]",
        "one self-contained HTML report (charts, statistics,\n\
         diagnosis) from dioscope's or fio's JSON results,\n\
         compare's or sweep's JSON; two or more results are\n\
         shown side by side",
    )],
    cli: &CLI,
    main,
};

/// report's one flag.
pub static CLI: Cli = Cli {
    positional: "RESULT.json [MORE.json...]",
    flags: &[Flag {
        name: "output",
        short: Some('o'),
        value: Value::Output,
        example: "report.html",
        help: "write the HTML here (default: standard output)",
    }],
    subcommands: &[],
    job_options: false,
};

/// What the command line asked for.
#[derive(Debug, PartialEq)]
struct Args {
    inputs: Vec<String>,
    output: Option<String>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        inputs: Vec::new(),
        output: None,
    };
    for w in cli::parse("report", &CLI, args)? {
        match w {
            Arg::Flag("output", v) => a.output = v,
            Arg::Flag(other, _) => return Err(cli::unhandled("report", other)),
            Arg::Word(x) => a.inputs.push(x),
        }
    }
    if a.inputs.is_empty() {
        return Err(
            "report: no result given; usage: dioscope report RESULT.json [MORE.json...] -o report.html \
             (write one with dioscope --output-format=json --output=RESULT.json, or use fio's --output-format=json)"
                .into(),
        );
    }
    if a.output.as_deref() == Some("") {
        return Err("report: -o needs a file name (e.g. -o report.html)".into());
    }
    Ok(a)
}

/// Read one result file (`-`: standard input) into a report input.
fn read_input(path: &str) -> Result<Input, String> {
    // Bounded: a regular file or a pipe, never a device that never ends.
    let text = crate::infile::read(path, "report", crate::infile::MAX_INPUT_BYTES)?;
    // fio writes notes ("<host> …") before its JSON when it has something to
    // say; start at the first '{' as fio's own tools do.
    let json = text.find('{').map(|i| &text[i..]).unwrap_or(&text);
    // dioscope's experiments name their kind at the top.
    let kind = serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string));
    let bad = |e: String| format!("report: {path} is not a result dioscope can read: {e}");
    match kind.as_deref() {
        Some("comparison") => {
            let cmp: Comparison = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
            return Ok(Input::Compare {
                name: path.to_string(),
                cmp: Box::new(cmp),
            });
        }
        Some("sweep") => {
            let sweep = Sweep::from_json(json).map_err(bad)?;
            let recipe = serde_json::from_str::<serde_json::Value>(json)
                .ok()
                .and_then(|mut v| v.get_mut("recipe").map(serde_json::Value::take))
                .filter(serde_json::Value::is_object)
                .map(Box::new);
            return Ok(Input::Sweep {
                name: path.to_string(),
                sweep: Box::new(sweep),
                recipe,
            });
        }
        _ => {}
    }
    // The doctor's checklist: a target and its checks, no jobs.
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(json) {
        if v.get("checks").is_some_and(|c| c.is_array())
            && v.get("target").is_some_and(|t| t.is_string())
            && v.get("jobs").is_none()
        {
            return Ok(Input::Doctor {
                name: path.to_string(),
                doc: Box::new(v),
            });
        }
    }
    let doc = RunDoc::from_json(json).map_err(|e| {
        format!(
            "report: {path} is not a result dioscope can read: {e} \
             (give dioscope's or fio's JSON: --output-format=json or json+)"
        )
    })?;
    if doc.jobs.is_empty() {
        return Err(format!(
            "report: {path}: \"jobs\" is empty; a run has at least one job (is it a result?)"
        ));
    }
    Ok(Input::Run {
        name: path.to_string(),
        doc: Box::new(doc),
    })
}

/// Check where the report goes before any work (exit 2): a stream or a
/// regular file of its own, never a target of `targets` or an input.
fn check_report(
    what: &str,
    path: &str,
    targets: &[std::path::PathBuf],
    inputs: &[std::path::PathBuf],
) -> Result<crate::outfile::Output, String> {
    let rules = crate::outfile::Rules::new(what)
        .targets(targets)
        .inputs(inputs)
        .streams();
    crate::outfile::check(std::path::Path::new(path), &rules).map_err(|e| e.to_string())
}

/// Write the report to `path`, atomically (never half a file), checked
/// again now.
pub fn write_report(
    what: &str,
    path: &str,
    html: &str,
    targets: &[std::path::PathBuf],
    inputs: &[std::path::PathBuf],
) -> Result<(), String> {
    let out = check_report(what, path, targets, inputs)?;
    crate::outfile::write_result(&out, html.as_bytes())
        .map_err(|e| format!("cannot write the report to {path}: {e}"))
}

fn main(args: &[String]) -> i32 {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => return eprint_err(&e),
    };
    let read: Vec<std::path::PathBuf> = a.inputs.iter().map(std::path::PathBuf::from).collect();
    // Where the report goes, before reading anything (exit 2).
    if let Some(out) = &a.output {
        if let Err(e) = check_report("report -o", out, &[], &read) {
            return eprint_err(&e);
        }
    }
    let mut inputs = Vec::new();
    for p in &a.inputs {
        match read_input(p) {
            Ok(i) => inputs.push(i),
            Err(e) => return eprint_err(&e),
        }
    }
    let page = html::report(&inputs);
    match &a.output {
        Some(out) => {
            if let Err(e) = write_report("report -o", out, &page, &[], &read) {
                eprintln!("dioscope: error: {e}");
                return 1;
            }
            eprintln!(
                "dioscope: report written to {out} ({} KiB)",
                page.len().div_ceil(1024)
            );
        }
        None => super::stdout(&page),
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_table_parses_in_both_forms() {
        crate::commands::cli::check_both_forms(&CLI, &["a.json"], parse);
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments() {
        assert_eq!(
            parse(&s(&["a.json", "b.json", "-o", "r.html"])).unwrap(),
            Args {
                inputs: s(&["a.json", "b.json"]),
                output: Some("r.html".into())
            }
        );
        assert_eq!(
            parse(&s(&["--output=x.html", "a.json"]))
                .unwrap()
                .output
                .as_deref(),
            Some("x.html")
        );
        assert!(parse(&s(&[])).unwrap_err().contains("no result"));
        assert!(parse(&s(&["a.json", "-o"]))
            .unwrap_err()
            .contains("-o needs a value, e.g. -o=report.html"));
        assert!(parse(&s(&["a.json", "--bogus"]))
            .unwrap_err()
            .contains("unknown option"));
    }

    #[test]
    fn unreadable_and_foreign_files_are_named() {
        let e = read_input("/nonexistent/x.json").err().unwrap();
        assert!(e.contains("/nonexistent/x.json"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("n.json");
        std::fs::write(&p, "{\"hello\": 1}").unwrap();
        let e = read_input(p.to_str().unwrap()).err().unwrap();
        assert!(e.contains("not a result"), "{e}");
    }
}
