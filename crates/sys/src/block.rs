//! Block-device ioctls: size, sector sizes and buffer flush.

use crate::cvt;
use std::io;
use std::os::fd::RawFd;

// _IOR(0x12, 114, size_t)
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
// _IO(0x12, 104)
const BLKSSZGET: libc::c_ulong = 0x1268;
// _IO(0x12, 123)
const BLKPBSZGET: libc::c_ulong = 0x127b;
// _IO(0x12, 97)
const BLKFLSBUF: libc::c_ulong = 0x1261;

/// Size of a block device in bytes. Works on a read-only descriptor.
pub fn size_bytes(fd: RawFd) -> io::Result<u64> {
    let mut n: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer.
    cvt(unsafe { libc::ioctl(fd, BLKGETSIZE64 as _, &mut n) })?;
    Ok(n)
}

/// Logical block size (the smallest direct-I/O unit).
pub fn logical_block_size(fd: RawFd) -> io::Result<u32> {
    let mut n: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int.
    cvt(unsafe { libc::ioctl(fd, BLKSSZGET as _, &mut n) })?;
    Ok(n as u32)
}

/// Physical block size.
pub fn physical_block_size(fd: RawFd) -> io::Result<u32> {
    let mut n: libc::c_uint = 0;
    // SAFETY: BLKPBSZGET writes one unsigned int.
    cvt(unsafe { libc::ioctl(fd, BLKPBSZGET as _, &mut n) })?;
    Ok(n)
}

// _IO(0x12, 119)
const BLKDISCARD: libc::c_ulong = 0x1277;

/// Discard (trim) a byte range of a block device: `BLKDISCARD`. The
/// device may then return zeros or the old data for it (see the device's
/// `queue/discard_zeroes_data`); either way the data is no longer kept.
pub fn discard(fd: RawFd, off: u64, len: u64) -> io::Result<()> {
    let range: [u64; 2] = [off, len];
    // SAFETY: BLKDISCARD reads two u64 (start, length) through the pointer.
    cvt(unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) }).map(drop)
}

/// Drop the device's page cache (`BLKFLSBUF`; needs CAP_SYS_ADMIN).
pub fn flush_buffers(fd: RawFd) -> io::Result<()> {
    // SAFETY: BLKFLSBUF takes no argument.
    cvt(unsafe { libc::ioctl(fd, BLKFLSBUF as _, 0) }).map(drop)
}

// _IOR(0x12, 128, __u64)
const BLKGETDISKSEQ: libc::c_ulong = 0x8008_1280;

/// The kernel's sequence number of the disk behind `fd` (Linux 5.15+): new
/// for every disk the kernel makes, and for a loop device at every attach;
/// never reused within a boot.
pub fn diskseq(fd: RawFd) -> io::Result<u64> {
    let mut n: u64 = 0;
    // SAFETY: BLKGETDISKSEQ writes one u64 through the pointer.
    cvt(unsafe { libc::ioctl(fd, BLKGETDISKSEQ as _, &mut n) })?;
    Ok(n)
}
