//! What every asynchronous queue shares: the per-slot buffer arena and the
//! completion record handed back to the runner.

use crate::buf::AlignedBuf;
use std::io;

/// One finished I/O: the slot it used and the kernel's result (bytes, or -errno).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    pub res: i32,
}

/// A direction and place for one I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoDesc {
    pub slot: u32,
    pub write: bool,
    /// Index into the queue's file table.
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    /// The I/O's priority (`ioprio_value`; 0: the thread's), for engines
    /// that pass one per I/O (cmdprio_percentage).
    pub prio: u16,
}

/// The buffers of all slots of one worker, in one aligned mapping. A slot's
/// buffer may be handed to the kernel only through the queue that owns the
/// arena, which guarantees it outlives the I/O.
pub struct SlotArena {
    buf: AlignedBuf,
    slot_size: usize,
    nslots: u32,
}

impl SlotArena {
    pub fn new(nslots: u32, slot_size: usize) -> io::Result<SlotArena> {
        SlotArena::new_in(nslots, slot_size, &crate::buf::BufOptions::default())
    }

    /// [`SlotArena::new`] in memory of another kind (fio's `mem=`).
    pub fn new_in(
        nslots: u32,
        slot_size: usize,
        opts: &crate::buf::BufOptions,
    ) -> io::Result<SlotArena> {
        let page = crate::buf::page_size();
        let slot_size = slot_size.max(1).div_ceil(page) * page;
        let buf = AlignedBuf::with(slot_size * nslots as usize, opts)?;
        Ok(SlotArena {
            buf,
            slot_size,
            nslots,
        })
    }

    #[inline(always)]
    pub fn slot_ptr(&self, slot: u32) -> *mut u8 {
        debug_assert!(slot < self.nslots);
        // SAFETY: slot < nslots, so the offset stays inside the mapping.
        unsafe { self.buf.as_ptr().add(slot as usize * self.slot_size) }
    }

    /// The buffer of `slot` for an I/O of `len` bytes, to hand to the
    /// kernel. Checked in every build: a slot outside the arena or a length
    /// beyond the slot would let the kernel write past the buffer. Both
    /// checks are one compare each and never fail in a correct runner.
    #[inline(always)]
    pub fn io_ptr(&self, slot: u32, len: u32) -> *mut u8 {
        assert!(
            slot < self.nslots && len as usize <= self.slot_size,
            "I/O of {len} bytes into slot {slot} of {} slots of {} bytes",
            self.nslots,
            self.slot_size
        );
        self.slot_ptr(slot)
    }

    /// The whole buffer of one slot. The caller must not use a slot that is in
    /// flight; the queues only hand out slots that are idle.
    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        assert!(slot < self.nslots, "slot {slot} out of range");
        let s = self.slot_size;
        &mut self.buf.as_mut_slice()[slot as usize * s..(slot as usize + 1) * s]
    }

    pub fn slot_size(&self) -> usize {
        self.slot_size
    }
    pub fn nslots(&self) -> u32 {
        self.nslots
    }
    pub fn base(&self) -> *mut u8 {
        self.buf.as_ptr()
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Fill every slot with incompressible bytes (xorshift), so writes are not
    /// flattered by compressing or deduplicating devices.
    pub fn fill_random(&mut self, seed: u64) {
        let mut x = seed | 1;
        for chunk in self.buf.as_mut_slice().chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes());
        }
    }
}
