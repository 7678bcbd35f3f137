//! psync: pread/pwrite, one I/O at a time.

use super::blocking::Blocking;
use super::{Caps, EngineDef, EngineOpts, SlotArena, WithEngine};
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    // fio's `sync` uses read/write after a seek; at one I/O in flight the
    // device sees the same requests.
    const NAMES: &'static [&'static str] = &["psync", "sync"];
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
        Ok((f.run(&mut Blocking::new(arena, fds, None)), None))
    }
}
