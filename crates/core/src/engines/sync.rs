//! sync: lseek then read/write, one I/O at a time — fio's `sync` engine.

use super::blocking::{private_fds, Blocking, Call};
use super::{Caps, EngineDef, EngineOpts, SlotArena, WithEngine};
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["sync"];
    const HELP: &'static str = "lseek(2) then read(2)/write(2), one I/O at a time (iodepth is 1); \
         each worker reopens its targets for a file position of its own";
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
        let own = private_fds(fds)?;
        Ok((f.run(&mut Blocking::owning(arena, own, Call::Seek)), None))
    }
}
