//! `dioscope doctor TARGET`: the workload-free checks as a checklist (or
//! JSON). Exit 0 when nothing is critical, 1 when a check fails, 2 when the
//! target does not exist or the arguments are wrong.

use super::cli::{self, Arg, Cli, Flag, Value};
use super::{eprint_err, Command};
use crate::diag::{self, DoctorReport};
use crate::render::{self, Format, DOCTOR_FORMATS};
use std::path::Path;

pub const COMMAND: Command = Command {
    name: "doctor",
    usage: &[(
        "doctor TARGET [--peak] [--output-format=json]",
        "check a file or block device without a\n\
         workload: page cache, other openers,\n\
         buffering, holes, layout, governor\n\
         (exit 1 when a check fails); --peak: what\n\
         stands between the device and its peak IOPS",
    )],
    cli: &CLI,
    main,
};

fn doctor_formats() -> Vec<&'static str> {
    DOCTOR_FORMATS.iter().map(|f| f.name).collect()
}

/// doctor's flags.
pub static CLI: Cli = Cli {
    positional: "TARGET",
    flags: &[
        Flag {
            name: "output-format",
            short: None,
            value: Value::Names(doctor_formats),
            example: "json",
            help: "how the checklist is printed",
        },
        Flag {
            name: "peak",
            short: None,
            value: Value::None,
            example: "",
            help: "what stands between the device and its peak IOPS, with fixes",
        },
    ],
    subcommands: &[],
    job_options: false,
};

/// What `doctor` was asked: the target, the output format, `--peak`.
struct Args {
    target: String,
    format: &'static Format<DoctorReport>,
    peak: bool,
}

impl std::fmt::Debug for Args {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} peak={}", self.target, self.format.name, self.peak)
    }
}

/// The arguments, or the error to print.
fn parse(args: &[String]) -> Result<Args, String> {
    let mut format = &DOCTOR_FORMATS[0];
    let mut peak = false;
    let mut target: Option<String> = None;
    for w in cli::parse("doctor", &CLI, args)? {
        match w {
            Arg::Flag("output-format", Some(v)) => {
                format = render::find(DOCTOR_FORMATS, &v)
                    .ok_or_else(|| format!("doctor: {}", render::unknown(DOCTOR_FORMATS, &v)))?;
            }
            Arg::Flag("peak", _) => peak = true,
            Arg::Flag(other, _) => return Err(cli::unhandled("doctor", other)),
            Arg::Word(s) if target.is_none() => target = Some(s),
            Arg::Word(s) => {
                return Err(format!(
                    "doctor: one target at a time, got a second one: {s}"
                ))
            }
        }
    }
    match target {
        Some(target) => Ok(Args {
            target,
            format,
            peak,
        }),
        None => {
            Err("doctor needs a target: dioscope doctor /dev/sdX or dioscope doctor FILE".into())
        }
    }
}

/// The workload-free checks of `doctor` on `target`; `true` when the
/// target does not exist.
pub fn check(target: &str) -> (diag::DoctorReport, bool) {
    let r = diag::doctor(Path::new(target));
    let missing =
        r.environment.targets.first().map(|t| t.kind) == Some(diag::env::TargetKind::Missing);
    (r, missing)
}

fn main(args: &[String]) -> i32 {
    let Args {
        target,
        format,
        peak,
    } = match parse(args) {
        Ok(x) => x,
        Err(e) => return eprint_err(&e),
    };
    let (mut r, missing) = check(&target);
    if peak && !missing {
        r.peak = diag::peak::peak_with_probe(Path::new(&target));
    }
    super::stdout(&format.exporter.render(&r));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_table_parses_in_both_forms() {
        crate::commands::cli::check_both_forms(&CLI, &["/dev/x"], parse);
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments() {
        let a = s(&["/dev/x", "--output-format=json"]);
        let p = parse(&a).unwrap();
        assert_eq!((p.target.as_str(), p.format.name, p.peak), ("/dev/x", "json", false));
        assert_eq!(
            parse(&s(&["x", "--output-format=json+"])).unwrap().format.name,
            "json"
        );
        assert_eq!(parse(&s(&["x"])).unwrap().format.name, "normal");
        assert!(parse(&s(&["x", "--peak"])).unwrap().peak);
        let e = parse(&s(&["x", "--output-format=xml"])).unwrap_err();
        assert!(
            e.contains("'xml' is not an output format; choose one of normal, json"),
            "{e}"
        );
        assert!(parse(&s(&[])).unwrap_err().contains("needs a target"));
        assert!(parse(&s(&["a", "b"])).unwrap_err().contains("one target"));
        assert!(parse(&s(&["--x"]))
            .unwrap_err()
            .contains("unknown option '--x'"));
    }
}
