//! File-system queries and hints: statx (with direct-I/O alignment),
//! fadvise, fallocate.

use crate::{cvt, cvt_long};
use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const STATX_BASIC_STATS: u32 = 0x7ff;
const STATX_DIOALIGN: u32 = 0x2000;
const STATX_WRITE_ATOMIC: u32 = 0x10000;

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct StatxTimestamp {
    tv_sec: i64,
    tv_nsec: u32,
    reserved: i32,
}

/// `struct statx` from `<linux/stat.h>`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RawStatx {
    mask: u32,
    blksize: u32,
    attributes: u64,
    nlink: u32,
    uid: u32,
    gid: u32,
    mode: u16,
    spare0: u16,
    ino: u64,
    size: u64,
    blocks: u64,
    attributes_mask: u64,
    atime: StatxTimestamp,
    btime: StatxTimestamp,
    ctime: StatxTimestamp,
    mtime: StatxTimestamp,
    rdev_major: u32,
    rdev_minor: u32,
    dev_major: u32,
    dev_minor: u32,
    mnt_id: u64,
    dio_mem_align: u32,
    dio_offset_align: u32,
    subvol: u64,
    atomic_write_unit_min: u32,
    atomic_write_unit_max: u32,
    atomic_write_segments_max: u32,
    spare2: [u32; 3],
    spare3: [u64; 8],
}

/// What dioscope needs from `statx(2)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Statx {
    pub mode: u32,
    pub size: u64,
    /// 512-byte blocks allocated.
    pub blocks: u64,
    pub blksize: u32,
    /// Device number of a block/char special file.
    pub rdev: (u32, u32),
    /// Device holding the file (its filesystem's device).
    pub dev: (u32, u32),
    /// Direct-I/O alignment for memory and for file offsets/lengths, when the
    /// filesystem reports it (`STATX_DIOALIGN`, Linux 6.1+). `None` when the
    /// kernel or filesystem does not say; `Some((0, 0))` means direct I/O is
    /// not supported on this file.
    pub dio_align: Option<(u32, u32)>,
    /// Torn-write-protected (RWF_ATOMIC) direct writes, when the file system
    /// reports them (`STATX_WRITE_ATOMIC`, Linux 6.11+): `None` when it does
    /// not say or reports none.
    pub atomic_write: Option<AtomicWrite>,
}

/// A file's atomic-write limits (`stx_atomic_write_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtomicWrite {
    pub unit_min: u32,
    pub unit_max: u32,
    pub segments_max: u32,
}

impl Statx {
    pub fn is_block_device(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFBLK
    }
    pub fn is_regular(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
}

fn from_raw(r: &RawStatx) -> Statx {
    Statx {
        mode: r.mode as u32,
        size: r.size,
        blocks: r.blocks,
        blksize: r.blksize,
        rdev: (r.rdev_major, r.rdev_minor),
        dev: (r.dev_major, r.dev_minor),
        dio_align: (r.mask & STATX_DIOALIGN != 0).then_some((r.dio_mem_align, r.dio_offset_align)),
        atomic_write: (r.mask & STATX_WRITE_ATOMIC != 0 && r.atomic_write_unit_max != 0).then_some(
            AtomicWrite {
                unit_min: r.atomic_write_unit_min,
                unit_max: r.atomic_write_unit_max,
                segments_max: r.atomic_write_segments_max,
            },
        ),
    }
}

fn raw_statx(dirfd: RawFd, path: &CString, flags: i32) -> io::Result<Statx> {
    let mut r = RawStatx::default();
    // SAFETY: path is NUL-terminated; r is a writable statx buffer of the right size.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_statx,
            dirfd,
            path.as_ptr(),
            flags,
            STATX_BASIC_STATS | STATX_DIOALIGN | STATX_WRITE_ATOMIC,
            &mut r as *mut RawStatx,
        )
    };
    cvt_long(ret)?;
    Ok(from_raw(&r))
}

/// `statx` of a path (following symlinks).
pub fn statx_path(path: &Path) -> io::Result<Statx> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    raw_statx(libc::AT_FDCWD, &c, 0)
}

/// `statx` of an open descriptor.
pub fn statx_fd(fd: RawFd) -> io::Result<Statx> {
    let empty = CString::new("").unwrap();
    raw_statx(fd, &empty, libc::AT_EMPTY_PATH)
}

/// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file: drops clean cached pages.
pub fn fadvise_dontneed(fd: RawFd) -> io::Result<()> {
    // SAFETY: no memory is passed.
    let r = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// `fallocate(fd, 0, off, len)`: reserve blocks (so layout fails early with ENOSPC).
pub fn fallocate(fd: RawFd, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: no memory is passed.
    cvt(unsafe { libc::fallocate(fd, 0, off as i64, len as i64) }).map(drop)
}

/// `fallocate(fd, FALLOC_FL_KEEP_SIZE, off, len)`: reserve blocks past
/// the end without changing the file's size (fio's `fallocate=keep`).
pub fn fallocate_keep_size(fd: RawFd, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: no memory is passed.
    cvt(unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, off as i64, len as i64) }).map(drop)
}

/// `posix_fallocate(fd, off, len)`: reserve blocks (glibc writes zeros
/// where the filesystem cannot allocate).
pub fn posix_fallocate(fd: RawFd, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: no memory is passed.
    let r = unsafe { libc::posix_fallocate(fd, off as i64, len as i64) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Trim a file's range: `fallocate(PUNCH_HOLE | KEEP_SIZE)` frees the
/// blocks; the range reads back as zeros, the size is unchanged.
pub fn punch_hole(fd: RawFd, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: no memory is passed.
    cvt(unsafe {
        libc::fallocate(
            fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off as i64,
            len as i64,
        )
    })
    .map(drop)
}

/// `ftruncate`.
pub fn ftruncate(fd: RawFd, len: u64) -> io::Result<()> {
    // SAFETY: no memory is passed.
    cvt(unsafe { libc::ftruncate(fd, len as i64) }).map(drop)
}

/// ext4's `struct move_extent` (linux/ext4.h), the argument of `EXT4_IOC_MOVE_EXT`.
#[repr(C)]
struct MoveExtent {
    reserved: u32,
    donor_fd: u32,
    orig_start: u64,
    donor_start: u64,
    len: u64,
    moved_len: u64,
}

/// `_IOWR('f', 15, struct move_extent)`.
const EXT4_IOC_MOVE_EXT: libc::c_ulong =
    (3 << 30) | ((std::mem::size_of::<MoveExtent>() as libc::c_ulong) << 16) | (0x66 << 8) | 15;

/// ext4's `EXT4_IOC_MOVE_EXT` (what e4defrag does): swap the blocks of
/// `len` file-system blocks at block `orig_start` of `fd` with those at
/// `donor_start` of `donor` (the data of `fd` is copied into the donor's
/// blocks first, so `fd` reads the same after). Returns the blocks moved,
/// which is also set when the call fails part-way. Both descriptors must be
/// open for writing, on the same ext4 file system.
pub fn move_ext(
    fd: RawFd,
    donor: RawFd,
    orig_start: u64,
    donor_start: u64,
    len: u64,
) -> (u64, io::Result<()>) {
    let mut me = MoveExtent {
        reserved: 0,
        donor_fd: donor as u32,
        orig_start,
        donor_start,
        len,
        moved_len: 0,
    };
    // SAFETY: `me` is a valid move_extent that outlives the call; the
    // kernel writes only its moved_len.
    let r = cvt(unsafe { libc::ioctl(fd, EXT4_IOC_MOVE_EXT as _, &mut me as *mut MoveExtent) });
    (me.moved_len, r.map(drop))
}

/// Give an unnamed (`O_TMPFILE`) file a name: `linkat` through
/// `/proc/self/fd/N` with `AT_SYMLINK_FOLLOW`, which needs no capability.
/// Fails with EEXIST when `path` exists.
pub fn link_fd(fd: RawFd, path: &Path) -> io::Result<()> {
    let src = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a number");
    let dst = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: both are NUL-terminated strings that outlive the call.
    cvt(unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            src.as_ptr(),
            libc::AT_FDCWD,
            dst.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    })
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_statx_is_the_kernels_256_bytes() {
        assert_eq!(std::mem::size_of::<RawStatx>(), 256);
        assert_eq!(std::mem::offset_of!(RawStatx, atomic_write_unit_min), 0xa8);
    }

    #[test]
    fn statx_of_tmp_file() {
        let p = std::env::temp_dir().join(format!("dioscope-statx-{}", std::process::id()));
        std::fs::write(&p, [1u8; 5000]).unwrap();
        let s = statx_path(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert!(s.is_regular());
        assert_eq!(s.size, 5000);
        assert!(s.blksize > 0);
    }
}
