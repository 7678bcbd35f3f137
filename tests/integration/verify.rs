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

/// Linux's EILSEQ, the `error` fio gives a job whose blocks read back wrong.
const EILSEQ: i64 = 84;

fn j_error(o: &std::process::Output) -> i64 {
    json(o)["jobs"][0]["error"].as_i64().unwrap()
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
    // Where fio's verify tests look: the job's error is EILSEQ.
    assert_eq!(j_error(&o), EILSEQ, "a verify failure is the job's error");
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

/// `bs=16k verify_interval=12k` (fio requires the interval to divide the
/// block): each block holds a 12k and a 4k interval, both written and
/// checked, and damage in the 4k tail of a block is named at its offset.
/// Block sizes that vary with an interval that divides none of them are
/// refused before anything is made.
#[test]
fn verify_interval_that_does_not_divide_the_block_size() {
    let d = tempfile::tempdir().unwrap();
    let o = write_job(d.path(), "v.dat", &["--verify_interval=12k"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["dioscope"]["verify"]["v"]["checked"], 512, "{j:#}");
    assert_eq!(j["dioscope"]["verify"]["v"]["bad"], 0, "{j:#}");
    let bad_at = 5 * 16384 + 12288 + 1000;
    corrupt(&d.path().join("v.dat"), bad_at, b"not what was written");
    let o = run_in(
        d.path(),
        &[
            "--name=v",
            "--filename=v.dat",
            "--size=4m",
            "--rw=read",
            "--bs=16k",
            "--verify_interval=12k",
            "--verify=crc32c",
            "--verify_only=1",
            "--direct=1",
            "--output-format=json",
        ],
    );
    assert_eq!(
        bad_blocks(&o),
        [(5 * 16384 + 12288, "torn_write".to_string())]
    );

    let e = tempfile::tempdir().unwrap();
    let o = write_job(
        e.path(),
        "v.dat",
        &["--bssplit=8k/50:12k/50", "--verify_interval=8k"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("verify_interval=4096"),
        "{}",
        stderr(&o)
    );
    assert!(entries(e.path()).is_empty());
}

#[test]
fn verify_pattern_is_written_and_a_wrong_block_is_named() {
    let d = tempfile::tempdir().unwrap();
    // verify_pattern alone: verify=pattern, blocks are the bare pattern.
    let o = write_job(
        d.path(),
        "v.dat",
        &["--verify=0", "--verify_pattern=0x00ff%o", "--rw=write"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["dioscope"]["verify"]["v"]["checked"], 256);
    let data = std::fs::read(d.path().join("v.dat")).unwrap();
    let unit = |off: u64| {
        let mut u = vec![0x00, 0xff];
        u.extend_from_slice(&off.to_le_bytes());
        u
    };
    for (k, x) in data[7 * 16384..8 * 16384].iter().enumerate() {
        assert_eq!(*x, unit(7 * 16384)[k % 10], "byte {k} of block 7");
    }
    corrupt(&d.path().join("v.dat"), 3 * 16384 + 100, b"x");
    let o = write_job(
        d.path(),
        "v.dat",
        &[
            "--verify=0",
            "--verify_pattern=0x00ff%o",
            "--verify_only=1",
            "--verify_dump=1",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        bad_blocks(&o),
        vec![(3 * 16384, "pattern_mismatch".to_string())]
    );
    // verify_dump: the block as read and as it should be.
    let got = std::fs::read(d.path().join("v.dat.49152.received")).unwrap();
    let want = std::fs::read(d.path().join("v.dat.49152.expected")).unwrap();
    assert_eq!(got.len(), 16384);
    let diff: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    assert_eq!(diff, vec![100]);
}

#[test]
fn verify_offset_header_seed_async_and_experimental_round_trip() {
    let d = tempfile::tempdir().unwrap();
    for extra in [
        &["--verify_offset=4096"][..],
        &["--verify_async=4"][..],
        &["--experimental_verify=1"][..],
        &["--verify_pattern=\"dioscope\"", "--verify=md5"][..],
        &["--verify=crc64"][..],
        &["--verify=crc16"][..],
        &["--verify=crc7"][..],
        &["--verify=sha512"][..],
        &["--verify=meta"][..],
        &[
            "--verify_write_sequence=0",
            "--verify_async=2",
            "--verify_async_cpus=0",
        ][..],
    ] {
        let o = write_job(d.path(), "v.dat", extra);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        let v = &json(&o)["dioscope"]["verify"]["v"];
        assert_eq!(
            (v["checked"].as_u64(), v["bad"].as_u64()),
            (Some(256), Some(0)),
            "{extra:?}"
        );
    }
    // The header really moved: at 4096 of each block, not at 0.
    write_job(d.path(), "v.dat", &["--verify_offset=4096", "--rw=write"]);
    let data = std::fs::read(d.path().join("v.dat")).unwrap();
    assert_eq!(&data[16384 + 4096..16384 + 4100], b"DIOV");
    assert_ne!(&data[16384..16388], b"DIOV");
    // Another seed: bad, unless verify_header_seed=0.
    let o = write_job(d.path(), "v.dat", &["--verify_only=1", "--randseed=7"]);
    assert_eq!(o.status.code(), Some(1));
    let o = write_job(
        d.path(),
        "v.dat",
        &[
            "--verify_only=1",
            "--randseed=7",
            "--verify_header_seed=0",
            "--verify_offset=4096",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // verify_offset must leave the header room.
    let o = write_job(d.path(), "v.dat", &["--verify_offset=16380"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("verify_offset"), "{}", stderr(&o));
}

#[test]
fn verify_backlog_catches_a_corruption_while_the_job_runs() {
    let d = tempfile::tempdir().unwrap();
    // Job `v` writes verifiable blocks and checks each one right after it
    // completes; job `z`, at the same time, overwrites the same 256 KiB with
    // zeros. There is no read-back (do_verify=0): only the backlog can see it.
    let run = |backlog: &str| {
        run_in(
            d.path(),
            &[
                "--name=v",
                "--filename=v.dat",
                "--size=256k",
                "--rw=randwrite",
                "--bs=4k",
                "--verify=crc32c",
                "--do_verify=0",
                backlog,
                "--time_based",
                "--runtime=1s",
                "--output-format=json",
                "--name=z",
                "--filename=v.dat",
                "--size=256k",
                "--rw=write",
                "--bs=4k",
                "--zero_buffers",
                "--time_based",
                "--runtime=1s",
            ],
        )
    };
    let o = run("--verify_backlog=1");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = &json(&o)["dioscope"]["verify"]["v"];
    assert!(v["checked"].as_u64().unwrap() > 100, "{v}");
    assert!(v["bad"].as_u64().unwrap() > 0, "{v}");
    assert!(
        v["lost_writes"].as_u64().unwrap() > 0,
        "zeros have no header: {v}"
    );
    let o = run("--verify_backlog=0");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn an_interrupted_verify_job_saves_its_state_for_verify_only() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "--name=v",
        "--filename=v.dat",
        "--size=64m",
        "--rw=randwrite",
        "--bs=4k",
        "--verify=crc32c",
        "--rate_iops=2000",
        "--time_based",
        "--runtime=60s",
    ];
    let child = std::process::Command::new(bin())
        .args(args)
        .current_dir(d.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_for("the job to write", 30, || {
        worker_io(pid, "v").is_some_and(|(_, w)| w > 1 << 20)
    });
    kill(pid, 2);
    let out = child.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr).into_owned();
    let state = d.path().join("local-v-0-verify.state");
    assert!(state.exists(), "no state file; stderr: {e}");
    // The state covers part of the file: checking all of it finds unwritten
    // (lost) blocks; checking what the state lists finds none.
    let only = |load: &str| {
        let mut a: Vec<&str> = args[..6].to_vec();
        a.extend(["--verify_only=1", load, "--output-format=json"]);
        run_in(d.path(), &a)
    };
    let o = only("--verify_state_load=1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let checked = json(&o)["dioscope"]["verify"]["v"]["checked"]
        .as_u64()
        .unwrap();
    assert!(
        (256..16384).contains(&checked),
        "{checked} blocks in the state"
    );
    let o = only("--verify_state_load=0");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        json(&o)["dioscope"]["verify"]["v"]["lost_writes"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Without a state file, verify_state_load says where it looked.
    std::fs::remove_file(&state).unwrap();
    let o = only("--verify_state_load=1");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("local-v-0-verify.state"),
        "{}",
        stderr(&o)
    );
}

/// issue 24: the read-back of a job that also reads replayed its whole plan
/// (its reads too) and reported the blocks it read but never wrote as lost
/// writes; it reads back exactly the blocks written, and fio counts those
/// reads in the job's read direction (here, as in fio 3.33: the job's
/// reads and the read-back add up to io_size, since every block written
/// is read back once).
#[test]
fn randrw_read_back_checks_only_written_blocks_and_counts_as_reads() {
    let d = tempfile::tempdir().unwrap();
    let (size, io_size, bs) = (16u64 << 20, 4u64 << 20, 4096u64);
    for extra in [
        &["--experimental_verify=1", "--verify=md5"][..],
        &["--verify=crc32c", "--direct=1", "--rwmixread=30"],
        &["--verify=md5", "--ioengine=sync", "--rwmixread=70"],
    ] {
        let mut args = vec![
            "--name=j".to_string(),
            "--filename=g".into(),
            "--rw=randrw".into(),
            format!("--size={size}"),
            format!("--io_size={io_size}"),
            format!("--bs={bs}"),
            "--do_verify=1".into(),
            "--output-format=json".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        let j = json(&o);
        let v = &j["dioscope"]["verify"]["j"];
        assert_eq!(v["bad"], 0, "{extra:?}: {v}");
        let job = &j["jobs"][0];
        let written = job["write"]["total_ios"].as_u64().unwrap();
        assert!(written > 0);
        assert_eq!(
            v["checked"].as_u64(),
            Some(written),
            "each block written, once"
        );
        assert_eq!(job["error"], 0);
        assert_eq!(job["read"]["io_bytes"].as_u64(), Some(io_size), "{extra:?}");
        assert_eq!(job["read"]["total_ios"].as_u64(), Some(io_size / bs));
        assert_eq!(
            job["read"]["clat_ns"]["N"].as_u64(),
            Some(io_size / bs),
            "the read-back's latencies are the read direction's too"
        );
        std::fs::remove_file(d.path().join("g")).unwrap();
    }
}

/// A write job's read-back is its read direction, as fio reports it: every
/// block once, over the read-back's own time.
#[test]
fn write_job_read_back_is_reported_as_reads() {
    let d = tempfile::tempdir().unwrap();
    let (size, bs) = (4u64 << 20, 4096u64);
    let size_arg = format!("--size={size}");
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--filename=x",
            &size_arg,
            "--rw=write",
            "--verify=crc32c",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let r = &j["jobs"][0]["read"];
    assert_eq!(r["io_bytes"].as_u64(), Some(size));
    assert_eq!(r["total_ios"].as_u64(), Some(size / bs));
    assert_eq!(r["lat_ns"]["N"].as_u64(), Some(size / bs));
    assert!(r["iops"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(j["jobs"][0]["write"]["io_bytes"].as_u64(), Some(size));
}

/// The text report shows the read-back's reads over the read direction's
/// own time, as the JSON does (before: over the write run's time, which
/// gave the reads the writes' IOPS).
#[test]
fn text_read_rate_of_a_read_back_is_the_json_one() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--filename=x",
            "--size=32m",
            "--rw=write",
            "--verify=crc32c",
            "--output-format=normal,json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let (j, text) = json_then_text(&out);
    let iops = |text: &str, dir: &str| -> f64 {
        let l = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{dir}: IOPS=")))
            .unwrap_or_else(|| panic!("no {dir} line: {text}"));
        let v = l.split("IOPS=").nth(1).unwrap().split(',').next().unwrap();
        let (num, mult) = match v.chars().last() {
            Some('k') => (&v[..v.len() - 1], 1e3),
            Some('M') => (&v[..v.len() - 1], 1e6),
            Some('G') => (&v[..v.len() - 1], 1e9),
            _ => (v, 1.0),
        };
        num.parse::<f64>().unwrap() * mult
    };
    for dir in ["read", "write"] {
        let want = j["jobs"][0][dir]["iops"].as_f64().unwrap();
        let got = iops(text, dir);
        assert!(
            (got - want).abs() <= want * 0.01,
            "{dir}: text {got} IOPS, JSON {want}: {out}"
        );
    }
}

/// verify_only checks what the job wrote, as fio's dry run does: a
/// `norandommap` write leaves blocks it never touched, a mixed `rw` leaves
/// the reads' blocks and `rw=write:16k` leaves holes, and none of them is
/// a lost write; a written block zeroed still is.
#[test]
fn verify_only_checks_only_the_blocks_the_job_wrote() {
    let d = tempfile::tempdir().unwrap();
    for (name, extra) in [
        ("norandommap", &["--norandommap=1"][..]),
        ("mixed", &["--rw=rw"][..]),
        ("holes", &["--rw=write:16k"][..]),
    ] {
        let target = format!("{name}.dat");
        let o = write_job(d.path(), &target, extra);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let wrote = json(&o)["dioscope"]["verify"]["v"]["checked"]
            .as_u64()
            .unwrap();
        assert!(wrote > 0 && wrote < 256, "{name}: {wrote} blocks written");
        let mut vo = extra.to_vec();
        vo.push("--verify_only=1");
        let o = write_job(d.path(), &target, &vo);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["dioscope"]["verify"]["v"]["bad"], 0, "{name}");
        assert_eq!(
            j["dioscope"]["verify"]["v"]["checked"], wrote,
            "{name}: verify_only checks the blocks the run wrote"
        );
    }
    // The holes of rw=write:16k are blocks 1, 3, 5, …: a hole zeroed is
    // not checked, a written block zeroed is a lost write.
    let p = d.path().join("holes.dat");
    corrupt(&p, 16384, &[0u8; 16384]);
    let o = write_job(
        d.path(),
        "holes.dat",
        &["--rw=write:16k", "--verify_only=1"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    corrupt(&p, 4 * 16384, &[0u8; 16384]);
    let o = write_job(
        d.path(),
        "holes.dat",
        &["--rw=write:16k", "--verify_only=1"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(bad_blocks(&o), vec![(4 * 16384, "lost_write".to_string())]);
}
