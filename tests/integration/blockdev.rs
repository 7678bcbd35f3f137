//! Block devices: loop devices the tests create and always remove.

use crate::common::*;

#[test]
fn every_engine_reads_and_writes_a_loop_device() {
    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 32 << 20, &[]);
    lo.fill_random();
    for engine in ["psync", "pvsync2", "libaio", "io_uring"] {
        for rw in ["randread", "randwrite", "read", "write"] {
            let o = run_in(
                d.path(),
                &[
                    "--name=b",
                    &format!("--filename={}", lo.path()),
                    &format!("--destroy-data-on={}", lo.path()),
                    &format!("--ioengine={engine}"),
                    &format!("--rw={rw}"),
                    "--size=8m",
                    "--iodepth=8",
                    "--direct=1",
                    "--output-format=json",
                ],
            );
            assert_eq!(o.status.code(), Some(0), "{engine} {rw}: {}", stderr(&o));
            let j = json(&o);
            let dir = if rw.contains("read") { "read" } else { "write" };
            assert_eq!(j["jobs"][0][dir]["io_bytes"], 8 << 20, "{engine} {rw}");
            assert_eq!(j["dioscope"]["targets"][0]["kind"], "block_device");
        }
    }
}

#[test]
fn device_size_comes_from_the_device() {
    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    lo.fill_random();
    let o = run_in(
        d.path(),
        &[
            "--name=s",
            &format!("--filename={}", lo.path()),
            "--rw=read",
            "--bs=1m",
            "--direct=1",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(
        j["jobs"][0]["read"]["io_bytes"],
        16 << 20,
        "no size given: the whole device"
    );
    // A size larger than the device is refused before any I/O.
    let o = run_in(
        d.path(),
        &[
            "--name=s",
            &format!("--filename={}", lo.path()),
            "--rw=read",
            "--size=64m",
            "--direct=1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("lower size="), "{}", stderr(&o));
}

#[test]
fn sector_size_sets_the_alignment() {
    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &["--sector-size", "4096"]);
    let o = run_in(
        d.path(),
        &[
            "--name=s",
            &format!("--filename={}", lo.path()),
            "--rw=randread",
            "--bs=512",
            "--direct=1",
            "--size=1m",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("4096") && e.contains("bs=512") && e.contains("logical block size"),
        "{e}"
    );
}

/// A device target is opened with O_NOATIME, as fio opens every target that
/// is not a regular file: reads leave the node's access time alone (without
/// it, each read takes the kernel's touch_atime path, and relatime updates a
/// day-old access time on the first).
#[test]
fn reads_of_a_device_leave_its_access_time_alone() {
    use std::os::unix::fs::MetadataExt;
    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    lo.fill_random();
    // Two days old: relatime would update it on the first read.
    let old = "@1700000000";
    // sync (lseek + read: a descriptor of each worker's own), psync, the
    // rings, and buffered reads.
    for (engine, direct) in [
        ("sync", 1),
        ("psync", 1),
        ("io_uring", 1),
        ("libaio", 1),
        ("psync", 0),
    ] {
        let t = std::process::Command::new("touch")
            .args(["-a", "-d", old, lo.path()])
            .status()
            .unwrap();
        assert!(t.success());
        assert_eq!(std::fs::metadata(lo.path()).unwrap().atime(), 1_700_000_000);
        let o = run_in(
            d.path(),
            &[
                "--name=a",
                &format!("--filename={}", lo.path()),
                &format!("--ioengine={engine}"),
                "--rw=randread",
                "--size=4m",
                &format!("--direct={direct}"),
                "--output-format=json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
        assert_eq!(json(&o)["jobs"][0]["read"]["io_bytes"], 4 << 20, "{engine}");
        assert_eq!(
            std::fs::metadata(lo.path()).unwrap().atime(),
            1_700_000_000,
            "{engine} direct={direct}: reading the device updated its access time"
        );
    }
}
