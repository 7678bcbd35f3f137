//! Starting one worker on its thread: its CPU and memory placement, I/O
//! buffers and engine, then the common start line (`Gate`) and the worker
//! loop. A worker that cannot start raises the trial's stop before the
//! gate, so no worker of that trial does any I/O.

use super::clock::Clock;
use super::thread_setup;
use super::worker::{self, BlockHook, IoErrorInfo, Progress, WorkerPlan, WorkerResult};
use crate::engines::{Engine, EngineSetupError, WithEngine};
use crate::job::JobSpec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// The start line of a trial's workers: like `std::sync::Barrier`, but the
/// runner can lower the count when a worker thread could not be spawned
/// (a `Barrier` would then wait forever).
pub struct Gate {
    state: Mutex<(usize, usize)>,
    cv: Condvar,
}

impl Gate {
    pub fn new(n: usize) -> Gate {
        Gate {
            state: Mutex::new((0, n)),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, usize)> {
        // A poisoned gate only means a worker panicked: the counts are intact.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until every expected party arrived (one use per gate).
    pub fn wait(&self) {
        let mut st = self.lock();
        st.0 += 1;
        if st.0 >= st.1 {
            self.cv.notify_all();
            return;
        }
        while st.0 < st.1 {
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// `n` expected parties will never come.
    pub(super) fn shrink(&self, n: usize) {
        let mut st = self.lock();
        st.1 = st.1.saturating_sub(n);
        if st.0 >= st.1 {
            self.cv.notify_all();
        }
    }
}

/// Build the job's engine on this thread and run the worker.
pub(super) fn run_worker<H: BlockHook, C: Clock>(
    j: &JobSpec,
    mut plan: WorkerPlan,
    barrier: &Gate,
    stop: &AtomicBool,
    prog: &Progress,
    hook: &mut H,
    clock: C,
) -> WorkerResult {
    // Counted from before the gate, so a cpuio job with exit_on_io_done
    // sees the I/O workers that start with it.
    let _io_job = crate::engines::IoJobGuard::new(j.ioengine);
    // A worker that cannot start stops its trial before anyone's first I/O:
    // `stop` is raised before the gate, so every worker sees it after.
    let fail = |e: EngineSetupError| {
        stop.store(true, Ordering::Relaxed);
        barrier.wait();
        prog.done.store(true, Ordering::Relaxed);
        WorkerResult {
            setup_failed: Some(e),
            ..Default::default()
        }
    };
    let _thread = match thread_setup::setup_thread(j) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    // A replay's I/Os are as long as the log says.
    let buf_len = plan
        .replay
        .as_ref()
        .map_or(0, |l| l.max_len())
        .max(j.max_bs());
    let arena = match thread_setup::arena(j, plan.depth, buf_len).and_then(|a| {
        thread_setup::exec_hook(j, "prerun")?;
        Ok(a)
    }) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let mut opts = worker::engine_opts(j, plan.depth);
    opts.ud_tag = plan.delivery.as_ref().map_or(0, |t| t.tag());
    let fds = plan.fds.clone();
    let names = std::mem::take(&mut plan.names);
    let startdelay_us = plan.pace.start_delay_us;
    let run = RunOnEngine {
        plan,
        barrier,
        startdelay_us,
        stop,
        prog,
        hook,
        clock,
    };
    match j.ioengine.with(arena, &fds, &names, &opts, run) {
        Ok((mut r, note)) => {
            if note.is_some() {
                r.setup_note = note;
            }
            if let Err(e) = thread_setup::exec_hook(j, "postrun") {
                r.setup_note = Some(e.msg);
            }
            r
        }
        Err(e) => fail(e),
    }
}

/// What a worker does once its engine is built: wait for the common start,
/// then run its loop.
struct RunOnEngine<'a, H: BlockHook, C: Clock> {
    plan: WorkerPlan,
    barrier: &'a Gate,
    startdelay_us: u64,
    stop: &'a AtomicBool,
    prog: &'a Progress,
    hook: &'a mut H,
    clock: C,
}

impl<H: BlockHook, C: Clock> WithEngine for RunOnEngine<'_, H, C> {
    type Out = WorkerResult;
    fn run<E: Engine>(self, e: &mut E) -> WorkerResult {
        self.barrier.wait();
        if self.stop.load(Ordering::Relaxed) {
            // Another worker of the trial could not start (or a stop signal
            // came first): no I/O.
            self.prog.done.store(true, Ordering::Relaxed);
            return WorkerResult::default();
        }
        if self.startdelay_us > 0 {
            // In slices: a stop signal during the delay ends it at once.
            let c = &self.clock;
            let end = c.now() + self.startdelay_us * 1000;
            while c.now() < end && !self.stop.load(Ordering::Relaxed) && !c.stop_signalled() {
                c.sleep(end.saturating_sub(c.now()).min(50_000_000));
            }
        }
        let t = self.clock.now();
        worker::run_clocked(e, self.plan, t, self.stop, self.prog, self.hook, self.clock)
    }
}

pub(super) fn panicked_worker() -> WorkerResult {
    WorkerResult {
        first_error: Some(IoErrorInfo {
            file: 0,
            offset: 0,
            len: 0,
            write: false,
            errno: libc::EIO,
        }),
        setup_note: Some(
            "a worker thread panicked; this is a dioscope bug, please report it".into(),
        ),
        fatal_errno: libc::EIO,
        ..Default::default()
    }
}
