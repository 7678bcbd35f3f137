//! posixaio: POSIX aio (`aio_read`/`aio_write`, `aio_suspend` to wait) —
//! see `dioscope_sys::posixaio` for how glibc runs it: one thread per
//! descriptor with requests, so the number of descriptors (dups) a file
//! gets is how many of its requests run at once.
//!
//! With `direct=1` each request blocks on the device, where concurrency is
//! what iodepth asks for: one descriptor per slot. Through the page cache a
//! request is mostly a copy, CPU work: threads beyond the CPUs the process
//! may use only take turns, and every request handed to a thread that went
//! to sleep costs a wake-up. The worker that submits and waits needs a CPU
//! too, so a file gets one descriptor per CPU *but one* (at least one, at
//! most one per slot). Measured on 2 CPUs, page-cached randread 4k qd8, on
//! two hosts: one with cheap wake-ups gave 8 descriptors ~80k IOPS, 2 ~150k,
//! 1 ~65k; one where a wake-up costs ~100 µs (glibc aio at qd1: ~5k IOPS,
//! both tools) gave 8 ~25–38k, 2 ~33–45k, 1 ~56–82k (fio, one descriptor,
//! 82–95k). Descriptors beyond the CPUs left over gain only where wake-ups
//! are cheap, and lose twice that where they are not.

use super::{Caps, EngineDef, EngineOpts, EngineSetupError, SlotArena, WithEngine};
use dioscope_sys::posixaio::{PosixAioQueue, POOL_THREADS};
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["posixaio"];
    const HELP: &'static str = "POSIX aio: aio_read(3)/aio_write(3), waits in aio_suspend(3); glibc \
         implements it with a pool of user threads doing pread/pwrite (up to 256 per process \
         here), one per descriptor, so the kernel sees blocking calls from threads, not a \
         queue; with direct=1 each slot gets its own dup(2) of the descriptor (iodepth \
         requests at once), through the page cache one dup per CPU but one (the submitting \
         worker needs a CPU; more threads only add wake-ups)";
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
            depth.min(cpus.saturating_sub(1).max(1))
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
