//! Device accounting: which block devices serve a target, and what
//! `/sys/block/<dev>/stat` says they did during a trial.
//!
//! [`resolve`] walks from a path to every block device under it: a device node
//! through its rdev, a partition to its disk, a loop device to its backing file
//! and on to the disk under that file, a regular file through its file
//! system's device (btrfs and other multi-device file systems report an
//! anonymous st_dev, so the mount's source device from /proc/self/mountinfo is
//! used), and device-mapper/md devices to their `slaves/`. The runner takes a
//! [`DiskStat`] snapshot of each before and after a trial and turns the pair
//! into [`DeviceMetrics`] with the application's I/O count: requests per I/O
//! (seed 000: one 4 MiB write becoming many small requests), average request
//! size, merges and utilisation.

use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::mounts::{mount_for, read_mountinfo};
// The types are plain data in the result layer; reading them is here.
pub use crate::results::devices::{DeviceMetrics, DeviceReport, DiskStat};
pub use crate::results::environment::{BlockDev, DevRole};

impl BlockDev {
    /// The directory with `queue/` (a partition's disk for partitions).
    pub fn queue_dir(&self) -> PathBuf {
        if self.is_partition {
            self.sysfs
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| self.sysfs.clone())
        } else {
            self.sysfs.clone()
        }
    }

    /// Read this device's counters now.
    pub fn snapshot(&self) -> Option<DiskStat> {
        DiskStat::read(&self.sysfs)
    }
}

/// Every block device under `path`, the target's own first. Empty when the
/// target has no block device (tmpfs, a pipe, a path that does not exist).
pub fn resolve(path: &Path) -> Vec<BlockDev> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    resolve_into(path, None, &mut out, &mut seen, 0);
    out
}

const MAX_DEPTH: usize = 8;

fn resolve_into(
    path: &Path,
    role: Option<DevRole>,
    out: &mut Vec<BlockDev>,
    seen: &mut HashSet<(u32, u32)>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(st) = dioscope_sys::fs::statx_path(path) else {
        return;
    };
    if st.is_block_device() {
        visit(st.rdev, role.unwrap_or(DevRole::Target), out, seen, depth);
        return;
    }
    let role = role.unwrap_or(DevRole::Filesystem);
    if st.dev.0 != 0 {
        visit(st.dev, role, out, seen, depth);
        return;
    }
    // Anonymous device (btrfs, overlay, tmpfs): ask the mount table which
    // device, if any, the file system came from.
    let Some(m) = mount_for(&read_mountinfo(), path) else {
        return;
    };
    if m.source.starts_with('/') {
        if let Ok(src) = dioscope_sys::fs::statx_path(Path::new(&m.source)) {
            if src.is_block_device() {
                visit(src.rdev, role, out, seen, depth);
            }
        }
    }
}

fn visit(
    dev: (u32, u32),
    role: DevRole,
    out: &mut Vec<BlockDev>,
    seen: &mut HashSet<(u32, u32)>,
    depth: usize,
) {
    if !seen.insert(dev) {
        return;
    }
    let link = PathBuf::from(format!("/sys/dev/block/{}:{}", dev.0, dev.1));
    let Ok(sysfs) = std::fs::canonicalize(&link) else {
        return;
    };
    let Some(name) = sysfs.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let is_partition = sysfs.join("partition").exists();
    let backing_file = read_trimmed(&sysfs.join("loop/backing_file")).map(PathBuf::from);
    out.push(BlockDev {
        name,
        major: dev.0,
        minor: dev.1,
        sysfs: sysfs.clone(),
        role,
        is_partition,
        backing_file: backing_file.clone(),
    });
    if is_partition {
        if let Some(parent) = sysfs.parent() {
            if let Some(d) = read_devno(&parent.join("dev")) {
                visit(d, DevRole::ParentDisk, out, seen, depth + 1);
            }
        }
    }
    if let Some(b) = backing_file {
        resolve_into(&b, Some(DevRole::LoopBacking), out, seen, depth + 1);
    }
    if let Ok(rd) = std::fs::read_dir(sysfs.join("slaves")) {
        let mut slaves: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        slaves.sort();
        for s in slaves {
            if let Some(d) = read_devno(&s.join("dev")) {
                visit(d, DevRole::Slave, out, seen, depth + 1);
            }
        }
    }
}

pub(crate) fn read_trimmed(p: &Path) -> Option<String> {
    let s = std::fs::read_to_string(p).ok()?;
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn read_devno(p: &Path) -> Option<(u32, u32)> {
    let s = read_trimmed(p)?;
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl DiskStat {
    /// Parse the text of a `stat` file; `None` with fewer than the 11 fields
    /// every kernel since 2.6 has.
    pub fn parse(text: &str) -> Option<DiskStat> {
        let v: Vec<u64> = text
            .split_whitespace()
            .map(|x| x.parse::<u64>())
            .collect::<Result<_, _>>()
            .ok()?;
        if v.len() < 11 {
            return None;
        }
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(DiskStat {
            read_ios: g(0),
            read_merges: g(1),
            read_sectors: g(2),
            read_ticks_ms: g(3),
            write_ios: g(4),
            write_merges: g(5),
            write_sectors: g(6),
            write_ticks_ms: g(7),
            in_flight: g(8),
            io_ticks_ms: g(9),
            time_in_queue_ms: g(10),
            discard_ios: g(11),
            discard_merges: g(12),
            discard_sectors: g(13),
            discard_ticks_ms: g(14),
            flush_ios: g(15),
            flush_ticks_ms: g(16),
        })
    }

    /// Read `<sysfs_dir>/stat`.
    pub fn read(sysfs_dir: &Path) -> Option<DiskStat> {
        std::fs::read_to_string(sysfs_dir.join("stat"))
            .ok()
            .and_then(|s| DiskStat::parse(&s))
    }

    /// Counters accumulated since `before` (in_flight is the current value).
    /// Saturates at 0 so a counter reset (device re-created) cannot wrap.
    pub fn since(&self, before: &DiskStat) -> DiskStat {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        DiskStat {
            read_ios: d(self.read_ios, before.read_ios),
            read_merges: d(self.read_merges, before.read_merges),
            read_sectors: d(self.read_sectors, before.read_sectors),
            read_ticks_ms: d(self.read_ticks_ms, before.read_ticks_ms),
            write_ios: d(self.write_ios, before.write_ios),
            write_merges: d(self.write_merges, before.write_merges),
            write_sectors: d(self.write_sectors, before.write_sectors),
            write_ticks_ms: d(self.write_ticks_ms, before.write_ticks_ms),
            in_flight: self.in_flight,
            io_ticks_ms: d(self.io_ticks_ms, before.io_ticks_ms),
            time_in_queue_ms: d(self.time_in_queue_ms, before.time_in_queue_ms),
            discard_ios: d(self.discard_ios, before.discard_ios),
            discard_merges: d(self.discard_merges, before.discard_merges),
            discard_sectors: d(self.discard_sectors, before.discard_sectors),
            discard_ticks_ms: d(self.discard_ticks_ms, before.discard_ticks_ms),
            flush_ios: d(self.flush_ios, before.flush_ios),
            flush_ticks_ms: d(self.flush_ticks_ms, before.flush_ticks_ms),
        }
    }
}

impl DeviceMetrics {
    /// Derive the metrics from a delta (see [`DiskStat::since`]), the number
    /// of I/Os the application issued and the wall time in µs.
    pub fn derive(delta: &DiskStat, app_ios: u64, wall_us: u64) -> DeviceMetrics {
        let requests = delta.read_ios + delta.write_ios;
        let bytes = (delta.read_sectors + delta.write_sectors) * 512;
        let ticks = delta.read_ticks_ms + delta.write_ticks_ms;
        DeviceMetrics {
            requests,
            read_requests: delta.read_ios,
            write_requests: delta.write_ios,
            bytes,
            requests_per_io: (app_ios > 0).then(|| requests as f64 / app_ios as f64),
            avg_request_bytes: (requests > 0).then(|| bytes as f64 / requests as f64),
            merges: delta.read_merges + delta.write_merges,
            util_pct: (wall_us > 0)
                .then(|| (100.0 * delta.io_ticks_ms as f64 * 1000.0 / wall_us as f64).min(100.0)),
            avg_wait_ms: (requests > 0).then(|| ticks as f64 / requests as f64),
            discards: delta.discard_ios,
            flushes: delta.flush_ios,
        }
    }
}

/// Snapshots of every device of a target, taken together.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Snapshot(pub Vec<Option<DiskStat>>);

/// Take a snapshot of each device (in the order of `devs`).
pub fn snapshot(devs: &[BlockDev]) -> Snapshot {
    Snapshot(devs.iter().map(BlockDev::snapshot).collect())
}

/// Per-device reports between two snapshots of `devs`. Devices whose stat
/// could not be read at either end are left out.
pub fn report(
    devs: &[BlockDev],
    before: &Snapshot,
    after: &Snapshot,
    app_ios: u64,
    wall_us: u64,
) -> Vec<DeviceReport> {
    devs.iter()
        .zip(before.0.iter().zip(after.0.iter()))
        .filter_map(|(d, (b, a))| {
            let delta = a.as_ref()?.since(b.as_ref()?);
            Some(DeviceReport {
                device: d.name.clone(),
                role: d.role,
                metrics: DeviceMetrics::derive(&delta, app_ios, wall_us),
                delta,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_current_and_old_formats() {
        let s = DiskStat::parse(
            "  119151    11794  6209258    30058     5389    10795  3551936    14339        0     \
             7836    44809     4012       53  2289976      389      839       23\n",
        )
        .unwrap();
        assert_eq!(s.read_ios, 119151);
        assert_eq!(s.write_sectors, 3551936);
        assert_eq!(s.io_ticks_ms, 7836);
        assert_eq!(s.discard_sectors, 2289976);
        assert_eq!(s.flush_ticks_ms, 23);
        // 2.6-era 11-field line.
        let old = DiskStat::parse("1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!((old.time_in_queue_ms, old.flush_ios), (11, 0));
        assert_eq!(DiskStat::parse("1 2 3"), None);
        assert_eq!(DiskStat::parse("garbage"), None);
        assert_eq!(DiskStat::read(Path::new("/nonexistent")), None);
    }

    #[test]
    fn seed_000_eight_requests_for_one_write() {
        // One 4 MiB O_DIRECT write that the block layer sent as 8 requests of
        // 512 KiB (the ext3 boundary case sends even more, smaller ones).
        let before = DiskStat::parse("100 0 800 10 200 5 1600 20 0 30 40").unwrap();
        let after = DiskStat::parse("100 0 800 10 208 7 9792 28 0 38 48").unwrap();
        let delta = after.since(&before);
        assert_eq!(delta.write_ios, 8);
        assert_eq!(delta.write_sectors, 8192);
        let m = DeviceMetrics::derive(&delta, 1, 16_000);
        assert_eq!(m.requests, 8);
        assert_eq!(m.requests_per_io, Some(8.0));
        assert_eq!(m.avg_request_bytes, Some(512.0 * 1024.0));
        assert_eq!(m.bytes, 4 << 20);
        assert_eq!(m.merges, 2);
        // 8 ms busy in 16 ms of wall time.
        assert_eq!(m.util_pct, Some(50.0));
        assert_eq!(m.avg_wait_ms, Some(1.0));
    }

    #[test]
    fn no_io_gives_no_ratios() {
        let s = DiskStat::parse("1 2 3 4 5 6 7 8 9 10 11").unwrap();
        let m = DeviceMetrics::derive(&s.since(&s), 0, 0);
        assert_eq!(m.requests_per_io, None);
        assert_eq!(m.avg_request_bytes, None);
        assert_eq!(m.util_pct, None);
        // A counter that went backwards (device re-created) does not wrap.
        let newer = DiskStat::parse("0 0 0 0 0 0 0 0 0 0 0").unwrap();
        assert_eq!(newer.since(&s).read_ios, 0);
    }

    #[test]
    fn report_pairs_devices_and_skips_unreadable() {
        let dev = |name: &str| BlockDev {
            name: name.into(),
            major: 7,
            minor: 0,
            sysfs: PathBuf::from("/nonexistent"),
            role: DevRole::Target,
            is_partition: false,
            backing_file: None,
        };
        let devs = [dev("loop0"), dev("vda")];
        let b = DiskStat::parse("0 0 0 0 0 0 0 0 0 0 0").unwrap();
        let a = DiskStat::parse("4 0 32 0 0 0 0 0 0 1 1").unwrap();
        let r = report(
            &devs,
            &Snapshot(vec![Some(b), None]),
            &Snapshot(vec![Some(a), Some(a)]),
            4,
            1000,
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].device, "loop0");
        assert_eq!(r[0].metrics.requests_per_io, Some(1.0));
        assert_eq!(r[0].metrics.avg_request_bytes, Some(4096.0));
    }

    #[test]
    fn resolve_a_file_on_the_root_fs() {
        // The test binary lives on some file system; on a VM or bare metal that
        // is a block device, in a container maybe an overlay with none.
        let exe = std::env::current_exe().unwrap();
        let devs = resolve(&exe);
        if devs.is_empty() {
            eprintln!(
                "skipping: {} is on a file system without a block device",
                exe.display()
            );
            return;
        }
        assert_eq!(devs[0].role, DevRole::Filesystem);
        assert!(devs[0].snapshot().is_some(), "{devs:?}");
        assert!(resolve(Path::new("/nonexistent/x")).is_empty());
    }
}
