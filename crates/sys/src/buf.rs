//! Aligned I/O buffers for O_DIRECT.
//!
//! One anonymous mapping per worker holds every slot's buffer. A mapping is
//! page aligned, which satisfies every direct-I/O memory alignment the kernel
//! reports (`STATX_DIOALIGN` gives at most the page size). Mappings of 2 MiB or
//! more try `MAP_HUGETLB` first (fewer TLB misses, fewer pages to pin for fixed
//! buffers) and fall back to transparent huge pages via `madvise`.
//!
//! fio's `mem=`/`iomem=` kinds choose another backing ([`BufKind`]: shared
//! or huge anonymous mappings, a mapped file, System V shared memory), and
//! `iomem_align=` an alignment beyond the page.

use std::io;
use std::path::PathBuf;
use std::ptr::NonNull;

/// Where a buffer's memory comes from (fio's `mem=` values).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BufKind {
    /// Private anonymous memory (fio's `malloc` and `mmap`).
    #[default]
    Anonymous,
    /// `mmapshared`: a shared anonymous mapping.
    Shared,
    /// `mmaphuge` without a file: anonymous huge pages, required.
    Huge,
    /// `mmap:PATH`, `mmaphuge:PATH`: a shared mapping of this file.
    File(PathBuf),
    /// `shm`, `shmhuge`: System V shared memory (removed at detach).
    Shm { huge: bool },
}

/// How to allocate a buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BufOptions {
    pub kind: BufKind,
    /// Alignment of the start beyond the page size (0: the page).
    pub align: usize,
}

/// A page-aligned, zero-initialised region of memory owned by one worker.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    huge: bool,
    /// What to release: the mapping (base, length) or the shm attachment.
    base: NonNull<u8>,
    map_len: usize,
    shm: bool,
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
                    base: ptr,
                    map_len: hlen,
                    shm: false,
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
            base: ptr,
            map_len: len,
            shm: false,
        })
    }

    /// Allocate `len` bytes as `opts` asks. Errors name the backing and the fix.
    pub fn with(len: usize, opts: &BufOptions) -> io::Result<AlignedBuf> {
        let page = page_size();
        let align = opts.align.max(page);
        if !align.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("an alignment of {align} bytes is not a power of two"),
            ));
        }
        if opts.kind == BufKind::Anonymous && align == page {
            return AlignedBuf::new(len);
        }
        let len = len.max(1).div_ceil(page) * page;
        let huge = matches!(opts.kind, BufKind::Huge | BufKind::Shm { huge: true });
        let unit = if huge { HUGE } else { page };
        // Room to move the start up to the alignment.
        let map_len = (len + align - page).div_ceil(unit) * unit;
        let (base, shm) = match &opts.kind {
            BufKind::Anonymous => (map(map_len, 0), false),
            BufKind::Shared => (map_shared(map_len, -1), false),
            BufKind::Huge => (map(map_len, libc::MAP_HUGETLB), false),
            BufKind::File(p) => {
                use std::os::fd::AsRawFd;
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(p)?;
                if f.metadata()?.len() < map_len as u64 {
                    f.set_len(map_len as u64)?;
                }
                // The mapping keeps the file referenced after `f` closes.
                (map_shared(map_len, f.as_raw_fd()), false)
            }
            BufKind::Shm { huge } => (shm_attach(map_len, *huge)?, true),
        };
        let base = base.ok_or_else(io::Error::last_os_error)?;
        let addr = base.as_ptr() as usize;
        let skip = addr.next_multiple_of(align) - addr;
        // SAFETY: skip < align <= map_len - len + page, inside the mapping.
        let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(skip)) };
        Ok(AlignedBuf {
            ptr,
            len,
            huge,
            base,
            map_len,
            shm,
        })
    }

    /// Pin the buffer in memory (`mlock`). Fails with EPERM or ENOMEM when
    /// it exceeds `RLIMIT_MEMLOCK` without CAP_IPC_LOCK.
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the range is our own mapping.
        crate::cvt(unsafe { libc::mlock(self.ptr.as_ptr().cast(), self.len) }).map(drop)
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
        if self.shm {
            // SAFETY: `base` is the address shmat returned.
            unsafe { libc::shmdt(self.base.as_ptr().cast()) };
        } else {
            // SAFETY: we unmap exactly the mapping we created.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.map_len) };
        }
    }
}

fn map_shared(len: usize, fd: libc::c_int) -> Option<NonNull<u8>> {
    let anon = if fd < 0 { libc::MAP_ANONYMOUS } else { 0 };
    // SAFETY: a shared mapping of our own anonymous memory or of an open
    // file (which stays referenced by the mapping), with no address hint.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | anon,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(p.cast())
    }
}

/// A private System V segment, attached and already marked for removal,
/// so it disappears at the last detach (also when the process dies).
fn shm_attach(len: usize, huge: bool) -> io::Result<Option<NonNull<u8>>> {
    let flags = libc::IPC_CREAT | 0o600 | if huge { libc::SHM_HUGETLB } else { 0 };
    // SAFETY: shmget takes integers only.
    let id = crate::cvt(unsafe { libc::shmget(libc::IPC_PRIVATE, len, flags) })?;
    // SAFETY: attaching a segment we just created, at an address the kernel picks.
    let p = unsafe { libc::shmat(id, std::ptr::null(), 0) };
    let err = io::Error::last_os_error();
    // SAFETY: IPC_RMID takes no buffer.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    if p as isize == -1 {
        return Err(err);
    }
    Ok(NonNull::new(p.cast()))
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

    #[test]
    fn every_kind_is_usable_and_aligned() {
        let d = std::env::temp_dir().join(format!("dioscope-buf-{}", std::process::id()));
        for kind in [
            BufKind::Anonymous,
            BufKind::Shared,
            BufKind::File(d.clone()),
            BufKind::Shm { huge: false },
        ] {
            let opts = BufOptions {
                kind: kind.clone(),
                align: 1 << 16,
            };
            let mut b = AlignedBuf::with(10_000, &opts).unwrap();
            assert_eq!(b.as_ptr() as usize % (1 << 16), 0, "{kind:?}");
            b.as_mut_slice()[9_999] = 9;
            assert_eq!(b.as_slice()[9_999], 9);
            assert!(
                b.as_slice()[..9_999].iter().all(|&x| x == 0),
                "{kind:?} starts zeroed"
            );
        }
        let _ = std::fs::remove_file(&d);
        let bad = BufOptions {
            kind: BufKind::Anonymous,
            align: 3 * page_size(),
        };
        assert!(AlignedBuf::with(10, &bad).is_err());
        // A small buffer can be locked (root, or within `ulimit -l`).
        AlignedBuf::new(4096).unwrap().lock().unwrap();
    }
}
