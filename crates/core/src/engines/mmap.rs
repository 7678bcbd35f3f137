//! mmap: each target is mapped whole (`MAP_SHARED`) and an I/O is a copy
//! between the slot buffer and the mapping — fio's `mmap` engine. A read
//! of a page that is not cached faults it in from the device; a write
//! dirties the page cache.
//!
//! `direct=1` cannot bypass the page cache here; as in fio, it means each
//! I/O is pushed through it: a write's pages are written back
//! (`msync(MS_SYNC)`) before the I/O completes, and the pages an I/O
//! touched are then dropped (`MADV_DONTNEED` + `POSIX_FADV_DONTNEED`), so
//! the next access goes to the device again.

use super::one_call::{OneAtATime, OneCall};
use super::{Caps, EngineDef, EngineOpts, EngineSetupError, IoDesc, SlotArena, WithEngine};
use dioscope_sys::mmap::{fd_size, FileMap};
use std::io;
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["mmap"];
    const HELP: &'static str = "the target is mapped (mmap(2), MAP_SHARED) and I/O is a memcpy to or \
         from the mapping, one I/O at a time; with direct=1 each write is written back \
         (msync MS_SYNC) and the pages each I/O touched are dropped from the page cache, so \
         the next access reaches the device; fsync= flushes with fsync(2), which writes back \
         the mapping's dirty pages as msync does";
    const CAPS: Caps = Caps {
        sync: true,
        page_cache: true,
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), EngineSetupError> {
        let mut maps = Vec::with_capacity(fds.len());
        for &fd in fds {
            let setup = |what: &str, e: io::Error| {
                let fix = match e.raw_os_error() {
                    Some(libc::EINVAL) => {
                        "the target is empty or cannot be mapped: lay the file out first \
                         (drop create_on_open), or use ioengine=psync"
                    }
                    Some(libc::ENODEV) => {
                        "this file system or device does not support mmap: use ioengine=psync"
                    }
                    _ => "use ioengine=psync",
                };
                EngineSetupError::new(what, &e, fix)
            };
            let len = fd_size(fd).map_err(|e| setup("sizing the target", e))?;
            let writable = dioscope_sys::vio::status_flags(fd)
                .map_err(|e| setup("reading the target's open flags", e))?
                & libc::O_ACCMODE
                == libc::O_RDWR;
            let m = FileMap::new(fd, len, writable, opts.random)
                .map_err(|e| setup(&format!("mmap of {len} bytes"), e))?;
            if opts.direct {
                // Start from the device, as O_DIRECT would: what the layout
                // or an earlier job left cached is dropped.
                m.drop_cached(fd, 0, len)
                    .map_err(|e| setup("dropping the target's cached pages", e))?;
            }
            maps.push(m);
        }
        let mut e = OneAtATime::new(
            arena,
            Mmap {
                maps,
                fds: fds.to_vec(),
                direct: opts.direct,
            },
        );
        Ok((f.run(&mut e), None))
    }
}

/// One worker's mappings, one copy per I/O (under [`OneAtATime`]).
pub struct Mmap {
    maps: Vec<FileMap>,
    fds: Vec<RawFd>,
    direct: bool,
}

impl OneCall for Mmap {
    #[inline]
    fn call(&mut self, arena: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        self.io(arena, d)
            .map(|()| d.len as usize)
            .map_err(io::Error::from_raw_os_error)
    }
}

impl Mmap {
    #[inline]
    fn io(&mut self, arena: &mut SlotArena, d: &IoDesc) -> Result<(), i32> {
        let m = &mut self.maps[d.file as usize];
        let buf = &mut arena.slot_mut(d.slot)[..d.len as usize];
        if d.write {
            m.copy_in(d.offset, buf)?;
        } else {
            m.copy_out(d.offset, buf)?;
        }
        if self.direct {
            let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
            if d.write {
                m.sync(d.offset, d.len as u64).map_err(errno)?;
            }
            m.drop_cached(self.fds[d.file as usize], d.offset, d.len as u64)
                .map_err(errno)?;
        }
        Ok(())
    }
}
