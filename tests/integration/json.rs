//! fio's JSON layout, checked with a real consumer of it.

use crate::common::*;

#[test]
fn json_layout_matches_fio() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=j",
            "--ioengine=null",
            "--rw=randrw",
            "--size=2m",
            "--output-format=json",
        ],
    );
    let j = json(&o);
    for k in [
        "fio version",
        "timestamp",
        "timestamp_ms",
        "time",
        "jobs",
        "disk_util",
        "dioscope",
    ] {
        assert!(j.get(k).is_some(), "top-level '{k}' missing");
    }
    let job = &j["jobs"][0];
    for k in [
        "jobname",
        "groupid",
        "error",
        "job options",
        "read",
        "write",
        "trim",
        "sync",
        "job_runtime",
        "usr_cpu",
        "sys_cpu",
        "ctx",
        "majf",
        "minf",
        "iodepth_level",
        "latency_ns",
        "latency_us",
        "latency_ms",
    ] {
        assert!(job.get(k).is_some(), "job key '{k}' missing");
    }
    for dir in ["read", "write", "trim"] {
        for k in [
            "io_bytes",
            "io_kbytes",
            "bw_bytes",
            "bw",
            "iops",
            "runtime",
            "total_ios",
            "short_ios",
            "slat_ns",
            "clat_ns",
            "lat_ns",
            "bw_min",
            "iops_mean",
        ] {
            assert!(job[dir].get(k).is_some(), "{dir}.{k} missing");
        }
    }
    let r = &job["read"];
    // This run is too short for its runtime in whole ms to give the rates
    // (json_rates_follow_fio_formulas_on_a_timed_run checks those); the
    // rates share one time base, so IOPS and bandwidth must agree with the
    // totals whatever the runtime.
    let (ios, bytes) = (
        r["total_ios"].as_f64().unwrap(),
        r["io_bytes"].as_f64().unwrap(),
    );
    let (iops, bw) = (r["iops"].as_f64().unwrap(), r["bw_bytes"].as_f64().unwrap());
    assert!(ios > 0.0 && iops > 0.0, "{r}");
    assert!(((iops / bw) / (ios / bytes) - 1.0).abs() < 0.01, "{r}");
    assert!(r["clat_ns"]["percentile"].get("99.000000").is_some());
    assert_eq!(r["clat_ns"]["N"], r["total_ios"]);
    assert_eq!(job["trim"]["total_ios"], 0);
}

/// fio's rate formulas, from the totals and the runtime in ms.
fn check_fio_formulas(r: &serde_json::Value) {
    let rt = r["runtime"].as_f64().unwrap();
    assert!(rt > 0.0, "{r}");
    let iops = 1000.0 * r["total_ios"].as_f64().unwrap() / rt;
    assert!(iops > 0.0, "{r}");
    assert!(
        (r["iops"].as_f64().unwrap() - iops).abs() / iops < 0.01,
        "{r}"
    );
    let bw_bytes = 1000.0 * r["io_bytes"].as_f64().unwrap() / rt;
    let got = r["bw_bytes"].as_f64().unwrap();
    assert!((got - bw_bytes).abs() / bw_bytes < 0.01, "{r}");
    let bw = r["bw"].as_f64().unwrap();
    assert!((bw - got / 1024.0).abs() <= 1.0, "{r}");
    assert_eq!(
        r["io_kbytes"].as_u64(),
        Some(r["io_bytes"].as_u64().unwrap() / 1024)
    );
}

/// A 1 s null-engine run of `rw` over 64 MiB: always a measurable runtime.
fn timed_null_run(rw: &str) -> serde_json::Value {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=j",
            "--ioengine=null",
            &format!("--rw={rw}"),
            "--size=64m",
            "--time_based",
            "--runtime=1",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json(&o)
}

#[test]
fn json_rates_follow_fio_formulas_on_a_timed_run() {
    // Always a measurable runtime, so the formulas are always checked.
    let j = timed_null_run("randrw");
    for dir in ["read", "write"] {
        check_fio_formulas(&j["jobs"][0][dir]);
    }
}

#[test]
fn a_direction_without_io_has_no_runtime_as_in_fio() {
    // fio sets a direction's runtime only when it moved bytes: a read-only
    // job reports write and trim runtimes of 0 (fio 3.33, checked by hand).
    let j = timed_null_run("randread");
    let job = &j["jobs"][0];
    check_fio_formulas(&job["read"]);
    for dir in ["write", "trim"] {
        assert_eq!(job[dir]["total_ios"].as_u64(), Some(0), "{dir}");
        assert_eq!(job[dir]["runtime"].as_u64(), Some(0), "{dir}: {}", job[dir]);
    }
}

#[test]
fn json_plus_converts_with_fio_jsonplus_clat2csv() {
    if !can_run(
        "fio_jsonplus_clat2csv (Debian package fio)",
        have_tool("fio_jsonplus_clat2csv"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=a",
            "--ioengine=null",
            "--rw=randrw",
            "--size=4m",
            "--name=b",
            "--ioengine=null",
            "--rw=read",
            "--size=1m",
            "--output-format=json+",
            "--output=plus.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("plus.json")).unwrap()).unwrap();
    let bins = j["jobs"][0]["read"]["clat_ns"]["bins"].as_object().unwrap();
    let total: u64 = bins.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, j["jobs"][0]["read"]["total_ios"].as_u64().unwrap());
    // Debian's converter under Debian's python3 (which has python3-six),
    // whatever python3 comes first on PATH.
    let tool = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v fio_jsonplus_clat2csv"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let convert = |extra: &[&str]| {
        std::process::Command::new("/usr/bin/python3")
            .arg(tool.trim())
            .args(["plus.json", "out.csv"])
            .args(extra)
            .current_dir(d.path())
            .output()
            .unwrap()
    };
    let conv = convert(&[]);
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let csv0 = std::fs::read_to_string(d.path().join("out_job0.csv")).unwrap();
    assert!(csv0.lines().count() > 2, "CSV has rows");
    assert!(csv0.lines().next().unwrap().contains("read_clat_ns_count"));
    assert!(d.path().join("out_job1.csv").exists());
    let val = convert(&["--validate"]);
    assert!(
        val.status.success(),
        "validate: {}{}",
        String::from_utf8_lossy(&val.stdout),
        String::from_utf8_lossy(&val.stderr)
    );
}

/// Every key path of fio's part of the JSON (all but `"dioscope"`) with its
/// JSON type, data-dependent keys (percentiles, bins) as `*`.
fn key_types(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    let t = match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::Bool(_) => "bool",
        Value::Null => "null",
    };
    let line = format!("{path} {t}");
    if !path.is_empty() && !out.contains(&line) {
        out.push(line);
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if path.is_empty() && k == "dioscope" {
                    continue;
                }
                let k = if path.ends_with("/bins") || path.ends_with("/percentile") {
                    "*"
                } else {
                    k
                };
                key_types(x, &format!("{path}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_types(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// fio's part of json+ keeps its keys, their order and their types: the
/// typed result model generates it, and consumers of fio's JSON depend on
/// them. (The list matches the JSON dioscope wrote before the model.)
#[test]
fn fio_part_keys_order_and_types_are_pinned() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=j",
            "--ioengine=null",
            "--rw=randrw",
            "--size=1m",
            "--output-format=json+",
        ],
    );
    let mut got = Vec::new();
    key_types(&json(&o), "", &mut got);
    let want: Vec<&str> = include_str!("fio_json_plus_keys.txt").lines().collect();
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
}

/// fio 3.36+'s per-job `job_start` (ms since the epoch), `"global options"`
/// when `[global]` sets any, one entry per clone without group_reporting
/// (one with it), and `desc`.
#[test]
fn job_start_global_options_clones_and_desc() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("g.fio");
    std::fs::write(
        &f,
        "[global]\nioengine=null\nsize=1m\n[a]\nnumjobs=3\ndescription=three clones\n\
         [b]\nnumjobs=2\ngroup_reporting\n",
    )
    .unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let o = run_in(d.path(), &[f.to_str().unwrap(), "--output-format=json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let g = &j["global options"];
    assert_eq!(g["ioengine"], "null", "{g}");
    assert_eq!(g["size"], "1m", "{g}");
    let jobs = j["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs
        .iter()
        .map(|x| x["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["a", "a", "a", "b"],
        "fio writes one entry per clone"
    );
    for x in jobs {
        let start = x["job_start"].as_u64().unwrap();
        assert!(start >= before && start <= j["timestamp_ms"].as_u64().unwrap());
        // Each clone's own I/O: 1 MiB each, not the sum.
        assert_eq!(
            x["read"]["io_bytes"],
            if x["jobname"] == "a" {
                1 << 20
            } else {
                2 << 20
            }
        );
    }
    assert_eq!(jobs[0]["desc"], "three clones");
    assert!(jobs[3].get("desc").is_none());
    // The clones still read back and render.
    let doc = dioscope_core::results::RunDoc::from_json(&stdout(&o)).unwrap();
    assert_eq!(doc.jobs.len(), 4);
    // One job given on the command line: no "global options".
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--output-format=json",
        ],
    );
    assert!(json(&o).get("global options").is_none());
}
