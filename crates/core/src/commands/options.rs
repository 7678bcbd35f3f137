//! `dioscope options [--markdown]`: the option reference, from the table.

use super::cli::{self, Arg, Cli, Flag, Value};
use super::Command;

pub const COMMAND: Command = Command {
    name: "options",
    usage: &[
        ("options [--markdown]", "the option reference"),
        (
            "options --fio-compat",
            "every option of fio 3.33's HOWTO: works, accepted with a note, or refused and why",
        ),
    ],
    cli: &CLI,
    main,
};

/// options's flags.
pub static CLI: Cli = Cli {
    positional: "",
    flags: &[
        Flag {
            name: "markdown",
            short: None,
            value: Value::None,
            example: "",
            help: "the reference as Markdown (docs/OPTIONS.md)",
        },
        Flag {
            name: "fio-compat",
            short: None,
            value: Value::None,
            example: "",
            help: "every option of fio 3.33's HOWTO and what dioscope does with it (docs/FIO-OPTIONS.md)",
        },
    ],
    subcommands: &[],
    job_options: false,
};

fn main(args: &[String]) -> i32 {
    let words = match cli::parse("options", &CLI, args) {
        Ok(w) => w,
        Err(e) => return super::eprint_err(&e),
    };
    match words.as_slice() {
        [] => super::stdout(&crate::job::options::help_text()),
        [Arg::Flag("markdown", _)] => super::stdout(&crate::job::options::markdown_table()),
        [Arg::Flag("fio-compat", _)] => super::stdout(&crate::job::compat::markdown()),
        _ => {
            return super::eprint_err(
                "options takes one of --markdown or --fio-compat (or nothing: the reference as text)",
            )
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_table_parses_in_both_forms() {
        crate::commands::cli::check_both_forms(&CLI, &[], |a| cli::parse("options", &CLI, a));
    }
}
