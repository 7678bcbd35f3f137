//! Honest verdicts end to end (issue 26): `compare --run` of identical
//! sides (A/A) on a zram device of the test's own does not call a
//! regression more often than its error rate allows, and a planted −30 %
//! (B held at 70 % of A's IOPS by `rate_iops`, A free) is found; `report`
//! of two results shows the changes and intervals `compare` prints.

use crate::common::*;
use std::path::Path;

fn job(dir: &Path, name: &str, dev: &str, extra: &str) {
    std::fs::write(
        dir.join(name),
        format!(
            "[rr]\nfilename={dev}\nrw=randread\nbs=4k\nioengine=psync\ndirect=1\n\
             size=32m\nruntime=1\ntime_based\n{extra}"
        ),
    )
    .unwrap();
}

fn outcome(o: &std::process::Output) -> String {
    format!("exit {:?}\n{}\n{}", o.status.code(), stdout(o), stderr(o))
}

/// 3 A/A and 1 planted −30 % with `compare --run` on zram, 1 s trials and
/// at most 8 per side: about two minutes. The sequential design keeps the
/// family's false "regression" at 2.5 %, so 2 or 3 exit-1s in 3 A/A runs
/// (a chance below 0.2 % if the design holds) fail the test.
#[test]
fn compare_run_a_a_keeps_quiet_and_finds_a_planted_slowdown_on_zram() {
    let ok = is_root() && Path::new("/sys/class/zram-control/hot_add").exists();
    if !can_run("root and zram", ok) {
        return;
    }
    let z = Zram::new(32 << 20).expect("zram hot_add and disksize");
    let dev = z.dev();
    let d = tempfile::tempdir().unwrap();
    // Written once, so reads measure compressed pages, not empty ones.
    sh(
        "sh",
        &["-c", &format!("head -c {} /dev/urandom > {dev}", 32 << 20)],
    );
    job(d.path(), "a.fio", &dev, "");
    job(d.path(), "b.fio", &dev, "");
    let mut false_alarms = 0;
    for i in 0..3 {
        let o = run_in(
            d.path(),
            &[
                "compare",
                "--run",
                "a.fio",
                "b.fio",
                "--max-trials=8",
                "--output-format=json",
            ],
        );
        let code = o.status.code();
        assert!(
            matches!(code, Some(0) | Some(1) | Some(4)),
            "A/A {i}: {}",
            outcome(&o)
        );
        let v = json(&o);
        let iops = &v["jobs"][0]["metrics"][0];
        // Every trial's value is kept, and the verdict is the interval's.
        let n = v["a"]["trials"].as_u64().unwrap() as usize;
        assert_eq!(iops["values_a"].as_array().unwrap().len(), n, "{iops}");
        if code == Some(1) {
            false_alarms += 1;
            eprintln!("A/A {i}: exit 1 (allowed once): {}", outcome(&o));
        }
    }
    assert!(
        false_alarms <= 1,
        "{false_alarms} of 3 A/A runs said regression"
    );

    // A's free IOPS, then B held at 70 % of them.
    let o = run_in(d.path(), &["a.fio", "--trials=3", "--output-format=json"]);
    assert_eq!(o.status.code(), Some(0), "{}", outcome(&o));
    let v = json(&o);
    let mut xs: Vec<f64> = v["dioscope"]["jobs"][0]["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["iops"].as_f64().unwrap())
        .collect();
    xs.sort_by(f64::total_cmp);
    let rate = (0.7 * xs[1]).round() as u64;
    job(d.path(), "b.fio", &dev, &format!("rate_iops={rate}\n"));
    let o = run_in(
        d.path(),
        &[
            "compare",
            "--run",
            "a.fio",
            "b.fio",
            "--expect-different=rate_iops",
            "--max-trials=8",
            "--output-format=json",
        ],
    );
    let v = json(&o);
    let iops = &v["jobs"][0]["metrics"][0];
    assert_eq!(iops["verdict"], "worse", "{}", outcome(&o));
    // Exit 1, or 4 when the environment differed between the sides (then
    // it must name what).
    regression_or_confounded(&o, &v, &outcome(&o));
    let (lo, hi) = (
        iops["ci_pct"][0].as_f64().unwrap(),
        iops["ci_pct"][1].as_f64().unwrap(),
    );
    // B is held at 70 % of A's IOPS when it was calibrated; A itself moves
    // with the machine's load between calibration and comparison (−46 %
    // was seen on a busy machine), so the far bound is loose.
    assert!(lo < -20.0 && hi < -2.0 && hi > -60.0, "{iops}");
}

/// `report A.json B.json` judges B against A with compare's own function:
/// the same change, interval and verdict as `compare A.json B.json`.
#[test]
fn report_shows_the_changes_and_intervals_of_compare() {
    let d = tempfile::tempdir().unwrap();
    for (name, rate) in [("a.json", "2000"), ("b.json", "1500")] {
        let o = run_in(
            d.path(),
            &[
                "--name=steady",
                "--ioengine=null",
                "--size=16m",
                &format!("--rate_iops={rate}"),
                "--runtime=200ms",
                "--time_based",
                "--trials=5",
                "--output-format=json",
                &format!("--output={name}"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", outcome(&o));
    }
    let o = run_in(
        d.path(),
        &["compare", "a.json", "b.json", "--allow-different"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", outcome(&o));
    let text = stdout(&o);
    let o = run_in(
        d.path(),
        &[
            "compare",
            "a.json",
            "b.json",
            "--allow-different",
            "--output-format=json",
        ],
    );
    let v = json(&o);
    let o = run_in(d.path(), &["report", "a.json", "b.json", "-o", "r.html"]);
    assert_eq!(o.status.code(), Some(0), "{}", outcome(&o));
    let html = std::fs::read_to_string(d.path().join("r.html")).unwrap();
    assert!(
        html.contains("id=\"cmp-r2-table-0\""),
        "no comparison in the report"
    );
    let mut rows = 0;
    for m in v["jobs"][0]["metrics"].as_array().unwrap() {
        let (Some(ch), Some(ci)) = (m["change_pct"].as_f64(), m["ci_pct"].as_array()) else {
            continue;
        };
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        let interval = format!("[{lo:+.1}, {hi:+.1}] %");
        let change = format!("{ch:+.1} %");
        // compare's own text shows them; the report shows the same.
        assert!(
            text.contains(&interval) && text.contains(&change),
            "{interval} {text}"
        );
        assert!(
            html.contains(&interval),
            "report lacks {interval} of {}",
            m["metric"]
        );
        assert!(
            html.contains(&change),
            "report lacks {change} of {}",
            m["metric"]
        );
        rows += 1;
    }
    assert!(rows >= 2, "{v}");
    let iops = &v["jobs"][0]["metrics"][0];
    assert_eq!(iops["verdict"], "worse", "{iops}");
    assert!(html.contains("REGRESSION"), "the report's verdict");
    // Welch's interval is gone from the report.
    assert!(!html.contains("Welch"));
}
