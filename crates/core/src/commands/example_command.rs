//! A test-only command: docs/ARCHITECTURE.md's "Add a command" example,
//! registered through `commands!` like every command (under `cfg(test)`).

use super::{eprint_err, Command};

pub const COMMAND: Command = Command {
    name: "example-command",
    usage: &[("example-command FILE", "what it does, for --help")],
    cli: &super::cli::Cli::NONE,
    main,
};

/// The arguments after the command name → the exit code
/// (0 ok, 1 failed, 2 bad input: see `eprint_err`).
fn main(args: &[String]) -> i32 {
    let Some(file) = args.first() else {
        return eprint_err("example-command needs a FILE: dioscope example-command result.json");
    };
    let _ = file;
    0
}

#[cfg(test)]
mod tests {
    /// The recipe's files are what this command took (its behaviour is
    /// tested in commands/mod.rs, `adding_a_command_is_one_file_and_one_line`).
    #[test]
    fn the_command_recipe_lists_what_this_command_took() {
        crate::recipe_check::recipe_took("Add a command", "my_command", "example_command");
    }
}
