//! The blocking engine under psync (pread/pwrite) and pvsync2
//! (preadv2/pwritev2 with RWF flags).
//!
//! A synchronous engine does its I/O inside `commit`; the runner keeps at most
//! one I/O in flight for it (`Caps::sync`).

use super::{Completion, Engine, IoDesc, SlotArena};
use dioscope_sys::io::{pread, preadv2, pwrite, pwritev2, RwfFlags};
use std::io;
use std::os::fd::RawFd;

pub struct Blocking {
    arena: SlotArena,
    fds: Vec<RawFd>,
    /// `Some(flags)` for pvsync2.
    v2: Option<RwfFlags>,
    staged: Option<IoDesc>,
    done: Option<Completion>,
}

impl Blocking {
    pub fn new(arena: SlotArena, fds: &[RawFd], v2: Option<RwfFlags>) -> Blocking {
        Blocking {
            arena,
            fds: fds.to_vec(),
            v2,
            staged: None,
            done: None,
        }
    }
}

impl Engine for Blocking {
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        debug_assert!(
            self.staged.is_none(),
            "a sync engine runs one I/O at a time"
        );
        self.staged = Some(d);
    }

    #[inline]
    fn commit(&mut self, _min: u32) -> io::Result<u32> {
        let Some(d) = self.staged.take() else {
            return Ok(0);
        };
        let fd = self.fds[d.file as usize];
        let buf = &mut self.arena.slot_mut(d.slot)[..d.len as usize];
        let r = match (self.v2, d.write) {
            (None, false) => pread(fd, buf, d.offset),
            (None, true) => pwrite(fd, buf, d.offset),
            (Some(f), false) => preadv2(fd, buf, d.offset, f),
            (Some(f), true) => pwritev2(fd, buf, d.offset, f),
        };
        let res = match r {
            Ok(n) => n as i32,
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
