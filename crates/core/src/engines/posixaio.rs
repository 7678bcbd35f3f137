//! posixaio: POSIX aio (`aio_read`/`aio_write`, `aio_suspend` to wait) —
//! see `dioscope_sys::posixaio` for how glibc runs it and why each slot has
//! a descriptor of its own.

use super::{Caps, Completion, Engine, EngineDef, EngineOpts, EngineSetupError, IoDesc, SlotArena, WithEngine};
use dioscope_sys::posixaio::{PosixAioQueue, POOL_THREADS};
use std::io;
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["posixaio"];
    const HELP: &'static str = "POSIX aio: aio_read(3)/aio_write(3), waits in aio_suspend(3); glibc \
         implements it with a pool of user threads doing pread/pwrite (up to 256 per process \
         here), so iodepth > 1 is real concurrency, but the kernel sees blocking calls from \
         threads, not a queue; each slot uses its own dup(2) of the descriptor because glibc \
         serialises requests on one descriptor";
    const CAPS: Caps = Caps::BASE;
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), EngineSetupError> {
        let mut q = PosixAioQueue::new(arena, fds).map_err(|e| {
            let what = format!(
                "duplicating the target descriptors for {} aio slots",
                opts.depth.max(1)
            );
            EngineSetupError::new(
                &what,
                &e,
                "each slot needs a descriptor per file: raise `ulimit -n`, or lower iodepth or numjobs",
            )
        })?;
        let note = (opts.depth as i32 > POOL_THREADS).then(|| {
            format!(
                "posixaio: iodepth={} is more than glibc's aio thread pool ({POOL_THREADS}): at most {POOL_THREADS} requests run at once",
                opts.depth
            )
        });
        Ok((f.run(&mut q), note))
    }
}

impl Engine for PosixAioQueue {
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        PosixAioQueue::stage(self, d)
    }
    #[inline]
    fn commit(&mut self, min: u32) -> io::Result<u32> {
        PosixAioQueue::commit(self, min)
    }
    #[inline]
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        PosixAioQueue::reap(self, out)
    }
    fn arena(&mut self) -> &mut SlotArena {
        PosixAioQueue::arena(self)
    }
}
