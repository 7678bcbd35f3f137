//! Time and pacing: rate caps and floors, think time, flows, steady state,
//! the latency target, exitall, startdelay. The null engine completes at
//! once, so what each job did is decided by its pacing alone; the checks
//! count I/Os against the job's own runtime rather than timing the test.

use crate::common::*;

fn run_json(args: &[&str]) -> (serde_json::Value, std::process::Output) {
    let d = tempfile::tempdir().unwrap();
    let mut a = vec!["--output-format=json"];
    a.extend_from_slice(args);
    let o = run_in(d.path(), &a);
    (json(&o), o)
}

fn ok_json(args: &[&str]) -> serde_json::Value {
    let (j, o) = run_json(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    j
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Bytes per second of one direction, over the job's own runtime.
fn rate_of(job: &serde_json::Value, dir: &str) -> f64 {
    f(&job[dir]["io_bytes"]) * 1000.0 / f(&job[dir]["runtime"]).max(1.0)
}

#[test]
fn rate_caps_bytes_per_direction() {
    // (value, read cap, write cap) in bytes/s; 0: uncapped.
    for (v, r, w) in [
        ("2m,1m", 2.0 * 1048576.0, 1048576.0),
        ("1m", 1048576.0, 1048576.0),
        (",512k", 0.0, 524288.0),
    ] {
        let j = ok_json(&[
            "--name=r",
            "--ioengine=null",
            "--rw=randrw",
            "--bs=4k",
            "--time_based",
            "--runtime=2",
            &format!("--rate={v}"),
        ]);
        let job = &j["jobs"][0];
        for (dir, cap) in [("read", r), ("write", w)] {
            let got = rate_of(job, dir);
            if cap > 0.0 {
                // The schedule is absolute from the worker's start: never
                // ahead (but for the first block), behind only if descheduled.
                assert!(
                    got <= cap * 1.02 + 4096.0,
                    "rate={v}: {dir} {got} B/s > {cap}"
                );
                assert!(got >= cap * 0.8, "rate={v}: {dir} {got} B/s << {cap}");
            } else {
                assert!(
                    got > 50.0 * 1048576.0,
                    "rate={v}: {dir} {got} B/s, uncapped"
                );
            }
        }
    }
}

#[test]
fn poisson_arrivals_keep_the_mean_rate() {
    let j = ok_json(&[
        "--name=p",
        "--ioengine=null",
        "--rw=randread",
        "--time_based",
        "--runtime=3",
        "--rate_iops=2000",
        "--rate_process=poisson",
    ]);
    let iops = f(&j["jobs"][0]["read"]["iops"]);
    // 6000 arrivals: a Poisson count's spread is sqrt(6000) = 77 (1.3 %).
    assert!((1800.0..=2100.0).contains(&iops), "{iops}");
}

#[test]
fn rate_floor_fails_a_slow_job() {
    let (j, o) = run_json(&[
        "--name=slow",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=20",
        "--rate_iops=50",
        "--rate_iops_min=100",
        "--ratecycle=300",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let job = &j["jobs"][0];
    assert_eq!(job["error"], libc::EIO);
    assert!(
        f(&job["read"]["runtime"]) < 5000.0,
        "{}",
        job["read"]["runtime"]
    );
    let e = stderr(&o);
    assert!(e.contains("rate_iops_min=100 for reads not met"), "{e}");
}

#[test]
fn thinktime_stalls_between_blocks() {
    let j = ok_json(&[
        "--name=t",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=1",
        "--thinktime=2ms",
        "--thinktime_blocks=5",
    ]);
    let job = &j["jobs"][0];
    let ios = f(&job["read"]["total_ios"]);
    let ms = f(&job["read"]["runtime"]);
    // At most 5 I/Os per 2 ms stall (a stall can only last longer).
    assert!(ios <= 5.0 * (ms / 2.0 + 1.0), "{ios} I/Os in {ms} ms");
    assert!(ios >= 500.0, "{ios} I/Os in {ms} ms");
}

/// I/Os of the middle second of a 3 s flow run, job 0 (writes) and job 1
/// (reads): when one member of a flow ends, the others run free (as in
/// fio), so the last moments of a run, where one worker may end a few
/// milliseconds before the other on a loaded machine, are left out.
fn middle_second(j: &serde_json::Value) -> (f64, f64) {
    let iops = |k: usize, dir: &str| f(&j["dioscope"]["jobs"][k]["series"][0][dir]["iops"][1]);
    (iops(0, "write"), iops(1, "read"))
}

#[test]
fn flow_splits_io_by_weight() {
    let j = ok_json(&[
        "--name=w",
        "--ioengine=null",
        "--rw=write",
        "--time_based",
        "--runtime=3",
        "--flow=1",
        "--name=r",
        "--ioengine=null",
        "--rw=randread",
        "--time_based",
        "--runtime=3",
        "--flow=8",
    ]);
    // Over the whole run the split is the weights' (flow holds a job back
    // until the other catches up); within one second a descheduled thread
    // on this shared 2-CPU machine can skew it, so that check is looser.
    let total = |k: usize, dir: &str| f(&j["jobs"][k][dir]["total_ios"]);
    let (tw, tr) = (total(0, "write"), total(1, "read"));
    assert!(tw > 3000.0, "{tw}");
    assert!((tr / tw - 8.0).abs() < 0.4, "read {tr} / write {tw} I/Os");
    let (w, r) = middle_second(&j);
    assert!(w > 1000.0, "{w}");
    assert!(
        (r / w - 8.0).abs() < 1.6,
        "read {r} / write {w} in the middle second"
    );
}

#[test]
fn steady_state_stops_the_job_with_fios_section() {
    let j = ok_json(&[
        "--name=s",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=60",
        "--rate_iops=1000",
        "--ss=iops:20%",
        "--ss_dur=2",
        "--ss_ramp=1",
    ]);
    let job = &j["jobs"][0];
    let ss = &job["steadystate"];
    assert_eq!(ss["ss"], "iops:20.000000%");
    assert_eq!(ss["duration"], 2);
    assert_eq!(ss["attained"], 1, "{ss}");
    let iops = ss["data"]["iops"].as_array().unwrap();
    assert_eq!(iops.len(), 2);
    for v in iops {
        assert!((800.0..=1200.0).contains(&f(v)), "{ss}");
    }
    for k in ["criterion", "max_deviation", "slope"] {
        assert!(!ss[k].is_null(), "{k}: {ss}");
    }
    assert_eq!(ss["data"]["bw"].as_array().unwrap().len(), 2);
    // 1 s of ss_ramp, then 2 samples of 1 s: far from the 60 s runtime.
    let ms = f(&job["read"]["runtime"]);
    assert!((2900.0..20_000.0).contains(&ms), "{ms}");
}

/// fio 3.41's `ss=lat:…`: judged on each second's mean completion latency;
/// fio's JSON carries that window (`lat_ns`) and its mean.
#[test]
fn steady_state_on_latency_fills_fios_lat_window() {
    let j = ok_json(&[
        "--name=s",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=60",
        "--rate_iops=1000",
        "--ss=lat:1000%",
        "--ss_dur=2",
    ]);
    let job = &j["jobs"][0];
    let ss = &job["steadystate"];
    assert_eq!(ss["ss"], "lat:1000.000000%");
    assert_eq!(ss["attained"], 1, "{ss}");
    let lat = ss["data"]["lat_ns"].as_array().unwrap();
    assert_eq!(lat.len(), 2, "{ss}");
    assert!(lat.iter().all(|v| f(v) > 0.0), "{ss}");
    let mean = (f(&lat[0]) + f(&lat[1])) / 2.0;
    assert!((f(&ss["data"]["lat_mean"]) - mean).abs() <= 1.0, "{ss}");
    // The window's latencies are the job's: within its min and max.
    let (lo, hi) = (
        f(&job["read"]["clat_ns"]["min"]),
        f(&job["read"]["clat_ns"]["max"]),
    );
    assert!(
        lat.iter().all(|v| (lo..=hi).contains(&f(v))),
        "{lo}..{hi}: {ss}"
    );
    let ms = f(&job["read"]["runtime"]);
    assert!((1900.0..20_000.0).contains(&ms), "{ms}");
}

#[test]
fn steady_state_not_reached_runs_to_the_end() {
    let j = ok_json(&[
        "--name=s",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=3",
        "--ss=iops:0.0001%",
        "--ss_dur=2",
    ]);
    let job = &j["jobs"][0];
    assert_eq!(job["steadystate"]["attained"], 0);
    assert_eq!(
        job["steadystate"]["data"]["iops"].as_array().unwrap().len(),
        2
    );
    assert!(f(&job["read"]["runtime"]) >= 2900.0);
    // Jobs without ss have no steadystate object, as in fio.
    let j = ok_json(&["--name=n", "--ioengine=null", "--size=1m"]);
    assert!(j["jobs"][0].get("steadystate").is_none());
}

#[test]
fn latency_target_finds_the_deepest_depth() {
    let j = ok_json(&[
        "--name=l",
        "--ioengine=null",
        "--rw=randread",
        "--iodepth=16",
        "--time_based",
        "--runtime=60",
        "--latency_target=50ms",
        "--latency_window=100ms",
        "--latency_percentile=99",
    ]);
    let job = &j["jobs"][0];
    // Null completes at once: every depth meets 50 ms, so the search
    // doubles to iodepth, confirms it, and ends the job.
    assert_eq!(job["latency_depth"], 16);
    assert_eq!(job["latency_target"], 50_000_000);
    assert_eq!(job["latency_target_ns"], 50_000_000);
    assert_eq!(job["latency_window"], 100_000);
    assert_eq!(job["latency_window_us"], 100_000);
    assert_eq!(f(&job["latency_percentile"]), 99.0);
    assert!(f(&job["read"]["runtime"]) < 30_000.0);
    // The reported depths are the final one's: nothing at depth >= 32.
    assert!(f(&job["iodepth_level"][">=64"]) == 0.0);
    // Without a target: fio's defaults, depth = iodepth.
    let j = ok_json(&["--name=n", "--ioengine=null", "--size=1m", "--iodepth=4"]);
    let job = &j["jobs"][0];
    assert_eq!(job["latency_depth"], 4);
    assert_eq!(job["latency_target_ns"], 0);
    assert_eq!(f(&job["latency_percentile"]), 100.0);
}

#[test]
fn exitall_stops_the_rest_of_the_group() {
    let j = ok_json(&[
        "--name=short",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=1",
        "--exitall",
        "--name=long",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=60",
    ]);
    let long = f(&j["jobs"][1]["read"]["runtime"]);
    assert!(long < 20_000.0, "{long}");
    assert_eq!(j["dioscope"]["interrupted"], false);
}

#[test]
fn exitall_on_error_stops_every_job() {
    let (j, o) = run_json(&[
        "--name=fails",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=60",
        "--rate_iops=20",
        "--rate_iops_min=1000",
        "--ratecycle=200",
        "--exitall_on_error",
        "--name=other",
        "--ioengine=null",
        "--rw=read",
        "--time_based",
        "--runtime=60",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let other = f(&j["jobs"][1]["read"]["runtime"]);
    assert!(other < 20_000.0, "{other}");
}

#[test]
fn startdelay_range_delays_the_start() {
    let d = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let o = run_in(
        d.path(),
        &[
            "--name=d",
            "--ioengine=null",
            "--size=1m",
            "--startdelay=1-2",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(t.elapsed().as_secs_f64() >= 1.0);
}

#[test]
fn refusals_name_the_feature() {
    let d = tempfile::tempdir().unwrap();
    // (io_submit_mode=offload runs now: pacing2::offload_runs_a_pool_…)
    {
        // clocksource=cpu runs, with a note that dioscope's clock is its own
        // (options::clocksource_cpu_and_gettimeofday_run_with_one_note).
        let opt = "--clocksource=cpu";
        let o = run_in(d.path(), &["--name=x", "--ioengine=null", "--size=1m", opt]);
        assert_eq!(o.status.code(), Some(0), "{opt}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("clocksource=cpu"),
            "{opt}: {}",
            stderr(&o)
        );
    }
    // Combinations that cannot work stop before any I/O, naming the fix.
    for (args, what) in [
        (
            &["--rw=randtrim", "--rate=1m,1m,1m"][..],
            "not supported by dioscope: a rate for trims",
        ),
        (
            &["--ss=iops_slope:1%", "--ss_dur=1"][..],
            "ss_dur of at least 2 s",
        ),
    ] {
        let mut a = vec!["--name=x", "--ioengine=null", "--size=1m"];
        a.extend_from_slice(args);
        let o = run_in(d.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    }
    // The accepted spellings run.
    for opt in ["--io_submit_mode=inline", "--clocksource=clock_gettime"] {
        let o = run_in(d.path(), &["--name=x", "--ioengine=null", "--size=1m", opt]);
        assert_eq!(o.status.code(), Some(0), "{opt}: {}", stderr(&o));
    }
}

#[test]
fn pacing_options_work_in_job_files() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("flow.fio");
    std::fs::write(
        &file,
        "[global]\nioengine=null\ntime_based\nruntime=3\nflow_sleep=100\nthinktime=0\n\
         [job2]\nrw=write\nflow=1\n[job1]\nrw=randread\nflow=8\n",
    )
    .unwrap();
    let o = run_in(d.path(), &["--output-format=json", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (w, r) = middle_second(&json(&o));
    assert!((r / w - 8.0).abs() < 0.5, "read {r} / write {w}");
}
