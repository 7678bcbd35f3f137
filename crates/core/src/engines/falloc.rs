//! falloc: fio's engine that "transfers" by allocating space: a write is
//! `fallocate(mode 0)` over its range, a read `fallocate(FALLOC_FL_KEEP_SIZE)`
//! (a trim punches a hole, as every engine's trims do). No data moves: it
//! measures the file system's allocator, for fragmentation workloads.

use super::{Caps, Completion, Engine, EngineDef, EngineOpts, IoDesc, SlotArena, WithEngine};
use std::io;
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["falloc"];
    const HELP: &'static str = "no data moves: a write is fallocate(2) of its range (mode 0), a read \
         fallocate with FALLOC_FL_KEEP_SIZE, a trim punches a hole; times the file system's \
         space allocation, one call at a time";
    const CAPS: Caps = Caps {
        sync: true,
        moves_data: false,
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        _: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        for &fd in fds {
            let fl = dioscope_sys::vio::status_flags(fd).map_err(|e| {
                super::EngineSetupError::new("reading the target's open flags", &e, "use ioengine=psync")
            })?;
            if fl & libc::O_ACCMODE != libc::O_RDWR {
                // A read here is fallocate(KEEP_SIZE): it changes the file,
                // and a job that only reads gets its targets read-only (the
                // write guard judged them so).
                return Err(super::EngineSetupError {
                    errno: libc::EBADF,
                    msg: "falloc's reads are fallocate(FALLOC_FL_KEEP_SIZE), which changes \
                          the file, and this job only reads, so its targets are open \
                          read-only; use rw=write or randwrite (or randrw) with falloc"
                        .into(),
                });
            }
        }
        let mut e = SpaceOps::new(arena, fds, Op::Falloc);
        Ok((f.run(&mut e), None))
    }
}

/// The call a space-management engine makes for each I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// falloc: fallocate the I/O's range.
    Falloc,
    /// ftruncate: set the file's size to the I/O's offset (writes only).
    Truncate,
}

/// A synchronous engine whose I/Os are space operations, not transfers.
pub struct SpaceOps {
    arena: SlotArena,
    fds: Vec<RawFd>,
    op: Op,
    staged: Option<IoDesc>,
    done: Option<Completion>,
}

impl SpaceOps {
    pub fn new(arena: SlotArena, fds: &[RawFd], op: Op) -> SpaceOps {
        SpaceOps {
            arena,
            fds: fds.to_vec(),
            op,
            staged: None,
            done: None,
        }
    }
}

impl Engine for SpaceOps {
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        debug_assert!(self.staged.is_none(), "one operation at a time");
        self.staged = Some(d);
    }

    fn commit(&mut self, _min: u32) -> io::Result<u32> {
        let Some(d) = self.staged.take() else {
            return Ok(0);
        };
        let fd = self.fds[d.file as usize];
        let len = d.len as u64;
        let r = match (self.op, d.write) {
            (Op::Falloc, true) => dioscope_sys::fs::fallocate(fd, d.offset, len),
            (Op::Falloc, false) => dioscope_sys::fs::fallocate_keep_size(fd, d.offset, len),
            (Op::Truncate, true) => dioscope_sys::fs::ftruncate(fd, d.offset),
            // fio's ftruncate engine acts on writes only.
            (Op::Truncate, false) => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        };
        let res = match r {
            // fio accounts the block size for each operation.
            Ok(()) => d.len as i32,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        };
        self.done = Some(Completion { slot: d.slot, res });
        Ok(1)
    }

    #[inline]
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        match self.done.take() {
            Some(c) if !out.is_empty() => {
                out[0] = c;
                1
            }
            other => {
                self.done = other;
                0
            }
        }
    }

    fn arena(&mut self) -> &mut SlotArena {
        &mut self.arena
    }
}
