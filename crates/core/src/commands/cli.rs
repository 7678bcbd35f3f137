//! The commands' flags, one table per command ([`Cli`], the `cli` field of
//! every [`Command`](super::Command)): the parser, `dioscope CMD --help`,
//! the shell completions (`dioscope completions`) and the man pages
//! (`dioscope man`) all read it, so a flag added to or removed from a table
//! is added to or removed from all of them. fio's invocation (`run`, or no
//! command name) keeps fio's own syntax and tables
//! ([`crate::job::flags::FLAGS`], [`crate::job::options::all`]).
//!
//! Every flag that takes a value takes it as `--flag=value` or as the next
//! word (`--flag value`), like fio's options; `-o` style short names take
//! `-o value` or `-o=value`. Underscores and dashes are the same in names
//! (`--max_trials` is `--max-trials`).

/// What a flag's value is.
#[derive(Clone, Copy)]
pub enum Value {
    /// A switch: `--quick`; it takes no value.
    None,
    /// A value; the placeholder help shows (`PCT`, `N`).
    Text(&'static str),
    /// One of these words.
    Choice(&'static [&'static str]),
    /// One of the names this function lists (output formats, recipes).
    Names(fn() -> Vec<&'static str>),
    /// A file dioscope reads.
    Input,
    /// A file dioscope writes. Every such flag is checked by the output
    /// rules (`crate::outfile`) before any work: the integration test
    /// `output_flags_of_every_command_refuse_a_planted_symlink` walks them
    /// from these tables.
    Output,
}

impl Value {
    /// The placeholder in help and man pages.
    pub fn placeholder(&self) -> String {
        match self {
            Value::None => String::new(),
            Value::Text(p) => p.to_string(),
            Value::Choice(c) => c.join("|"),
            Value::Names(f) => f().join("|"),
            Value::Input | Value::Output => "FILE".into(),
        }
    }

    /// The words a shell may offer for it (none: free text or a file).
    pub fn choices(&self) -> Vec<&'static str> {
        match self {
            Value::Choice(c) => c.to_vec(),
            Value::Names(f) => f(),
            _ => Vec::new(),
        }
    }

    pub fn takes_value(&self) -> bool {
        !matches!(self, Value::None)
    }

    pub fn is_file(&self) -> bool {
        matches!(self, Value::Input | Value::Output)
    }
}

/// One flag of a command.
pub struct Flag {
    /// The long name, without `--`.
    pub name: &'static str,
    /// A one-letter name (`-o`), if any.
    pub short: Option<char>,
    pub value: Value,
    /// A valid value (tests parse every flag with it; help shows it).
    pub example: &'static str,
    pub help: &'static str,
}

/// A command's (or a sub-command's) words.
pub struct Cli {
    /// The positional words, as the synopsis shows them ("" for none).
    pub positional: &'static str,
    pub flags: &'static [Flag],
    /// Words that may come first, each with what it does and its own table.
    pub subcommands: &'static [Sub],
    /// Other `--OPTION=VALUE` words are fio job options, passed on in order
    /// (`sweep`, `compare --run`).
    pub job_options: bool,
}

/// A sub-command (`scratch create`, `recipe run`).
pub struct Sub {
    pub name: &'static str,
    pub what: &'static str,
    pub cli: Cli,
}

impl Cli {
    /// A command with no flags of its own and no words.
    pub const NONE: Cli = Cli {
        positional: "",
        flags: &[],
        subcommands: &[],
        job_options: false,
    };

    /// The flag `name` (long, without dashes, `_` or `-`), if any.
    pub fn flag(&self, name: &str) -> Option<&'static Flag>
    where
        Self: 'static,
    {
        let norm = |s: &str| s.replace('_', "-");
        self.flags.iter().find(|f| f.name == norm(name))
    }

    fn short(&'static self, c: char) -> Option<&'static Flag> {
        self.flags.iter().find(|f| f.short == Some(c))
    }

    pub fn sub(&'static self, name: &str) -> Option<&'static Sub> {
        self.subcommands.iter().find(|s| s.name == name)
    }

    /// Every flag of the table and of its sub-commands, with the path of
    /// sub-command names that leads to it.
    pub fn all_flags(&'static self) -> Vec<(Vec<&'static str>, &'static Flag)> {
        let mut out: Vec<(Vec<&'static str>, &'static Flag)> =
            self.flags.iter().map(|f| (Vec::new(), f)).collect();
        for s in self.subcommands {
            for (mut path, f) in s.cli.all_flags() {
                path.insert(0, s.name);
                out.push((path, f));
            }
        }
        out
    }
}

/// One word of a parsed command line, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A flag of the table, with its value (`None` for a switch).
    Flag(&'static str, Option<String>),
    /// Anything else: a positional word, `--`, or (with `job_options`) a
    /// job option as written.
    Word(String),
}

/// Parses `args` (after the command's name, and after the sub-command's
/// when `cli` is a sub-command's table) by `cli`.
pub fn parse(cmd: &str, cli: &'static Cli, args: &[String]) -> Result<Vec<Arg>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let (flag, written, inline) =
            if let Some(long) = a.strip_prefix("--").filter(|l| !l.is_empty()) {
                let (k, v) = match long.split_once('=') {
                    Some((k, v)) => (k, Some(v)),
                    None => (long, None),
                };
                (cli.flag(k), format!("--{k}"), v)
            } else if let Some(short) = a
                .strip_prefix('-')
                .filter(|s| !s.is_empty() && !s.starts_with('-'))
            {
                let mut chars = short.chars();
                let c = chars.next().unwrap_or(' ');
                let rest = chars.as_str();
                match (cli.short(c), rest.strip_prefix('=')) {
                    (Some(f), Some(v)) => (Some(f), format!("-{c}"), Some(v)),
                    (Some(f), None) if rest.is_empty() => (Some(f), format!("-{c}"), None),
                    _ => (None, a.clone(), None),
                }
            } else {
                out.push(Arg::Word(a.clone()));
                continue;
            };
        let Some(flag) = flag else {
            if cli.job_options && a.starts_with("--") {
                out.push(Arg::Word(a.clone()));
                continue;
            }
            return Err(unknown(cmd, cli, a));
        };
        let value = match (flag.value.takes_value(), inline) {
            (false, None) => None,
            (false, Some(_)) => return Err(format!("{cmd}: {written} takes no value")),
            (true, Some("")) => return Err(needs(cmd, &written, flag)),
            (true, Some(v)) => Some(v.to_string()),
            (true, None) => match args.get(i) {
                Some(next) if !next.starts_with("--") => {
                    i += 1;
                    Some(next.clone())
                }
                _ => return Err(needs(cmd, &written, flag)),
            },
        };
        if let (Value::Choice(c), Some(v)) = (flag.value, value.as_deref()) {
            if !c.contains(&v) {
                return Err(format!("{cmd}: {written}={v}: choose {}", c.join(", ")));
            }
        }
        out.push(Arg::Flag(flag.name, value));
    }
    Ok(out)
}

fn needs(cmd: &str, written: &str, f: &Flag) -> String {
    format!(
        "{cmd}: {written} needs a value, e.g. {written}={} (or {written} {})",
        f.example, f.example
    )
}

/// The error for a word that is not a flag of `cli`: it names the flags
/// the table has.
pub fn unknown(cmd: &str, cli: &Cli, a: &str) -> String {
    let names: Vec<String> = cli.flags.iter().map(|f| format!("--{}", f.name)).collect();
    let takes = if names.is_empty() {
        "it takes no options".to_string()
    } else {
        format!("it takes {}", names.join(", "))
    };
    format!(
        "{cmd}: unknown option '{}'; {takes} (see dioscope {} --help)",
        crate::console::clip_words(a),
        cmd.split(' ').next().unwrap_or(cmd)
    )
}

/// The error for a table flag a command's parser does not handle (a bug:
/// the tests parse every flag of every table).
pub fn unhandled(cmd: &str, name: &str) -> String {
    format!("{cmd}: internal error: --{name} is in the flag table but not handled")
}

/// `--NAME=PLACEHOLDER` (or `-o, --NAME=…`) as help and man pages show it.
pub fn synopsis(f: &Flag) -> String {
    let short = f.short.map(|c| format!("-{c}, ")).unwrap_or_default();
    match f.value {
        Value::None => format!("{short}--{}", f.name),
        v => format!("{short}--{}={}", f.name, v.placeholder()),
    }
}

/// `dioscope CMD --help`: the command's usage lines, then its flags and
/// sub-commands, from the tables.
pub fn help(name: &str, usage: &[(&str, &str)], cli: &'static Cli) -> String {
    let mut out = String::from("USAGE:\n");
    for (syn, what) in usage {
        out.push_str(&format!("  dioscope {syn}\n"));
        for l in what.lines() {
            out.push_str(&format!("      {l}\n"));
        }
    }
    flags_help(&mut out, "FLAGS", cli);
    for s in cli.subcommands {
        let pos = if s.cli.positional.is_empty() {
            String::new()
        } else {
            format!(" {}", s.cli.positional)
        };
        out.push_str(&format!("\n{name} {}{pos}: {}\n", s.name, s.what));
        flags_help(&mut out, "  FLAGS", &s.cli);
    }
    out.push_str(
        "\nA flag's value is written --flag=value or --flag value; _ and - are the same in names.\n",
    );
    out
}

fn flags_help(out: &mut String, title: &str, cli: &Cli) {
    let indent = " ".repeat(title.len() - title.trim_start().len() + 2);
    if !cli.flags.is_empty() {
        out.push_str(&format!("{title}:\n"));
    }
    let w = cli
        .flags
        .iter()
        .map(|f| synopsis(f).chars().count())
        .max()
        .unwrap_or(0)
        .min(30)
        + 2;
    for f in cli.flags {
        let syn = synopsis(f);
        let lines = wrap(f.help, 96usize.saturating_sub(indent.len() + w).max(30));
        for (i, l) in lines.iter().enumerate() {
            if i == 0 && syn.chars().count() < w {
                out.push_str(&format!("{indent}{syn:w$}{l}\n"));
            } else if i == 0 {
                out.push_str(&format!("{indent}{syn}\n{indent}{:w$}{l}\n", ""));
            } else {
                out.push_str(&format!("{indent}{:w$}{l}\n", ""));
            }
        }
    }
    if cli.job_options {
        out.push_str(&format!(
            "{indent}--OPTION=VALUE  any fio job option, for every job (dioscope options lists them)\n"
        ));
    }
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line at least");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
pub fn check_both_forms<T>(
    cli: &'static Cli,
    base: &[&str],
    parse: impl Fn(&[String]) -> Result<T, String>,
) {
    for f in cli.flags {
        let mut a: Vec<String> = base.iter().map(|x| x.to_string()).collect();
        let mut b = a.clone();
        if f.value.takes_value() {
            a.push(format!("--{}={}", f.name, f.example));
            b.push(format!("--{}", f.name));
            b.push(f.example.to_string());
        } else {
            a.push(format!("--{}", f.name));
            b = a.clone();
        }
        assert_eq!(
            self::parse("t", cli, &a),
            self::parse("t", cli, &b),
            "{a:?} and {b:?} differ"
        );
        for args in [&a, &b] {
            if let Err(e) = parse(args) {
                panic!("{args:?}: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SUB: Cli = Cli {
        positional: "ID",
        flags: &[Flag {
            name: "all",
            short: None,
            value: Value::None,
            example: "",
            help: "every one",
        }],
        subcommands: &[],
        job_options: false,
    };
    static T: Cli = Cli {
        positional: "FILE...",
        flags: &[
            Flag {
                name: "max-trials",
                short: None,
                value: Value::Text("N"),
                example: "30",
                help: "at most N",
            },
            Flag {
                name: "order",
                short: None,
                value: Value::Choice(&["given", "random"]),
                example: "random",
                help: "the order",
            },
            Flag {
                name: "output",
                short: Some('o'),
                value: Value::Output,
                example: "x.json",
                help: "where",
            },
            Flag {
                name: "quick",
                short: None,
                value: Value::None,
                example: "",
                help: "short",
            },
        ],
        subcommands: &[Sub {
            name: "destroy",
            what: "remove",
            cli: Cli {
                positional: "ID",
                flags: SUB.flags,
                subcommands: &[],
                job_options: false,
            },
        }],
        job_options: false,
    };
    static J: Cli = Cli {
        positional: "",
        flags: &[],
        subcommands: &[],
        job_options: true,
    };

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn both_forms_of_a_value_parse_the_same() {
        for (a, b) in [
            (vec!["--max-trials=5"], vec!["--max-trials", "5"]),
            (vec!["--max_trials=5"], vec!["--max-trials", "5"]),
            (vec!["-o=r.json"], vec!["-o", "r.json"]),
            (vec!["--output=r.json"], vec!["-o", "r.json"]),
            (vec!["--output=-"], vec!["--output", "-"]),
        ] {
            assert_eq!(
                parse("t", &T, &s(&a)),
                parse("t", &T, &s(&b)),
                "{a:?} {b:?}"
            );
        }
        assert_eq!(
            parse("t", &T, &s(&["a", "--quick", "b", "--", "c"])).unwrap(),
            vec![
                Arg::Word("a".into()),
                Arg::Flag("quick", None),
                Arg::Word("b".into()),
                Arg::Word("--".into()),
                Arg::Word("c".into()),
            ]
        );
    }

    #[test]
    fn bad_words_are_refused_with_what_is_taken() {
        let e = parse("t", &T, &s(&["--bogus"])).unwrap_err();
        assert!(
            e.contains("unknown option '--bogus'") && e.contains("--max-trials"),
            "{e}"
        );
        let e = parse("t", &T, &s(&["--max-trials"])).unwrap_err();
        assert!(e.contains("needs a value, e.g. --max-trials=30"), "{e}");
        let e = parse("t", &T, &s(&["--max-trials", "--quick"])).unwrap_err();
        assert!(e.contains("needs a value"), "{e}");
        let e = parse("t", &T, &s(&["--quick=1"])).unwrap_err();
        assert!(e.contains("takes no value"), "{e}");
        let e = parse("t", &T, &s(&["--order=sideways"])).unwrap_err();
        assert!(e.contains("choose given, random"), "{e}");
        assert!(parse("t", &T, &s(&["-x"])).is_err());
        // Job options pass through, in order, as written.
        assert_eq!(
            parse("j", &J, &s(&["--bs=4k", "f.fio"])).unwrap(),
            vec![Arg::Word("--bs=4k".into()), Arg::Word("f.fio".into())]
        );
    }

    #[test]
    fn help_names_every_flag_and_sub_command() {
        let h = help("t", &[("t FILE", "does t")], &T);
        for (path, f) in T.all_flags() {
            assert!(h.contains(&synopsis(f)), "{path:?} {h}");
        }
        assert!(h.contains("t destroy ID: remove"), "{h}");
        assert!(h.contains("-o, --output=FILE"), "{h}");
        assert!(h.contains("--order=given|random"), "{h}");
    }
}
