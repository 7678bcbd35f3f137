//! Property tests: the job-file and command-line parsers never panic, and every
//! error they return tells the user which option or line is at fault.
//!
//! Two kinds of input: arbitrary strings (to reach the corners no job file
//! would), and structured job files built from the real option table with
//! values drawn from fio's syntax (sizes, ranges, arithmetic, `${VAR}`), so that
//! most cases get past the tokenizer and exercise the value parsers. The
//! `cargo fuzz` targets in `fuzz/` do the same for much longer; this is the part
//! that runs in CI.

use dioscope_core::job::options::{all, FIO_UNIMPLEMENTED};
use dioscope_core::job::parse::Origin;
use dioscope_core::job::{parse_args, parse_job_text, ParseError};
use proptest::prelude::*;

/// Every name the table knows, plus unimplemented and misspelt ones.
fn option_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = all()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .collect();
    v.extend(FIO_UNIMPLEMENTED.iter().take(8).map(|(n, _)| *n));
    v.extend(["blocksiz", "iodepht", "bogus", ""]);
    v
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        // Values seen in real job files.
        prop::sample::select(vec![
            "",
            "0",
            "1",
            "yes",
            "off",
            "4k",
            "64k",
            "1m",
            "1g",
            "4Ki",
            "1MiB",
            "0x1000",
            "50%",
            "100%",
            "10s",
            "250ms",
            "2m",
            "1d",
            "randread",
            "randrw",
            "io_uring",
            "libaio",
            "null",
            "json+",
            "crc32c",
            "zipf:1.2",
            "pareto:0.3",
            "normal:5",
            "4k/50:64k/50",
            "4k/60:64k",
            "4k:8k:16k",
            "4k,64k",
            "1k-4k",
            "4k:1k",
            "0-1",
            "0-3,6",
            "50:99:99.9",
            "/dev/nvme0n1:/tmp/f",
            "all",
            "$ncpus",
            "$pagesize",
            "(1024*4)",
            "(2^10)k",
            "1000000t",
            "18446744073709551615",
            "18446744073709551616",
        ])
        .prop_map(str::to_string),
        // Numbers with unit suffixes, including absurd ones.
        "[0-9]{1,25}(\\.[0-9]{0,3})?([kKmMgGtTpP][iI]?[bB]?|b|%|us|ms|s|m|h|d)?",
        // Arithmetic.
        "\\([0-9+*/%^() .-]{0,24}\\)[kmg]?",
        // Ranges, splits, lists.
        "[0-9]{1,6}[kmg]?[-:/,][0-9]{1,20}[kmg]?([:,/][0-9]{1,4}){0,4}",
        "\\$\\{[A-Z_]{0,8}\\}",
        // A number with any suffix, including multi-byte characters.
        "[0-9]{1,3}.{1,3}",
        // Anything short.
        ".{0,12}",
    ]
}

#[derive(Debug, Clone)]
enum Line {
    Section(String),
    Opt(&'static str, String),
    Flag(&'static str),
    Comment(String),
    Blank,
    Junk(String),
}

fn line() -> impl Strategy<Value = Line> {
    let names = option_names();
    prop_oneof![
        2 => prop_oneof![
            Just("global".to_string()),
            "[a-z0-9_ -]{0,10}",
            "job-\\$\\{[A-Z]{1,6}\\}",
        ]
        .prop_map(Line::Section),
        8 => (prop::sample::select(names.clone()), value()).prop_map(|(k, v)| Line::Opt(k, v)),
        2 => prop::sample::select(names).prop_map(Line::Flag),
        1 => "[;#].{0,20}".prop_map(Line::Comment),
        1 => Just(Line::Blank),
        1 => "[^\n\r]{0,20}".prop_map(Line::Junk),
    ]
}

fn render(lines: &[Line]) -> String {
    let mut s = String::new();
    for l in lines {
        match l {
            Line::Section(n) => s.push_str(&format!("[{n}]")),
            Line::Opt(k, v) => s.push_str(&format!("{k}={v}")),
            Line::Flag(k) => s.push_str(k),
            Line::Comment(c) => s.push_str(c),
            Line::Blank => {}
            Line::Junk(j) => s.push_str(j),
        }
        s.push('\n');
    }
    s
}

/// A job file: a leading `[global]` or job section, then lines.
fn job_file() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just("[global]"), Just("[job1]"), Just("")],
        prop::collection::vec(line(), 0..24),
    )
        .prop_map(|(head, lines)| format!("{head}\n{}", render(&lines)))
}

/// The error must be non-empty and name what is wrong: the option for a value
/// or name error, the line for a syntax error, the job for a validation error.
fn check_error(e: &ParseError, text: Option<&str>) -> Result<(), TestCaseError> {
    let msg = e.to_string();
    prop_assert!(!msg.trim().is_empty(), "empty message for {e:?}");
    let origin_line = |o: &Origin| match o {
        Origin::File { line, .. } => Some(*line),
        Origin::CommandLine => None,
    };
    match e {
        ParseError::UnknownOption { name, origin, .. }
        | ParseError::Unimplemented { name, origin, .. }
        | ParseError::BadValue { name, origin, .. }
        | ParseError::MissingValue { name, origin, .. } => {
            // "not supported by dioscope: NAME (why)" names it unquoted.
            prop_assert!(
                msg.contains(&format!("'{name}'"))
                    || msg.contains(&format!("not supported by dioscope: {name} (")),
                "{msg}"
            );
            if let (Some(n), Some(text)) = (origin_line(origin), text) {
                prop_assert!(msg.contains(&format!(":{n}")), "{msg}");
                let l = text.lines().nth(n - 1).unwrap_or("");
                // `$ncpus` and `${VAR}` are substituted before the key is split off.
                if !l.contains('$') {
                    prop_assert!(l.contains(name.as_str()), "line {n} '{l}' vs {msg}");
                }
            }
        }
        ParseError::Syntax { origin, .. } => {
            if let Some(n) = origin_line(origin) {
                prop_assert!(msg.contains(&format!(":{n}")), "{msg}");
            }
        }
        ParseError::Invalid(m) => prop_assert!(m.contains("job '") || m.contains("no jobs"), "{m}"),
        ParseError::Read { path, .. } => prop_assert!(msg.contains(path.as_str()), "{msg}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        if let Err(e) = parse_job_text(&text) {
            check_error(&e, Some(&text))?;
        }
    }

    #[test]
    fn structured_job_files_never_panic(text in job_file()) {
        if let Err(e) = parse_job_text(&text) {
            check_error(&e, Some(&text))?;
        }
    }

    #[test]
    fn command_lines_never_panic(
        args in prop::collection::vec(
            prop_oneof![
                (prop::sample::select(option_names()), value())
                    .prop_map(|(k, v)| format!("--{k}={v}")),
                prop::sample::select(option_names()).prop_map(|k| format!("--{k}")),
                "--.{0,12}",
            ],
            0..12,
        )
    ) {
        if let Err(e) = parse_args(&args) {
            check_error(&e, None)?;
        }
    }
}
