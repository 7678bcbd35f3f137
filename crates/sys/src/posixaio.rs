//! POSIX asynchronous I/O (`aio_read`/`aio_write`/`aio_error`/`aio_return`/
//! `aio_suspend`), fio's `posixaio` engine.
//!
//! glibc implements POSIX aio in user space: a pool of threads doing
//! `pread`/`pwrite`. It runs the requests of one descriptor *number* one
//! after another in one thread, so a queue on one descriptor would reach the
//! device one I/O at a time. A queue therefore spreads its slots over
//! `per_file` `dup`s of each file's descriptor (slot `s` uses dup
//! `s % per_file`): up to `per_file` requests per file run in parallel, as
//! many as the pool has threads (raised once per process from glibc's
//! default of 20). More descriptors are not free: a thread whose queue runs
//! dry sleeps, and each request handed to a sleeping thread costs a
//! wake-up, so the engine chooses `per_file` (see `engines/posixaio.rs`).

use crate::queue::{Completion, IoDesc, SlotArena};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Once;

/// glibc's `struct aioinit` (`aio_init(3)`, a GNU extension the libc crate lacks).
#[repr(C)]
struct AioInit {
    aio_threads: libc::c_int,
    aio_num: libc::c_int,
    aio_locks: libc::c_int,
    aio_usedba: libc::c_int,
    aio_debug: libc::c_int,
    aio_numusers: libc::c_int,
    aio_idle_time: libc::c_int,
    aio_reserved: libc::c_int,
}

extern "C" {
    fn aio_init(init: *const AioInit);
}

/// Threads glibc may run for aio in this process (its default is 20, which
/// would cap iodepth × jobs); idle ones exit after a second.
pub const POOL_THREADS: i32 = 256;

fn init_pool() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let init = AioInit {
            aio_threads: POOL_THREADS,
            aio_num: 4 * POOL_THREADS,
            aio_locks: 0,
            aio_usedba: 0,
            aio_debug: 0,
            aio_numusers: 0,
            aio_idle_time: 1,
            aio_reserved: 0,
        };
        // SAFETY: a valid aioinit; glibc copies what it needs.
        unsafe { aio_init(&init) };
    });
}

/// One worker's POSIX aio queue over its slots.
pub struct PosixAioQueue {
    arena: SlotArena,
    /// `fds[file][k]`: the descriptors of each file; slot `s` uses `k = s % per_file`.
    fds: Vec<Vec<OwnedFd>>,
    /// One control block per slot; boxed so they never move while in flight.
    cbs: Box<[libc::aiocb]>,
    staged: Vec<u32>,
    inflight: Vec<u32>,
    /// `aio_suspend`'s list, rebuilt from `inflight` (capacity: the depth).
    wait_list: Vec<*const libc::aiocb>,
    done: Vec<Completion>,
}

impl PosixAioQueue {
    /// A queue with one slot per arena slot over `fds`, each file's slots
    /// spread over `per_file` dups of its descriptor (at least 1, at most
    /// one per slot).
    pub fn new(arena: SlotArena, fds: &[RawFd], per_file: usize) -> io::Result<PosixAioQueue> {
        init_pool();
        let n = arena.nslots() as usize;
        let k = per_file.clamp(1, n.max(1));
        let mut dups = Vec::with_capacity(fds.len());
        for &fd in fds {
            let mut v = Vec::with_capacity(k);
            for _ in 0..k {
                v.push(crate::vio::dup(fd)?);
            }
            dups.push(v);
        }
        let per_file = dups;
        // SAFETY: aiocb is plain data; all-zero is a valid initial value.
        let zero: libc::aiocb = unsafe { std::mem::zeroed() };
        Ok(PosixAioQueue {
            arena,
            fds: per_file,
            cbs: vec![zero; n].into_boxed_slice(),
            staged: Vec::with_capacity(n),
            inflight: Vec::with_capacity(n),
            wait_list: Vec::with_capacity(n),
            done: Vec::with_capacity(n),
        })
    }

    pub fn arena(&mut self) -> &mut SlotArena {
        &mut self.arena
    }

    /// Fill the slot's control block; submitted by the next `commit`.
    pub fn stage(&mut self, d: IoDesc) {
        let buf = self.arena.io_ptr(d.slot, d.len);
        let dups = &self.fds[d.file as usize];
        let fd = dups[d.slot as usize % dups.len()].as_raw_fd();
        let cb = &mut self.cbs[d.slot as usize];
        cb.aio_fildes = fd;
        cb.aio_buf = buf.cast();
        cb.aio_nbytes = d.len as usize;
        cb.aio_offset = d.offset as libc::off_t;
        cb.aio_reqprio = 0;
        cb.aio_lio_opcode = if d.write {
            libc::LIO_WRITE
        } else {
            libc::LIO_READ
        };
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        self.staged.push(d.slot);
    }

    /// Submit the staged requests, then wait until at least `min` are done.
    pub fn commit(&mut self, min: u32) -> io::Result<u32> {
        let submitted = self.staged.len() as u32;
        for i in 0..self.staged.len() {
            let slot = self.staged[i];
            let cb: *mut libc::aiocb = &mut self.cbs[slot as usize];
            // SAFETY: the control block and its buffer (in the arena) live in
            // self and do not move until the request is reaped or cancelled.
            let r = unsafe {
                if (*cb).aio_lio_opcode == libc::LIO_WRITE {
                    libc::aio_write(cb)
                } else {
                    libc::aio_read(cb)
                }
            };
            if r < 0 {
                let e = io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                self.done.push(Completion { slot, res: -e });
            } else {
                self.inflight.push(slot);
            }
        }
        self.staged.clear();
        loop {
            self.collect();
            if self.done.len() >= min as usize || self.inflight.is_empty() {
                return Ok(submitted);
            }
            self.wait_list.clear();
            for &s in &self.inflight {
                self.wait_list.push(&self.cbs[s as usize]);
            }
            // SAFETY: every pointer is to a live control block of a request
            // in flight; no timeout.
            let r = unsafe {
                libc::aio_suspend(
                    self.wait_list.as_ptr(),
                    self.wait_list.len() as libc::c_int,
                    std::ptr::null(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EAGAIN)) {
                    return Err(e);
                }
            }
        }
    }

    /// Move finished requests from `inflight` to `done`.
    fn collect(&mut self) {
        let mut i = 0;
        while i < self.inflight.len() {
            let slot = self.inflight[i];
            let cb: *mut libc::aiocb = &mut self.cbs[slot as usize];
            // SAFETY: a submitted control block of ours.
            let e = unsafe { libc::aio_error(cb) };
            if e == libc::EINPROGRESS {
                i += 1;
                continue;
            }
            // SAFETY: finished: aio_return may (and must) be called once.
            let r = unsafe { libc::aio_return(cb) };
            let res = if e == 0 { r as i32 } else { -e };
            self.done.push(Completion { slot, res });
            self.inflight.swap_remove(i);
        }
    }

    /// Move ready completions into `out`; returns how many.
    pub fn reap(&mut self, out: &mut [Completion]) -> usize {
        let n = self.done.len().min(out.len());
        out[..n].copy_from_slice(&self.done[..n]);
        self.done.drain(..n);
        n
    }
}

impl Drop for PosixAioQueue {
    /// A request still in flight writes into our buffers and control
    /// blocks: cancel what can be, and wait for the rest before freeing them.
    fn drop(&mut self) {
        for &s in &self.inflight {
            let cb: *mut libc::aiocb = &mut self.cbs[s as usize];
            // SAFETY: a live request of ours.
            unsafe { libc::aio_cancel((*cb).aio_fildes, cb) };
        }
        loop {
            self.collect();
            if self.inflight.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_then_reads_back_at_depth() {
        // An unlinked file: nothing to remove afterwards.
        let f = tempfile::tempfile().unwrap();
        let mut arena = SlotArena::new(8, 4096).unwrap();
        for s in 0..8u32 {
            arena.slot_mut(s).fill(s as u8 + 1);
        }
        let mut q = PosixAioQueue::new(arena, &[f.as_raw_fd()], 3).unwrap();
        for s in 0..8u32 {
            q.stage(IoDesc {
                slot: s,
                write: true,
                file: 0,
                offset: s as u64 * 4096,
                len: 4096,
                prio: 0,
            });
        }
        assert_eq!(q.commit(8).unwrap(), 8);
        let mut out = [Completion::default(); 8];
        assert_eq!(q.reap(&mut out), 8);
        assert!(out.iter().all(|c| c.res == 4096));
        for s in 0..8u32 {
            q.arena().slot_mut(s).fill(0);
            // Slot s reads block 7 - s.
            q.stage(IoDesc {
                slot: s,
                write: false,
                file: 0,
                offset: (7 - s as u64) * 4096,
                len: 4096,
                prio: 0,
            });
        }
        q.commit(1).unwrap();
        let mut got = 0;
        while got < 8 {
            got += q.reap(&mut out[got..]);
            if got < 8 {
                q.commit(1).unwrap();
            }
        }
        for s in 0..8u32 {
            assert!(q.arena().slot_mut(s).iter().all(|&c| c == 8 - s as u8));
        }
        // A read past the end is short (0 bytes), not an error.
        q.stage(IoDesc {
            slot: 0,
            write: false,
            file: 0,
            offset: 1 << 20,
            len: 4096,
            prio: 0,
        });
        q.commit(1).unwrap();
        assert_eq!(q.reap(&mut out), 1);
        assert_eq!(out[0].res, 0);
    }
}
