//! Linux native AIO through the raw system calls (`io_setup`, `io_submit`,
//! `io_getevents`, `io_destroy`), without libaio's C library.
//!
//! The structures mirror `<linux/aio_abi.h>` for little-endian 64-bit targets.

use crate::{cvt_long, io::RwfFlags};
use std::io;

pub const IOCB_CMD_PREAD: u16 = 0;
pub const IOCB_CMD_PWRITE: u16 = 1;
pub const IOCB_CMD_FSYNC: u16 = 2;
pub const IOCB_CMD_FDSYNC: u16 = 3;
/// `aio_reqprio` holds an ioprio value for this I/O.
pub const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

/// `struct iocb` from `<linux/aio_abi.h>` (little-endian field order).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Iocb {
    pub aio_data: u64,
    pub aio_key: u32,
    pub aio_rw_flags: RwfFlags,
    pub aio_lio_opcode: u16,
    pub aio_reqprio: i16,
    pub aio_fildes: u32,
    pub aio_buf: u64,
    pub aio_nbytes: u64,
    pub aio_offset: i64,
    pub aio_reserved2: u64,
    pub aio_flags: u32,
    pub aio_resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct IoEvent {
    pub data: u64,
    pub obj: u64,
    pub res: i64,
    pub res2: i64,
}

/// An AIO context; destroyed on drop (which waits for in-flight I/O).
pub struct AioContext {
    ctx: libc::c_ulong,
}

impl AioContext {
    /// `io_setup(nr_events)`. EAGAIN means /proc/sys/fs/aio-max-nr is exhausted.
    pub fn new(nr_events: u32) -> io::Result<AioContext> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: ctx is a valid out pointer, initialised to 0 as the ABI requires.
        cvt_long(unsafe {
            libc::syscall(libc::SYS_io_setup, nr_events as libc::c_long, &mut ctx)
        })?;
        Ok(AioContext { ctx })
    }

    /// Submit a batch; returns how many the kernel accepted.
    ///
    /// # Safety
    /// Every pointer in `iocbs` must point to a live `Iocb` whose buffer stays
    /// valid (and is not otherwise accessed) until its completion is reaped.
    pub unsafe fn submit(&self, iocbs: &mut [*mut Iocb]) -> io::Result<usize> {
        let a = [
            ctx_arg(self.ctx),
            iocbs.len() as u64,
            iocbs.as_mut_ptr() as u64,
            0,
            0,
            0,
        ];
        // One inlined system call (crate::syscall6), no variadic syscall().
        // SAFETY: the caller's contract on `iocbs`.
        let r = unsafe { crate::syscall6(libc::SYS_io_submit, a) };
        if r < 0 {
            return Err(io::Error::from_raw_os_error(-r as i32));
        }
        Ok(r as usize)
    }

    /// Wait for at least `min` completions (up to `events.len()`).
    pub fn getevents(&self, min: usize, events: &mut [IoEvent]) -> io::Result<usize> {
        let a = [
            ctx_arg(self.ctx),
            min as u64,
            events.len() as u64,
            events.as_mut_ptr() as u64,
            0, // no timeout
            0,
        ];
        // SAFETY: events is a valid writable array of its length.
        crate::retry_eintr(|| unsafe { crate::syscall6(libc::SYS_io_getevents, a) })
    }
}

/// The context as a system call argument (`aio_context_t` is an unsigned
/// long: 64 bits here, 32 on a 32-bit target).
#[allow(clippy::unnecessary_cast)]
#[inline(always)]
fn ctx_arg(ctx: libc::c_ulong) -> u64 {
    ctx as u64
}

impl Drop for AioContext {
    fn drop(&mut self) {
        // SAFETY: ctx came from io_setup and is destroyed once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

use crate::queue::{Completion, IoDesc, SlotArena};

/// A libaio queue owning its slot arena, so every buffer handed to the kernel
/// outlives its I/O. Batches io_submit; io_getevents waits for `min`.
pub struct AioQueue {
    ctx: AioContext,
    iocbs: Box<[Iocb]>,
    pending: Box<[*mut Iocb]>,
    npending: usize,
    events: Box<[IoEvent]>,
    nready: usize,
    fds: Box<[RawFdU32]>,
    arena: SlotArena,
    rw_flags: RwfFlags,
    inflight: usize,
}

type RawFdU32 = u32;

// The raw pointers point into our own boxed slices; the queue moves as a whole.
unsafe impl Send for AioQueue {}

impl AioQueue {
    pub fn new(
        arena: SlotArena,
        fds: &[std::os::fd::RawFd],
        rw_flags: RwfFlags,
    ) -> io::Result<AioQueue> {
        let n = arena.nslots() as usize;
        let ctx = AioContext::new(n as u32)?;
        let iocbs = vec![Iocb::default(); n].into_boxed_slice();
        Ok(AioQueue {
            ctx,
            iocbs,
            pending: vec![std::ptr::null_mut(); n].into_boxed_slice(),
            npending: 0,
            events: vec![IoEvent::default(); n].into_boxed_slice(),
            nready: 0,
            fds: fds.iter().map(|&f| f as u32).collect(),
            arena,
            rw_flags,
            inflight: 0,
        })
    }

    /// Stage one I/O for the next `commit`. The slot must be idle. Panics
    /// (in every build) when the slot is not in the arena or `d.len`
    /// exceeds a slot.
    #[inline]
    pub fn stage(&mut self, d: IoDesc) {
        let buf = self.arena.io_ptr(d.slot, d.len);
        let cb = &mut self.iocbs[d.slot as usize];
        *cb = Iocb {
            aio_data: d.slot as u64,
            aio_rw_flags: self.rw_flags,
            aio_lio_opcode: if d.write {
                IOCB_CMD_PWRITE
            } else {
                IOCB_CMD_PREAD
            },
            aio_fildes: self.fds[d.file as usize],
            aio_buf: buf as u64,
            aio_nbytes: d.len as u64,
            aio_offset: d.offset as i64,
            aio_reqprio: d.prio as i16,
            aio_flags: if d.prio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
            ..Default::default()
        };
        self.pending[self.npending] = cb as *mut Iocb;
        self.npending += 1;
    }

    /// Submit staged I/Os, then wait for at least `min` completions.
    #[inline]
    pub fn commit(&mut self, min: u32) -> io::Result<u32> {
        let mut submitted = 0;
        if self.npending > 0 {
            // SAFETY: every pending pointer targets an iocb in self.iocbs whose
            // buffer is in self.arena; both live as long as the context, and a
            // slot is staged only when idle.
            match unsafe { self.ctx.submit(&mut self.pending[..self.npending]) } {
                Ok(n) => {
                    submitted = n;
                    self.pending.copy_within(n..self.npending, 0);
                    self.npending -= n;
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                Err(e) => return Err(e),
            }
            self.inflight += submitted;
        }
        let want = (min as usize).min(self.inflight);
        if self.nready == 0 && (want > 0 || self.inflight > 0) {
            let n = self.ctx.getevents(want, &mut self.events)?;
            self.nready = n;
            self.inflight -= n;
        }
        Ok(submitted as u32)
    }

    #[inline]
    pub fn reap(&mut self, out: &mut [Completion]) -> usize {
        let n = self.nready.min(out.len());
        for (o, e) in out.iter_mut().zip(&self.events[..n]) {
            *o = Completion {
                slot: e.data as u32,
                res: e.res as i32,
            };
        }
        self.events.copy_within(n..self.nready, 0);
        self.nready -= n;
        n
    }

    pub fn arena(&mut self) -> &mut SlotArena {
        &mut self.arena
    }
}

impl Drop for AioQueue {
    fn drop(&mut self) {
        // Wait for in-flight I/O before the arena is unmapped.
        while self.inflight > 0 {
            let mut ev = [IoEvent::default(); 16];
            match self.ctx.getevents(1, &mut ev) {
                Ok(n) => self.inflight = self.inflight.saturating_sub(n),
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_kernel_abi() {
        assert_eq!(std::mem::size_of::<Iocb>(), 64);
        assert_eq!(std::mem::size_of::<IoEvent>(), 32);
    }

    #[test]
    fn read_a_file() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let mut f = tempfile_in_tmp();
        f.write_all(&[0xab; 8192]).unwrap();
        let ctx = AioContext::new(8).unwrap();
        let mut buf = vec![0u8; 4096];
        let mut cb = Iocb {
            aio_data: 42,
            aio_lio_opcode: IOCB_CMD_PREAD,
            aio_fildes: f.as_raw_fd() as u32,
            aio_buf: buf.as_mut_ptr() as u64,
            aio_nbytes: 4096,
            aio_offset: 4096,
            ..Default::default()
        };
        let mut ptrs = [&mut cb as *mut Iocb];
        // SAFETY: cb and buf outlive the completion we wait for below.
        assert_eq!(unsafe { ctx.submit(&mut ptrs) }.unwrap(), 1);
        let mut ev = [IoEvent::default(); 1];
        assert_eq!(ctx.getevents(1, &mut ev).unwrap(), 1);
        assert_eq!(ev[0].data, 42);
        assert_eq!(ev[0].res, 4096);
        assert!(buf.iter().all(|&b| b == 0xab));
    }

    #[test]
    #[should_panic(expected = "into slot")]
    fn stage_refuses_a_slot_outside_the_arena() {
        let arena = crate::queue::SlotArena::new(2, 4096).unwrap();
        let mut q = AioQueue::new(arena, &[0], 0).unwrap();
        q.stage(crate::queue::IoDesc {
            slot: 2,
            write: false,
            file: 0,
            offset: 0,
            len: 512,
            prio: 0,
        });
    }

    fn tempfile_in_tmp() -> std::fs::File {
        let p = std::env::temp_dir().join(format!("dioscope-aio-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }
}
