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
use std::os::fd::{AsRawFd, RawFd};

// The kernel's ABI (include/uapi/linux/io_uring.h), for the ring's own
// `io_uring_enter` below.
const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_ENTER_REGISTERED_RING: u32 = 16;
const IORING_REGISTER_RING_FDS: libc::c_long = 20;

#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// Register the ring's descriptor with the calling thread's io_uring
/// context: `io_uring_enter` then names the ring by this index and skips
/// the descriptor lookup. The index, or `None` when the kernel refuses.
fn register_ring_fd(ring_fd: RawFd) -> Option<u32> {
    let mut up = RsrcUpdate {
        offset: u32::MAX,
        resv: 0,
        data: ring_fd as u64,
    };
    // SAFETY: `up` is one valid io_uring_rsrc_update the kernel reads and
    // writes (its offset) during the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring_fd as libc::c_long,
            IORING_REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1 as libc::c_long,
        )
    };
    (r == 1).then_some(up.offset)
}

/// `io_uring_enter(fd, to_submit, min_complete, flags, NULL, 0)` as one
/// `syscall` instruction inlined into the worker's commit
/// ([`crate::syscall6`]): no call through libc's variadic `syscall()`,
/// whose lines are cold again after every wake-up. Returns the kernel's
/// result: a count, or -errno.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn enter_raw(fd: u32, to_submit: u32, min_complete: u32, flags: u32) -> i64 {
    let a = [fd, to_submit, min_complete, flags].map(u64::from);
    // SAFETY: io_uring_enter with no argument structure (NULL, 0) reads
    // only the ring's shared memory, which the caller has published
    // (`sq.sync()`).
    unsafe { crate::syscall6(libc::SYS_io_uring_enter, [a[0], a[1], a[2], a[3], 0, 0]) }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct UringOpts {
    pub entries: u32,
    pub fixed_bufs: bool,
    pub register_files: bool,
    pub sqpoll: bool,
    /// IORING_SETUP_IOPOLL (hipri): polled completions.
    pub iopoll: bool,
    pub nowait: bool,
    /// RWF flags added to every read (`uncached`: RWF_DONTCACHE).
    pub read_flags: crate::io::RwfFlags,
    /// RWF flags added to every write (`uncached`, `atomic`: RWF_ATOMIC).
    pub write_flags: crate::io::RwfFlags,
    /// Poll the completion queue ([`POLL_REAPS`] times) before a wait sleeps.
    pub poll_reaps: bool,
    /// Put in every SQE's user_data above the slot (bits 32–63): who
    /// issued it, for a tracer keyed by user_data (`--stages`' completion
    /// delivery); 0: nothing. Completions give back the slot alone.
    pub ud_tag: u32,
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

/// Non-blocking reaps a waiting commit tries before it sleeps, when
/// [`UringOpts::poll_reaps`] is set (`iodepth_batch_complete_min=0`).
///
/// Sleeping costs a wake-up, tens of µs on a VM with idle vCPUs. Where the
/// kernel's side is one io-wq worker doing µs-long work (buffered reads from
/// the page cache, all punted on this kernel), a sleeping tool at a low depth
/// leaves that worker idle between wake-ups: measured on 2 CPUs, page-cached
/// randread 4k QD 8, dioscope sleeping 0.42× fio's IOPS, polling 1.5–2×.
/// Polling is not the default: on B2 (zram QD 32) it gains ~20 % IOPS at 5×
/// the user time per I/O (docs/PERFORMANCE.md, "Polling for completions").
pub const POLL_REAPS: u32 = 256;

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
    w_rw_flags: i32,
    staged: u32,
    /// I/Os pushed to the submission queue and not yet reaped: what the
    /// kernel may still be reading into or writing from the arena.
    outstanding: u32,
    /// `io_uring_enter`'s fd argument and flags for a waiting commit made
    /// directly (the registered index, or the descriptor); `None`: through
    /// the crate (SQPOLL, which needs its wake-up protocol; not x86-64).
    enter: Option<(u32, u32)>,
    /// Non-blocking reaps before a waiting commit sleeps (0: sleep at once).
    polls: u32,
    /// [`UringOpts::ud_tag`], in place.
    ud_high: u64,
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
    let ring_fd = ring.as_raw_fd();
    let registered = register_ring_fd(ring_fd);
    features.registered_ring = registered.is_some();
    let enter = match registered {
        Some(i) => (i, IORING_ENTER_GETEVENTS | IORING_ENTER_REGISTERED_RING),
        None => (ring_fd as u32, IORING_ENTER_GETEVENTS),
    };
    let enter = (cfg!(target_arch = "x86_64") && !opts.sqpoll).then_some(enter);
    let (sub, sq, cq) = ring.split();
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
        rw_flags: flags | opts.read_flags,
        w_rw_flags: flags | opts.write_flags,
        staged: 0,
        outstanding: 0,
        enter,
        // DIOSCOPE_URING_SPIN=N overrides the budget (measurements only).
        polls: std::env::var("DIOSCOPE_URING_SPIN")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if opts.poll_reaps { POLL_REAPS } else { 0 }),
        ud_high: u64::from(opts.ud_tag) << 32,
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
    /// The slot must be idle. Panics (in every build) when the slot is not
    /// in the arena or `d.len` exceeds a slot.
    #[inline]
    pub fn stage(&mut self, d: IoDesc) {
        let ptr = self.arena.io_ptr(d.slot, d.len);
        // A registered file is its index plus the FIXED_FILE flag (what
        // `types::Fixed` writes): choosing the number here leaves four
        // builders instead of eight, and no branch on the file per I/O.
        let (fd, file_flags) = if self.features.registered_files {
            (d.file as RawFd, squeue::Flags::FIXED_FILE)
        } else {
            (self.fds[d.file as usize], squeue::Flags::empty())
        };
        let fd = types::Fd(fd);
        let entry: squeue::Entry = match (self.features.fixed_bufs, d.write) {
            (true, false) => opcode::ReadFixed::new(fd, ptr, d.len, 0)
                .offset(d.offset)
                .rw_flags(self.rw_flags)
                .ioprio(d.prio)
                .build(),
            (true, true) => opcode::WriteFixed::new(fd, ptr, d.len, 0)
                .offset(d.offset)
                .rw_flags(self.w_rw_flags)
                .ioprio(d.prio)
                .build(),
            (false, false) => opcode::Read::new(fd, ptr, d.len)
                .offset(d.offset)
                .rw_flags(self.rw_flags)
                .ioprio(d.prio)
                .build(),
            (false, true) => opcode::Write::new(fd, ptr, d.len)
                .offset(d.offset)
                .rw_flags(self.w_rw_flags)
                .ioprio(d.prio)
                .build(),
        };
        let entry = entry.flags(file_flags);
        let entry = entry.user_data(d.slot as u64 | self.ud_high);
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
        self.outstanding += 1;
    }

    /// Submit what is staged and wait until at least `min` completions are ready.
    #[inline]
    pub fn commit(&mut self, min: u32) -> io::Result<u32> {
        self.sq.sync();
        let staged = self.staged;
        #[cfg(target_arch = "x86_64")]
        if let (Some((fd, flags)), true) = (self.enter, min > 0) {
            // Polling asked for: look (GETEVENTS also runs DEFER_TASKRUN's
            // deferred completions) before paying a wake-up.
            let mut to_submit = self.sq.len() as u32;
            for _ in 0..self.polls {
                if enter_raw(fd, to_submit, 0, flags) < 0 {
                    break; // the waiting call below reports or retries it
                }
                self.sq.sync();
                to_submit = self.sq.len() as u32;
                self.cq.sync();
                if self.cq.len() as u32 >= min {
                    self.staged = to_submit;
                    return Ok(staged.saturating_sub(self.staged));
                }
            }
            // What `submit_and_wait(min)` sends without SQPOLL: everything
            // staged (the tail was just published), GETEVENTS for the wait.
            loop {
                let r = enter_raw(fd, self.sq.len() as u32, min, flags);
                if r >= 0 || r == -libc::EBUSY as i64 || r == -libc::EAGAIN as i64 {
                    // EBUSY/EAGAIN: CQ overflow pressure; reap first.
                    break;
                }
                if r != -libc::EINTR as i64 {
                    return Err(io::Error::from_raw_os_error(-r as i32));
                }
                // Interrupted: count again what the kernel has not taken.
                self.sq.sync();
            }
            self.sq.sync();
            self.staged = self.sq.len() as u32;
            return Ok(staged.saturating_sub(self.staged));
        }
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
        // Publish the new head now: the kernel counts what is in the ring
        // from it, and with a stale head the next `submit_and_wait(min)`
        // found the entries just taken "ready" and returned at once — half
        // the system calls of a QD 32 run woke for nothing (0 reaped).
        self.cq.sync();
        self.outstanding -= n as u32;
        n
    }

    pub fn arena(&mut self) -> &mut SlotArena {
        self.arena
    }

    /// I/Os staged or in flight and not yet reaped.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// Wait until the kernel is done with every I/O staged or in flight, so
    /// the arena may be released. Their completions are discarded: the
    /// worker has stopped accounting.
    fn drain(&mut self) {
        while self.outstanding > 0 {
            // Submits what is still staged too.
            match self.sub.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                // The ring itself failed: nothing more can be waited for.
                Err(_) => return,
            }
            self.cq.sync();
            let done = (&mut self.cq).count() as u32;
            self.cq.sync();
            self.outstanding = self.outstanding.saturating_sub(done);
            self.sq.sync();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    #[test]
    fn drain_waits_for_in_flight_io() {
        // A read from a socket nobody has written to yet stays in flight
        // until the writer below sends, 300 ms later.
        let (a, mut b) = UnixStream::pair().unwrap();
        let fds = [a.as_raw_fd()];
        let mut arena = SlotArena::new(2, 4096).unwrap();
        let opts = UringOpts {
            entries: 2,
            ..Default::default()
        };
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            b.write_all(&[7u8; 16]).unwrap();
            b
        });
        let t0 = Instant::now();
        let r = with_queue(&opts, &fds, &mut arena, |q| {
            q.stage(IoDesc {
                slot: 0,
                write: false,
                file: 0,
                offset: 0,
                len: 16,
                prio: 0,
            });
            q.commit(0).unwrap();
            q.outstanding()
        });
        let left = match r {
            Ok(n) => n,
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: no io_uring here ({e})");
                return;
            }
            Err(e) => panic!("io_uring setup failed in CI: {e}"),
        };
        let waited = t0.elapsed();
        let _b = writer.join().unwrap();
        assert_eq!(left, 1, "the read was in flight when the worker returned");
        assert!(
            waited >= Duration::from_millis(250),
            "with_queue returned after {waited:?}, before the in-flight read completed"
        );
        assert_eq!(&arena.slot_mut(0)[..16], &[7u8; 16]);
    }

    /// What a wait after a reap saw: the first completion, then the second.
    struct LateRead {
        first: (usize, Completion),
        second: (usize, Completion),
        waited: Duration,
        data: [u8; 16],
        /// The queue's poll budget.
        polls: u32,
    }

    /// A read from /dev/zero (done at once) is committed and reaped; then a
    /// socket read, written 300 ms later, is committed with `commit(1)`.
    /// `None`: no io_uring here (outside CI).
    fn read_now_then_late(opts: &UringOpts) -> Option<LateRead> {
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let (a, mut b) = UnixStream::pair().unwrap();
        let fds = [zero.as_raw_fd(), a.as_raw_fd()];
        let mut arena = SlotArena::new(2, 4096).unwrap();
        let r = with_queue(opts, &fds, &mut arena, |q| {
            let polls = q.polls;
            let mut out = [Completion::default(); 2];
            let desc = |slot, file| IoDesc {
                slot,
                write: false,
                file,
                offset: 0,
                len: 16,
                prio: 0,
            };
            q.stage(desc(0, 0));
            q.commit(1).unwrap();
            let first = (q.reap(&mut out), out[0]);
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                b.write_all(&[7u8; 16]).unwrap();
                b
            });
            let t0 = Instant::now();
            q.stage(desc(1, 1));
            q.commit(1).unwrap();
            let second = (q.reap(&mut out), out[0]);
            let waited = t0.elapsed();
            let _b = writer.join().unwrap();
            (first, second, waited, polls)
        });
        let (first, second, waited, polls) = match r {
            Ok(x) => x,
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: no io_uring here ({e})");
                return None;
            }
            Err(e) => panic!("io_uring setup failed in CI: {e}"),
        };
        let mut data = [0u8; 16];
        data.copy_from_slice(&arena.slot_mut(1)[..16]);
        Some(LateRead {
            first,
            second,
            waited,
            data,
            polls,
        })
    }

    #[test]
    fn a_wait_after_a_reap_waits_for_new_completions() {
        // After reaping the first, `commit(1)` must wait for the second: the
        // kernel has to see the entries taken, or it counts them as still ready.
        let opts = UringOpts {
            entries: 2,
            ..Default::default()
        };
        let Some(r) = read_now_then_late(&opts) else {
            return;
        };
        assert_eq!(r.first.0, 1);
        assert_eq!(
            r.second.0, 1,
            "commit(1) returned after {:?} with nothing new to reap",
            r.waited
        );
        assert!(r.waited >= Duration::from_millis(250), "{:?}", r.waited);
    }

    #[test]
    fn a_polling_wait_returns_ready_completions_and_sleeps_for_late_ones() {
        // Polling asked for (iodepth_batch_complete_min=0): the /dev/zero read
        // is found by the polls; the socket read outlasts them, so the wait
        // must fall back to sleeping for it, not return with nothing.
        let opts = UringOpts {
            entries: 2,
            poll_reaps: true,
            ..Default::default()
        };
        let Some(r) = read_now_then_late(&opts) else {
            return;
        };
        assert!(r.polls > 0 || std::env::var_os("DIOSCOPE_URING_SPIN").is_some());
        assert_eq!((r.first.0, r.first.1.slot), (1, 0));
        assert_eq!(
            r.second.0, 1,
            "returned after {:?} with nothing to reap",
            r.waited
        );
        assert_eq!((r.second.1.slot, r.second.1.res), (1, 16));
        assert!(r.waited >= Duration::from_millis(250), "{:?}", r.waited);
        assert_eq!(r.data, [7u8; 16]);
    }

    #[test]
    fn registered_files_and_fixed_buffers_read_into_the_slot() {
        // Every combination of registered file and fixed buffer: the SQE
        // must name the right file (index + FIXED_FILE, or the descriptor)
        // and buffer.
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(&[7u8; 16]).unwrap();
        // File 1 is /dev/zero: a wrong index (0, the socket) reads 7s.
        let fds = [a.as_raw_fd(), zero.as_raw_fd()];
        for (register_files, fixed_bufs) in
            [(false, false), (true, false), (false, true), (true, true)]
        {
            let mut arena = SlotArena::new(1, 4096).unwrap();
            arena.slot_mut(0)[..16].fill(0xAA);
            let opts = UringOpts {
                entries: 2,
                register_files,
                fixed_bufs,
                ..Default::default()
            };
            let r = with_queue(&opts, &fds, &mut arena, |q| {
                let mut out = [Completion::default(); 1];
                q.stage(IoDesc {
                    slot: 0,
                    write: false,
                    file: 1,
                    offset: 0,
                    len: 16,
                    prio: 0,
                });
                q.commit(1).unwrap();
                (q.reap(&mut out), out[0], q.features())
            });
            let (n, c, f) = match r {
                Ok(x) => x,
                Err(e) if std::env::var_os("CI").is_none() => {
                    eprintln!("skipped: no io_uring here ({e})");
                    return;
                }
                Err(e) => panic!("io_uring setup failed in CI: {e}"),
            };
            let case = format!("register_files={register_files} fixed_bufs={fixed_bufs} ({f:?})");
            assert_eq!((n, c.slot, c.res), (1, 0, 16), "{case}");
            assert_eq!(&arena.slot_mut(0)[..16], &[0u8; 16], "{case}");
        }
    }

    #[test]
    #[should_panic(expected = "into slot")]
    fn stage_refuses_a_length_beyond_the_slot() {
        let mut arena = SlotArena::new(1, 4096).unwrap();
        let size = arena.slot_size() as u32;
        let f = std::fs::File::open("/dev/zero").unwrap();
        let fds = [f.as_raw_fd()];
        let opts = UringOpts {
            entries: 1,
            ..Default::default()
        };
        let r = with_queue(&opts, &fds, &mut arena, |q| {
            q.stage(IoDesc {
                slot: 0,
                write: false,
                file: 0,
                offset: 0,
                len: size + 1,
                prio: 0,
            });
        });
        if r.is_err() {
            // No io_uring: show the check on the arena itself.
            SlotArena::new(1, 4096).unwrap().io_ptr(0, size + 1);
        }
    }
}
