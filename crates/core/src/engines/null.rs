//! null: every I/O completes at once without touching a device. What is left
//! is the tool's own cost per I/O: offsets, slots, clocks and statistics.

use super::{Completion, Engine, IoDesc, SlotArena};
use std::io;

pub struct NullEngine {
    arena: SlotArena,
    staged: Box<[Completion]>,
    nstaged: usize,
    ready: Box<[Completion]>,
    nready: usize,
}

impl NullEngine {
    pub fn new(arena: SlotArena) -> NullEngine {
        let n = arena.nslots() as usize;
        NullEngine {
            arena,
            staged: vec![Completion::default(); n].into_boxed_slice(),
            nstaged: 0,
            ready: vec![Completion::default(); n].into_boxed_slice(),
            nready: 0,
        }
    }
}

impl Engine for NullEngine {
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        self.staged[self.nstaged] = Completion {
            slot: d.slot,
            res: d.len as i32,
        };
        self.nstaged += 1;
    }

    #[inline]
    fn commit(&mut self, _min: u32) -> io::Result<u32> {
        let n = self.nstaged;
        self.ready[self.nready..self.nready + n].copy_from_slice(&self.staged[..n]);
        self.nready += n;
        self.nstaged = 0;
        Ok(n as u32)
    }

    #[inline]
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        let n = self.nready.min(out.len());
        out[..n].copy_from_slice(&self.ready[..n]);
        self.ready.copy_within(n..self.nready, 0);
        self.nready -= n;
        n
    }

    fn arena(&mut self) -> &mut SlotArena {
        &mut self.arena
    }
}
