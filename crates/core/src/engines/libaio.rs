//! libaio through raw `io_submit`/`io_getevents` (see `dioscope_sys::aio`).

use super::{Completion, Engine, IoDesc, SlotArena};
use dioscope_sys::aio::AioQueue;
use std::io;

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
