//! `dioscope report` and `--report`/`--output-format=html`: one
//! self-contained file with the expected charts, from dioscope's results,
//! fio's own JSON (json and json+), and two results side by side.
//! (Opening the page in a browser is tests/heavy_report.)

use crate::common::*;
use std::path::Path;

/// A short null-engine run with a ramp and 3 trials, written as `fmt`.
fn null_run(dir: &Path, out: &str, fmt: &str, extra: &[&str]) {
    let mut args = vec![
        "--name=mix",
        "--ioengine=null",
        "--rw=randrw",
        "--bs=4k",
        "--size=1g",
        "--time_based",
        "--runtime=2s",
        "--ramp_time=1s",
        "--trials=3",
    ];
    let o1 = format!("--output-format={fmt}");
    let o2 = format!("--output={out}");
    args.push(&o1);
    args.push(&o2);
    args.extend_from_slice(extra);
    let o = run_in(dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Checks every report must pass: one file, no network, small, the charts
/// named in `ids` present as SVG.
pub fn check_page(html: &str, ids: &[&str]) {
    assert!(html.starts_with("<!DOCTYPE html>"), "not a page");
    assert!(
        html.len() < 500 * 1024,
        "{} bytes: not a few hundred KB",
        html.len()
    );
    for bad in [
        "<script src",
        "<link",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(bad), "the page loads something ({bad})");
    }
    for id in ids {
        assert!(
            html.contains(&format!("<svg id=\"{id}\"")),
            "chart {id} missing"
        );
    }
    // Accessible: every chart has a title and a description.
    let charts = html.matches("<svg id=").count();
    assert_eq!(charts, html.matches("role=\"img\"").count());
    assert_eq!(charts, html.matches("<desc id=").count());
}

const RUN_CHARTS: &[&str] = &[
    "r1-iops-0",
    "r1-bw-0",
    "r1-latt-0",
    "r1-pct-0",
    "r1-spread-iops",
    "r1-spread-bw",
    "r1-spread-lat",
    "r1-spread-p99",
    "r1-cpu-chart",
];

#[test]
fn report_of_a_run_has_every_section() {
    let d = tempfile::tempdir().unwrap();
    null_run(d.path(), "r.json", "json+", &[]);
    let o = run_in(d.path(), &["report", "r.json", "-o", "r.html"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(d.path().join("r.html")).unwrap();
    let mut ids = RUN_CHARTS.to_vec();
    ids.extend(["r1-hist-0-read", "r1-hist-0-write"]);
    check_page(&html, &ids);
    for section in [
        "r1-summary-table",
        "r1-findings",
        "r1-env-table",
        "r1-command",
    ] {
        assert!(
            html.contains(&format!("id=\"{section}\"")),
            "{section} missing"
        );
    }
    // The command line is the exact one, and the ramp is shaded.
    assert!(html.contains("--ramp_time=1s"));
    assert!(html.contains("ramp (not measured)"));
    // Three trials, each a line in the IOPS chart (read and write: 6).
    let iops = chart(&html, "r1-iops-0");
    assert_eq!(iops.matches("<polyline").count(), 6, "{iops}");
}

/// The SVG of chart `id` in `html`.
fn chart<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<svg id=\"{id}\"")).unwrap();
    let end = start + html[start..].find("</svg>").unwrap();
    &html[start..end]
}

#[test]
fn every_trial_has_its_time_series_in_the_result() {
    let d = tempfile::tempdir().unwrap();
    null_run(d.path(), "r.json", "json", &[]);
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("r.json")).unwrap()).unwrap();
    let series = j["dioscope"]["jobs"][0]["series"].as_array().unwrap();
    assert_eq!(series.len(), 3, "one series per trial");
    for s in series {
        assert_eq!(s["ramp_ms"], 1000.0);
        for dir in ["read", "write"] {
            let t = s["t_ms"].as_array().unwrap();
            // 1 s of ramp + 2 s measured: 3 intervals of about 1 s each, and
            // a short last one when the sampler wakes late (a loaded machine).
            assert!((3..=5).contains(&t.len()), "{dir}: {t:?}");
            let iops = s[dir]["iops"].as_array().unwrap();
            assert!(iops.iter().all(|x| x.as_f64().unwrap() > 0.0), "{iops:?}");
            let p99 = s[dir]["lat_p99_ns"].as_array().unwrap();
            let p50 = s[dir]["lat_p50_ns"].as_array().unwrap();
            for (a, b) in p50.iter().zip(p99) {
                assert!(a.as_u64().unwrap() <= b.as_u64().unwrap());
            }
        }
    }
    // fio's per-interval statistics use every trial's measured intervals.
    let samples = j["jobs"][0]["read"]["iops_samples"].as_u64().unwrap();
    assert!(samples >= 6, "{samples} samples over 3 trials of 2 s");
}

#[test]
fn run_writes_its_report_and_html_is_an_output_format() {
    let d = tempfile::tempdir().unwrap();
    null_run(d.path(), "r.json", "json", &["--report=rep.html"]);
    let html = std::fs::read_to_string(d.path().join("rep.html")).unwrap();
    let mut ids = RUN_CHARTS.to_vec();
    // In-memory results keep the histogram bins.
    ids.push("r1-hist-0-read");
    check_page(&html, &ids);
    null_run(d.path(), "r.html", "html", &[]);
    check_page(
        &std::fs::read_to_string(d.path().join("r.html")).unwrap(),
        RUN_CHARTS,
    );
}

#[test]
fn report_of_fio_json_and_json_plus() {
    if !can_run("fio", have_tool("fio")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for fmt in ["json", "json+"] {
        let o = output_within(
            {
                let mut c = std::process::Command::new("fio");
                c.current_dir(d.path()).args([
                    "--name=f",
                    "--ioengine=null",
                    "--rw=randread",
                    "--size=64m",
                    &format!("--output-format={fmt}"),
                    "--output=fio.json",
                ]);
                c
            },
            std::time::Duration::from_secs(60),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let o = run_in(d.path(), &["report", "fio.json", "-o", "f.html"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let html = std::fs::read_to_string(d.path().join("f.html")).unwrap();
        let mut ids = vec!["r1-pct-0", "r1-cpu-chart"];
        if fmt == "json+" {
            ids.push("r1-hist-0-read");
        }
        check_page(&html, &ids);
        assert!(html.contains("fio&#39;s JSON"), "labelled as fio's");
        assert!(html.contains("fio-3"), "fio's version shown");
    }
}

#[test]
fn two_results_side_by_side_with_deltas() {
    let d = tempfile::tempdir().unwrap();
    null_run(d.path(), "a.json", "json", &[]);
    null_run(d.path(), "b.json", "json", &[]);
    let o = run_in(d.path(), &["report", "a.json", "b.json", "-o", "ab.html"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(d.path().join("ab.html")).unwrap();
    let mut ids = RUN_CHARTS.to_vec();
    ids.extend(["r2-iops-0", "r2-pct-0", "compare-iops"]);
    check_page(&html, &ids);
    assert!(html.contains("id=\"compare-table\""));
    // B against A as compare judges it: 3 trials a side have no 95 %
    // interval (the U test's smallest p is 0.1), so the change is shown
    // without one, and "too few trials".
    assert!(
        html.contains("id=\"cmp-r2-table-0\""),
        "no comparison of B with A"
    );
    assert!(html.contains("too few trials"), "3 against 3 is too few");
}

#[test]
fn bad_inputs_are_refused_with_a_fix() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("x.json"), "{\"not\": \"a result\"}").unwrap();
    for (args, says) in [
        (vec!["report"], "no result given"),
        (vec!["report", "missing.json"], "cannot read missing.json"),
        (vec!["report", "x.json", "-o", "o.html"], "not a result"),
        (vec!["report", "x.json", "--frobnicate"], "unknown option"),
    ] {
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!d.path().join("o.html").exists(), "nothing written");
    }
}

#[test]
fn compare_and_sweep_results_render() {
    let d = tempfile::tempdir().unwrap();
    null_run(d.path(), "a.json", "json", &[]);
    null_run(d.path(), "b.json", "json", &[]);
    let o = run_in(
        d.path(),
        &["compare", "a.json", "b.json", "--output-format=json"],
    );
    std::fs::write(d.path().join("cmp.json"), &o.stdout).unwrap();
    std::fs::write(
        d.path().join("j.fio"),
        "[j]\nioengine=null\nrw=randread\nsize=1g\ntime_based\nruntime=1s\n",
    )
    .unwrap();
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "j.fio",
            "--vary",
            "iodepth=1|8",
            "--vary",
            "bs=4k|64k",
            "--trials=2",
            "--output=sw.json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_in(d.path(), &["report", "cmp.json", "sw.json", "-o", "x.html"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(d.path().join("x.html")).unwrap();
    check_page(
        &html,
        &[
            "cmp-change-0",
            "sweep-iops",
            "sweep-bw",
            "sweep-lat_p99",
            "sweep-cpu_us_per_io",
        ],
    );
    assert!(html.contains("id=\"cmp-outcome\"") && html.contains("id=\"sweep-table\""));
    // One line per bs value, with CI bars at each iodepth.
    let sw = &html[html.find("<svg id=\"sweep-iops\"").unwrap()..];
    let sw = &sw[..sw.find("</svg>").unwrap()];
    assert_eq!(sw.matches("<polyline").count(), 2, "{sw}");
    assert!(sw.contains("bs=64k"));
}
