//! I/O engines: one file each, behind one [`Engine`] trait.
//!
//! The runner is generic over `Engine`, so each engine gets its own
//! monomorphised worker loop with no dynamic dispatch per I/O. The core never
//! branches on an engine's name: it asks for its [`Caps`].

pub mod libaio;
pub mod null;
pub mod sync;
pub mod uring;

use crate::job::EngineKind;
pub use dioscope_sys::queue::{Completion, IoDesc, SlotArena};
use std::io;

/// One engine instance belongs to one worker thread.
pub trait Engine {
    /// Queue one I/O for the next `commit` (the slot must be idle).
    fn stage(&mut self, d: IoDesc);
    /// Hand the staged I/Os to the kernel and wait until at least `min`
    /// completions are ready. Returns how many were submitted.
    fn commit(&mut self, min: u32) -> io::Result<u32>;
    /// Move ready completions into `out`; returns how many.
    fn reap(&mut self, out: &mut [Completion]) -> usize;
    /// The slot buffers.
    fn arena(&mut self) -> &mut SlotArena;
}

/// What an engine can do; the runner decides by these, never by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Each I/O completes inside its submission: at most one in flight.
    pub sync: bool,
    /// Does real I/O (false for null: no target is opened).
    pub real_io: bool,
}

pub fn caps(kind: EngineKind) -> Caps {
    match kind {
        EngineKind::Psync | EngineKind::Pvsync2 => Caps {
            sync: true,
            real_io: true,
        },
        EngineKind::Libaio | EngineKind::IoUring => Caps {
            sync: false,
            real_io: true,
        },
        EngineKind::Null => Caps {
            sync: false,
            real_io: false,
        },
    }
}
