//! fio 3.33's normal output, as scripts read it: dioscope's normal output
//! starts with fio's block per job, its run status groups and its disk
//! stats (crates/core/src/render/fio_text.rs, a fixed contract). Here fio
//! and dioscope run the same small jobs and their outputs are compared line
//! by line (labels, units, order; numbers masked), and the usual grep/awk
//! idioms read dioscope's text and must find the numbers of its own JSON.

use crate::common::*;
use std::path::Path;

/// A 16 MiB file in a fresh directory on the target's file system (O_DIRECT).
fn data_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(d.path().join("f.dat"), vec![0x5au8; 16 << 20]).unwrap();
    d
}

/// One number as masked: its digits (and decimals) become N, a 1024-based
/// byte unit NxiB, a 1000-based one NxB, fio's `k` of a count goes.
fn mask_numbers(l: &str) -> String {
    let c: Vec<char> = l.chars().collect();
    let (mut out, mut i) = (String::new(), 0);
    while i < c.len() {
        if !c[i].is_ascii_digit() {
            out.push(c[i]);
            i += 1;
            continue;
        }
        while i < c.len() && (c[i].is_ascii_digit() || c[i] == '.') {
            i += 1;
        }
        let at = |k: usize| c.get(i + k).copied().unwrap_or(' ');
        if "KMGTP".contains(at(0)) && at(1) == 'i' && at(2) == 'B' {
            out.push_str("NxiB");
            i += 3;
        } else if "kMGTP".contains(at(0)) && at(1) == 'B' {
            out.push_str("NxB");
            i += 2;
        } else if at(0) == 'B' {
            out.push_str("NxB");
            i += 1;
        } else {
            out.push('N');
            i += usize::from(at(0) == 'k');
        }
    }
    out
}

/// fio's part of a normal output (from the first job block to dioscope's
/// line after it), masked: pid and time, latency units (the rule that picks
/// them is checked on dioscope's own numbers below), numbers, padding; the
/// latency distribution's lines (their number depends on the values) are
/// one line.
fn masked(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let start = text
        .find(": (groupid=")
        .map(|i| text[..i].rfind('\n').map_or(0, |n| n + 1));
    let Some(start) = start else {
        return out;
    };
    for l in text[start..].lines() {
        if l.starts_with("dioscope: ") {
            break;
        }
        let mut l = match l.find("pid=") {
            Some(p) => format!("{}pid=P: TIME", &l[..p]),
            None => l.to_string(),
        };
        for (from, to) in [
            ("(nsec)", "(T)"),
            ("(usec)", "(T)"),
            ("(msec)", "(T)"),
            ("(  KiB/s)", "(XiB/s)"),
            ("(  MiB/s)", "(XiB/s)"),
        ] {
            l = l.replace(from, to);
        }
        let l = mask_numbers(&l);
        let indent = l.len() - l.trim_start().len();
        let body = l[indent..]
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>();
        let l = format!("{}{}", &l[..indent], body.join(" "))
            .replace("[ N]", "[N]")
            .replace("= N", "=N");
        let l = if l.starts_with("  lat (T) :") {
            "  lat (T) : DIST".to_string()
        } else {
            l
        };
        if out.last() != Some(&l) || !l.starts_with("  lat (T)") {
            out.push(l);
        }
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

fn fio_and_dioscope(dir: &Path, args: &[&str]) -> (String, String) {
    let mut c = std::process::Command::new("fio");
    c.args(args).current_dir(dir);
    let f = output_within(c, std::time::Duration::from_secs(60));
    assert!(f.status.success(), "fio {args:?}: {}", stderr(&f));
    let o = run_in(dir, args);
    assert!(o.status.success(), "dioscope {args:?}: {}", stderr(&o));
    (stdout(&f), stdout(&o))
}

const TWO_GROUPS: &str = "[global]\nfilename=f.dat\nsize=16m\nbs=64k\ndirect=1\n\
    runtime=1\ntime_based\n\
    [rd]\nrw=randread\nnumjobs=2\n\
    [wr]\nstonewall\ndescription=two writers merged\nrw=randwrite\nioengine=io_uring\n\
    iodepth=4\nnumjobs=2\ngroup_reporting\nclat_percentiles=0\n";

#[test]
fn normal_output_is_fios_block_line_for_line() {
    if !can_run("fio", have_tool("fio")) {
        return;
    }
    let d = data_dir();
    std::fs::write(d.path().join("two.fio"), TWO_GROUPS).unwrap();
    let base = [
        "--filename=f.dat",
        "--size=16m",
        "--direct=1",
        "--runtime=1",
        "--time_based",
    ];
    let cases: [&[&str]; 3] = [
        // Both directions, slat (io_uring), lat percentiles, a deep queue.
        &[
            "--name=mix",
            "--rw=randrw",
            "--ioengine=io_uring",
            "--iodepth=32",
            "--lat_percentiles=1",
        ],
        // psync (no slat), a rate, no total latency.
        &[
            "--name=paced",
            "--rw=randread",
            "--rate_iops=300",
            "--disable_lat=1",
            "--percentile_list=25:50:99.999",
        ],
        // Two groups; two jobs each, apart and merged; a description.
        &["two.fio"],
    ];
    for case in cases {
        let args: Vec<&str> = if case == ["two.fio"] {
            case.to_vec()
        } else {
            case.iter().chain(base.iter()).copied().collect()
        };
        let (fio, ours) = fio_and_dioscope(d.path(), &args);
        let (a, b) = (masked(&fio), masked(&ours));
        assert!(a.len() > 10, "fio's block not found:\n{fio}");
        for (k, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "{args:?}: line {k}\nfio:\n{fio}\ndioscope:\n{ours}");
        }
        assert_eq!(a.len(), b.len(), "{args:?}\nfio:\n{fio}\ndioscope:\n{ours}");
    }
}

/// What `idiom` (a shell pipeline reading stdin) prints for `text`.
fn idiom(text: &str, script: &str) -> String {
    use std::io::Write;
    let mut c = std::process::Command::new("sh");
    c.args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim_end().to_string()
}

/// A value as fio prints it (`25.8k`, `104MiB/s`, `4096KiB`, `31.92`) and
/// half its last digit: the precision it was printed to.
fn printed(s: &str) -> (f64, f64) {
    let s = s.trim().trim_end_matches("/s").trim_end_matches('B');
    let (num, mult) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let m = match &s[i..] {
                "k" => 1e3,
                "M" => 1e6,
                "G" => 1e9,
                "Ki" => 1024.0,
                "Mi" => 1024.0 * 1024.0,
                "Gi" => 1024.0 * 1024.0 * 1024.0,
                u => panic!("unit {u} in {s}"),
            };
            (&s[..i], m)
        }
        None => (s, 1.0),
    };
    let v: f64 = num.parse().unwrap_or_else(|_| panic!("not a number: {s}"));
    let decimals = num.split('.').nth(1).map_or(0, str::len) as i32;
    (v * mult, 0.5 * 10f64.powi(-decimals) * mult)
}

/// `got` (as printed) is `json` to the printed precision, give or take
/// `slack` (fio truncates a count before printing it: 1).
fn same(what: &str, got: &str, json: f64, slack: f64) {
    let (v, half) = printed(got);
    assert!(
        (v - json).abs() <= half + slack + 1e-9 * json.abs(),
        "{what}: the text says {got}, the JSON {json}"
    );
}

/// The divisor of a latency unit fio prints.
fn unit(u: &str) -> f64 {
    match u {
        "nsec" => 1.0,
        "usec" => 1e3,
        "msec" => 1e6,
        _ => panic!("latency unit {u}"),
    }
}

#[test]
fn grep_and_awk_idioms_read_the_numbers_of_the_json() {
    let d = data_dir();
    let o = run_in(
        d.path(),
        &[
            "--name=mix",
            "--filename=f.dat",
            "--size=16m",
            "--direct=1",
            "--runtime=1",
            "--time_based",
            "--rw=randrw",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--output-format=normal,json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // fio's order: the JSON first, then the text.
    let (v, text) = json_then_text(&out);
    let j = &v["jobs"][0];
    let f = |x: &serde_json::Value| x.as_f64().unwrap();
    let q = |s: &str| idiom(text, s);
    same(
        "IOPS",
        &q(r"grep -oP 'read: IOPS=\K[0-9.k]+'"),
        f(&j["read"]["iops"]),
        1.0,
    );
    same(
        "write IOPS",
        &q(r"grep -oP 'write: IOPS=\K[0-9.k]+'"),
        f(&j["write"]["iops"]),
        1.0,
    );
    same(
        "BW",
        &q(r"grep -oP 'read: IOPS=[^,]+, BW=\K[0-9.]+[KMG]iB/s'"),
        f(&j["read"]["bw_bytes"]),
        0.0,
    );
    same(
        "BW (1000)",
        &q(r"grep -oP 'read: .*BW=[^(]+\(\K[0-9.]+[kMG]B/s'"),
        f(&j["read"]["bw_bytes"]),
        0.0,
    );
    let clat_unit = unit(&q(r"grep -m1 -oP 'clat \(\K[a-z]+'"));
    // fio's rule: usec once min > 2 µs, max > 99.999 µs and σ > 1 µs.
    let c = &j["read"]["clat_ns"];
    let usec = f(&c["min"]) > 2000.0 && f(&c["max"]) > 99_999.0 && f(&c["stddev"]) > 1000.0;
    let msec = f(&c["min"]) > 2e6 && f(&c["max"]) > 99_999_999.0 && f(&c["stddev"]) > 1e6;
    let rule = if msec {
        1e6
    } else if usec {
        1e3
    } else {
        1.0
    };
    assert_eq!(clat_unit, rule, "clat's unit");
    let avg = q(r#"awk -F'avg=' '/clat \(/ {print $2; exit}' | cut -d, -f1"#);
    same(
        "clat avg",
        &avg,
        f(&j["read"]["clat_ns"]["mean"]) / clat_unit,
        0.0,
    );
    let pct_unit = unit(&q(r"grep -m1 -oP 'clat percentiles \(\K[a-z]+'"));
    let p99 = q(r"grep -m1 -oP '99.00th=\[\s*\K[0-9]+'");
    let want = (f(&j["read"]["clat_ns"]["percentile"]["99.000000"]) / pct_unit).ceil();
    assert_eq!(p99.parse::<f64>().unwrap(), want, "p99");
    let bw = &j["read"];
    let kib = q(r"grep -m1 -oP '^\s+bw \(\s*\K[KM]iB'");
    let div = if kib == "MiB" { 1024.0 } else { 1.0 };
    let bw_avg = q(r"grep -m1 -oP '^\s+bw \(.*avg=\s*\K[0-9.]+'");
    same("bw avg", &bw_avg, f(&bw["bw_mean"]) / div, 0.0);
    let iops_min = q(r"grep -m1 -oP '^\s+iops\s+: min=\s*\K[0-9]+'");
    same("iops min", &iops_min, f(&bw["iops_min"]), 0.0);
    same(
        "usr",
        &q(r"grep -oP 'cpu\s+: usr=\K[0-9.]+'"),
        f(&j["usr_cpu"]),
        0.0,
    );
    same(
        "ctx",
        &q(r"grep -oP 'cpu\s+: .*ctx=\K[0-9]+'"),
        f(&j["ctx"]),
        0.0,
    );
    let issued = q(r"grep -oP 'issued rwts: total=\K[0-9]+,[0-9]+'");
    let want = format!("{},{}", j["read"]["total_ios"], j["write"]["total_ios"]);
    assert_eq!(issued, want);
    let d8 = q(r"grep -oP 'IO depths\s+: .* 8=\K[0-9.]+'");
    same("IO depth 8", &d8, f(&j["iodepth_level"]["8"]), 0.0);
    lat_distribution(text, j);
    let group = q(r"grep -oP '^\s+READ: bw=\K[0-9.]+[KMG]iB/s'");
    same(
        "group bw",
        &group,
        f(&j["read"]["bw_bytes"]),
        0.001 * f(&j["read"]["bw_bytes"]),
    );
    let run = q(r"grep -oP '^\s+READ: .*run=\K[0-9]+'");
    assert_eq!(run, j["read"]["runtime"].to_string());
    if let Some(disk) = v["disk_util"].as_array().and_then(|a| a.first()) {
        let ios = q(r"grep -A1 '^Disk stats (read/write):' | grep -oP 'ios=\K[0-9]+/[0-9]+'");
        assert_eq!(ios, format!("{}/{}", disk["read_ios"], disk["write_ios"]));
    }
}

/// `lat (usec)   : 250=…%`: every bucket printed is the JSON's.
fn lat_distribution(text: &str, j: &serde_json::Value) {
    let lines = idiom(text, r"grep -oP '^  lat \((n|u|m)sec\)\s+: .*'");
    assert!(!lines.is_empty(), "no latency distribution in\n{text}");
    for l in lines.lines() {
        let key = format!("latency_{}", &l[7..9]);
        for item in l.split(": ").nth(1).unwrap().split(", ") {
            let (bucket, pct) = item.split_once('=').unwrap();
            let want = j[&key][bucket].as_f64().unwrap();
            let got: f64 = pct.trim_end_matches('%').parse().unwrap();
            assert!(
                (got - want).abs() <= 0.005 + 1e-9,
                "{key} {bucket}: {got} vs {want}"
            );
        }
    }
}
