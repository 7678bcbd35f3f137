//! One worker: a thread, its engine, its slots, its statistics.
//!
//! The loop stages I/Os into free slots, commits them, and accounts the
//! completions. Per I/O it allocates nothing, takes no lock and writes no
//! memory another worker writes. The clock is read three times per batch
//! (before staging, before committing, after committing), not per I/O: every
//! I/O of a batch shares those stamps, so its submission latency is
//! `commit - stage`, its completion latency `reaped - commit`, and its total
//! latency the sum — exact to within the time spent staging a batch (well
//! under a microsecond), at a third of the clock reads fio makes.

use super::offsets::{BsPicker, OffsetGen};
use crate::engines::{Completion, Engine, IoDesc};
use dioscope_sys::clock::now_ns;
use dioscope_sys::proc::{usage_thread, Usage};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub use crate::results::measure::{merge_ticks, DirStats, IoErrorInfo, QueueStats, Tick};

/// Everything a worker reports when it ends.
#[derive(Debug, Clone, Default)]
pub struct WorkerResult {
    pub dirs: [DirStats; 2],
    pub sync: DirStats,
    pub runtime_ns: u64,
    pub thread_cpu: Usage,
    pub ticks: Vec<Tick>,
    pub first_error: Option<IoErrorInfo>,
    pub interrupted: bool,
    /// Fraction of the worker's wall time spent on CPU (user + sys).
    pub cpu_busy: f64,
    pub setup_note: Option<String>,
    pub queue: QueueStats,
}

/// Bucket of fio's iodepth_level map: 1, 2, 4, 8, 16, 32, >=64, each
/// holding depths from its key up to the next key.
#[inline(always)]
pub fn depth_bucket(d: usize) -> usize {
    ((usize::BITS - 1 - d.max(1).leading_zeros()) as usize).min(6)
}

/// Bucket of fio's iodepth_submit/complete maps: 0, 1-4, 5-8, 9-16, 17-32,
/// 33-64, >64 (keys "0", "4", "8", "16", "32", "64", ">=64").
#[inline(always)]
pub fn batch_bucket(n: usize) -> usize {
    const T: [u8; 65] = {
        let mut t = [0u8; 65];
        let mut i = 1;
        while i <= 64 {
            t[i] = match i {
                1..=4 => 1,
                5..=8 => 2,
                9..=16 => 3,
                17..=32 => 4,
                _ => 5,
            };
            i += 1;
        }
        t
    };
    if n <= 64 {
        T[n] as usize
    } else {
        6
    }
}

#[cfg(test)]
mod bucket_tests {
    #[test]
    fn fio_buckets() {
        let d: Vec<usize> = [1, 2, 3, 4, 7, 8, 31, 32, 63, 64, 1000]
            .iter()
            .map(|&x| super::depth_bucket(x))
            .collect();
        assert_eq!(d, vec![0, 1, 1, 2, 2, 3, 4, 5, 5, 6, 6]);
        let b: Vec<usize> = [0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65]
            .iter()
            .map(|&x| super::batch_bucket(x))
            .collect();
        assert_eq!(b, vec![0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]);
    }
}

/// Live counters the progress display reads; only this worker writes them.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Progress {
    pub ios: AtomicU64,
    pub bytes: AtomicU64,
    pub measuring: AtomicBool,
    pub done: AtomicBool,
}

/// What one worker does, computed before it starts.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    pub depth: u32,
    pub batch_submit: u32,
    pub complete_min: u32,
    pub read_pct: u32,
    pub bs: [BsPicker; 2],
    pub offsets: OffsetGen,
    /// Timeline, in ns after the common start.
    pub ramp_ns: u64,
    /// 0: no time limit.
    pub runtime_ns: u64,
    /// Stop after this many measured bytes (0: no limit).
    pub io_limit: u64,
    pub fsync_every: u32,
    pub fdatasync_every: u32,
    pub rate_iops: u64,
    pub continue_on_error: bool,
    pub fds: Vec<i32>,
    pub tick_ns: u64,
}

struct SlotMeta {
    stage_ns: u64,
    commit_ns: u64,
    offset: u64,
    len: u32,
    file: u32,
    write: bool,
}

#[cold]
#[inline(never)]
fn record_error(r: &mut WorkerResult, m: &SlotMeta, res: i32) {
    r.dirs[m.write as usize].errors += 1;
    if r.first_error.is_none() {
        r.first_error = Some(IoErrorInfo {
            file: m.file,
            offset: m.offset,
            len: m.len,
            write: m.write,
            errno: -res,
        });
    }
}

#[cold]
#[inline(never)]
fn do_sync(fd: i32, data_only: bool, st: &mut DirStats) {
    let t0 = now_ns();
    let r = if data_only {
        dioscope_sys::io::fdatasync(fd)
    } else {
        dioscope_sys::io::fsync(fd)
    };
    let dt = now_ns() - t0;
    match r {
        Ok(()) => {
            st.ios += 1;
            st.lat.record(dt);
            st.clat.record(dt);
        }
        Err(_) => st.errors += 1,
    }
}

/// Run one worker to the end of its timeline. `start_ns` is the common start
/// (all workers of a group share it); `stop` is raised by the runner.
pub fn run<E: Engine>(
    eng: &mut E,
    p: WorkerPlan,
    start_ns: u64,
    stop: &AtomicBool,
    prog: &Progress,
) -> WorkerResult {
    run_with_hook(eng, p, start_ns, stop, prog, &mut NoHook)
}

/// Per-block work around the I/O itself: filling a block before it is
/// written and checking it after it is read (verify). The worker loop is
/// generic over the hook, so a run without one pays nothing for it.
pub trait BlockHook {
    /// False for the no-op hook: the calls below are compiled out.
    const ACTIVE: bool;
    /// Fill `buf` (the whole block) before it is written at `offset` of file `file`.
    fn before_write(&mut self, _buf: &mut [u8], _file: u32, _offset: u64) {}
    /// Check `buf` (the `res` bytes read) after a read from `offset` of file `file` completed.
    fn after_read(&mut self, _buf: &[u8], _file: u32, _offset: u64) {}
    /// Whether the worker should stop issuing (verify_fatal after a bad block).
    fn should_stop(&self) -> bool {
        false
    }
}

/// No per-block work.
pub struct NoHook;
impl BlockHook for NoHook {
    const ACTIVE: bool = false;
}

/// [`run`] with a [`BlockHook`].
pub fn run_with_hook<E: Engine, H: BlockHook>(
    eng: &mut E,
    mut p: WorkerPlan,
    start_ns: u64,
    stop: &AtomicBool,
    prog: &Progress,
    hook: &mut H,
) -> WorkerResult {
    let depth = p.depth.max(1) as usize;
    let mut res = WorkerResult {
        ticks: Vec::with_capacity(4096),
        ..Default::default()
    };
    let mut meta: Vec<SlotMeta> = (0..depth)
        .map(|_| SlotMeta {
            stage_ns: 0,
            commit_ns: 0,
            offset: 0,
            len: 0,
            file: 0,
            write: false,
        })
        .collect();
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut staged_list: Vec<u32> = Vec::with_capacity(depth);
    let mut comps = vec![Completion::default(); depth];
    let batch = if p.batch_submit == 0 {
        depth
    } else {
        p.batch_submit as usize
    };
    let complete_min = p.complete_min.max(1);
    let ramp_end = start_ns + p.ramp_ns;
    let end = if p.runtime_ns > 0 {
        ramp_end + p.runtime_ns
    } else {
        u64::MAX
    };
    let mut measuring = p.ramp_ns == 0;
    let mut meas_start = start_ns;
    let mut cpu0 = usage_thread();
    let mut next_tick = meas_start + p.tick_ns;
    let mut inflight = 0usize;
    let mut issuing = true;
    let mut measured_bytes = 0u64;
    // Bytes issued while measuring: the size limit stops issuing, not
    // reaping, so a deep queue does not overshoot `size`.
    let mut issued_bytes = 0u64;
    let mut writes_since_sync = 0u32;
    let mut last_write_fd = p.fds.first().copied().unwrap_or(-1);
    let rate_gap = 1_000_000_000u64.checked_div(p.rate_iops).unwrap_or(0);
    let mut next_allowed = start_ns;
    let mut now = now_ns();
    if measuring {
        prog.measuring.store(true, Ordering::Relaxed);
    }

    loop {
        // Stage.
        if issuing && (stop.load(Ordering::Relaxed) || dioscope_sys::signal::stop_count() > 0) {
            issuing = false;
            res.interrupted = true;
        }
        if H::ACTIVE && issuing && hook.should_stop() {
            issuing = false;
        }
        let t_stage = now;
        staged_list.clear();
        while issuing && inflight < depth && staged_list.len() < batch {
            if rate_gap > 0 {
                if t_stage < next_allowed {
                    break;
                }
                next_allowed += rate_gap;
            }
            let write = match p.read_pct {
                100 => false,
                0 => true,
                pct => p.offsets.rng.below(100) >= pct as u64,
            };
            let len = p.bs[write as usize].pick(&mut p.offsets.rng);
            if p.io_limit > 0 && measuring {
                if issued_bytes >= p.io_limit {
                    issuing = false;
                    break;
                }
                issued_bytes += len;
            }
            let (file, offset) = p.offsets.next(len);
            let slot = free.pop().expect("a free slot while inflight < depth");
            let m = &mut meta[slot as usize];
            m.stage_ns = t_stage;
            m.offset = offset;
            m.len = len as u32;
            m.file = file;
            m.write = write;
            if H::ACTIVE && write {
                hook.before_write(
                    &mut eng.arena().slot_mut(slot)[..len as usize],
                    file,
                    offset,
                );
            }
            eng.stage(IoDesc {
                slot,
                write,
                file,
                offset,
                len: len as u32,
            });
            staged_list.push(slot);
            inflight += 1;
        }
        if inflight == 0 {
            if !issuing {
                break;
            }
            if rate_gap > 0 {
                // Ahead of the rate with nothing in flight: sleep until allowed.
                let wait = next_allowed.saturating_sub(now_ns());
                std::thread::sleep(std::time::Duration::from_nanos(wait));
                now = now_ns();
                continue;
            }
        }
        // Commit: wait only when the queue is full or nothing more will be issued.
        let min = if inflight >= depth || !issuing || (rate_gap > 0 && staged_list.is_empty()) {
            complete_min.min(inflight as u32)
        } else {
            0
        };
        let t_commit = now_ns();
        for &s in &staged_list {
            meta[s as usize].commit_ns = t_commit;
        }
        if let Err(e) = eng.commit(min) {
            res.first_error.get_or_insert(IoErrorInfo {
                file: 0,
                offset: 0,
                len: 0,
                write: false,
                errno: e.raw_os_error().unwrap_or(libc::EIO),
            });
            res.dirs[0].errors += 1;
            break;
        }
        now = now_ns();
        let n = eng.reap(&mut comps);
        if measuring {
            res.queue.depth_level[depth_bucket(inflight)] += 1;
            res.queue.submit_batches[batch_bucket(staged_list.len())] += 1;
            res.queue.complete_batches[batch_bucket(n)] += 1;
        }
        for c in &comps[..n] {
            let m = &meta[c.slot as usize];
            let d = m.write as usize;
            if c.res < 0 {
                record_error(&mut res, m, c.res);
                if !p.continue_on_error {
                    issuing = false;
                }
            } else {
                if H::ACTIVE && !m.write {
                    hook.after_read(
                        &eng.arena().slot_mut(c.slot)[..c.res as usize],
                        m.file,
                        m.offset,
                    );
                }
                if (c.res as u32) < m.len {
                    res.dirs[d].short_ios += 1;
                    if c.res == 0 {
                        // Nothing read or written: the target shrank or is
                        // full. An error, counted even when the job goes on.
                        record_error(
                            &mut res,
                            m,
                            if m.write { -libc::ENOSPC } else { -libc::EIO },
                        );
                        if !p.continue_on_error {
                            issuing = false;
                        }
                    }
                }
                if measuring {
                    let st = &mut res.dirs[d];
                    st.ios += 1;
                    st.bytes += c.res as u64;
                    st.slat.record(m.commit_ns - m.stage_ns);
                    st.clat.record(now - m.commit_ns);
                    st.lat.record(now - m.stage_ns);
                    measured_bytes += c.res as u64;
                }
            }
            if m.write {
                if let Some(&fd) = p.fds.get(m.file as usize) {
                    last_write_fd = fd;
                }
                writes_since_sync += 1;
            }
            free.push(c.slot);
        }
        inflight -= n;
        if last_write_fd < 0 {
            // null engine: nothing to sync.
        } else if p.fsync_every > 0 && writes_since_sync >= p.fsync_every {
            do_sync(last_write_fd, false, &mut res.sync);
            writes_since_sync = 0;
        } else if p.fdatasync_every > 0 && writes_since_sync >= p.fdatasync_every {
            do_sync(last_write_fd, true, &mut res.sync);
            writes_since_sync = 0;
        }

        // Timeline.
        if !measuring && now >= ramp_end {
            measuring = true;
            meas_start = now;
            next_tick = now + p.tick_ns;
            cpu0 = usage_thread();
            for d in &mut res.dirs {
                d.reset();
            }
            res.queue = QueueStats::default();
            res.sync.reset();
            prog.measuring.store(true, Ordering::Relaxed);
        }
        if measuring {
            if now >= next_tick {
                res.ticks.push(Tick {
                    t_ns: next_tick - meas_start,
                    ios: [res.dirs[0].ios, res.dirs[1].ios],
                    bytes: [res.dirs[0].bytes, res.dirs[1].bytes],
                    lat_sum_ns: [res.dirs[0].lat.sum_ns(), res.dirs[1].lat.sum_ns()],
                });
                next_tick += p.tick_ns;
            }
            prog.ios
                .store(res.dirs[0].ios + res.dirs[1].ios, Ordering::Relaxed);
            prog.bytes.store(measured_bytes, Ordering::Relaxed);
            if now >= end || (p.io_limit > 0 && issued_bytes >= p.io_limit) {
                issuing = false;
            }
        } else if now >= end {
            issuing = false;
        }
    }
    let end_ns = now_ns();
    res.runtime_ns = if measuring {
        end_ns.saturating_sub(meas_start)
    } else {
        0
    };
    res.thread_cpu = usage_thread().since(&cpu0);
    if res.runtime_ns > 0 {
        res.cpu_busy = (res.thread_cpu.user_us + res.thread_cpu.sys_us) as f64 * 1000.0
            / res.runtime_ns as f64;
    }
    prog.done.store(true, Ordering::Relaxed);
    res
}
