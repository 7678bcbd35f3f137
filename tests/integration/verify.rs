//! verify=: every bad block is named with its offset and kind.

use crate::common::*;
use std::io::{Read, Seek, SeekFrom, Write};

fn write_job(dir: &std::path::Path, target: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "--name=v",
        "--filename",
        target,
        "--size=4m",
        "--rw=randwrite",
        "--bs=16k",
        "--verify=crc32c",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=8",
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

fn bad_blocks(o: &std::process::Output) -> Vec<(u64, String)> {
    let j = json(o);
    j["dioscope"]["verify"]["v"]["bad_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b[1]["offset"].as_u64().unwrap(),
                b[1]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn corrupt(path: &std::path::Path, offset: u64, data: &[u8]) {
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(data).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn corruption_between_write_and_verify_only_is_reported_with_offset() {
    let d = tempfile::tempdir().unwrap();
    let o = write_job(d.path(), "v.dat", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(
        j["dioscope"]["verify"]["v"]["checked"], 256,
        "every written block read back"
    );
    assert_eq!(j["dioscope"]["verify"]["v"]["bad"], 0);
    let p = d.path().join("v.dat");
    // Torn: part of block 5's data replaced.
    corrupt(&p, 5 * 16384 + 4096, &[0x55; 512]);
    // Lost: block 9 zeroed (as if never written).
    corrupt(&p, 9 * 16384, &[0u8; 16384]);
    // Misplaced: block 2's content copied over block 12.
    let mut b2 = vec![0u8; 16384];
    let mut f = std::fs::File::open(&p).unwrap();
    f.seek(SeekFrom::Start(2 * 16384)).unwrap();
    f.read_exact(&mut b2).unwrap();
    corrupt(&p, 12 * 16384, &b2);
    let o = write_job(d.path(), "v.dat", &["--verify_only=1"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "bad blocks exit 1: {}",
        stderr(&o)
    );
    let bad = bad_blocks(&o);
    assert_eq!(
        bad,
        vec![
            (5 * 16384, "torn_write".to_string()),
            (9 * 16384, "lost_write".to_string()),
            (12 * 16384, "misplaced_write".to_string())
        ]
    );
    assert!(
        stderr(&o).contains("verify found 3 bad blocks"),
        "{}",
        stderr(&o)
    );
    // The text report names the offsets too.
    let t = run_in(
        d.path(),
        &[
            "--name=v",
            "--filename=v.dat",
            "--size=4m",
            "--rw=randwrite",
            "--bs=16k",
            "--verify=crc32c",
            "--verify_only=1",
            "--direct=1",
        ],
    );
    assert!(
        stdout(&t).contains("offset 81920") && stdout(&t).contains("torn write"),
        "{}",
        stdout(&t)
    );
}

#[test]
fn verify_fatal_stops_at_the_first_bad_block() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(
        write_job(d.path(), "v.dat", &["--verify=xxhash"])
            .status
            .code(),
        Some(0)
    );
    let p = d.path().join("v.dat");
    corrupt(&p, 16384, &[0u8; 16384]);
    corrupt(&p, 100 * 16384, &[0u8; 16384]);
    let o = write_job(
        d.path(),
        "v.dat",
        &[
            "--verify=xxhash",
            "--verify_only=1",
            "--verify_fatal=1",
            "--ioengine=psync",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(
        j["dioscope"]["verify"]["v"]["bad"], 1,
        "stopped after the first bad block"
    );
}

#[test]
fn every_algorithm_round_trips_on_a_loop_device() {
    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 8 << 20, &[]);
    for algo in ["crc32c", "xxhash", "sha256", "pattern"] {
        let o = write_job(
            d.path(),
            lo.path(),
            &[
                &format!("--verify={algo}"),
                &format!("--destroy-data-on={}", lo.path()),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{algo}: {}", stderr(&o));
        assert_eq!(json(&o)["dioscope"]["verify"]["v"]["bad"], 0, "{algo}");
    }
    // Corrupt one block on the device behind dioscope's back, then verify_only.
    corrupt(&lo.dev, 3 * 16384 + 8, b"garbage");
    let o = write_job(
        d.path(),
        lo.path(),
        &["--verify=pattern", "--verify_only=1"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        bad_blocks(&o),
        vec![(3 * 16384, "lost_write".to_string())],
        "the header was hit"
    );
}

#[test]
fn verify_interval_must_divide_the_block_size() {
    let d = tempfile::tempdir().unwrap();
    let o = write_job(d.path(), "v.dat", &["--verify_interval=12k"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("verify_interval=4096"),
        "{}",
        stderr(&o)
    );
    assert!(entries(d.path()).is_empty());
}
