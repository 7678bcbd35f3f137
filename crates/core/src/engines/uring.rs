//! io_uring: see `dioscope_sys::uring` for the ring set-up and its fallbacks.

use super::{Completion, Engine, IoDesc, SlotArena};
use dioscope_sys::uring::UringQueue;
use std::io;

impl Engine for UringQueue<'_> {
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        UringQueue::stage(self, d)
    }
    #[inline]
    fn commit(&mut self, min: u32) -> io::Result<u32> {
        UringQueue::commit(self, min)
    }
    #[inline]
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        UringQueue::reap(self, out)
    }
    fn arena(&mut self) -> &mut SlotArena {
        UringQueue::arena(self)
    }
}
