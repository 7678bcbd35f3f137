//! fio's invocation flags that are not job options (`--readonly`,
//! `--minimal`, `--showcmd`, `--cmdhelp`, …): one table, [`FLAGS`], from
//! which the run command takes them out of its arguments before the job
//! parser sees the rest, and from which `--help` lists them. A flag fio has
//! but dioscope cannot honour is in the table too, and refused with the
//! reason and what to do instead, never accepted and ignored.

use crate::engines::EngineKind;
use crate::job::options::{self, Kind};

/// The flags given, after [`split`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    pub readonly: bool,
    pub showcmd: bool,
    pub parse_only: bool,
    /// `--minimal`, given after any `--output-format` (fio: the last of
    /// the two wins; an `--output-format` after it clears this).
    pub minimal: bool,
    pub append_terse: bool,
    /// `--cmdhelp[=OPTION]`: "" or "all" for every option.
    pub cmdhelp: Option<String>,
    /// `--enghelp[=ENGINE[,CMD]]`: "" for the list of engines.
    pub enghelp: Option<String>,
    /// `--eta-newline=TIME`: end the progress line every this many seconds.
    pub eta_newline_s: Option<u64>,
    /// `--section=NAME` (repeatable): run only these sections of the job files.
    pub sections: Vec<String>,
    /// `--max-jobs=N`: refuse a run of more threads than this.
    pub max_jobs: Option<u32>,
    /// `--warnings-fatal`: the parser's warnings are errors.
    pub warnings_fatal: bool,
    /// `--status-interval=TIME`: an interim report every this many ms.
    pub status_interval_ms: Option<u64>,
    /// `--bandwidth-log`: the aggregate agg-*_bw.log files.
    pub bandwidth_log: bool,
    /// `--debug=TYPES`.
    pub debug: Option<crate::job::debug::Request>,
}

/// Whether a flag takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    None,
    Required(&'static str),
    Optional(&'static str),
}

pub struct FlagDef {
    pub name: &'static str,
    pub arg: Arg,
    pub help: &'static str,
    pub apply: fn(&mut Flags, &str) -> Result<(), String>,
}

fn refuse(flag: &str, why: &str) -> Result<(), String> {
    Err(format!("not supported by dioscope: --{flag} ({why})"))
}

/// Every fio invocation flag dioscope knows, in `--help`'s order.
pub static FLAGS: &[FlagDef] = &[
    FlagDef {
        name: "readonly",
        arg: Arg::None,
        help: "refuse, before opening anything, a job that would write (as fio)",
        apply: |f, _| {
            f.readonly = true;
            Ok(())
        },
    },
    FlagDef {
        name: "parse-only",
        arg: Arg::None,
        help: "check the job files and options, run nothing",
        apply: |f, _| {
            f.parse_only = true;
            Ok(())
        },
    },
    FlagDef {
        name: "section",
        arg: Arg::Required("NAME"),
        help: "run only this section of the job files (repeat for more)",
        apply: |f, v| {
            f.sections.push(v.trim().to_string());
            Ok(())
        },
    },
    FlagDef {
        name: "max-jobs",
        arg: Arg::Required("N"),
        help: "refuse a run of more than N job threads (numjobs counted)",
        apply: |f, v| {
            let n = crate::job::units::parse_int(v).map_err(|e| format!("--max-jobs={v}: {e}"))?;
            f.max_jobs = Some(u32::try_from(n).unwrap_or(u32::MAX));
            Ok(())
        },
    },
    FlagDef {
        name: "debug",
        arg: Arg::Required("TYPES"),
        help: "fio's debug categories (process,file,io,…,parse,…; all; help lists them): \
               dioscope prints fio's parse lines, the others print nothing",
        apply: |f, v| {
            f.debug = Some(crate::job::debug::request(v)?);
            Ok(())
        },
    },
    FlagDef {
        name: "showcmd",
        arg: Arg::None,
        help: "print the job files as one dioscope command line, run nothing",
        apply: |f, _| {
            f.showcmd = true;
            Ok(())
        },
    },
    FlagDef {
        name: "minimal",
        arg: Arg::None,
        help: "fio's terse v3 line per job (as --output-format=terse; the last of the two wins)",
        apply: |f, _| {
            f.minimal = true;
            Ok(())
        },
    },
    FlagDef {
        name: "append-terse",
        arg: Arg::None,
        help: "the terse line after the chosen format's output",
        apply: |f, _| {
            f.append_terse = true;
            Ok(())
        },
    },
    FlagDef {
        name: "terse-version",
        arg: Arg::Required("3"),
        help: "the terse format's version: dioscope writes version 3",
        apply: |_, v| match v.trim() {
            "3" => Ok(()),
            o => refuse(
                "terse-version",
                &format!("version {o}; dioscope writes fio's terse version 3: --terse-version=3"),
            ),
        },
    },
    FlagDef {
        name: "cmdhelp",
        arg: Arg::Optional("OPTION"),
        help: "an option's help (all options without a name), run nothing",
        apply: |f, v| {
            f.cmdhelp = Some(v.trim().to_string());
            Ok(())
        },
    },
    FlagDef {
        name: "enghelp",
        arg: Arg::Optional("ENGINE"),
        help: "the engines (or one engine and the options it honours), run nothing",
        apply: |f, v| {
            f.enghelp = Some(v.trim().to_string());
            Ok(())
        },
    },
    FlagDef {
        name: "eta-newline",
        arg: Arg::Required("TIME"),
        help: "with the progress line shown, start a new line every TIME (e.g. 5s)",
        apply: |f, v| {
            let us = crate::job::units::parse_time_us(v, 1_000_000)
                .map_err(|e| format!("--eta-newline={v}: {e}; for example --eta-newline=5s"))?;
            if us < 1_000_000 {
                return Err(format!(
                    "--eta-newline={v}: the progress line is redrawn once a second; give 1s or more"
                ));
            }
            f.eta_newline_s = Some(us / 1_000_000);
            Ok(())
        },
    },
    FlagDef {
        name: "eta-interval",
        arg: Arg::Required("TIME"),
        help: "accepted; no effect: the progress line is redrawn once a second",
        apply: |_, v| {
            crate::job::units::parse_time_us(v, 1000)
                .map_err(|e| format!("--eta-interval={v}: {e}; for example --eta-interval=1s"))?;
            Ok(())
        },
    },
    FlagDef {
        name: "warnings-fatal",
        arg: Arg::None,
        help: "make the job parser's warnings (what fio only warns about, such as time_based \
               without a runtime) errors",
        apply: |f, _| {
            f.warnings_fatal = true;
            Ok(())
        },
    },
    FlagDef {
        name: "alloc-size",
        arg: Arg::Required("KiB"),
        help: "accepted; no effect: dioscope has no shared-memory pool to size",
        apply: |_, v| {
            crate::job::units::parse_int(v).map_err(|e| format!("--alloc-size={v}: {e}"))?;
            Ok(())
        },
    },
    FlagDef {
        name: "status-interval",
        arg: Arg::Required("TIME"),
        help: "while jobs run, print fio's full report every TIME (seconds by default; e.g. \
               500ms) in the run's output formats (json: one whole object per interval; normal: \
               the job blocks; terse: a line), then the final report; with --output, into the \
               file. Values are cumulative from the start of measurement of the running trial \
               (each trial starts from zero; the final report merges the trials); only the \
               running group's jobs, and no disk stats or diagnosis (final report only)",
        apply: |f, v| {
            let us = crate::job::units::parse_time_us(v, 1_000_000).map_err(|e| {
                format!("--status-interval={v}: {e}; for example --status-interval=1s")
            })?;
            if us < 10_000 {
                return Err(format!(
                    "--status-interval={v}: give 10ms or more, for example --status-interval=1s"
                ));
            }
            f.status_interval_ms = Some(us / 1000);
            Ok(())
        },
    },
    FlagDef {
        name: "inflate-log",
        arg: Arg::Required("LOG"),
        help: "refused: dioscope writes no compressed logs (log_store_compressed is refused)",
        apply: |_, _| {
            refuse(
                "inflate-log",
                "dioscope never compresses its logs (log_store_compressed is refused), so there \
                 is nothing to inflate: its logs are text already; fio --inflate-log reads fio's",
            )
        },
    },
    FlagDef {
        name: "bandwidth-log",
        arg: Arg::None,
        help: "write fio's aggregate bandwidth logs agg-read_bw.log, agg-write_bw.log and \
               agg-trim_bw.log here: every job's bandwidth together per measured interval \
               (trial K > 1: agg-read_bw.tK.log)",
        apply: |f, _| {
            f.bandwidth_log = true;
            Ok(())
        },
    },
    FlagDef {
        name: "idle-prof",
        arg: Arg::Required("system|percpu|calibrate"),
        help: "refused: dioscope reports CPU per I/O and the system's busy CPU instead",
        apply: |_, _| {
            refuse(
                "idle-prof",
                "idleness profiling is not implemented; every result has the process's and \
                 the system's CPU per I/O and the system's busy share (the cpu lines and \
                 dioscope.system), and --profile says where the CPU went",
            )
        },
    },
    FlagDef {
        name: "cpuclock-test",
        arg: Arg::None,
        help: "refused: dioscope's clock is clock_gettime(CLOCK_MONOTONIC), not the CPU's",
        apply: |_, _| refuse("cpuclock-test", CLOCK),
    },
    FlagDef {
        name: "crctest",
        arg: Arg::Optional("TYPE"),
        help: "refused: checksum speed tests are not implemented",
        apply: |_, _| {
            refuse(
                "crctest",
                "checksum speed tests are not implemented; a verify job's CPU per I/O shows \
                 what its checksum costs",
            )
        },
    },
    FlagDef {
        name: "merge-blktrace-only",
        arg: Arg::None,
        help: "refused: blktrace merging is not implemented",
        apply: |_, _| {
            refuse(
                "merge-blktrace-only",
                "blktrace merging is not implemented; merge with blkparse, or replay each \
                 trace with read_iolog",
            )
        },
    },
    FlagDef {
        name: "aux-path",
        arg: Arg::Required("DIR"),
        help: "refused: state files are written in the working directory",
        apply: |_, _| {
            refuse(
                "aux-path",
                "verify state files are written in the working directory; run dioscope from \
                 the directory they belong in",
            )
        },
    },
    FlagDef {
        name: "trigger",
        arg: Arg::Required("CMD"),
        help: "refused: triggers are not implemented",
        apply: |_, _| refuse("trigger", TRIGGER),
    },
    FlagDef {
        name: "trigger-file",
        arg: Arg::Required("FILE"),
        help: "refused: triggers are not implemented",
        apply: |_, _| refuse("trigger-file", TRIGGER),
    },
    FlagDef {
        name: "trigger-timeout",
        arg: Arg::Required("TIME"),
        help: "refused: triggers are not implemented",
        apply: |_, _| refuse("trigger-timeout", TRIGGER),
    },
    FlagDef {
        name: "trigger-remote",
        arg: Arg::Required("CMD"),
        help: "refused: triggers are not implemented",
        apply: |_, _| refuse("trigger-remote", TRIGGER),
    },
    FlagDef {
        name: "client",
        arg: Arg::Optional("HOST"),
        help: "refused: for runs on several hosts use mpirun (docs/DISTRIBUTED.md)",
        apply: |_, _| refuse("client", REMOTE),
    },
    FlagDef {
        name: "server",
        arg: Arg::Optional("ARGS"),
        help: "refused: for runs on several hosts use mpirun (docs/DISTRIBUTED.md)",
        apply: |_, _| refuse("server", REMOTE),
    },
    FlagDef {
        name: "remote-config",
        arg: Arg::Required("FILE"),
        help: "refused: there is no fio server mode (docs/DISTRIBUTED.md)",
        apply: |_, _| refuse("remote-config", REMOTE),
    },
    FlagDef {
        name: "daemonize",
        arg: Arg::Required("PIDFILE"),
        help: "refused: there is no fio server mode (docs/DISTRIBUTED.md)",
        apply: |_, _| refuse("daemonize", REMOTE),
    },
];

const CLOCK: &str = "dioscope always times with clock_gettime(CLOCK_MONOTONIC) through the \
                     vDSO, not the CPU's cycle counter, so there is no CPU clock to test";
const TRIGGER: &str = "dioscope runs no command when a trigger fires; run the command after \
                       dioscope, or stop it with SIGINT (the partial result is written)";
const REMOTE: &str = "fio's client/server mode is not implemented; for a run over several \
                      hosts build with --features mpi and start dioscope under mpirun, each rank \
                      on its own host, rank 0 merging the result (docs/DISTRIBUTED.md)";

/// The help of flag `name` (`refused: …` for a flag dioscope refuses).
pub fn help_of(name: &str) -> Option<&'static str> {
    find(name).map(|f| f.help)
}

fn find(name: &str) -> Option<&'static FlagDef> {
    let name = name.replace('_', "-");
    FLAGS.iter().find(|f| f.name == name)
}

/// The flag `key` is a misspelling of, when it is no option either.
fn near_flag(key: &str) -> Option<&'static str> {
    if options::lookup(key).is_some() || options::not_supported(key).is_some() {
        return None;
    }
    // The job parser suggests the closest option; a closer flag wins.
    let option = options::closest(key).map(|(n, _)| options::levenshtein(key, n));
    let dashed = key.replace('_', "-");
    FLAGS
        .iter()
        .map(|f| (options::levenshtein(&dashed, f.name), f.name))
        // `--serverip` (an engine's option) is no misspelt `--server`.
        .filter(|(d, n)| *d <= 1 || *d <= n.len() / 3 && !dashed.starts_with(n))
        .filter(|(d, _)| option.is_none_or(|o| *d < o))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// fio reads its command line with getopt_long_only: `-iodepth=4`,
/// `-thread` and `--iodepth 4` are all long options. A word with one dash
/// whose name is a flag or an option (supported or refused: the refusal
/// then names it) becomes the two-dash form; any other word with one dash
/// (`-`, the standard input; a value such as `-1`) is left as it is.
fn long_only(a: &str) -> Option<String> {
    let name = a.strip_prefix('-').filter(|r| !r.starts_with('-'))?;
    let key = name.split_once('=').map_or(name, |(k, _)| k);
    let known = key.len() > 1
        && (find(key).is_some()
            || options::lookup(key).is_some()
            || options::not_supported(key).is_some());
    known.then(|| format!("-{a}"))
}

/// Take fio's invocation flags out of `args`; the flags and the rest, in
/// order, for the job parser (one-dash long options made two-dash, see
/// [`long_only`]). A refused flag is an error naming it. A flag that needs
/// a value takes it after `=` or from the next word, as getopt does.
pub fn split(args: &[String]) -> Result<(Flags, Vec<String>), String> {
    let mut flags = Flags::default();
    let mut rest = Vec::new();
    let args: Vec<String> = args
        .iter()
        .map(|a| long_only(a).unwrap_or_else(|| a.clone()))
        .collect();
    let mut words = args.iter().peekable();
    while let Some(a) = words.next() {
        let Some(opt) = a.strip_prefix("--") else {
            rest.push(a.clone());
            continue;
        };
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (opt, None),
        };
        let Some(def) = find(key) else {
            if let Some(near) = near_flag(key) {
                return Err(format!(
                    "unknown option '{key}' on the command line; did you mean '--{near}'?"
                ));
            }
            if matches!(key.replace('_', "-").as_str(), "output-format") {
                // fio: the last of --minimal and --output-format wins.
                flags.minimal = false;
            }
            rest.push(a.clone());
            continue;
        };
        let v = match (def.arg, value) {
            (Arg::None, Some(v)) => {
                return Err(format!("--{}={v}: --{} takes no value", def.name, def.name))
            }
            (Arg::Required(ex), None) => match words.next_if(|w| !w.starts_with('-')) {
                Some(w) => w.clone(),
                None => {
                    return Err(format!(
                        "--{} needs a value, for example --{}={ex}",
                        def.name, def.name
                    ))
                }
            },
            (_, v) => v.unwrap_or_default(),
        };
        (def.apply)(&mut flags, &v)?;
    }
    Ok((flags, rest))
}

/// `--help`'s section of these flags.
pub fn help_text() -> String {
    let mut s = String::new();
    for f in FLAGS {
        let syn = match f.arg {
            Arg::None => format!("--{}", f.name),
            Arg::Required(v) => format!("--{}={v}", f.name),
            Arg::Optional(v) => format!("--{}[={v}]", f.name),
        };
        s.push_str(&format!("  {syn:<36} {}\n", f.help));
    }
    s
}

/// `--cmdhelp[=OPTION]`: one option's name, aliases, category, kind,
/// default, range, example and help; every option (by category, with
/// defaults and ranges) for "" or "all"; the reason for an option dioscope
/// does not support.
pub fn cmdhelp(what: &str) -> Result<String, String> {
    if what.is_empty() || what == "all" {
        return Ok(options::help_text());
    }
    if let Some(o) = options::lookup(what) {
        let kind = match o.kind {
            Kind::Flag => "boolean (bare or 0/1)".to_string(),
            Kind::Int => "integer".to_string(),
            Kind::Size => "size (4k, 1m, 1g, or a % of the target)".to_string(),
            Kind::Time => "time (s by default; ms, us, m, h)".to_string(),
            Kind::Str => "text".to_string(),
            Kind::OptStr => "text, or bare for the default".to_string(),
            Kind::Choice(c) => format!("one of {}", c.join(", ")),
        };
        let aliases = if o.aliases.is_empty() {
            String::new()
        } else {
            format!("\n  aliases: {}", o.aliases.join(", "))
        };
        let mut facts = String::new();
        if let Some(d) = o.default {
            facts.push_str(&format!("\n  default: {}={d}", o.name));
        }
        if let Some(r) = o.range {
            facts.push_str(&format!("\n  range: {}", r.describe(o.kind)));
        }
        return Ok(format!(
            "{}: {}{aliases}\n  category: {}\n  value: {kind}{facts}\n  example: {}={}\n",
            o.name,
            o.help,
            o.category.title(),
            o.name,
            o.example
        ));
    }
    if let Some(why) = options::not_supported(what) {
        return Ok(format!("{what}: not supported by dioscope ({why})\n"));
    }
    if let Some(f) = find(what) {
        return Ok(format!("--{}: {} (a command-line flag)\n", f.name, f.help));
    }
    let hint = options::closest(what)
        .map(|(n, _)| format!("; did you mean '{n}'?"))
        .unwrap_or_else(|| "; --cmdhelp alone lists every option".into());
    Err(format!("--cmdhelp={what}: unknown option '{what}'{hint}"))
}

/// `--enghelp[=ENGINE]`: the engines dioscope has, or one engine: its fio
/// names and what it honours.
pub fn enghelp(what: &str) -> Result<String, String> {
    // fio's `--enghelp=ENGINE,CMD` asks about one engine option; dioscope's
    // engine options are ordinary options (see --cmdhelp).
    let engine = what.split(',').next().unwrap_or("").trim();
    if engine.is_empty() {
        let mut s = String::from("Available IO engines:\n");
        for k in EngineKind::ALL {
            s.push_str(&format!("\t{}\n", k.names().join(", ")));
        }
        return Ok(s);
    }
    let Some(k) = EngineKind::parse(engine) else {
        return Err(format!(
            "--enghelp={engine}: '{engine}' is not an engine dioscope has; choose one of {}",
            EngineKind::NAMES.join(", ")
        ));
    };
    let c = k.caps();
    let yes = |b: bool| if b { "yes" } else { "no" };
    Ok(format!(
        "{}: ioengine={} (fio names: {})\n  one I/O at a time: {}\n  opens the target: {}\n  \
         hipri: {}\n  nowait: {}\n  sqthread_poll: {}\n  fixedbufs: {}\n  registerfiles: {}\n",
        k.as_str(),
        k.as_str(),
        k.names().join(", "),
        yes(c.sync),
        yes(c.real_io),
        yes(c.hipri),
        yes(c.nowait),
        yes(c.sqpoll),
        yes(c.fixed_bufs),
        yes(c.registered_files),
    ))
}

/// `--showcmd`: the job files as one command line that runs the same jobs.
/// The `[global]` options every job of a file starts with come first (they
/// apply to every job that follows), then each job's `--name` and the rest.
pub fn showcmd(args: &[String]) -> Result<String, String> {
    let mut words: Vec<String> = vec!["dioscope".into()];
    let mut any = false;
    for a in args {
        if a.starts_with("--") {
            words.push(a.clone());
            continue;
        }
        any = true;
        let jobs = crate::job::parse::parse_job_file(std::path::Path::new(a), &[], false)
            .map_err(|e| e.to_string())?;
        let common = jobs
            .iter()
            .map(|j| j.globals)
            .min()
            .map(|min| {
                (0..min)
                    .take_while(|&i| jobs.iter().all(|j| j.opts[i] == jobs[0].opts[i]))
                    .count()
            })
            .unwrap_or(0);
        let opt = |o: &crate::job::parse::RawOpt| match &o.value {
            Some(v) => shell_word(&format!("--{}={v}", o.key)),
            None => format!("--{}", o.key),
        };
        if let Some(first) = jobs.first() {
            words.extend(first.opts[..common].iter().map(opt));
        }
        for j in &jobs {
            words.push(shell_word(&format!("--name={}", j.name)));
            words.extend(j.opts[common..].iter().map(opt));
        }
    }
    if !any {
        return Err("--showcmd needs a job file: dioscope --showcmd job.fio".into());
    }
    Ok(words.join(" ") + "\n")
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_=.,:/%+@^".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn flags_come_out_and_the_rest_stays_in_order() {
        let (f, rest) = split(&s(&[
            "--readonly",
            "job.fio",
            "--minimal",
            "--bs=4k",
            "--terse-version=3",
            "--eta-newline=2",
            "--alloc-size=16384",
            "--warnings-fatal",
            "--cmdhelp",
        ]))
        .unwrap();
        assert!(f.readonly && f.minimal);
        assert_eq!(f.eta_newline_s, Some(2));
        assert_eq!(f.cmdhelp.as_deref(), Some(""));
        assert_eq!(rest, s(&["job.fio", "--bs=4k"]));
        // fio also spells them with '_'.
        assert!(split(&s(&["--parse_only"])).unwrap().0.parse_only);
        let e = split(&s(&["--minimall"])).unwrap_err();
        assert!(e.contains("did you mean '--minimal'"), "{e}");
        // An engine's option that starts like a flag is left to the parser.
        assert_eq!(
            split(&s(&["--serverip=1"])).unwrap().1,
            s(&["--serverip=1"])
        );
        // Not a flag and not near one: left to the job parser.
        assert_eq!(split(&s(&["--iodepht=4"])).unwrap().1, s(&["--iodepht=4"]));
    }

    #[test]
    fn one_dash_long_options_and_values_in_the_next_word_as_getopt_long_only() {
        let (f, rest) = split(&s(&[
            "-filename=/tmp/f",
            "-iodepth",
            "1",
            "-thread",
            "-minimal",
            "-section",
            "a",
            "--status-interval",
            "2",
            "-",
            "-1",
            "job.fio",
        ]))
        .unwrap();
        assert!(f.minimal);
        assert_eq!(f.sections, ["a"]);
        assert_eq!(f.status_interval_ms, Some(2000));
        assert_eq!(
            rest,
            s(&[
                "--filename=/tmp/f",
                "--iodepth",
                "1",
                "--thread",
                "-",
                "-1",
                "job.fio"
            ])
        );
        // A refused option keeps its refusal under one dash.
        assert_eq!(
            split(&s(&["-allrandrepeat=1"])).unwrap().1,
            s(&["--allrandrepeat=1"])
        );
        // Not a name dioscope knows: left for the parser to name.
        assert_eq!(split(&s(&["-bogus"])).unwrap().1, s(&["-bogus"]));
        // The last of --minimal and --output-format wins.
        assert!(
            !split(&s(&["--minimal", "--output-format=json"]))
                .unwrap()
                .0
                .minimal
        );
        assert!(
            split(&s(&["--output-format=json", "--minimal"]))
                .unwrap()
                .0
                .minimal
        );
        assert_eq!(
            split(&s(&["--debug=parse,io"])).unwrap().0.debug,
            Some(crate::job::debug::Request::Types(vec!["parse", "io"]))
        );
        assert!(split(&s(&["--debug=nope"])).is_err());
    }

    #[test]
    fn refused_flags_say_why_and_what_instead() {
        for (flag, needle) in [
            ("--trigger=reboot", "trigger"),
            ("--trigger-file=/tmp/t", "trigger"),
            ("--client=host1", "mpirun"),
            ("--server", "DISTRIBUTED.md"),
            ("--terse-version=2", "version 3"),
            ("--inflate-log=x.log.z", "log_store_compressed"),
            ("--idle-prof=system", "CPU per I/O"),
            ("--cpuclock-test", "clock_gettime"),
            ("--crctest", "checksum"),
            ("--merge-blktrace-only", "blkparse"),
            ("--aux-path=/tmp", "working directory"),
            ("--remote-config=j.fio", "mpirun"),
        ] {
            let e = split(&s(&[flag])).unwrap_err();
            assert!(e.contains("not supported by dioscope"), "{flag}: {e}");
            assert!(e.contains(needle), "{flag}: {e}");
        }
        let e = split(&s(&["--readonly=1"])).unwrap_err();
        assert!(e.contains("takes no value"), "{e}");
        let e = split(&s(&["--eta-newline"])).unwrap_err();
        assert!(e.contains("needs a value"), "{e}");
    }

    #[test]
    fn cmdhelp_and_enghelp() {
        let h = cmdhelp("bs").unwrap();
        assert!(
            h.contains("bs:") && h.contains("blocksize") && h.contains("bs=4k"),
            "{h}"
        );
        let h = cmdhelp("blocksize").unwrap();
        assert!(h.starts_with("bs:"), "{h}");
        assert!(h.contains("\n  category: Block sizes\n"), "{h}");
        assert!(h.contains("\n  default: bs=4k\n"), "{h}");
        assert!(!h.contains("range:"), "{h}");
        let h = cmdhelp("iodepth").unwrap();
        assert!(
            h.contains("\n  default: iodepth=1\n  range: at least 1\n"),
            "{h}"
        );
        let h = cmdhelp("rwmixwrite").unwrap();
        assert!(h.contains("\n  range: from 0 to 100\n"), "{h}");
        // No default to show: no line claims one.
        assert!(!cmdhelp("filename").unwrap().contains("default:"));
        // The full list: by category, with defaults and ranges.
        let all = cmdhelp("").unwrap();
        assert!(
            all.starts_with(" Jobs, groups and synchronization:\n"),
            "{all}"
        );
        assert!(all.contains(" [default 1, at least 1]\n"), "{all}");
        assert!(cmdhelp("").unwrap().contains("--iodepth="));
        assert!(cmdhelp("all").unwrap().contains("--rw, readwrite="));
        let (name, why) = options::FIO_UNIMPLEMENTED[0];
        assert!(cmdhelp(name).unwrap().contains(why));
        let e = cmdhelp("iodepht").unwrap_err();
        assert!(e.contains("did you mean 'iodepth'"), "{e}");
        let l = enghelp("").unwrap();
        for k in EngineKind::ALL {
            assert!(l.contains(k.as_str()), "{l}");
        }
        let one = enghelp("io_uring").unwrap();
        assert!(one.contains("sqthread_poll: yes"), "{one}");
        assert!(enghelp("rbd").unwrap_err().contains("not an engine"));
    }

    #[test]
    fn showcmd_gives_a_command_line_that_parses_to_the_same_jobs() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("j.fio");
        std::fs::write(
            &f,
            "[global]\nioengine=null\nsize=1m\n[a]\nrw=randread\nbs=8k\n[b]\nrw=write\ndescription=two words\n",
        )
        .unwrap();
        let line = showcmd(&s(&[f.to_str().unwrap()])).unwrap();
        assert!(
            line.starts_with(
                "dioscope --ioengine=null --size=1m --name=a --rw=randread --bs=8k --name=b"
            ),
            "{line}"
        );
        let from_file = crate::job::parse_args(&[f.to_str().unwrap()]).unwrap();
        assert!(line.contains("'--description=two words'"), "{line}");
        // The words back through the parser, split as a shell would.
        let mut words: Vec<String> = Vec::new();
        let (mut cur, mut quoted) = (String::new(), false);
        for c in line.trim().chars() {
            match c {
                '\'' => quoted = !quoted,
                ' ' if !quoted => words.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        words.push(cur);
        let words = &words[1..];
        let from_line = crate::job::parse_args(words).unwrap();
        assert_eq!(from_file.jobs.len(), from_line.jobs.len());
        for (a, b) in from_file.jobs.iter().zip(&from_line.jobs) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.rw, b.rw);
            assert_eq!(a.bs, b.bs);
            assert_eq!(a.ioengine, b.ioengine);
            assert_eq!(a.description, b.description);
        }
    }
}
