//! Page-cache hygiene: count the target's pages in the page cache, drop them,
//! and turn before/during/after counts into findings.
//!
//! Seed 004: ~25 pages left on a block device by udev's blkid made every
//! direct write invalidate page-cache ranges and cost 35 % of throughput, in
//! some runs only. The runner counts pages before each trial (after dropping
//! them when `invalidate=1`), samples during it and counts after it.
//!
//! Counting opens the target read-only: closing a read-only descriptor does not
//! trigger udev's watch (that fires on close after write), so the check itself
//! adds no pages.

use crate::diag::findings::{PageCacheCause, PageCacheKept, PageCacheOnTarget};
// Plain data in the result layer; counting and dropping are here.
pub use crate::results::doctor::Residency;
pub use crate::results::pagecache::TrialPages;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

use super::findings::{Finding, Phase};

impl Residency {
    pub fn bytes(&self) -> u64 {
        self.pages * self.page_size
    }
}

/// Size of an open file or block device.
pub fn target_size(fd: RawFd) -> io::Result<u64> {
    let st = dioscope_sys::fs::statx_fd(fd)?;
    if st.is_block_device() {
        dioscope_sys::block::size_bytes(fd)
    } else {
        Ok(st.size)
    }
}

/// Resident pages of `[off, off+len)` of an open target (read access needed
/// for the mincore fallback).
pub fn resident_fd(fd: RawFd, off: u64, len: u64) -> io::Result<Residency> {
    let r = dioscope_sys::cache::resident_pages(fd, off, len)?;
    Ok(Residency {
        pages: r.pages,
        page_size: dioscope_sys::buf::page_size() as u64,
        dirty: r.dirty,
        writeback: r.writeback,
        method: r.method.as_str().into(),
        offset: off,
        len,
    })
}

/// Resident pages of a target path over `[off, off+len)`, or from `off` to
/// the end when `len` is `None`.
pub fn resident(path: &Path, off: u64, len: Option<u64>) -> io::Result<Residency> {
    let f = std::fs::File::open(path)?;
    let fd = f.as_raw_fd();
    let len = match len {
        Some(l) => l,
        None => target_size(fd)?.saturating_sub(off),
    };
    resident_fd(fd, off, len)
}

/// Drop the target's clean pages from the page cache: dirty pages of a file
/// are written back first (`fdatasync`), then `POSIX_FADV_DONTNEED`; a block
/// device also gets `BLKFLSBUF`, which syncs and invalidates its whole
/// mapping (root only; its failure is ignored when fadvise worked).
pub fn drop_cache(fd: RawFd, is_blockdev: bool) -> io::Result<()> {
    if !is_blockdev {
        // A read-only descriptor may fdatasync; failure only leaves dirty pages.
        let _ = dioscope_sys::io::fdatasync(fd);
    }
    let fadv = dioscope_sys::fs::fadvise_dontneed(fd);
    if is_blockdev {
        match dioscope_sys::block::flush_buffers(fd) {
            Ok(()) => return Ok(()),
            Err(e) if fadv.is_err() => return Err(e),
            Err(_) => {}
        }
    }
    fadv
}

/// [`drop_cache`], then count what is left over `[off, off+len)`, retrying a
/// few times with a short back-off (1, 2, 4, 8, 16 ms) while pages remain.
/// Pages still being read in (asynchronous readahead from a buffered reader)
/// are locked and survive an invalidation; they are droppable once their I/O
/// completes, a few milliseconds later. Returns the pages left at the end.
pub fn drop_cache_until_clean(fd: RawFd, is_blockdev: bool, off: u64, len: u64) -> io::Result<u64> {
    let mut left = 0;
    for attempt in 0..6u32 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1 << (attempt - 1)));
        }
        drop_cache(fd, is_blockdev)?;
        left = resident_fd(fd, off, len)?.pages;
        if left == 0 {
            break;
        }
    }
    Ok(left)
}

/// [`drop_cache`] by path.
pub fn drop_cache_path(path: &Path) -> io::Result<()> {
    let f = std::fs::File::open(path)?;
    let st = dioscope_sys::fs::statx_fd(f.as_raw_fd())?;
    drop_cache(f.as_raw_fd(), st.is_block_device())
}

impl TrialPages {
    pub fn max(&self) -> u64 {
        [self.before, self.during_max, self.after]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(0)
    }
}

/// Findings for one trial of a direct-I/O job (the caller skips buffered
/// jobs, where cached pages are the point). With `invalidate=1` each phase
/// with pages is reported (pages during a trial are critical: someone read the
/// target while it was measured); pages found before the trial and dropped
/// are reported as such. With `invalidate=0` one [`Finding::PageCacheKept`]
/// reports the largest count. `cause`: what the target is that explains
/// the pages. Equal counts in several phases are one finding
/// ([`crate::diag::findings::merge_page_cache`]).
pub fn trial_findings(
    target: &str,
    trial: usize,
    pages: &TrialPages,
    invalidate: bool,
    page_size: u64,
    cause: &PageCacheCause,
) -> Vec<Finding> {
    if !invalidate {
        let max = pages.max();
        return if max > 0 {
            vec![Finding::PageCacheKept(PageCacheKept {
                target: target.to_string(),
                pages: max,
                page_size,
                slowdown_pct: None,
            })]
        } else {
            Vec::new()
        };
    }
    // Pages that were there and are gone after the drop: the trial ran
    // without them, but someone put them there.
    let (before, dropped) = match (pages.found, pages.before) {
        (Some(f), Some(0)) if f > 0 => (Some(f), true),
        (_, b) => (b, false),
    };
    let each: Vec<PageCacheOnTarget> = [
        (Phase::Before, before, dropped),
        (Phase::During, pages.during_max, false),
        (Phase::After, pages.after, false),
    ]
    .into_iter()
    .filter_map(|(phase, n, dropped)| {
        let n = n?;
        (n > 0).then(|| PageCacheOnTarget {
            target: target.to_string(),
            phase,
            trial: Some(trial),
            pages: n,
            page_size,
            dropped,
            also_phases: Vec::new(),
            trials: Vec::new(),
            cause: cause.clone(),
        })
    })
    .collect();
    crate::diag::findings::merge_page_cache(each)
        .into_iter()
        .map(Finding::PageCacheOnTarget)
        .collect()
}

/// How much slower (in %) trials with cached pages were than trials without,
/// for a higher-is-better metric; `None` unless both kinds exist. Fills
/// [`Finding::PageCacheKept::slowdown_pct`].
pub fn slowdown_pct(values: &[f64], pages: &[TrialPages]) -> Option<f64> {
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for (v, p) in values.iter().zip(pages) {
        if p.max() > 0 {
            with.push(*v);
        } else {
            without.push(*v);
        }
    }
    if with.is_empty() || without.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let base = mean(&without);
    (base > 0.0).then(|| 100.0 * (base - mean(&with)) / base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn counts_and_drops_pages_of_a_file() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![3u8; 1 << 20]).unwrap();
        let mut f = std::fs::File::open(&p).unwrap();
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).unwrap();
        let r = resident(&p, 0, None).unwrap();
        assert_eq!(r.len, 1 << 20);
        assert!(r.pages > 0, "{r:?}");
        drop_cache_path(&p).unwrap();
        let r = resident(&p, 0, None).unwrap();
        let fs = dioscope_sys::fsinfo::fstatfs(f.as_raw_fd())
            .unwrap()
            .fs_type;
        if fs == dioscope_sys::fsinfo::TMPFS_MAGIC {
            eprintln!("tmpfs keeps its pages: the file is only in the page cache");
        } else {
            assert_eq!(r.pages, 0, "{r:?}");
        }
    }

    #[test]
    fn findings_per_phase() {
        let p = TrialPages {
            found: None,
            before: Some(0),
            during_max: Some(25),
            after: Some(25),
        };
        let f = trial_findings("/dev/x", 2, &p, true, 4096, &PageCacheCause::Unknown);
        // The same 25 pages during and after the trial: one finding.
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code(), "page_cache_on_target");
        assert!(
            f[0].to_string().contains("during and after trial 2."),
            "{}",
            f[0]
        );
        // Different counts stay apart.
        let p2 = TrialPages {
            after: Some(30),
            ..p
        };
        let f2 = trial_findings("/dev/x", 2, &p2, true, 4096, &PageCacheCause::Unknown);
        assert_eq!(f2.len(), 2, "{f2:?}");
        assert!(matches!(
            f[0],
            Finding::PageCacheOnTarget(PageCacheOnTarget {
                phase: Phase::During,
                pages: 25,
                trial: Some(2),
                ..
            })
        ));
        let kept = trial_findings("/dev/x", 2, &p, false, 4096, &PageCacheCause::Unknown);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].code(), "page_cache_kept");
        assert!(trial_findings(
            "/dev/x",
            1,
            &TrialPages::default(),
            true,
            4096,
            &PageCacheCause::Unknown
        )
        .is_empty());
        // Found and dropped before the trial: reported with the count found.
        let dropped = TrialPages {
            found: Some(256),
            before: Some(0),
            during_max: Some(0),
            after: Some(0),
        };
        let f = trial_findings("/dev/x", 1, &dropped, true, 4096, &PageCacheCause::Unknown);
        assert_eq!(f.len(), 1);
        assert!(matches!(
            f[0],
            Finding::PageCacheOnTarget(PageCacheOnTarget {
                phase: Phase::Before,
                pages: 256,
                dropped: true,
                ..
            })
        ));
        assert!(f[0].to_string().contains("dropped them"), "{}", f[0]);
    }

    #[test]
    fn slowdown_of_trials_with_pages() {
        let clean = TrialPages {
            found: Some(0),
            before: Some(0),
            during_max: Some(0),
            after: Some(0),
        };
        let dirty = TrialPages {
            before: Some(25),
            ..clean
        };
        let s = slowdown_pct(&[3800.0, 2470.0, 3800.0], &[clean, dirty, clean]).unwrap();
        assert!((s - 35.0).abs() < 1e-9);
        assert_eq!(slowdown_pct(&[1.0, 2.0], &[clean, clean]), None);
    }
}
