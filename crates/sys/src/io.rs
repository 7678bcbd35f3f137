//! Synchronous positional I/O: pread/pwrite and preadv2/pwritev2 with RWF flags.

use crate::{cvt, retry_eintr, syscall6};
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
    let a = [
        fd as u64,
        buf.as_mut_ptr() as u64,
        buf.len() as u64,
        off,
        0,
        0,
    ];
    // SAFETY: buf is valid for writes of its length.
    retry_eintr(|| unsafe { syscall6(libc::SYS_pread64, a) })
}

/// `pwrite(2)` from `buf`; returns bytes written. Retries on EINTR.
#[inline]
pub fn pwrite(fd: RawFd, buf: &[u8], off: u64) -> io::Result<usize> {
    let a = [fd as u64, buf.as_ptr() as u64, buf.len() as u64, off, 0, 0];
    // SAFETY: buf is valid for reads of its length.
    retry_eintr(|| unsafe { syscall6(libc::SYS_pwrite64, a) })
}

/// `preadv2(2)` with one iovec and RWF flags.
#[inline]
pub fn preadv2(fd: RawFd, buf: &mut [u8], off: u64, flags: RwfFlags) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of its length.
    unsafe {
        one_iovec(
            libc::SYS_preadv2,
            fd,
            buf.as_mut_ptr(),
            buf.len(),
            off,
            flags,
        )
    }
}

/// `pwritev2(2)` with one iovec and RWF flags.
#[inline]
pub fn pwritev2(fd: RawFd, buf: &[u8], off: u64, flags: RwfFlags) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of its length; the kernel only reads it.
    unsafe {
        one_iovec(
            libc::SYS_pwritev2,
            fd,
            buf.as_ptr() as *mut u8,
            buf.len(),
            off,
            flags,
        )
    }
}

/// `preadv2` or `pwritev2` (`nr`) of one iovec, retried on EINTR.
///
/// # Safety
/// `base` is valid for `len` bytes of the access `nr` makes.
#[inline(always)]
unsafe fn one_iovec(
    nr: libc::c_long,
    fd: RawFd,
    base: *mut u8,
    len: usize,
    off: u64,
    flags: RwfFlags,
) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: base.cast(),
        iov_len: len,
    };
    // The offset in two halves (pos_l, pos_h): on a 64-bit kernel pos_l
    // holds all of it and pos_h is 0.
    let a = [
        fd as u64,
        &iov as *const _ as u64,
        1,
        off,
        0,
        flags as u32 as u64,
    ];
    // SAFETY: one iovec describing the caller's buffer.
    retry_eintr(|| unsafe { syscall6(nr, a) })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn scratch() -> std::fs::File {
        tempfile::tempfile().unwrap()
    }

    #[test]
    fn positional_calls_move_the_bytes_at_their_offsets() {
        let f = scratch();
        let fd = f.as_raw_fd();
        assert_eq!(pwrite(fd, b"abcd", 10).unwrap(), 4);
        assert_eq!(pwritev2(fd, b"XY", 1 << 20, 0).unwrap(), 2);
        let mut b = [0u8; 4];
        assert_eq!(pread(fd, &mut b, 10).unwrap(), 4);
        assert_eq!(&b, b"abcd");
        let mut c = [0u8; 8];
        assert_eq!(preadv2(fd, &mut c, 12, 0).unwrap(), 8);
        assert_eq!(&c[..2], b"cd");
        assert_eq!(preadv2(fd, &mut c[..2], 1 << 20, 0).unwrap(), 2);
        assert_eq!(&c[..2], b"XY");
        // At the end: 0 bytes, not an error; the file's length is the
        // last write's end (the offset reached the kernel whole).
        assert_eq!(pread(fd, &mut b, (1 << 20) + 2).unwrap(), 0);
        assert_eq!(f.metadata().unwrap().len(), (1 << 20) + 2);
    }

    #[test]
    fn errors_come_back_as_the_kernels_errno() {
        let mut b = [0u8; 4];
        let e = pread(-1, &mut b, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        let e = pwrite(-1, &b, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        let f = scratch();
        // An RWF flag the kernel does not know: EOPNOTSUPP.
        let e = preadv2(f.as_raw_fd(), &mut b, 0, 1 << 30).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
        let e = pwritev2(f.as_raw_fd(), &b, 0, 1 << 30).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
    }
}
