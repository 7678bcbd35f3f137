//! ftruncate: fio's engine where each write sets the file's size to the
//! write's offset with `ftruncate(2)` (the block size only picks offsets);
//! reads fail with EINVAL, as in fio. Times size changes, moves no data.

use super::falloc::{Op, SpaceOps};
use super::{Caps, EngineDef, EngineOpts, SlotArena, WithEngine};
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["ftruncate"];
    const HELP: &'static str = "no data moves: each write is ftruncate(2) of the file to the write's \
         offset (bs only spaces the offsets); reads fail with EINVAL; one call at a time";
    const CAPS: Caps = Caps {
        sync: true,
        moves_data: false,
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        _: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        Ok((f.run(&mut SpaceOps::new(arena, fds, Op::Truncate)), None))
    }
}
