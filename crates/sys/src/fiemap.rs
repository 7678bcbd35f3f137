//! `FS_IOC_FIEMAP`: the physical extents of a file, to measure fragmentation
//! and find unwritten (allocated but never written) regions.

use crate::cvt;
use std::io;
use std::os::fd::RawFd;

// _IOWR('f', 11, struct fiemap), sizeof(struct fiemap) == 32
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_FLAG_SYNC: u32 = 0x1;

/// Last extent of the file.
pub const FIEMAP_EXTENT_LAST: u32 = 0x1;
/// Location not yet known (delayed allocation and the like).
pub const FIEMAP_EXTENT_UNKNOWN: u32 = 0x2;
/// Delayed allocation: the data is only in the page cache so far.
pub const FIEMAP_EXTENT_DELALLOC: u32 = 0x4;
/// Data is compressed or otherwise encoded.
pub const FIEMAP_EXTENT_ENCODED: u32 = 0x8;
/// Data stored inline with metadata.
pub const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;
/// Space allocated but never written: reads return zeros without device I/O.
pub const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
/// Shared with another file (reflink/snapshot).
pub const FIEMAP_EXTENT_SHARED: u32 = 0x2000;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

const BATCH: usize = 128;

#[repr(C)]
struct RawFiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [RawExtent; BATCH],
}

/// One extent as the file system reports it (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

impl Extent {
    pub fn is_unwritten(&self) -> bool {
        self.flags & FIEMAP_EXTENT_UNWRITTEN != 0
    }
}

/// The extents overlapping `[start, start+len)`, in logical order. With
/// `sync`, dirty data is written back first so delayed allocations have a
/// place (this causes I/O; dioscope only asks for it outside measurements).
pub fn extents(fd: RawFd, start: u64, len: u64, sync: bool) -> io::Result<Vec<Extent>> {
    let end = start.saturating_add(len);
    let mut out = Vec::new();
    let mut pos = start;
    let mut req = Box::new(RawFiemap {
        fm_start: 0,
        fm_length: 0,
        fm_flags: 0,
        fm_mapped_extents: 0,
        fm_extent_count: 0,
        fm_reserved: 0,
        fm_extents: [RawExtent::default(); BATCH],
    });
    while pos < end {
        req.fm_start = pos;
        req.fm_length = end - pos;
        req.fm_flags = if sync { FIEMAP_FLAG_SYNC } else { 0 };
        req.fm_mapped_extents = 0;
        req.fm_extent_count = BATCH as u32;
        req.fm_reserved = 0;
        // SAFETY: req is a live struct fiemap followed by room for exactly
        // fm_extent_count extents, as the ioctl requires.
        cvt(unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, &mut *req as *mut RawFiemap) })?;
        let n = (req.fm_mapped_extents as usize).min(BATCH);
        if n == 0 {
            break;
        }
        let mut last = false;
        for e in &req.fm_extents[..n] {
            out.push(Extent {
                logical: e.fe_logical,
                physical: e.fe_physical,
                length: e.fe_length,
                flags: e.fe_flags,
            });
            last |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
        }
        let tail = &req.fm_extents[n - 1];
        let next = tail.fe_logical.saturating_add(tail.fe_length);
        if last || n < BATCH || next <= pos {
            break;
        }
        pos = next;
    }
    Ok(out)
}

/// Number of extents of the whole file, without listing them
/// (`fm_extent_count = 0` makes the kernel only count).
pub fn extent_count(fd: RawFd) -> io::Result<u64> {
    let mut req = RawFiemap {
        fm_start: 0,
        fm_length: u64::MAX,
        fm_flags: 0,
        fm_mapped_extents: 0,
        fm_extent_count: 0,
        fm_reserved: 0,
        fm_extents: [RawExtent::default(); BATCH],
    };
    // SAFETY: a valid struct fiemap; with fm_extent_count == 0 the kernel
    // writes only the header.
    cvt(unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, &mut req as *mut RawFiemap) })?;
    Ok(req.fm_mapped_extents as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    #[test]
    fn extents_of_a_file_with_two_separate_writes() {
        let p = std::env::temp_dir().join(format!("dioscope-fiemap-{}", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        f.write_all_at(&[1u8; 65536], 0).unwrap();
        f.write_all_at(&[1u8; 65536], 8 << 20).unwrap();
        let fd = f.as_raw_fd();
        match extents(fd, 0, u64::MAX, true) {
            Ok(v) => {
                // Two data regions separated by a hole cannot be one extent.
                assert!(v.len() >= 2, "{v:?}");
                assert!(v[0].logical < v[v.len() - 1].logical);
                let n = extent_count(fd).unwrap();
                assert_eq!(n, v.len() as u64);
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                eprintln!("skipping: FIEMAP not supported on {}", p.display());
            }
            Err(e) => panic!("{e}"),
        }
        std::fs::remove_file(p).unwrap();
    }
}
