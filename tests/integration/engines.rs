//! Every engine, every direction, on a temporary file and a loop device;
//! counts against fio's; the engines dioscope refuses.
//!
//! The engines come from the engine list itself (`EngineKind::ALL`), so an
//! engine added with one file and one line in `engine_list!` is run here
//! with no edit to this file.

use crate::common::*;
use dioscope_core::engines::{refused::REFUSED, EngineKind, EngineParams};

/// Engines that read and write a target's data (all but null and the
/// space engines falloc/ftruncate).
fn real_engines() -> impl Iterator<Item = &'static str> {
    EngineKind::ALL
        .iter()
        .filter(|k| k.caps().real_io && k.caps().moves_data)
        .map(|k| k.as_str())
}

/// Engines that run with no option of their own (cpuio, exec and
/// e4defrag have mandatory ones: tests/integration/engines2.rs).
fn plain(k: &EngineKind) -> bool {
    k.check(&EngineParams::default()).is_ok()
}

/// Engines whose reads and writes both succeed on any target (the
/// metadata engines, one operation per file, are in engines_meta.rs).
fn rw_engines() -> impl Iterator<Item = &'static str> {
    EngineKind::ALL
        .iter()
        .filter(|k| plain(k) && !k.caps().by_name && (k.caps().moves_data || !k.caps().real_io))
        .map(|k| k.as_str())
}

#[test]
fn every_engine_and_direction_on_a_file() {
    let d = tempfile::tempdir().unwrap();
    for engine in rw_engines() {
        for rw in ["read", "write", "randread", "randwrite", "rw", "randrw"] {
            let o = run_in(
                d.path(),
                &[
                    "--name=e",
                    "--filename=t.dat",
                    "--size=1m",
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
            // size=1m means one pass of 1 MiB, split by direction.
            assert_eq!(r + w, 1 << 20, "{engine} {rw}: read {r} + write {w}");
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

/// Write `target` through `engine` with verify=crc32c (checked after the
/// writes), then read it back through the same engine with verify_only:
/// both passes must check every block and find none bad.
fn write_then_read_verified(dir: &std::path::Path, engine: &str, target: &str, extra: &[&str]) {
    for (pass, rw) in [("write", "randwrite"), ("read", "read")] {
        let mut args = vec![
            "--name=v".to_string(),
            format!("--filename={target}"),
            "--size=2m".into(),
            format!("--rw={rw}"),
            "--bs=8k".into(),
            format!("--ioengine={engine}"),
            "--iodepth=8".into(),
            "--direct=1".into(),
            "--verify=crc32c".into(),
            "--output-format=json".into(),
        ];
        if pass == "read" {
            args.push("--verify_only=1".into());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let o = run_in(dir, &a);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{engine} {pass} {target}: {}",
            stderr(&o)
        );
        let j = json(&o);
        let v = &j["dioscope"]["verify"]["v"];
        assert_eq!(v["checked"], 256, "{engine} {pass} {target}: {v}");
        assert_eq!(v["bad"], 0, "{engine} {pass} {target}: {v}");
        if pass == "write" {
            assert_eq!(j["jobs"][0]["write"]["io_bytes"], 2 << 20, "{engine}");
        }
    }
}

#[test]
fn every_engine_moves_real_data_on_a_file() {
    let d = tempfile::tempdir().unwrap();
    for engine in real_engines() {
        write_then_read_verified(d.path(), engine, "data.dat", &[]);
        // The bytes are really in the file: the verify header of the first
        // block names offset 0.
        let data = std::fs::read(d.path().join("data.dat")).unwrap();
        assert_eq!(&data[..4], b"DIOV", "{engine}");
        std::fs::remove_file(d.path().join("data.dat")).unwrap();
    }
}

#[test]
fn every_engine_moves_real_data_on_a_loop_device() {
    if !can_run("root (loop devices)", is_root()) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 8 << 20, &[]);
    let destroy = format!("--destroy-data-on={}", lo.path());
    for engine in real_engines() {
        write_then_read_verified(d.path(), engine, lo.path(), &[&destroy]);
    }
}

#[test]
fn clones_sharing_a_file_keep_their_own_offsets() {
    // Four clones write their own quarter of one file. Engines that seek
    // (sync, vsync) would put one clone's data at another's offset if the
    // clones shared a file position; verify then finds misplaced blocks.
    let d = tempfile::tempdir().unwrap();
    for engine in real_engines() {
        for rw in ["randwrite", "read"] {
            let mut args = vec![
                "--name=c",
                "--filename=shared.dat",
                "--size=512k",
                "--offset_increment=512k",
                "--numjobs=4",
                "--bs=4k",
                "--iodepth=4",
                "--direct=1",
                "--verify=crc32c",
                "--output-format=json",
            ];
            let eng = format!("--ioengine={engine}");
            let rwo = format!("--rw={rw}");
            args.push(&eng);
            args.push(&rwo);
            if rw == "read" {
                args.push("--verify_only=1");
            }
            let o = run_in(d.path(), &args);
            assert_eq!(o.status.code(), Some(0), "{engine} {rw}: {}", stderr(&o));
            let v = &json(&o)["dioscope"]["verify"];
            let text = v.to_string();
            let (checked, bad) = v.as_object().unwrap().values().fold((0, 0), |a, c| {
                (
                    a.0 + c["checked"].as_u64().unwrap_or(0),
                    a.1 + c["bad"].as_u64().unwrap_or(0),
                )
            });
            assert_eq!((checked, bad), (512, 0), "{engine} {rw}: {text}");
        }
        std::fs::remove_file(d.path().join("shared.dat")).unwrap();
    }
}

#[test]
fn io_counts_match_fio_for_every_engine() {
    if !can_run("fio", have_tool("fio")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f.dat"), vec![0x5au8; 1 << 20]).unwrap();
    let total = |v: &serde_json::Value, dir: &str| v["jobs"][0][dir]["total_ios"].as_u64().unwrap();
    let fio_has = sh("fio", &["--enghelp"]);
    // The metadata engines count operations, not blocks: engines_meta.rs.
    for k in EngineKind::ALL
        .iter()
        .filter(|k| plain(k) && !k.caps().by_name)
    {
        let engine = k.as_str();
        if !fio_has.lines().any(|l| l.trim() == engine) {
            // page_fault is fio 3.42's; an older fio cannot compare.
            continue;
        }
        let rws: &[&str] = if k.caps().moves_data || !k.caps().real_io {
            &["read", "write", "randread", "randwrite", "randrw"]
        } else {
            // Space engines: writes (ftruncate fails reads, in fio too).
            &["write", "randwrite"]
        };
        for &rw in rws {
            let args = [
                "--name=f".to_string(),
                "--filename=f.dat".into(),
                "--size=1m".into(),
                "--bs=4k".into(),
                "--iodepth=4".into(),
                "--direct=1".into(),
                format!("--ioengine={engine}"),
                format!("--rw={rw}"),
                "--output-format=json".into(),
            ];
            let o = run_in(
                d.path(),
                &args.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            );
            assert_eq!(o.status.code(), Some(0), "{engine} {rw}: {}", stderr(&o));
            let ours = json(&o);
            let mut c = std::process::Command::new("fio");
            c.args(&args).current_dir(d.path());
            let f = output_within(c, std::time::Duration::from_secs(60));
            assert!(f.status.success(), "fio {engine} {rw}: {}", stderr(&f));
            // fio prints notes (e.g. "queue depth will be capped at 1") before the JSON.
            let text = stdout(&f);
            let fio: serde_json::Value =
                serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
            let (r, w) = (total(&ours, "read"), total(&ours, "write"));
            assert_eq!(
                r + w,
                total(&fio, "read") + total(&fio, "write"),
                "{engine} {rw}"
            );
            if rw != "randrw" {
                assert_eq!(
                    (r, w),
                    (total(&fio, "read"), total(&fio, "write")),
                    "{engine} {rw}"
                );
            }
        }
    }
}

#[test]
fn refused_engines_name_themselves_even_with_their_options() {
    let d = tempfile::tempdir().unwrap();
    for r in REFUSED {
        for name in r.names {
            let sel = format!("--{}={name}", r.key);
            // The engine's own options come first, then the engine: they
            // must not be reported as unknown options.
            let mut args: Vec<String> = vec!["--name=x".into()];
            args.extend(r.options.iter().map(|o| format!("--{o}=1")));
            args.push(sel.clone());
            args.push("--filename=x.dat".into());
            args.push("--size=1m".into());
            let o = run_in(
                d.path(),
                &args.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            );
            assert_eq!(o.status.code(), Some(2), "{sel}: {}", stderr(&o));
            let e = stderr(&o);
            assert!(
                e.contains(&format!(
                    "not supported by dioscope: {}={name} (needs ",
                    r.key
                )),
                "{sel}: {e}"
            );
            // In a job file, with the options in [global] before the engine.
            let mut text = String::from("[global]\n");
            for o in r.options {
                text.push_str(&format!("{o}=1\n"));
            }
            text.push_str(&format!(
                "[job]\n{}={name}\nfilename=x.dat\nsize=1m\n",
                r.key
            ));
            std::fs::write(d.path().join("r.fio"), text).unwrap();
            let o = run_in(d.path(), &["r.fio"]);
            assert_eq!(o.status.code(), Some(2), "{sel} in a file: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("not supported by dioscope: {}={name}", r.key)),
                "{sel} in a file: {}",
                stderr(&o)
            );
        }
    }
    // An option of a refused engine beside an engine dioscope has.
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=psync",
            "--hostname=h",
            "--filename=x.dat",
            "--size=1m",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not supported by dioscope: hostname="),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("ioengine=net"), "{}", stderr(&o));
    assert!(
        entries(d.path()).iter().all(|e| e == "r.fio"),
        "nothing created"
    );
}

#[test]
fn space_engines_allocate_and_truncate_without_moving_data() {
    let d = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = run_in(d.path(), args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        json(&o)
    };
    // falloc: a sequential write pass allocates the whole (sparse) file.
    std::fs::File::create(d.path().join("sparse.dat"))
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let j = run(&[
        "--name=f",
        "--filename=sparse.dat",
        "--ioengine=falloc",
        "--rw=write",
        "--bs=64k",
        "--size=4m",
        "--output-format=json",
    ]);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 64);
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(d.path().join("sparse.dat")).unwrap();
    assert!(
        m.blocks() * 512 >= 4 << 20,
        "allocated {} bytes",
        m.blocks() * 512
    );
    // ftruncate: each write sets the size to its offset; the last one of a
    // sequential pass over 1 MiB in 4 KiB steps is at 1 MiB - 4 KiB.
    let j = run(&[
        "--name=t",
        "--filename=trunc.dat",
        "--ioengine=ftruncate",
        "--rw=write",
        "--bs=4k",
        "--size=1m",
        "--output-format=json",
    ]);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 256);
    let len = std::fs::metadata(d.path().join("trunc.dat")).unwrap().len();
    assert_eq!(len, (1 << 20) - 4096);
    // No data moves, so verify is refused up front.
    let o = run_in(
        d.path(),
        &[
            "--name=v",
            "--filename=trunc.dat",
            "--ioengine=falloc",
            "--rw=write",
            "--size=1m",
            "--verify=crc32c",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("verify needs an engine that moves data"),
        "{}",
        stderr(&o)
    );
}
