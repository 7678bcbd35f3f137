//! libaio through raw `io_submit`/`io_getevents` (see `dioscope_sys::aio`).

use super::{Caps, Completion, Engine, EngineDef, EngineOpts, IoDesc, SlotArena, WithEngine};
use dioscope_sys::aio::AioQueue;
use std::io;
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["libaio"];
    const CAPS: Caps = Caps {
        nowait: true,
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), String> {
        let mut q = AioQueue::new(arena, fds, opts.rw_flags()).map_err(|e| {
            format!("io_setup failed: {e}; raise /proc/sys/fs/aio-max-nr or lower iodepth")
        })?;
        Ok((f.run(&mut q), None))
    }
}

impl Engine for AioQueue {
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        AioQueue::stage(self, d)
    }
    #[inline]
    fn commit(&mut self, min: u32) -> io::Result<u32> {
        AioQueue::commit(self, min)
    }
    #[inline]
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        AioQueue::reap(self, out)
    }
    fn arena(&mut self) -> &mut SlotArena {
        AioQueue::arena(self)
    }
}
