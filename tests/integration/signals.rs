//! Signals in every phase of a run (layout, ramp, run): SIGINT, SIGTERM and
//! SIGHUP stop it cleanly (partial result printed, written whole and marked;
//! scratch file removed; exit 128+N). A second SIGINT exits at once. SIGKILL
//! never leaves a half-written result file.

use crate::common::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;
const SIGSTOP: i32 = 19;
const SIGCONT: i32 = 18;

/// The default job (scratch file in `dir`, removed afterwards) with `extra`.
fn spawn_default(dir: &Path, extra: &[&str]) -> Child {
    Command::new(bin())
        .args([
            "run",
            "--ioengine=psync",
            "--trials=1",
            "--output-format=json",
            "--output=res.json",
        ])
        .args(extra)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The default job's worker has read something: the scratch file is laid
/// out and I/O is under way.
fn wait_reading(c: &Child) {
    let pid = c.id();
    wait_for("the default job's first reads", 60, || {
        worker_io(pid, "default").is_some_and(|(r, _)| r > 0)
    });
}

/// Wait for the end of a run stopped by `sig`; its stderr.
fn finish(c: Child, sig: i32) -> String {
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(128 + sig), "{err}");
    err
}

/// Signal a default run in its measured phase; check result and cleanup.
fn signal_run(sig: i32) {
    let d = tempfile::tempdir().unwrap();
    let c = spawn_default(d.path(), &["--size=32m", "--runtime=30", "--ramp_time=0"]);
    wait_reading(&c);
    kill(c.id(), sig);
    let err = finish(c, sig);
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("res.json")).unwrap()).unwrap();
    assert_eq!(j["dioscope"]["interrupted"], true, "{err}");
    assert_eq!(j["dioscope"]["signal"], sig);
    assert_eq!(j["dioscope"]["partial"], true);
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
    signal_run(SIGINT);
}

#[test]
fn sigterm_keeps_partial_result_and_removes_scratch() {
    signal_run(SIGTERM);
}

#[test]
fn sighup_behaves_like_sigterm() {
    signal_run(SIGHUP);
}

#[test]
fn stop_signals_during_layout_leave_nothing() {
    const SIZE: u64 = 2 << 30;
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let d = tempfile::tempdir().unwrap();
        let c = spawn_default(d.path(), &["--size=2g", "--runtime=30"]);
        let pid = c.id();
        // Freeze the process as soon as its scratch file exists, check it is
        // still laying out (it has written less than the file), then signal:
        // the signal is handled in the layout, whatever the disk's speed.
        wait_for("the scratch file", 30, || {
            entries(d.path())
                .iter()
                .any(|n| n.starts_with("dioscope-scratch"))
        });
        kill(pid, SIGSTOP);
        let written = process_wchar(pid);
        assert!(
            written < SIZE,
            "layout already done ({written} bytes written); the disk is too fast for this test"
        );
        kill(pid, sig);
        kill(pid, SIGCONT);
        let err = finish(c, sig);
        assert!(
            err.contains("interrupted by a signal while laying out the file")
                && err.contains("the partly laid out data was removed"),
            "{err}"
        );
        assert!(
            entries(d.path()).is_empty(),
            "signal {sig}: no scratch file, no result: {:?}",
            entries(d.path())
        );
    }
}

#[test]
fn stop_signals_during_ramp_keep_a_marked_result() {
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let d = tempfile::tempdir().unwrap();
        let c = spawn_default(d.path(), &["--size=16m", "--ramp_time=30", "--runtime=30"]);
        // Reads under way 30 s before the ramp ends: this is the ramp.
        wait_reading(&c);
        kill(c.id(), sig);
        let err = finish(c, sig);
        let j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.path().join("res.json")).unwrap())
                .unwrap_or_else(|e| panic!("whole JSON: {e}; {err}"));
        assert_eq!(j["dioscope"]["interrupted"], true);
        assert_eq!(j["dioscope"]["signal"], sig);
        assert_eq!(
            j["jobs"][0]["read"]["total_ios"], 0,
            "nothing measured in the ramp"
        );
        assert_eq!(entries(d.path()), vec!["res.json"]);
    }
}

/// Thaws a frozen filesystem on drop, even when the test panics.
struct Frozen<'a>(&'a Path);

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(self.0).status();
    }
}

#[test]
fn second_sigint_exits_at_once_and_removes_scratch() {
    if !can_run("root", is_root())
        || !can_run(
            "losetup, mkfs.ext4, fsfreeze",
            have_tool("losetup") && have_tool("mkfs.ext4") && have_tool("fsfreeze"),
        )
    {
        return;
    }
    // One job writes to a file on a frozen filesystem, so its first write
    // hangs and the first SIGINT cannot finish the run; the other job's
    // file is a scratch file dioscope creates.
    let fs = MountedFs::new(32 << 20, "ext4");
    let stuck = fs.path().join("stuck.dat");
    std::fs::write(&stuck, vec![7u8; 1 << 20]).unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("two.fio"),
        format!(
            "[global]\nioengine=psync\nbs=4k\ntime_based\nruntime=60\n\
             [stuck]\nfilename={}\nrw=write\n\
             [scratch]\nfilename=scratch.dat\nsize=1m\nrw=read\nunlink=1\n",
            stuck.display()
        ),
    )
    .unwrap();
    sh("fsfreeze", &["-f", fs.path().to_str().unwrap()]);
    let frozen = Frozen(fs.path());
    let c = Command::new(bin())
        .args(["two.fio", "--output=res.json"])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = c.id();
    wait_for("the scratch job's reads", 30, || {
        worker_io(pid, "scratch").is_some_and(|(r, _)| r > 0)
    });
    kill(pid, SIGINT);
    // The first SIGINT is handled: the scratch job's thread ends...
    wait_for("the scratch job to stop after the first SIGINT", 30, || {
        worker_io(pid, "scratch").is_none()
    });
    // ...but the run cannot end while a write hangs: no result yet.
    assert!(!d.path().join("res.json").exists());
    assert!(d.path().join("scratch.dat").exists());
    kill(pid, SIGINT);
    wait_for("the second SIGINT to remove the scratch file", 30, || {
        !d.path().join("scratch.dat").exists()
    });
    // The process has called _exit; its hung thread lets it go once thawed.
    drop(frozen);
    let out = c.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        entries(d.path()),
        vec!["two.fio"],
        "no scratch file, no result, no temporary file"
    );
    assert_eq!(
        std::fs::read(&stuck).unwrap().len(),
        1 << 20,
        "user file kept"
    );
}

#[test]
fn sigkill_never_leaves_a_half_written_result() {
    let d = tempfile::tempdir().unwrap();
    // An earlier run's result, and the temporary file of a writer that was
    // killed between writing and renaming (its process is gone).
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    std::fs::write(d.path().join("res.json"), b"{\"earlier\": true}\n").unwrap();
    // A dead writer's temporary file carries its own inode number in its
    // name (outfile.rs): that is what proves it is dioscope's.
    std::fs::write(d.path().join("half"), b"{\"half").unwrap();
    let ino =
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(d.path().join("half")).unwrap());
    let stale = format!(".res.json.dioscope-tmp.{dead}.{ino}");
    std::fs::rename(d.path().join("half"), d.path().join(&stale)).unwrap();

    let c = spawn_default(d.path(), &["--size=16m", "--runtime=30", "--ramp_time=0"]);
    wait_reading(&c);
    kill(c.id(), SIGKILL);
    let out = c.wait_with_output().unwrap();
    assert_eq!(out.status.code(), None, "killed");
    assert_eq!(
        std::fs::read(d.path().join("res.json")).unwrap(),
        b"{\"earlier\": true}\n",
        "the earlier result is untouched, not half-replaced"
    );

    // The next run replaces the result whole and removes the dead writer's
    // temporary file. (SIGKILL leaves the killed run's scratch file: no
    // process can clean up after that signal.)
    let o = run_in(
        d.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--output-format=json",
            "--output=res.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("res.json")).unwrap()).unwrap();
    assert_eq!(j["jobs"][0]["jobname"], "n");
    let left = entries(d.path());
    assert!(
        !left.iter().any(|n| n.contains("-tmp.")),
        "no temporary result file left: {left:?}"
    );
}

/// rchar of the main thread of `pid` (where the verify read-back runs).
fn main_thread_rchar(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/io"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("rchar:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn stop_signals_during_verify_keep_a_marked_result() {
    const SIZE: u64 = 64 << 20;
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let d = tempfile::tempdir().unwrap();
        let c = Command::new(bin())
            .args([
                "--name=v",
                "--filename=v.dat",
                "--size=64m",
                "--rw=write",
                "--bs=4k",
                "--verify=crc32c",
                "--ioengine=psync",
                "--unlink=1",
                // A stop that lands between the write and the read-back
                // would save fio's verify state file: not this test's subject.
                "--verify_state_save=0",
                "--output-format=json",
                "--output=res.json",
            ])
            .current_dir(d.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = c.id();
        // The write phase's worker comes and goes; then the main thread
        // reads the blocks back. Freeze it there and check it is mid-verify.
        wait_for("the write phase", 60, || worker_io(pid, "v").is_some());
        wait_for("the verify read-back", 60, || {
            worker_io(pid, "v").is_none() && main_thread_rchar(pid) > 1 << 20
        });
        kill(pid, SIGSTOP);
        let read = main_thread_rchar(pid);
        assert!(read < SIZE, "verify already done ({read} bytes read)");
        kill(pid, sig);
        kill(pid, SIGCONT);
        let err = finish(c, sig);
        let j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.path().join("res.json")).unwrap())
                .unwrap_or_else(|e| panic!("whole JSON: {e}; {err}"));
        assert_eq!(j["dioscope"]["interrupted"], true, "{err}");
        assert_eq!(j["dioscope"]["signal"], sig);
        assert_eq!(
            entries(d.path()),
            vec!["res.json"],
            "signal {sig}: scratch file removed, no temporary file"
        );
    }
}
