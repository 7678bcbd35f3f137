//! `--enghelp`: fio's engine help, generated from the engine list
//! (`engines::engine_list!`), the refused engines (`engines::refused`) and
//! this option table.

use super::*;
use crate::engines::refused::{self, REFUSED};
use crate::engines::CpuMode;

/// The options of engines that take their own, with fio's semantics
/// (each engine lists its own in `EngineDef::OPTIONS`).
pub(super) static ENGINES: &[OptDef] = &[
    OptDef {
        name: "cpuload",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: Some(Range::at_least(1)),
        category: Category::EngineOptions,
        example: "50",
        help: "cpuio: percent of one CPU each job burns (1-100; mandatory with cpuio; \
               numjobs=N loads N CPUs)",
        apply: job!(|j, v| {
            let n = u32v(v)?;
            // fio caps it at 100.
            j.engine_params.cpuload = n.min(100);
            Ok(())
        }),
    },
    OptDef {
        name: "cpuchunks",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("50000"),
        range: Some(Range::at_least(1)),
        category: Category::EngineOptions,
        example: "50000",
        help: "cpuio: length of one busy cycle in microseconds (fio's default 50000); \
               each is followed by the idle time that makes the load cpuload",
        apply: job!(|j, v| {
            j.engine_params.cpuchunks_us = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "cpumode",
        aliases: &[],
        kind: Kind::Choice(&["noop", "qsort"]),
        creates: Creates::Nothing,
        default: Some("noop"),
        range: None,
        category: Category::EngineOptions,
        example: "qsort",
        help: "cpuio: burn cycles in a clock-reading loop (noop) or by sorting arrays (qsort, \
               more power drawn)",
        apply: job!(|j, v| {
            j.engine_params.cpumode = match v.trim() {
                "noop" => CpuMode::Noop,
                "qsort" => CpuMode::Qsort,
                o => return Err(format!("'{o}' is not a CPU mode: choose noop or qsort")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "exit_on_io_done",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "cpuio: end the job once the jobs that do I/O beside it are done",
        apply: job!(|j, v| {
            j.engine_params.exit_on_io_done = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "program",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::EngineOptions,
        example: "/usr/bin/vmstat",
        help: "exec: the program to run for the job's runtime (mandatory with exec)",
        apply: job!(|j, v| {
            j.engine_params.program = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "arguments",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::EngineOptions,
        example: "-w 1",
        help: "exec: the program's arguments, split at spaces; %r is the job's runtime in \
               seconds, %n its name",
        apply: job!(|j, v| {
            j.engine_params.arguments = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "grace_time",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "exec: seconds between SIGTERM and SIGKILL when the runtime is over (default 1)",
        apply: job!(|j, v| {
            j.engine_params.grace_time_s = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "std_redirect",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Job(created::redirects),
        default: Some("1"),
        range: None,
        category: Category::EngineOptions,
        example: "0",
        help: "exec: write the program's stdout and stderr to JOBNAME.stdout and \
               JOBNAME.stderr (default 1); 0 leaves them on dioscope's",
        apply: job!(|j, v| {
            j.engine_params.std_redirect = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "donorname",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Job(created::donor),
        default: None,
        range: None,
        category: Category::EngineOptions,
        example: "file.def",
        help: "e4defrag: the donor file whose blocks EXT4_IOC_MOVE_EXT swaps in (in \
               directory= when relative; created; mandatory with e4defrag)",
        apply: job!(|j, v| {
            j.engine_params.donorname = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "inplace",
        aliases: &[],
        kind: Kind::Choice(&["0", "1"]),
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "e4defrag: 0 allocates the donor's blocks once at start, 1 allocates them for \
               each I/O and frees them after it",
        apply: job!(|j, v| {
            j.engine_params.inplace = match v.trim() {
                "0" => false,
                "1" => true,
                o => return Err(format!("'{o}' is not an inplace mode: choose 0 or 1")),
            };
            Ok(())
        }),
    },
];

/// A job's engine-specific options, as its engine needs them (cpuio's
/// cpuload, exec's program, e4defrag's donor).
pub fn validate(j: &JobSpec) -> Result<(), String> {
    j.ioengine.check(&j.engine_params)?;
    let p = &j.engine_params;
    if j.ioengine.caps().work_only && j.runtime_us == 0 && !p.exit_on_io_done {
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
