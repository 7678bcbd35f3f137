//! `dioscope man [COMMAND]`: the man page dioscope(1), or
//! dioscope-COMMAND(1), in roff on standard output, generated from the
//! command table, each command's flag table, fio's invocation flags and
//! the job options (`man -l <(dioscope man)` reads it; the .deb installs
//! them all).

use super::cli::{self, Arg, Cli, Flag, Value};
use super::{eprint_err, Command};

pub const COMMAND: Command = Command {
    name: "man",
    usage: &[(
        "man [COMMAND] | man --list",
        "the man page dioscope(1), or dioscope-COMMAND(1), in roff\n\
         (man -l <(dioscope man compare)); --list: the pages' names",
    )],
    cli: &CLI,
    main,
};

/// man's flags.
pub static CLI: Cli = Cli {
    positional: "[COMMAND]",
    flags: &[Flag {
        name: "list",
        short: None,
        value: Value::None,
        example: "",
        help: "print the names of the pages (dioscope, dioscope-compare, ...)",
    }],
    subcommands: &[],
    job_options: false,
};

fn main(args: &[String]) -> i32 {
    let words = match cli::parse("man", &CLI, args) {
        Ok(w) => w,
        Err(e) => return eprint_err(&e),
    };
    match words.as_slice() {
        [] => super::stdout(&page()),
        [Arg::Flag("list", _)] => super::stdout(&format!("{}\n", pages().join("\n"))),
        [Arg::Word(name)] => match super::find(name).filter(|c| c.name != "run") {
            Some(c) => super::stdout(&command_page(c)),
            None => {
                return eprint_err(&format!(
                    "man: no command '{}'; choose {}",
                    crate::console::clip_words(name),
                    commands().join(", ")
                ))
            }
        },
        _ => return eprint_err("man takes one COMMAND, or --list, or nothing (dioscope(1))"),
    }
    0
}

/// The commands with pages of their own (`run` is dioscope(1) itself).
fn commands() -> Vec<&'static str> {
    super::all()
        .iter()
        .map(|c| c.name)
        .filter(|n| *n != "run")
        .collect()
}

/// Every page's name: dioscope, then dioscope-COMMAND.
pub fn pages() -> Vec<String> {
    let mut out = vec!["dioscope".to_string()];
    out.extend(commands().into_iter().map(|c| format!("dioscope-{c}")));
    out
}

/// Text as roff: backslashes escaped, a line never starting with a
/// control character, dashes as minus signs where they are options.
fn esc(s: &str) -> String {
    let t: String = s
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_string()
            } else {
                // Any roff reads \[uXXXX], whatever its input encoding.
                format!("\\[u{:04X}]", c as u32)
            }
        })
        .collect();
    t.lines()
        .map(|l| {
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn header(name: &str, what: &str) -> String {
    format!(
        ".TH {} 1 \"\" \"dioscope {}\" \"User Commands\"\n.SH NAME\n{} \\- {}\n",
        name.to_uppercase(),
        env!("CARGO_PKG_VERSION"),
        esc(name),
        esc(what)
    )
}

fn flag_items(out: &mut String, flags: &[Flag]) {
    for f in flags {
        out.push_str(&format!(".TP\n.B {}\n{}\n", esc(&cli::synopsis(f)), esc(f.help)));
        if !f.example.is_empty() {
            out.push_str(&format!("e.g. \\fB\\-\\-{}={}\\fR\n", esc(f.name), esc(f.example)));
        }
    }
}

fn usage_lines(out: &mut String, usage: &[(&str, &str)]) {
    for (syn, what) in usage {
        out.push_str(&format!(".TP\n.B dioscope {}\n", esc(syn)));
        for l in what.lines() {
            out.push_str(&format!("{}\n", esc(l)));
        }
    }
}

/// dioscope-COMMAND(1).
pub fn command_page(c: &Command) -> String {
    let what = c.usage.first().map(|u| u.1.lines().next().unwrap_or("")).unwrap_or("");
    let mut out = header(&format!("dioscope-{}", c.name), what);
    out.push_str(".SH SYNOPSIS\n.nf\n");
    for (syn, _) in c.usage {
        out.push_str(&format!("dioscope {}\n", esc(syn)));
    }
    out.push_str(".fi\n.SH DESCRIPTION\n");
    usage_lines(&mut out, c.usage);
    if !c.cli.flags.is_empty() || c.cli.job_options {
        out.push_str(".SH OPTIONS\n");
        flag_items(&mut out, c.cli.flags);
        if c.cli.job_options {
            out.push_str(
                ".TP\n.B \\-\\-OPTION=VALUE\nany fio job option, for every job; see \\fBdioscope\\fR(1)\n",
            );
        }
    }
    for s in c.cli.subcommands {
        out.push_str(&format!(
            ".SH \"{} {}\"\n{}\n",
            esc(&c.name.to_uppercase()),
            esc(&s.name.to_uppercase()),
            esc(s.what)
        ));
        flag_items(&mut out, s.cli.flags);
    }
    out.push_str(
        ".SH \"SEE ALSO\"\n\\fBdioscope\\fR(1), \\fBfio\\fR(1)\n.PP\nValues are written \\fB\\-\\-flag=value\\fR or \\fB\\-\\-flag value\\fR.\n",
    );
    out
}

/// dioscope(1): the commands, fio's invocation flags, every job option
/// with its default, and the exit codes.
pub fn page() -> String {
    let mut out = header(
        "dioscope",
        "benchmark and diagnose direct I/O (O_DIRECT) on Linux",
    );
    out.push_str(
        ".SH SYNOPSIS\n.nf\ndioscope [\\fIJOBFILE\\fR...] [\\fB\\-\\-OPTION\\fR=\\fIVALUE\\fR...]\n\
         dioscope \\fICOMMAND\\fR [\\fIARGS\\fR...]\n.fi\n\
         .SH DESCRIPTION\ndioscope runs fio job files and fio's command lines with O_DIRECT, \
         repeats each job as trials, and reports every figure with how sure it is. A first \
         argument that is not a command is a job file or an option, as fio takes them.\n\
         .SH COMMANDS\n",
    );
    for c in super::all() {
        usage_lines(&mut out, c.usage);
        if c.name != "run" {
            out.push_str(&format!("See \\fBdioscope\\-{}\\fR(1).\n", esc(c.name)));
        }
    }
    out.push_str(".SH \"FIO FLAGS\"\n");
    for f in crate::job::flags::FLAGS {
        let syn = match f.arg {
            crate::job::flags::Arg::None => format!("--{}", f.name),
            crate::job::flags::Arg::Required(p) => format!("--{}={p}", f.name),
            crate::job::flags::Arg::Optional(p) => format!("--{}[={p}]", f.name),
        };
        out.push_str(&format!(".TP\n.B {}\n{}\n", esc(&syn), esc(f.help)));
    }
    out.push_str(".SH \"JOB OPTIONS\"\nfio's names, units and defaults (4k = 4096; times in s, ms, us, m, h). In a job file without the dashes.\n");
    for d in crate::job::options::all() {
        out.push_str(&format!(
            ".TP\n.B \\-\\-{}={}\n{}\n",
            esc(d.name),
            esc(d.example),
            esc(&d.help.replace('\n', " "))
        ));
        if let Some(def) = d.default {
            out.push_str(&format!("Default: {}.\n", esc(def)));
        }
    }
    out.push_str(
        ".SH \"EXIT STATUS\"\n0 ok; 1 I/O errors during the run (compare: a significant regression); \
         2 bad input, nothing written; 3 compare \\-\\-run: a run could not finish; 4 compare: a \
         change confounded with a difference in the environment; 128+N stopped by signal N.\n\
         .SH \"SEE ALSO\"\n",
    );
    let see: Vec<String> = commands()
        .iter()
        .map(|c| format!("\\fBdioscope\\-{}\\fR(1)", esc(c)))
        .collect();
    out.push_str(&format!("{}, \\fBfio\\fR(1)\n", see.join(", ")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_name_every_flag_and_option_of_the_tables() {
        let main = page();
        for c in super::super::all() {
            assert!(main.contains(&format!("dioscope {}", esc(c.name))), "{}", c.name);
            if c.name == "run" {
                continue;
            }
            let p = command_page(c);
            for (_, f) in c.cli.all_flags() {
                assert!(p.contains(&esc(&cli::synopsis(f))), "{}: {}", c.name, f.name);
            }
        }
        for f in crate::job::flags::FLAGS {
            assert!(main.contains(&format!("\\-\\-{}", esc(f.name))), "{}", f.name);
        }
        for d in crate::job::options::all() {
            assert!(main.contains(&format!("\\-\\-{}=", esc(d.name))), "{}", d.name);
        }
        // No line starts with a stray control character.
        for l in main.lines() {
            assert!(!l.starts_with('\''), "{l}");
        }
    }
}
