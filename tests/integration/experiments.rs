//! Experiments end to end: compare (exit codes 0, 1, 2), compare --run,
//! trials=auto, sweep with an interrupted and resumed grid.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Stdio};

fn s(o: &std::process::Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", stdout(o), stderr(o))
}

/// A null-engine job whose IOPS are held by the rate limiter: the same
/// settings give the same result, so two runs must compare as unchanged.
const STEADY: &[&str] = &[
    "--name=steady",
    "--ioengine=null",
    "--size=16m",
    "--rate_iops=2000",
    "--runtime=300ms",
    "--time_based",
];

fn run_json(dir: &Path, extra: &[&str], out: &str) {
    let mut a: Vec<&str> = STEADY.to_vec();
    a.extend_from_slice(extra);
    let o_arg = format!("--output={out}");
    a.extend(["--output-format=json", o_arg.as_str()]);
    let o = run_in(dir, &a);
    assert_eq!(o.status.code(), Some(0), "{}", s(&o));
}

#[test]
fn compare_of_a_run_with_itself_is_no_significant_change() {
    let d = tempfile::tempdir().unwrap();
    // One run, saved twice: the same trials on both sides must not be a
    // change — "no meaningful change" when the interval is inside the
    // threshold, else "no significant change". (Two separate runs on this shared machine can
    // really differ when the load changes between them; that is the tool
    // being right, not a property this test can rely on.)
    run_json(d.path(), &["--trials=5"], "a.json");
    std::fs::copy(d.path().join("a.json"), d.path().join("b.json")).unwrap();
    let o = run_in(d.path(), &["compare", "a.json", "b.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", s(&o));
    let out = stdout(&o);
    assert!(out.contains("Differences: none"), "{out}");
    assert!(
        out.contains("no meaningful change") || out.contains("no significant change"),
        "{out}"
    );
    assert!(
        !out.contains("REGRESSION") && !out.contains("improvement:"),
        "{out}"
    );
    // JSON and Markdown come from the same comparison.
    let o = run_in(
        d.path(),
        &["compare", "a.json", "b.json", "--output-format=json"],
    );
    let v = json(&o);
    assert_eq!(v["kind"], "comparison");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["jobs"][0]["metrics"][0]["metric"], "iops");
    assert_eq!(v["jobs"][0]["metrics"][0]["n_a"], 5);
    let o = run_in(
        d.path(),
        &["compare", "a.json", "b.json", "--output-format=markdown"],
    );
    assert!(
        stdout(&o).contains("| metric | A median | B median |"),
        "{}",
        s(&o)
    );
}

#[test]
fn a_difference_nobody_named_is_refused_and_bad_input_is_exit_2() {
    let d = tempfile::tempdir().unwrap();
    run_json(d.path(), &["--trials=4", "--bs=4k"], "a.json");
    run_json(d.path(), &["--trials=4", "--bs=8k"], "b.json");
    let o = run_in(d.path(), &["compare", "a.json", "b.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", s(&o));
    assert!(stderr(&o).contains("--expect-different=bs"), "{}", s(&o));
    let o = run_in(
        d.path(),
        &["compare", "a.json", "b.json", "--expect-different=bs"],
    );
    assert_ne!(o.status.code(), Some(2), "{}", s(&o));
    // Not a result, a missing file, one file: exit 2 with the reason.
    std::fs::write(d.path().join("x.json"), "{\"a\": 1}").unwrap();
    let o = run_in(d.path(), &["compare", "a.json", "x.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", s(&o));
    assert!(stderr(&o).contains("x.json"), "{}", s(&o));
    let o = run_in(d.path(), &["compare", "a.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", s(&o));
    // Too few trials: says how many are needed.
    run_json(d.path(), &["--trials=2"], "c.json");
    run_json(d.path(), &["--trials=2"], "e.json");
    let o = run_in(d.path(), &["compare", "c.json", "e.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", s(&o));
    assert!(
        stdout(&o).contains("4 trials per side are needed"),
        "{}",
        s(&o)
    );
}

#[test]
fn fio_style_one_trial_per_file_sides() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..4 {
        run_json(d.path(), &["--trials=1"], &format!("a{i}.json"));
        run_json(d.path(), &["--trials=1"], &format!("b{i}.json"));
    }
    let o = run_in(
        d.path(),
        &[
            "compare",
            "a0.json",
            "a1.json",
            "a2.json",
            "a3.json",
            "--",
            "b0.json",
            "b1.json",
            "b2.json",
            "b3.json",
            "--output-format=json",
        ],
    );
    let v = json(&o);
    assert_eq!(v["a"]["trials"], 4, "{}", s(&o));
    assert_eq!(v["b"]["trials"], 4, "{}", s(&o));
    assert_eq!(v["exit_code"], 0, "{}", s(&o));
}

/// iodepth=32 against iodepth=1 with io_uring on a loop device of our own:
/// B (QD 1) is slower, so a significant regression, exit 1, with iodepth
/// named; the same pair with nothing named is refused, exit 2.
#[test]
fn iodepth_32_against_1_on_a_loop_device() {
    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 128 << 20, &[]);
    for (name, qd) in [("a.fio", 32), ("b.fio", 1)] {
        std::fs::write(
            d.path().join(name),
            format!(
                "[rr]\nfilename={}\nrw=randread\nbs=4k\nioengine=io_uring\ndirect=1\n\
                 iodepth={qd}\nruntime=250ms\ntime_based\n",
                lo.path()
            ),
        )
        .unwrap();
    }
    let o = run_in(
        d.path(),
        &[
            "compare",
            "--run",
            "a.fio",
            "b.fio",
            // Other tests' I/O on the disk under the loop device's image can
            // give one side an other_device_io finding (policed): named here,
            // this test is about the verdict.
            "--expect-different=iodepth,findings",
            "--max-trials=12",
            "--output-format=json",
        ],
    );
    let v = json(&o);
    // Exit 1; or 4 when the sides' environments differed (other tests
    // running beside this one can load the CPUs during one side's trials
    // more than the other's): then the comparison must name what differed.
    regression_or_confounded(&o, &v, &s(&o));
    let iops = &v["jobs"][0]["metrics"][0];
    assert_eq!(iops["verdict"], "worse", "{iops}");
    assert!(iops["change_pct"].as_f64().unwrap() < -2.0, "{iops}");
    let order = v["run"]["order"].as_str().unwrap();
    assert!(order.starts_with("ABBA"), "interleaved: {order}");
    // Nothing named: refused before any verdict, saying which.
    let o = run_in(
        d.path(),
        &["compare", "--run", "a.fio", "b.fio", "--max-trials=4"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", s(&o));
    assert!(stderr(&o).contains("iodepth"), "{}", s(&o));
}

#[test]
fn trials_auto_converges_on_a_steady_job_and_reports_when_it_cannot() {
    let d = tempfile::tempdir().unwrap();
    let mut a: Vec<&str> = STEADY.to_vec();
    a.extend(["--trials=auto", "--precision=10%", "--output-format=json"]);
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(0), "{}", s(&o));
    let v = json(&o);
    let t = &v["dioscope"]["trials_auto"][0];
    assert_eq!(t["converged"], true, "{t}");
    let n = t["trials"].as_u64().unwrap();
    assert!((10..=30).contains(&n), "the floor is 10 trials: {t}");
    let half_pct = t["half_width_pct"].as_f64().unwrap();
    assert!(half_pct <= 10.0, "{t}");
    assert_eq!(
        v["dioscope"]["jobs"][0]["trials"].as_array().unwrap().len() as u64,
        n
    );
    // The interval printed is the one the stop was judged on: widened for
    // the data-dependent stop, and labelled so.
    let iops = &v["dioscope"]["jobs"][0]["summary"]["iops"];
    assert_eq!(iops["ci95_widened_for_auto_stop"], true, "{iops}");
    let (mean, high) = (
        iops["mean"].as_f64().unwrap(),
        iops["ci95"][1].as_f64().unwrap(),
    );
    let printed = 100.0 * (high - mean) / mean;
    assert!(
        (printed - half_pct).abs() < 1e-6 * half_pct.max(1.0),
        "{printed} vs {t}"
    );
    let mut a: Vec<&str> = STEADY.to_vec();
    a.extend(["--trials=auto", "--precision=10%"]);
    let o = run_in(d.path(), &a);
    assert!(
        stdout(&o).contains("95 % CI widened for trials=auto's stop ["),
        "{}",
        s(&o)
    );
    // A fixed number of trials: the plain interval, no key.
    let mut a: Vec<&str> = STEADY.to_vec();
    a.extend(["--trials=3", "--output-format=json"]);
    let o = run_in(d.path(), &a);
    let iops = &json(&o)["dioscope"]["jobs"][0]["summary"]["iops"];
    assert!(iops.get("ci95_widened_for_auto_stop").is_none(), "{iops}");
    assert!(iops["ci95"].is_array(), "{iops}");
    // A precision no machine reaches: stops at the limit with a finding.
    let mut a: Vec<&str> = STEADY.to_vec();
    a.extend([
        "--trials=auto",
        "--precision=0.0001%",
        "--max-trials=4",
        "--output-format=json",
    ]);
    let o = run_in(d.path(), &a);
    let v = json(&o);
    let t = &v["dioscope"]["trials_auto"][0];
    assert_eq!(t["converged"], false, "{t}");
    assert_eq!(t["trials"], 4, "{t}");
    let f = v["dioscope"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "trials_not_converged")
        .unwrap_or_else(|| panic!("no finding: {}", s(&o)));
    assert!(
        f["message"].as_str().unwrap().contains("likely cause"),
        "{f}"
    );
}

#[test]
fn sweep_interrupted_and_resumed_runs_every_cell_once() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "sweep",
        "--name=sw",
        "--ioengine=null",
        "--size=16m",
        "--runtime=400ms",
        "--time_based",
        "--trials=2",
        "--vary",
        "bs=4k|64k",
        "--vary=iodepth=1|8",
        "--output=sw.json",
    ];
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    // Wait until the first cell is written, then interrupt the second.
    let file = d.path().join("sw.json");
    wait_for("the first cell", 60, || {
        std::fs::read_to_string(&file)
            .ok()
            .is_some_and(|t| t.contains("\"done\""))
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    kill(child.id(), 2);
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    let first: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(first["interrupted"], true);
    let done: Vec<&serde_json::Value> = first["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "done")
        .collect();
    assert!(!done.is_empty() && done.len() < 4, "{first}");
    let stamps: Vec<(u64, serde_json::Value)> = done
        .iter()
        .map(|c| {
            (
                c["index"].as_u64().unwrap(),
                c["runs"][0]["timestamp_ms"].clone(),
            )
        })
        .collect();
    // Resume: only the missing cells run; the done ones keep their runs.
    let o = run_in(
        d.path(),
        &["sweep", "--resume=sw.json", "--pivot=iodepth,bs"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", s(&o));
    let after: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(after["complete"], true);
    for c in after["cells"].as_array().unwrap() {
        assert_eq!(c["status"], "done", "{c}");
        assert_eq!(c["runs"].as_array().unwrap().len(), 1);
        let t = c["runs"][0]["dioscope"]["jobs"][0]["trials"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(t, 2);
    }
    for (i, ts) in stamps {
        assert_eq!(after["cells"][i as usize]["runs"][0]["timestamp_ms"], ts);
    }
    let out = stdout(&o);
    assert!(out.contains("iodepth \\ bs"), "{out}");
    // mean ± σ, then the 95 % CI as [low, high], the legend saying which.
    assert!(out.contains(" ± ") && out.contains("] (2)"), "{out}");
    assert!(out.contains("mean ± σ [95 % CI low, high]"), "{out}");
    // Every cell in the CSV, and a cell compares with another.
    let o = run_in(
        d.path(),
        &["sweep", "--resume=sw.json", "--output-format=csv"],
    );
    assert_eq!(stdout(&o).lines().count(), 5, "{}", s(&o));
    let o = run_in(
        d.path(),
        &[
            "compare",
            "sw.json@bs=4k,iodepth=1",
            "sw.json@bs=4k,iodepth=8",
            "--expect-different=iodepth",
            "--output-format=json",
        ],
    );
    assert_ne!(o.status.code(), Some(2), "{}", s(&o));
}

/// fio's own JSON, one trial per file, clones of a job (numjobs=2, no
/// group_reporting: fio repeats the name) merged into one job; json+ files
/// give the tails from merged bins.
#[test]
fn fio_json_archives_compare() {
    if !can_run("fio (Debian package fio)", have_tool("fio")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut files = [Vec::new(), Vec::new()];
    for i in 0..8 {
        let name = format!("fio{i}.json");
        let st = Command::new("fio")
            .args([
                "--name=nulljob",
                "--ioengine=null",
                "--size=64m",
                "--rw=randread",
                "--numjobs=2",
                "--rate_iops=3000",
                "--runtime=300ms",
                "--time_based",
                "--output-format=json+",
                &format!("--output={name}"),
            ])
            .current_dir(d.path())
            .stdout(Stdio::null())
            .status()
            .expect("run fio");
        assert!(st.success(), "fio failed");
        files[i % 2].push(name);
    }
    let mut args: Vec<&str> = vec!["compare"];
    args.extend(files[0].iter().map(String::as_str));
    args.push("--");
    args.extend(files[1].iter().map(String::as_str));
    args.push("--output-format=json");
    let o = run_in(d.path(), &args);
    let v = json(&o);
    assert_eq!(v["exit_code"], 0, "{}", s(&o));
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1, "clones merged: {v}");
    let iops = &v["jobs"][0]["metrics"][0];
    assert_eq!(
        (iops["n_a"].as_u64(), iops["n_b"].as_u64()),
        (Some(4), Some(4))
    );
    // Two clones at 3000 IOPS each: the job did about 6000.
    let a = iops["a"].as_f64().unwrap();
    assert!((5000.0..7000.0).contains(&a), "{iops}");
    assert!(
        v["jobs"][0]["metrics"][4]["a"].as_f64().unwrap() > 0.0,
        "p99: {v}"
    );
    assert!(
        v["notes"].to_string().contains("no environment"),
        "says what fio's JSON cannot be checked for: {}",
        v["notes"]
    );
}

/// Targets are laid out once per sweep: the default job's scratch file is
/// created by the first cell, reused by the next, removed at the end.
#[test]
fn sweep_lays_out_the_target_once() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "--size=8m",
            "--runtime=150ms",
            "--ramp_time=0",
            "--trials=1",
            "--vary=iodepth=1|4",
            "--output-format=json",
            "--eta=never",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", s(&o));
    let v = json(&o);
    let created: Vec<bool> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["runs"][0]["dioscope"]["targets"][0]["created"]
                .as_bool()
                .unwrap()
        })
        .collect();
    assert_eq!(created, vec![true, false], "{}", s(&o));
    assert_eq!(entries(d.path()), vec!["dioscope-sweep.json"]);
    // Two cells of the default job compare with only iodepth named.
    let o = run_in(
        d.path(),
        &[
            "compare",
            "dioscope-sweep.json@iodepth=1",
            "dioscope-sweep.json@iodepth=4",
            // Other tests' I/O on this disk may give one cell a finding.
            "--expect-different=iodepth,findings",
        ],
    );
    assert_ne!(o.status.code(), Some(2), "{}", s(&o));
}
