//! The output conventions of issue 26 (docs/STATISTICS.md): `±` is σ and an
//! interval is `95 % CI [low, high]`; one trial has no interval; an
//! interrupted trial is listed as interrupted; doctor's JSON says what its
//! text says, and checks it could not make are skipped with the reason.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

/// Text and JSON of one run (`--output-format=normal,json`).
fn text_and_json(out: &str) -> (&str, serde_json::Value) {
    let (j, text) = json_then_text(out);
    (text, j)
}

/// Whitespace collapsed, so wrapped text compares with one-line text.
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn one_trial_prints_no_interval() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--trials=1",
            "--output-format=normal,json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let (text, j) = text_and_json(&out);
    assert!(!text.contains("CI") && !text.contains('±'), "{text}");
    let s = &j["dioscope"]["jobs"][0]["summary"]["iops"];
    assert_eq!(s["n"], 1, "{s}");
    assert!(s["ci95"].is_null(), "one trial, no interval: {s}");
    // Two trials do have one, as [low, high] with its level, after mean ± σ.
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--trials=2",
            "--output-format=normal,json",
        ],
    );
    let out = stdout(&o);
    let (text, j) = text_and_json(&out);
    let s = &j["dioscope"]["jobs"][0]["summary"]["iops"];
    assert_eq!(s["ci95"].as_array().map(Vec::len), Some(2), "{s}");
    let line = text
        .lines()
        .find(|l| l.contains("trials: IOPS"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("(mean ± σ over 2 trials") && line.contains("95 % CI ["),
        "{line}"
    );
    // A sweep cell of one trial: the value and the count, nothing else.
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--trials=1",
            "--vary",
            "bs=4k|8k",
            "--output=sw.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("4k") || l.trim_start().starts_with("8k"))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    for r in rows {
        // ("[1 finding]" may follow: a count, not an interval.)
        assert!(
            r.contains(" (1)") && !r.contains('±') && !r.contains("] ("),
            "{r}"
        );
    }
}

/// The tid of the thread named `comm` of process `pid`, once it exists.
fn thread_id(pid: u32, comm: &str) -> Option<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .find(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == comm))
        .and_then(|t| t.file_name().to_str()?.parse().ok())
}

#[test]
fn an_interrupted_trial_is_shown_as_interrupted() {
    let d = tempfile::tempdir().unwrap();
    let c = Command::new(bin())
        .args([
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--time_based",
            "--runtime=3",
            "--trials=3",
            "--output-format=normal,json",
        ])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = c.id();
    // Each trial starts its workers afresh: a new worker thread is a new
    // trial. Interrupt the second (or, had the first been missed, the third).
    let mut first = None;
    wait_for("the first trial's worker", 30, || {
        first = thread_id(pid, "x.0");
        first.is_some()
    });
    wait_for("a later trial's worker", 30, || {
        thread_id(pid, "x.0").is_some_and(|t| Some(t) != first)
    });
    kill(pid, 2);
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let out = stdout(&o);
    let (text, j) = text_and_json(&out);
    let trials = j["dioscope"]["jobs"][0]["trials"].as_array().unwrap();
    let cut: Vec<&serde_json::Value> = trials.iter().filter(|t| t["interrupted"] == true).collect();
    assert_eq!(cut.len(), 1, "{trials:?}");
    let whole = trials.len() - 1;
    assert!(whole >= 1, "{trials:?}");
    // The statistics are over the whole trials only.
    assert_eq!(j["dioscope"]["jobs"][0]["summary"]["iops"]["n"], whole);
    let per = text
        .lines()
        .find(|l| l.contains("per trial:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(per.trim_end().ends_with("interrupted"), "{per}");
    assert_eq!(per.matches("interrupted").count(), 1, "{per}");
    assert!(!per.contains(", 0"), "{per}");
    if whole == 1 {
        assert!(
            text.contains("one complete trial: no spread, no interval"),
            "{text}"
        );
    }
}

/// A file with page-cache pages and another process holding it open: the
/// page-cache and other-openers checks warn.
#[test]
fn doctor_json_says_what_its_text_says() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("held");
    std::fs::write(&f, vec![7u8; 1 << 20]).unwrap();
    let _ = std::fs::read(&f).unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let holder = Kill(
        Command::new("sleep")
            .arg("60")
            .stdin(std::fs::File::open(&f).unwrap())
            .spawn()
            .unwrap(),
    );
    let path = f.to_str().unwrap();
    let text = stdout(&run_in(d.path(), &["doctor", path]));
    let o = run_in(d.path(), &["doctor", path, "--output-format=json"]);
    let j = json(&o);
    drop(holder);
    let checks = j["checks"].as_array().unwrap();
    let flat_text = flat(&text);
    let mut warned = Vec::new();
    for c in checks {
        let (name, status) = (c["name"].as_str().unwrap(), c["status"].as_str().unwrap());
        let detail = c["detail"].as_str().unwrap();
        // The JSON's detail is what the checklist line says.
        assert!(
            flat_text.contains(&flat(detail)),
            "{name}: JSON detail {detail:?} not in the text:\n{text}"
        );
        let findings = c["findings"].as_array().unwrap();
        if status == "warn" {
            warned.push(name.to_string());
            let said: Vec<&str> = findings
                .iter()
                .map(|f| f["message"].as_str().unwrap())
                .collect();
            assert_eq!(detail, said.join(" "), "{name}");
            assert!(
                text.lines().any(|l| l.starts_with(&format!("! {name}"))),
                "{name}: warned in the JSON, not in the text:\n{text}"
            );
        }
    }
    for name in ["other openers", "page cache"] {
        assert!(
            warned.iter().any(|w| w == name),
            "{name}: {warned:?}\n{text}"
        );
    }
    let openers = checks
        .iter()
        .find(|c| c["name"] == "other openers")
        .unwrap();
    assert!(
        !openers["detail"]
            .as_str()
            .unwrap()
            .contains("no other process has it open"),
        "{openers}"
    );
}

#[test]
fn doctor_as_a_normal_user_skips_what_it_cannot_check() {
    if !can_run("doctor as user nobody", is_root() && have_tool("setpriv")) {
        return;
    }
    // Everything nobody needs to reach lives in a directory it may enter:
    // a copy of the binary, and a target only root may read.
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = d.path().join("dioscope");
    std::fs::copy(bin(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = d.path().join("target");
    std::fs::write(&target, vec![1u8; 1 << 20]).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let as_nobody = |extra: &[&str]| {
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe)
            .arg("doctor")
            .arg(&target)
            .args(extra)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
        stdout(&o)
    };
    let text = as_nobody(&[]);
    let j: serde_json::Value = serde_json::from_str(&as_nobody(&["--output-format=json"])).unwrap();
    let status = |name: &str| -> (String, String) {
        let c = j["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {j}"));
        (
            c["status"].as_str().unwrap().to_string(),
            c["detail"].as_str().unwrap().to_string(),
        )
    };
    for name in ["direct I/O", "really direct", "other openers", "page cache"] {
        let (st, detail) = status(name);
        assert_eq!(st, "skip", "{name}: {detail}\n{text}");
        assert!(
            detail.contains("Permission denied"),
            "{name}: the reason: {detail}"
        );
        assert!(
            text.lines().any(|l| l.starts_with(&format!("- {name}"))),
            "{name} not marked skipped:\n{text}"
        );
    }
    assert!(!text.contains("does not support direct I/O"), "{text}");
    assert!(
        !text.contains("✓ other openers") && !text.contains("✓ really direct"),
        "{text}"
    );
    // As root the same target is checked, not skipped.
    let o = Command::new(&exe)
        .args(["doctor", target.to_str().unwrap(), "--output-format=json"])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for c in j["checks"].as_array().unwrap() {
        if ["direct I/O", "really direct", "other openers"].contains(&c["name"].as_str().unwrap()) {
            assert_ne!(c["status"], "skip", "{c}");
        }
    }
}
