//! A shared mapping of a file or block device for fio's `mmap` engine: I/O
//! is a copy between a slot buffer and the mapping, `msync` writes it back,
//! and `madvise` + `posix_fadvise` drop the pages again (what `direct=1`
//! means for this engine).

use crate::cvt;
use std::io;
use std::os::fd::RawFd;

/// Bytes a descriptor holds: `st_size` for a file, `BLKGETSIZE64` for a device.
pub fn fd_size(fd: RawFd) -> io::Result<u64> {
    let s = crate::fs::statx_fd(fd)?;
    if s.is_block_device() {
        crate::block::size_bytes(fd)
    } else {
        Ok(s.size)
    }
}

/// `MAP_SHARED` mapping of bytes `[0, len)` of a descriptor.
pub struct FileMap {
    ptr: *mut u8,
    len: usize,
    writable: bool,
}

impl FileMap {
    /// Map `len` bytes of `fd` (read-write when `writable`: the descriptor
    /// must then be open for writing). `random` tells the kernel not to
    /// read ahead (`MADV_RANDOM`), else to read ahead aggressively
    /// (`MADV_SEQUENTIAL`), as fio advises for random and sequential jobs.
    pub fn new(fd: RawFd, len: u64, writable: bool, random: bool) -> io::Result<FileMap> {
        let len = usize::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh mapping chosen by the kernel; nothing else refers to it.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let m = FileMap {
            ptr: p.cast(),
            len,
            writable,
        };
        let advice = if random {
            libc::MADV_RANDOM
        } else {
            libc::MADV_SEQUENTIAL
        };
        // SAFETY: the range is exactly our mapping. Advice is a hint: its
        // failure changes nothing we rely on.
        let _ = unsafe { libc::madvise(p, len, advice) };
        Ok(m)
    }

    /// A private anonymous mapping of `len` bytes (fio's `page_fault`
    /// engine): no page exists until the first access faults it in, as
    /// zeros, so each first touch of a page is a page fault.
    pub fn anonymous(len: u64) -> io::Result<FileMap> {
        let len = usize::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: a fresh private mapping chosen by the kernel; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(FileMap {
            ptr: p.cast(),
            len,
            writable: true,
        })
    }

    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// The mapping's first byte (for a user in this crate that reads it
    /// its own way: `bpf::Posts`, atomically).
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, off: u64, n: usize) -> Result<usize, i32> {
        match usize::try_from(off) {
            Ok(o) if o.checked_add(n).is_some_and(|end| end <= self.len) => Ok(o),
            // Past the end of what was mapped (the file was shorter at set-up):
            // what the kernel answers for I/O past a device's end.
            _ => Err(libc::ENXIO),
        }
    }

    /// Copy `dst.len()` bytes at `off` out of the mapping. A page not yet
    /// cached is read from the device here (a page fault). Errors are errnos.
    pub fn copy_out(&self, off: u64, dst: &mut [u8]) -> Result<(), i32> {
        let o = self.check(off, dst.len())?;
        // SAFETY: [o, o + len) is inside the mapping (checked); dst is a
        // distinct buffer. Other writers of the same file race with this
        // copy exactly as they race with read(2).
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(o), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copy `src` into the mapping at `off` (the page cache; `sync` writes it back).
    pub fn copy_in(&mut self, off: u64, src: &[u8]) -> Result<(), i32> {
        if !self.writable {
            return Err(libc::EBADF);
        }
        let o = self.check(off, src.len())?;
        // SAFETY: as in copy_out, into a mapping made PROT_WRITE.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(o), src.len()) };
        Ok(())
    }

    /// The page-aligned span covering `[off, off + len)`, clipped to the mapping.
    fn pages(&self, off: u64, len: u64) -> (usize, usize) {
        let page = crate::buf::page_size() as u64;
        let start = off / page * page;
        let end = (off + len).min(self.len as u64);
        (start as usize, end.saturating_sub(start) as usize)
    }

    /// `msync(MS_SYNC)` of the pages under `[off, off + len)`: written back
    /// when this returns.
    pub fn sync(&self, off: u64, len: u64) -> io::Result<()> {
        let (s, n) = self.pages(off, len);
        // SAFETY: the span lies inside our mapping and is page aligned.
        cvt(unsafe { libc::msync(self.ptr.add(s).cast(), n, libc::MS_SYNC) }).map(drop)
    }

    /// Forget the pages under `[off, off + len)`: unmap them from this
    /// process (`MADV_DONTNEED`; the data stays in the file) and drop the
    /// clean ones from the page cache (`POSIX_FADV_DONTNEED`), so the next
    /// access reads the device. Write dirty pages back first ([`sync`]).
    ///
    /// [`sync`]: FileMap::sync
    pub fn drop_cached(&self, fd: RawFd, off: u64, len: u64) -> io::Result<()> {
        let (s, n) = self.pages(off, len);
        // SAFETY: the span lies inside our shared file mapping; DONTNEED on a
        // shared mapping discards no data, only our page-table entries.
        cvt(unsafe { libc::madvise(self.ptr.add(s).cast(), n, libc::MADV_DONTNEED) })?;
        // SAFETY: no memory is passed.
        let r = unsafe { libc::posix_fadvise(fd, s as i64, n as i64, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(())
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once; no reference into it outlives self.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn copies_in_and_out_and_refuses_past_the_end() {
        let p = std::env::temp_dir().join(format!("dioscope-mmap-{}", std::process::id()));
        std::fs::write(&p, vec![7u8; 3 * 4096]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let fd = f.as_raw_fd();
        assert_eq!(fd_size(fd).unwrap(), 3 * 4096);
        let mut m = FileMap::new(fd, 3 * 4096, true, true).unwrap();
        m.copy_in(4096, &[1u8; 100]).unwrap();
        m.sync(4096, 100).unwrap();
        m.drop_cached(fd, 4096, 100).unwrap();
        let mut b = [0u8; 101];
        m.copy_out(4095, &mut b).unwrap();
        assert_eq!(b[0], 7);
        assert!(b[1..].iter().all(|&c| c == 1));
        assert_eq!(m.copy_out(3 * 4096 - 10, &mut b), Err(libc::ENXIO));
        assert_eq!(m.copy_out(u64::MAX - 5, &mut b), Err(libc::ENXIO));
        drop(m);
        let data = std::fs::read(&p).unwrap();
        assert!(data[4096..4196].iter().all(|&c| c == 1));
        let ro = FileMap::new(fd, 4096, false, false).unwrap();
        let mut ro = ro;
        assert_eq!(ro.copy_in(0, &[0u8; 4]), Err(libc::EBADF));
        std::fs::remove_file(&p).unwrap();
    }
}
