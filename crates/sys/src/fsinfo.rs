//! What kind of file system a descriptor lives on (`fstatfs`) and its inode
//! flags (`FS_IOC_GETFLAGS`), to tell when O_DIRECT is not really direct.

use crate::cvt;
use std::io;
use std::os::fd::RawFd;

// _IOR('f', 1, long); the kernel reads and writes an int through it.
const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;

/// Copy-on-write disabled (btrfs `chattr +C`); on btrfs this also means no
/// data checksums, the one case where btrfs does real direct writes.
pub const FS_NOCOW_FL: u32 = 0x0080_0000;
/// Compress the file's data (btrfs).
pub const FS_COMPR_FL: u32 = 0x0000_0004;

pub const EXT4_SUPER_MAGIC: u64 = 0xEF53;
pub const XFS_SUPER_MAGIC: u64 = 0x5846_5342;
pub const BTRFS_SUPER_MAGIC: u64 = 0x9123_683E;
pub const TMPFS_MAGIC: u64 = 0x0102_1994;
pub const RAMFS_MAGIC: u64 = 0x8584_58F6;
pub const NFS_SUPER_MAGIC: u64 = 0x6969;
pub const OVERLAYFS_SUPER_MAGIC: u64 = 0x794C_7630;
pub const FUSE_SUPER_MAGIC: u64 = 0x6573_5546;
pub const F2FS_SUPER_MAGIC: u64 = 0xF2F5_2010;
pub const ZFS_SUPER_MAGIC: u64 = 0x2FC1_2FC1;
pub const BCACHEFS_SUPER_MAGIC: u64 = 0xCA45_1A4E;

/// What `fstatfs` says about a file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsStat {
    /// Magic number identifying the file-system type.
    pub fs_type: u64,
    /// Optimal transfer block size (the fs block size on local file systems).
    pub block_size: u64,
    pub blocks: u64,
    pub blocks_free: u64,
}

/// `fstatfs(2)`.
pub fn fstatfs(fd: RawFd) -> io::Result<FsStat> {
    // SAFETY: statfs is plain old data; zero is a valid bit pattern.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: s is a valid, writable struct statfs.
    cvt(unsafe { libc::fstatfs(fd, &mut s) })?;
    Ok(FsStat {
        fs_type: (s.f_type as u64) & 0xFFFF_FFFF,
        block_size: s.f_bsize as u64,
        blocks: s.f_blocks as u64,
        blocks_free: s.f_bfree as u64,
    })
}

/// Human name of a file-system magic, when dioscope knows it.
pub fn fs_type_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
        EXT4_SUPER_MAGIC => "ext4",
        XFS_SUPER_MAGIC => "xfs",
        BTRFS_SUPER_MAGIC => "btrfs",
        TMPFS_MAGIC => "tmpfs",
        RAMFS_MAGIC => "ramfs",
        NFS_SUPER_MAGIC => "nfs",
        OVERLAYFS_SUPER_MAGIC => "overlay",
        FUSE_SUPER_MAGIC => "fuse",
        F2FS_SUPER_MAGIC => "f2fs",
        ZFS_SUPER_MAGIC => "zfs",
        BCACHEFS_SUPER_MAGIC => "bcachefs",
        _ => return None,
    })
}

/// The inode flags (`chattr`/`lsattr` bits) of an open file.
pub fn inode_flags(fd: RawFd) -> io::Result<u32> {
    // The kernel stores an int; an 8-byte buffer is safe whichever it writes.
    let mut v: [libc::c_int; 2] = [0; 2];
    // SAFETY: v is writable for 8 bytes, the ioctl's declared argument size.
    cvt(unsafe { libc::ioctl(fd, FS_IOC_GETFLAGS as _, v.as_mut_ptr()) })?;
    Ok(v[0] as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn statfs_of_proc_is_not_a_disk_fs() {
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        let s = fstatfs(f.as_raw_fd()).unwrap();
        assert_eq!(s.fs_type, 0x9fa0, "PROC_SUPER_MAGIC");
        assert_eq!(fs_type_name(s.fs_type), None);
        assert_eq!(fs_type_name(BTRFS_SUPER_MAGIC), Some("btrfs"));
    }

    #[test]
    fn inode_flags_of_a_temp_file() {
        let p = std::env::temp_dir().join(format!("dioscope-flags-{}", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        match inode_flags(f.as_raw_fd()) {
            // A fresh file has no NOCOW flag unless its directory has +C.
            Ok(fl) => assert_eq!(fl & FS_COMPR_FL, 0),
            Err(e) => eprintln!("skipping: FS_IOC_GETFLAGS unsupported here ({e})"),
        }
        std::fs::remove_file(p).unwrap();
    }
}
