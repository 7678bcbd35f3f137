//! fio's `--debug=TYPES`: the categories fio 3.33 has, `help` to list
//! them, `all`. dioscope prints fio's `parse` lines — each option as it is
//! applied, and what steady state's criterion was read as, in fio's words,
//! which fio's own test scripts look for — as `TYPE PID message` on stdout,
//! fio's layout — and its `random` lines: each worker's seed, written where
//! the report goes (`--output`), before it, as fio's dprint writes to its
//! output file (fio's random_seed.py reads them there). The other
//! categories are accepted and print nothing; a note on stderr says so.
//! (`--debug` is fio's developer switch: a note on stderr is expected.)

use std::sync::atomic::{AtomicBool, Ordering};

/// fio 3.33's debug categories, in its order.
pub const CATEGORIES: &[&str] = &[
    "process",
    "file",
    "io",
    "mem",
    "blktrace",
    "verify",
    "random",
    "parse",
    "diskutil",
    "job",
    "mutex",
    "profile",
    "time",
    "net",
    "rate",
    "compress",
    "steadystate",
    "helperthread",
    "zbd",
];

/// The categories dioscope prints lines for.
const PRINTED: &[&str] = &["parse", "random"];

static PARSE: AtomicBool = AtomicBool::new(false);
static RANDOM: AtomicBool = AtomicBool::new(false);
/// `random` lines waiting for the report ([`take_pending`]).
static PENDING: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

thread_local! {
    /// Inside [`quietly`]: the options' defaults being applied, which fio
    /// does not print.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with the `parse` lines off (the defaults every spec starts
/// from are applied through the options, but were not given).
pub fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let was = QUIET.with(|q| q.replace(true));
    let out = f();
    QUIET.with(|q| q.set(was));
    out
}

/// What `--debug=TYPES` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `--debug=help` (or `?`): list the categories, run nothing.
    Help,
    /// These categories (every one for `all`).
    Types(Vec<&'static str>),
}

/// Read `--debug=TYPES` (a comma-separated list). An unknown category is
/// an error naming the categories.
pub fn request(v: &str) -> Result<Request, String> {
    let mut out: Vec<&'static str> = Vec::new();
    for t in v.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match t {
            "help" | "?" => return Ok(Request::Help),
            "all" => out.extend(CATEGORIES),
            _ => match CATEGORIES.iter().find(|c| **c == t) {
                Some(c) => out.push(c),
                None => {
                    return Err(format!(
                        "--debug={v}: '{t}' is not a debug category; choose from {},all \
                         (--debug=help lists them)",
                        CATEGORIES.join(",")
                    ))
                }
            },
        }
    }
    out.dedup();
    Ok(Request::Types(out))
}

/// `--debug=help`'s list, as fio prints it.
pub fn help_text() -> String {
    format!("fio: dumping debug options:{},all\n", CATEGORIES.join(","))
}

/// Turn the categories on: fio's "set debug option" line for each on
/// stdout, and a note on stderr for those dioscope prints nothing for.
pub fn enable(types: &[&str]) {
    for t in types {
        println!("fio: set debug option {t}");
    }
    PARSE.store(types.contains(&"parse"), Ordering::Relaxed);
    RANDOM.store(types.contains(&"random"), Ordering::Relaxed);
    let silent: Vec<&str> = types
        .iter()
        .copied()
        .filter(|t| !PRINTED.contains(t))
        .collect();
    if !silent.is_empty() {
        eprintln!(
            "dioscope: note: --debug: dioscope prints {} lines only; {} print nothing",
            PRINTED.join(", "),
            silent.join(",")
        );
    }
}

/// A `parse` line (`parse    PID  message`), when `--debug=parse` is on.
pub fn parse(msg: impl FnOnce() -> String) {
    if PARSE.load(Ordering::Relaxed) && !QUIET.with(|q| q.get()) {
        println!("{}", line("parse", std::process::id(), &msg()));
    }
}

/// A worker's seed as fio's `random` lines (`FIO_RAND_NR_OFFS=1`, then
/// `rand_seeds[0]=SEED`: every generator of a dioscope worker derives from
/// its one seed), when `--debug=random` is on. Kept for [`take_pending`].
pub fn random_seed(seed: u64) {
    if !RANDOM.load(Ordering::Relaxed) {
        return;
    }
    let pid = std::process::id();
    if let Ok(mut p) = PENDING.lock() {
        p.push_str(&line("random", pid, "FIO_RAND_NR_OFFS=1"));
        p.push('\n');
        p.push_str(&line("random", pid, &format!("rand_seeds[0]={seed}")));
        p.push('\n');
    }
}

/// The debug lines kept for the report, once.
pub fn take_pending() -> String {
    PENDING
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default()
}

/// fio's layout of a debug line: the category left-aligned in 8, the
/// process id in 5, the message.
fn line(category: &str, pid: u32, msg: &str) -> String {
    format!("{category:<8} {pid:<5} {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_help_all_and_unknown() {
        assert_eq!(request("help").unwrap(), Request::Help);
        assert_eq!(
            request("parse,io").unwrap(),
            Request::Types(vec!["parse", "io"])
        );
        assert_eq!(request("all").unwrap(), Request::Types(CATEGORIES.to_vec()));
        let e = request("parse,bogus").unwrap_err();
        assert!(
            e.contains("'bogus' is not a debug category") && e.contains("steadystate"),
            "{e}"
        );
        assert!(help_text().starts_with("fio: dumping debug options:process,file,io,"));
        assert_eq!(line("parse", 18645, "x"), "parse    18645 x");
    }
}
