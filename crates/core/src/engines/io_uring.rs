//! io_uring: see `dioscope_sys::uring` for the ring set-up and its fallbacks.

use super::{Caps, EngineSetupError, EngineDef, EngineOpts, SlotArena, WithEngine};
use dioscope_sys::uring::{with_queue, UringOpts, UringQueue};
use std::io;
use std::os::fd::RawFd;

/// io_uring refuses rings larger than this (IORING_MAX_ENTRIES).
pub const IORING_MAX_ENTRIES: u64 = 32768;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["io_uring"];
    const HELP: &'static str = "io_uring: one ring per worker, submission and completion queues shared with the kernel; direct and buffered I/O both queue";
    const OPTIONS: &'static [&'static str] = &["hipri", "nowait", "uncached", "atomic", "sqthread_poll", "fixedbufs", "registerfiles"];
    const CAPS: Caps = Caps {
        hipri: true,
        nowait: true,
        rwf_flags: true,
        sqpoll: true,
        traced: super::Traced::Uring,
        fixed_bufs: true,
        registered_files: true,
        per_io_prio: true,
        max_depth: Some((IORING_MAX_ENTRIES, "the kernel's IORING_MAX_ENTRIES")),
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        mut arena: SlotArena,
        fds: &[RawFd],
        o: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), EngineSetupError> {
        let opts = UringOpts {
            entries: o.depth,
            // Linux 6.18 refuses RWF_ATOMIC on a registered buffer (EINVAL:
            // its pages make more than one segment): atomic writes use
            // plain ones.
            fixed_bufs: o.fixed_bufs && !o.atomic,
            register_files: o.registered_files,
            sqpoll: o.sqpoll,
            iopoll: o.hipri,
            nowait: o.nowait,
            read_flags: o.read_rw_flags() & !o.rw_flags_base(),
            write_flags: o.write_rw_flags() & !o.rw_flags_base(),
            poll_reaps: o.poll_reaps,
            ud_tag: o.ud_tag,
        };
        with_queue(&opts, fds, &mut arena, |q| {
            let feats = q.features();
            let out = f.run(q);
            let note = format!(
                "io_uring: single_issuer={} defer_taskrun={} coop_taskrun={} fixed_bufs={} registered_files={} registered_ring={} sqpoll={} iopoll={} poll_reaps={}",
                feats.single_issuer, feats.defer_taskrun, feats.coop_taskrun, feats.fixed_bufs, feats.registered_files, feats.registered_ring, feats.sqpoll, feats.iopoll, o.poll_reaps
            );
            (out, Some(note))
        })
        .map_err(|e| {
            let what = format!("io_uring_setup with {} entries", o.depth.max(1));
            EngineSetupError::new(&what, &e, uring_fix(&e))
        })
    }
}

/// The fix for an `io_uring_setup` errno.
fn uring_fix(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOMEM) => {
            "the ring's memory is charged to the locked-memory limit (`ulimit -l`) of a \
             process without CAP_IPC_LOCK, or memory is short: raise `ulimit -l`, lower \
             iodepth or numjobs, or use ioengine=libaio"
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            "no descriptor left for the ring: raise `ulimit -n` (or fs.file-max), or lower numjobs"
        }
        Some(libc::EPERM) => {
            "io_uring is not allowed here (kernel.io_uring_disabled, or a seccomp filter in \
             a container): use ioengine=libaio"
        }
        Some(libc::EINVAL) => {
            "the kernel refused this ring (size or flags: hipri, sqthread_poll): lower \
             iodepth, drop those options, or use ioengine=libaio"
        }
        Some(libc::ENOSYS) => "this kernel has no io_uring: use ioengine=libaio",
        _ => "lower iodepth or numjobs, or use ioengine=libaio",
    }
}

super::queue_engine!(UringQueue<'_>);
