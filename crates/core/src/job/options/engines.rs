//! `--enghelp`: fio's engine help, generated from the engine list
//! (`engines::engine_list!`), the refused engines (`engines::refused`) and
//! this option table.

use super::*;
use crate::engines::refused::{self, REFUSED};
use crate::engines::{OptionKind, OptionValue};

/// The options of engines that take their own: each engine declares them
/// in its file (`EngineDef::OWN_OPTIONS`); this is their row in the table.
pub(super) static ENGINES: std::sync::LazyLock<Vec<OptDef>> = std::sync::LazyLock::new(|| {
    let mut creating = created::ENGINE_FILES.iter();
    crate::engines::all_options()
        .map(|o| OptDef {
            name: o.name,
            aliases: &[],
            kind: match o.kind {
                OptionKind::Int => Kind::Int,
                OptionKind::Size => Kind::Size,
                OptionKind::Flag => Kind::Flag,
                OptionKind::Str => Kind::Str,
                OptionKind::Choice(c) => Kind::Choice(c),
            },
            creates: match o.creates {
                true => Creates::Job(*creating.next().expect(
                    "more engine options create files than created::ENGINE_FILES has entries: \
                     add one",
                )),
                false => Creates::Nothing,
            },
            default: o.default,
            range: match (o.at_least, o.at_most) {
                (None, None) => None,
                (lo, hi) => Some(Range::between(lo.unwrap_or(0), hi.unwrap_or(u64::MAX))),
            },
            category: Category::EngineOptions,
            example: o.example,
            help: o.help,
            apply: Apply::Engine,
        })
        .collect()
});

/// Set the engine option `o` of the job to `v`, parsed by its kind.
pub(super) fn apply(o: &OptDef, j: &mut JobSpec, v: &str) -> Result<(), UnitError> {
    let value = match o.kind {
        Kind::Int | Kind::Size => OptionValue::Int(u32v(v)?),
        Kind::Flag => OptionValue::Flag(parse_bool(v)?),
        Kind::Choice(_) => OptionValue::Choice(v.trim()),
        _ => OptionValue::Str(opt_str(v)),
    };
    j.engine_params
        .apply(o.name, value)
        .unwrap_or_else(|| Err(format!("no engine has the option {}", o.name)))
}

/// A job's engine-specific options, as its engine needs them (cpuio's
/// cpuload, exec's program, e4defrag's donor).
pub fn validate(j: &JobSpec) -> Result<(), String> {
    j.ioengine.check(&j.engine_params)?;
    let p = &j.engine_params;
    if j.ioengine.caps().work_only && j.runtime_us == 0 && !j.ioengine.ends_itself(p) {
        return Err(format!(
            "ioengine={} does no I/O and never ends on its own: give runtime= (for example \
             runtime=30s){}",
            j.ioengine.as_str(),
            if j.ioengine.options().contains(&"exit_on_io_done") {
                ", or exit_on_io_done=1 beside jobs that do I/O"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

/// What an engine sets in its job, as fio's engines do at init: the pause
/// after each I/O (`thinktime`) of cpuio and exec.
pub fn adjust(j: &mut JobSpec) {
    if let Some(us) = j.ioengine.pause_us(&j.engine_params) {
        j.thinktime_us = us;
        j.thinktime_spin_us = 0;
        j.thinktime_blocks = 1;
        j.thinktime_blocks_type = super::pacing::ThinkBlocks::Complete;
    }
}

/// fio's `--enghelp[=ENGINE[,OPTION]]`: without an engine, every engine
/// dioscope has and those it refuses; with one, its help and its options;
/// with an option too, that option's help. `Err` names what is unknown.
pub fn enghelp(arg: Option<&str>) -> Result<String, String> {
    let Some(arg) = arg.map(str::trim).filter(|a| !a.is_empty()) else {
        let mut s = String::from("Available IO engines:\n");
        for k in EngineKind::ALL {
            let names = k.names().join(", ");
            s.push_str(&format!("\t{names:<12} {}\n", k.help()));
        }
        s.push_str("Not supported by dioscope (fio has them):\n");
        for r in REFUSED.iter().filter(|r| r.key == "ioengine") {
            s.push_str(&format!("\t{:<12} needs {}\n", r.names.join(", "), r.needs));
        }
        return Ok(s);
    };
    let (engine, option) = match arg.split_once(',') {
        Some((e, o)) => (e.trim(), Some(o.trim())),
        None => (arg, None),
    };
    let Some(kind) = EngineKind::parse(engine) else {
        if let Some(r) = refused::selected("ioengine", engine) {
            return Err(r.message(engine));
        }
        return Err(format!(
            "no I/O engine '{engine}'; dioscope's engines: {}",
            EngineKind::NAMES.join(", ")
        ));
    };
    let line = |name: &str| -> String {
        match lookup(name) {
            Some(o) => format!("{:<20}: {}\n", o.name, o.help),
            None => format!("{name:<20}: (no help)\n"),
        }
    };
    match option {
        Some(o) if kind.options().contains(&o) => Ok(line(o)),
        Some(o) => Err(format!(
            "'{o}' is not an option of ioengine={}; its options: {}",
            kind.as_str(),
            if kind.options().is_empty() {
                "none".to_string()
            } else {
                kind.options().join(", ")
            }
        )),
        None => {
            let mut s = format!("{}: {}\n", kind.as_str(), kind.help());
            if kind.options().is_empty() {
                s.push_str("This engine has no options of its own.\n");
            }
            for o in kind.options() {
                s.push_str(&line(o));
            }
            Ok(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_is_listed_with_help_and_its_options_exist() {
        let all = enghelp(None).unwrap();
        for k in EngineKind::ALL {
            assert!(all.contains(k.as_str()), "{all}");
            assert!(!k.help().is_empty());
            let one = enghelp(Some(k.as_str())).unwrap();
            assert!(one.contains(k.help()));
            for o in k.options() {
                assert!(lookup(o).is_some(), "{o} of {k:?} is not an option");
                assert!(enghelp(Some(&format!("{},{o}", k.as_str()))).is_ok());
            }
        }
        assert!(all.contains("net") && all.contains("needs"));
    }

    #[test]
    fn unknown_and_refused_engines_say_so() {
        let e = enghelp(Some("rbd")).unwrap_err();
        assert!(
            e.starts_with("not supported by dioscope: ioengine=rbd (needs"),
            "{e}"
        );
        let e = enghelp(Some("banana")).unwrap_err();
        assert!(e.contains("io_uring"), "{e}");
        let e = enghelp(Some("psync,hipri")).unwrap_err();
        assert!(e.contains("none"), "{e}");
        assert!(enghelp(Some("io_uring,fixedbufs"))
            .unwrap()
            .contains("fixedbufs"));
    }
}
