//! Job files and command lines into a [`Plan`].
//!
//! Parsing happens in two stages, as ripgrep does: first every token is
//! collected with where it came from, then the option table applies them in
//! order (`[global]` defaults, then each job's own lines). Nothing touches the
//! system here beyond reading job files.

use super::options::{closest, lookup, not_supported, Apply, Kind, OptDef};
use super::spec::{BlockSizes, EngineKind, JobSpec, Plan, RwMode};
use std::fmt;
use std::path::{Path, PathBuf};

/// Where an option came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    CommandLine,
    File { path: String, line: usize },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::CommandLine => write!(f, "on the command line"),
            Origin::File { path, line } => write!(f, "at {path}:{line}"),
        }
    }
}

/// A parse error. Every variant names the option and says how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("unknown option '{name}' {origin}{}", suggestion.as_ref().map(|s| format!("; did you mean {s}?")).unwrap_or_else(|| "; see 'dioscope --help' for the options".into()))]
    UnknownOption {
        name: String,
        origin: Origin,
        suggestion: Option<String>,
    },
    #[error("not supported by dioscope: {name} ({reason}), {origin}; remove it from the job")]
    Unimplemented {
        name: String,
        origin: Origin,
        reason: String,
    },
    #[error("invalid value '{}' for option '{name}' {origin}: {reason}; a valid example: {name}={example}", crate::outfile::shown(value))]
    BadValue {
        name: String,
        value: String,
        origin: Origin,
        reason: String,
        example: String,
    },
    #[error("option '{name}' {origin} needs a value, for example {name}={example}")]
    MissingValue {
        name: String,
        origin: Origin,
        example: String,
    },
    #[error("{origin}: {message}")]
    Syntax { origin: Origin, message: String },
    #[error("cannot read job file '{path}': {message}")]
    Read { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// One `key[=value]` with its origin.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOpt {
    pub key: String,
    /// `None` for a bare flag.
    pub value: Option<String>,
    pub origin: Origin,
}

/// A job section as read: its name and lines (globals in force included).
#[derive(Debug, Clone, PartialEq)]
pub struct RawJob {
    pub name: String,
    pub opts: Vec<RawOpt>,
    /// First job of a later job file: starts a new group.
    pub file_boundary: bool,
    /// How many of `opts`, from the start, are `[global]` and command-line
    /// defaults rather than the job's own (fio's "global options").
    pub globals: usize,
}

/// Replace `${VAR}` from the environment and fio's built-in `$pagesize`,
/// `$ncpus`, `$mb_memory`.
fn substitute(line: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(inner) = after.strip_prefix('{') {
            if let Some(end) = inner.find('}') {
                out.push_str(&env(&inner[..end]).unwrap_or_default());
                rest = &inner[end + 1..];
                continue;
            }
        }
        let word: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let builtin = match word.as_str() {
            "pagesize" => Some(dioscope_sys::buf::page_size().to_string()),
            "ncpus" => Some(dioscope_sys::proc::ncpus().to_string()),
            "mb_memory" => Some(mb_memory().to_string()),
            _ => None,
        };
        match builtin {
            Some(v) => {
                out.push_str(&v);
                rest = &after[word.len()..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn mb_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|v| v.parse::<u64>().ok())
                })
        })
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

thread_local! {
    /// Job files read by this thread's current parse (includes counted each time).
    static FILES_READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Every job file and include this thread's current parse read: the
    /// command's inputs, which no file dioscope creates may replace.
    static INPUTS: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Read a job file, following `include` lines, into (key, value) lines per section.
/// `stack` holds the files being read, outermost first, to refuse include loops.
fn read_lines(
    path: &Path,
    stack: &mut Vec<PathBuf>,
    out: &mut Vec<(String, Origin)>,
) -> Result<(), ParseError> {
    if stack.len() > 16 {
        return Err(ParseError::Read {
            path: path.display().to_string(),
            message: "includes nest more than 16 deep".into(),
        });
    }
    // Without this a file that includes itself twice would be read 2^16 times.
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(first) = stack.iter().position(|p| *p == canonical) {
        let chain: Vec<String> = stack[first..]
            .iter()
            .chain([&canonical])
            .map(|p| p.display().to_string())
            .collect();
        return Err(ParseError::Read {
            path: path.display().to_string(),
            message: format!(
                "include loop: {}; remove one of the include lines",
                chain.join(" includes ")
            ),
        });
    }
    // Bounded input (job/input.rs): regular files only, size and fan-out limits.
    let fanout = |message: String| ParseError::Read {
        path: path.display().to_string(),
        message,
    };
    FILES_READ.with(|n| n.set(n.get() + 1));
    if FILES_READ.with(|n| n.get()) > super::input::MAX_INCLUDED_FILES {
        return Err(fanout(format!(
            "includes read more than {} files in all (an include fan-out?); include each file once",
            super::input::MAX_INCLUDED_FILES
        )));
    }
    if out.len() > super::input::MAX_TOTAL_LINES {
        return Err(fanout(format!(
            "job files and includes expand to more than {} lines (an include fan-out?); include each file once",
            super::input::MAX_TOTAL_LINES
        )));
    }
    let text = super::input::read_job_file(path).map_err(|message| ParseError::Read {
        path: path.display().to_string(),
        message,
    })?;
    INPUTS.with(|v| {
        let mut v = v.borrow_mut();
        if !v.contains(&canonical) {
            v.push(canonical.clone());
        }
    });
    stack.push(canonical);
    for (i, line) in text.lines().enumerate() {
        let origin = Origin::File {
            path: path.display().to_string(),
            line: i + 1,
        };
        let t = line.trim();
        if let Some(inc) = t
            .strip_prefix("include ")
            .or_else(|| t.strip_prefix("include\t"))
        {
            let inc = substitute(inc.trim(), &env_lookup);
            let p = crate::osstr::path(&inc);
            let p = p.as_path();
            let full: PathBuf = if p.is_absolute() {
                p.into()
            } else {
                path.parent().unwrap_or(Path::new(".")).join(p)
            };
            read_lines(&full, stack, out)?;
            continue;
        }
        out.push((line.to_string(), origin));
    }
    stack.pop();
    Ok(())
}

/// Parse job-file text (already with includes resolved) into jobs.
fn parse_ini(
    lines: &[(String, Origin)],
    cli_defaults: &[RawOpt],
    file_boundary: bool,
) -> Result<Vec<RawJob>, ParseError> {
    let mut globals: Vec<RawOpt> = cli_defaults.to_vec();
    let mut jobs: Vec<RawJob> = Vec::new();
    // None: in [global] (or before any section); Some(i): in jobs[i].
    let mut current: Option<usize> = None;
    for (line, origin) in lines {
        let t = line.trim();
        if t.is_empty() || t.starts_with(';') || t.starts_with('#') {
            continue;
        }
        if let Some(sec) = t.strip_prefix('[') {
            let name = sec.strip_suffix(']').ok_or_else(|| ParseError::Syntax {
                origin: origin.clone(),
                message: format!("section header '{t}' has no closing ']'"),
            })?;
            let name = name.trim();
            if name.is_empty() {
                return Err(ParseError::Syntax {
                    origin: origin.clone(),
                    message: "empty section name '[]'".into(),
                });
            }
            if name == "global" {
                current = None;
            } else {
                jobs.push(RawJob {
                    name: name.to_string(),
                    opts: globals.clone(),
                    file_boundary: file_boundary && jobs.is_empty(),
                    globals: globals.len(),
                });
                current = Some(jobs.len() - 1);
            }
            continue;
        }
        // fio evaluates a value that used one of its keywords as an
        // expression: `size=8*1024*$pagesize` is 32 MiB, while the same
        // text with a number in place of the keyword reads as 8.
        let keyword = ["$pagesize", "$ncpus", "$mb_memory"]
            .iter()
            .any(|k| t.contains(k));
        let t = substitute(t, &env_lookup);
        // Trailing comments after a value: fio allows ';' comments at line end.
        let t = match t
            .find(" ;")
            .or_else(|| t.find("\t;"))
            .or_else(|| t.find(" #"))
        {
            Some(i) => t[..i].trim_end().to_string(),
            None => t,
        };
        let (key, value) = match t.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (t.trim().to_string(), None),
        };
        let value = match value {
            Some(v) if keyword && !v.starts_with('(') && v.contains(['*', '/', '+', '%', '^']) => {
                Some(format!("({v})"))
            }
            v => v,
        };
        let opt = RawOpt {
            key,
            value,
            origin: origin.clone(),
        };
        match current {
            None => globals.push(opt),
            Some(i) => jobs[i].opts.push(opt),
        }
    }
    Ok(jobs)
}

/// Parse one job file.
pub fn parse_job_file(
    path: &Path,
    cli_defaults: &[RawOpt],
    file_boundary: bool,
) -> Result<Vec<RawJob>, ParseError> {
    let mut lines = Vec::new();
    FILES_READ.with(|n| n.set(0));
    read_lines(path, &mut Vec::new(), &mut lines)?;
    parse_ini(&lines, cli_defaults, file_boundary)
}

/// Parse job-file text given as a string (tests, fuzzing).
pub fn parse_job_text(text: &str) -> Result<Plan, ParseError> {
    let lines: Vec<(String, Origin)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            (
                l.to_string(),
                Origin::File {
                    path: "<text>".into(),
                    line: i + 1,
                },
            )
        })
        .collect();
    let jobs = parse_ini(&lines, &[], false)?;
    let mut plan = Plan::default();
    for rj in jobs {
        plan.jobs.push(build_job(&rj, &mut plan.global, false)?);
    }
    Ok(plan)
}

fn check_kind(def: &OptDef, raw: &RawOpt) -> Result<String, ParseError> {
    match (&raw.value, def.kind) {
        (Some(v), _) => Ok(v.clone()),
        (None, Kind::Flag | Kind::OptStr) => Ok(String::new()),
        (None, _) => Err(ParseError::MissingValue {
            name: raw.key.clone(),
            origin: raw.origin.clone(),
            example: def.example.to_string(),
        }),
    }
}

fn resolve_def(raw: &RawOpt) -> Result<&'static OptDef, ParseError> {
    if let Some(d) = lookup(&raw.key) {
        return Ok(d);
    }
    if let Some(reason) = not_supported(&raw.key) {
        return Err(ParseError::Unimplemented {
            name: raw.key.clone(),
            origin: raw.origin.clone(),
            reason: reason.to_string(),
        });
    }
    let suggestion = closest(&raw.key).map(|(n, o)| {
        if n == o.name {
            format!("'{n}'")
        } else {
            format!("'{n}' (same as '{}')", o.name)
        }
    });
    Err(ParseError::UnknownOption {
        name: raw.key.clone(),
        origin: raw.origin.clone(),
        suggestion,
    })
}

/// Apply one raw option to a job or the globals.
pub fn apply(
    raw: &RawOpt,
    job: &mut JobSpec,
    global: &mut super::spec::GlobalSettings,
) -> Result<(), ParseError> {
    let def = resolve_def(raw)?;
    let value = check_kind(def, raw)?;
    super::debug::parse(|| format!("handle_option={}, ptr={value}", def.name));
    let bad = |reason: String| ParseError::BadValue {
        name: raw.key.clone(),
        value: value.clone(),
        origin: raw.origin.clone(),
        reason,
        example: def.example.to_string(),
    };
    let value = match abbreviation(def, &value) {
        // A value as given comes first; only one that fails is read as an
        // abbreviation, so no value that works today changes meaning.
        Some(long) => match def.set(job, global, &value) {
            Ok(()) => value,
            Err(e) => {
                def.set(job, global, &long).map_err(|_| bad(e))?;
                long
            }
        },
        None => {
            def.set(job, global, &value).map_err(bad)?;
            value
        }
    };
    if def.apply.is_job() && def.name != "name" {
        // "job options" in the JSON: last one wins, as in fio.
        job.given.retain(|(k, _)| k != def.name);
        job.given.push((def.name.to_string(), value));
    }
    Ok(())
}

/// `value` with its leading word (before any `:` or `,`) spelled out, when
/// that word is not one of the option's choices but begins one: the first
/// in the option's list, which keeps fio's order (`rw=r` → `read`,
/// `rw=w` → `write`, `rw=rand` → `randread`, `verify=crc` → `crc32c`).
/// None for options without a fixed list of values.
pub fn abbreviation(def: &OptDef, value: &str) -> Option<String> {
    let Kind::Choice(choices) = def.kind else {
        return None;
    };
    let v = value.trim();
    let end = v.find([':', ',']).unwrap_or(v.len());
    let (head, rest) = v.split_at(end);
    if head.is_empty() || choices.contains(&head) {
        return None;
    }
    choices
        .iter()
        .find(|c| c.starts_with(head))
        .map(|c| format!("{c}{rest}"))
}

/// Build a [`JobSpec`] from a raw job: fio defaults, then each option in order.
fn build_job(
    raw: &RawJob,
    global: &mut super::spec::GlobalSettings,
    cli_default_template: bool,
) -> Result<JobSpec, ParseError> {
    let mut j = if cli_default_template {
        default_job()
    } else {
        JobSpec::default()
    };
    j.name = raw.name.clone();
    refusal(&raw.opts)?;
    // kb_base decides what every size of the job means, wherever it is given.
    let kb_base = raw
        .opts
        .iter()
        .rev()
        .find(|o| o.key == "kb_base")
        .and_then(|o| o.value.as_deref())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|b| *b == 1000)
        .unwrap_or(1024);
    super::units::take_ignored_tails();
    super::units::with_kb_base(kb_base, || {
        raw.opts.iter().enumerate().try_for_each(|(i, o)| {
            // fio names a job by its section (or the `name=` in it): a
            // `name=` in [global] names no job (it stays in the JSON's
            // "global options").
            if i < raw.globals && !cli_default_template && o.key.trim() == "name" {
                return Ok(());
            }
            apply(o, &mut j, global)?;
            for tail in super::units::take_ignored_tails() {
                global.warnings.push(format!(
                    "job '{}': {}={tail} is ignored, as fio ignores it; write {}= without it",
                    j.name,
                    o.key.trim(),
                    o.key.trim()
                ));
            }
            Ok(())
        })
    })?;
    if raw.file_boundary {
        j.stonewall = true;
    }
    if j.time_based && j.runtime_us == 0 {
        // fio warns and runs the job by its size.
        j.time_based = false;
        global.warnings.push(format!(
            "job '{}': time_based needs a runtime, and none is given: the job runs by its size \
             (as fio does); add runtime= (for example runtime=30s) to run by time",
            j.name
        ));
    }
    super::options::engines::adjust(&mut j);
    validate(&j)?;
    Ok(j)
}

/// fio's engines and zone modes that dioscope refuses (engines/refused.rs),
/// judged before any option is applied: the engine is named even when the
/// job also sets its own options (`hostname=` for net), which would
/// otherwise read as unknown.
fn refusal(opts: &[RawOpt]) -> Result<(), ParseError> {
    use crate::engines::refused;
    for key in ["ioengine", "zonemode"] {
        let last = opts.iter().rev().find(|o| o.key == key);
        if let Some((o, v)) = last.and_then(|o| Some((o, o.value.as_deref()?))) {
            if let Some(r) = refused::selected(key, v) {
                return Err(ParseError::Invalid(format!(
                    "{}; set {}",
                    r.message(v.trim()),
                    o.origin
                )));
            }
            if key == "ioengine" && EngineKind::parse(v.trim()).is_none() {
                // An engine neither dioscope nor fio has: its error comes
                // before any about the options that engine would take.
                let mut scratch = super::spec::GlobalSettings::default();
                apply(o, &mut JobSpec::default(), &mut scratch)?;
            }
        }
    }
    for o in opts.iter().filter(|o| lookup(&o.key).is_none()) {
        if let Some(m) = refused::option_message(&o.key) {
            return Err(ParseError::Invalid(format!("{m}; set {}", o.origin)));
        }
    }
    Ok(())
}

/// Checks that need only the job itself (the target is checked later).
pub fn validate(j: &JobSpec) -> Result<(), ParseError> {
    let invalid = |m: String| Err(ParseError::Invalid(format!("job '{}': {m}", j.name)));
    if j.name.is_empty() {
        return invalid("a job needs a name (--name=NAME or a [NAME] section)".into());
    }
    if j.iodepth_batch_complete_min > j.iodepth {
        return invalid(format!(
            "iodepth_batch_complete_min={} is larger than iodepth={}; lower it to at most {}",
            j.iodepth_batch_complete_min, j.iodepth, j.iodepth
        ));
    }
    if j.time_based && j.runtime_us == 0 {
        return invalid("time_based needs a runtime, for example runtime=10s".into());
    }
    if j.verify.is_some() {
        let iv = j.verify_interval_used();
        if iv < 512 {
            return invalid(format!("verify needs intervals of at least 512 bytes to hold its header; use verify_interval=512 or a larger bs (now {iv})"));
        }
        if j.verify_unit().is_none() {
            if let Some(b) = j.bs[0]
                .all()
                .into_iter()
                .chain(j.bs[1].all())
                .find(|b| b % iv != 0)
            {
                return invalid(format!("bs={b} is not a multiple of the verify interval {iv}, and the block sizes vary, so intervals would fall differently in each block; set verify_interval to a common divisor such as verify_interval={}, or use one block size", gcd(b, iv)));
            }
        }
    }
    super::options::workload::validate(j)
        .map_err(|m| ParseError::Invalid(format!("job '{}': {m}", j.name)))?;
    if j.verify.as_deref() == Some("pattern_hdr") && j.verify_pattern.is_none() {
        return invalid(
            "verify=pattern_hdr checks a verify_pattern behind a header; give one, for example verify_pattern=0xdeadbeef".into(),
        );
    }
    if j.verify_only && j.verify.is_none() {
        return invalid("verify_only needs a verify method, for example verify=crc32c".into());
    }
    for bs in [&j.bs[0], &j.bs[1]] {
        if let BlockSizes::Split(v) = bs {
            if v.iter().map(|x| x.1).sum::<u32>() != 100 {
                return invalid(
                    "bssplit percentages must add up to 100, for example bssplit=4k/50:64k/50"
                        .into(),
                );
            }
        }
    }
    engine_can(j)?;
    atomic_can(j).map_err(|m| ParseError::Invalid(format!("job '{}': {m}", j.name)))?;
    super::options::engines::validate(j)
        .map_err(|m| ParseError::Invalid(format!("job '{}': {m}", j.name)))?;
    if let Err(m) = super::options::buffers::validate(j) {
        return invalid(m);
    }
    Ok(())
}

/// Refuse an engine option the job's engine cannot honour, rather than ignore it.
fn engine_can(j: &JobSpec) -> Result<(), ParseError> {
    type Has = fn(&crate::engines::Caps) -> bool;
    let wanted: [(&str, bool, Has); 5] = [
        ("hipri", j.hipri, |c| c.hipri),
        ("nowait", j.nowait, |c| c.nowait),
        ("uncached", j.uncached, |c| c.rwf_flags),
        ("atomic", j.atomic, |c| c.rwf_flags),
        ("sqthread_poll", j.sqthread_poll, |c| c.sqpoll),
    ];
    // fio's null engine "pretends" its I/O verified: it runs, verifying
    // nothing, and the runner notes it. Other engines that move no data
    // (space operations, page faults, CPU work) would leave it unchecked.
    if j.verify.is_some() && !j.ioengine.caps().moves_data && !j.ioengine.caps().fakes_verify {
        return Err(ParseError::Invalid(format!(
            "job '{}': verify needs an engine that moves data, and ioengine={} does not \
             (its I/Os move no data to check); drop verify or change ioengine=",
            j.name,
            j.ioengine.as_str(),
        )));
    }
    if j.ioengine.caps().by_name && j.rw.trims() {
        return Err(ParseError::Invalid(format!(
            "job '{}': ioengine={} does one metadata operation per file and cannot trim; \
             use rw=read (or write, where the latency is reported) or another engine",
            j.name,
            j.ioengine.as_str()
        )));
    }
    for (opt, on, has) in wanted {
        if on && !has(&j.ioengine.caps()) {
            let with: Vec<&str> = EngineKind::ALL
                .iter()
                .filter(|k| has(&k.caps()))
                .map(|k| k.as_str())
                .collect();
            return Err(ParseError::Invalid(format!(
                "job '{}': not supported by dioscope: {opt} with ioengine={} ({opt} works with \
                 {}); drop {opt} or change ioengine=",
                j.name,
                j.ioengine.as_str(),
                with.join(" or ")
            )));
        }
    }
    Ok(())
}

/// `atomic=1`'s rules that need no file: RWF_ATOMIC is for direct writes,
/// each naturally aligned to its size, so one power-of-two write size. The
/// file's own limits (statx) are checked when it is open.
fn atomic_can(j: &JobSpec) -> Result<(), String> {
    if !j.atomic {
        return Ok(());
    }
    if !j.direct {
        return Err(
            "atomic=1 (RWF_ATOMIC) needs direct=1: the kernel takes atomic writes \
                    only as direct I/O (buffered ones fail with EOPNOTSUPP); add direct=1"
                .into(),
        );
    }
    let sizes = j.bs[1].all();
    if j.rw.writes() && sizes.len() != 1 {
        return Err(format!(
            "atomic=1 writes must each be aligned to their own size, which mixed write \
             sizes ({}) cannot promise; use one write block size (bs=)",
            sizes
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    match sizes.first() {
        Some(&b) if j.rw.writes() && !b.is_power_of_two() => Err(format!(
            "atomic=1 writes must be a power of two in size, and bs={b} is not; use e.g. bs={}",
            b.next_power_of_two()
        )),
        _ => Ok(()),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// SPEC.md's default job: 4 KiB random reads, io_uring, QD 32, O_DIRECT, a
/// 1 GiB scratch file, a short ramp, three trials.
pub fn default_job() -> JobSpec {
    JobSpec {
        name: "default".into(),
        rw: RwMode::RandRead,
        ioengine: EngineKind::IoUring,
        iodepth: 32,
        iodepth_batch_submit: 0,
        iodepth_batch_complete_min: 0,
        direct: true,
        size: Some(super::units::SizeOrPct::Bytes(1 << 30)),
        runtime_us: 8_000_000,
        time_based: true,
        ramp_time_us: 2_000_000,
        trials: 3,
        ..JobSpec::default()
    }
}

/// Parse the arguments after `dioscope` / `dioscope run` into a plan: read
/// the command line (invocation-wide options applied at once), then the job
/// files, then build every job.
pub fn parse_args<S: AsRef<str>>(args: &[S]) -> Result<Plan, ParseError> {
    let mut plan = Plan::default();
    let cli = read_command_line(args, &mut plan)?;
    INPUTS.with(|v| v.borrow_mut().clear());
    let raw_jobs = gather_jobs(&cli);
    plan.inputs = INPUTS.with(|v| std::mem::take(&mut *v.borrow_mut()));
    build_jobs(&mut plan, raw_jobs?, cli.defaults)?;
    Ok(plan)
}

/// The command line, sorted: options before the first `--name` (defaults
/// for every job), the `--name` jobs with their options, the job files.
#[derive(Default)]
struct CommandLine {
    defaults: Vec<RawOpt>,
    jobs: Vec<RawJob>,
    files: Vec<String>,
}

/// Walk the arguments in order (`--name` starts a job: fio's
/// order-dependent grouping); options that apply to the whole invocation
/// go into `plan.global` at once, and an unknown option fails here.
fn read_command_line<S: AsRef<str>>(
    args: &[S],
    plan: &mut Plan,
) -> Result<CommandLine, ParseError> {
    let mut cli = CommandLine::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_ref();
        i += 1;
        let Some(opt) = a.strip_prefix("--") else {
            if a.starts_with('-') && a.len() > 1 {
                return Err(ParseError::Syntax {
                    origin: Origin::CommandLine,
                    message: format!("'{a}' is not an option; options are written --name=value"),
                });
            }
            cli.files.push(a.to_string());
            continue;
        };
        let raw = option_word(opt, args, &mut i);
        place_option(raw, plan, &mut cli)?;
    }
    Ok(cli)
}

/// `--key=value`, `--flag`, or `--key value` (the value in the next word,
/// for options that need one: `--output res.json`); `i` moves past what
/// was taken.
fn option_word<S: AsRef<str>>(opt: &str, args: &[S], i: &mut usize) -> RawOpt {
    let (key, mut value) = match opt.split_once('=') {
        Some((k, v)) => (k.to_string(), Some(v.to_string())),
        None => (opt.to_string(), None),
    };
    if value.is_none() {
        if let Some(def) = lookup(&key) {
            if def.kind != Kind::Flag && *i < args.len() && !args[*i].as_ref().starts_with("--") {
                value = Some(args[*i].as_ref().to_string());
                *i += 1;
            }
        }
    }
    RawOpt {
        key,
        value,
        origin: Origin::CommandLine,
    }
}

/// Where one command-line option goes: the invocation (global options and
/// `--trials`, which the command line sets for every job), a new job
/// (`--name`), the current job, or the defaults before any job.
fn place_option(raw: RawOpt, plan: &mut Plan, cli: &mut CommandLine) -> Result<(), ParseError> {
    // Options dioscope does not know (those of engines it refuses among
    // them) belong to the job: `refusal` names a refused engine once the
    // job is complete, wherever its options came on the command line, and
    // an unknown option is reported when the job is built.
    if lookup(&raw.key).is_none() {
        match cli.jobs.last_mut() {
            Some(j) => j.opts.push(raw),
            None => cli.defaults.push(raw),
        }
        return Ok(());
    }
    let def = resolve_def(&raw)?;
    if let Apply::Global(_) = def.apply {
        return apply(&raw, &mut JobSpec::default(), &mut plan.global);
    }
    if def.name == "trials" {
        let mut scratch = JobSpec::default();
        apply(&raw, &mut scratch, &mut plan.global)?;
        plan.global.trials = Some(scratch.trials);
        return Ok(());
    }
    if def.name == "name" {
        let v = check_kind(def, &raw)?;
        cli.jobs.push(RawJob {
            name: v.trim().to_string(),
            opts: cli.defaults.clone(),
            file_boundary: false,
            globals: cli.defaults.len(),
        });
        return Ok(());
    }
    match cli.jobs.last_mut() {
        Some(j) => j.opts.push(raw),
        None => cli.defaults.push(raw),
    }
    Ok(())
}

/// The jobs of the job files (the command line's defaults under each),
/// then the command line's own jobs.
fn gather_jobs(cli: &CommandLine) -> Result<Vec<RawJob>, ParseError> {
    let mut raw_jobs = Vec::new();
    for (n, f) in cli.files.iter().enumerate() {
        raw_jobs.extend(parse_job_file(
            &crate::osstr::path(f),
            &cli.defaults,
            n > 0,
        )?);
    }
    if !cli.files.is_empty() && raw_jobs.is_empty() {
        return Err(ParseError::Invalid(format!(
            "no jobs in {}: add a job section such as [job1] after [global]",
            cli.files.join(", ")
        )));
    }
    raw_jobs.extend(cli.jobs.iter().cloned());
    Ok(raw_jobs)
}

/// Build every job; with none, SPEC's default job with the options given
/// applied on top. The command line's `--trials` overrides every job's.
fn build_jobs(
    plan: &mut Plan,
    raw_jobs: Vec<RawJob>,
    defaults: Vec<RawOpt>,
) -> Result<(), ParseError> {
    if raw_jobs.is_empty() {
        plan.is_default_job = true;
        let raw = RawJob {
            name: "default".into(),
            globals: defaults.len(),
            opts: defaults,
            file_boundary: false,
        };
        plan.jobs.push(build_job(&raw, &mut plan.global, true)?);
    } else {
        for rj in &raw_jobs {
            plan.jobs.push(build_job(rj, &mut plan.global, false)?);
        }
        super::options::workload::resolve_wait_for(&mut plan.jobs).map_err(ParseError::Invalid)?;
        // fio's JSON "global options": what [global] (and the command line
        // before the first job) set for the first job, last value winning.
        let first = &raw_jobs[0];
        for o in &first.opts[..first.globals] {
            let Some(def) = lookup(&o.key) else { continue };
            if matches!(def.apply, Apply::Global(_)) || def.name == "trials" {
                continue;
            }
            let v = o.value.clone().unwrap_or_default();
            plan.global_options.retain(|(k, _)| k != def.name);
            plan.global_options.push((def.name.to_string(), v));
        }
    }
    if let Some(t) = plan.global.trials {
        for j in &mut plan.jobs {
            j.trials = t;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_style_job_text() {
        let plan = parse_job_text(
            "; a comment\n# another\n[global]\nioengine=libaio\ndirect=1\nbs=4k\nthread\n\n[reader]\nrw=randread\niodepth=16\n\n[writer]\nrw=write\nbs=64k\n",
        )
        .unwrap();
        assert_eq!(plan.jobs.len(), 2);
        let r = &plan.jobs[0];
        assert_eq!(r.name, "reader");
        assert_eq!(r.ioengine, EngineKind::Libaio);
        assert!(r.direct);
        assert_eq!(r.iodepth, 16);
        assert_eq!(r.rw, RwMode::RandRead);
        let w = &plan.jobs[1];
        assert_eq!(w.bs[1], BlockSizes::Fixed(65536));
        assert_eq!(w.iodepth, 1);
        assert_eq!(w.rw, RwMode::Write);
    }

    #[test]
    fn a_global_name_names_no_job() {
        // fio 3.33: jobs a, bee, c.
        let plan =
            parse_job_text("[global]\nname=glob\nsize=1m\n[a]\n[b]\nname=bee\n[c]\n").unwrap();
        let names: Vec<&str> = plan.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["a", "bee", "c"]);
    }

    #[test]
    fn a_choice_may_be_abbreviated_to_the_first_value_it_begins() {
        let ab = |name: &str, v: &str| abbreviation(lookup(name).unwrap(), v);
        assert_eq!(ab("rw", "r").as_deref(), Some("read"));
        assert_eq!(ab("rw", "w").as_deref(), Some("write"));
        assert_eq!(ab("rw", "randr:4").as_deref(), Some("randread:4"));
        assert_eq!(ab("rw", "t").as_deref(), Some("trim"));
        assert_eq!(ab("rw", "rw"), None, "a whole value is itself");
        assert_eq!(ab("rw", "x"), None);
        assert_eq!(ab("verify", "crc").as_deref(), Some("crc32c"));
        assert_eq!(ab("ioengine", "lib").as_deref(), Some("libaio"));
        assert_eq!(ab("bs", "4"), None, "only options with a list of values");
        let plan = parse_job_text("[a]\nrw=w\nioengine=io_u\nverify=md\n").unwrap();
        let j = &plan.jobs[0];
        assert_eq!(
            (j.rw, j.ioengine, j.verify.as_deref()),
            (RwMode::Write, EngineKind::IoUring, Some("md5"))
        );
        // The value as given wins where it works: verify=0 is off, not crc…
        let plan = parse_job_text("[a]\nverify=0\n").unwrap();
        assert_eq!(plan.jobs[0].verify, None);
        assert!(parse_job_text("[a]\nrw=zz\n").is_err());
    }

    #[test]
    fn later_global_applies_only_below() {
        let plan = parse_job_text("[a]\nrw=read\n[global]\nbs=8k\n[b]\n").unwrap();
        assert_eq!(plan.jobs[0].bs[0], BlockSizes::Fixed(4096));
        assert_eq!(plan.jobs[1].bs[0], BlockSizes::Fixed(8192));
    }

    #[test]
    fn env_and_builtins() {
        std::env::set_var("DIOSCOPE_TEST_BS", "16k");
        let plan =
            parse_job_text("[a]\nbs=${DIOSCOPE_TEST_BS}\nsize=(1024*4)\nnumjobs=$ncpus\n").unwrap();
        assert_eq!(plan.jobs[0].bs[0], BlockSizes::Fixed(16384));
        assert_eq!(
            plan.jobs[0].size,
            Some(crate::job::units::SizeOrPct::Bytes(4096))
        );
        assert_eq!(plan.jobs[0].numjobs as usize, dioscope_sys::proc::ncpus());
        assert_eq!(
            substitute("x=${DIOSCOPE_NOPE_NOT_SET}y", &env_lookup),
            "x=y"
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let e = parse_args(&["--blocksiz=4k"]).unwrap_err().to_string();
        assert!(
            e.contains("blocksiz") && e.contains("blocksize") && e.contains("bs"),
            "{e}"
        );
        let e = parse_args(&["--bs=banana"]).unwrap_err().to_string();
        assert!(e.contains("banana") && e.contains("bs=4k"), "{e}");
        let e = parse_job_text("[a]\niodepth\n").unwrap_err().to_string();
        assert!(e.contains("needs a value") && e.contains(":2"), "{e}");
        let (name, why) = crate::job::options::FIO_UNIMPLEMENTED[0];
        let e = parse_job_text(&format!("[a]\n{name}=1\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("not supported by dioscope: {name} ({why})")) && e.contains(":2"),
            "{e}"
        );
        let e = parse_job_text("[a\n").unwrap_err().to_string();
        assert!(e.contains("closing"), "{e}");
        // A value outside the option's range: the option, the value, the
        // range and an example, in one error, before anything is applied.
        let e = parse_job_text("[a]\niodepth=0\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid value '0' for option 'iodepth' at <text>:2: 0 is out of range: iodepth must \
             be at least 1; a valid example: iodepth=32",
        );
        let e = parse_args(&["--name=a", "--rwmixread=150"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("from 0 to 100") && e.contains("rwmixread=70"),
            "{e}"
        );
        let e = parse_args(&["--max-trials=0"]).unwrap_err().to_string();
        assert!(e.contains("max-trials must be at least 1"), "{e}");
    }

    #[test]
    fn kb_base_decides_what_the_jobs_sizes_mean() {
        let p =
            parse_job_text("[a]\nbs=4k\nkb_base=1000\nsize=1m\n[b]\nbs=4KiB\nsize=1m\n").unwrap();
        assert_eq!(p.jobs[0].bs[0], BlockSizes::Fixed(4000));
        assert_eq!(
            p.jobs[0].size,
            Some(crate::job::units::SizeOrPct::Bytes(1_000_000))
        );
        // Job b keeps fio's default (compatibility) units.
        assert_eq!(p.jobs[1].bs[0], BlockSizes::Fixed(4000));
        assert_eq!(
            p.jobs[1].size,
            Some(crate::job::units::SizeOrPct::Bytes(1 << 20))
        );
        let e = parse_job_text("[a]\nkb_base=512\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("kb_base") && e.contains("1000"), "{e}");
        let e = parse_job_text("[a]\nunit_base=1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not supported by dioscope"), "{e}");
        let p = parse_job_text("[a]\nunit_base=8\ndescription=my job\n").unwrap();
        assert_eq!(p.jobs[0].description.as_deref(), Some("my job"));
    }

    #[test]
    fn global_options_are_what_global_set() {
        let p = parse_job_text("[global]\nbs=8k\nioengine=null\n[a]\nrw=read\n[b]\n").unwrap();
        assert!(
            p.global_options.is_empty(),
            "parse_job_text is not an invocation"
        );
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("g.fio");
        std::fs::write(
            &f,
            "[global]\nbs=8k\nioengine=null\nbs=16k\n[a]\nrw=read\n[b]\n",
        )
        .unwrap();
        let p = parse_args(&[f.to_str().unwrap()]).unwrap();
        assert_eq!(
            p.global_options,
            [
                ("ioengine".to_string(), "null".to_string()),
                ("bs".to_string(), "16k".to_string())
            ]
        );
        let p = parse_args(&["--name=a", "--ioengine=null"]).unwrap();
        assert!(p.global_options.is_empty());
    }

    #[test]
    fn command_line_jobs() {
        let p = parse_args(&[
            "--output-format=json",
            "--ioengine=null",
            "--name=a",
            "--rw=randread",
            "--name=b",
            "--rw=write",
            "--bs",
            "8k",
        ])
        .unwrap();
        assert_eq!(p.global.output_format, "json");
        assert_eq!(p.jobs.len(), 2);
        assert_eq!(p.jobs[0].ioengine, EngineKind::Null);
        assert_eq!(p.jobs[1].ioengine, EngineKind::Null);
        assert_eq!(p.jobs[1].bs[0], BlockSizes::Fixed(8192));
        assert!(!p.is_default_job);
    }

    #[test]
    fn default_job_with_overrides() {
        let p = parse_args::<&str>(&[]).unwrap();
        assert!(p.is_default_job);
        assert_eq!(p.jobs[0].iodepth, 32);
        assert_eq!(p.jobs[0].trials, 3);
        let p = parse_args(&["--runtime=2", "--trials=1"]).unwrap();
        assert_eq!(p.jobs[0].runtime_us, 2_000_000);
        assert_eq!(p.jobs[0].trials, 1);
    }

    #[test]
    fn include_and_files_are_groups() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("common.inc"), "bs=16k\nioengine=null\n").unwrap();
        std::fs::write(
            d.path().join("a.fio"),
            "[global]\ninclude common.inc\n[x]\nrw=read\n",
        )
        .unwrap();
        std::fs::write(d.path().join("b.fio"), "[y]\nrw=write\n").unwrap();
        let a = d.path().join("a.fio");
        let b = d.path().join("b.fio");
        let p = parse_args(&[a.to_str().unwrap(), b.to_str().unwrap()]).unwrap();
        assert_eq!(p.jobs[0].bs[0], BlockSizes::Fixed(16384));
        assert_eq!(p.jobs[0].ioengine, EngineKind::Null);
        assert!(!p.jobs[0].stonewall);
        assert!(p.jobs[1].stonewall, "a second job file starts a new group");
    }

    #[test]
    fn include_loops_are_refused() {
        let d = tempfile::tempdir().unwrap();
        // Included twice per level, a self-include used to be read 2^16 times.
        std::fs::write(
            d.path().join("loop.fio"),
            "[a]\ninclude loop.fio\ninclude ./loop.fio\n",
        )
        .unwrap();
        std::fs::write(d.path().join("x.inc"), "include y.inc\n").unwrap();
        std::fs::write(d.path().join("y.inc"), "include x.inc\n").unwrap();
        std::fs::write(d.path().join("b.fio"), "[b]\ninclude x.inc\n").unwrap();
        let e = parse_args(&[d.path().join("loop.fio").to_str().unwrap()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("include loop") && e.contains("loop.fio"), "{e}");
        let e = parse_args(&[d.path().join("b.fio").to_str().unwrap()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.inc includes") && e.contains("y.inc"), "{e}");
        // The same file included twice side by side is not a loop.
        std::fs::write(d.path().join("bs.inc"), "bs=8k\n").unwrap();
        std::fs::write(
            d.path().join("twice.fio"),
            "[t]\ninclude bs.inc\ninclude bs.inc\nioengine=null\n",
        )
        .unwrap();
        let p = parse_args(&[d.path().join("twice.fio").to_str().unwrap()]).unwrap();
        assert_eq!(p.jobs[0].bs[0], BlockSizes::Fixed(8192));
    }
}
