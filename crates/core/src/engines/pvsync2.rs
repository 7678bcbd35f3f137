//! pvsync2: preadv2/pwritev2 with RWF flags (hipri, nowait, uncached,
//! atomic), one I/O at a time.

use super::blocking::{Blocking, Call};
use super::{Caps, EngineDef, EngineOpts, SlotArena, WithEngine};
use std::os::fd::RawFd;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["pvsync2"];
    const HELP: &'static str =
        "preadv2(2)/pwritev2(2) with RWF_HIPRI (hipri), RWF_NOWAIT (nowait), RWF_DONTCACHE (uncached) and RWF_ATOMIC (atomic), one I/O at a time";
    const OPTIONS: &'static [&'static str] = &["hipri", "nowait", "uncached", "atomic"];
    const CAPS: Caps = Caps {
        sync: true,
        hipri: true,
        nowait: true,
        rwf_flags: true,
        traced: super::blocking::Call::Preadv2(0, 0).traced(),
        ..Caps::BASE
    };
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        let mut e = Blocking::new(arena, fds, Call::Preadv2(opts.read_rw_flags(), opts.write_rw_flags()));
        Ok((f.run(&mut e), None))
    }
}
