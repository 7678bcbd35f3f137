//! `dioscope options [--markdown]`: the option reference, from the table.

use super::Command;

pub const COMMAND: Command = Command {
    name: "options",
    usage: &[("options [--markdown]", "the option reference")],
    main,
};

fn main(args: &[String]) -> i32 {
    if args.first().map(String::as_str) == Some("--markdown") {
        super::stdout(&crate::job::options::markdown_table());
    } else {
        super::stdout(&crate::job::options::help_text());
    }
    0
}
