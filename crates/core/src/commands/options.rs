//! `dioscope options [--markdown]`: the option reference, from the table.

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
    main,
};

fn main(args: &[String]) -> i32 {
    if args.first().map(String::as_str) == Some("--markdown") {
        super::stdout(&crate::job::options::markdown_table());
    } else if args.first().map(String::as_str) == Some("--fio-compat") {
        super::stdout(&crate::job::compat::markdown());
    } else {
        super::stdout(&crate::job::options::help_text());
    }
    0
}
