//! The on-disk layout of a test file: never-written regions (holes and
//! unwritten extents) and fragmentation; and, for zram, how much data the
//! device actually stores.
//!
//! Reads of never-written regions return zeros without device I/O, so a read
//! benchmark over a sparse or merely fallocated file, or over a fresh zram
//! device, measures the kernel's zero-fill rather than the storage.

use crate::diag::findings::{FragmentedFile, ReadsOfUnwrittenRegions, ZramNeverWritten};
use std::io;
use std::os::fd::RawFd;
use std::path::Path;

use super::device::read_trimmed;
use super::findings::Finding;
// Plain data in the result layer; examining files and devices is here.
pub use crate::results::doctor::{FileLayout, ZramStat};

/// The holes in `[off, off+len)` of a file (SEEK_DATA/SEEK_HOLE) as
/// `(start, end)` pairs, the range clamped to the file size. ext4, XFS and
/// btrfs also report unwritten extents without cached data as holes; file
/// systems that do not track holes report none.
fn hole_ranges(fd: RawFd, off: u64, len: u64, file_size: u64) -> io::Result<Vec<(u64, u64)>> {
    let end = off.saturating_add(len).min(file_size);
    let mut pos = off;
    let mut holes = Vec::new();
    while pos < end {
        match dioscope_sys::seek::seek_data(fd, pos)? {
            None => {
                holes.push((pos, end));
                break;
            }
            Some(d) => {
                let d = d.max(pos);
                if d > pos {
                    holes.push((pos, d.min(end)));
                }
                if d >= end {
                    break;
                }
                pos = dioscope_sys::seek::seek_hole(fd, d)?
                    .unwrap_or(end)
                    .max(d + 1);
            }
        }
    }
    Ok(holes)
}

/// Total bytes of [`hole_ranges`].
pub fn hole_bytes(fd: RawFd, off: u64, len: u64, file_size: u64) -> io::Result<u64> {
    Ok(hole_ranges(fd, off, len, file_size)?
        .iter()
        .map(|(a, b)| b - a)
        .sum())
}

/// Examine `[off, off+len)` of an open regular file.
pub fn layout(fd: RawFd, off: u64, len: u64) -> io::Result<FileLayout> {
    let st = dioscope_sys::fs::statx_fd(fd)?;
    let size = st.size;
    let len = len.min(size.saturating_sub(off));
    let holes = hole_ranges(fd, off, len, size)?;
    let (extents, fragments, unwritten) =
        match dioscope_sys::fiemap::extents(fd, off, len.max(1), false) {
            Ok(v) => {
                let end = off + len;
                let unwritten = v
                    .iter()
                    .filter(|e| e.is_unwritten())
                    .map(|e| {
                        let all = overlap(e.logical, e.length, off, end);
                        let in_holes: u64 = holes
                            .iter()
                            .map(|&(a, b)| overlap(e.logical, e.length, a, b))
                            .sum();
                        all.saturating_sub(in_holes)
                    })
                    .sum();
                (Some(v.len() as u64), Some(count_fragments(&v)), unwritten)
            }
            Err(_) => (None, None, 0),
        };
    Ok(FileLayout {
        file_size: size,
        offset: off,
        len,
        hole_bytes: holes.iter().map(|(a, b)| b - a).sum(),
        unwritten_bytes: unwritten,
        extents,
        fragments,
    })
}

fn overlap(start: u64, length: u64, lo: u64, hi: u64) -> u64 {
    let s = start.max(lo);
    let e = start.saturating_add(length).min(hi);
    e.saturating_sub(s)
}

/// Runs of extents where each continues the previous one physically.
fn count_fragments(ext: &[dioscope_sys::fiemap::Extent]) -> u64 {
    let mut n = 0;
    let mut prev_end: Option<u64> = None;
    for e in ext {
        if prev_end != Some(e.physical) {
            n += 1;
        }
        prev_end = Some(e.physical.saturating_add(e.length));
    }
    n
}

/// Block size the fragmentation threshold assumes when the job is not known
/// (doctor): 1 MiB, the largest size commonly used for sequential tests.
pub const DEFAULT_FRAGMENT_BS: u64 = 1 << 20;

/// Share of I/Os, in %, that may cross a fragment boundary before the file
/// counts as fragmented.
///
/// Why 1 %: a sequential pass with block size `bs` over a file in `f` pieces
/// crosses `f − 1` boundaries among `size / bs` I/Os, and every crossing turns
/// one I/O into two device requests (and a seek on a rotating disk). Above
/// 1 % the requests-per-I/O and latency figures visibly include the file's
/// layout rather than the device's behaviour; below it they are within the
/// run-to-run noise of most devices.
const FRAGMENT_SPLIT_PCT: f64 = 1.0;

/// [`Finding::FragmentedFile`] when more than [`FRAGMENT_SPLIT_PCT`] of
/// sequential `block_size` I/Os would cross a fragment boundary.
pub fn fragmentation_finding(target: &str, l: &FileLayout, block_size: u64) -> Option<Finding> {
    let fragments = l.fragments?;
    if fragments <= 1 || l.len == 0 || block_size == 0 {
        return None;
    }
    let ios = l.len.div_ceil(block_size).max(1);
    let split_pct = 100.0 * (fragments - 1) as f64 / ios as f64;
    (split_pct > FRAGMENT_SPLIT_PCT).then(|| {
        Finding::FragmentedFile(FragmentedFile {
            target: target.to_string(),
            size: l.file_size,
            extents: l.extents.unwrap_or(fragments),
            fragments,
            split_pct: split_pct.min(100.0),
            block_size,
        })
    })
}

/// [`Finding::ReadsOfUnwrittenRegions`] when the read range has holes or
/// unwritten extents.
pub fn unwritten_finding(target: &str, l: &FileLayout) -> Option<Finding> {
    (l.hole_bytes + l.unwritten_bytes > 0).then(|| {
        Finding::ReadsOfUnwrittenRegions(ReadsOfUnwrittenRegions {
            target: target.to_string(),
            hole_bytes: l.hole_bytes,
            unwritten_bytes: l.unwritten_bytes,
            range_bytes: l.len,
        })
    })
}

impl ZramStat {
    /// Read the stats of a zram device by kernel name; `None` if it is not one.
    pub fn read(name: &str) -> Option<ZramStat> {
        if !name.starts_with("zram") {
            return None;
        }
        let dir = Path::new("/sys/block").join(name);
        let mut s = ZramStat::parse_mm_stat(&read_trimmed(&dir.join("mm_stat"))?)?;
        s.disksize = read_trimmed(&dir.join("disksize"))?.parse().ok()?;
        Some(s)
    }

    fn parse_mm_stat(text: &str) -> Option<ZramStat> {
        let v: Vec<u64> = text
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() < 3 {
            return None;
        }
        Some(ZramStat {
            disksize: 0,
            orig_data_size: v[0],
            compr_data_size: v[1],
            mem_used_total: v[2],
            same_pages: v.get(5).copied().unwrap_or(0),
        })
    }
}

/// [`Finding::ZramNeverWritten`] when reads cover more than the device has
/// stored: at least `range − stored` bytes of them hit never-written pages.
pub fn zram_finding(device: &str, z: &ZramStat, read_range: u64) -> Option<Finding> {
    (read_range > z.orig_data_size).then(|| {
        Finding::ZramNeverWritten(ZramNeverWritten {
            device: device.to_string(),
            stored_bytes: z.orig_data_size,
            range_bytes: read_range,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dioscope_sys::fiemap::Extent;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    fn ext(logical: u64, physical: u64, length: u64) -> Extent {
        Extent {
            logical,
            physical,
            length,
            flags: 0,
        }
    }

    #[test]
    fn contiguous_extents_are_one_fragment() {
        // ext4 splits a contiguous 256 MiB file into two 128 MiB extents.
        let m = 128 << 20;
        assert_eq!(
            count_fragments(&[ext(0, 1 << 30, m), ext(m, (1 << 30) + m, m)]),
            1
        );
        assert_eq!(
            count_fragments(&[ext(0, 0, 4096), ext(4096, 1 << 20, 4096)]),
            2
        );
        assert_eq!(count_fragments(&[]), 0);
    }

    #[test]
    fn fragmentation_threshold() {
        let l = FileLayout {
            file_size: 1 << 30,
            len: 1 << 30,
            extents: Some(20),
            fragments: Some(12),
            ..Default::default()
        };
        // 11 boundaries in 1024 I/Os of 1 MiB: 1.07 % > 1 %.
        let f = fragmentation_finding("f", &l, 1 << 20).unwrap();
        assert!(matches!(
            f,
            Finding::FragmentedFile(FragmentedFile { fragments: 12, .. })
        ));
        // With 4 KiB I/Os the same file is fine.
        assert!(fragmentation_finding("f", &l, 4096).is_none());
        let ok = FileLayout {
            fragments: Some(11),
            ..l
        };
        assert!(fragmentation_finding("f", &ok, 1 << 20).is_none());
    }

    #[test]
    fn sparse_and_fallocated_files() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let p = dir.path().join("sparse");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(8 << 20).unwrap();
        f.write_all_at(&vec![1u8; 1 << 20], 2 << 20).unwrap();
        f.sync_all().unwrap();
        let l = layout(f.as_raw_fd(), 0, u64::MAX).unwrap();
        assert_eq!(l.len, 8 << 20);
        if l.hole_bytes == 0 {
            eprintln!("skipping hole checks: this file system does not report holes");
        } else {
            assert_eq!(l.hole_bytes, 7 << 20, "{l:?}");
            let sub = hole_bytes(f.as_raw_fd(), 2 << 20, 2 << 20, 8 << 20).unwrap();
            assert_eq!(sub, 1 << 20);
            assert!(unwritten_finding("f", &l).is_some());
        }
        // A fallocated file has no holes but unwritten extents.
        let q = dir.path().join("falloc");
        let g = std::fs::File::create(&q).unwrap();
        match dioscope_sys::fs::fallocate(g.as_raw_fd(), 0, 4 << 20) {
            Ok(()) => {
                // Counted once, as a hole or as unwritten, depending on the fs.
                let l = layout(g.as_raw_fd(), 0, u64::MAX).unwrap();
                if l.extents.is_some() || l.hole_bytes > 0 {
                    assert_eq!(l.hole_bytes + l.unwritten_bytes, 4 << 20, "{l:?}");
                    assert!(unwritten_finding("f", &l).is_some());
                }
            }
            Err(e) => eprintln!("skipping fallocate check: {e}"),
        }
        // A fully written file has neither.
        let r = dir.path().join("full");
        std::fs::write(&r, vec![5u8; 1 << 20]).unwrap();
        let h = std::fs::File::open(&r).unwrap();
        let l = layout(h.as_raw_fd(), 0, u64::MAX).unwrap();
        assert_eq!(l.hole_bytes + l.unwritten_bytes, 0, "{l:?}");
        assert!(unwritten_finding("f", &l).is_none());
    }

    #[test]
    fn zram_stats() {
        let z = ZramStat::parse_mm_stat("4096 64 8192 0 8192 1 0 0 0").unwrap();
        assert_eq!((z.orig_data_size, z.same_pages), (4096, 1));
        assert!(zram_finding("zram0", &z, 1 << 20).is_some());
        assert!(zram_finding("zram0", &z, 4096).is_none());
        assert_eq!(ZramStat::parse_mm_stat(""), None);
        assert_eq!(ZramStat::read("sda"), None);
    }
}
