//! SIGINT/SIGTERM: partial result printed and marked, scratch file removed.

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn signal_run(sig: i32) {
    let d = tempfile::tempdir().unwrap();
    let child = Command::new(bin())
        .args([
            "run",
            "--size=32m",
            "--runtime=30",
            "--ramp_time=0",
            "--trials=1",
            "--output-format=json",
            "--output=res.json",
        ])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the scratch file is laid out and the run under way.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let laid_out = entries(d.path()).iter().any(|n| {
            n.starts_with("dioscope-scratch")
                && std::fs::metadata(d.path().join(n))
                    .map(|m| m.len() == 32 << 20)
                    .unwrap_or(false)
        });
        if laid_out {
            break;
        }
        assert!(Instant::now() < deadline, "scratch file never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id() as i32;
    assert_eq!(
        Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .unwrap()
            .code(),
        Some(0)
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + sig),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("res.json")).unwrap()).unwrap();
    assert_eq!(j["dioscope"]["interrupted"], true);
    assert!(
        j["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0,
        "partial result kept"
    );
    assert_eq!(
        entries(d.path()),
        vec!["res.json"],
        "scratch file removed, no temporary result left"
    );
}

#[test]
fn sigint_keeps_partial_result_and_removes_scratch() {
    signal_run(2);
}

#[test]
fn sigterm_keeps_partial_result_and_removes_scratch() {
    signal_run(15);
}
