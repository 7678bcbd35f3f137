//! The shell of every synchronous engine, which makes one call per I/O
//! inside `commit` (`Caps::sync`: the runner keeps one I/O in flight):
//! staging, the one completion and the slot buffers, written once. The call
//! is the engine's ([`OneCall`]): a system call pair (blocking.rs: psync,
//! sync, pvsync, pvsync2), a copy through a mapping (mmap), an extent move
//! (e4defrag), a space operation (falloc, ftruncate), a metadata operation
//! (meta.rs), a busy cycle (cpuio), a check on a program (exec), a copy
//! through anonymous memory (page_fault).

use super::{Completion, Engine, IoDesc, SlotArena};
use std::io;

/// What one I/O does.
pub trait OneCall {
    /// As [`Engine::MOVES_BYTES`].
    const MOVES_BYTES: bool = true;
    /// As [`Engine::CAN_END`].
    const CAN_END: bool = false;
    /// As [`Engine::FAKES_SOME`].
    const FAKES_SOME: bool = false;

    /// Do `d` (its slot's buffer is in `arena`): the bytes it accounts.
    fn call(&mut self, arena: &mut SlotArena, d: &IoDesc) -> io::Result<usize>;

    /// As [`Engine::ended`].
    fn ended(&self) -> bool {
        false
    }

    /// As [`Engine::last_timed`].
    fn last_timed(&self) -> bool {
        true
    }
}

/// A synchronous engine over `C`.
pub struct OneAtATime<C> {
    arena: SlotArena,
    call: C,
    staged: Option<IoDesc>,
    done: Option<Completion>,
}

impl<C: OneCall> OneAtATime<C> {
    pub fn new(arena: SlotArena, call: C) -> OneAtATime<C> {
        OneAtATime {
            arena,
            call,
            staged: None,
            done: None,
        }
    }

    /// The call's own state (exec reports how its program ended).
    pub fn inner_mut(&mut self) -> &mut C {
        &mut self.call
    }
}

impl<C: OneCall> Engine for OneAtATime<C> {
    const MOVES_BYTES: bool = C::MOVES_BYTES;
    const CAN_END: bool = C::CAN_END;
    const FAKES_SOME: bool = C::FAKES_SOME;

    fn ended(&self) -> bool {
        self.call.ended()
    }

    fn last_timed(&self) -> bool {
        self.call.last_timed()
    }

    #[inline]
    fn stage(&mut self, d: IoDesc) {
        debug_assert!(self.staged.is_none(), "one operation at a time");
        self.staged = Some(d);
    }

    #[inline]
    fn commit(&mut self, _min: u32) -> io::Result<u32> {
        let Some(d) = self.staged.take() else {
            return Ok(0);
        };
        let res = match self.call.call(&mut self.arena, &d) {
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
