//! posixaio: POSIX aio (`aio_read`/`aio_write`, `aio_suspend` to wait) —
//! see `dioscope_sys::posixaio` for how glibc runs it: one thread per
//! descriptor with requests, so the number of descriptors (dups) a file
//! gets is how many of its requests run at once.
//!
//! With `direct=1` each request blocks on the device, where concurrency is
//! what iodepth asks for: one descriptor per slot. Through the page cache a
//! request is mostly a copy, CPU work: threads beyond the CPUs the process
//! may use only take turns, and every request handed to a thread that went
//! to sleep costs a wake-up. There a file gets one descriptor per CPU (at
//! most one per slot). Measured on 2 CPUs, page-cached randread 4k qd8:
//! 8 descriptors ~80k IOPS at ~10 µs CPU per I/O, 2 descriptors ~150k IOPS
//! at ~5.5 µs, 1 (fio's way: one descriptor) ~65k at ~6.5 µs.

use super::{Caps, EngineDef, EngineOpts, EngineSetupError, SlotArena, WithEngine};
use dioscope_sys::posixaio::{PosixAioQueue, POOL_THREADS};
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["posixaio"];
    const HELP: &'static str = "POSIX aio: aio_read(3)/aio_write(3), waits in aio_suspend(3); glibc \
         implements it with a pool of user threads doing pread/pwrite (up to 256 per process \
         here), one per descriptor, so the kernel sees blocking calls from threads, not a \
         queue; with direct=1 each slot gets its own dup(2) of the descriptor (iodepth \
         requests at once), through the page cache one dup per CPU (more threads than CPUs \
         only add wake-ups)";
    const CAPS: Caps = Caps::BASE;
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), EngineSetupError> {
        let depth = opts.depth.max(1) as usize;
        let per_file = if opts.direct {
            depth
        } else {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            depth.min(cpus)
        };
        let mut q = PosixAioQueue::new(arena, fds, per_file).map_err(|e| {
            let what = format!("duplicating the target descriptors {per_file} times for aio");
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

super::queue_engine!(PosixAioQueue);
