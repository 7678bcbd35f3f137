//! Every engine, every direction, on a temporary file.

use crate::common::*;

#[test]
fn every_engine_and_direction_on_a_file() {
    let d = tempfile::tempdir().unwrap();
    for engine in ["psync", "pvsync2", "libaio", "io_uring", "null"] {
        for rw in ["read", "write", "randread", "randwrite", "rw", "randrw"] {
            let o = run_in(
                d.path(),
                &[
                    "--name=e",
                    "--filename=t.dat",
                    "--size=4m",
                    &format!("--ioengine={engine}"),
                    &format!("--rw={rw}"),
                    "--bs=4k",
                    "--iodepth=4",
                    "--direct=1",
                    "--output-format=json",
                ],
            );
            assert_eq!(o.status.code(), Some(0), "{engine} {rw}: {}", stderr(&o));
            let j = json(&o);
            let job = &j["jobs"][0];
            let r = job["read"]["io_bytes"].as_u64().unwrap();
            let w = job["write"]["io_bytes"].as_u64().unwrap();
            // size=4m means one pass of 4 MiB, split by direction.
            assert_eq!(r + w, 4 << 20, "{engine} {rw}: read {r} + write {w}");
            let reads = rw.contains("read") || rw == "rw" || rw == "randrw";
            let writes = rw.contains("write") || rw == "rw" || rw == "randrw";
            assert_eq!(r > 0, reads, "{engine} {rw}");
            assert_eq!(w > 0, writes, "{engine} {rw}");
            if r > 0 {
                assert!(job["read"]["clat_ns"]["N"].as_u64().unwrap() > 0);
                assert!(
                    job["read"]["clat_ns"]["percentile"]["99.000000"]
                        .as_u64()
                        .unwrap()
                        > 0
                        || engine == "null"
                );
            }
        }
    }
    assert_eq!(entries(d.path()), vec!["t.dat"], "a named file is kept");
}

#[test]
fn random_reads_cover_each_block_once_per_pass() {
    // 256 blocks, one pass: with the random map every block is read once,
    // so bytes equal the region exactly. Which blocks the I/Os hit is
    // checked below for writes (same offset generator) and in
    // runner::offsets' unit tests.
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=r",
            "--ioengine=null",
            "--rw=randread",
            "--size=1m",
            "--output-format=json",
        ],
    );
    let j = json(&o);
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 256);
}

#[test]
fn random_writes_touch_each_block_exactly_once() {
    // Every verify interval starts with a header naming the offset it was
    // written for. After one random pass of 256 writes over 256 blocks, each
    // block must carry its own offset: every block was written, and with
    // exactly 256 writes none twice.
    let d = tempfile::tempdir().unwrap();
    for engine in ["psync", "io_uring"] {
        let o = run_in(
            d.path(),
            &[
                "--name=w",
                "--filename=blocks.dat",
                &format!("--ioengine={engine}"),
                "--iodepth=8",
                "--rw=randwrite",
                "--bs=4k",
                "--size=1m",
                "--direct=1",
                "--verify=crc32c",
                "--do_verify=0",
                "--output-format=json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["jobs"][0]["write"]["total_ios"], 256, "{engine}");
        let data = std::fs::read(d.path().join("blocks.dat")).unwrap();
        assert_eq!(data.len(), 1 << 20);
        for (i, block) in data.chunks(4096).enumerate() {
            assert_eq!(
                &block[..4],
                b"DIOV",
                "{engine}: block {i} was never written"
            );
            let off = u64::from_le_bytes(block[8..16].try_into().unwrap());
            assert_eq!(
                off,
                i as u64 * 4096,
                "{engine}: block {i} holds another block's data"
            );
        }
        std::fs::remove_file(d.path().join("blocks.dat")).unwrap();
    }
}

#[test]
fn time_based_runs_for_runtime_and_reports_series() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=t",
            "--ioengine=null",
            "--rw=randread",
            "--size=1g",
            "--time_based",
            "--runtime=2",
            "--output-format=json",
        ],
    );
    let j = json(&o);
    let rt = j["jobs"][0]["read"]["runtime"].as_u64().unwrap();
    assert!((1900..=2600).contains(&rt), "runtime {rt} ms");
    assert!(j["jobs"][0]["read"]["iops_samples"].as_u64().unwrap() >= 1);
    let trials = &j["dioscope"]["jobs"][0]["trials"];
    assert_eq!(trials.as_array().unwrap().len(), 1);
    assert!(trials[0]["iops"].as_f64().unwrap() > 0.0);
}

#[test]
fn numjobs_and_group_reporting() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--numjobs=3",
            "--group_reporting",
            "--output-format=json",
        ],
    );
    let j = json(&o);
    assert_eq!(j["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 3 * 256);
}

#[test]
fn trials_are_repeated_with_statistics() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--trials=4",
            "--output-format=json",
        ],
    );
    let j = json(&o);
    let dj = &j["dioscope"]["jobs"][0];
    assert_eq!(dj["trials"].as_array().unwrap().len(), 4);
    assert_eq!(dj["summary"]["iops"]["n"], 4);
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 4 * 256);
}

#[test]
fn deep_queues_with_whole_batches_finish_on_every_engine() {
    // Regression: io_uring staged a full queue's worth of entries against a
    // stale submission-queue head, dropped them, and waited forever.
    let d = tempfile::tempdir().unwrap();
    for engine in ["io_uring", "libaio"] {
        for depth in ["1", "7", "32", "64"] {
            let o = run_in(
                d.path(),
                &[
                    "--name=q",
                    "--filename=q.dat",
                    "--size=16m",
                    &format!("--ioengine={engine}"),
                    &format!("--iodepth={depth}"),
                    "--rw=randread",
                    "--direct=1",
                    "--loops=4",
                    "--output-format=json",
                ],
            );
            assert_eq!(
                o.status.code(),
                Some(0),
                "{engine} qd{depth}: {}",
                stderr(&o)
            );
            assert_eq!(
                json(&o)["jobs"][0]["read"]["io_bytes"],
                64 << 20,
                "{engine} qd{depth}"
            );
        }
    }
}
