//! Aligned I/O buffers for O_DIRECT.
//!
//! One anonymous mapping per worker holds every slot's buffer. A mapping is
//! page aligned, which satisfies every direct-I/O memory alignment the kernel
//! reports (`STATX_DIOALIGN` gives at most the page size). Mappings of 2 MiB or
//! more try `MAP_HUGETLB` first (fewer TLB misses, fewer pages to pin for fixed
//! buffers) and fall back to transparent huge pages via `madvise`.

use std::io;
use std::ptr::NonNull;

/// A page-aligned, zero-initialised region of memory owned by one worker.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    huge: bool,
}

// The buffer is plain memory; ownership moves with the worker that uses it.
unsafe impl Send for AlignedBuf {}

const HUGE: usize = 2 << 20;

impl AlignedBuf {
    /// Map `len` bytes (rounded up to the page size, or to 2 MiB when huge pages are used).
    pub fn new(len: usize) -> io::Result<AlignedBuf> {
        let page = page_size();
        let len = len.max(1).div_ceil(page) * page;
        if len >= HUGE {
            let hlen = len.div_ceil(HUGE) * HUGE;
            if let Some(ptr) = map(hlen, libc::MAP_HUGETLB) {
                return Ok(AlignedBuf {
                    ptr,
                    len: hlen,
                    huge: true,
                });
            }
        }
        let ptr = map(len, 0).ok_or_else(io::Error::last_os_error)?;
        if len >= HUGE {
            // SAFETY: the range is our own fresh mapping. Failure only means no THP.
            unsafe { libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_HUGEPAGE) };
        }
        Ok(AlignedBuf {
            ptr,
            len,
            huge: false,
        })
    }

    /// Whether the mapping is backed by explicit huge pages.
    pub fn is_huge(&self) -> bool {
        self.huge
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is `len` bytes, readable, and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: we unmap exactly the mapping we created.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

fn map(len: usize, extra: libc::c_int) -> Option<NonNull<u8>> {
    // SAFETY: an anonymous private mapping with no address hint has no preconditions.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(p.cast())
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_writable() {
        let mut b = AlignedBuf::new(10_000).unwrap();
        assert_eq!(b.as_ptr() as usize % page_size(), 0);
        assert!(b.len() >= 10_000);
        b.as_mut_slice()[9_999] = 7;
        assert_eq!(b.as_slice()[9_999], 7);
        let big = AlignedBuf::new(4 << 20).unwrap();
        assert_eq!(big.as_ptr() as usize % page_size(), 0);
        assert!(big.len() >= 4 << 20);
    }
}
