//! fio 3.33's normal (text) output, as scripts read it: per job the block
//! that starts `NAME: (groupid=G, jobs=N): err= E: pid=P: TIME`, then per
//! reporting group `Run status group G (all jobs):` and at the end
//! `Disk stats (read/write):`.
//!
//! THIS LAYOUT IS A FIXED CONTRACT. Scripts grep and awk these lines
//! (`IOPS=\K…`, `clat (usec): … avg=`, `99.00th=[ …]`, `bw=` of the run
//! status line…): the labels, units and their switching rules, number
//! formats, order and indentation are fio 3.33's, line for line. Do not
//! reword, reorder or add lines inside it; dioscope's own sections go after
//! it. `tests/integration/fio_text.rs` runs fio and dioscope on the same job
//! and compares the two outputs line by line (numbers masked), and applies
//! the usual grep/awk idioms to dioscope's text, checking each value
//! against dioscope's JSON of the same run.
//!
//! Everything is read from the `RunDoc` (fio's JSON keys), so the text and
//! the JSON of one run carry the same numbers; a dioscope job's block is all
//! its measured trials merged as one run (the `RunDoc` job is that merge).

use crate::results::model::{DioscopeJob, Dir, Job, Lat};
use crate::results::RunDoc;
use std::fmt::Write;

/// The fio part of the normal output: every job's block, every group's run
/// status, the disk stats (omitted, as fio does, when there are none).
pub fn render(out: &mut String, doc: &RunDoc) {
    for (i, j) in doc.jobs.iter().enumerate() {
        job_block(out, doc, j, doc.dioscope_job(i));
    }
    let mut groups: Vec<u32> = doc.jobs.iter().map(|j| j.groupid).collect();
    groups.dedup();
    let mut seen = Vec::new();
    for g in groups {
        if !seen.contains(&g) {
            seen.push(g);
            group_block(out, doc, g);
        }
    }
    disk_block(out, doc);
}

/// fio's num2str: `num` in at most `maxlen` significant characters, scaled
/// by 1000 (`k`, `M`, …) or 1024 (`Ki`, `Mi`, …) while it has more digits,
/// the remainder shown as decimals where they fit (rounded), then `unit`.
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    num2str_from(num, 0, maxlen, pow2, unit)
}

/// `num2str` of a number already in units of prefix `start` (1: k / Ki).
fn num2str_from(num: u64, start: usize, maxlen: usize, pow2: bool, unit: &str) -> String {
    let base: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes: [&str; 7] = if pow2 {
        ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
    } else {
        ["", "k", "M", "G", "T", "P", "E"]
    };
    let (mut n, mut rem, mut idx) = (num, 0u64, start);
    while n.to_string().len() > maxlen && idx + 1 < prefixes.len() {
        rem = n % base;
        n /= base;
        idx += 1;
    }
    if idx == start {
        return format!("{n}{}{unit}", prefixes[idx]);
    }
    let int_len = n.to_string().len();
    let decimals = maxlen as i64 - int_len as i64 - 1;
    if decimals <= 0 {
        if rem * 2 >= base {
            n += 1;
        }
        return format!("{n}{}{unit}", prefixes[idx]);
    }
    let scale = 10u64.pow(decimals as u32);
    let mut frac = ((rem as f64 / base as f64) * scale as f64).round() as u64;
    if frac >= scale {
        n += 1;
        frac = 0;
    }
    format!(
        "{n}.{frac:0w$}{}{unit}",
        prefixes[idx],
        w = decimals as usize
    )
}

/// The unit fio shows a latency in: nsec, or usec / msec once the minimum,
/// the maximum and the spread are all large enough (its rule).
fn lat_unit(min: f64, max: f64, dev: f64) -> (f64, &'static str) {
    if min > 2_000_000.0 && max > 99_999_999.0 && dev > 1_000_000.0 {
        (1e6, "msec")
    } else if min > 2000.0 && max > 99_999.0 && dev > 1000.0 {
        (1e3, "usec")
    } else {
        (1.0, "nsec")
    }
}

/// The unit of a percentile list: as `lat_unit`, over its smallest and
/// largest values (no spread condition).
fn pct_unit(min: u64, max: u64) -> (u64, &'static str) {
    if min > 2_000_000 && max > 99_999_999 {
        (1_000_000, "msec")
    } else if min > 2000 && max > 99_999 {
        (1000, "usec")
    } else {
        (1, "nsec")
    }
}

/// Read, write and trim.
fn dirs(j: &Job) -> [&Dir; 3] {
    [&j.read, &j.write, &j.trim]
}

/// Direction `d` as the report shows it: 0-2 read, write, trim (none when
/// folded into mixed, unified_rw_reporting=mixed), 3 mixed (when there).
pub fn shown_dir(j: &Job, d: usize) -> Option<&Dir> {
    match d {
        0..=2 => Some(dirs(j)[d]).filter(|x| !x.folded),
        _ => j.mixed.as_ref(),
    }
}

fn job_block(out: &mut String, doc: &RunDoc, j: &Job, dj: Option<&DioscopeJob>) {
    let pid = j
        .other
        .get("pid")
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| std::process::id() as u64);
    // fio: `err= 5 (file:io_u.c:1889, func=io_u error, error=…)`; its
    // source location has no meaning here.
    let why = dj
        .and_then(|d| d.first_error.as_ref())
        .filter(|_| j.error != 0)
        .map(|e| format!(" (func=io_u error, error={})", e.error))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={:2}{why}: pid={pid}: {}",
        j.jobname,
        j.groupid,
        dj.map(|d| d.numjobs.max(1)).unwrap_or(1),
        j.error,
        doc.time
    );
    if let Some(d) = j.desc.as_deref().filter(|d| !d.is_empty()) {
        let _ = writeln!(out, "  Description  : [{d}]");
    }
    // A sync engine's I/O is done when submitted: fio measures no slat.
    let no_slat = dj
        .and_then(|d| crate::job::spec::EngineKind::parse(&d.ioengine))
        .is_some_and(|k| k.caps().sync);
    for (d, name) in ["read", "write", "trim", "mixed"].into_iter().enumerate() {
        if let Some(st) = shown_dir(j, d).filter(|st| st.total_ios > 0) {
            dir_block(out, name, st, no_slat);
        }
    }
    lat_dist(out, j);
    sync_block(out, j);
    let _ = writeln!(
        out,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
        j.usr_cpu, j.sys_cpu, j.ctx, j.majf, j.minf
    );
    depth_lines(out, j);
    if let Some(ss) = j.other.get("steadystate") {
        steady_line(out, ss);
    }
}

/// `  steadystate  : attained=yes, bw=… (…), iops=…, iops mean dev=…%`.
fn steady_line(out: &mut String, ss: &serde_json::Value) {
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let bw = num(&ss["data"]["bw_mean"]) as u64;
    let kind = ss["ss"]
        .as_str()
        .unwrap_or("")
        .split(':')
        .next()
        .unwrap_or("");
    let metric = if kind.starts_with("bw") { "bw" } else { "iops" };
    let test = if kind.ends_with("_slope") {
        "slope"
    } else {
        "mean dev"
    };
    let crit = ss["criterion"].as_str().unwrap_or("0");
    let pct = if crit.ends_with('%') { "%" } else { "" };
    let crit: f64 = crit.trim_end_matches('%').parse().unwrap_or(0.0);
    // fio prints the 1000-based rate from the KiB/s figure, so scaled
    // by 1000/1024 (its own quirk, kept: scripts read fio's numbers).
    let _ = writeln!(
        out,
        "  steadystate  : attained={}, bw={} ({}), iops={}, {metric} {test}={crit:.3}{pct}",
        if num(&ss["attained"]) != 0.0 {
            "yes"
        } else {
            "no"
        },
        num2str(bw, 4, true, "B/s"),
        num2str_from(bw / 1024, 1, 4, false, "B/s"),
        num2str(num(&ss["data"]["iops_mean"]) as u64, 4, false, ""),
    );
}

fn dir_block(out: &mut String, name: &str, st: &Dir, no_slat: bool) {
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec){}",
        num2str(st.iops as u64, 4, false, ""),
        num2str(st.bw_bytes, 4, true, "B/s"),
        num2str(st.bw_bytes, 4, false, "B/s"),
        num2str(st.io_bytes, 4, true, "B"),
        st.runtime,
        if name == "write" {
            "; 0 zone resets"
        } else {
            ""
        }
    );
    let lats = [
        ("slat", &st.slat_ns, !no_slat),
        ("clat", &st.clat_ns, true),
        (" lat", &st.lat_ns, true),
    ];
    for (label, l, shown) in lats {
        if shown && l.n > 0 {
            lat_line(out, label, l);
        }
    }
    for (label, l, shown) in lats {
        if shown && l.n > 0 {
            pct_block(out, label.trim(), l);
        }
    }
    bw_lines(out, st);
}

/// `    clat (usec): min=…, max=…, avg=…, stdev=…` (also slat, lat, sync).
fn lat_line(out: &mut String, label: &str, l: &Lat) {
    let (div, unit) = lat_unit(l.min as f64, l.max as f64, l.stddev);
    let whole = |v: u64| num2str((v as f64 / div) as u64, 6, false, "");
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        whole(l.min),
        whole(l.max),
        l.mean / div,
        l.stddev / div
    );
}

/// `    clat percentiles (usec):` and its rows of four, values rounded up.
fn pct_block(out: &mut String, label: &str, l: &Lat) {
    let pcts = l.percentiles();
    if pcts.is_empty() {
        return;
    }
    let lo = pcts.iter().map(|p| p.1).min().unwrap_or(0);
    let hi = pcts.iter().map(|p| p.1).max().unwrap_or(0);
    let (div, unit) = pct_unit(lo, hi);
    let _ = writeln!(out, "    {label} percentiles ({unit}):");
    let last = pcts.len() - 1;
    let dec = pct_decimals(&pcts);
    for (row, chunk) in pcts.chunks(4).enumerate() {
        let mut line = String::from("     |");
        for (k, (p, v)) in chunk.iter().enumerate() {
            let _ = write!(
                line,
                " {p:w$.dec$}th=[{:5}]{}",
                v.div_ceil(div),
                if row * 4 + k == last { "" } else { "," },
                w = dec + 3,
            );
        }
        let _ = writeln!(out, "{line}");
    }
}

/// The decimals fio names a list's percentiles with: as many as the most
/// precise of them needs (`25`, `50.0`/`99.9`, `99.99`, `99.999`).
fn pct_decimals(pcts: &[(f64, u64)]) -> usize {
    let needs = |p: f64| {
        (0..6)
            .find(|&d| {
                format!("{p:.d$}")
                    .parse::<f64>()
                    .is_ok_and(|x| (x - p).abs() < 1e-9)
            })
            .unwrap_or(6)
    };
    pcts.iter().map(|x| needs(x.0)).max().unwrap_or(2)
}

/// `   bw (  KiB/s): …` and `   iops        : …`, when there were samples.
fn bw_lines(out: &mut String, st: &Dir) {
    if st.bw_samples > 0 {
        let mib = st.bw_mean > 1024.0 * 1024.0;
        let (div, unit) = if mib { (1024, "MiB") } else { (1, "KiB") };
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={:5}, max={:5}, per={:.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
            st.bw_min / div,
            st.bw_max / div,
            st.bw_agg,
            st.bw_mean / div as f64,
            st.bw_dev / div as f64,
            st.bw_samples
        );
    }
    if st.iops_samples > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            st.iops_min, st.iops_max, st.iops_mean, st.iops_stddev, st.iops_samples
        );
    }
}

/// `  lat (usec)   : 50=95.29%, …`: the non-zero buckets, five a line.
fn lat_dist(out: &mut String, j: &Job) {
    for (unit, map) in [
        ("nsec", &j.latency_ns),
        ("usec", &j.latency_us),
        ("msec", &j.latency_ms),
    ] {
        let shown: Vec<String> = map
            .iter()
            .filter(|(_, v)| **v > 0.0)
            .map(|(k, v)| format!("{k}={v:.2}%"))
            .collect();
        for chunk in shown.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", chunk.join(", "));
        }
    }
}

/// fsync/fdatasync/sync_file_range: their latency and percentiles.
fn sync_block(out: &mut String, j: &Job) {
    let l = &j.sync.lat_ns;
    if j.sync.total_ios == 0 || l.n == 0 {
        return;
    }
    let _ = writeln!(out, "  fsync/fdatasync/sync_file_range:");
    lat_line(out, "sync", l);
    pct_block(out, "sync", l);
}

/// `  IO depths    :`, `submit`, `complete`, `issued rwts`, `latency`.
fn depth_lines(out: &mut String, j: &Job) {
    let dist = |m: &crate::results::OrderedMap<f64>| {
        m.iter()
            .map(|(k, v)| format!("{k}={v:.1}%"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "  IO depths    : {}", dist(&j.iodepth_level));
    let _ = writeln!(out, "     submit    : {}", dist(&j.iodepth_submit));
    let _ = writeln!(out, "     complete  : {}", dist(&j.iodepth_complete));
    // unified_rw_reporting=mixed: fio counts every I/O as the first
    // direction's.
    let folded;
    let dirs = match &j.mixed {
        Some(m) if j.read.folded => {
            folded = Dir::default();
            [m, &folded, &folded]
        }
        _ => dirs(j),
    };
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        dirs[0].total_ios,
        dirs[1].total_ios,
        dirs[2].total_ios,
        j.sync.total_ios,
        dirs[0].short_ios,
        dirs[1].short_ios,
        dirs[2].short_ios,
        dirs[0].drop_ios,
        dirs[1].drop_ios,
        dirs[2].drop_ios
    );
    let _ = writeln!(
        out,
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
        j.latency_target, j.latency_window, j.latency_percentile, j.latency_depth
    );
}

/// A group's aggregate bandwidth in direction `d` (B/s), as fio's run
/// status: the group's bytes over its longest runtime; None if idle.
pub fn group_agg(jobs: &[Job], g: u32, d: usize) -> Option<u64> {
    let of_group = || {
        jobs.iter()
            .filter(|j| j.groupid == g)
            .filter_map(move |j| shown_dir(j, d))
    };
    let max_run = of_group().map(|x| x.runtime).max().filter(|&r| r > 0)?;
    let io: u64 = of_group()
        .filter(|x| x.runtime > 0)
        .map(|x| x.io_bytes)
        .sum();
    Some((io as u128 * 1000 / max_run as u128) as u64)
}

/// `Run status group G (all jobs):`, one line per direction that ran: the
/// group's aggregate bandwidth (its bytes over its longest runtime), the
/// slowest and fastest job's, the bytes, the shortest and longest runtime.
fn group_block(out: &mut String, doc: &RunDoc, g: u32) {
    let _ = writeln!(out, "\nRun status group {g} (all jobs):");
    for (d, name) in ["READ", "WRITE", "TRIM", "MIXED"].iter().enumerate() {
        let dirs: Vec<&Dir> = doc
            .jobs
            .iter()
            .filter(|j| j.groupid == g)
            .filter_map(|j| shown_dir(j, d))
            .filter(|x| x.runtime > 0)
            .collect();
        let Some(max_run) = dirs.iter().map(|x| x.runtime).max() else {
            continue;
        };
        let min_run = dirs.iter().map(|x| x.runtime).min().unwrap_or(0);
        let bws: Vec<u64> = dirs
            .iter()
            .map(|x| (x.io_bytes as u128 * 1000 / x.runtime as u128) as u64)
            .collect();
        let io: u64 = dirs.iter().map(|x| x.io_bytes).sum();
        let agg = group_agg(&doc.jobs, g, d).unwrap_or(0);
        let (lo, hi) = (
            bws.iter().copied().min().unwrap_or(0),
            bws.iter().copied().max().unwrap_or(0),
        );
        let both = |v: u64, unit: &str| (num2str(v, 4, true, unit), num2str(v, 4, false, unit));
        let (a2, a10) = both(agg, "B/s");
        let (lo2, lo10) = both(lo, "B/s");
        let (hi2, hi10) = both(hi, "B/s");
        let (io2, io10) = both(io, "B");
        let _ = writeln!(
            out,
            "  {name:>5}: bw={a2} ({a10}), {lo2}-{hi2} ({lo10}-{hi10}), io={io2} ({io10}), run={min_run}-{max_run}msec"
        );
    }
}

/// `Disk stats (read/write):`, one line per device of `disk_util`; nothing
/// at all when there is none (files on tmpfs), as fio.
fn disk_block(out: &mut String, doc: &RunDoc) {
    if doc.disk_util.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nDisk stats (read/write):");
    for d in &doc.disk_util {
        let _ = writeln!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_as_fio_prints() {
        assert_eq!(num2str(25780, 4, false, ""), "25.8k");
        assert_eq!(num2str(1074, 4, false, ""), "1074");
        assert_eq!(num2str(199, 4, false, ""), "199");
        // 25806 × 4096 B over 1.001 s.
        assert_eq!(num2str(105_598_000, 4, true, "B/s"), "101MiB/s");
        assert_eq!(num2str(105_598_000, 4, false, "B/s"), "106MB/s");
        assert_eq!(num2str(88_184_000, 4, true, "B/s"), "84.1MiB/s");
        assert_eq!(num2str(818_362, 4, true, "B/s"), "799KiB/s");
        assert_eq!(num2str(818_362, 4, false, "B/s"), "818kB/s");
        assert_eq!(num2str(4_194_304, 4, true, "B"), "4096KiB");
        assert_eq!(num2str(4_194_304, 4, false, "B"), "4194kB");
        assert_eq!(num2str(1_127_000_000, 4, true, "B/s"), "1075MiB/s");
        assert_eq!(num2str(4_175_700, 6, false, ""), "4175.7k");
    }

    #[test]
    fn latency_units_switch_as_fio() {
        assert_eq!(lat_unit(1454.0, 194_352.0, 4334.0).1, "nsec");
        assert_eq!(lat_unit(20_000.0, 1_159_000.0, 31_920.0).1, "usec");
        assert_eq!(lat_unit(1_873_000.0, 32_521_000.0, 2e6).1, "usec");
        assert_eq!(lat_unit(3e6, 2e8, 2e6).1, "msec");
        assert_eq!(pct_unit(68_096, 4_800_000), (1000, "usec"));
        let list = |ps: &[f64]| pct_decimals(&ps.iter().map(|&p| (p, 0)).collect::<Vec<_>>());
        assert_eq!(list(&[1.0, 99.5, 99.95]), 2);
        assert_eq!(list(&[50.0, 99.0, 99.9]), 1);
        assert_eq!(list(&[99.999]), 3);
        assert_eq!(list(&[25.0, 50.0, 75.0]), 0);
    }

    /// fio 3.33's own JSON renders as fio 3.33's own text of the same run,
    /// byte for byte but the pid, which fio's JSON does not carry: randrw
    /// on io_uring at depth 16 with lat_percentiles=1; three groups (1 MiB
    /// reads, two readers with a description and clat_percentiles=0,
    /// writes with fsync=4 and disable_lat); steadystate=iops:50%.
    #[test]
    fn fios_json_renders_as_fios_text() {
        let cases = [
            (
                include_str!("testdata/fio333_randrw.json"),
                include_str!("testdata/fio333_randrw.txt"),
            ),
            (
                include_str!("testdata/fio333_groups.json"),
                include_str!("testdata/fio333_groups.txt"),
            ),
            (
                include_str!("testdata/fio333_steadystate.json"),
                include_str!("testdata/fio333_steadystate.txt"),
            ),
        ];
        let strip = |s: &str| -> Vec<String> {
            s.lines()
                .map(|l| l.split("pid=").next().unwrap_or(l).to_string())
                .collect()
        };
        for (json, text) in cases {
            let mut out = String::new();
            render(&mut out, &RunDoc::from_json(json).unwrap());
            let (got, want) = (strip(&out), strip(text));
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g, w, "\n{out}");
            }
            assert_eq!(got.len(), want.len(), "\n{out}");
        }
    }
}
