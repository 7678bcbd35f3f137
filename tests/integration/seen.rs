//! What a person sees (issue 30, items 4 and 5): findings that keep their
//! point (the five busiest processes, page-cache causes that fit the
//! target, said once), progress while the file is laid out, the line after
//! Ctrl-C, the warning of a thin profile, and scratch set-up refused before
//! any device is made.

use crate::common::*;
use serde_json::Value;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn findings<'a>(j: &'a Value, kind: &str) -> Vec<&'a Value> {
    j["dioscope"]["findings"]
        .as_array()
        .map(|v| v.iter().filter(|f| f["kind"] == kind).collect())
        .unwrap_or_default()
}

#[test]
fn a_finding_with_40_processes_names_five_and_35_more() {
    use dioscope_core::diag::findings::{Finding, IoProcess, OtherDeviceIo};
    // In pid order, as /proc lists them; the text ranks them by bytes.
    let processes: Vec<IoProcess> = (0..40)
        .map(|i| IoProcess {
            pid: 2000 + i,
            comm: format!("proc{i}"),
            read_bytes: 0,
            write_bytes: (1 + i as u64) * (64 << 10),
        })
        .collect();
    let f = Finding::from(OtherDeviceIo {
        device: "vda".into(),
        trials: vec![1, 2],
        our_bytes: 100 << 20,
        device_bytes: 400 << 20,
        processes,
    });
    let text = f.to_string();
    assert_eq!(text.matches("pid ").count(), 5, "{text}");
    // The five that wrote most, most first; not the 20 KiB bash at the end.
    let first = text.find("pid 2039 (`proc39`").expect(&text);
    let fifth = text.find("pid 2035 (`proc35`").expect(&text);
    assert!(first < fifth, "{text}");
    assert!(!text.contains("proc34"), "{text}");
    assert!(text.contains("and 35 more (in the JSON)"), "{text}");
    let v = serde_json::to_value(f.reported()).unwrap();
    assert_eq!(
        v["processes"].as_array().unwrap().len(),
        40,
        "the JSON keeps all"
    );
}

/// A direct-I/O read job on `file`, two trials, JSON on stdout.
fn pages_run(dir: &std::path::Path, file: &str) -> Value {
    let o = run_in(
        dir,
        &[
            "--name=pc",
            &format!("--filename={file}"),
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=psync",
            "--size=16m",
            "--time_based",
            "--runtime=300ms",
            "--trials=2",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json(&o)
}

#[test]
fn page_cache_on_a_tmpfs_file_says_tmpfs_once() {
    let shm = std::path::Path::new("/dev/shm");
    if !can_run("a tmpfs at /dev/shm", shm.is_dir()) {
        return;
    }
    let d = tempfile::tempdir_in(shm).unwrap();
    let file = d.path().join("f");
    std::fs::write(&file, vec![7u8; 16 << 20]).unwrap();
    let j = pages_run(d.path(), file.to_str().unwrap());
    let pc = findings(&j, "page_cache_on_target");
    // Before and after (and during, when sampled) both trials: one finding.
    assert_eq!(pc.len(), 1, "{:#}", j["dioscope"]["findings"]);
    let f = pc[0];
    assert_eq!(f["cause"]["what"], "memory_filesystem", "{f:#}");
    assert_eq!(f["trials"], serde_json::json!([1, 2]), "{f:#}");
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("is on tmpfs") && m.contains("memory copies"),
        "{m}"
    );
    assert!(
        m.contains("resident before ") && m.contains("after trials 1, 2."),
        "{m}"
    );
    assert!(!m.contains("udev's blkid"), "{m}");
    assert_eq!(f["severity"], "warning", "{f:#}");
    // Nobody to stop: the trial findings do not blame the page cache.
    for x in j["dioscope"]["findings"].as_array().unwrap() {
        let m = x["message"].as_str().unwrap_or("");
        assert!(
            x["kind"] == "page_cache_on_target" || !m.contains("(page_cache_on_target)"),
            "{m}"
        );
    }
}

#[test]
fn page_cache_on_a_mounted_device_names_the_file_system() {
    if !can_run(
        "root, losetup and mkfs.ext4",
        is_root() && have_tool("mkfs.ext4"),
    ) {
        return;
    }
    let fs = MountedFs::new(64 << 20, "ext4");
    // The file system's own metadata in the device's cache.
    std::fs::write(fs.path().join("a"), b"x").unwrap();
    sh("sync", &[]);
    let d = tempfile::tempdir().unwrap();
    let j = pages_run(d.path(), fs.lo.path());
    let pc = findings(&j, "page_cache_on_target");
    assert!(
        !pc.is_empty(),
        "a mounted ext4 keeps metadata pages on its device: {:#}",
        j["dioscope"]["findings"]
    );
    let mnt = fs.path().canonicalize().unwrap().display().to_string();
    for f in &pc {
        assert_eq!(f["cause"]["what"], "mounted_filesystem", "{f:#}");
        assert_eq!(f["cause"]["fs_type"], "ext4", "{f:#}");
        let m = f["message"].as_str().unwrap();
        assert!(
            m.contains(&format!("ext4 file system mounted on {mnt}")),
            "{m}"
        );
        assert!(m.contains("metadata") && m.contains("umount"), "{m}");
        assert!(!m.contains("udev's blkid"), "{m}");
        // The cause is said once per finding.
        assert_eq!(m.matches("mounted on").count(), 1, "{m}");
    }
    // No two findings say the same thing.
    for (i, a) in pc.iter().enumerate() {
        for b in &pc[i + 1..] {
            let key = |f: &Value| {
                (
                    f["phase"].clone(),
                    f["also_phases"].clone(),
                    f["pages"].clone(),
                    f["dropped"].clone(),
                )
            };
            assert!(key(a) != key(b), "said twice: {a:#} {b:#}");
        }
    }
}

#[test]
fn page_cache_of_a_file_just_written_says_so() {
    // On the disk (not tmpfs): a buffered write leaves the writer's pages.
    let d = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let file = d.path().join("f");
    std::fs::write(&file, vec![7u8; 16 << 20]).unwrap();
    let j = pages_run(d.path(), file.to_str().unwrap());
    let pc = findings(&j, "page_cache_on_target");
    assert_eq!(pc.len(), 1, "{:#}", j["dioscope"]["findings"]);
    let f = pc[0];
    assert_eq!(f["cause"]["what"], "just_written", "{f:#}");
    assert_eq!(f["cause"]["by_dioscope"], false, "{f:#}");
    assert_eq!(f["dropped"], true, "{f:#}");
    assert_eq!(f["trial"], 1, "{f:#}");
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("s before the first trial") && m.contains("started clean"),
        "{m}"
    );
    assert!(!m.contains("udev's blkid"), "{m}");
}

/// Spawn dioscope and collect its stderr as it comes: (time since spawn,
/// text) per read.
fn spawn_reading_stderr(
    mut c: Command,
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<(Duration, String)>,
) {
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = c.spawn().unwrap();
    let mut err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match err.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let s = String::from_utf8_lossy(&buf[..n]).into_owned();
                    if tx.send((t0.elapsed(), s)).is_err() {
                        break;
                    }
                }
            }
        }
    });
    (child, rx)
}

#[test]
fn laying_out_a_1_gib_file_shows_progress_within_a_second() {
    let d = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let mut c = Command::new(bin());
    c.args([
        "run",
        "--name=lay",
        "--filename=big",
        "--size=1g",
        "--rw=read",
        "--direct=1",
        "--ioengine=psync",
        "--time_based",
        "--runtime=100ms",
        "--trials=1",
        "--eta=always",
        "--output-format=json",
        "--output=res.json",
    ])
    .current_dir(d.path());
    let (mut child, rx) = spawn_reading_stderr(c);
    let mut seen = String::new();
    let mut first: Option<Duration> = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((at, s)) => {
                seen.push_str(&s);
                if first.is_none() && seen.contains("laying out") {
                    first = Some(at);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let st = child.wait().unwrap();
    assert!(st.success(), "{seen}");
    let first = first.unwrap_or_else(|| panic!("no layout progress on stderr:\n{seen}"));
    eprintln!("first layout progress line {first:?} after the start");
    // The process starts, checks the target and begins the layout in far
    // less than the half second allowed on top of the second.
    assert!(first < Duration::from_millis(1500), "{first:?}\n{seen}");
    let line = seen
        .split(['\n', '\r'])
        .find(|l| l.contains("laying out"))
        .unwrap();
    assert!(
        line.contains("big: ") && line.contains(" of 1.00 GiB (") && line.contains("%)"),
        "{line}"
    );
    assert!(std::fs::metadata(d.path().join("res.json")).is_ok());
}

#[test]
fn ctrl_c_with_output_names_the_partial_result_and_what_was_kept() {
    let d = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let c = Command::new(bin())
        .args([
            "run",
            "--ioengine=psync",
            "--size=32m",
            "--ramp_time=0",
            "--runtime=2",
            "--trials=5",
            "--output-format=json",
            "--output=res.json",
        ])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = c.id();
    wait_for("the default job's first reads", 60, || {
        worker_io(pid, "default").is_some_and(|(r, _)| r > 0)
    });
    // Into the second trial: one kept, one cut.
    std::thread::sleep(Duration::from_millis(3000));
    kill(pid, 2);
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{err}");
    let j: Value = serde_json::from_slice(&std::fs::read(d.path().join("res.json")).unwrap())
        .expect("the partial result parses");
    assert_eq!(j["dioscope"]["interrupted"], true);
    let line = err
        .lines()
        .find(|l| l.starts_with("dioscope: interrupted (SIGINT): partial result in res.json ("))
        .unwrap_or_else(|| panic!("no summary line:\n{err}"));
    // What the line says was kept is what the file holds.
    let trials = j["dioscope"]["jobs"][0]["trials"]
        .as_array()
        .unwrap_or_else(|| panic!("{:#}", j["dioscope"]["jobs"]));
    let kept = trials.iter().filter(|t| t["interrupted"] != true).count();
    let want = match kept {
        0 => "no trial of 5 finished".to_string(),
        1 => "trial 1 of 5 kept".to_string(),
        n => format!("trials 1–{n} of 5 kept"),
    };
    assert!(line.contains(&want), "{line} (file: {kept} kept)");
    if trials.iter().any(|t| t["interrupted"] == true) {
        assert!(
            line.contains(&format!("; trial {} cut at ", kept + 1))
                && line.ends_with(" s, listed apart, not averaged in)"),
            "{line}"
        );
    }
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("interrupted (SIGINT)"))
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn a_40_sample_profile_carries_the_warning() {
    use dioscope_core::profile::*;
    let profile = |samples: u64| ProfileResult {
        status: ProfileStatus::Recorded,
        message: None,
        fix: None,
        perf: Some(PerfInfo {
            path: "/usr/bin/perf".into(),
            version: "6.1".into(),
            kernel: "6.1".into(),
            scope: "process".into(),
            event: "cpu-clock".into(),
            period_us: 250.0,
        }),
        notes: Vec::new(),
        groups: vec![GroupProfile {
            group: 0,
            jobs: vec!["j".into()],
            ios: 1000,
            measured_us_per_io: 10.0,
            coverage: 1.0,
            process: Breakdown {
                samples,
                us_per_io: 10.0,
                kernel_us_per_io: 8.0,
                user_us_per_io: 2.0,
                functions: (0..30)
                    .map(|i| FunctionCost {
                        function: format!("f{i}"),
                        subsystem: "block".into(),
                        kernel: true,
                        us_per_io: 0.3,
                        share: 1.0 / 30.0,
                    })
                    .collect(),
                ..Breakdown::default()
            },
            kernel_threads: None,
            idle_interrupts_us_per_io: None,
            counters: Counters::default(),
            trials: Vec::new(),
            folded: String::new(),
            warning: None,
        }],
    };
    let mut thin = profile(40);
    mark_thin(&mut thin);
    let w = thin.groups[0]
        .warning
        .clone()
        .expect("a warning at 40 samples");
    assert!(
        w.contains("only 40 samples") && w.contains("too few to rank functions"),
        "{w}"
    );
    let text = render_text(&thin);
    assert!(text.contains(&format!("WARNING: {w}")), "{text}");
    let mut html = String::new();
    render_html(&mut html, "r", &thin);
    assert!(
        html.contains("sev-warning") && html.contains("too few to rank functions"),
        "{html}"
    );
    let v = serde_json::to_value(&thin).unwrap();
    assert!(v["groups"][0]["warning"]
        .as_str()
        .unwrap()
        .contains("only 40 samples"));
    // Enough samples: no warning anywhere.
    let mut thick = profile(MIN_SAMPLES_TO_RANK);
    mark_thin(&mut thick);
    assert!(thick.groups[0].warning.is_none());
    assert!(!render_text(&thick).contains("WARNING"));
    assert!(serde_json::to_value(&thick).unwrap()["groups"][0]
        .get("warning")
        .is_none());
}

/// Loop devices whose backing file this process (by pid) made.
fn loops_of(pid: u32) -> Vec<String> {
    let o = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains(&format!("dioscope-scratch-{pid}-")))
        .map(str::to_string)
        .collect()
}

#[test]
fn scratch_xfs_below_300_mib_is_refused_before_any_device() {
    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let list = || {
        let o = Command::new(bin())
            .args(["scratch", "list"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let before = list();
    for (args, want) in [
        (
            vec!["--type=xfs", "--size=256m"],
            "XFS needs at least 300 MiB",
        ),
        (
            vec!["--type=xfs", "--size=256m", "--on=zram"],
            "XFS needs at least 300 MiB",
        ),
        (
            vec!["--type=btrfs", "--size=64m"],
            "btrfs needs at least 109 MiB",
        ),
    ] {
        let c = Command::new(bin())
            .args(["scratch", "create", "fs"])
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = c.id();
        let o = c.wait_with_output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && err.contains("give --size="), "{err}");
        assert_eq!(err.lines().count(), 1, "one line, no usage: {err}");
        assert!(loops_of(pid).is_empty(), "{args:?} made a loop device");
    }
    assert_eq!(list(), before, "no scratch item was made");
}
