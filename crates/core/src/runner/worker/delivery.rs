//! `--stages`' completion delivery, per I/O (io_uring): how long each
//! completion waited between the kernel posting its CQE and this worker
//! reaping it.
//!
//! The tracer's BPF program (stages/bpf/stages.bpf.c, `post`) stores, at
//! `io_uring_complete`, the CQE's user_data and the time (CLOCK_MONOTONIC)
//! in an array mapped into this process (`dioscope_sys::bpf::Posts`).
//! Each worker owns one part of it (its tag, in the upper half of every
//! user_data it issues, says which) and, once per reap, reads
//! CLOCK_MONOTONIC through the vDSO and takes each reaped slot's entry:
//! `reaped − posted` goes into the worker's own pair of histograms (read,
//! write), added to the board's under its lock once, when the worker ends.
//! No system call, lock or allocation per I/O, and no line another worker
//! writes.

use crate::stats::Histogram;
use dioscope_sys::bpf::{PostPart, Posts};
use std::sync::{Arc, Mutex};

/// Workers with a part of their own (the program's `NPART`).
pub const PARTS: u32 = 64;
/// Slots per part (`NSLOT`): a slot at or past it is not followed.
pub const SLOTS: u32 = 4096;

/// The tracer's side: the mapped array and the run's histograms.
#[derive(Clone)]
pub struct DeliveryBoard {
    posts: Posts,
    sink: Arc<Mutex<[Histogram; 2]>>,
}

impl DeliveryBoard {
    pub fn new(posts: Posts) -> DeliveryBoard {
        DeliveryBoard {
            posts,
            sink: Arc::new(Mutex::new([Histogram::new(), Histogram::new()])),
        }
    }

    /// The tap of part `part` (the `part`-th worker of a trial), if the
    /// program has one for it.
    pub fn tap(&self, part: u32) -> Option<DeliveryTap> {
        Some(DeliveryTap {
            part: self.posts.part(part)?,
            sink: self.sink.clone(),
            mine: Box::new([Histogram::new(), Histogram::new()]),
        })
    }

    /// The deliveries (read, write) of every worker that has ended.
    pub fn histograms(&self) -> [Histogram; 2] {
        self.sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// One worker's part of the board and its own histograms. Copied with
/// its plan only where one thread runs the plan (the runner gives no tap
/// to an offloaded job).
#[derive(Debug, Clone)]
pub struct DeliveryTap {
    part: PostPart,
    sink: Arc<Mutex<[Histogram; 2]>>,
    mine: Box<[Histogram; 2]>,
}

impl DeliveryTap {
    /// The tag the worker's SQEs carry in their user_data's upper half.
    pub fn tag(&self) -> u32 {
        self.part.tag()
    }

    /// When slot `slot`'s I/O, just reaped, had its CQE posted, if the
    /// program saw it (`PostPart::take`: taken once).
    #[inline(always)]
    pub fn take(&mut self, slot: u32) -> Option<u64> {
        self.part.take(slot)
    }

    /// Record one delivery of direction `write`.
    #[inline(always)]
    pub fn record(&mut self, write: bool, ns: u64) {
        self.mine[write as usize].record(ns);
    }

    /// The worker ended: add its deliveries to the board's.
    pub fn finish(self) {
        let mut s = self
            .sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        s[0].merge(&self.mine[0]);
        s[1].merge(&self.mine[1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dioscope_sys::mmap::FileMap;

    fn board() -> DeliveryBoard {
        let map = FileMap::anonymous(u64::from(PARTS * SLOTS) * 16).unwrap();
        DeliveryBoard::new(Posts::new(map, PARTS, SLOTS).unwrap())
    }

    #[test]
    fn a_tap_takes_its_own_entries_once() {
        let b = board();
        let mut t = b.tap(3).unwrap();
        let other = b.tap(4).unwrap();
        assert_eq!((t.tag(), other.tag()), (4, 5));
        assert!(b.tap(PARTS).is_none());
        // The program posted slot 7 for tag 4 and slot 7 for tag 5.
        t.part.post(7, 4 << 32 | 7, 1000);
        other.part.post(7, 5 << 32 | 7, 2000);
        assert_eq!(t.take(7), Some(1000));
        // Taken once: a later completion of the slot the program did not
        // post is not given the old time.
        assert_eq!(t.take(7), None);
        // A slot never posted; one past the part.
        assert_eq!(t.take(8), None);
        assert_eq!(t.take(SLOTS), None);
        // An entry of the slot left with another user_data.
        t.part.post(9, 5 << 32 | 9, 10);
        assert_eq!(t.take(9), None);
        let mut other = other;
        assert_eq!(other.take(7), Some(2000));
    }

    #[test]
    fn the_board_holds_what_ended_workers_recorded() {
        let b = board();
        let mut t = b.tap(0).unwrap();
        let mut u = b.tap(1).unwrap();
        t.record(true, 500);
        u.record(false, 700);
        u.record(true, 900);
        t.finish();
        // u runs on: its deliveries are not the board's yet.
        let h = b.histograms();
        assert_eq!((h[0].count(), h[1].count()), (0, 1));
        u.finish();
        let h = b.histograms();
        assert_eq!((h[0].count(), h[1].count()), (1, 2));
        assert_eq!(h[1].sum_ns(), 1400);
    }
}
