//! Synchronous positional I/O: pread/pwrite and preadv2/pwritev2 with RWF flags.

use crate::{cvt, cvt_long};
use std::io;
use std::os::fd::RawFd;

pub type RwfFlags = i32;
/// High-priority (polled) I/O.
pub const RWF_HIPRI: RwfFlags = 0x1;
/// Do not wait for data that is not immediately available.
pub const RWF_NOWAIT: RwfFlags = 0x8;

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
