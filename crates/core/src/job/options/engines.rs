//! `--enghelp`: fio's engine help, generated from the engine list
//! (`engines::engine_list!`), the refused engines (`engines::refused`) and
//! this option table.

use super::*;
use crate::engines::refused::{self, REFUSED};

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
