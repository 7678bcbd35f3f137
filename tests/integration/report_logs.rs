//! fio's log family, read back as fio's tools read it: line format, one
//! line per measured I/O (or per window and direction), file names, and
//! fio2gnuplot / fio_generate_plots from Debian's fio package drawing them.

use crate::common::*;
use std::path::Path;

fn lines(p: &Path) -> Vec<Vec<u64>> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| {
            l.split(", ")
                .map(|x| {
                    x.parse()
                        .unwrap_or_else(|_| panic!("{l:?}: not fio's log format"))
                })
                .collect()
        })
        .collect()
}

fn run_json_file(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["--output-format=json", "--output=r.json"]);
    let o = run_in(dir, &a);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&std::fs::read(dir.join("r.json")).unwrap()).unwrap()
}

#[test]
fn one_line_per_measured_io_in_fio_format() {
    let d = tempfile::tempdir().unwrap();
    let j = run_json_file(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--rw=randrw",
            "--bs=4k",
            "--size=64m",
            "--trials=2",
            "--write_iops_log=x",
            "--write_lat_log=x",
            "--write_bw_log=x",
            "--log_offset=1",
        ],
    );
    // Trial 1 under fio's name, trial 2 with .t2.
    for t in ["", ".t2"] {
        for kind in ["iops", "bw", "slat", "clat", "lat"] {
            assert!(
                d.path().join(format!("x_{kind}.1{t}.log")).exists(),
                "{kind}{t}"
            );
        }
    }
    let ios = j["jobs"][0]["read"]["total_ios"].as_u64().unwrap()
        + j["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
    let mut n = 0;
    for t in ["", ".t2"] {
        let iops = lines(&d.path().join(format!("x_iops.1{t}.log")));
        let clat = lines(&d.path().join(format!("x_clat.1{t}.log")));
        assert_eq!(iops.len(), clat.len());
        n += iops.len() as u64;
        for (a, c) in iops.iter().zip(&clat) {
            // time, value, direction, bs, offset, prio
            assert_eq!(a.len(), 6, "{a:?}");
            assert_eq!(a[1], 1, "one I/O per line");
            assert!(a[2] <= 1 && a[3] == 4096, "{a:?}");
            assert!(a[4] % 4096 == 0 && a[4] < 64 << 20, "offset {a:?}");
            assert_eq!(
                (a[0], a[2], a[4]),
                (c[0], c[2], c[4]),
                "same I/O in both logs"
            );
        }
        // Time never runs backwards within a worker's log.
        assert!(iops.windows(2).all(|w| w[0][0] <= w[1][0]));
    }
    assert_eq!(n, ios, "every measured I/O of both trials, once");
}

#[test]
fn windowed_logs_average_per_direction_and_shared_files() {
    let d = tempfile::tempdir().unwrap();
    let j = run_json_file(
        d.path(),
        &[
            "--name=w",
            "--ioengine=null",
            "--rw=randrw",
            "--bs=4k",
            "--size=1g",
            "--time_based",
            "--runtime=2s",
            "--trials=1",
            "--write_iops_log=w",
            "--write_bw_log=w",
            "--log_avg_msec=250",
        ],
    );
    let iops = lines(&d.path().join("w_iops.1.log"));
    // 8 windows of 250 ms, one line per direction each.
    assert!((14..=18).contains(&iops.len()), "{} lines", iops.len());
    for l in &iops {
        assert_eq!(l.len(), 5, "time, value, direction, bs 0, prio: {l:?}");
        assert_eq!(l[0] % 250, 0, "window ends: {l:?}");
        assert_eq!(l[3], 0, "windowed logs have bs 0");
    }
    let mean: f64 = iops
        .iter()
        .filter(|l| l[2] == 0)
        .map(|l| l[1] as f64)
        .sum::<f64>()
        / iops.iter().filter(|l| l[2] == 0).count() as f64;
    let want = j["jobs"][0]["read"]["iops"].as_f64().unwrap();
    assert!(
        (mean / want - 1.0).abs() < 0.25,
        "log mean {mean} vs result {want}"
    );
    // per_job_logs=0: the clones of a job append to one file.
    let d2 = tempfile::tempdir().unwrap();
    let j = run_json_file(
        d2.path(),
        &[
            "--name=s",
            "--ioengine=null",
            "--rw=read",
            "--size=8m",
            "--numjobs=2",
            "--trials=1",
            "--write_iops_log=s",
            "--per_job_logs=0",
        ],
    );
    let ios: u64 = j["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["read"]["total_ios"].as_u64().unwrap())
        .sum();
    assert_eq!(lines(&d2.path().join("s_iops.log")).len() as u64, ios);
}

#[test]
fn fio_plotting_tools_read_our_logs() {
    if !can_run(
        "fio2gnuplot, fio_generate_plots and gnuplot",
        have_tool("fio2gnuplot") && have_tool("fio_generate_plots") && have_tool("gnuplot"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    run_json_file(
        d.path(),
        &[
            "--name=p",
            "--ioengine=null",
            "--rw=randread",
            "--size=1g",
            "--time_based",
            "--runtime=2s",
            "--trials=1",
            "--write_bw_log=p",
            "--write_iops_log=p",
            "--write_lat_log=p",
            "--log_avg_msec=100",
            // fio logs no submission latency for an I/O done when
            // submitted (null at iodepth 1): queue some, for a slat chart.
            "--iodepth=4",
        ],
    );
    let sh = |cmd: &str| {
        let mut c = std::process::Command::new("sh");
        c.current_dir(d.path()).arg("-c").arg(cmd);
        let o = output_within(c, std::time::Duration::from_secs(120));
        assert!(o.status.success(), "{cmd}: {}{}", stdout(&o), stderr(&o));
        stdout(&o)
    };
    sh("mkdir -p g && fio2gnuplot -p 'p_bw*.log' -g -d g");
    let png = d.path().join("g/p_bw.1-2Draw.png");
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 5000, "fio2gnuplot drew nothing ({size} bytes)");
    // Its statistics over the files (min/max/average charts) parse too.
    let out = sh("mkdir -p g2 && fio2gnuplot -p 'p_iops*.log' -g -d g2");
    assert!(!out.contains("Traceback"), "{out}");
    assert!(d.path().join("g2/p_iops.average.png").exists(), "{out}");
    sh("fio_generate_plots dioscope");
    for kind in ["bw", "iops", "lat", "clat", "slat"] {
        let svg = std::fs::read_to_string(d.path().join(format!("dioscope-{kind}.svg")))
            .unwrap_or_else(|e| panic!("fio_generate_plots made no {kind} chart: {e}"));
        // gnuplot draws the data as a path with many points.
        assert!(
            svg.matches(" L").count() + svg.matches("L ").count() > 5,
            "{kind}: no data drawn"
        );
    }
}

/// `fiologparser_hist.py` from Debian's fio package, unpacked into `dir`;
/// `None` (a skip, a failure in CI) when it or pandas/numpy is missing.
fn hist_parser(dir: &Path) -> Option<std::path::PathBuf> {
    let gz = Path::new("/usr/share/doc/fio/fiologparser_hist.py.gz");
    let pandas = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import pandas, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !can_run(
        "fio's fiologparser_hist.py with python3-pandas and python3-numpy",
        gz.exists() && pandas,
    ) {
        return None;
    }
    let out = dir.join("fiologparser_hist.py");
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(format!("gzip -dc {} > {}", gz.display(), out.display()));
    assert!(output_within(c, std::time::Duration::from_secs(30))
        .status
        .success());
    Some(out)
}

#[test]
fn fio_reads_our_histogram_logs_with_our_percentiles() {
    let d = tempfile::tempdir().unwrap();
    let Some(parser) = hist_parser(d.path()) else {
        return;
    };
    for coarseness in [0u32, 2] {
        let dir = d.path().join(format!("c{coarseness}"));
        std::fs::create_dir(&dir).unwrap();
        let j = run_json_file(
            &dir,
            &[
                "--name=h",
                "--ioengine=null",
                "--rw=randrw",
                "--bs=4k",
                "--size=1g",
                "--time_based",
                "--runtime=2500ms",
                "--trials=1",
                "--write_hist_log=h",
                "--log_hist_msec=1000",
                &format!("--log_hist_coarseness={coarseness}"),
                // Offsets are not part of fio's histogram lines.
                "--log_offset=1",
            ],
        );
        let log = dir.join("h_clat_hist.1.log");
        let rows = lines(&log);
        // Windows of 1 s per direction, and the last partial one.
        assert!((4..=8).contains(&rows.len()), "{} lines", rows.len());
        for r in &rows {
            assert_eq!(r.len(), 3 + (1856 >> coarseness), "time, dir, bs, bins");
            assert!(r[1] <= 1 && r[2] == 4096, "{:?}", &r[..3]);
        }
        // fio's own parser: one interval over the whole run, per direction.
        let mut c = std::process::Command::new("/usr/bin/python3");
        c.current_dir(&dir).args([
            parser.to_str().unwrap(),
            "--noweight",
            "-i",
            "1000000",
            "--directions",
            "rw",
            "--percentiles",
            "50:99",
            "h_clat_hist.1.log",
        ]);
        let o = output_within(c, std::time::Duration::from_secs(120));
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        // end-time, dir, samples, min, avg, median, 50%, 99%, max
        for (dir_name, key) in [("r", "read"), ("w", "write")] {
            let row: Vec<f64> = out
                .lines()
                .find(|l| l.split(", ").nth(1) == Some(dir_name))
                .unwrap_or_else(|| panic!("no {dir_name} row: {out}"))
                .split(", ")
                .filter_map(|x| x.parse().ok())
                .collect();
            let ours = &j["jobs"][0][key];
            assert_eq!(
                row[1] as u64,
                ours["total_ios"].as_u64().unwrap(),
                "every measured I/O in the histograms: {out}"
            );
            for (col, p) in [(4, "50.000000"), (6, "99.000000")] {
                let want = ours["clat_ns"]["percentile"][p].as_f64().unwrap();
                // fio's bins are at most 1/64 of their value wide, summed
                // 2^coarseness at a time; the parser interpolates within a
                // bin. Allow two (coarse) bins and 1 ns.
                let tol = 2.0 * (want / 64.0).max(1.0) * (1u32 << coarseness) as f64 + 1.0;
                assert!(
                    (row[col] - want).abs() <= tol,
                    "{key} p{p} at coarseness {coarseness}: fio's parser {} vs ours {want} (± {tol}): {out}",
                    row[col]
                );
            }
        }
    }
}

#[test]
fn prio_epoch_and_store_compressed_follow_fio() {
    let d = tempfile::tempdir().unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    run_json_file(
        d.path(),
        &[
            "--name=e",
            "--ioengine=null",
            "--rw=read",
            "--size=4m",
            "--trials=1",
            "--write_lat_log=e",
            "--log_prio=1",
            "--log_unix_epoch=1",
            // fio's in-memory options: accepted, the text logs are the same.
            "--log_compression=1m",
            "--log_entries=4096",
        ],
    );
    let text = std::fs::read_to_string(d.path().join("e_clat.1.log")).unwrap();
    for l in text.lines() {
        let f: Vec<&str> = l.split(", ").collect();
        assert_eq!(f.len(), 5, "{l}");
        assert_eq!(f[4], "0x0000", "log_prio: fio's hex priority value: {l}");
        let t: u64 = f[0].parse().unwrap();
        assert!(
            t >= before && t < before + 60_000,
            "log_unix_epoch: {t} is not Unix ms near {before}"
        );
    }
    let o = run_in(
        d.path(),
        &[
            "--name=z",
            "--ioengine=null",
            "--size=4m",
            "--write_iops_log=z",
            "--log_store_compressed=1",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("log_store_compressed") && e.contains("inflate-log"),
        "{e}"
    );
}

/// Files named `*.log` in `dir` with their line counts, sorted.
fn log_line_counts(dir: &Path) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.ends_with(".log").then(|| {
                let n = std::fs::read_to_string(dir.join(&name))
                    .unwrap()
                    .lines()
                    .count();
                (name, n)
            })
        })
        .collect();
    v.sort();
    v
}

/// What fio's plotting tools make of the logs in `dir`: fio2gnuplot's
/// files for the bandwidth and IOPS logs, its count of input files
/// (series) and of values (`fio2gnuplot`: only for windowed logs, whose
/// values do not depend on how fast each tool ran); fio_generate_plots'
/// charts and the series each draws.
fn plots_of(dir: &Path, fio2gnuplot: bool) -> Vec<String> {
    let sh = |cmd: &str| {
        let mut c = std::process::Command::new("sh");
        c.current_dir(dir).arg("-c").arg(cmd);
        let o = output_within(c, std::time::Duration::from_secs(120));
        assert!(o.status.success(), "{cmd}: {}{}", stdout(&o), stderr(&o));
    };
    let mut out = Vec::new();
    for (flag, kind) in [("-b", "bw"), ("-i", "iops")]
        .into_iter()
        .filter(|_| fio2gnuplot)
    {
        let g = format!("g-{kind}");
        sh(&format!(
            "mkdir -p {g} && fio2gnuplot {flag} -g -k -d {g} >/dev/null"
        ));
        let mut files: Vec<String> = std::fs::read_dir(dir.join(&g))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let series = files
            .iter()
            .filter(|f| f.starts_with("gnuplot_temp_file"))
            .count();
        let global =
            std::fs::read_to_string(dir.join(&g).join("result.global")).unwrap_or_default();
        let values = global
            .lines()
            .find(|l| l.starts_with("values_count="))
            .unwrap_or("no values_count")
            .to_string();
        out.push(format!(
            "fio2gnuplot {kind}: {files:?}, {series} series, {values}"
        ));
    }
    sh("fio_generate_plots t >/dev/null 2>&1");
    let mut svgs: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    svgs.sort();
    for s in svgs {
        let text = std::fs::read_to_string(dir.join(&s)).unwrap();
        let mut ids: Vec<&str> = text
            .match_indices("id=\"gnuplot_plot_")
            .map(|(i, _)| {
                let rest = &text[i + 4..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        out.push(format!("fio_generate_plots {s}: {} series", ids.len()));
    }
    out
}

/// With `write_hist_log`, every other log keeps fio's line count (it got
/// the histogram's per-I/O records appended after its windows), and fio's
/// plotting tools make the same files and series of dioscope's logs as of
/// fio 3.33's for the same job: windowed (`log_avg_msec`, time based) and
/// per I/O (by size).
#[test]
fn with_a_histogram_log_the_other_logs_have_fios_lines_and_plots() {
    if !can_run(
        "fio, fio2gnuplot, fio_generate_plots and gnuplot",
        have_tool("fio")
            && have_tool("fio2gnuplot")
            && have_tool("fio_generate_plots")
            && have_tool("gnuplot"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("small.dat");
    std::fs::write(&data, vec![7u8; 16 << 20]).unwrap();
    let job = format!(
        "--name=b --filename={} --rw=randread --bs=4k --write_bw_log=b --write_iops_log=b \
         --write_lat_log=b --write_hist_log=b",
        data.display()
    );
    for (case, extra) in [
        (
            "windowed",
            "--size=16m --log_avg_msec=500 --runtime=3 --time_based",
        ),
        ("per-io", "--size=4m"),
    ] {
        let mut seen = Vec::new();
        for (tool, cmd) in [
            ("fio", format!("fio {job} {extra} --output=out.txt")),
            (
                "dio",
                format!("{} {job} {extra} --trials=1 --output=out.txt", bin()),
            ),
        ] {
            let dir = d.path().join(format!("{case}-{tool}"));
            std::fs::create_dir(&dir).unwrap();
            let mut c = std::process::Command::new("sh");
            c.current_dir(&dir).arg("-c").arg(&cmd);
            let o = output_within(c, std::time::Duration::from_secs(120));
            assert!(o.status.success(), "{cmd}: {}", stderr(&o));
            seen.push((log_line_counts(&dir), plots_of(&dir, case == "windowed")));
        }
        assert_eq!(seen[1].0, seen[0].0, "{case}: log lines, dioscope vs fio");
        assert_eq!(seen[1].1, seen[0].1, "{case}: plots, dioscope vs fio");
    }
}
