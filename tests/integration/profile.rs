//! `--profile`: perf over the measured windows, per-I/O cost by function and
//! subsystem that adds up to the CPU the run measured; and a clear message,
//! not a failed run, when perf is missing, fails or is not permitted.
//!
//! The bound: the process's sampled CPU per I/O must be within ±30 % of the
//! process CPU per I/O the run measured with getrusage. Measured on a shared
//! 2-CPU VM at load averages of 5–10 (other builds running), with these jobs
//! (trials of 1 s; zram with io_uring and libaio, a loop device with libaio),
//! over ~60 trials: single trials ranged 0.75–1.19, the two-trial figures
//! 0.83–1.10. Against getrusage over perf's own window the spread is the
//! same, so it is not the window: cpu-clock charges a sample to whatever
//! runs when its timer interrupt is taken, which is late when interrupts are
//! off (the context-switch path) and, on a VM, when the vCPU waits; under
//! heavy load that moves up to a quarter of a switch-heavy thread's time to
//! the next task. Sampling noise is small by comparison (1 s at one CPU is
//! ~4000 samples, ±1.6 %). Within the profile, functions, subsystems and
//! threads must add up to the sampled total exactly (to rounding).

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const BOUND: (f64, f64) = (0.70, 1.30);

/// A zram device of its own (hot_add), filled with random data; reset and
/// removed on drop, even when the test panics.
struct Zram {
    id: String,
}

impl Zram {
    fn new(size: u64) -> Zram {
        let id = std::fs::read_to_string("/sys/class/zram-control/hot_add")
            .expect("zram hot_add")
            .trim()
            .to_string();
        let z = Zram { id };
        std::fs::write(
            format!("/sys/block/zram{}/disksize", z.id),
            size.to_string(),
        )
        .expect("zram disksize");
        let o = Command::new("dd")
            .args([
                "if=/dev/urandom",
                &format!("of={}", z.path()),
                "bs=1M",
                &format!("count={}", size >> 20),
                "oflag=direct",
                "status=none",
            ])
            .output()
            .expect("dd");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        z
    }

    fn path(&self) -> String {
        format!("/dev/zram{}", self.id)
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("/sys/block/zram{}/reset", self.id), "1");
        let _ = std::fs::write("/sys/class/zram-control/hot_remove", &self.id);
    }
}

fn perf_ok() -> bool {
    have_tool("perf")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn sum(v: &Value, key: &str) -> f64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_f64().unwrap())
        .sum()
}

/// The checks every recorded profile must pass; returns the group profile.
fn check_profile(j: &Value) -> Value {
    let p = &j["dioscope"]["profile"];
    assert_eq!(p["status"], "recorded", "{}", p["message"]);
    assert!(p["perf"]["version"].as_str().is_some_and(|v| !v.is_empty()));
    assert_eq!(p["perf"]["event"], "cpu-clock");
    let g = p["groups"][0].clone();
    let b = &g["process"];
    let total = b["us_per_io"].as_f64().unwrap();
    assert!(total > 0.0, "{b:#}");
    // Everything adds up to the sampled total.
    assert!(close(sum(&b["subsystems"], "us_per_io"), total), "{b:#}");
    assert!(close(sum(&b["threads"], "us_per_io"), total), "{b:#}");
    let funcs =
        sum(&b["functions"], "us_per_io") + b["other_functions_us_per_io"].as_f64().unwrap();
    assert!(close(funcs, total), "{b:#}");
    assert!(close(
        b["kernel_us_per_io"].as_f64().unwrap() + b["user_us_per_io"].as_f64().unwrap(),
        total
    ));
    // Functions are listed costliest first, each with a subsystem.
    let f = b["functions"].as_array().unwrap();
    assert!(f.len() >= 10, "{b:#}");
    assert!(f
        .windows(2)
        .all(|w| w[0]["us_per_io"].as_f64() >= w[1]["us_per_io"].as_f64()));
    assert!(f
        .iter()
        .all(|x| !x["subsystem"].as_str().unwrap().is_empty()));
    // The folded stacks hold every sample of the group, once.
    let folded: u64 = g["folded"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let kt = g["kernel_threads"]["samples"].as_u64().unwrap_or(0);
    let idle = g["idle_interrupts_us_per_io"].as_f64().unwrap_or(0.0) * g["ios"].as_f64().unwrap()
        / p["perf"]["period_us"].as_f64().unwrap();
    assert_eq!(
        folded,
        b["samples"].as_u64().unwrap() + kt + idle.round() as u64
    );
    // And the total is the CPU the run measured, within the stated bound.
    let measured = j["dioscope"]["jobs"][0]["cpu"]["process_us_per_io"]
        .as_f64()
        .unwrap();
    let ratio = total / measured;
    assert!(
        ratio >= BOUND.0 && ratio <= BOUND.1,
        "sampled {total:.3} µs/IO vs measured {measured:.3} µs/IO: {ratio:.3} is outside {BOUND:?}\n{:#}",
        g["trials"]
    );
    g
}

fn subsystem(g: &Value, name: &str) -> f64 {
    g["process"]["subsystems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["us_per_io"].as_f64())
        .unwrap_or(0.0)
}

fn profiled_run(dir: &Path, target: &str, engine: &str, format: &str) -> std::process::Output {
    run_in(
        dir,
        &[
            "--name=pr",
            &format!("--filename={target}"),
            "--direct=1",
            "--rw=randread",
            "--bs=4k",
            &format!("--ioengine={engine}"),
            "--iodepth=32",
            "--time_based",
            "--runtime=1",
            "--ramp_time=500ms",
            "--trials=2",
            "--profile",
            &format!("--output-format={format}"),
        ],
    )
}

/// The sampled process CPU per I/O over the measured one (what the bound
/// judges), or `None` where the profile was not recorded.
fn sampled_ratio(j: &Value) -> Option<f64> {
    let total = j["dioscope"]["profile"]["groups"][0]["process"]["us_per_io"].as_f64()?;
    let measured = j["dioscope"]["jobs"][0]["cpu"]["process_us_per_io"].as_f64()?;
    Some(total / measured)
}

/// A profiled JSON run whose sampled CPU is within the bound, tried twice:
/// cpu-clock charges a sample to whatever runs when its interrupt is taken,
/// and with the other tests of this binary running beside it (two at a
/// time) one run in CI saw perf cover 52 % and 71 % of its two trials
/// (0.62 in all) where the same test alone gives 0.9–1.0. A profile that is
/// wrong, not unlucky, misses twice and fails [`check_profile`]'s bound.
fn profiled_json(dir: &Path, target: &str, engine: &str) -> Value {
    let mut last = None;
    for _ in 0..2 {
        let o = profiled_run(dir, target, engine, "json");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let j = json(&o);
        if sampled_ratio(&j).is_some_and(|r| r >= BOUND.0 && r <= BOUND.1) {
            return j;
        }
        last = Some(j);
    }
    last.unwrap()
}

#[test]
fn profile_adds_up_on_zram_with_io_uring_and_libaio() {
    let ok = is_root() && Path::new("/sys/class/zram-control/hot_add").exists() && perf_ok();
    if !can_run("root, zram and perf", ok) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let z = Zram::new(64 << 20);
    for (engine, own) in [("io_uring", "io_uring"), ("libaio", "aio")] {
        let j = profiled_json(d.path(), &z.path(), engine);
        std::fs::write(d.path().join(format!("{engine}.json")), j.to_string()).unwrap();
        let g = check_profile(&j);
        assert_eq!(j["dioscope"]["profile"]["perf"]["scope"], "system-wide");
        // Grouped: the engine's own kernel code, zram, the block layer.
        assert!(subsystem(&g, own) > 0.0, "{engine}: {:#}", g["process"]);
        assert!(
            subsystem(&g, "driver") > 0.0,
            "{engine}: {:#}",
            g["process"]
        );
        assert!(subsystem(&g, "block") > 0.0, "{engine}: {:#}", g["process"]);
        let zram_fn = g["process"]["functions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| {
                let n = f["function"].as_str().unwrap();
                f["subsystem"] == "driver" && (n.starts_with("zram") || n.starts_with("zs_"))
            });
        assert!(zram_fn, "{engine}: no zram function: {:#}", g["process"]);
        // Trials are recorded separately and the counters are per I/O.
        assert_eq!(g["trials"].as_array().unwrap().len(), 2);
        assert!(g["counters"]["context_switches_per_io"].as_f64().is_some());
        if engine == "io_uring" {
            // zram takes no nowait reads: io-wq workers do them, and they
            // are threads of our process.
            let t = g["process"]["threads"].as_array().unwrap();
            assert!(
                t.iter().any(|x| x["name"] == "io_uring workers (iou-wrk)"
                    && x["us_per_io"].as_f64().unwrap() > 0.0),
                "{t:#?}"
            );
        }
    }

    // The two profiles compared: io_uring's own kernel code is gone in B,
    // libaio's is new, both far beyond the sampling noise.
    let cmp = |format: &str| {
        let o = run_in(
            d.path(),
            &[
                "compare",
                "io_uring.json",
                "libaio.json",
                // Under load a finding (e.g. a noisy neighbour) can show in
                // one run only; the test is about the profiles.
                "--expect-different=ioengine,findings",
                &format!("--output-format={format}"),
            ],
        );
        assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
        o
    };
    let o = cmp("json");
    std::fs::write(d.path().join("cmp.json"), &o.stdout).unwrap();
    let c = json(&o);
    let p = &c["profile"];
    assert!(p["rule"].as_str().unwrap().contains("3 σ"), "{p:#}");
    let g = &p["groups"][0];
    let row = |list: &str, name: &str| {
        g[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {list} row {name}: {g:#}"))
            .clone()
    };
    let uring = row("subsystems", "io_uring");
    assert_eq!(uring["change"], "cheaper", "{uring:#}");
    assert_eq!(uring["b_us_per_io"].as_f64(), Some(0.0), "{uring:#}");
    let aio = row("subsystems", "aio");
    assert_eq!(aio["change"], "dearer", "{aio:#}");
    assert!(
        aio["delta_us_per_io"].as_f64().unwrap() > aio["noise_us_per_io"].as_f64().unwrap(),
        "{aio:#}"
    );
    // Per-I/O figures are the runs' own: A's total is A's profile's.
    let a: Value =
        serde_json::from_slice(&std::fs::read(d.path().join("io_uring.json")).unwrap()).unwrap();
    let a_total = a["dioscope"]["profile"]["groups"][0]["process"]["us_per_io"]
        .as_f64()
        .unwrap();
    let t = &g["totals"][0];
    assert!(
        (t["a_us_per_io"].as_f64().unwrap() - a_total).abs() <= 1e-6 * a_total,
        "{t:#} vs {a_total}"
    );
    assert!(!g["functions"].as_array().unwrap().is_empty());
    let text = stdout(&cmp("normal"));
    assert!(
        text.contains("profile: CPU per I/O") && text.contains("io_uring"),
        "{text}"
    );
    let md = stdout(&cmp("markdown"));
    assert!(md.contains("## Profile: CPU per I/O"), "{md}");
    let o = run_in(d.path(), &["report", "cmp.json", "-o", "cmp.html"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(d.path().join("cmp.html")).unwrap();
    assert!(
        html.contains("id=\"cmp-profile-0\"") && html.contains("ca-profile"),
        "profile charts"
    );
}

#[test]
fn profile_of_a_loop_device_shows_its_kernel_threads_in_text_and_html() {
    let ok = is_root() && have_tool("losetup") && perf_ok();
    if !can_run("root, losetup and perf", ok) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 32 << 20, &[]);
    lo.fill_random();
    let j = profiled_json(d.path(), lo.path(), "libaio");
    let g = check_profile(&j);
    // A loop device reads its backing file from the loop workqueue's
    // kworkers: outside our process, recorded system-wide.
    let kt = &g["kernel_threads"];
    assert!(kt["us_per_io"].as_f64().unwrap() > 0.0, "{kt:#}");
    assert!(
        kt["threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "kworker"),
        "{kt:#}"
    );
    // So does the HTML report made from the saved result.
    std::fs::write(d.path().join("r.json"), j.to_string()).unwrap();
    let h = run_in(d.path(), &["report", "r.json", "-o", "r.html"]);
    assert_eq!(h.status.code(), Some(0), "{}", stderr(&h));
    let html = std::fs::read_to_string(d.path().join("r.html")).unwrap();
    for want in [
        "Where the CPU time goes (perf)",
        "CPU per I/O by subsystem",
        "measured (getrusage)",
        "profile-functions-0",
    ] {
        assert!(html.contains(want), "no {want:?} in the report");
    }
    // The text summary shows the same section.
    let o = profiled_run(d.path(), lo.path(), "libaio", "normal");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = stdout(&o);
    for want in [
        "profile: perf ",
        "process CPU per I/O: ",
        "µs sampled (",
        "threads (µs/IO): job pr workers",
        "outside the process (system-wide, not all for us): kernel threads",
        "    subsystem ",
        "    function ",
        "folded stacks for a flame graph",
    ] {
        assert!(t.contains(want), "no {want:?} in:\n{t}");
    }
}

/// A short null-engine run with `--profile` and the given PATH.
fn null_run(dir: &Path, path: &str, format: &str) -> std::process::Output {
    let mut c = Command::new(bin());
    c.args([
        "--name=n",
        "--ioengine=null",
        "--rw=randread",
        "--size=16m",
        "--time_based",
        "--runtime=200ms",
        "--profile",
        &format!("--output-format={format}"),
    ])
    .env("PATH", path)
    .current_dir(dir);
    output_within(c, std::time::Duration::from_secs(60))
}

#[test]
fn missing_perf_is_a_message_not_a_failure() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("bin");
    std::fs::create_dir(&empty).unwrap();
    let o = null_run(d.path(), empty.to_str().unwrap(), "normal");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains("profile: not recorded: perf is not installed (no `perf` on PATH)"),
        "{t}"
    );
    assert!(
        t.contains("fix: install it: `apt-get install linux-perf`"),
        "{t}"
    );
    assert!(
        t.contains("IOPS="),
        "the run's own result is still there:\n{t}"
    );
    let o = null_run(d.path(), empty.to_str().unwrap(), "json");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let p = json(&o)["dioscope"]["profile"].clone();
    assert_eq!(p["status"], "unavailable", "{p:#}");
    assert!(p["fix"].as_str().unwrap().contains("linux-perf"), "{p:#}");
    let groups = p["groups"].as_array().map_or(0, Vec::len);
    assert_eq!(groups, 0, "{p:#}");
}

#[test]
fn failing_perf_is_reported_with_its_message() {
    if !can_run("root", is_root()) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let bin_dir = d.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let fake = bin_dir.join("perf");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'perf version 9.9'; exit 0; }\n\
         echo 'fake perf: cannot open cpu-clock events' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = null_run(d.path(), bin_dir.to_str().unwrap(), "json");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let p = json(&o)["dioscope"]["profile"].clone();
    assert_eq!(p["status"], "failed", "{p:#}");
    let m = p["message"].as_str().unwrap();
    assert!(m.contains("fake perf: cannot open cpu-clock events"), "{m}");
    assert!(p["fix"].as_str().unwrap().contains("perf record"), "{p:#}");
}

#[test]
fn restrictive_paranoid_tells_a_user_how_to_allow_it() {
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    if !can_run(
        "root, setpriv and perf",
        is_root() && have_tool("setpriv") && perf_ok(),
    ) {
        return;
    }
    if paranoid < 2 {
        // This machine lets users profile: nothing to refuse here (the
        // decision itself is unit-tested in profile::perf).
        eprintln!("SKIPPED: kernel.perf_event_paranoid is {paranoid} (< 2)");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()])
        .args([
            "--name=n",
            "--ioengine=null",
            "--size=16m",
            "--time_based",
            "--runtime=200ms",
            "--profile",
        ])
        .current_dir(d.path());
    let o = output_within(c, std::time::Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains(&format!(
            "profile: not recorded: not permitted: kernel.perf_event_paranoid is {paranoid}"
        )),
        "{t}"
    );
    assert!(
        t.contains("sudo sysctl kernel.perf_event_paranoid=1"),
        "{t}"
    );
}
