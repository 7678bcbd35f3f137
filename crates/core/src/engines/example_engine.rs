//! A test-only engine: docs/ARCHITECTURE.md's "Add an engine", registered
//! through `engine_list!` like every engine (under `cfg(test)`). Its I/Os
//! complete at once, as null's; it declares one option of its own
//! (`example_note`, a line for the run's notes), a capability (`hipri`,
//! accepted; `nowait` is not, so a job asking for it is refused) and a
//! preflight limit (a queue of at most 64).

use super::null::NullEngine;
use super::{
    text, Caps, EngineDef, EngineOption, EngineOpts, OptionInfo, OptionKind, SlotArena, WithEngine,
};
use std::os::fd::RawFd;

pub struct Def;

/// The engine's options.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    /// `example_note`: what the engine adds to the run's notes.
    pub note: Option<String>,
}

impl EngineDef for Def {
    type Params = Params;
    const NAMES: &'static [&'static str] = &["example"];
    const HELP: &'static str = "no I/O: every I/O completes at once (a test of the engine table)";
    const OWN_OPTIONS: &'static [EngineOption<Params>] = &[EngineOption::new(
        OptionInfo::new(
            "example_note",
            OptionKind::Str,
            "hello",
            "example: a line the engine adds to the run's notes",
        ),
        |p, v| {
            p.note = text(v)?;
            Ok(())
        },
    )];
    const OPTIONS: &'static [&'static str] = &["hipri"];
    const CAPS: Caps = Caps {
        real_io: false,
        moves_data: false,
        fakes_verify: true,
        hipri: true,
        max_depth: Some((64, "the example engine's queue")),
        ..Caps::BASE
    };

    fn check(p: &Params) -> Result<(), String> {
        match &p.note {
            Some(n) if n.len() > 80 => Err("example_note= takes at most 80 characters: \
                                            shorten it, for example example_note=hello"
                .into()),
            _ => Ok(()),
        }
    }

    fn with<W: WithEngine>(
        arena: SlotArena,
        _: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        let note = opts.job.params.example_engine.note.clone();
        Ok((f.run(&mut NullEngine::new(arena)), note))
    }
}

#[cfg(test)]
mod tests {
    use crate::engines::EngineKind;

    fn args(extra: &[&str]) -> Vec<String> {
        ["--name=ex", "--ioengine=example", "--size=1m"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    }

    /// docs/ARCHITECTURE.md's "Add an engine": this file and its line in
    /// `engine_list!` make an engine that `ioengine=` takes, `--enghelp`
    /// lists with its option, whose option the option table parses and
    /// whose capabilities and preflight limit the parser and the runner
    /// apply. When an engine needs one more registration, this fails.
    #[test]
    fn adding_an_engine_is_one_file_and_one_line() {
        let k = EngineKind::parse("example").expect("registered by its one line");
        assert_eq!(k.options(), ["example_note", "hipri"]);
        let help = crate::job::options::engines::enghelp(Some("example")).unwrap();
        assert!(help.contains("example_note") && help.contains("run's notes"), "{help}");
        let o = crate::job::options::lookup("example_note").expect("in the option table");
        assert_eq!(o.category, crate::job::options::Category::EngineOptions);

        // A job with its option runs through the pipeline; the option
        // reaches the engine (its note is in the result).
        let a = args(&["--example_note=planted", "--hipri=1", "--output-format=json"]);
        let (plan, formats) = crate::pipeline::validate(&a).unwrap();
        let done = crate::pipeline::execute(&plan).unwrap_or_else(|c| panic!("exit {c}"));
        assert!(done.doc.jobs[0].read.total_ios > 0);
        let json = formats.render(&done.doc);
        assert!(json.contains("planted"), "{json}");

        // A capability it lacks is refused before any I/O, naming it.
        let e = crate::pipeline::validate(&args(&["--nowait=1"])).unwrap_err();
        assert!(e.contains("nowait") && e.contains("example"), "{e}");
        // Its own check, when the job is parsed.
        let long = format!("--example_note={}", "x".repeat(81));
        let e = crate::pipeline::validate(&args(&[&long])).unwrap_err();
        assert!(e.contains("at most 80 characters"), "{e}");
        // Its preflight limit, before the first I/O.
        let (plan, _) = crate::pipeline::validate(&args(&["--iodepth=128"])).unwrap();
        assert!(crate::pipeline::execute(&plan).is_err());
    }

    /// The recipe's files are what this engine took: the file named in
    /// step 1 (`my_engine.rs` → this file) and the list of step 2, and
    /// nothing else names it.
    #[test]
    fn the_engine_recipe_lists_what_this_engine_took() {
        crate::recipe_check::recipe_took("Add an engine", "my_engine", "example_engine");
    }
}
