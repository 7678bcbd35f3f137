//! libaio through raw `io_submit`/`io_getevents` (see `dioscope_sys::aio`).

use super::{Caps, EngineSetupError, EngineDef, EngineOpts, SlotArena, WithEngine};
use dioscope_sys::aio::AioQueue;
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["libaio"];
    const HELP: &'static str = "Linux native aio: io_submit(2)/io_getevents(2) on a ring of iodepth; queues for real only with direct=1 (buffered aio completes inside io_submit)";
    const OPTIONS: &'static [&'static str] = &["nowait"];
    const CAPS: Caps = Caps {
        nowait: true,
        per_io_prio: true,
        aio_events: true,
        traced: super::Traced::Aio,
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), EngineSetupError> {
        let mut q = AioQueue::new(arena, fds, opts.rw_flags_base()).map_err(|e| {
            let fix = match e.raw_os_error() {
                Some(libc::EAGAIN) => {
                    "the system's libaio events are used up: raise fs.aio-max-nr \
                     (/proc/sys/fs/aio-max-nr), or lower iodepth or numjobs"
                }
                Some(libc::ENOSYS) => "this kernel has no libaio: use ioengine=io_uring or psync",
                _ => "lower iodepth or numjobs, or use ioengine=io_uring",
            };
            let what = format!("io_setup with {} events", opts.depth.max(1));
            EngineSetupError::new(&what, &e, fix)
        })?;
        Ok((f.run(&mut q), None))
    }
}

super::queue_engine!(AioQueue);
