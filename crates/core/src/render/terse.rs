//! fio's terse format, version 3 (`--minimal`, `--output-format=terse`):
//! one `;`-separated line per job of the result, fields in the order of
//! fio's HOWTO ("Terse output"): version, fio version, job name, group,
//! error; per direction (read, write) the I/O in KiB, bandwidth in KiB/s,
//! IOPS, runtime in ms, submission, completion and total latency (min, max,
//! mean, stdev in µs) with 20 completion-latency percentiles between, and
//! bandwidth min, max, share of the group, mean, stdev; CPU (user, system,
//! context switches, major and minor faults); the I/O depth distribution
//! (7 fields); the latency distribution (10 fields in µs, 12 in ms); then
//! 9 fields per disk (name, ios, merges, ticks per direction, time in queue,
//! utilisation). A job's description, when it has one, ends the line.
//!
//! Scripts index these fields by position: the count and the order are
//! checked against fio 3.33's own output in this file's tests.

use super::{Exporter, Format};
use crate::results::model::{Dir, DiskUtil, Job, Lat};
use crate::results::RunDoc;

struct Terse;

pub const FORMAT: Format<RunDoc> = Format {
    name: "terse",
    aliases: &["minimal"],
    help: "fio's terse v3 line per job (--minimal): ';'-separated, fields by position",
    exporter: &Terse,
};

/// The only terse version dioscope writes.
const VERSION: u32 = 3;

/// fio writes exactly this many completion-latency percentile fields.
const PERCENTILE_FIELDS: usize = 20;
const IODEPTH_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
const LAT_US_KEYS: [&str; 10] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
const LAT_MS_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

impl Exporter<RunDoc> for Terse {
    fn render(&self, doc: &RunDoc) -> String {
        let version = terse_fio_version(&doc.fio_version);
        doc.jobs
            .iter()
            .map(|j| line(j, &version, &doc.disk_util) + "\n")
            .collect()
    }
}

/// The document's version (fio's `fio-3.33`, dioscope's
/// `fio-3.33 (dioscope 0.1.0)`), dioscope's when it has none.
fn terse_fio_version(v: &str) -> String {
    if v.is_empty() {
        crate::results::model::version_string()
    } else {
        v.to_string()
    }
}

/// One job's line, without the newline.
pub fn line(j: &Job, fio_version: &str, disks: &[DiskUtil]) -> String {
    let mut f: Vec<String> = vec![
        VERSION.to_string(),
        fio_version.to_string(),
        j.jobname.clone(),
        j.groupid.to_string(),
        j.error.to_string(),
    ];
    // unified_rw_reporting: mixed in place of read and write, or after
    // them (both), as fio's terse line.
    for d in [&j.read, &j.write]
        .into_iter()
        .filter(|d| !d.folded)
        .chain(j.mixed.as_ref())
    {
        direction(d, &mut f);
    }
    f.push(format!("{:.6}%", j.usr_cpu));
    f.push(format!("{:.6}%", j.sys_cpu));
    f.push(j.ctx.to_string());
    f.push(j.majf.to_string());
    f.push(j.minf.to_string());
    let pct = |m: &crate::results::OrderedMap<f64>, k: &str| m.get(k).copied().unwrap_or(0.0);
    for k in IODEPTH_KEYS {
        f.push(format!("{:.1}%", pct(&j.iodepth_level, k)));
    }
    for k in LAT_US_KEYS {
        f.push(format!("{:.2}%", pct(&j.latency_us, k)));
    }
    for k in LAT_MS_KEYS {
        f.push(format!("{:.2}%", pct(&j.latency_ms, k)));
    }
    for d in disks {
        f.push(d.name.clone());
        f.push(d.read_ios.to_string());
        f.push(d.write_ios.to_string());
        f.push(d.read_merges.to_string());
        f.push(d.write_merges.to_string());
        f.push(d.read_ticks.to_string());
        f.push(d.write_ticks.to_string());
        f.push(d.in_queue.to_string());
        f.push(format!("{:.2}%", d.util));
    }
    if let Some(desc) = &j.desc {
        f.push(desc.clone());
    }
    f.join(";")
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

fn lat4(l: &Lat, f: &mut Vec<String>) {
    f.push(us(l.min).to_string());
    f.push(us(l.max).to_string());
    f.push(format!("{:.6}", l.mean / 1000.0));
    f.push(format!("{:.6}", l.stddev / 1000.0));
}

fn direction(d: &Dir, f: &mut Vec<String>) {
    f.push(d.io_kbytes.to_string());
    f.push(d.bw.to_string());
    f.push(format!("{}", d.iops.round() as u64));
    f.push(d.runtime.to_string());
    lat4(&d.slat_ns, f);
    lat4(&d.clat_ns, f);
    // fio's percentile fields: lat's with lat_percentiles, else clat's,
    // else slat's (whichever the JSON carries, in that order).
    let pcts = [&d.lat_ns, &d.clat_ns, &d.slat_ns]
        .iter()
        .map(|l| l.percentiles())
        .find(|p| !p.is_empty())
        .unwrap_or_default();
    let mut pcts: Vec<String> = pcts
        .into_iter()
        .take(PERCENTILE_FIELDS)
        .map(|(p, ns)| format!("{p:.6}%={}", us(ns)))
        .collect();
    pcts.resize(PERCENTILE_FIELDS, "0%=0".to_string());
    f.extend(pcts);
    lat4(&d.lat_ns, f);
    f.push(d.bw_min.to_string());
    f.push(d.bw_max.to_string());
    f.push(format!("{:.6}%", d.bw_agg));
    f.push(format!("{:.6}", d.bw_mean));
    f.push(format!("{:.6}", d.bw_dev));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio 3.33's `--minimal` line for a null-engine randrw job (no disk),
    /// and for a psync read of a file on vda (one disk): 121 and 130 fields.
    const FIO_NULL: &str = "3;fio-3.33;x;0;0;1984;1984000;496000;1;0;0;0.000000;0.000000;0;7;0.039500;0.313622;1.000000%=0;5.000000%=0;10.000000%=0;20.000000%=0;30.000000%=0;40.000000%=0;50.000000%=0;60.000000%=0;70.000000%=0;80.000000%=0;90.000000%=0;95.000000%=0;99.000000%=0;99.500000%=0;99.900000%=7;99.950000%=7;99.990000%=7;0%=0;0%=0;0%=0;0;7;0.066363;0.327021;0;0;0.000000%;0.000000;0.000000;2112;2112000;528000;1;0;0;0.000000;0.000000;0;0;0.026011;0.002708;1.000000%=0;5.000000%=0;10.000000%=0;20.000000%=0;30.000000%=0;40.000000%=0;50.000000%=0;60.000000%=0;70.000000%=0;80.000000%=0;90.000000%=0;95.000000%=0;99.000000%=0;99.500000%=0;99.900000%=0;99.950000%=0;99.990000%=0;0%=0;0%=0;0%=0;0;0;0.060989;0.020308;0;0;0.000000%;0.000000;0.000000;0.000000%;0.000000%;0;0;9;100.0%;0.0%;0.0%;0.0%;0.0%;0.0%;0.0%;99.90%;0.00%;0.10%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%";

    fn sample() -> (Job, Vec<DiskUtil>) {
        let mut j = Job {
            jobname: "x".into(),
            ..Job::default()
        };
        j.read.io_kbytes = 1984;
        j.read.bw = 1_984_000;
        j.read.iops = 496_000.0;
        j.read.runtime = 1;
        j.read.clat_ns = Lat {
            min: 0,
            max: 7_000,
            mean: 39.5,
            stddev: 313.622,
            n: 496,
            percentile: Some(
                [("1.000000", 0u64), ("99.900000", 7_000)]
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
            ),
            bins: None,
        };
        j.iodepth_level = IODEPTH_KEYS
            .iter()
            .map(|k| (k.to_string(), if *k == "1" { 100.0 } else { 0.0 }))
            .collect();
        j.latency_us = LAT_US_KEYS
            .iter()
            .map(|k| (k.to_string(), if *k == "2" { 99.9 } else { 0.0 }))
            .collect();
        j.minf = 9;
        let disk = DiskUtil {
            name: "vda".into(),
            util: 12.5,
            ..DiskUtil::default()
        };
        (j, vec![disk])
    }

    #[test]
    fn field_count_and_order_match_fio() {
        let fio: Vec<&str> = FIO_NULL.split(';').collect();
        assert_eq!(fio.len(), 121);
        let (j, disks) = sample();
        let ours = line(&j, "fio-3.33", &[]);
        let ours: Vec<&str> = ours.split(';').collect();
        assert_eq!(ours.len(), fio.len(), "{ours:?}");
        // Field by field: the same kind of value at each position.
        let kind = |s: &str| {
            if s.contains("%=") {
                "pct=val"
            } else if s.ends_with('%') {
                "pct"
            } else if s.contains('.') {
                "float"
            } else if s.parse::<i64>().is_ok() {
                "int"
            } else {
                "text"
            }
        };
        for (i, (a, b)) in fio.iter().zip(&ours).enumerate() {
            assert_eq!(kind(a), kind(b), "field {}: fio {a}, ours {b}", i + 1);
        }
        // Named positions (1-based, as in the HOWTO's list).
        assert_eq!(ours[0], "3");
        assert_eq!(ours[2], "x");
        assert_eq!(ours[5], "1984", "read_kb");
        assert_eq!(ours[6], "1984000", "read_bandwidth_kb");
        assert_eq!(ours[7], "496000", "read_iops");
        assert_eq!(ours[14], "7", "read_clat_max_us");
        assert_eq!(ours[17], "1.000000%=0", "read_clat_pct01");
        assert_eq!(ours[18], "99.900000%=7", "read_clat_pct02");
        assert_eq!(ours[19], "0%=0", "padding to 20 percentiles");
        assert_eq!(ours[91], "9", "cpu_minf");
        assert_eq!(ours[92], "100.0%", "iodepth_1");
        assert_eq!(ours[99], "99.90%", "lat_2us");
        // One disk: nine more fields, as fio writes for vda.
        let with_disk = line(&j, "fio-3.33", &disks);
        let v: Vec<&str> = with_disk.split(';').collect();
        assert_eq!(v.len(), 130);
        assert_eq!(v[121], "vda");
        assert_eq!(v[129], "12.50%");
    }

    /// unified_rw_reporting: fio 3.33's line has the mixed direction in
    /// place of read and write (80 fields), or after them (both: 162).
    #[test]
    fn mixed_takes_the_place_of_the_directions_or_follows_them() {
        let (mut j, _) = sample();
        let mut m = j.read.clone();
        m.io_kbytes = 4096;
        j.mixed = Some(m);
        let both = line(&j, "fio-3.33", &[]);
        let f: Vec<&str> = both.split(';').collect();
        assert_eq!(f.len(), 162);
        assert_eq!((f[5], f[46], f[87]), ("1984", "0", "4096"));
        j.read.folded = true;
        j.write.folded = true;
        let mixed = line(&j, "fio-3.33", &[]);
        let f: Vec<&str> = mixed.split(';').collect();
        assert_eq!(f.len(), 80);
        assert_eq!(f[5], "4096");
        assert_eq!(f[50], "9", "cpu_minf follows the one direction");
    }

    #[test]
    fn description_ends_the_line_and_one_line_per_job() {
        let (mut j, _) = sample();
        j.desc = Some("hello there".into());
        let l = line(&j, "fio-3.33", &[]);
        assert!(l.ends_with(";hello there"), "{l}");
        assert_eq!(l.split(';').count(), 122);
        let doc = RunDoc {
            jobs: vec![j.clone(), j],
            ..RunDoc::default()
        };
        let out = Terse.render(&doc);
        assert_eq!(out.lines().count(), 2);
        assert!(out.ends_with('\n'));
    }
}
