//! page_fault: fio's engine (3.42) that does its I/O in anonymous memory:
//! one private anonymous mapping of the job's `size` per worker, a write
//! copies the slot's buffer into it and a read copies out of it. No file is
//! opened; the cost measured is the memory system's, mostly the page
//! faults of each page's first touch (a read of a page never written faults
//! in the shared zero page, a write allocates one).

use super::one_call::{OneAtATime, OneCall};
use super::{Caps, EngineDef, EngineOpts, IoDesc, SlotArena, WithEngine};
use dioscope_sys::mmap::FileMap;
use std::io;
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["page_fault"];
    const HELP: &'static str = "no file: the I/Os copy into and out of a private anonymous \
         mapping of the job's size (default 1 GiB), so the first touch of each page is a page \
         fault; measures the memory system, one copy at a time";
    const CAPS: Caps = Caps {
        sync: true,
        real_io: false,
        moves_data: false,
        ..Caps::BASE
    };

    fn with<W: WithEngine>(
        arena: SlotArena,
        _: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        let map = FileMap::anonymous(opts.job.virtual_size).map_err(|e| {
            super::EngineSetupError::new(
                &format!("mapping {} bytes of anonymous memory", opts.job.virtual_size),
                &e,
                "lower size= (page_fault maps the job's size per worker)",
            )
        })?;
        let mut e = OneAtATime::new(arena, Faulting { map });
        Ok((f.run(&mut e), None))
    }
}

/// One worker's mapping.
struct Faulting {
    map: FileMap,
}

impl OneCall for Faulting {
    fn call(&mut self, arena: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        let buf = &mut arena.slot_mut(d.slot)[..d.len as usize];
        let r = if d.write {
            self.map.copy_in(d.offset, buf)
        } else {
            self.map.copy_out(d.offset, buf)
        };
        match r {
            Ok(()) => Ok(d.len as usize),
            // Past the mapping: fio's engine answers EINVAL.
            Err(_) => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{Completion, Engine};

    fn io(e: &mut OneAtATime<Faulting>, slot: u32, write: bool, offset: u64, len: u32) -> i32 {
        e.stage(IoDesc {
            slot,
            write,
            file: 0,
            offset,
            len,
            prio: 0,
        });
        assert_eq!(e.commit(1).unwrap(), 1);
        let mut out = [Completion::default(); 1];
        assert_eq!(e.reap(&mut out), 1);
        out[0].res
    }

    #[test]
    fn reads_return_what_was_written_and_zeros_elsewhere() {
        let map = FileMap::anonymous(1 << 20).unwrap();
        let mut e = OneAtATime::new(SlotArena::new(2, 8192).unwrap(), Faulting { map });
        e.arena().slot_mut(0).fill(0xa5);
        assert_eq!(io(&mut e, 0, true, 12288, 8192), 8192);
        assert_eq!(io(&mut e, 1, false, 12288, 8192), 8192);
        assert!(e.arena().slot_mut(1).iter().all(|&b| b == 0xa5));
        // A page never written reads as zeros (faulted in on first touch).
        assert_eq!(io(&mut e, 1, false, 65536, 4096), 4096);
        assert!(e.arena().slot_mut(1)[..4096].iter().all(|&b| b == 0));
        // Past the mapping: EINVAL, as fio's engine.
        assert_eq!(io(&mut e, 1, false, (1 << 20) - 4096, 8192), -libc::EINVAL);
    }
}
