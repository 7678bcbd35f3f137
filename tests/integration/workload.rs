//! Files and offsets (issue 15): nrfiles and file naming, trims on files
//! and devices (and the guard in front of them), iolog record and replay,
//! fio's offset sequences (checked against fio's own write_iolog), and the
//! limits number_ios / io_size. Every test checks the effect on disk or in
//! the log, not only the exit status.

use crate::common::*;
use std::os::unix::fs::FileExt;
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut a = vec!["--eta=never", "--output-format=json"];
    a.extend_from_slice(args);
    run_in(dir, &a)
}

fn job0(o: &std::process::Output) -> serde_json::Value {
    json(o)["jobs"][0].clone()
}

/// The (action, offset, length) of each I/O line of an iolog (v2 or v3).
fn log_ios(p: &Path) -> Vec<(String, u64, u64)> {
    let text = std::fs::read_to_string(p).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            // v3: TIME FILE ACTION OFFSET LEN
            let t = if t.len() == 5 { &t[1..] } else { &t[..] };
            match t {
                [_, a @ ("read" | "write" | "trim"), o, n] => {
                    Some((a.to_string(), o.parse().unwrap(), n.parse().unwrap()))
                }
                _ => None,
            }
        })
        .collect()
}

#[test]
fn nrfiles_makes_that_many_files_of_size_over_nrfiles() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[
            "--name=nf",
            "--nrfiles=4",
            "--numjobs=2",
            "--size=1m",
            "--bs=4k",
            "--rw=write",
            "--ioengine=psync",
            "--group_reporting",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for c in 0..2 {
        for f in 0..4 {
            let p = d.path().join(format!("nf.{c}.{f}"));
            assert_eq!(std::fs::metadata(&p).unwrap().len(), 256 << 10, "{p:?}");
        }
    }
    assert!(!d.path().join("nf.0.4").exists());
    // Each clone writes its size over its four files: 2 x 1 MiB.
    assert_eq!(job0(&o)["write"]["io_bytes"], 2 << 20);
}

#[test]
fn filename_format_names_and_shares_files() {
    let d = tempfile::tempdir().unwrap();
    // Two jobs sharing testfiles.$filenum; a directory in the format is created.
    let job = "[global]\nsize=256k\nbs=4k\nioengine=psync\nnrfiles=2\n\
               filename_format=sub/dir/testfiles.$filenum\n\
               [w]\nrw=write\n[r]\nstonewall\nrw=read\n";
    std::fs::write(d.path().join("j.fio"), job).unwrap();
    let o = run(d.path(), &["j.fio"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let names = entries(&d.path().join("sub/dir"));
    assert_eq!(names, vec!["testfiles.0", "testfiles.1"], "{names:?}");
    let v = json(&o);
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 256 << 10);
    assert_eq!(v["jobs"][1]["read"]["io_bytes"], 256 << 10);
    // $jobname.$jobnum with numjobs: one file per clone.
    let o = run(
        d.path(),
        &[
            "--name=fmt",
            "--filename_format=$jobname-c$jobnum-f$filenum.dat",
            "--numjobs=2",
            "--size=64k",
            "--rw=write",
            "--ioengine=psync",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(d.path().join("fmt-c0-f0.dat").exists() && d.path().join("fmt-c1-f0.dat").exists());
}

#[test]
fn allow_file_create_0_refuses_a_missing_file() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[
            "--name=x",
            "--filename=missing.dat",
            "--size=1m",
            "--allow_file_create=0",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("allow_file_create"), "{}", stderr(&o));
    assert!(!d.path().join("missing.dat").exists());
}

/// A file of random bytes, and where it holds zeros.
fn random_file(p: &Path, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    let mut x = 0x1234_5678_9abc_def1u64;
    for b in v.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8 | 1;
    }
    std::fs::write(p, &v).unwrap();
    v
}

#[test]
fn trim_punches_exactly_the_blocks_trimmed() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("t.dat");
    let before = random_file(&p, 1 << 20);
    // Sequential trims of 64k with 64k holes between them (rw=trim:64k)
    // over the second half: 4 trims.
    let o = run(
        d.path(),
        &[
            "--name=t",
            "--filename=t.dat",
            "--rw=trim:64k",
            "--bs=64k",
            "--offset=512k",
            "--size=512k",
            "--number_ios=4",
            "--ioengine=psync",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = job0(&o);
    assert_eq!(j["trim"]["total_ios"], 4, "{}", j["trim"]);
    assert_eq!(j["trim"]["io_bytes"], 4 * 65536);
    assert!(j["trim"]["lat_ns"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(j["write"]["total_ios"], 0);
    assert_eq!(
        json(&o)["dioscope"]["jobs"][0]["directions"],
        serde_json::json!(["trim"])
    );
    let after = std::fs::read(&p).unwrap();
    assert_eq!(after.len(), before.len(), "a trim keeps the size");
    for k in 0..16 {
        let r = k * 65536..(k + 1) * 65536;
        let trimmed = k >= 8 && (k - 8) % 2 == 0;
        if trimmed {
            assert!(after[r].iter().all(|&b| b == 0), "block {k} not zeroed");
        } else {
            assert_eq!(after[r.clone()], before[r], "block {k} changed");
        }
    }
}

#[test]
fn trimwrite_trims_then_writes_each_block() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tw.dat");
    let before = random_file(&p, 256 << 10);
    let o = run(
        d.path(),
        &[
            "--name=tw",
            "--filename=tw.dat",
            "--rw=trimwrite",
            "--bs=16k",
            "--size=256k",
            "--ioengine=psync",
            "--write_iolog=tw.log",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = job0(&o);
    assert_eq!(j["trim"]["total_ios"], 16);
    assert_eq!(j["write"]["total_ios"], 16);
    assert_eq!(
        json(&o)["dioscope"]["jobs"][0]["directions"],
        serde_json::json!(["write", "trim"])
    );
    // The text report shows both.
    let t = run_in(
        d.path(),
        &[
            "--eta=never",
            "--name=tw",
            "--filename=tw.dat",
            "--rw=trimwrite",
            "--bs=16k",
            "--size=256k",
            "--ioengine=psync",
        ],
    );
    let text = stdout(&t);
    assert!(
        text.contains("  write: IOPS=") && text.contains("  trim: IOPS="),
        "{text}"
    );
    // Each block: a trim, then a write of the same range.
    let ios = log_ios(&d.path().join("tw.log"));
    assert_eq!(ios.len(), 32);
    for (k, pair) in ios.chunks(2).enumerate() {
        let off = k as u64 * 16384;
        assert_eq!(pair[0], ("trim".into(), off, 16384));
        assert_eq!(pair[1], ("write".into(), off, 16384));
    }
    let after = std::fs::read(&p).unwrap();
    assert_ne!(after, before, "the file was rewritten");
    assert!(after.iter().filter(|&&b| b == 0).count() < after.len() / 50);
}

#[test]
fn trim_on_a_device_is_guarded_like_a_write_and_discards_with_consent() {
    let ok = is_root() && have_tool("losetup") && have_tool("mkfs.ext4");
    if !can_run("root, losetup and mkfs.ext4", ok) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    sh("mkfs.ext4", &["-q", "-F", lo.path()]);
    let dev = lo.path().to_string();
    let args = |extra: &[&str]| {
        let mut a = vec![
            "--name=t".to_string(),
            format!("--filename={dev}"),
            "--rw=trim".into(),
            "--bs=1m".into(),
            "--offset=8m".into(),
            "--size=4m".into(),
            "--ioengine=psync".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // A device carrying a file system: refused, as a write would be.
    let a = args(&[]);
    let o = run(d.path(), &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("refusing"), "{}", stderr(&o));
    // The file system is intact.
    let sb = |dev: &str| {
        let mut b = [0u8; 2];
        let f = std::fs::File::open(dev).unwrap();
        f.read_exact_at(&mut b, 1024 + 0x38).unwrap();
        b
    };
    assert_eq!(sb(&dev), [0x53, 0xef]);
    // With consent: trimmed, and the trimmed range reads back as zeros
    // (a loop device discards by punching its image).
    let f = std::fs::OpenOptions::new().write(true).open(&dev).unwrap();
    f.write_all_at(&vec![0xa5u8; 5 << 20], 8 << 20).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let a = args(&[&format!("--destroy-data-on={dev}")]);
    let o = run(d.path(), &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(job0(&o)["trim"]["total_ios"], 4);
    let f = std::fs::File::open(&dev).unwrap();
    let mut buf = vec![0u8; 5 << 20];
    f.read_exact_at(&mut buf, 8 << 20).unwrap();
    assert!(
        buf[..4 << 20].iter().all(|&b| b == 0),
        "trimmed range not zero"
    );
    // The megabyte after the trimmed range keeps its data.
    assert!(
        buf[4 << 20..].iter().all(|&b| b == 0xa5),
        "data after the range lost"
    );
    // Outside the trimmed range: the superblock is still there.
    assert_eq!(sb(&dev), [0x53, 0xef]);
}

#[test]
fn a_recorded_iolog_replays_the_same_ios_and_fio_reads_it() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f").display().to_string();
    let o = run(
        d.path(),
        &[
            "--name=rec",
            &format!("--filename={f}"),
            "--size=1m",
            "--bs=4k",
            "--rw=randrw",
            "--ioengine=libaio",
            "--iodepth=4",
            "--write_iolog=rec.log",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rec = job0(&o);
    let recorded = log_ios(&d.path().join("rec.log"));
    assert_eq!(recorded.len(), 256);
    let o = run(
        d.path(),
        &[
            "--name=rep",
            "--read_iolog=rec.log",
            "--ioengine=libaio",
            "--iodepth=4",
            "--write_iolog=rep.log",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rep = job0(&o);
    assert_eq!(log_ios(&d.path().join("rep.log")), recorded);
    for dir in ["read", "write"] {
        assert_eq!(rep[dir]["total_ios"], rec[dir]["total_ios"], "{dir}");
        assert_eq!(rep[dir]["io_bytes"], rec[dir]["io_bytes"], "{dir}");
    }
    // fio replays dioscope's log with the same counts.
    if !can_run("fio", have_tool("fio")) {
        return;
    }
    let fo = std::process::Command::new("fio")
        .args([
            "--name=fiorep",
            "--read_iolog=rec.log",
            "--ioengine=psync",
            "--output-format=json",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        fo.status.success(),
        "{}",
        String::from_utf8_lossy(&fo.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&fo.stdout).unwrap();
    for dir in ["read", "write"] {
        assert_eq!(
            v["jobs"][0][dir]["total_ios"], rec[dir]["total_ios"],
            "fio {dir}"
        );
    }
}

#[test]
fn a_bad_iolog_is_refused_with_its_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("bad.log"),
        "fio version 2 iolog\n/tmp/x add\n/tmp/x open\n/tmp/x read zero 4096\n",
    )
    .unwrap();
    let o = run(d.path(), &["--name=r", "--read_iolog=bad.log"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("bad.log") && e.contains("line 4"), "{e}");
}

/// Our write_iolog against fio's for patterns whose offsets do not depend
/// on a random generator: fio's order, exactly.
#[test]
fn offset_sequences_match_fio() {
    if !can_run("fio", have_tool("fio")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let cases: &[&[&str]] = &[
        &["--rw=read:-8k", "--size=64k", "--bs=4k"],
        &["--rw=write:4k", "--size=64k", "--bs=4k"],
        &[
            "--rw=read",
            "--size=1m",
            "--bs=4k",
            "--zonemode=strided",
            "--zonesize=16k",
            "--zonerange=64k",
            "--zoneskip=128k",
        ],
        &[
            "--rw=read",
            "--size=1m",
            "--bs=8k",
            "--zonemode=strided",
            "--zonesize=16k",
            "--zoneskip=48k",
        ],
        // size/nrfiles a multiple of bs: with a partial last block fio
        // issues it (a short I/O past the region); dioscope never does.
        &["--rw=read", "--size=384k", "--bs=4k", "--nrfiles=3"],
        &[
            "--rw=read",
            "--size=96k",
            "--bs=4k",
            "--nrfiles=3",
            "--file_service_type=sequential",
        ],
        &["--rw=read", "--size=1m", "--bs=4k", "--number_ios=37"],
        &["--rw=read", "--size=1m", "--bs=4k", "--io_size=200k"],
        &["--rw=read", "--size=256k", "--io_size=1m", "--bs=64k"],
    ];
    for (i, case) in cases.iter().enumerate() {
        let mut logs = Vec::new();
        for tool in ["fio", "dioscope"] {
            let log = d.path().join(format!("{tool}.{i}.log"));
            let _ = std::fs::remove_file(&log);
            let mut a: Vec<String> = vec![
                "--name=seq".into(),
                format!("--directory={}", d.path().display()),
                "--ioengine=psync".into(),
                format!("--write_iolog={}", log.display()),
            ];
            a.extend(case.iter().map(|s| s.to_string()));
            let o = if tool == "fio" {
                std::process::Command::new("fio")
                    .args(&a)
                    .current_dir(d.path())
                    .output()
                    .unwrap()
            } else {
                a.push("--eta=never".into());
                run_in(d.path(), &a.iter().map(String::as_str).collect::<Vec<_>>())
            };
            assert!(o.status.success(), "{tool} {case:?}: {}", stderr(&o));
            logs.push(log_ios(&log));
        }
        assert!(!logs[0].is_empty(), "{case:?}");
        assert_eq!(logs[1], logs[0], "dioscope vs fio for {case:?}");
    }
}

#[test]
fn percent_offset_with_direct_io_is_rounded_to_the_block_size() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[
            "--name=p",
            "--filename=p.dat",
            "--size=1m",
            "--offset=33%",
            "--bs=4k",
            "--direct=1",
            "--rw=read",
            "--ioengine=psync",
            "--write_iolog=p.log",
        ],
    );
    // tmpfs has no O_DIRECT: that is the only acceptable refusal.
    if stderr(&o).contains("does not support direct I/O") {
        eprintln!("SKIPPED: no O_DIRECT on the temporary directory");
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // As fio: the file did not exist, so 33% of it is 0.
    let ios = log_ios(&d.path().join("p.log"));
    assert_eq!(ios[0].1, 0);
    assert_eq!(ios.len(), 256);
    // Now it holds 1 MiB: 33% = 346030.08, up to the next 4 KiB = 348160,
    // and the file is extended to hold offset + size (fio does the same).
    std::fs::remove_file(d.path().join("p.log")).unwrap();
    let o = run(
        d.path(),
        &[
            "--name=p",
            "--filename=p.dat",
            "--size=1m",
            "--offset=33%",
            "--bs=4k",
            "--direct=1",
            "--rw=read",
            "--ioengine=psync",
            "--write_iolog=p.log",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ios = log_ios(&d.path().join("p.log"));
    assert_eq!(ios[0].1, 348160, "{:?}", &ios[..2]);
    assert_eq!(ios.len(), 256);
    assert!(ios.iter().all(|x| x.1 % 4096 == 0 && x.1 >= 348160));
    assert_eq!(
        std::fs::metadata(d.path().join("p.dat")).unwrap().len(),
        348160 + (1 << 20)
    );
    // Without size: the rest of the file from the rounded offset.
    let o = run(
        d.path(),
        &[
            "--name=p",
            "--filename=p.dat",
            "--offset=33%",
            "--bs=4k",
            "--direct=1",
            "--rw=read",
            "--ioengine=psync",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // 33% of 1396736 = 460922.88 → 462848; (1396736 - 462848) / 4096 = 228 (fio: 228).
    assert_eq!(job0(&o)["read"]["total_ios"], 228);
}

#[test]
fn rejected_forms_say_not_supported() {
    let d = tempfile::tempdir().unwrap();
    for (args, what) in [
        (&["--name=z", "--zonemode=zbd"][..], "zonemode=zbd"),
        (
            &[
                "--name=u",
                "--unlink_each_loop=1",
                "--loops=2",
                "--size=64k",
            ][..],
            "unlink_each_loop",
        ),
    ] {
        let o = run(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("not supported by dioscope") && e.contains(what),
            "{e}"
        );
    }
}
