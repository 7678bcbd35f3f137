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
