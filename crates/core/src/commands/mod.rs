//! Commands: one file each, listed in [`COMMANDS`], the one table the
//! dispatch and the usage text come from. The binary only calls [`main`].
//!
//! A first argument that is not a command name is fio's invocation
//! (`dioscope JOBFILE…`, `dioscope --name=…`) and runs. A job file named
//! like a command runs with `dioscope run FILE` or `dioscope ./FILE`.
//!
//! To add a command: write `commands/NAME.rs` with
//! `pub const COMMAND: Command` and its `fn main(args: &[String]) -> i32`,
//! then add `NAME` to the `commands!` list below.

use crate::render::{self, RUN_FORMATS};

/// One command: its name, the usage lines it adds to `--help` (synopsis,
/// what it does), and its entry point (arguments after the name → exit
/// code: 0 ok, 1 failed, 2 bad input, 128+N interrupted by signal N).
pub struct Command {
    pub name: &'static str,
    pub usage: &'static [(&'static str, &'static str)],
    /// Its flags and sub-commands: the parser, `--help`, completions and
    /// man pages read this one table ([`cli`]).
    pub cli: &'static cli::Cli,
    pub main: fn(&[String]) -> i32,
}

/// Declares the command modules and [`COMMANDS`] from one list: each
/// module has a `pub const COMMAND: Command`.
macro_rules! commands {
    ($($(#[$a:meta])* $m:ident),* $(,)?) => {
        $($(#[$a])* pub mod $m;)*
        /// Every command, in the order `--help` lists them.
        static COMMANDS: &[Command] = &[$($(#[$a])* $m::COMMAND),*];
    };
}

pub mod cli;

commands!(
    run,
    compare,
    sweep,
    report,
    doctor,
    scratch,
    recipe,
    options,
    completions,
    man,
    // docs/ARCHITECTURE.md's "Add a command", followed to the letter by a
    // test-only command (the test `adding_a_command_is_one_file_and_one_line`).
    #[cfg(test)]
    example_command,
);

pub use crate::console::{clip_words, eprint_err, stdout};
use crate::job::flags;

/// The command `name` names, if any.
pub fn find(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Every command, in `--help`'s order.
pub fn all() -> &'static [Command] {
    COMMANDS
}

/// The whole invocation: arguments without the program name → exit code.
pub fn main(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("-h") | Some("--help") | Some("help") => {
            stdout(&usage());
            0
        }
        Some("--version") | Some("-V") => {
            stdout(&format!("{}\n", crate::results::model::version_string()));
            0
        }
        _ if !help_only(&args) => {
            if let Err(code) = launched_without_mpi() {
                return code;
            }
            dispatch(&args)
        }
        _ => dispatch(&args),
    }
}

/// Whether the invocation only asks for help (answered anywhere).
fn help_only(args: &[String]) -> bool {
    args.iter().any(|a| a == "--help" || a == "-h")
}

fn dispatch(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some(name) => match find(name) {
            // `run` is fio's invocation: its help is the whole usage.
            Some(c) if help_only(&args[1..]) => {
                if c.name == "run" {
                    stdout(&usage());
                } else {
                    stdout(&command_help(c, &args[1..]));
                }
                0
            }
            Some(c) => (c.main)(&args[1..]),
            // fio's invocation: job files and options, no command name.
            None => (run::COMMAND.main)(args),
        },
        None => (run::COMMAND.main)(args),
    }
}

/// The size of the world an MPI launcher (or srun) started this process
/// in, and the variable that says so; `None` when none did.
fn launched_world() -> Option<(u64, &'static str)> {
    const VARS: &[&str] = &[
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "MV2_COMM_WORLD_SIZE",
        "MPI_LOCALNRANKS",
        "SLURM_STEP_NUM_TASKS",
    ];
    for v in VARS {
        if let Some(n) = std::env::var(v).ok().and_then(|s| s.trim().parse().ok()) {
            return Some((n, v));
        }
    }
    // PMIx alone (prterun) names the rank but not always the size.
    std::env::var_os("PMIX_RANK").map(|_| (0, "PMIX_RANK"))
}

/// A binary built without the `mpi` feature, started as one of several
/// ranks, would run that many independent copies that overwrite each
/// other's result: refuse (exit 2) naming the build that fixes it. A world
/// of one runs, with a note. `Ok` when not launched, or built with MPI.
fn launched_without_mpi() -> Result<(), i32> {
    if cfg!(feature = "mpi") {
        return Ok(());
    }
    match launched_world() {
        None => Ok(()),
        Some((1, var)) => {
            eprintln!(
                "dioscope: note: started by a launcher in a world of one ({var}=1); this \
                 binary has no MPI support, so it runs as a single process"
            );
            Ok(())
        }
        Some((n, var)) => {
            let size = if n == 0 {
                "several".to_string()
            } else {
                n.to_string()
            };
            Err(eprint_err(&format!(
                "started as one of {size} ranks by an MPI launcher ({var}{}), but this binary \
                 was built without MPI support: each rank would run alone and they would \
                 overwrite each other's result. Build it with MPI (apt-get install \
                 libopenmpi-dev openmpi-bin; cargo build --release --features mpi) and run \
                 that binary under mpirun, or run dioscope without the launcher",
                if n == 0 {
                    String::new()
                } else {
                    format!("={n}")
                }
            )))
        }
    }
}

/// `dioscope CMD [SUB] --help`: the command's help, from its table (a
/// sub-command's alone when one is named).
pub fn command_help(c: &Command, args: &[String]) -> String {
    let sub = args.first().and_then(|w| c.cli.sub(w));
    match sub {
        Some(s) => {
            let name = format!("{} {}", c.name, s.name);
            let usage: Vec<(&str, &str)> = c
                .usage
                .iter()
                .filter(|(syn, _)| syn.starts_with(&name))
                .copied()
                .collect();
            cli::help(&name, &usage, &s.cli)
        }
        None => cli::help(c.name, c.usage, c.cli),
    }
}

/// `--help`: generated from the command table, the run formats and the
/// option table.
pub fn usage() -> String {
    let mut lines: Vec<(String, &str)> = Vec::new();
    for c in COMMANDS {
        for (syn, what) in c.usage {
            lines.push((format!("dioscope {syn}").trim_end().to_string(), what));
        }
    }
    lines.push(("dioscope --help | --version".into(), ""));
    let w = lines
        .iter()
        .map(|(s, _)| s.chars().count())
        .max()
        .unwrap_or(0)
        + 3;
    let mut out = String::from(
        "dioscope — benchmark and diagnose direct I/O (O_DIRECT) on Linux\n\nUSAGE:\n",
    );
    for (syn, what) in &lines {
        let mut first = true;
        for l in what.lines() {
            let left = if first { syn.as_str() } else { "" };
            out.push_str(&format!("  {left:w$}{l}\n"));
            first = false;
        }
        if first {
            out.push_str(&format!("  {syn}\n"));
        }
    }
    let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    let note = format!(
        "A first argument that is not a command ({}) is a job file or an option, as fio \
         takes them.",
        names.join(", ")
    );
    out.push_str(&format!("\n{}\n", crate::results::units::wrap(&note, 0)));
    out.push_str(
        "A job file named like a command runs with `dioscope run FILE` or `dioscope ./FILE`.\n",
    );
    out.push_str(
        "\nExit codes: 0 ok, 1 I/O errors during the run, 2 bad input (nothing written),\n\
         128+N stopped by signal N (partial result printed and marked interrupted).\n\
         compare: 0 no regression beyond --threshold, 1 a significant regression,\n\
         2 bad or incomparable input, 3 a run of --run could not finish.\n\
         sweep: 0 every cell done, 1 a cell failed, 2 bad input, 128+N interrupted\n\
         (resume with --resume). The table: README.md, \"Exit codes\".\n",
    );
    out.push_str("\nOUTPUT FORMATS (--output-format=NAME):\n");
    out.push_str(&render::help(RUN_FORMATS));
    out.push_str("\nFIO FLAGS (run; fio's invocation flags that are not job options):\n");
    out.push_str(&flags::help_text());
    out.push_str(
        "\nOPTIONS (fio's names, units and defaults; 4k = 4096, 1m, 1g, %, times in s/ms/us/m/h):\n",
    );
    out.push_str(&crate::job::options::help_text());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lists_every_command_and_format() {
        let u = usage();
        for c in COMMANDS {
            assert!(u.contains(&format!("dioscope {}", c.name)), "{u}");
        }
        for f in RUN_FORMATS {
            assert!(u.contains(&format!("  {}", f.name)), "{u}");
        }
        assert!(u.contains("dioscope ./FILE"), "{u}");
        for f in flags::FLAGS {
            assert!(u.contains(&format!("--{}", f.name)), "{u}");
        }
    }

    /// docs/ARCHITECTURE.md's "Add a command": `example_command.rs` (one
    /// file) and its name in `commands!` (one line) make a command that
    /// dispatches, answers bad input with exit 2 and is in `--help`. When a
    /// command needs one more registration, this test fails.
    #[test]
    fn adding_a_command_is_one_file_and_one_line() {
        assert!(find("example-command").is_some());
        assert!(
            usage().contains("dioscope example-command FILE"),
            "{}",
            usage()
        );
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(dispatch(&a(&["example-command"])), 2);
        assert_eq!(dispatch(&a(&["example-command", "x"])), 0);
    }

    #[test]
    fn command_names_are_unique() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert!(COMMANDS[i + 1..].iter().all(|d| d.name != c.name));
        }
    }
}
