//! `--status-interval`: fio's full report every interval, cumulative from
//! the start of measurement, before the final one (fio 3.33 prints the
//! same layout each time: one JSON object, the normal block, a terse line),
//! to stdout or into the `--output` file.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// A 3 s time_based random-read job on a scratch file in `dir`.
fn job(dir: &Path) -> Vec<String> {
    let f = dir.join("scratch");
    [
        "--name=s",
        &format!("--filename={}", f.display()),
        "--size=16m",
        "--rw=randread",
        "--direct=1",
        "--ioengine=psync",
        "--time_based=1",
        "--runtime=3s",
        "--status-interval=1s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run(dir: &Path, a: &[String], extra: &[&str]) -> std::process::Output {
    let mut args: Vec<&str> = a.iter().map(String::as_str).collect();
    args.extend_from_slice(extra);
    let o = run_in(dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// One JSON object after another, each parsed on its own.
fn objects(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("not a stream of JSON objects ({e}): {text}"))
}

#[test]
fn json_prints_a_full_fio_object_each_interval_then_the_final_one() {
    let d = tempfile::tempdir().unwrap();
    let o = run(d.path(), &job(d.path()), &["--output-format=json"]);
    let docs = objects(&stdout(&o));
    let (last, interim) = docs.split_last().unwrap();
    assert!(interim.len() >= 2, "{} interim reports", interim.len());
    let mut prev = (0, 0);
    for v in interim {
        let r = &v["jobs"][0]["read"];
        let (ios, ms) = (
            r["total_ios"].as_u64().unwrap(),
            r["runtime"].as_u64().unwrap(),
        );
        assert!(r["iops"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            r["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0,
            "{r}"
        );
        assert_eq!(r["clat_ns"]["N"].as_u64(), Some(ios), "{r}");
        assert!(
            v["fio version"].is_string() && v["jobs"][0]["jobname"] == "s",
            "{v}"
        );
        // Cumulative from the start of measurement: only ever more.
        assert!(ios > prev.0 && ms > prev.1, "{r} after {prev:?}");
        assert!(ms < 3000, "an interim report is from before the end: {r}");
        prev = (ios, ms);
    }
    // The last object is the final report: the whole 3 s, at least as many I/Os.
    let r = &last["jobs"][0]["read"];
    assert!(r["runtime"].as_u64().unwrap() >= 2990, "{r}");
    assert!(r["total_ios"].as_u64().unwrap() >= prev.0, "{r}");
    assert!(
        last["dioscope"]["environment"]["kernel"] != Value::Null,
        "{last}"
    );
}

#[test]
fn normal_prints_the_job_blocks_each_interval_and_output_file_gets_them() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("result.txt");
    let o = run(
        d.path(),
        &job(d.path()),
        &[&format!("--output={}", out.display())],
    );
    // fio writes the interim reports where --output points, not on stdout.
    assert!(!stdout(&o).contains("read: IOPS="), "{}", stdout(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let blocks: Vec<usize> = text.match_indices("read: IOPS=").map(|(i, _)| i).collect();
    assert!(blocks.len() >= 3, "{text}");
    assert_eq!(
        text.matches("Run status group 0").count(),
        blocks.len(),
        "{text}"
    );
    // Their I/O counts (issued rwts: total=N) grow from one to the next.
    let totals: Vec<u64> = text
        .match_indices("issued rwts: total=")
        .map(|(i, m)| {
            let t = &text[i + m.len()..];
            t[..t.find(',').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(totals.len(), blocks.len(), "{text}");
    assert!(totals.windows(2).all(|w| w[0] < w[1]), "{totals:?}");
}

#[test]
fn clones_reported_apart_are_apart_in_each_interim_report() {
    let d = tempfile::tempdir().unwrap();
    let a: Vec<String> = [
        "--name=c",
        "--ioengine=null",
        "--rw=randread",
        "--size=1g",
        "--numjobs=2",
        "--time_based=1",
        "--runtime=1500ms",
        "--status-interval=500ms",
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let o = run(d.path(), &a, &[]);
    let docs = objects(&stdout(&o));
    assert!(docs.len() >= 3, "{} reports", docs.len());
    for v in &docs {
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2, "{v}");
        for j in jobs {
            assert!(j["read"]["total_ios"].as_u64().unwrap() > 0, "{j}");
        }
    }
}

#[test]
fn a_bad_interval_is_refused_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=s",
            "--ioengine=null",
            "--size=1m",
            "--status-interval=x",
        ],
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--status-interval=x"), "{e}");
}
