//! A hand-off cell: one thread owns a value it fills on request, another
//! reads it, with atomics only — no lock, no allocation after creation.
//!
//! The runner's workers keep their statistics to themselves while they run;
//! `--status-interval` asks each for a copy (dioscope_core's
//! `runner::worker`). The asker raises a request ([`Handoff::ask`]); the
//! owner, at a point of its own choosing, copies into the cell's
//! preallocated value ([`Handoff::serve`]) and marks it ready; the asker
//! reads it ([`Handoff::read`]), which hands the value back. When the owner
//! ends it leaves its last value in a second slot ([`Handoff::close`]),
//! readable from then on, so that an asker never waits on a thread that is
//! gone.
//!
//! Who may touch the live value is decided by one state, changed only by
//! compare-and-swap: `IDLE` and `READING` belong to the askers (`READING`
//! to the one that won the swap), `ASKED` waits for the owner, `FILLING`
//! is the owner's, `READY` waits for an asker. The last value is written
//! once (`OPEN` → `WRITING` → `CLOSED`) and only read after.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, Ordering};

const IDLE: u8 = 0;
const ASKED: u8 = 1;
const FILLING: u8 = 2;
const READY: u8 = 3;
const READING: u8 = 4;

const OPEN: u8 = 0;
const WRITING: u8 = 1;
const CLOSED: u8 = 2;

/// A value one thread fills on another's request (see the module).
pub struct Handoff<T> {
    state: AtomicU8,
    live: UnsafeCell<T>,
    last_state: AtomicU8,
    last: UnsafeCell<T>,
}

// SAFETY: every access to `live` and `last` is guarded by a state that
// exactly one thread can have moved it into by compare-and-swap (see the
// module), with Release on leaving and Acquire on entering, so no two
// threads touch a value at once and each sees the other's writes. `T` is
// sent between threads (filled by one, read by another), hence `T: Send`;
// readers only get `&T` while they hold `READING`, hence no `Sync` bound.
unsafe impl<T: Send> Sync for Handoff<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for Handoff<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("state", &self.state.load(Ordering::Relaxed))
            .field("last_state", &self.last_state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Handoff<T> {
    /// A cell with its two values allocated up front (`live` is filled by
    /// [`serve`](Self::serve), `last` by [`close`](Self::close)).
    pub fn new(live: T, last: T) -> Handoff<T> {
        Handoff {
            state: AtomicU8::new(IDLE),
            live: UnsafeCell::new(live),
            last_state: AtomicU8::new(OPEN),
            last: UnsafeCell::new(last),
        }
    }

    /// Asker: request a fresh value. False when one is already asked for
    /// or being read (then nothing changes).
    pub fn ask(&self) -> bool {
        self.state
            .compare_exchange(IDLE, ASKED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Whether a request waits for the owner: one relaxed load, for the
    /// owner's periodic check.
    #[inline(always)]
    pub fn asked(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ASKED
    }

    /// Owner: when asked, fill the live value with `fill` and mark it
    /// ready. True when it did.
    pub fn serve(&self, fill: impl FnOnce(&mut T)) -> bool {
        if self
            .state
            .compare_exchange(ASKED, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // SAFETY: the swap to FILLING succeeded here, and only the thread
        // holding FILLING touches `live` until it stores READY below.
        fill(unsafe { &mut *self.live.get() });
        self.state.store(READY, Ordering::Release);
        true
    }

    /// Owner, once at its end: leave its last value (written by `fill`),
    /// readable from then on. A second call does nothing.
    pub fn close(&self, fill: impl FnOnce(&mut T)) {
        if self
            .last_state
            .compare_exchange(OPEN, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        // SAFETY: only the thread that moved OPEN to WRITING writes `last`,
        // and nobody reads it before CLOSED is stored below.
        fill(unsafe { &mut *self.last.get() });
        self.last_state.store(CLOSED, Ordering::Release);
    }

    /// Whether the owner has closed the cell.
    pub fn closed(&self) -> bool {
        self.last_state.load(Ordering::Acquire) == CLOSED
    }

    /// Asker: read the freshest value there is — the last one when the
    /// owner has closed the cell, else the live one when it is ready (the
    /// cell is then free for the next request). None when neither is.
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        if self.closed() {
            // SAFETY: CLOSED (seen with Acquire) is final: `last` is never
            // written again, and its writes happen-before this read.
            return Some(f(unsafe { &*self.last.get() }));
        }
        if self
            .state
            .compare_exchange(READY, READING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // SAFETY: this thread holds READING: the owner writes `live` only
        // in FILLING, which it can enter only from ASKED, which an asker
        // can set only from IDLE, stored below after the read.
        let r = f(unsafe { &*self.live.get() });
        self.state.store(IDLE, Ordering::Release);
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use std::sync::Arc;

    #[test]
    fn a_value_is_handed_over_only_when_asked_and_filled() {
        let h = Handoff::new(0u64, 0u64);
        assert!(!h.serve(|v| *v = 1), "not asked: nothing filled");
        assert_eq!(h.read(|v| *v), None, "nothing ready");
        assert!(h.ask());
        assert!(!h.ask(), "one request at a time");
        assert!(h.asked());
        assert_eq!(h.read(|v| *v), None, "asked, not yet filled");
        assert!(h.serve(|v| *v = 7));
        assert!(!h.serve(|v| *v = 8), "served once per request");
        assert_eq!(h.read(|v| *v), Some(7));
        assert_eq!(h.read(|v| *v), None, "read once per request");
        h.close(|v| *v = 9);
        h.close(|v| *v = 10);
        assert_eq!(h.read(|v| *v), Some(9), "the last value, from then on");
        assert_eq!(h.read(|v| *v), Some(9));
    }

    /// An owner counting up and serving copies of a two-word value whose
    /// words must always agree: a torn read would show them apart.
    #[test]
    fn copies_are_never_torn_and_never_go_back() {
        let h = Arc::new(Handoff::new([0u64; 2], [0u64; 2]));
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let owner = {
            let (h, stop, served) = (h.clone(), stop.clone(), served.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    if h.serve(|v| *v = [n, n]) {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                }
                h.close(|v| *v = [n + 1, n + 1]);
            })
        };
        let mut prev = 0;
        let mut got = 0;
        while got < 1000 {
            h.ask();
            if let Some([a, b]) = h.read(|v| *v) {
                assert_eq!(a, b, "torn copy");
                assert!(a > prev, "went back: {a} after {prev}");
                prev = a;
                got += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        owner.join().unwrap();
        assert!(served.load(Ordering::Relaxed) >= 1000);
        let last = h.read(|v| *v).unwrap();
        assert_eq!(last[0], last[1]);
        assert!(last[0] > prev);
    }
}
