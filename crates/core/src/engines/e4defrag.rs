//! e4defrag: fio's engine that defragments instead of writing. Each write
//! is an `EXT4_IOC_MOVE_EXT` over its range: ext4 copies the range's data
//! into the same range of a donor file's blocks and swaps the blocks, so
//! the file reads the same and its extents move (what e4defrag(8) does).
//! The donor (`donorname=`, in `directory=` when relative) is allocated
//! once at start (`inplace=0`) or for each I/O and truncated after it
//! (`inplace=1`). Reads are refused (EINVAL), as in fio: the engine only
//! changes layout.

use super::one_call::{OneAtATime, OneCall};
use super::{Caps, EngineDef, EngineOpts, EngineParams, IoDesc, SlotArena, WithEngine};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["e4defrag"];
    const HELP: &'static str = "no data written: each write is ext4's EXT4_IOC_MOVE_EXT over its \
         range, swapping in the blocks of the donor file donorname= (allocated once, or per I/O \
         with inplace=1); the file's data stays the same, its extents move; ext4 only, writes only";
    const OPTIONS: &'static [&'static str] = &["donorname", "inplace"];
    const CAPS: Caps = Caps {
        sync: true,
        moves_data: false,
        changes_target: true,
        ..Caps::BASE
    };

    fn check(p: &EngineParams) -> Result<(), String> {
        if p.donorname.is_none() {
            return Err("ioengine=e4defrag needs donorname= (the donor file whose blocks it \
                        swaps in), for example donorname=file.def"
                .into());
        }
        Ok(())
    }

    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        let p = &opts.job.params;
        let name = p.donorname.as_deref().unwrap_or_default();
        let path = match (&opts.job.directory, PathBuf::from(name)) {
            (Some(d), n) if n.is_relative() => PathBuf::from(d).join(n),
            (_, n) => n,
        };
        let setup = |what: &str, e: &io::Error, fix: &str| {
            super::EngineSetupError::new(&format!("{what} {}", path.display()), e, fix)
        };
        let donor: OwnedFd = crate::outfile::open(
            &path,
            crate::outfile::Mode::Keep,
            &crate::outfile::Rules::new("donorname"),
        )
        .map_err(|e| io::Error::other(e.why))
        .map_err(|e| setup("opening the donor file", &e, "point donorname= at a writable place on the target's ext4 file system"))?
        .into();
        let st = dioscope_sys::fs::statx_fd(donor.as_raw_fd())
            .map_err(|e| setup("reading the donor file", &e, "check donorname="))?;
        if !st.is_regular() {
            return Err(super::EngineSetupError {
                errno: libc::EINVAL,
                msg: format!(
                    "e4defrag's donor {} is not a regular file; point donorname= at a file",
                    path.display()
                ),
            });
        }
        if !p.inplace {
            // fio: the donor gets the blocks of the whole file at start.
            let mut end = 0;
            for &fd in fds {
                end = end.max(dioscope_sys::mmap::fd_size(fd).unwrap_or(0));
            }
            if end > 0 {
                dioscope_sys::fs::fallocate(donor.as_raw_fd(), 0, end).map_err(|e| {
                    setup("allocating the donor file", &e, "free space on the file system, or use inplace=1")
                })?;
            }
        }
        let bsz = (st.blksize as u64).max(512);
        let mut e = OneAtATime::new(
            arena,
            Defrag {
                fds: fds.to_vec(),
                donor,
                bsz,
                inplace: p.inplace,
                moved_blocks: 0,
            },
        );
        let out = f.run(&mut e);
        let note = format!(
            "e4defrag: {} blocks of {} bytes moved to the donor's {}",
            e.inner_mut().moved_blocks,
            bsz,
            path.display()
        );
        Ok((out, Some(note)))
    }
}

/// One worker's defragmenter.
pub struct Defrag {
    fds: Vec<RawFd>,
    donor: OwnedFd,
    /// The file system's block (the ioctl counts in blocks).
    bsz: u64,
    inplace: bool,
    moved_blocks: u64,
}

impl OneCall for Defrag {
    fn call(&mut self, _: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        self.defrag(d)
            .map(|n| n as usize)
            .map_err(io::Error::from_raw_os_error)
    }
}

impl Defrag {
    /// One I/O: bytes "written" (moved), or an errno.
    fn defrag(&mut self, d: &IoDesc) -> Result<u32, i32> {
        if !d.write {
            return Err(libc::EINVAL);
        }
        let donor = self.donor.as_raw_fd();
        let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
        if self.inplace {
            dioscope_sys::fs::fallocate(donor, d.offset, d.len as u64).map_err(errno)?;
        }
        let start = d.offset / self.bsz;
        let blocks = (d.offset + d.len as u64).div_ceil(self.bsz) - start;
        let fd = self.fds[d.file as usize];
        let (moved, r) = dioscope_sys::fs::move_ext(fd, donor, start, start, blocks);
        self.moved_blocks += moved;
        // As fio: a move that ext4 refuses (EBUSY while another writer has
        // the range's pages, EINVAL beyond the file's end) is the I/O's
        // error, not retried, and one that moved only part of the range is
        // a short write.
        let freed = if self.inplace {
            // Free what was not swapped in (the donor now holds the old blocks).
            dioscope_sys::fs::ftruncate(donor, 0)
        } else {
            Ok(())
        };
        r.map_err(errno)?;
        freed.map_err(errno)?;
        let bytes = (moved * self.bsz).min(d.len as u64) as u32;
        if bytes == 0 {
            // Nothing moved: beyond the file's end.
            return Err(libc::EINVAL);
        }
        Ok(bytes)
    }
}
