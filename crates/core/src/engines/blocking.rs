//! The blocking engine under the sync family: psync (pread/pwrite), sync
//! (lseek + read/write), pvsync (preadv/pwritev) and pvsync2
//! (preadv2/pwritev2 with RWF flags).
//!
//! A synchronous engine does its I/O inside `commit`; the runner keeps at most
//! one I/O in flight for it (`Caps::sync`).

use super::one_call::{OneAtATime, OneCall};
use super::{EngineSetupError, IoDesc, SlotArena};
use dioscope_sys::io::{pread, preadv2, pwrite, pwritev2, RwfFlags};
use dioscope_sys::vio::{seek_read, seek_write, Pos, SlotVec};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// The whole `EngineDef` of a blocking engine with no options and no set-up
/// of its own (psync, pvsync): its names, help line and system call pair.
macro_rules! plain_blocking_engine {
    ($names:expr, $help:expr, $call:expr) => {
        pub struct Def;

        impl $crate::engines::EngineDef for Def {
            type Params = ();
            const NAMES: &'static [&'static str] = $names;
            const HELP: &'static str = $help;
            const CAPS: $crate::engines::Caps = $crate::engines::Caps {
                sync: true,
                traced: $call.traced(),
                ..$crate::engines::Caps::BASE
            };
            fn with<W: $crate::engines::WithEngine>(
                arena: $crate::engines::SlotArena,
                fds: &[std::os::fd::RawFd],
                _: &$crate::engines::EngineOpts,
                f: W,
            ) -> Result<(W::Out, Option<String>), $crate::engines::EngineSetupError> {
                let mut e = $crate::engines::blocking::Blocking::new(arena, fds, $call);
                Ok((f.run(&mut e), None))
            }
        }
    };
}
pub(crate) use plain_blocking_engine;

/// The system call pair an engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// pread/pwrite.
    Pread,
    /// lseek, then read/write: needs descriptors of its own ([`private_fds`]).
    Seek,
    /// preadv/pwritev with one iovec.
    Preadv,
    /// preadv2/pwritev2 with these RWF flags (reads', writes').
    Preadv2(RwfFlags, RwfFlags),
}

impl Call {
    /// The calls `--stages` traces: the positional ones, which no other
    /// thread of dioscope makes (`Seek`'s read/write are also how dioscope
    /// reads /proc and its inputs, so they are not traced).
    pub const fn traced(self) -> super::Traced {
        use super::Traced::{No, Syscall};
        match self {
            Call::Pread => Syscall {
                read: "pread64",
                write: "pwrite64",
            },
            Call::Preadv => Syscall {
                read: "preadv",
                write: "pwritev",
            },
            Call::Preadv2(..) => Syscall {
                read: "preadv2",
                write: "pwritev2",
            },
            Call::Seek => No,
        }
    }
}

/// The system call pair of a blocking engine, one call per I/O (under
/// [`OneAtATime`], the shell of every synchronous engine).
pub struct Blocking {
    fds: Vec<RawFd>,
    call: Call,
    vec: SlotVec,
    /// Descriptors opened for this engine alone (kept open while it runs).
    _own: Vec<File>,
}

impl Blocking {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(arena: SlotArena, fds: &[RawFd], call: Call) -> OneAtATime<Blocking> {
        Self::owning_fds(arena, fds, Vec::new(), call)
    }

    /// An engine over descriptors it owns (see [`private_fds`]).
    pub fn owning(arena: SlotArena, own: Vec<File>, call: Call) -> OneAtATime<Blocking> {
        let fds: Vec<RawFd> = own.iter().map(|f| f.as_raw_fd()).collect();
        Self::owning_fds(arena, &fds, own, call)
    }

    fn owning_fds(
        arena: SlotArena,
        fds: &[RawFd],
        own: Vec<File>,
        call: Call,
    ) -> OneAtATime<Blocking> {
        let b = Blocking {
            fds: fds.to_vec(),
            call,
            vec: SlotVec::new(1),
            _own: own,
        };
        OneAtATime::new(arena, b)
    }
}

/// A new open file for each descriptor: same object, same access mode,
/// O_DIRECT and O_NOATIME, but a file position of its own. Engines that `lseek` need it:
/// the runner opens each target once and the clones of a job share it, so
/// with shared positions one worker's seek would move another's read.
pub fn private_fds(fds: &[RawFd]) -> Result<Vec<File>, EngineSetupError> {
    use std::os::unix::fs::OpenOptionsExt;
    fds.iter()
        .map(|&fd| {
            let reopen = || -> io::Result<File> {
                let fl = dioscope_sys::vio::status_flags(fd)?;
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(fl & libc::O_ACCMODE == libc::O_RDWR)
                    .custom_flags(fl & (libc::O_DIRECT | libc::O_NOATIME))
                    .open(format!("/proc/self/fd/{fd}"))
            };
            reopen().map_err(|e| {
                EngineSetupError::new(
                    "reopening the target for a file position of this worker's own",
                    &e,
                    "raise `ulimit -n`, or use ioengine=psync (positional I/O needs no reopen)",
                )
            })
        })
        .collect()
}

impl OneCall for Blocking {
    #[inline]
    fn call(&mut self, arena: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        let fd = self.fds[d.file as usize];
        match self.call {
            Call::Preadv => self.vec.rw(
                fd,
                arena,
                std::iter::once((d.slot, d.len)),
                d.write,
                Pos::At(d.offset),
            ),
            call => {
                let buf = &mut arena.slot_mut(d.slot)[..d.len as usize];
                match (call, d.write) {
                    (Call::Seek, false) => seek_read(fd, buf, d.offset),
                    (Call::Seek, true) => seek_write(fd, buf, d.offset),
                    (Call::Preadv2(f, _), false) => preadv2(fd, buf, d.offset, f),
                    (Call::Preadv2(_, f), true) => pwritev2(fd, buf, d.offset, f),
                    (_, false) => pread(fd, buf, d.offset),
                    (_, true) => pwrite(fd, buf, d.offset),
                }
            }
        }
    }
}
