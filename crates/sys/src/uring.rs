//! io_uring queue for the runner: one ring per worker, created and used on
//! the worker's own thread.
//!
//! Defaults are the cheapest the kernel accepts: SINGLE_ISSUER + DEFER_TASKRUN
//! (completions run only when we ask for them, no IPIs), else COOP_TASKRUN,
//! else nothing; registered file(s), fixed buffers (one registration covering
//! the whole slot arena) and a registered ring fd. Each refusal falls back
//! quietly and is recorded in [`UringFeatures`] for the report.

use crate::queue::{Completion, IoDesc, SlotArena};
use io_uring::{opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;

#[derive(Debug, Clone, Copy, Default)]
pub struct UringOpts {
    pub entries: u32,
    pub fixed_bufs: bool,
    pub register_files: bool,
    pub sqpoll: bool,
    /// IORING_SETUP_IOPOLL (hipri): polled completions.
    pub iopoll: bool,
    pub nowait: bool,
}

/// What the kernel accepted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UringFeatures {
    pub single_issuer: bool,
    pub defer_taskrun: bool,
    pub coop_taskrun: bool,
    pub fixed_bufs: bool,
    pub registered_files: bool,
    pub registered_ring: bool,
    pub sqpoll: bool,
    pub iopoll: bool,
}

fn build(opts: &UringOpts) -> io::Result<(IoUring, UringFeatures)> {
    let mut f = UringFeatures {
        sqpoll: opts.sqpoll,
        iopoll: opts.iopoll,
        ..Default::default()
    };
    // (single_issuer, defer_taskrun, coop_taskrun) in order of preference.
    let tiers: &[(bool, bool, bool)] = if opts.sqpoll {
        // DEFER_TASKRUN is incompatible with SQPOLL.
        &[
            (true, false, true),
            (false, false, true),
            (false, false, false),
        ]
    } else {
        &[
            (true, true, false),
            (true, false, true),
            (false, false, true),
            (false, false, false),
        ]
    };
    let mut last = None;
    // DIOSCOPE_URING_TIER=N starts at the N-th fallback (for measurements).
    let skip = std::env::var("DIOSCOPE_URING_TIER")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    for &(si, dt, ct) in tiers.iter().skip(skip.min(tiers.len() - 1)) {
        let mut b = IoUring::builder();
        if si {
            b.setup_single_issuer();
        }
        if dt {
            b.setup_defer_taskrun();
        }
        if ct {
            b.setup_coop_taskrun();
        }
        if opts.sqpoll {
            b.setup_sqpoll(1000);
        }
        if opts.iopoll {
            b.setup_iopoll();
        }
        b.setup_cqsize(opts.entries.max(1) * 2);
        match b.build(opts.entries.max(1)) {
            Ok(r) => {
                f.single_issuer = si;
                f.defer_taskrun = dt;
                f.coop_taskrun = ct;
                return Ok((r, f));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::Unsupported)))
}

/// A live ring with its slot arena. Borrowed form of the split ring, so the
/// registered ring fd stays in use for every `io_uring_enter`.
pub struct UringQueue<'r> {
    sub: io_uring::Submitter<'r>,
    sq: io_uring::SubmissionQueue<'r>,
    cq: io_uring::CompletionQueue<'r>,
    arena: &'r mut SlotArena,
    fds: &'r [RawFd],
    features: UringFeatures,
    rw_flags: i32,
    staged: u32,
}

/// Build a ring for `fds` and `arena`, then run `f` with the queue. The ring
/// is torn down (after in-flight I/O completes) when `f` returns.
pub fn with_queue<R>(
    opts: &UringOpts,
    fds: &[RawFd],
    arena: &mut SlotArena,
    f: impl FnOnce(&mut UringQueue<'_>) -> R,
) -> io::Result<R> {
    let (mut ring, mut features) = build(opts)?;
    if opts.register_files && ring.submitter().register_files(fds).is_ok() {
        features.registered_files = true;
    }
    if opts.fixed_bufs {
        let iov = libc::iovec {
            iov_base: arena.base().cast(),
            iov_len: arena.len(),
        };
        // SAFETY: the arena outlives the ring (it is borrowed for the ring's
        // whole life below) and is not unmapped while registered.
        if unsafe { ring.submitter().register_buffers(&[iov]) }.is_ok() {
            features.fixed_bufs = true;
        }
    }
    let (mut sub, sq, cq) = ring.split();
    if sub.register_ring_fd().is_ok() {
        features.registered_ring = true;
    }
    let mut flags = 0;
    if opts.nowait {
        flags |= crate::io::RWF_NOWAIT;
    }
    let mut q = UringQueue {
        sub,
        sq,
        cq,
        arena,
        fds,
        features,
        rw_flags: flags,
        staged: 0,
    };
    let r = f(&mut q);
    q.drain();
    Ok(r)
}

impl UringQueue<'_> {
    pub fn features(&self) -> UringFeatures {
        self.features
    }

    /// Stage one I/O in the submission queue (not yet visible to the kernel).
    #[inline]
    pub fn stage(&mut self, d: IoDesc) {
        let ptr = self.arena.slot_ptr(d.slot);
        let entry: squeue::Entry = match (
            self.features.registered_files,
            self.features.fixed_bufs,
            d.write,
        ) {
            (true, true, false) => opcode::ReadFixed::new(types::Fixed(d.file), ptr, d.len, 0)
                .offset(d.offset)
                .rw_flags(self.rw_flags)
                .build(),
            (true, true, true) => opcode::WriteFixed::new(types::Fixed(d.file), ptr, d.len, 0)
                .offset(d.offset)
                .rw_flags(self.rw_flags)
                .build(),
            (true, false, false) => opcode::Read::new(types::Fixed(d.file), ptr, d.len)
                .offset(d.offset)
                .rw_flags(self.rw_flags)
                .build(),
            (true, false, true) => opcode::Write::new(types::Fixed(d.file), ptr, d.len)
                .offset(d.offset)
                .rw_flags(self.rw_flags)
                .build(),
            (false, true, false) => {
                opcode::ReadFixed::new(types::Fd(self.fds[d.file as usize]), ptr, d.len, 0)
                    .offset(d.offset)
                    .rw_flags(self.rw_flags)
                    .build()
            }
            (false, true, true) => {
                opcode::WriteFixed::new(types::Fd(self.fds[d.file as usize]), ptr, d.len, 0)
                    .offset(d.offset)
                    .rw_flags(self.rw_flags)
                    .build()
            }
            (false, false, false) => {
                opcode::Read::new(types::Fd(self.fds[d.file as usize]), ptr, d.len)
                    .offset(d.offset)
                    .rw_flags(self.rw_flags)
                    .build()
            }
            (false, false, true) => {
                opcode::Write::new(types::Fd(self.fds[d.file as usize]), ptr, d.len)
                    .offset(d.offset)
                    .rw_flags(self.rw_flags)
                    .build()
            }
        };
        let entry = entry.user_data(d.slot as u64);
        // SAFETY: the buffer belongs to the arena, which outlives the ring,
        // and the runner stages a slot only when it is idle.
        if unsafe { self.sq.push(&entry) }.is_err() {
            // The cached head is behind the kernel's: refresh it; if the
            // ring is really full, hand what is staged to the kernel first.
            self.sq.sync();
            if self.sq.is_full() {
                let _ = self.sub.submit();
                self.sq.sync();
            }
            // SAFETY: as above.
            unsafe { self.sq.push(&entry) }.expect("a free submission entry after submitting");
        }
        self.staged += 1;
    }

    /// Submit what is staged and wait until at least `min` completions are ready.
    #[inline]
    pub fn commit(&mut self, min: u32) -> io::Result<u32> {
        self.sq.sync();
        let staged = self.staged;
        loop {
            let r = if min > 0 || self.features.defer_taskrun {
                self.sub.submit_and_wait(min as usize)
            } else {
                self.sub.submit()
            };
            match r {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e)
                    if e.raw_os_error() == Some(libc::EBUSY)
                        || e.raw_os_error() == Some(libc::EAGAIN) =>
                {
                    // CQ overflow pressure: reap first, then try again.
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        // Learn how far the kernel consumed, so the next staging sees the
        // entries it freed (a stale head makes the ring look full).
        self.sq.sync();
        self.staged = self.sq.len() as u32;
        Ok(staged.saturating_sub(self.staged))
    }

    /// Move ready completions into `out`; returns how many.
    #[inline]
    pub fn reap(&mut self, out: &mut [Completion]) -> usize {
        self.cq.sync();
        let mut n = 0;
        for (o, c) in out.iter_mut().zip(&mut self.cq) {
            *o = Completion {
                slot: c.user_data() as u32,
                res: c.result(),
            };
            n += 1;
        }
        n
    }

    pub fn arena(&mut self) -> &mut SlotArena {
        self.arena
    }

    fn drain(&mut self) {
        // The arena must not be released while the kernel may still use it:
        // wait for everything in flight before the ring goes away.
        let _ = self.sub.submit_and_wait(0);
    }
}
