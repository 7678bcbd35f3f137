//! The option audit: every option dioscope accepts must do something.
//!
//! For each entry of [`all`](super::options::all) the test applies sample values and checks,
//! in order:
//!
//! 1. **The value lands in the spec**: applying the example changes the
//!    [`JobSpec`] (or [`GlobalSettings`]). An option parsed and thrown away
//!    fails here.
//! 2. **Each value is told apart**: two different accepted values give two
//!    different specs (a `Choice` value that behaves as another one, like
//!    `eta=always` once did, fails), and when an option accepts
//!    `READ,WRITE` the write part changes the spec too (`rate_iops=100,200`
//!    once dropped its 200).
//! 3. **A consumer reads it**: each spec field the option changed is read
//!    somewhere outside `job/` (the runner, the engines, the targets, the
//!    reports, the binary), in code that is not a test. A field that is set
//!    and never read (`end_fsync`, `create_on_open` and
//!    `iodepth_batch_complete_max` once were) fails here.
//!
//! Values whose meaning is checked below the spec (the verify methods, each
//! its own algorithm) have their own tests beside their consumer.

use super::options::{all, Apply, Kind, OptDef};
use super::spec::{GlobalSettings, JobSpec};
use crate::source_scan::{rust_files, without_test_code};
use std::collections::BTreeMap;
use std::path::Path;

/// Options exempt from the audit, each with its reason. Keep it short.
const EXEMPT: &[(&str, &str)] = &[
    // job/options/accepted.rs: accepted for fio's job files, each saying
    // what dioscope does instead.
    ("disk_util", "device statistics are always read around every trial"),
    ("create_fsync", "a file dioscope lays out is always fsynced before any trial"),
    ("unique_filename", "a client/server option: dioscope has no client/server mode"),
    ("hugepage-size", "huge page buffers use the system's default size"),
    (
        "experimental_verify",
        "changes nothing checked: every read-back reads exactly the blocks the job wrote \
         (the record of issue 24), which is what fio's replayed read-back checks",
    ),
    (
        "thread",
        "changes nothing measured: dioscope always runs jobs as threads",
    ),
    // fio's options about logs kept in memory (runner/logs.rs streams
    // them to disk as they fill): accepted for fio's job files.
    (
        "log_entries",
        "fio's first log allocation: dioscope's log buffers are always preallocated",
    ),
    (
        "log_compression",
        "fio compresses logs it keeps in memory; dioscope's are on disk, the text is the same",
    ),
    (
        "log_compression_cpus",
        "CPUs of fio's log compression threads: dioscope runs none",
    ),
    (
        "log_store_compressed",
        "0 is fio's default; 1 is refused with the reason (fio's binary .fz records)",
    ),
    (
        "disable_bw_measurement",
        "changes nothing measured: bandwidth samples cost no clock read per I/O",
    ),
    (
        "create_serialize",
        "layout is always serial and before any job starts, outside the measurement: 0 and 1 measure the same",
    ),
    (
        "wait_for",
        "read when the plan is built (options/workload.rs: resolve_wait_for), where it starts the waiter's run phase (wait_phase)",
    ),
    (
        "kb_base",
        "read while the job's sizes are parsed (parse.rs: with_kb_base), so it lands in their values",
    ),
    (
        "unit_base",
        "0 and 8 are the bytes dioscope reports; 1 (bits) is refused",
    ),
    (
        "error_dump",
        "0 is how dioscope reports errors (the first, with its offset, and the count); 1 is refused",
    ),
];

/// Choice values that are fio's other spelling of another value.
const SPELLINGS: &[(&str, &str, &str)] = &[
    ("rw", "rw", "readwrite"),
    ("verify", "crc32c", "crc32c-intel"),
    ("fallocate", "none", "0"),
    ("fallocate", "posix", "1"),
    ("sync", "none", "0"),
    ("sync", "sync", "1"),
    ("unified_rw_reporting", "none", "0"),
    ("unified_rw_reporting", "mixed", "1"),
    ("unified_rw_reporting", "both", "2"),
];

/// The spec after applying `v`, as one Debug chunk per top-level field.
fn apply(o: &OptDef, v: &str) -> Option<BTreeMap<String, String>> {
    let (mut j, mut g) = (JobSpec::default(), GlobalSettings::default());
    o.set(&mut j, &mut g, v).ok()?;
    let text = match o.apply {
        Apply::Job(_) | Apply::Engine => format!("{j:#?}"),
        Apply::Global(_) => format!("{g:#?}"),
    };
    Some(fields(&text))
}

fn default_fields(o: &OptDef) -> BTreeMap<String, String> {
    fields(&match o.apply {
        Apply::Job(_) | Apply::Engine => format!("{:#?}", JobSpec::default()),
        Apply::Global(_) => format!("{:#?}", GlobalSettings::default()),
    })
}

/// Split a `{:#?}` of a struct into its top-level fields.
fn fields(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines().skip(1) {
        let top = line.strip_prefix("    ").filter(|l| !l.starts_with(' '));
        if let Some(name) = top.and_then(|l| l.split_once(':')).map(|(n, _)| n) {
            if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                cur = Some(name.to_string());
            }
        }
        if let Some(c) = &cur {
            let e: &mut String = out.entry(c.clone()).or_default();
            e.push_str(line);
            e.push('\n');
        }
    }
    out
}

fn changed(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    a.iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Values to try: the example, every choice, both flag values, a few numbers.
fn samples(o: &OptDef) -> Vec<String> {
    let mut v = vec![o.example.to_string()];
    match o.kind {
        Kind::Choice(c) => v.extend(c.iter().map(|s| s.to_string())),
        Kind::Flag => v.extend(["0".into(), "1".into()]),
        Kind::Int | Kind::Size | Kind::Time => {
            v.extend(["1", "2", "3", "7", "4k", "8k", "1m", "10s"].map(String::from))
        }
        Kind::Str => {}
        Kind::OptStr => v.push(String::new()),
    }
    let mut unique: Vec<String> = Vec::new();
    for x in v {
        if !unique.contains(&x) {
            unique.push(x);
        }
    }
    unique
}

/// Non-test Rust source outside job/: where options must be consumed.
fn consumer_source() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = String::new();
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    rust_files(&root.join("../../src"), &mut files);
    for p in files.iter().filter(|p| !p.starts_with(src.join("job"))) {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        // Test code consumes nothing.
        out.push_str(&without_test_code(&text));
    }
    out
}

/// Methods of the spec (job/spec.rs) that read `field`: reading through them counts.
fn accessors(field: &str) -> Vec<String> {
    let spec = include_str!("spec.rs");
    let code = without_test_code(spec);
    code.split("pub fn ")
        .skip(1)
        .filter(|body| is_read(body, field))
        .filter_map(|body| body.split('(').next())
        .map(|name| name.trim().to_string())
        .collect()
}

/// Whether `src` reads `.field` at all (any receiver).
fn is_read(src: &str, field: &str) -> bool {
    reads(src, field).next().is_some()
}

/// The receivers of each `.field` in `src`: the identifier before the dot
/// (for `a.b[i].field`, `b`).
fn reads<'a>(src: &'a str, field: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let pat = format!(".{field}");
    let n = pat.len();
    src.match_indices(&pat)
        .map(|(i, _)| i)
        .collect::<Vec<_>>()
        .into_iter()
        .filter(move |&i| {
            let next = src[i + n..].chars().next().unwrap_or(' ');
            !(next.is_ascii_alphanumeric() || next == '_' || next == '(')
        })
        .map(move |i| {
            // rustfmt puts long chains on several lines.
            let mut head = src[..i].trim_end();
            if head.ends_with(']') {
                head = &head[..head.rfind('[').unwrap_or(0)];
            }
            let start = head
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|p| p + 1)
                .unwrap_or(0);
            &head[start..]
        })
}

/// Names that hold a `ty` in the consumer source: bindings and fields
/// declared `name: ty`, `name: &ty`, `name: &mut ty`, `name: Vec<ty>`.
fn holders(src: &str, ty: &str) -> Vec<String> {
    let mut out = vec!["self".to_string()];
    for form in [
        format!(": {ty}"),
        format!(": &{ty}"),
        format!(": &mut {ty}"),
        format!(": Vec<{ty}>"),
        format!(": &[{ty}]"),
    ] {
        for (i, _) in src.match_indices(&form) {
            let next = src[i + form.len()..].chars().next().unwrap_or(' ');
            if next.is_ascii_alphanumeric() || next == '_' {
                continue;
            }
            let head = &src[..i];
            let start = head
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|p| p + 1)
                .unwrap_or(0);
            let name = head[start..].to_string();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Whether consumer code reads `field` of a `ty` (directly, with a receiver
/// that holds a `ty`, or through a method of the spec that reads it).
fn consumed(src: &str, ty: &str, field: &str) -> bool {
    // Holders may be declared in job/ itself (`Plan::global`).
    let who = holders(&format!("{src}{}", include_str!("spec.rs")), ty);
    if reads(src, field).any(|r| who.iter().any(|w| w == r) && r != "self") {
        return true;
    }
    accessors(field)
        .iter()
        .any(|m| src.contains(&format!(".{m}(")))
}

#[test]
fn every_option_reaches_code() {
    let src = consumer_source();
    assert!(
        consumed(&src, "JobSpec", "ioengine") && src.len() > 10_000,
        "the audit found no consumer source under {}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut failures = Vec::new();
    for o in all() {
        if EXEMPT.iter().any(|(n, _)| *n == o.name) {
            continue;
        }
        let base = default_fields(o);
        // 1. The example lands in the spec.
        let Some(ex) = apply(o, o.example) else {
            failures.push(format!(
                "{}: its example '{}' is refused",
                o.name, o.example
            ));
            continue;
        };
        let mut touched = changed(&ex, &base);
        // 2. Different accepted values give different specs.
        let mut seen: Vec<(String, BTreeMap<String, String>)> = Vec::new();
        for v in samples(o) {
            let Some(f) = apply(o, &v) else { continue };
            for t in changed(&f, &base) {
                if !touched.contains(&t) {
                    touched.push(t);
                }
            }
            if let Some((w, _)) = seen.iter().find(|(_, g)| *g == f) {
                let spelling = SPELLINGS
                    .iter()
                    .any(|&(n, a, b)| n == o.name && ((a == w && b == v) || (a == v && b == w)));
                // A flag's "0" may equal the default; numbers may round alike.
                let same_number = matches!(o.kind, Kind::Int | Kind::Size | Kind::Time);
                if !spelling && !same_number {
                    failures.push(format!("{}: '{w}' and '{v}' do the same", o.name));
                }
            }
            seen.push((v, f));
        }
        if touched.is_empty() {
            failures.push(format!(
                "{}: no value changes the spec (parsed and ignored)",
                o.name
            ));
        }
        // 2b. A READ,WRITE value keeps its write part.
        if let Some(f1) = apply(o, &format!("{},{}", o.example, o.example)) {
            let others: Vec<_> = ["1", "2", "4k", "8k"]
                .iter()
                .filter_map(|w| apply(o, &format!("{},{w}", o.example)))
                .collect();
            if !others.is_empty() && others.iter().all(|g| *g == f1) {
                failures.push(format!("{}: the write part of R,W is ignored", o.name));
            }
        }
        // 3. Someone reads each field it sets.
        for t in &touched {
            let ty = match o.apply {
                Apply::Job(_) | Apply::Engine => "JobSpec",
                Apply::Global(_) => "GlobalSettings",
            };
            if !consumed(&src, ty, t) {
                failures.push(format!(
                    "{}: sets `{t}`, which no code outside job/ reads",
                    o.name
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "options accepted but ignored (implement them, refuse them as not implemented, or \
         add them to EXEMPT with a reason):\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn exemptions_are_real_options() {
    for (n, why) in EXEMPT {
        assert!(all().any(|o| o.name == *n), "{n} is not an option");
        assert!(!why.is_empty());
    }
}
