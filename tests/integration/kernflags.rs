//! `uncached=1` (RWF_DONTCACHE) and `atomic=1` (RWF_ATOMIC): what each file
//! system does with them, measured on loop devices this test makes. The
//! outcome per file system is printed; the test asserts that it is one of
//! the two promised ones — the flag works (no page cache left behind; the
//! atomic writes succeed), or dioscope refuses before the run and says why
//! and what to do.

use crate::common::*;
use std::path::Path;

const FILE_MB: u64 = 8;

/// Pages of `f` in the page cache (fincore).
fn cached_pages(f: &Path) -> u64 {
    let o = sh("fincore", &["-n", "-o", "PAGES", f.to_str().unwrap()]);
    o.trim()
        .parse()
        .unwrap_or_else(|_| panic!("fincore said {o:?}"))
}

/// Drop `f`'s pages from the page cache (GNU dd: nocache with count=0).
fn evict(f: &Path) {
    sh("sync", &[]);
    let i = format!("if={}", f.display());
    sh("dd", &[&i, "iflag=nocache", "count=0", "status=none"]);
}

fn mkfs_size(fs: &str) -> u64 {
    if fs == "xfs" {
        512 << 20 // mkfs.xfs refuses file systems under 300 MB
    } else {
        128 << 20
    }
}

fn read_job(dir: &Path, engine: &str, uncached: &str) -> std::process::Output {
    run_in(
        dir,
        &[
            "--name=u",
            "--filename=data",
            "--rw=read",
            "--bs=16k",
            &format!("--size={FILE_MB}m"),
            &format!("--ioengine={engine}"),
            &format!("--uncached={uncached}"),
            "--output-format=json",
            "--eta=never",
        ],
    )
}

#[test]
fn uncached_reads_leave_no_page_cache_or_are_refused_per_file_system() {
    let tools = have_tool("fincore") && have_tool("mkfs.xfs") && have_tool("mkfs.btrfs");
    if !can_run("root, fincore, mkfs.xfs and mkfs.btrfs", is_root() && tools) {
        return;
    }
    for fs in ["ext4", "xfs", "btrfs"] {
        let m = MountedFs::new(mkfs_size(fs), fs);
        let f = m.path().join("data");
        std::fs::write(&f, vec![0x5au8; (FILE_MB << 20) as usize]).unwrap();
        let total = FILE_MB << 20 >> 12;
        for engine in ["pvsync2", "io_uring"] {
            evict(&f);
            let o = read_job(m.path(), engine, "1");
            if !o.status.success() {
                let e = stderr(&o);
                assert!(
                    e.contains(&format!("({fs}) refuses RWF_DONTCACHE"))
                        && e.contains("drop uncached"),
                    "{fs}: neither ran nor refused clearly: {e}"
                );
                println!(
                    "{fs} {engine}: uncached=1 refused before the run: {}",
                    e.trim()
                );
                continue;
            }
            assert_eq!(
                json(&o)["jobs"][0]["read"]["io_bytes"].as_u64(),
                Some(FILE_MB << 20)
            );
            let uncached = cached_pages(&f);
            evict(&f);
            assert!(read_job(m.path(), engine, "0").status.success());
            let cached = cached_pages(&f);
            println!("{fs} {engine}: after uncached=1 {uncached} of {total} pages cached, after uncached=0 {cached}");
            assert!(
                uncached * 20 <= total,
                "{fs} {engine}: uncached=1 left {uncached} of {total} pages"
            );
            assert!(
                cached * 10 >= total * 9,
                "{fs} {engine}: uncached=0 left only {cached} of {total} pages"
            );
        }
    }
}

fn atomic_job(dir: &Path, engine: &str, bs: &str) -> std::process::Output {
    run_in(
        dir,
        &[
            "--name=a",
            "--filename=data",
            "--rw=randwrite",
            &format!("--bs={bs}"),
            "--size=4m",
            "--direct=1",
            "--atomic=1",
            "--iodepth=8",
            &format!("--ioengine={engine}"),
            "--output-format=json",
            "--eta=never",
        ],
    )
}

#[test]
fn atomic_writes_succeed_or_are_refused_with_the_limits_per_file_system() {
    if !can_run("root and mkfs.xfs", is_root() && have_tool("mkfs.xfs")) {
        return;
    }
    for fs in ["ext4", "xfs"] {
        let m = MountedFs::new(mkfs_size(fs), fs);
        for engine in ["pvsync2", "io_uring"] {
            let o = atomic_job(m.path(), engine, "16k");
            let e = stderr(&o);
            if !o.status.success() {
                assert!(
                    e.contains(&format!("({fs}) reports no atomic-write limits"))
                        && e.contains("drop atomic"),
                    "{fs}: neither ran nor refused clearly: {e}"
                );
                println!(
                    "{fs} {engine}: atomic=1 refused before the run: {}",
                    e.trim()
                );
                continue;
            }
            let j = json(&o);
            assert_eq!(j["jobs"][0]["error"].as_u64(), Some(0), "{fs}: {e}");
            assert_eq!(
                j["jobs"][0]["write"]["io_bytes"].as_u64(),
                Some(4 << 20),
                "{fs}"
            );
            // Past the file's unit: refused before the run, naming the limits.
            let big = atomic_job(m.path(), engine, "2m");
            let be = stderr(&big);
            assert!(
                !big.status.success() && be.contains("outside the atomic-write unit"),
                "{be}"
            );
            println!(
                "{fs} {engine}: 16 KiB atomic writes succeeded; bs=2m refused: {}",
                be.trim()
            );
        }
    }
}

#[test]
fn atomic_and_uncached_refuse_what_the_kernel_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--atomic=1", "--ioengine=pvsync2"], "needs direct=1"),
        (
            &["--atomic=1", "--direct=1", "--ioengine=libaio"],
            "atomic works with pvsync2 or io_uring",
        ),
        (
            &["--atomic=1", "--direct=1", "--ioengine=pvsync2", "--bs=12k"],
            "power of two",
        ),
        (
            &[
                "--atomic=1",
                "--direct=1",
                "--ioengine=io_uring",
                "--bssplit=4k/50:8k/50",
            ],
            "mixed write sizes",
        ),
        (
            &["--uncached=1", "--ioengine=psync"],
            "uncached works with pvsync2 or io_uring",
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["--name=x", "--filename=f", "--rw=write", "--size=1m"];
        args.extend_from_slice(extra);
        let o = run_in(dir.path(), &args);
        assert!(
            !o.status.success() && stderr(&o).contains(want),
            "{extra:?}: {}",
            stderr(&o)
        );
    }
    assert!(
        !dir.path().join("f").exists(),
        "refused before anything was created"
    );
}

/// fio 3.41's newer syntax: refused with the reason where dioscope has no
/// meaning for it (priority hints; pattern_hdr without a pattern), else
/// accepted and run: `ss=lat`, `verify=pattern_hdr` with
/// `verify_pattern_interval`, cmdprio_bssplit's five-field form with hint 0.
#[test]
fn newer_fio_syntax_is_refused_with_its_reason_or_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str); 2] = [
        (
            "--verify=pattern_hdr",
            "verify=pattern_hdr checks a verify_pattern",
        ),
        (
            "--cmdprio_bssplit=4k/50/1/0/2:64k/50",
            "priority hints (the fifth field, 2",
        ),
    ];
    for (opt, want) in cases {
        let args = [
            "--name=x",
            "--filename=f",
            "--rw=write",
            "--size=1m",
            "--ioengine=io_uring",
            opt,
        ];
        let o = run_in(dir.path(), &args);
        assert!(
            !o.status.success() && stderr(&o).contains(want),
            "{opt}: {}",
            stderr(&o)
        );
    }
    let o = run_in(
        dir.path(),
        &[
            "--name=x",
            "--filename=f",
            "--rw=write",
            "--size=1m",
            "--ioengine=io_uring",
            "--bssplit=4k/50:64k/50",
            "--cmdprio_bssplit=4k/50/1/0/0:64k/50/1/0/0",
            "--output-format=json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["jobs"][0]["error"].as_u64(), Some(0), "{j}");
    assert!(
        j["jobs"][0]["write"]["io_bytes"].as_u64() >= Some(1 << 20),
        "{j}"
    );
    for extra in [
        &["--steadystate=lat:5%", "--ss_dur=2"][..],
        &["--steadystate=lat_slope:50us", "--ss_dur=2"][..],
        &[
            "--verify=pattern_hdr",
            "--verify_pattern=0xab%o",
            "--verify_pattern_interval=512",
        ][..],
    ] {
        let mut args = vec![
            "--name=x",
            "--filename=f",
            "--rw=write",
            "--size=1m",
            "--ioengine=io_uring",
            "--output-format=json",
        ];
        args.extend_from_slice(extra);
        let o = run_in(dir.path(), &args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["jobs"][0]["error"].as_u64(), Some(0), "{extra:?}: {j}");
        if extra[0].starts_with("--verify") {
            let v = &j["dioscope"]["verify"]["x"];
            assert_eq!(
                (v["checked"].as_u64(), v["bad"].as_u64()),
                (Some(256), Some(0)),
                "{v}"
            );
            assert_eq!(v["algo"], "pattern_hdr", "{v}");
        } else {
            assert!(
                j["jobs"][0]["steadystate"]["ss"]
                    .as_str()
                    .unwrap()
                    .starts_with("lat"),
                "{j}"
            );
        }
    }
}
