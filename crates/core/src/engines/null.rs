//! null: every I/O completes at once without touching a device. What is left
//! is the tool's own cost per I/O: offsets, slots, clocks and statistics.

use super::{Caps, Completion, Engine, EngineDef, EngineOpts, IoDesc, SlotArena, WithEngine};
use std::io;
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["null"];
    const HELP: &'static str = "no I/O: every I/O completes at once and no target is opened; what is left is the tool's own cost per I/O";
    const CAPS: Caps = Caps {
        real_io: false,
        moves_data: false,
        fakes_verify: true,
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        _: &[RawFd],
        _: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        Ok((f.run(&mut NullEngine::new(arena)), None))
    }
}

pub struct NullEngine {
    arena: SlotArena,
    /// Staged and completed I/Os in one queue: [head, committed) are
    /// complete and not yet reaped, [committed, tail) staged.
    queue: Box<[Completion]>,
    head: usize,
    committed: usize,
    tail: usize,
}

impl NullEngine {
    pub fn new(arena: SlotArena) -> NullEngine {
        let n = arena.nslots() as usize;
        NullEngine {
            arena,
            queue: vec![Completion::default(); n].into_boxed_slice(),
            head: 0,
            committed: 0,
            tail: 0,
        }
    }
}

impl Engine for NullEngine {
    const TIMES_NO_OP_SYNC: bool = true;
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        if self.tail == self.queue.len() {
            // Everything before head has been reaped: slide the live part down.
            self.queue.copy_within(self.head..self.tail, 0);
            self.committed -= self.head;
            self.tail -= self.head;
            self.head = 0;
        }
        self.queue[self.tail] = Completion {
            slot: d.slot,
            res: d.len as i32,
        };
        self.tail += 1;
    }

    #[inline]
    fn commit(&mut self, _min: u32) -> io::Result<u32> {
        let n = self.tail - self.committed;
        self.committed = self.tail;
        Ok(n as u32)
    }

    #[inline]
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        let n = (self.committed - self.head).min(out.len());
        for (o, c) in out.iter_mut().zip(&self.queue[self.head..self.head + n]) {
            *o = *c;
        }
        self.head += n;
        if self.head == self.tail {
            self.head = 0;
            self.committed = 0;
            self.tail = 0;
        }
        n
    }

    fn arena(&mut self) -> &mut SlotArena {
        &mut self.arena
    }
}
