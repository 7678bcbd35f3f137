//! Tests on real loop devices and file systems. They need root and losetup
//! (and some sfdisk, mkfs.btrfs, chattr). Without them they print why and
//! pass, except in CI (`CI` set), where a missing prerequisite fails the test
//! as in tests/integration: a skipped check must not pass for a green one.
//! Every loop device and mount is released by a guard, also when an
//! assertion fails.

use crate::diag::findings::SilentlyBuffered;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::device::{self, resolve, DevRole, DeviceMetrics};
use super::findings::{BufferedReason, Finding};
use super::fs::silent_buffering;
use super::pagecache::{drop_cache_until_clean, resident};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// A prerequisite of `test` is missing: fail in CI, else say so (the caller
/// then returns and the test passes without checking anything).
fn missing(test: &str, why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{test}: CI must provide {why} (scripts/install-deps.sh, run as root)");
    }
    eprintln!("skipping {test}: {why}");
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// A loop device over a backing file in a private temporary directory;
/// detached and removed on drop.
struct LoopDev {
    dev: PathBuf,
    backing: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoopDev {
    /// `None` (after saying why) when the test cannot run here.
    fn new(test: &str, size: u64, extra: &[&str]) -> Option<LoopDev> {
        if !is_root() {
            missing(test, "root, to create loop devices");
            return None;
        }
        if !have("losetup") {
            missing(test, "losetup");
            return None;
        }
        // Under the build directory: a disk-backed file system, not tmpfs.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).ok()?;
        let backing = dir.path().join("backing.img");
        let f = std::fs::File::create(&backing).ok()?;
        f.set_len(size).ok()?;
        drop(f);
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .args(extra)
            .arg(&backing)
            .output()
            .ok()?;
        if !out.status.success() {
            let why = format!(
                "a loop device (losetup failed: {})",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            missing(test, &why);
            return None;
        }
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Some(LoopDev {
            dev,
            backing,
            _dir: dir,
        })
    }

    fn name(&self) -> String {
        self.dev.file_name().unwrap().to_string_lossy().into_owned()
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// A mounted file system; unmounted on drop (before its loop device goes).
struct Mounted {
    dir: tempfile::TempDir,
}

impl Mounted {
    fn new(dev: &Path) -> Option<Mounted> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .arg(dev)
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Mounted { dir })
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // A first umount can fail with EBUSY while the kernel still holds a
        // just-closed file: retry, then detach lazily, so no mount (and no
        // loop device under it) outlives the test.
        for _ in 0..50 {
            let ok = Command::new("umount")
                .arg(self.dir.path())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn seed_004_buffered_reader_leaves_pages_that_drop_cache_removes() {
    let Some(lo) = LoopDev::new("seed_004 page-cache test", 64 << 20, &[]) else {
        return;
    };
    let dev = std::fs::File::open(&lo.dev).unwrap();
    // Start clean: whatever probed the new device is gone.
    assert_eq!(
        drop_cache_until_clean(dev.as_raw_fd(), true, 0, 64 << 20).unwrap(),
        0
    );

    // A buffered reader, as blkid is: read the first 1 MiB without O_DIRECT.
    let mut reader = std::fs::File::open(&lo.dev).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    reader.read_exact(&mut buf).unwrap();
    let r = resident(&lo.dev, 0, None).unwrap();
    assert!(r.pages >= (1 << 20) / r.page_size, "{r:?}");
    // The count is per range: the last MiB was never read.
    assert_eq!(resident(&lo.dev, 63 << 20, Some(1 << 20)).unwrap().pages, 0);

    // Readahead the reader started may still be in flight; the retrying
    // drop waits for it. Another process on this shared machine may read
    // the new device between the drop and the count (a scan of every block
    // device); the drop must still leave it clean at least once in a few
    // tries, which a drop that did nothing never would.
    let mut left = Vec::new();
    for _ in 0..5 {
        assert_eq!(
            drop_cache_until_clean(dev.as_raw_fd(), true, 0, 64 << 20).unwrap(),
            0
        );
        left.push(resident(&lo.dev, 0, None).unwrap().pages);
        if left.last() == Some(&0) {
            break;
        }
    }
    assert_eq!(left.last(), Some(&0), "pages after each drop: {left:?}");
}

#[test]
fn loop_device_resolves_to_itself_and_the_disk_under_its_backing_file() {
    let Some(lo) = LoopDev::new("loop resolution test", 16 << 20, &[]) else {
        return;
    };
    let devs = resolve(&lo.dev);
    assert!(!devs.is_empty());
    assert_eq!(devs[0].name, lo.name());
    assert_eq!(devs[0].role, DevRole::Target);
    assert_eq!(
        devs[0].backing_file.as_deref(),
        Some(std::fs::canonicalize(&lo.backing).unwrap().as_path())
    );
    let under_backing = resolve(&lo.backing);
    if under_backing.is_empty() {
        eprintln!("the backing file's file system has no block device; chain ends at the loop");
        assert_eq!(devs.len(), 1);
    } else {
        assert_eq!(devs[1].role, DevRole::LoopBacking);
        assert_eq!(devs[1].name, under_backing[0].name);
    }
    assert!(devs[0].snapshot().is_some());
}

#[test]
fn partition_resolves_to_its_disk() {
    if !have("sfdisk") {
        missing("partition test", "sfdisk");
        return;
    }
    let Some(lo) = LoopDev::new("partition test", 16 << 20, &["-P"]) else {
        return;
    };
    let mut p = Command::new("sfdisk")
        .arg("--quiet")
        .arg(&lo.dev)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        p.stdin.as_mut().unwrap(),
        b"label: dos\nstart=2048, type=83\n",
    )
    .unwrap();
    assert!(p.wait().unwrap().success());
    // sfdisk re-reads the table and the kernel adds the partition; its /dev
    // node needs devtmpfs or udev, which containers may lack, so make one
    // from sysfs when it is not there.
    let pname = format!("{}p1", lo.name());
    let sys_dev = PathBuf::from("/sys/class/block").join(&pname).join("dev");
    let nodes = tempfile::tempdir().unwrap();
    if !sys_dev.exists() {
        // The re-read can leave the table unread here (a loop device with
        // a single minor); partx adds partitions one by one with BLKPG.
        let _ = Command::new("partx").arg("-a").arg(&lo.dev).status();
    }
    let mut part = PathBuf::from("/dev").join(&pname);
    if !part.exists() {
        let Ok(majmin) = std::fs::read_to_string(&sys_dev) else {
            missing(
                "partition test",
                "partitions on loop devices (losetup -P, partx)",
            );
            return;
        };
        let (maj, min) = majmin.trim().split_once(':').unwrap();
        part = nodes.path().join(&pname);
        assert!(Command::new("mknod")
            .arg(&part)
            .args(["b", maj, min])
            .status()
            .unwrap()
            .success());
    }
    let devs = resolve(&part);
    assert_eq!(devs[0].name, format!("{}p1", lo.name()));
    assert!(devs[0].is_partition);
    assert_eq!(devs[1].name, lo.name());
    assert_eq!(devs[1].role, DevRole::ParentDisk);
    assert_eq!(devs[0].queue_dir(), devs[1].sysfs);
}

#[test]
fn direct_reads_on_a_loop_device_are_one_request_each() {
    let Some(lo) = LoopDev::new("device accounting test", 16 << 20, &["--direct-io=on"]) else {
        return;
    };
    let devs = resolve(&lo.dev);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&lo.dev)
        .unwrap();
    let mut buf = dioscope_sys::buf::AlignedBuf::new(64 << 10).unwrap();
    let before = device::snapshot(&devs);
    let t0 = std::time::Instant::now();
    for i in 0..16u64 {
        let n = dioscope_sys::io::pread(
            f.as_raw_fd(),
            &mut buf.as_mut_slice()[..64 << 10],
            i * (128 << 10),
        )
        .unwrap();
        assert_eq!(n, 64 << 10);
    }
    let wall = t0.elapsed().as_micros() as u64;
    let after = device::snapshot(&devs);
    let rep = device::report(&devs, &before, &after, 16, wall.max(1));
    let m: &DeviceMetrics = &rep[0].metrics;
    assert_eq!(rep[0].device, lo.name());
    // Each 64 KiB read is one request unless the queue limit splits it.
    let max_kb = std::fs::read_to_string(lo.dev_sysfs().join("queue/max_sectors_kb"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(64);
    let per_io = 64u64.div_ceil(max_kb.min(64)) as f64;
    // One request either way is the device's own bookkeeping (seen once
    // under load: 15 of 16), not a read split in two or merged.
    assert!(m.read_requests.abs_diff(16 * per_io as u64) <= 1, "{m:?}");
    let rpi = m.requests_per_io.expect("requests per I/O");
    assert!((rpi - per_io).abs() <= 1.0 / 16.0 + 1e-9, "{m:?}");
    assert_eq!(m.bytes, 16 * (64 << 10));
}

impl LoopDev {
    fn dev_sysfs(&self) -> PathBuf {
        PathBuf::from("/sys/block").join(self.name())
    }
}

#[test]
fn loop_without_direct_io_is_silently_buffered() {
    let Some(lo) = LoopDev::new("loop dio test", 16 << 20, &["--direct-io=off"]) else {
        return;
    };
    let dio = std::fs::read_to_string(lo.dev_sysfs().join("loop/dio")).unwrap_or_default();
    assert_eq!(dio.trim(), "0", "losetup --direct-io=off left loop/dio on");
    match silent_buffering(&lo.dev, None) {
        Some(Finding::SilentlyBuffered(SilentlyBuffered {
            reason: BufferedReason::LoopWithoutDirectIo { backing_file },
            ..
        })) => assert!(backing_file.ends_with("backing.img")),
        other => panic!("expected a loop finding, got {other:?}"),
    }
    let Some(lo2) = LoopDev::new("loop dio test", 16 << 20, &["--direct-io=on"]) else {
        return;
    };
    assert_eq!(silent_buffering(&lo2.dev, None), None);
}

#[test]
fn btrfs_checksummed_file_is_buffered_nocow_is_not() {
    if !have("mkfs.btrfs") || !have("chattr") {
        missing("btrfs test", "mkfs.btrfs and chattr");
        return;
    }
    // btrfs needs ~110 MiB minimum; direct I/O on the loop so only btrfs
    // itself can be the reason for buffering.
    let Some(lo) = LoopDev::new("btrfs test", 256 << 20, &["--direct-io=on"]) else {
        return;
    };
    let mk = Command::new("mkfs.btrfs")
        .arg("-q")
        .arg("-f")
        .arg(&lo.dev)
        .output()
        .unwrap();
    if !mk.status.success() {
        let why = format!(
            "mkfs.btrfs to work: {}",
            String::from_utf8_lossy(&mk.stderr)
        );
        missing("btrfs test", &why);
        return;
    }
    let Some(m) = Mounted::new(&lo.dev) else {
        missing("btrfs test", "a btrfs mount (the btrfs module)");
        return;
    };
    let csum = m.path().join("csum");
    std::fs::write(&csum, vec![1u8; 65536]).unwrap();
    let f = silent_buffering(&csum, Some((6, 18)));
    assert!(
        matches!(
            f,
            Some(Finding::SilentlyBuffered(SilentlyBuffered {
                reason: BufferedReason::BtrfsDataChecksums,
                ..
            }))
        ),
        "{f:?}"
    );
    // Before 6.14 btrfs did real direct I/O on the same file.
    assert_eq!(silent_buffering(&csum, Some((6, 1))), None);
    // NOCOW must be set while the file is empty.
    let nocow = m.path().join("nocow");
    std::fs::File::create(&nocow).unwrap();
    assert!(Command::new("chattr")
        .arg("+C")
        .arg(&nocow)
        .status()
        .unwrap()
        .success());
    std::fs::write(&nocow, vec![1u8; 65536]).unwrap();
    assert_eq!(silent_buffering(&nocow, Some((6, 18))), None);
    // The file's st_dev is anonymous; resolution goes through mountinfo.
    let devs = resolve(&csum);
    assert_eq!(
        devs.first().map(|d| d.name.clone()),
        Some(lo.name()),
        "{devs:?}"
    );
    assert_eq!(devs[0].role, DevRole::Filesystem);
    drop(m);
}
