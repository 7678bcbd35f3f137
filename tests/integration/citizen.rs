//! A good citizen of the shell (issue 33): every command answers `--help`
//! from its flag table, the completions load in bash, zsh and fish and
//! offer what the tables hold, the man pages render, and every output flag
//! of every table is checked like every other file dioscope writes.

use crate::common::*;
use dioscope_core::commands::{self, cli};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

fn dioscope(args: &[&str]) -> std::process::Output {
    Command::new(bin()).args(args).output().unwrap()
}

#[test]
fn every_command_and_sub_command_answers_help_from_its_table() {
    for c in commands::all() {
        let o = dioscope(&[c.name, "--help"]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{} --help: {}",
            c.name,
            stderr(&o)
        );
        let text = stdout(&o);
        for f in c.cli.flags {
            assert!(
                text.contains(&cli::synopsis(f)),
                "{} --help misses {}:\n{text}",
                c.name,
                cli::synopsis(f)
            );
        }
        for s in c.cli.subcommands {
            let o = dioscope(&[c.name, s.name, "--help"]);
            assert_eq!(o.status.code(), Some(0), "{} {} --help", c.name, s.name);
            for f in s.cli.flags {
                assert!(
                    stdout(&o).contains(&cli::synopsis(f)),
                    "{} {} --help misses {}",
                    c.name,
                    s.name,
                    f.name
                );
            }
        }
    }
    // `-h` too, and a value written as the next word.
    assert_eq!(dioscope(&["compare", "-h"]).status.code(), Some(0));
    assert_eq!(dioscope(&["scratch", "-h"]).status.code(), Some(0));
}

/// Runs the bash completion function on `line` (the cursor at its end)
/// and returns what it offers.
fn bash_offers(script: &Path, line: &str) -> Vec<String> {
    let prog = format!(
        "source {}; COMP_LINE={line:?}; COMP_POINT=${{#COMP_LINE}}; COMP_WORDBREAKS=$' \\t\\n\"'\"'\"'><;|&(:'; \
         _dioscope; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    // In an empty folder: file names are offered too, and must not match.
    let empty = tempfile::tempdir().unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(&prog)
        .current_dir(empty.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{prog}: {}", stderr(&o));
    stdout(&o).lines().map(str::to_string).collect()
}

#[test]
fn completions_load_in_bash_and_offer_the_tables() {
    if !can_run("bash", have_tool("bash")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = dioscope(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let script = d.path().join("dioscope.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p dioscope",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("-F _dioscope dioscope"),
        "{}",
        stdout(&o)
    );
    // What it offers, in each context, comes from the tables.
    let first = bash_offers(&script, "dioscope ");
    for c in commands::all() {
        assert!(first.contains(&c.name.to_string()), "{first:?}");
    }
    assert_eq!(
        bash_offers(&script, "dioscope compare --output-f"),
        ["--output-format="]
    );
    // COMP_WORDBREAKS above has no '=': the value is offered with its flag.
    let formats = bash_offers(&script, "dioscope compare --output-format=");
    assert!(
        formats.contains(&"--output-format=json".to_string()),
        "{formats:?}"
    );
    assert_eq!(bash_offers(&script, "dioscope scratch cr"), ["create"]);
    let create = bash_offers(&script, "dioscope scratch create zram --");
    for f in commands::find("scratch")
        .unwrap()
        .cli
        .sub("create")
        .unwrap()
        .cli
        .flags
    {
        assert!(
            create
                .iter()
                .any(|x| x.trim_end_matches('=') == format!("--{}", f.name)),
            "{create:?} misses {}",
            f.name
        );
    }
    let mut types = bash_offers(&script, "dioscope scratch create fs --type ");
    types.sort();
    assert_eq!(types, ["btrfs", "ext4", "xfs"]);
    // fio's invocation: job options with their choices.
    assert!(bash_offers(&script, "dioscope --ioeng").contains(&"--ioengine=".to_string()));
    assert!(bash_offers(&script, "dioscope --rw=randr").contains(&"--rw=randread".to_string()));
}

#[test]
fn completions_load_in_zsh_and_fish() {
    let d = tempfile::tempdir().unwrap();
    if can_run(
        "zsh (scripts/install-deps.sh installs it)",
        have_tool("zsh"),
    ) {
        let f = d.path().join("_dioscope");
        std::fs::write(&f, dioscope(&["completions", "zsh"]).stdout).unwrap();
        let o = Command::new("zsh")
            .arg("-f")
            .arg("-c")
            .arg(format!(
                "autoload -U compinit && compinit -u -D && source {} && print -r -- $_comps[dioscope]",
                f.display()
            ))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o).trim(), "_dioscope", "{}", stderr(&o));
        // Loaded from $fpath as zsh does on its own.
        let o = Command::new("zsh")
            .arg("-f")
            .arg("-c")
            .arg(format!(
                "fpath=({} $fpath) && autoload -U compinit && compinit -u -D && print -r -- $_comps[dioscope]",
                d.path().display()
            ))
            .output()
            .unwrap();
        assert_eq!(stdout(&o).trim(), "_dioscope", "{}", stderr(&o));
    }
    if can_run(
        "fish (scripts/install-deps.sh installs it)",
        have_tool("fish"),
    ) {
        let f = d.path().join("dioscope.fish");
        std::fs::write(&f, dioscope(&["completions", "fish"]).stdout).unwrap();
        let offers = |line: &str| {
            let o = Command::new("fish")
                .arg("--no-config")
                .arg("-c")
                .arg(format!("source {}; complete -C{line:?}", f.display()))
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
            stdout(&o)
        };
        assert!(offers("dioscope compare --out").contains("--output-format"));
        assert!(offers("dioscope scratch create fs --type=").contains("xfs"));
        assert!(offers("dioscope ").contains("sweep"));
    }
}

#[test]
fn man_pages_render_with_man_and_without_groff_warnings() {
    if !can_run(
        "man and groff (scripts/install-deps.sh installs man-db)",
        have_tool("man") && have_tool("groff"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = dioscope(&["man", "--list"]);
    let pages: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(pages.len(), commands::all().len(), "{pages:?}");
    for p in &pages {
        let args: Vec<&str> = match p.strip_prefix("dioscope-") {
            Some(c) => vec!["man", c],
            None => vec!["man"],
        };
        let o = dioscope(&args);
        assert_eq!(o.status.code(), Some(0), "{p}: {}", stderr(&o));
        let f = d.path().join(format!("{p}.1"));
        std::fs::write(&f, &o.stdout).unwrap();
        let m = Command::new("man")
            .arg("-l")
            .arg(&f)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        assert!(m.status.success(), "man -l {p}: {}", stderr(&m));
        let text = stdout(&m);
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{p}: {text}"
        );
        let g = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&f)
            .output()
            .unwrap();
        assert!(
            stderr(&g).trim().is_empty(),
            "groff warns on {p}: {}",
            stderr(&g)
        );
    }
}

/// What each command needs besides its output flag to get as far as
/// checking that flag; a new command with an output flag needs a line.
fn invocation(cmd: &str, sub: &[&str]) -> Option<Vec<&'static str>> {
    Some(match (cmd, sub) {
        ("compare", []) => vec!["compare", "a.json", "b.json"],
        ("sweep", []) => vec!["sweep", "s.fio", "--vary", "bs=4k|8k"],
        ("report", []) => vec!["report", "a.json"],
        ("recipe", ["run"]) => vec!["recipe", "run", "indirect-write", "--quick"],
        _ => return None,
    })
}

#[test]
fn output_flags_of_every_command_refuse_a_planted_symlink() {
    // Walks every command's flag table: each flag that names a file dioscope
    // writes, given a name where a symlink to a user's file was planted, is
    // refused (exit 2) and the user's file is intact.
    let d = tempfile::tempdir().unwrap();
    for n in ["a.json", "b.json"] {
        let o = run_in(
            d.path(),
            &[
                "--name=r",
                "--ioengine=null",
                "--size=1m",
                "--trials=2",
                "--output-format=json",
                &format!("--output={n}"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    std::fs::write(d.path().join("s.fio"), "[s]\nioengine=null\nsize=1m\n").unwrap();
    std::fs::write(d.path().join("victim"), "precious").unwrap();
    let mut walked = 0;
    for c in commands::all() {
        for (path, f) in c.cli.all_flags() {
            if !matches!(f.value, cli::Value::Output) {
                continue;
            }
            let base = invocation(c.name, &path).unwrap_or_else(|| {
                panic!(
                    "{} {path:?} --{} writes a file: give the walk an invocation for it",
                    c.name, f.name
                )
            });
            let link = d.path().join(format!("out-{}-{}", c.name, f.name));
            symlink(d.path().join("victim"), &link).unwrap();
            let flag = format!("--{}={}", f.name, link.display());
            let mut args = base.clone();
            args.push(&flag);
            let o = run_in(d.path(), &args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("symbolic link"),
                "{args:?}: {}",
                stderr(&o)
            );
            assert_eq!(
                std::fs::read_to_string(d.path().join("victim")).unwrap(),
                "precious"
            );
            walked += 1;
        }
    }
    assert!(walked >= 4, "only {walked} output flags walked");
}

/// A real result of a paced null job (tight per-trial values), with its
/// findings removed so that the planted ones below are the only ones.
fn paced_result(dir: &Path) -> serde_json::Value {
    let o = run_in(
        dir,
        &[
            "--name=gate",
            "--ioengine=null",
            "--size=1m",
            "--rate_iops=2000",
            "--runtime=300ms",
            "--time_based",
            "--trials=5",
            "--output-format=json",
            "--output=base.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("base.json")).unwrap()).unwrap();
    v["dioscope"]["findings"] = serde_json::json!([]);
    v
}

/// `doc` with every trial's throughput scaled by `f` (a planted change).
fn scaled(doc: &serde_json::Value, f: f64) -> serde_json::Value {
    let mut d = doc.clone();
    for t in d["dioscope"]["jobs"][0]["trials"].as_array_mut().unwrap() {
        for k in ["iops", "read_iops", "bw_bytes"] {
            let x = t[k].as_f64().unwrap();
            t[k] = serde_json::json!(x * f);
        }
    }
    d
}

/// The github-action-benchmark custom format: an array of objects with
/// `name` (unique, non-empty), `unit`, a finite `value`, and optional
/// string `range` and `extra`; nothing else.
fn check_benchmark_schema(text: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(text).expect("benchmark JSON parses");
    let entries = v.as_array().expect("an array").clone();
    let mut names = std::collections::HashSet::new();
    for e in &entries {
        let o = e.as_object().expect("each entry an object");
        for k in o.keys() {
            assert!(
                ["name", "unit", "value", "range", "extra"].contains(&k.as_str()),
                "{k} in {e}"
            );
        }
        let name = o["name"].as_str().expect("name is a string");
        assert!(
            !name.is_empty() && names.insert(name.to_string()),
            "name {name} empty or repeated"
        );
        assert!(o["unit"].as_str().is_some_and(|u| !u.is_empty()), "{e}");
        assert!(o["value"].as_f64().is_some_and(f64::is_finite), "{e}");
        for k in ["range", "extra"] {
            assert!(
                matches!(o.get(k), None | Some(serde_json::Value::String(_))),
                "{e}"
            );
        }
    }
    entries
}

#[test]
fn ci_gate_passes_fails_and_asks_for_a_rerun() {
    let d = tempfile::tempdir().unwrap();
    let base = paced_result(d.path());
    let write = |n: &str, v: &serde_json::Value| {
        std::fs::write(d.path().join(n), serde_json::to_string(v).unwrap()).unwrap()
    };
    write("base.json", &base);
    write("same.json", &base);
    write("slower.json", &scaled(&base, 0.7));
    // The same regression, measured while other processes held the CPUs
    // in every trial of B only.
    let mut confounded = scaled(&base, 0.7);
    confounded["dioscope"]["findings"] = serde_json::json!([{
        "severity": "warning",
        "kind": "cpu_contention",
        "message": "other processes used 190 % of a CPU during trials 1, 2, 3, 4, 5",
        "trials": [1, 2, 3, 4, 5]
    }]);
    write("confounded.json", &confounded);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ci-gate.sh");
    let gate = |new: &str| {
        let o = Command::new("bash")
            .arg(&script)
            .args(["base.json", new, "--gate=iops"])
            .env("DIOSCOPE", bin())
            .current_dir(d.path())
            .output()
            .unwrap();
        (o.status.code(), stdout(&o))
    };
    let (code, out) = gate("same.json");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ci-gate: PASS"), "{out}");
    let (code, out) = gate("slower.json");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("ci-gate: FAIL"), "{out}");
    let (code, out) = gate("confounded.json");
    assert_eq!(code, Some(4), "{out}");
    assert!(
        out.contains("ci-gate: RERUN") && out.contains("cpu_contention"),
        "{out}"
    );

    // github-action-benchmark's JSON of the run and of the comparison.
    let o = run_in(
        d.path(),
        &[
            "--name=gate",
            "--ioengine=null",
            "--size=1m",
            "--trials=2",
            "--output-format=benchmark-bigger",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = check_benchmark_schema(&stdout(&o));
    assert!(
        run.iter()
            .any(|e| e["name"] == "gate IOPS" && e["unit"] == "IOPS"),
        "{run:?}"
    );
    assert!(
        run.iter().all(|e| e["range"].is_string()),
        "2 trials give a range: {run:?}"
    );
    for fmt in ["benchmark-bigger", "benchmark-smaller"] {
        let o = run_in(
            d.path(),
            &[
                "compare",
                "base.json",
                "slower.json",
                "--gate=iops",
                &format!("--output-format={fmt}"),
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{fmt}: {}", stderr(&o));
        let cmp = check_benchmark_schema(&stdout(&o));
        assert!(!cmp.is_empty(), "{fmt}");
        if fmt == "benchmark-bigger" {
            let iops = cmp
                .iter()
                .find(|e| e["name"] == "gate IOPS")
                .expect("IOPS entry");
            let b = iops["value"].as_f64().unwrap();
            let a: f64 = base["dioscope"]["jobs"][0]["trials"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["iops"].as_f64().unwrap())
                .sum::<f64>()
                / 5.0;
            assert!((b / a - 0.7).abs() < 0.05, "B {b} vs A {a}");
            assert!(iops["extra"].as_str().unwrap().contains("worse"), "{iops}");
        } else {
            assert!(cmp.iter().all(|e| e["unit"] != "IOPS"), "{cmp:?}");
        }
    }
}

/// The README's lists are checked against the tables: every engine in
/// "Engines", every command in the usage, every top-level module folder
/// in "Layout".
#[test]
fn readme_lists_match_the_tables() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = |title: &str| -> String {
        let start = readme
            .find(title)
            .unwrap_or_else(|| panic!("README has no {title}"));
        let rest = &readme[start + title.len()..];
        let end = rest.find("\n## ").unwrap_or(rest.len());
        rest[..end].to_string()
    };
    let engines = section("## Engines");
    for name in dioscope_core::engines::EngineKind::NAMES {
        assert!(
            engines.contains(&format!("`{name}`")),
            "README's Engines section does not name {name}"
        );
    }
    let layout = section("## Layout");
    for e in std::fs::read_dir(root.join("crates/core/src")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            let dir = format!("{}/", e.file_name().to_string_lossy());
            assert!(
                layout.contains(&dir),
                "README's Layout misses crates/core/src/{dir}"
            );
        }
    }
    let usage = stdout(&dioscope(&["--help"]));
    for c in commands::all() {
        assert!(
            usage.contains(&format!("dioscope {}", c.name)),
            "{}",
            c.name
        );
    }
}
