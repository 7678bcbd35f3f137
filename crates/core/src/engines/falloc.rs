//! falloc: fio's engine that "transfers" by allocating space: a write is
//! `fallocate(mode 0)` over its range, a read `fallocate(FALLOC_FL_KEEP_SIZE)`
//! (a trim punches a hole, as every engine's trims do). No data moves: it
//! measures the file system's allocator, for fragmentation workloads.

use super::one_call::{OneAtATime, OneCall};
use super::{Caps, EngineDef, EngineOpts, IoDesc, SlotArena, WithEngine};
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
        changes_target: true,
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

/// The call of an engine whose I/Os are space operations, not transfers.
pub struct SpaceOps {
    fds: Vec<RawFd>,
    op: Op,
}

impl SpaceOps {
    /// The synchronous engine making `op` on `fds`.
    pub fn new(arena: SlotArena, fds: &[RawFd], op: Op) -> OneAtATime<SpaceOps> {
        OneAtATime::new(
            arena,
            SpaceOps {
                fds: fds.to_vec(),
                op,
            },
        )
    }
}

impl OneCall for SpaceOps {
    fn call(&mut self, _: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        let fd = self.fds[d.file as usize];
        let len = d.len as u64;
        match (self.op, d.write) {
            (Op::Falloc, true) => dioscope_sys::fs::fallocate(fd, d.offset, len),
            (Op::Falloc, false) => dioscope_sys::fs::fallocate_keep_size(fd, d.offset, len),
            (Op::Truncate, true) => dioscope_sys::fs::ftruncate(fd, d.offset),
            // fio's ftruncate engine acts on writes only.
            (Op::Truncate, false) => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }?;
        // fio accounts the block size for each operation.
        Ok(d.len as usize)
    }
}
