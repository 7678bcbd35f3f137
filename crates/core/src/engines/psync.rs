//! psync: pread/pwrite, one I/O at a time.

use super::blocking::{Blocking, Call};
use super::{Caps, EngineDef, EngineOpts, SlotArena, WithEngine};
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["psync"];
    const HELP: &'static str = "pread(2)/pwrite(2), one I/O at a time (iodepth is 1)";
    const CAPS: Caps = Caps {
        sync: true,
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        _: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        Ok((f.run(&mut Blocking::new(arena, fds, Call::Pread)), None))
    }
}
