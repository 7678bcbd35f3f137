//! Options that once were parsed and ignored, each shown to act.

use crate::common::*;

fn run_json(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let o = run_in(dir, args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    json(&o)
}

#[test]
fn rate_iops_caps_each_direction() {
    let d = tempfile::tempdir().unwrap();
    // (value, read cap, write cap); 0: uncapped (null reaches millions).
    // The limiter keeps an absolute schedule from the worker's start, so a
    // worker paused by a loaded machine catches up: it can never be ahead
    // of the cap (one I/O at most, at the start), and it can only fall
    // behind by the time it was not running at the very end of the run.
    // The upper bound is therefore tight; the lower one allows the worker
    // to be off the CPU for 0.8 s of the last part of a 4 s run.
    for (v, r, w) in [
        ("100,200", 100.0, 200.0),
        ("100", 100.0, 100.0),
        (",200", 0.0, 200.0),
    ] {
        let j = run_json(
            d.path(),
            &[
                "--name=r",
                "--ioengine=null",
                "--rw=randrw",
                "--bs=4k",
                "--size=1g",
                "--time_based",
                "--runtime=4",
                &format!("--rate_iops={v}"),
                "--output-format=json",
            ],
        );
        let job = &j["jobs"][0];
        for (dir, cap) in [("read", r), ("write", w)] {
            let iops = job[dir]["iops"].as_f64().unwrap();
            if cap > 0.0 {
                // One I/O over 4 s is 0.25 IOPS: 2 % is far above it.
                assert!(
                    iops <= cap * 1.02,
                    "rate_iops={v}: {dir} {iops} IOPS, above the cap {cap}"
                );
                assert!(
                    iops >= cap * 0.8,
                    "rate_iops={v}: {dir} {iops} IOPS, far below the cap {cap}"
                );
            } else {
                assert!(
                    iops > 10_000.0,
                    "rate_iops={v}: {dir} {iops} IOPS, uncapped"
                );
            }
        }
    }
}

#[test]
fn end_fsync_syncs_once_at_the_end() {
    let d = tempfile::tempdir().unwrap();
    for (on, want) in [("0", 0), ("1", 1)] {
        let j = run_json(
            d.path(),
            &[
                "--name=e",
                "--filename=e.dat",
                "--rw=write",
                "--bs=64k",
                "--size=1m",
                "--ioengine=libaio",
                "--iodepth=4",
                &format!("--end_fsync={on}"),
                "--output-format=json",
            ],
        );
        let sync = &j["jobs"][0]["sync"];
        assert_eq!(sync["total_ios"].as_u64(), Some(want), "end_fsync={on}");
        assert_eq!(sync["lat_ns"]["N"].as_u64(), Some(want), "end_fsync={on}");
    }
}

#[test]
fn create_on_open_lays_nothing_out() {
    let d = tempfile::tempdir().unwrap();
    let args = |name: &'static str, coo: &'static str| {
        [
            "--name=c",
            name,
            "--rw=write",
            "--bs=4k",
            "--size=8m",
            "--time_based",
            "--runtime=1",
            "--rate_iops=20",
            "--ioengine=psync",
            coo,
            "--output-format=json",
        ]
    };
    // Without it the file is laid out to size= first; with it only the
    // blocks written exist (about 20 of 4 KiB in the one second).
    run_json(d.path(), &args("--filename=laid.dat", "--create_on_open=0"));
    let j = run_json(d.path(), &args("--filename=open.dat", "--create_on_open=1"));
    let written = j["jobs"][0]["write"]["io_bytes"].as_u64().unwrap();
    let laid = std::fs::metadata(d.path().join("laid.dat")).unwrap().len();
    let open = std::fs::metadata(d.path().join("open.dat")).unwrap().len();
    assert_eq!(laid, 8 << 20);
    assert!(
        written > 0 && open <= written,
        "file {open} bytes, wrote {written}"
    );
    // Reads of a file created empty: groups::create_on_open_reads_*.
}

#[test]
fn iodepth_batch_complete_max_bounds_each_reap() {
    let d = tempfile::tempdir().unwrap();
    let reaps = |max: &str| {
        let j = run_json(
            d.path(),
            &[
                "--name=q",
                "--ioengine=null",
                "--rw=randread",
                "--bs=4k",
                "--size=64m",
                "--iodepth=32",
                "--iodepth_batch_complete_min=1",
                &format!("--iodepth_batch_complete_max={max}"),
                "--output-format=json",
            ],
        );
        j["jobs"][0]["iodepth_complete"].clone()
    };
    // null completes a whole batch at once: 32 per reap unless bounded.
    let all = reaps("0");
    assert!(all["32"].as_f64().unwrap() > 50.0, "{all}");
    let two = reaps("2");
    let small = two["0"].as_f64().unwrap() + two["4"].as_f64().unwrap();
    assert!((small - 100.0).abs() < 1e-6, "{two}");
}

#[test]
fn eta_always_shows_progress_without_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    for (eta, shown) in [("always", true), ("auto", false), ("never", false)] {
        let o = run_in(
            d.path(),
            &[
                "--name=p",
                "--ioengine=null",
                "--rw=randread",
                "--size=1g",
                "--time_based",
                "--runtime=2",
                &format!("--eta={eta}"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        // Test stderr is a pipe: only `always` draws the progress line.
        assert_eq!(
            stderr(&o).contains("elapsed"),
            shown,
            "eta={eta}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn disable_lat_family_turns_latencies_off() {
    let d = tempfile::tempdir().unwrap();
    // (option, slat, clat, lat measured)
    for (opt, s, c, l) in [
        ("--disable_slat=0", true, true, true),
        ("--disable_slat=1", false, true, true),
        ("--disable_clat=1", true, false, true),
        ("--disable_lat=1", true, true, false),
        ("--gtod_reduce=1", false, false, false),
        ("--disable_bw_measurement=1", true, true, true),
    ] {
        let t0 = std::time::Instant::now();
        let j = run_json(
            d.path(),
            &[
                "--name=g",
                "--ioengine=null",
                "--rw=randread",
                "--bs=4k",
                "--size=1g",
                "--iodepth=4",
                "--time_based",
                "--runtime=1",
                "--lat_percentiles=1",
                opt,
                "--output-format=json",
            ],
        );
        let wall = t0.elapsed().as_secs_f64();
        let rd = &j["jobs"][0]["read"];
        let ios = rd["total_ios"].as_u64().unwrap();
        assert!(ios > 1_000, "{opt}: {ios} I/Os");
        for (key, on) in [("slat_ns", s), ("clat_ns", c), ("lat_ns", l)] {
            let n = rd[key]["N"].as_u64().unwrap();
            assert_eq!(n == ios, on, "{opt}: {key} N={n} of {ios} I/Os");
            if !on {
                assert_eq!(rd[key]["max"].as_u64(), Some(0), "{opt}: {key}");
            }
        }
        // Unmeasured latencies have no percentiles, as in fio's JSON.
        assert_eq!(rd["clat_ns"].get("percentile").is_some(), c, "{opt}");
        assert_eq!(rd["lat_ns"].get("percentile").is_some(), l, "{opt}");
        // fio fills latency_us/ms on the completion path.
        let buckets: f64 = ["latency_ns", "latency_us", "latency_ms"]
            .iter()
            .flat_map(|k| j["jobs"][0][k].as_object().unwrap().values())
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert_eq!(buckets > 99.0, c, "{opt}: latency maps sum to {buckets}");
        // gtod_reduce reads the clock rarely, yet the run ends on time.
        // (+60 %: a loaded machine may keep the worker off the CPU at the end.)
        let rt = rd["runtime"].as_u64().unwrap();
        assert!((990..=1600).contains(&rt), "{opt}: runtime {rt} ms");
        assert!(wall < 10.0, "{opt}: took {wall:.1} s");
    }
}

/// The `flags:` (octal) of every descriptor of `pid` open on `path`.
fn fd_flags(pid: u32, path: &std::path::Path) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
    {
        let e = e.unwrap();
        if std::fs::read_link(e.path()).ok().as_deref() != Some(path) {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            e.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        if let Some(f) = info.lines().find_map(|l| l.strip_prefix("flags:")) {
            out.push(i32::from_str_radix(f.trim(), 8).unwrap());
        }
    }
    out
}

#[test]
fn sync_opens_the_target_with_o_sync_or_o_dsync() {
    use std::process::{Command, Stdio};
    let d = tempfile::tempdir().unwrap();
    for (v, flag) in [
        ("1", libc::O_SYNC),
        ("sync", libc::O_SYNC),
        ("dsync", libc::O_DSYNC),
    ] {
        let f = d.path().join(format!("s{v}.dat"));
        let mut child = Command::new(bin())
            .args([
                "--name=s",
                &format!("--filename={}", f.display()),
                "--size=1m",
                "--rw=write",
                "--time_based",
                "--runtime=20s",
                &format!("--sync={v}"),
                "--output-format=json",
            ])
            .current_dir(d.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let seen = std::panic::catch_unwind(|| {
            wait_for("the worker to write", 20, || {
                worker_io(pid, "s").is_some_and(|(_, w)| w > 0)
            });
            fd_flags(pid, &f)
        });
        kill(pid, libc::SIGKILL);
        let _ = child.wait();
        let seen = seen.unwrap();
        // O_SYNC includes O_DSYNC's bit: dsync must not carry O_SYNC's own.
        assert!(
            seen.iter()
                .any(|&fl| fl & libc::O_SYNC == flag && fl & libc::O_ACCMODE == libc::O_RDWR),
            "sync={v}: no read-write descriptor with {flag:o}: {seen:?}"
        );
    }
    // The journal line of Ceph's guides runs (on a file here) and says nothing.
    let o = run_in(
        d.path(),
        &[
            "--filename=j.dat",
            "--size=1m",
            "--direct=1",
            "--sync=1",
            "--rw=write",
            "--bs=4k",
            "--numjobs=1",
            "--iodepth=1",
            "--runtime=1",
            "--time_based",
            "--group_reporting",
            "--name=journal-test",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn clocksource_cpu_and_gettimeofday_run_with_one_note() {
    let d = tempfile::tempdir().unwrap();
    for c in ["cpu", "gettimeofday", "clock_gettime"] {
        let o = run_in(
            d.path(),
            &[
                "--name=a",
                "--ioengine=null",
                "--size=1m",
                &format!("--clocksource={c}"),
                "--name=b",
                "--ioengine=null",
                "--size=1m",
                &format!("--clocksource={c}"),
                "--output-format=json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{c}: {}", stderr(&o));
        let notes = stderr(&o).matches("dioscope: note: clocksource=").count();
        assert_eq!(
            notes,
            usize::from(c != "clock_gettime"),
            "{c}: {}",
            stderr(&o)
        );
        json(&o);
    }
}

#[test]
fn allrandrepeat_repeats_offsets_sizes_mix_and_buffers() {
    let d = tempfile::tempdir().unwrap();
    let run = |n: u32, all: &str| {
        let (log, data) = (format!("log{n}"), format!("data{n}"));
        let o = run_in(
            d.path(),
            &[
                "--name=a",
                &format!("--filename={data}"),
                "--size=256k",
                "--rw=randrw",
                "--bsrange=512-8k",
                "--randrepeat=0",
                &format!("--allrandrepeat={all}"),
                "--refill_buffers",
                "--io_size=1m",
                &format!("--write_iolog={log}"),
                "--output-format=json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        (
            std::fs::read(d.path().join(&log)).unwrap(),
            std::fs::read(d.path().join(&data)).unwrap(),
        )
    };
    let (l1, d1) = run(1, "1");
    let (l2, d2) = run(2, "1");
    // fio's iolog v3: "TIME FILE ACTION OFFSET LEN"; the times differ.
    let strip = |l: &[u8], n: u32| -> Vec<String> {
        String::from_utf8_lossy(l)
            .replace(&format!("data{n}"), "F")
            .lines()
            .map(|x| match x.split_once(' ') {
                Some((t, rest)) if t.parse::<u64>().is_ok() => rest.to_string(),
                _ => x.to_string(),
            })
            .collect()
    };
    assert_eq!(
        strip(&l1, 1),
        strip(&l2, 2),
        "allrandrepeat=1: the same I/O"
    );
    assert!(d1 == d2, "allrandrepeat=1: the same data");
    let (l3, d3) = run(3, "0");
    assert!(
        strip(&l1, 1) != strip(&l3, 3) || d1 != d3,
        "allrandrepeat=0: the clock seeds"
    );
}

#[test]
fn slat_percentiles_reports_submission_latency_percentiles() {
    let d = tempfile::tempdir().unwrap();
    let base = [
        "--name=s",
        "--ioengine=null",
        "--iodepth=4",
        "--size=4m",
        "--rw=randread",
    ];
    let mut a = base.to_vec();
    a.extend(["--slat_percentiles=1", "--output-format=json,normal"]);
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let (v, text) = json_then_text(&out);
    let slat = &v["jobs"][0]["read"]["slat_ns"];
    let p = slat["percentile"]
        .as_object()
        .unwrap_or_else(|| panic!("{slat}"));
    assert_eq!(p.len(), 17, "fio's default list: {slat}");
    let p99 = p["99.000000"].as_u64().unwrap();
    assert!(p99 >= slat["min"].as_u64().unwrap() && p99 <= slat["max"].as_u64().unwrap());
    // fio's order: slat, clat, then lat percentile rows.
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("no {s}: {text}"));
    assert!(
        at("slat percentiles (") < at("clat percentiles ("),
        "{text}"
    );
    // Off by default, as in fio.
    let mut a = base.to_vec();
    a.push("--output-format=json");
    let v = json(&run_in(d.path(), &a));
    assert!(v["jobs"][0]["read"]["slat_ns"].get("percentile").is_none());
}
