//! Synchronous positional I/O: pread/pwrite and preadv2/pwritev2 with RWF flags.

use crate::{cvt, cvt_long};
use std::io;
use std::os::fd::RawFd;

pub type RwfFlags = i32;
/// High-priority (polled) I/O.
pub const RWF_HIPRI: RwfFlags = 0x1;
/// Do not wait for data that is not immediately available.
pub const RWF_NOWAIT: RwfFlags = 0x8;
/// Torn-write protection: all of the write or none of it (Linux 6.11+).
pub const RWF_ATOMIC: RwfFlags = 0x40;
/// Buffered I/O whose pages leave the page cache once done (Linux 6.14+).
pub const RWF_DONTCACHE: RwfFlags = 0x80;

/// `pread(2)` into `buf`; returns bytes read. Retries on EINTR.
#[inline]
pub fn pread(fd: RawFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for writes of its length.
        let r = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off as i64) };
        match cvt_long(r as libc::c_long) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|n| n as usize),
        }
    }
}

/// `pwrite(2)` from `buf`; returns bytes written. Retries on EINTR.
#[inline]
pub fn pwrite(fd: RawFd, buf: &[u8], off: u64) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for reads of its length.
        let r = unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), off as i64) };
        match cvt_long(r as libc::c_long) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|n| n as usize),
        }
    }
}

/// `preadv2(2)` with one iovec and RWF flags.
#[inline]
pub fn preadv2(fd: RawFd, buf: &mut [u8], off: u64, flags: RwfFlags) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: one valid iovec describing a writable buffer.
        let r = unsafe { libc::preadv2(fd, &iov, 1, off as i64, flags) };
        match cvt_long(r as libc::c_long) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|n| n as usize),
        }
    }
}

/// `pwritev2(2)` with one iovec and RWF flags.
#[inline]
pub fn pwritev2(fd: RawFd, buf: &[u8], off: u64, flags: RwfFlags) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut _,
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: one valid iovec describing a readable buffer.
        let r = unsafe { libc::pwritev2(fd, &iov, 1, off as i64, flags) };
        match cvt_long(r as libc::c_long) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|n| n as usize),
        }
    }
}

pub fn fsync(fd: RawFd) -> io::Result<()> {
    // SAFETY: fsync has no memory preconditions.
    cvt(unsafe { libc::fsync(fd) }).map(drop)
}

pub fn fdatasync(fd: RawFd) -> io::Result<()> {
    // SAFETY: as above.
    cvt(unsafe { libc::fdatasync(fd) }).map(drop)
}

/// Whether the file behind `fd` takes the RWF flags `flags` on a read: one
/// read of `len` bytes at offset 0 into a page-aligned buffer (so it also
/// works on a descriptor open with O_DIRECT). `Ok` or the kernel's error
/// (EOPNOTSUPP when the file system does not support a flag).
pub fn probe_read_flags(fd: RawFd, flags: RwfFlags, len: usize) -> io::Result<()> {
    let buf = crate::buf::AlignedBuf::new(len.max(1))?;
    // SAFETY: the buffer is ours, valid for writes of its length, and
    // nothing else reads or writes it while this call runs.
    let slice = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), buf.len()) };
    preadv2(fd, slice, 0, flags).map(|_| ())
}
