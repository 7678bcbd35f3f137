//! What fio's own t/*.py scripts showed dioscope doing differently
//! (tests/fio_tscripts), each as a behaviour of its own.

use crate::common::{json, run_in, stderr};

/// fio reads a size's unit by its leading letters and ignores trailing
/// punctuation (t/strided.py passes `--filesize=65536)`); dioscope does
/// too, with a warning naming it, and still refuses a mistyped unit.
#[test]
fn trailing_punctuation_after_a_size_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--name=t",
            "--ioengine=null",
            "--rw=read",
            "--bs=4k",
            "--size=65536)",
            "--output-format=json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 65536);
    assert!(stderr(&o).contains("trailing ')'"), "{}", stderr(&o));
    let o = run_in(dir.path(), &["--name=t", "--ioengine=null", "--size=64q)"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("unknown unit"), "{}", stderr(&o));
}

/// fio's t0007: sequential reads with holes (`rw=read:512k`, bs=1m) over
/// 128 MiB stop when the next block would cross the end: 85 blocks; when
/// the next offset lands exactly on the end fio wraps and reads the size.
#[test]
fn holed_sequential_io_stops_where_the_next_block_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    for (size, skip, bs, want) in [
        ("128m", "512k", "1m", 85u64 << 20),
        ("64k", "4k", "4k", 64 << 10),
    ] {
        let o = run_in(
            dir.path(),
            &[
                "--name=t",
                "--ioengine=null",
                &format!("--rw=read:{skip}"),
                &format!("--bs={bs}"),
                &format!("--size={size}"),
                "--output-format=json",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json(&o);
        assert_eq!(
            v["jobs"][0]["read"]["io_bytes"], want,
            "size={size} read:{skip}"
        );
    }
}

/// fio's per-I/O logs have the trims of `rw=trimwrite`/`randtrimwrite`,
/// direction 2, each before the write to its offset (fio's t0023/t0024).
#[test]
fn per_io_bw_log_has_the_trims_before_their_writes() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--name=t",
            "--ioengine=null",
            "--rw=randtrimwrite",
            "--filesize=256k",
            "--log_offset=1",
            "--per_job_logs=0",
            "--write_bw_log=tw",
            "--randrepeat=0",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let log = std::fs::read_to_string(dir.path().join("tw_bw.log")).unwrap();
    let lines: Vec<Vec<u64>> = log
        .lines()
        .map(|l| l.split(',').map(|f| f.trim().parse().unwrap()).collect())
        .collect();
    assert_eq!(lines.len(), 2 * 64, "{log}");
    for pair in lines.chunks(2) {
        assert_eq!(pair[0][2], 2, "a trim first: {pair:?}");
        assert_eq!(pair[1][2], 1, "then its write: {pair:?}");
        assert_eq!(
            pair[0][3..5],
            pair[1][3..5],
            "same size and offset: {pair:?}"
        );
    }
}

/// fio's terse percentile fields are the total latency's with
/// lat_percentiles=1 (else clat's, else slat's): fio's latency_percentiles
/// test 9 compares them with the JSON.
#[test]
fn terse_percentiles_follow_lat_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--name=t",
            "--ioengine=null",
            "--rw=randwrite",
            "--size=16m",
            "--lat_percentiles=1",
            "--clat_percentiles=1",
            "--output-format=terse,json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let terse = out
        .lines()
        .find(|l| l.starts_with("3;"))
        .expect("a terse line");
    let v: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    let pct = &v["jobs"][0]["write"]["lat_ns"]["percentile"];
    let want = pct["99.000000"]
        .as_u64()
        .expect("lat percentiles in the JSON")
        / 1000;
    // The read side of a write-only job has no percentiles ("0%=0"
    // padding): the first 99th percentile field is the write's.
    let fields: Vec<&str> = terse.split(';').collect();
    let p99 = fields
        .iter()
        .find_map(|f| f.strip_prefix("99.000000%="))
        .expect("a 99th percentile field");
    assert_eq!(p99.parse::<u64>().unwrap(), want, "{terse}");
}

/// The JSON of a run whose stdout is one or more outputs, JSON among them.
fn json_in(out: &str) -> serde_json::Value {
    serde_json::from_str(&out[out.find('{').expect("a JSON document")..]).unwrap()
}

/// A null-engine randrw job (16384 I/Os of 4 KiB, an fsync every 8 writes:
/// long enough for a runtime of a millisecond or more)
/// with `unified_rw_reporting=MODE`, in terse, JSON and normal text.
fn unified_run(dir: &std::path::Path, mode: &str) -> (String, serde_json::Value, String) {
    let args = |fmt: &str| {
        vec![
            "--name=t".to_string(),
            "--ioengine=null".into(),
            "--rw=randrw".into(),
            "--bs=4k".into(),
            "--size=64m".into(),
            "--fsync=8".into(),
            format!("--unified_rw_reporting={mode}"),
            format!("--output-format={fmt}"),
        ]
    };
    let run = |fmt: &str| {
        let a = args(fmt);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = run_in(dir, &a);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let both = run("terse,json");
    let terse = both
        .lines()
        .find(|l| l.starts_with("3;"))
        .expect("a terse line")
        .to_string();
    (terse, json_in(&both), run("normal"))
}

/// fio's `unified_rw_reporting=mixed` (or 1): one "mixed" direction with
/// the reads, writes and their latencies summed, in place of read, write,
/// trim and sync in the JSON (fio's latency_percentiles tests 8, 14, 19,
/// 20), of the read and write blocks in the terse line, and `mixed:` /
/// `MIXED:` in the text. `both` (2) keeps the directions and adds mixed.
#[test]
fn unified_rw_reporting_sums_the_directions_into_mixed() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["mixed", "1"] {
        let (terse, v, text) = unified_run(dir.path(), mode);
        let j = &v["jobs"][0];
        for d in ["read", "write", "trim", "sync"] {
            assert!(j.get(d).is_none(), "{mode}: no {d} with mixed: {j}");
        }
        let m = &j["mixed"];
        assert_eq!(m["total_ios"], 16384, "{mode}: {m}");
        assert_eq!(m["io_bytes"], 64 << 20, "{mode}");
        for l in ["clat_ns", "lat_ns"] {
            assert_eq!(m[l]["N"], 16384, "{mode} {l}");
        }
        assert!(m["clat_ns"]["percentile"].is_object(), "{m}");
        // fio 3.33's terse v3 with mixed: 5 + 41 (one direction) + 34.
        let f: Vec<&str> = terse.split(';').collect();
        assert_eq!(f.len(), 80, "{terse}");
        assert_eq!(f[5], "65536", "mixed KiB in the first direction: {terse}");
        assert!(text.contains("\n  mixed: IOPS="), "{text}");
        assert!(text.contains("\n  MIXED: bw="), "{text}");
        assert!(!text.contains("  read: IOPS="), "{text}");
        assert!(!text.contains(" READ: bw="), "{text}");
        assert!(text.contains("issued rwts: total=16384,0,0,"), "{text}");
    }
    let (terse, v, text) = unified_run(dir.path(), "both");
    let j = &v["jobs"][0];
    let (r, w) = (
        j["read"]["total_ios"].as_u64().unwrap(),
        j["write"]["total_ios"].as_u64().unwrap(),
    );
    assert_eq!(r + w, 16384);
    assert!(r > 0 && w > 0, "{r} {w}");
    assert_eq!(j["mixed"]["total_ios"], 16384);
    assert_eq!(j["mixed"]["clat_ns"]["N"], 16384);
    assert_eq!(j["sync"]["total_ios"], w / 8);
    let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(at("sync") < at("mixed") && at("mixed") < at("job_runtime"));
    assert_eq!(terse.split(';').count(), 5 + 3 * 41 + 34, "{terse}");
    for l in [
        "  read: IOPS=",
        "  write: IOPS=",
        "  mixed: IOPS=",
        " READ: bw=",
        "MIXED: bw=",
    ] {
        assert!(text.contains(l), "{l}: {text}");
    }
    let o = run_in(
        dir.path(),
        &[
            "--name=t",
            "--ioengine=null",
            "--size=64k",
            "--unified_rw_reporting=sum",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// fio's null engine times its syncs: `fsync=N` gives the JSON's "sync"
/// its count and latencies (fio's latency_percentiles test 9).
#[test]
fn null_engine_syncs_are_counted_and_timed() {
    let dir = tempfile::tempdir().unwrap();
    for (opt, n) in [("--fsync=32", 8), ("--fdatasync=4", 64)] {
        let o = run_in(
            dir.path(),
            &[
                "--name=t",
                "--ioengine=null",
                "--rw=randwrite",
                "--bs=4k",
                "--size=1m",
                opt,
                "--output-format=json+",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json(&o);
        let s = &v["jobs"][0]["sync"];
        assert_eq!(s["total_ios"], n, "{opt}: {s}");
        assert_eq!(s["lat_ns"]["N"], n, "{opt}: {s}");
        assert!(s["lat_ns"]["percentile"].is_object(), "{opt}: {s}");
        let bins: u64 = s["lat_ns"]["bins"]
            .as_object()
            .expect("json+ bins")
            .values()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(bins, n, "{opt}");
    }
}

/// With per-I/O priorities (cmdprio_percentage, cmdprio_bssplit) fio's
/// JSON has each direction's latency per priority under "prios": the job's
/// own priority first, completion latency (total with lat_percentiles),
/// the entries summing to the direction (fio's latency_percentiles tests
/// 15-22). One priority only (cmdprio_percentage=100): no "prios".
#[test]
fn cmdprio_jobs_report_latency_per_priority() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let run = |extra: &[&str]| {
        let f = format!("--filename={}", file.display());
        let mut a = vec![
            "--name=t",
            "--ioengine=libaio",
            "--rw=randrw",
            "--bs=4k",
            "--size=1m",
            "--loops=4",
            "--cmdprio_class=2",
            "--cmdprio=3",
            "--output-format=json+",
            &f,
        ];
        a.extend_from_slice(extra);
        let o = run_in(dir.path(), &a);
        assert!(o.status.success(), "{}", stderr(&o));
        json(&o)
    };
    for (extra, key) in [
        (&["--cmdprio_percentage=50"][..], "clat_ns"),
        (
            &["--cmdprio_percentage=50", "--lat_percentiles=1"][..],
            "lat_ns",
        ),
    ] {
        let v = run(extra);
        for d in ["read", "write"] {
            let dir = &v["jobs"][0][d];
            let p = dir["prios"].as_array().expect("prios");
            let ids: Vec<(u64, u64)> = p
                .iter()
                .map(|x| {
                    (
                        x["prioclass"].as_u64().unwrap(),
                        x["prio"].as_u64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(ids, [(0, 0), (2, 3)], "{d}");
            let n: u64 = p.iter().map(|x| x[key]["N"].as_u64().unwrap()).sum();
            assert_eq!(n, dir[key]["N"].as_u64().unwrap(), "{d} {key}");
            assert_eq!(n, dir["total_ios"].as_u64().unwrap());
            for x in p {
                assert!(x[key]["bins"].is_object(), "{x}");
                let other = if key == "lat_ns" { "clat_ns" } else { "lat_ns" };
                assert!(x.get(other).is_none(), "{x}");
            }
        }
    }
    let v = run(&["--cmdprio_percentage=100"]);
    assert!(v["jobs"][0]["read"].get("prios").is_none());
    let v = run(&[]);
    assert!(v["jobs"][0]["read"].get("prios").is_none());
}

/// fio 3.41's random_seed.py: `--debug=random` writes each worker's seed
/// (`rand_seeds[i]=N`) to the `--output` file, stderr stays empty, and the
/// seeds repeat with randrepeat/allrandrepeat=1, differ without, and follow
/// a randseed given whatever randrepeat says.
#[test]
fn debug_random_seeds_follow_randrepeat_and_randseed() {
    let d = tempfile::tempdir().unwrap();
    let seeds = |extra: &[&str]| -> Vec<u64> {
        let mut args = vec![
            "--debug=random",
            "--name=random_seed",
            "--ioengine=null",
            "--filesize=32k",
            "--rw=randread",
            "--output=out.txt",
        ];
        args.extend_from_slice(extra);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{extra:?}: fio's tests want stderr empty");
        let out = std::fs::read_to_string(d.path().join("out.txt")).unwrap();
        assert!(
            out.lines()
                .any(|l| l.contains("random") && l.contains("FIO_RAND_NR_OFFS=")),
            "{out}"
        );
        let s: Vec<u64> = out
            .lines()
            .filter(|l| l.contains("random") && l.contains("rand_seeds["))
            .map(|l| l.rsplit('=').next().unwrap().trim().parse().unwrap())
            .collect();
        assert!(!s.is_empty(), "{out}");
        // The report follows the debug lines in the same file.
        assert!(out.contains("random_seed: (groupid=0"), "{out}");
        s
    };
    for opt in ["--randrepeat", "--allrandrepeat"] {
        let on = format!("{opt}=1");
        let off = format!("{opt}=0");
        assert_eq!(seeds(&[&on]), seeds(&[&on]), "{on}");
        // allrandrepeat=0 alone (randrepeat at its default) is the clock
        // too: fio 3.41 made it randrepeat's alias.
        let a = seeds(&[&off]);
        let b = seeds(&[&off]);
        assert_ne!(a, b, "{off}: from the clock");
        assert_ne!(a, seeds(&[&on]), "{off}");
        for s in ["7", "0x1234"] {
            let rs = format!("--randseed={s}");
            let given = seeds(&[&off, &rs]);
            assert_eq!(given, seeds(&[&on, &rs]), "{rs} overrides {off}");
            assert_ne!(given, seeds(&[&on]), "{rs}");
        }
    }
}

/// fio's t0030 runs `--bandwidth-log`: the aggregate logs agg-read_bw.log,
/// agg-write_bw.log and agg-trim_bw.log, in fio's line format, whose
/// intervals add up to the bytes the jobs moved (two jobs together); a
/// second trial writes its own `.t2` files; a trimming job leaves the
/// trim log empty with a note.
#[test]
fn bandwidth_log_writes_the_aggregate_of_every_job() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "--bandwidth-log",
            "--name=a",
            "--ioengine=null",
            "--rw=randrw",
            "--bs=4k",
            "--size=1g",
            "--numjobs=2",
            "--rate=40m,20m",
            "--time_based",
            "--runtime=2",
            "--trials=2",
            "--output-format=json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    for (d, name) in ["read", "write", "trim"].iter().enumerate() {
        for file in [
            format!("agg-{name}_bw.log"),
            format!("agg-{name}_bw.t2.log"),
        ] {
            let text = std::fs::read_to_string(dir.path().join(&file)).unwrap();
            let rows: Vec<Vec<u64>> = text
                .lines()
                .map(|l| l.split(", ").map(|x| x.parse().unwrap()).collect())
                .collect();
            assert!(rows.len() >= 2, "{file}: {text}");
            let mut prev = (0u64, 0f64);
            for r in &rows {
                assert_eq!(
                    (r.len(), r[2], r[3], r[4]),
                    (5, d as u64, 0, 0),
                    "{file}: {r:?}"
                );
                assert!(r[0] > prev.0, "{file}: times grow: {text}");
                // KiB/s × the interval: KiB moved in it.
                prev.1 += r[1] as f64 * (r[0] - prev.0) as f64 / 1000.0;
                prev.0 = r[0];
            }
            if d == 2 {
                assert_eq!(prev.1, 0.0, "{file}");
                continue;
            }
            // Two clones at 40 (read) or 20 (write) MiB/s each, reported
            // together under fio's job (the JSON's two clones).
            let want = if d == 0 { 80.0 * 1024.0 } else { 40.0 * 1024.0 };
            let per_s = prev.1 / (prev.0 as f64 / 1000.0);
            assert!(
                (per_s / want - 1.0).abs() < 0.1,
                "{file}: {per_s:.0} KiB/s over the log, {want} expected: {text}; {}",
                v["jobs"][0][name]["bw"]
            );
        }
    }
    let o = run_in(
        dir.path(),
        &[
            "--bandwidth-log",
            "--name=t",
            "--ioengine=null",
            "--rw=randtrim",
            "--bs=4k",
            "--size=64m",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("agg-trim_bw.log is empty"),
        "{}",
        stderr(&o)
    );
    let trim = std::fs::read_to_string(dir.path().join("agg-trim_bw.log")).unwrap();
    assert!(trim.is_empty(), "{trim}");
}
