//! Page-cache residency of a file or block device: how many pages of a byte
//! range are in the page cache right now.
//!
//! `cachestat(2)` (Linux 6.5+, syscall 451) answers from the mapping's xarray
//! without mapping anything and also reports dirty and writeback pages. Where
//! the kernel lacks it (ENOSYS) or refuses the descriptor (EPERM, EOPNOTSUPP),
//! we fall back to `mmap` + `mincore(2)` over a read-only shared mapping, in
//! windows so a terabyte device does not need a terabyte of residency vector.
//! `mincore` on a file mapping reports page-cache residency of the file's pages
//! whether or not this process has touched them, and it does not fault them in.

use crate::buf::page_size;
use std::io;
use std::os::fd::RawFd;

const SYS_CACHESTAT: libc::c_long = 451;

#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct RawCachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// How a residency count was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMethod {
    Cachestat,
    Mincore,
}

impl CacheMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheMethod::Cachestat => "cachestat",
            CacheMethod::Mincore => "mincore",
        }
    }
}

/// Page-cache pages of a byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    /// Pages of the range present in the page cache.
    pub pages: u64,
    /// Dirty pages (cachestat only).
    pub dirty: Option<u64>,
    /// Pages under writeback (cachestat only).
    pub writeback: Option<u64>,
    pub method: CacheMethod,
}

/// `cachestat(2)` over `[off, off+len)`; `len == 0` means "to the end".
pub fn cachestat(fd: RawFd, off: u64, len: u64) -> io::Result<Resident> {
    let range = CachestatRange { off, len };
    let mut cs = RawCachestat::default();
    // SAFETY: both pointers refer to live, correctly sized #[repr(C)] structs
    // matching the kernel's `struct cachestat_range` and `struct cachestat`.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd,
            &range as *const CachestatRange,
            &mut cs as *mut RawCachestat,
            0u32,
        )
    };
    crate::cvt_long(r)?;
    Ok(Resident {
        pages: cs.nr_cache,
        dirty: Some(cs.nr_dirty),
        writeback: Some(cs.nr_writeback),
        method: CacheMethod::Cachestat,
    })
}

/// Largest window mapped at once by the mincore fallback (1 GiB: a 256 KiB
/// residency vector with 4 KiB pages).
const WINDOW: u64 = 1 << 30;

/// `mmap` + `mincore` over `[off, off+len)` of an fd opened for reading.
/// `len` must be given (the caller knows the file or device size).
pub fn mincore_count(fd: RawFd, off: u64, len: u64) -> io::Result<Resident> {
    let page = page_size() as u64;
    let start = off / page * page;
    let end = off.saturating_add(len);
    let mut pages = 0u64;
    let mut vec: Vec<u8> = Vec::new();
    let mut pos = start;
    while pos < end {
        let wlen = (end - pos).min(WINDOW);
        let npages = wlen.div_ceil(page) as usize;
        vec.clear();
        vec.resize(npages, 0);
        // SAFETY: a fresh read-only shared mapping with no address hint; the
        // kernel validates fd and offset (page aligned by construction).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                wlen as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                pos as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: p is the start of a mapping of wlen bytes; vec has one byte
        // per page of it, as mincore requires.
        let r = unsafe { libc::mincore(p, wlen as usize, vec.as_mut_ptr()) };
        let err = io::Error::last_os_error();
        // SAFETY: unmapping exactly the mapping created above; nothing else
        // refers to it.
        unsafe { libc::munmap(p, wlen as usize) };
        if r != 0 {
            return Err(err);
        }
        pages += vec.iter().filter(|&&b| b & 1 != 0).count() as u64;
        pos += wlen;
    }
    Ok(Resident {
        pages,
        dirty: None,
        writeback: None,
        method: CacheMethod::Mincore,
    })
}

/// Resident pages of `[off, off+len)`: cachestat, falling back to mincore
/// when the kernel does not have it or refuses this descriptor.
pub fn resident_pages(fd: RawFd, off: u64, len: u64) -> io::Result<Resident> {
    match cachestat(fd, off, len) {
        Ok(r) => Ok(r),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EOPNOTSUPP)
            ) =>
        {
            mincore_count(fd, off, len)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    fn tmpfile(tag: &str, len: usize) -> (std::path::PathBuf, std::fs::File) {
        // /var/tmp is usually disk backed; tmpfs also has a page cache, which is
        // all these tests need.
        let p = std::env::temp_dir().join(format!("dioscope-cache-{tag}-{}", std::process::id()));
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![7u8; len]).unwrap();
        f.sync_all().unwrap();
        let f = std::fs::File::open(&p).unwrap();
        (p, f)
    }

    #[test]
    fn buffered_read_makes_pages_resident_and_both_methods_agree() {
        let len = 256 * 1024;
        let (p, mut f) = tmpfile("agree", len);
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).unwrap();
        let page = page_size() as u64;
        let m = mincore_count(f.as_raw_fd(), 0, len as u64).unwrap();
        assert_eq!(m.pages, len as u64 / page, "every page was just read");
        match cachestat(f.as_raw_fd(), 0, len as u64) {
            Ok(c) => assert_eq!(c.pages, m.pages),
            Err(e) => eprintln!("cachestat unavailable ({e}); only mincore checked"),
        }
        // A sub-range counts only its own pages.
        let half = resident_pages(f.as_raw_fd(), 0, len as u64 / 2).unwrap();
        assert_eq!(half.pages, len as u64 / 2 / page);
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn mincore_range_past_eof_is_not_resident() {
        // A range larger than the file: the part past EOF is simply not resident.
        let (p, f) = tmpfile("window", 8192);
        let r = mincore_count(f.as_raw_fd(), 0, 8192).unwrap();
        assert!(r.pages <= 2);
        std::fs::remove_file(p).unwrap();
    }
}
