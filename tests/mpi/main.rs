//! Multi-rank runs under OpenMPI's mpirun (docs/DISTRIBUTED.md), on one
//! machine: every rank on its own loop device. Needs root, `mpirun` and
//! `losetup`; in CI (CI set) a missing one fails. Each mpirun runs under a
//! time limit: a hang fails the test.

#[path = "../integration/common.rs"]
mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

fn ready() -> bool {
    can_run("root", is_root())
        && can_run("mpirun (openmpi-bin)", have_tool("mpirun"))
        && can_run("losetup", have_tool("losetup"))
}

fn mpirun(np: u32, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ])
    .arg(bin())
    .args(args);
    c
}

/// `n` loop devices of the given sizes (MiB), reachable as `dir/dev.R`.
fn devices(dir: &Path, sizes_mib: &[u64]) -> Vec<LoopDev> {
    sizes_mib
        .iter()
        .enumerate()
        .map(|(r, &mib)| {
            let sub = dir.join(format!("img{r}"));
            std::fs::create_dir_all(&sub).unwrap();
            let l = LoopDev::new(&sub, mib << 20, &[]);
            std::os::unix::fs::symlink(&l.dev, dir.join(format!("dev.{r}"))).unwrap();
            l
        })
        .collect()
}

fn ranks(doc: &Value) -> &Value {
    &doc["dioscope"]["ranks"]
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// Every rank's windows of one trial overlap (the start barrier), and the
/// starts are close together.
fn check_overlap(doc: &Value) {
    let rs = ranks(doc)["ranks"].as_array().unwrap();
    let starts: Vec<u64> = rs.iter().map(|r| u(&r["windows"][0]["start_ns"])).collect();
    let ends: Vec<u64> = rs.iter().map(|r| u(&r["windows"][0]["end_ns"])).collect();
    let last_start = *starts.iter().max().unwrap();
    let first_end = *ends.iter().min().unwrap();
    assert!(
        last_start < first_end,
        "windows do not overlap: starts {starts:?} ends {ends:?}"
    );
    // A loaded 2-CPU CI machine: the barrier aligns to well under a second.
    assert!(
        last_start - starts.iter().min().unwrap() < 500_000_000,
        "starts spread too far: {starts:?}"
    );
}

fn aggregate_is_the_sum(np: u32) {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _devs = devices(dir.path(), &vec![64; np as usize]);
    let f = format!("--filename={}/dev.${{DIOSCOPE_RANK}}", dir.path().display());
    let o = output_within(
        mpirun(
            np,
            &[
                "--name=w",
                &f,
                "--rw=randwrite",
                "--bs=4k",
                "--iodepth=4",
                "--direct=1",
                "--size=8m",
                "--trials=1",
                "--output-format=json",
            ],
        ),
        LIMIT,
    );
    assert!(o.status.success(), "mpirun failed:\n{}", stderr(&o));
    let doc = json(&o);
    // One result: the aggregate job at the top, the ranks under dioscope.
    assert_eq!(doc["jobs"].as_array().unwrap().len(), 1);
    let rs = ranks(&doc)["ranks"].as_array().unwrap();
    assert_eq!(rs.len(), np as usize);
    let w = &doc["jobs"][0]["write"];
    let sum_ios: u64 = rs.iter().map(|r| u(&r["jobs"][0]["write_ios"])).sum();
    let sum_bytes: u64 = rs.iter().map(|r| u(&r["jobs"][0]["write_bytes"])).sum();
    // Each rank wrote its 8 MiB: 2048 I/Os of 4 KiB.
    for r in rs {
        assert_eq!(u(&r["jobs"][0]["write_ios"]), 2048, "{r}");
    }
    assert_eq!(u(&w["total_ios"]), sum_ios);
    assert_eq!(u(&w["io_bytes"]), sum_bytes);
    // The latency histograms were merged, not averaged: every I/O is in it.
    assert_eq!(u(&w["clat_ns"]["N"]), sum_ios);
    assert_eq!(u(&w["lat_ns"]["N"]), sum_ios);
    // Bandwidth over the window first start → last end.
    let agg = &ranks(&doc)["aggregate"][0];
    assert_eq!(u(&agg["ios"]), sum_ios);
    let window = u(&agg["window_ns"]) as f64 / 1e9;
    let iops = w["iops"].as_f64().unwrap();
    let want = sum_ios as f64 / window;
    assert!(
        (iops - want).abs() / want < 0.01,
        "aggregate IOPS {iops} is not total I/Os over the window ({want})"
    );
    check_overlap(&doc);
}

#[test]
fn two_ranks_aggregate_is_the_sum_of_the_ranks() {
    aggregate_is_the_sum(2);
}

#[test]
fn four_ranks_aggregate_is_the_sum_of_the_ranks() {
    aggregate_is_the_sum(4);
}

/// Rank 0 has 4 MiB to write, rank 1 has 128 MiB.
fn stonewall(mode: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let _devs = devices(dir.path(), &[4, 128]);
    let f = format!("--filename={}/dev.${{DIOSCOPE_RANK}}", dir.path().display());
    let sw = format!("--rank_stonewall={mode}");
    let o = output_within(
        mpirun(
            2,
            &[
                "--name=s",
                &f,
                "--rw=write",
                "--bs=64k",
                "--iodepth=2",
                "--direct=1",
                "--trials=1",
                &sw,
                "--output-format=json",
            ],
        ),
        LIMIT,
    );
    assert!(o.status.success(), "mpirun failed:\n{}", stderr(&o));
    json(&o)
}

#[test]
fn stonewall_stop_ends_every_rank_soon_after_the_first() {
    if !ready() {
        return;
    }
    let doc = stonewall("stop");
    let agg = &ranks(&doc)["aggregate"][0];
    let r1 = &ranks(&doc)["ranks"][1];
    // Rank 1 was stopped well before its 2048 I/Os.
    assert!(u(&r1["jobs"][0]["write_ios"]) < 2048, "{r1}");
    // ... within a small bound of rank 0's end.
    let spread = u(&agg["end_spread_ns"]);
    assert!(
        spread < 300_000_000,
        "last end {spread} ns after first done"
    );
    assert!(u(&agg["first_done_ns"]) <= u(&agg["window_ns"]));
    assert!(agg["bw_bytes_first_done"].as_f64().unwrap() > 0.0);
}

#[test]
fn stonewall_wearout_lets_every_rank_finish_and_reports_first_and_last_done() {
    if !ready() {
        return;
    }
    let doc = stonewall("wearout");
    let agg = &ranks(&doc)["aggregate"][0];
    let rs = ranks(&doc)["ranks"].as_array().unwrap();
    assert_eq!(u(&rs[0]["jobs"][0]["write_ios"]), 64);
    assert_eq!(u(&rs[1]["jobs"][0]["write_ios"]), 2048);
    // First done (rank 0, 4 MiB) came before last done (rank 1, 128 MiB),
    // and by then rank 1 had done only part of its work.
    assert!(u(&agg["first_done_ns"]) < u(&agg["window_ns"]), "{agg}");
    let at_first = u(&agg["ios_first_done"]);
    assert!((64..64 + 2048).contains(&at_first), "{agg}");
    assert_eq!(u(&agg["ios"]), 64 + 2048);
}

#[test]
fn ranks_on_one_host_writing_one_file_are_refused() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = format!("--filename={}/shared", dir.path().display());
    let args = ["--name=x", &f, "--rw=write", "--size=1m", "--trials=1"];
    let o = output_within(mpirun(2, &args), LIMIT);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--rank_shared_files=1"),
        "{}",
        stderr(&o)
    );
    assert!(
        !dir.path().join("shared").exists(),
        "a rank wrote before the check"
    );
}

#[test]
fn a_rank_failing_setup_stops_every_rank_and_is_named() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.0"), vec![0u8; 1 << 20]).unwrap();
    // Rank 1's file does not exist and must not be created.
    let f = format!("--filename={}/t.${{DIOSCOPE_RANK}}", dir.path().display());
    let args = ["--name=x", &f, "--rw=read", "--trials=1"];
    let t = Instant::now();
    let o = output_within(mpirun(2, &args), LIMIT);
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("rank 1 (host "), "{err}");
    assert!(!err.contains("rank 0 (host "), "{err}");
    assert!(!dir.path().join("t.1").exists());
    assert!(t.elapsed() < Duration::from_secs(60));
}

#[test]
fn killing_one_rank_ends_the_run_and_names_it() {
    if !ready() {
        return;
    }
    let mut c = mpirun(
        2,
        &[
            "--name=k",
            "--ioengine=null",
            "--size=1g",
            "--time_based",
            "--runtime=60",
            "--trials=1",
        ],
    );
    c.env("PPID_OF_TEST", std::process::id().to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let mpirun_pid = child.id();
    let t = Instant::now();
    // Find rank 1's process by its environment and kill it.
    let mut killed = false;
    while t.elapsed() < Duration::from_secs(30) && !killed {
        std::thread::sleep(Duration::from_millis(200));
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
            let env = String::from_utf8_lossy(&env);
            let exe = std::fs::read_link(e.path().join("exe")).unwrap_or_default();
            if exe.ends_with("dioscope")
                && env.contains(&format!("PPID_OF_TEST={}", std::process::id()))
                && env.split('\0').any(|v| v == "OMPI_COMM_WORLD_RANK=1")
            {
                let pid: u32 = e.file_name().to_string_lossy().parse().unwrap();
                kill(pid, 9);
                killed = true;
            }
        }
    }
    assert!(killed, "rank 1 never started");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let o = match rx.recv_timeout(Duration::from_secs(40)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            kill(mpirun_pid, 9);
            panic!("the run did not end after a rank was killed: a hang");
        }
    };
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("rank 1"),
        "the message does not name the rank: {err}"
    );
    assert!(t.elapsed() < Duration::from_secs(50));
}

/// The binary built without the `mpi` feature (scripts/test.sh builds it
/// first and keeps it as `dioscope-nompi` beside the test's own).
fn nompi_bin() -> Option<std::path::PathBuf> {
    let p = Path::new(bin()).with_file_name("dioscope-nompi");
    can_run(
        "target/release/dioscope-nompi (scripts/test.sh builds it)",
        p.exists(),
    )
    .then_some(p)
}

#[test]
fn a_binary_without_mpi_refuses_mpirun_np_2_and_runs_np_1() {
    // Issue 23, principle 8: under `mpirun -np 2`, a binary without MPI
    // would run two independent copies that both write one result (one
    // rank's numbers, exit 0). It must refuse, naming the build that fixes
    // it; `-np 1` runs, with a note.
    if !ready() {
        return;
    }
    let Some(nompi) = nompi_bin() else { return };
    let d = tempfile::tempdir().unwrap();
    let launch = |np: &str| {
        let mut c = Command::new("mpirun");
        c.args(["--allow-run-as-root", "--oversubscribe", "-np", np])
            .arg(&nompi)
            .args([
                "--name=r",
                "--ioengine=null",
                "--size=1m",
                "--output-format=json",
                "--output=r.json",
            ])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .current_dir(d.path());
        output_within(c, LIMIT)
    };
    let o = launch("2");
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("--features mpi"), "{e}");
    assert!(e.contains("OMPI_COMM_WORLD_SIZE=2"), "{e}");
    assert!(!d.path().join("r.json").exists(), "a rank wrote a result");
    let o = launch("1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("world of one"), "{}", stderr(&o));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["jobs"][0]["jobname"], "r");
}
