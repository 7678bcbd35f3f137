//! fio 3.42's options: `iodepth_mode=stepped` (a load-latency curve in one
//! job) and `sprandom` (SanDisk pseudo-random preconditioning).

use crate::common::*;
use std::path::Path;

fn run_file(dir: &Path, job: &str, extra: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let mut args = vec!["run", "job.fio"];
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

fn ok_json(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    json(o)
}

fn refused(o: &std::process::Output, needles: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for n in needles {
        assert!(e.contains(n), "no '{n}' in: {e}");
    }
}

const STEPPED: &str = "[step]\nioengine=null\nrw=randread\nsize=1g\niodepth=12\n\
                       time_based=1\nruntime=60s\n\
                       iodepth_mode=stepped:50-150/50,100ms/250ms\n";

#[test]
fn stepped_steps_run_in_order_at_their_depths_and_only_runs_count() {
    let d = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    let v = ok_json(&run_file(d.path(), STEPPED, &["--output-format=json"]));
    // The job ends after its last step, not at its 60 s runtime: probe
    // (0.35 s) and three steps (0.35 s each).
    assert!(t0.elapsed().as_secs() < 30, "{:?}", t0.elapsed());
    let job = &v["jobs"][0];
    let st = &job["iodepth_steps"];
    assert_eq!(st["mode"], "stepped:50-150/50,0.1/0.25");
    let peak = st["peak_iops"]["read"].as_f64().unwrap();
    assert!(peak > 0.0, "{st}");
    let steps = st["steps"].as_array().unwrap();
    let col = |k: &str| -> Vec<u64> { steps.iter().map(|s| s[k].as_u64().unwrap()).collect() };
    assert_eq!(col("step"), [1, 2, 3]);
    assert_eq!(col("load_pct"), [50, 100, 150]);
    // HIGH (150 %) is iodepth=12: 100 % is depth 8, and under 100 % a rate.
    assert_eq!(col("depth"), [8, 8, 12]);
    let inflight = col("max_inflight");
    assert!(inflight[0] <= 8, "{inflight:?}");
    // Unthrottled on the null engine, each step fills its queue, and never
    // more: the depth of each step is what the worker had in flight.
    assert_eq!(&inflight[1..], [8, 12], "{st}");
    let rate = steps[0]["rate_iops"]["read"].as_f64().unwrap();
    assert!((rate - peak / 2.0).abs() <= 1.0, "rate {rate}, peak {peak}");
    assert_eq!(steps[1]["rate_iops"]["read"], 0);
    // The 50 % step is held to its rate (an upper bound, whatever the load).
    let iops0 = steps[0]["read"]["iops"].as_f64().unwrap();
    assert!(iops0 <= rate * 1.2 + 100.0, "{iops0} > rate {rate}");
    for s in steps {
        let ms = s["runtime_ms"].as_f64().unwrap();
        assert!((250.0..2000.0).contains(&ms), "{s}");
        assert!(s["read"]["total_ios"].as_u64().unwrap() > 0, "{s}");
        assert_eq!(s["write"]["total_ios"], 0);
    }
    // The job's totals are the runs' and nothing else: not the probe, not
    // the ramps, not what completed after the last run.
    let sum: u64 = steps
        .iter()
        .map(|s| s["read"]["total_ios"].as_u64().unwrap())
        .sum();
    assert_eq!(job["read"]["total_ios"].as_u64().unwrap(), sum, "{st}");
    let run_ms: f64 = steps
        .iter()
        .map(|s| s["runtime_ms"].as_f64().unwrap())
        .sum();
    let job_ms = job["job_runtime"].as_f64().unwrap();
    assert!(
        (job_ms - run_ms).abs() <= 2.0,
        "job {job_ms} ms, runs {run_ms} ms"
    );
}

#[test]
fn stepped_text_lists_each_step() {
    let d = tempfile::tempdir().unwrap();
    let o = run_file(
        d.path(),
        &STEPPED.replace("50-150/50,100ms/250ms", "100-200/100,50ms/100ms"),
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("iodepth steps (stepped:100-200/100"), "{out}");
    assert!(out.contains("step  1 load 100% depth   6"), "{out}");
    assert!(out.contains("step  2 load 200% depth  12"), "{out}");
}

#[test]
fn stepped_bad_forms_are_refused_naming_the_form() {
    let d = tempfile::tempdir().unwrap();
    for form in [
        "stepped",
        "stepped:10-130",
        "stepped:130-10/5",
        "stepped:10-130/5,5",
        "stepped:10-130/0,5/30",
        "steps:10-130/5",
    ] {
        let o = run_in(
            d.path(),
            &[
                "--name=x",
                "--ioengine=null",
                "--size=1m",
                &format!("--iodepth_mode={form}"),
            ],
        );
        refused(&o, &[form, "LOW-HIGH/INC"]);
    }
    // The steps set depth and rate: a latency target or a rate would fight them.
    for other in ["--latency_target=1ms", "--rate_iops=100"] {
        let o = run_in(
            d.path(),
            &[
                "--name=x",
                "--ioengine=null",
                "--size=1m",
                "--iodepth_mode=stepped:10-100/10",
                other,
            ],
        );
        refused(&o, &["iodepth_mode", other[2..].split('=').next().unwrap()]);
    }
}

/// The offsets and lengths of the writes a `write_iolog` recorded.
fn logged_writes(path: &Path) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let i = w.iter().position(|x| *x == "write")?;
            Some((w.get(i + 1)?.parse().ok()?, w.get(i + 2)?.parse().ok()?))
        })
        .collect()
}

const SPRANDOM: &str = "[global]\nioengine=psync\nrw=randwrite\nbs=4k\nblockalign=4k\n\
                        norandommap=1\n[pre]\nfilename=f\nsize=4m\nsprandom=1\nspr_op=0.2\n\
                        spr_num_regions=50\n";

#[test]
fn sprandom_writes_every_block_and_the_modelled_physical_size() {
    let d = tempfile::tempdir().unwrap();
    let v = ok_json(&run_file(
        d.path(),
        &format!("{SPRANDOM}write_iolog=a.log\n"),
        &["--output-format=json"],
    ));
    // 4 MiB × (1 + 0.2), rounded up to the block: fio's io_size.
    let physical = (4u64 << 20) + ((4u64 << 20) as f64 * 0.2).ceil() as u64;
    let physical = physical.div_ceil(4096) * 4096;
    assert_eq!(
        v["jobs"][0]["write"]["io_bytes"].as_u64().unwrap(),
        physical
    );
    let w = logged_writes(&d.path().join("a.log"));
    assert_eq!(w.len() as u64 * 4096, physical);
    let mut seen = vec![0u32; 1024];
    for (off, len) in &w {
        assert_eq!((off % 4096, *len), (0, 4096));
        seen[(off / 4096) as usize] += 1;
    }
    let never: Vec<usize> = (0..1024).filter(|&b| seen[b] == 0).collect();
    assert!(never.is_empty(), "blocks never written: {never:?}");
    // Not sequential, and the rewrites come from the earlier regions.
    assert!(w.windows(2).filter(|p| p[1].0 == p[0].0 + 4096).count() < w.len() / 10);
    // Same seed, same sequence; another seed, another.
    ok_json(&run_file(
        d.path(),
        &format!("{SPRANDOM}write_iolog=b.log\n"),
        &["--output-format=json"],
    ));
    assert_eq!(w, logged_writes(&d.path().join("b.log")));
    ok_json(&run_file(
        d.path(),
        &format!("{SPRANDOM}write_iolog=c.log\nrandseed=1234\n"),
        &["--output-format=json"],
    ));
    assert_ne!(w, logged_writes(&d.path().join("c.log")));
}

#[test]
fn sprandom_refuses_what_fio_refuses() {
    let d = tempfile::tempdir().unwrap();
    let base = "[global]\nioengine=psync\nbs=4k\n[pre]\nfilename=f\nsprandom=1\n";
    for (extra, needles) in [
        ("rw=randread\nsize=4m\n", &["rw=randwrite", "randread"][..]),
        ("rw=write\nsize=4m\n", &["rw=randwrite"][..]),
        (
            "rw=randwrite\nsize=4m\nrandom_generator=tausworthe\n",
            &["random_generator=tausworthe", "lfsr"][..],
        ),
        (
            "rw=randwrite\nsize=4m\nnorandommap=0\n",
            &["norandommap"][..],
        ),
        ("rw=randwrite\nsize=4m\nbs=3k\n", &["power-of-two"][..]),
        ("rw=randwrite\nsize=4m\nspr_op=1.5\n", &["spr_op=1.5"][..]),
        (
            "rw=randwrite\nsize=32m\nspr_op=0.1\nspr_num_regions=2000\nspr_cs=32k\n",
            &["spr_cs=32768", "spr_num_regions"][..],
        ),
        (
            "rw=randwrite\nsize=32m\nspr_op=0.1\nspr_num_regions=50\nspr_cs=32m\n",
            &["spr_cs="][..],
        ),
        (
            "rw=randwrite\nsize=64k\nspr_num_regions=100\n",
            &["spr_num_regions=100", "less than one block"][..],
        ),
    ] {
        let o = run_file(d.path(), &format!("{base}{extra}"), &[]);
        refused(&o, needles);
    }
    // What fio's t/sprandom.py accepts: lfsr, and a cache smaller than a region.
    let o = run_file(
        d.path(),
        &format!("{base}rw=randwrite\nsize=4m\nspr_op=0.1\nspr_num_regions=100\nspr_cs=32k\nrandom_generator=lfsr\n"),
        &["--output-format=json"],
    );
    let v = ok_json(&o);
    let physical = ((4u64 << 20) + ((4u64 << 20) as f64 * 0.1).ceil() as u64).div_ceil(4096) * 4096;
    assert_eq!(
        v["jobs"][0]["write"]["io_bytes"].as_u64().unwrap(),
        physical
    );
}
