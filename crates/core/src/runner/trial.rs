//! One trial of a phase: start a thread per clone (runner/start.rs), let
//! them pass the gate together, wait out the ramp, measure until every
//! worker is done (polling the hooks, showing progress, raising the stop
//! on a signal), then join the workers and merge their results per job.

use super::clock::Clock;
use super::execute::Execution;
use super::result::{FileUse, ResolvedJob, WorkerSetupError};
use super::start::{panicked_worker, Gate};
use super::verifying::{run_hooked, trial_plan, HookOut};
use super::worker::{merge_ticks, Progress, WorkerPlan, WorkerResult};
use super::{logs, offload, pacing, thread_setup, watch};
use crate::engines::EngineSetupError;
use crate::job::JobSpec;
use crate::results::measure::{TrialEnv, TrialJob};
use crate::stats::cpu::SysCpu;
use crate::targets::TargetTable;
use dioscope_sys::proc::{usage_self, Usage};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The submitters of an offloaded worker (runner/offload.rs), each its
/// share of the worker's `whole` plan.
pub(super) fn offload_pool(
    spec: &JobSpec,
    whole: &WorkerPlan,
    files: &[FileUse],
    table: &TargetTable,
    clone: u32,
    trial: u32,
) -> Vec<offload::Submitter> {
    let n = offload::pool_size(spec, files);
    (0..n)
        .map(|k| {
            let sub = offload::sub_spec(spec, k, n);
            let mine = offload::sub_files(files, k, n, spec.max_bs());
            let (mut plan, hook) = trial_plan(&sub, &mine, table, clone, trial);
            offload::share_plan(&mut plan, whole, k, n);
            plan.log = None;
            plan.pace.flow.clone_from(&whole.pace.flow);
            (sub, plan, hook)
        })
        .collect()
}

/// The running workers of one trial.
struct Spawned {
    /// (job index, clone, thread).
    handles: Vec<(usize, usize, WorkerThread)>,
    /// A worker thread that could not be spawned (job index, clone, error).
    failed: Option<(usize, usize, std::io::Error)>,
    barrier: Arc<Gate>,
    stop: Arc<AtomicBool>,
    progs: Vec<Arc<Progress>>,
    /// Per worker (as `progs`): its job's position in the trial, its clone.
    owners: Vec<(usize, usize)>,
}

/// Process and system counters at the start or end of a measurement.
struct Snapshot {
    usage: Usage,
    cpu: SysCpu,
    ns: u64,
}

impl Snapshot {
    fn take(ns: u64) -> Snapshot {
        Snapshot {
            usage: usage_self(),
            cpu: SysCpu::read(),
            ns,
        }
    }
}

/// The longest ramp and the longest runtime of a group's jobs, in ns.
fn ramp_and_runtime(gjobs: &[&ResolvedJob]) -> (u64, u64) {
    let ramp = gjobs
        .iter()
        .map(|j| j.spec.ramp_time_us * 1000)
        .max()
        .unwrap_or(0);
    let runtime = gjobs
        .iter()
        .map(|j| j.spec.runtime_us * 1000)
        .max()
        .unwrap_or(0);
    (ramp, runtime)
}

impl<C: Clock> Execution<'_, C> {
    /// One trial of the jobs `idx` of group `g`. Returns the group's
    /// measurements and whether an I/O error ends the run.
    pub(super) fn run_trial(
        &mut self,
        g: u32,
        trial: u32,
        trials: u32,
        idx: &[usize],
    ) -> (TrialEnv, bool) {
        let gjobs: Vec<&ResolvedJob> = idx.iter().map(|&i| &self.jobs[i].resolved).collect();
        self.hooks.before_trial(g, trial, &gjobs, self.table);
        let mut sp = self.spawn(trial, idx);
        let spawn_failed = sp.failed.take().map(|(i, c, e)| {
            self.setup_error(
                trial,
                i,
                c,
                e.raw_os_error().unwrap_or(libc::EAGAIN),
                format!(
                    "starting a worker thread failed: {e}; the user's process/thread limit \
                     (`ulimit -u`, counting every process of this user) or \
                     /proc/sys/kernel/threads-max is reached: raise it, or lower numjobs"
                ),
            )
        });
        let watch = self.start_watch(idx, &sp.progs);
        self.hooks.workers_ready(g, trial);
        let (ramp, runtime) = ramp_and_runtime(&gjobs);
        // Without a ramp the workers measure from the barrier on, so the
        // process's and the system's counters are read before it opens (as
        // the device counters are, in the diagnosis's `workers_ready`): read
        // after it, by a thread the scheduler holds back while another
        // process has the CPUs, they missed what the workers had done by
        // then (a 40 ms trial's CPU time read as 1 % of it).
        let early = (ramp == 0).then(|| Snapshot::take(self.clock.peek()));
        sp.barrier.wait();
        let t0 = self.clock.peek();
        let all_done = || sp.progs.iter().all(|p| p.done.load(Ordering::Relaxed));
        self.clock.sleep_until(t0 + ramp, &all_done, &sp.stop);
        let before = early.unwrap_or_else(|| Snapshot::take(self.clock.peek()));
        self.hooks.measure_start(g, trial);
        let meter = ProgressLine {
            label: format!("[group {g} trial {}/{trials}]", trial + 1),
            t0,
            total_ns: ramp + runtime,
            timed: runtime > 0,
            last: (self.clock.peek(), 0, 0),
        };
        let stonewalled = self.measure_until_done(g, trial, &sp, &before, meter);
        if self.opts.progress {
            eprint!("\r\x1b[K");
        }
        let after = Snapshot::take(self.clock.peek());
        let (mut per_job, setup_failed) = self.join(sp.handles, idx);
        let end_run = watch
            .map(|w| self.keep_watch(w.finish(), g, idx))
            .unwrap_or(false);
        let setup_failed =
            setup_failed.map(|(i, c, e)| self.setup_error(trial, i, c, e.errno, e.msg));
        if stonewalled && !self.clock.stop_signalled() {
            // Stopped by the hooks (another rank finished first), not by a signal.
            for tj in &mut per_job {
                tj.interrupted = false;
            }
        }
        let ios: u64 = per_job.iter().map(|t| t.dirs[0].ios + t.dirs[1].ios).sum();
        self.hooks.measure_end(g, trial, ios);
        let env = TrialEnv {
            wall_ns: after.ns - before.ns,
            process: after.usage.since(&before.usage),
            system: after.cpu.since(&before.cpu),
            ios,
        };
        let gjobs: Vec<&ResolvedJob> = idx.iter().map(|&i| &self.jobs[i].resolved).collect();
        self.hooks.after_trial(g, trial, &gjobs, self.table);
        if let Some(e) = spawn_failed.or(setup_failed) {
            self.setup_error = Some(e);
            return (env, true);
        }
        let stop_now = self.keep_trial(per_job, idx, end_run);
        (env, stop_now)
    }

    /// The setup error of clone `c` of job `i` in `trial`.
    fn setup_error(
        &self,
        trial: u32,
        i: usize,
        c: usize,
        errno: i32,
        msg: String,
    ) -> WorkerSetupError {
        WorkerSetupError {
            group: self.jobs[i].resolved.groupid,
            trial,
            job: self.jobs[i].resolved.spec.name.clone(),
            clone: c as u32,
            errno,
            msg,
        }
    }

    /// Start the watcher of the jobs `idx` (steady state, early ends).
    fn start_watch(&self, idx: &[usize], progs: &[Arc<Progress>]) -> Option<watch::Watch> {
        let watched: Vec<watch::Watched> = idx
            .iter()
            .map(|&i| watch::Watched {
                spec: &self.jobs[i].resolved.spec,
                clones: self.jobs[i].resolved.clones.len(),
                groupid: self.jobs[i].resolved.groupid,
            })
            .collect();
        watch::Watch::start(&watched, progs)
    }

    /// Wait until every worker of `sp` is done: poll the hooks (which may
    /// stop the trial), raise the stop on a signal, and each second call
    /// the hooks and show progress. True: the hooks stopped it.
    fn measure_until_done(
        &mut self,
        g: u32,
        trial: u32,
        sp: &Spawned,
        before: &Snapshot,
        mut meter: ProgressLine,
    ) -> bool {
        let all_done = || sp.progs.iter().all(|p| p.done.load(Ordering::Relaxed));
        let poll = self.hooks.poll_every_ns().clamp(1_000_000, 1_000_000_000);
        let mut next_second = self.clock.peek() + 1_000_000_000;
        let mut stonewalled = false;
        let measured = || {
            sp.progs.iter().fold((0, 0), |(i, b), p| {
                (
                    i + p.ios.load(Ordering::Relaxed),
                    b + p.bytes.load(Ordering::Relaxed),
                )
            })
        };
        let snaps = super::status::Snapshots {
            progs: &sp.progs,
            owners: &sp.owners,
            since: (before.ns, before.usage, before.cpu),
        };
        loop {
            let done = all_done();
            if !done {
                self.hooks.status(g, trial, &snaps);
            }
            let (ios, bytes) = measured();
            if self.hooks.stop_requested(g, trial, ios, bytes, done) {
                stonewalled = true;
                sp.stop.store(true, Ordering::Relaxed);
            }
            if done {
                break;
            }
            self.clock
                .sleep_until(self.clock.peek() + poll, &all_done, &sp.stop);
            if self.clock.stop_signalled() {
                sp.stop.store(true, Ordering::Relaxed);
            }
            if self.clock.peek() < next_second {
                continue;
            }
            next_second += 1_000_000_000;
            if !all_done() {
                self.hooks.during_trial(g, trial);
            }
            if self.opts.progress {
                meter.show(&sp.progs, self.clock.peek());
            }
        }
        stonewalled
    }

    /// Keep each job's trial; true if the run ends now (`end_run`, or an
    /// I/O error a job stops on).
    fn keep_trial(&mut self, per_job: Vec<TrialJob>, idx: &[usize], end_run: bool) -> bool {
        let mut stop_now = end_run;
        for (pos, tj) in per_job.into_iter().enumerate() {
            let job = &mut self.jobs[idx[pos]];
            self.interrupted |= tj.interrupted;
            stop_now |= tj.fatal_errno != 0;
            job.trials.push(tj);
        }
        stop_now
    }

    /// Keep what the trial's watcher found (steady state per clone, why
    /// jobs ended early, what `exitall` stopped beyond phase `g`). True:
    /// `exit_what=all` ends the run.
    fn keep_watch(&mut self, out: watch::WatchOut, g: u32, idx: &[usize]) -> bool {
        // fio marks the jobs not yet started as terminated too: those of the
        // finisher's reporting group (exit_what=group), or all (=all).
        for (j, t) in self.jobs.iter().zip(self.terminated.iter_mut()) {
            let r = &j.resolved;
            if r.phase > g && (out.end_run || out.ended_groups.contains(&r.groupid)) {
                *t = true;
            }
        }
        let mut w = 0;
        for &i in idx {
            let t = self.jobs[i].trials.len();
            for c in 0..self.jobs[i].resolved.clones.len() {
                if let Some(s) = out.steady.get(w).cloned().flatten() {
                    pacing::TrialPace::clone_mut(&mut self.jobs[i].pace, t, c).steady = Some(s);
                }
                w += 1;
            }
        }
        for n in out.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        out.end_run
    }

    /// Start one thread per clone of the jobs `idx`; they wait at the barrier.
    fn spawn(&self, trial: u32, idx: &[usize]) -> Spawned {
        let nworkers: usize = idx
            .iter()
            .map(|&i| self.jobs[i].resolved.clones.len())
            .sum();
        let barrier = Arc::new(Gate::new(nworkers + 1));
        let stop = Arc::new(AtomicBool::new(false));
        // `--status-interval`: a snapshot cell per worker, only then.
        let snapshots = self.hooks.wants_snapshots();
        let board = self.hooks.delivery_board();
        let progs: Vec<Arc<Progress>> = (0..nworkers)
            .map(|_| {
                Arc::new(if snapshots {
                    Progress::with_snapshot()
                } else {
                    Progress::default()
                })
            })
            .collect();
        let owners: Vec<(usize, usize)> = idx
            .iter()
            .enumerate()
            .flat_map(|(pos, &i)| (0..self.jobs[i].resolved.clones.len()).map(move |c| (pos, c)))
            .collect();
        let mut handles = Vec::new();
        let mut failed = None;
        let mut k = 0;
        let flows = pacing::Flows::for_trial(idx.iter().map(|&i| {
            let r = &self.jobs[i].resolved;
            (&r.spec, r.clones.len())
        }));
        'jobs: for &i in idx {
            let rj = &self.jobs[i].resolved;
            for (c, files) in rj.clones.iter().enumerate() {
                let (mut plan, hook) = trial_plan(&rj.spec, files, self.table, c as u32, trial);
                // fio numbers logs 1..N over every job's clones.
                let index = rj.first_worker + c + 1;
                plan.log = logs::plan_for(&rj.spec, index, trial);
                plan.pace.flow = flows.member(&rj.spec);
                let spec = thread_setup::placed(&rj.spec, index - 1);
                if let Some(board) = &board {
                    // One thread runs the plan (not an offloaded job's pool).
                    if crate::engines::caps(spec.ioengine).traced == crate::engines::Traced::Uring
                        && !spec.submit_offload
                    {
                        plan.delivery = board.tap(k as u32);
                    }
                }
                let (b, s, p) = (barrier.clone(), stop.clone(), progs[k].clone());
                let clock = self.clock.clone();
                k += 1;
                let pool = if spec.submit_offload {
                    offload_pool(&spec, &plan, files, self.table, c as u32, trial)
                } else {
                    Vec::new()
                };
                let spawned = std::thread::Builder::new()
                    .name(format!("{}.{}", spec.name, c))
                    .spawn(move || {
                        if pool.is_empty() {
                            run_hooked(&spec, plan, &b, &s, &p, hook, clock)
                        } else {
                            offload::run_pool(pool, &b, &s, &p, clock)
                        }
                    });
                match spawned {
                    Ok(h) => handles.push((i, c, h)),
                    Err(e) => {
                        // The threads already started must not run: stop
                        // them at the gate, which no longer waits for the
                        // ones that will never come.
                        stop.store(true, Ordering::Relaxed);
                        for p in &progs[k - 1..] {
                            p.done.store(true, Ordering::Relaxed);
                        }
                        barrier.shrink(nworkers - (k - 1));
                        failed = Some((i, c, e));
                        break 'jobs;
                    }
                }
            }
        }
        Spawned {
            handles,
            failed,
            barrier,
            stop,
            progs,
            owners,
        }
    }

    /// Wait for the workers and merge their results per job (in `idx` order).
    /// Also the first worker that could not start (job index, clone, why).
    fn join(
        &mut self,
        handles: Vec<(usize, usize, WorkerThread)>,
        idx: &[usize],
    ) -> (Vec<TrialJob>, Option<(usize, usize, EngineSetupError)>) {
        let mut per_job: Vec<TrialJob> = idx.iter().map(|_| TrialJob::default()).collect();
        let mut failed = None;
        for (i, clone, h) in handles {
            let (mut r, out) = h
                .join()
                .unwrap_or_else(|_| (panicked_worker(), HookOut::default()));
            if let Some(e) = r.setup_failed.take() {
                failed.get_or_insert((i, clone, e));
            }
            self.keep_hook_out(i, clone, out);
            if let Some(st) = r.steps.take() {
                let t = self.jobs[i].trials.len();
                pacing::TrialPace::clone_mut(&mut self.jobs[i].pace, t, clone).steps = Some(st);
            }
            if let Some(d) = r.latency_depth {
                let t = self.jobs[i].trials.len();
                pacing::TrialPace::clone_mut(&mut self.jobs[i].pace, t, clone).latency_depth =
                    Some(d);
            }
            if let Some(n) = &r.setup_note {
                if !self.notes.contains(n) {
                    self.notes.push(n.clone());
                }
            }
            if r.ignored_errors > 0 {
                let name = &self.jobs[i].resolved.spec.name;
                self.notes.push(format!(
                    "job '{name}' (clone {clone}, trial {}): {} I/O error(s) ignore_error lists \
                     were ignored",
                    self.jobs[i].trials.len() + 1,
                    r.ignored_errors
                ));
            }
            let pos = idx.iter().position(|&x| x == i).expect("job index");
            merge_worker(&mut per_job[pos], r, &self.jobs[i].resolved, clone);
        }
        (per_job, failed)
    }
}

/// Merge the result of clone `clone` of `job` into the job's trial result
/// (also `--status-interval`'s interim one, runner/status.rs).
pub(super) fn merge_worker(tj: &mut TrialJob, r: WorkerResult, job: &ResolvedJob, clone: usize) {
    if job.reports_clones() {
        // Kept apart too, for one result entry per clone (as fio).
        let mut one = TrialJob::default();
        one.add_worker(r, job);
        tj.absorb(&one);
        let c = &mut tj.clones;
        if c.len() <= clone {
            c.resize_with(clone + 1, TrialJob::default);
        }
        c[clone] = one;
    } else {
        tj.add_worker(r, job);
    }
}

type WorkerThread = std::thread::JoinHandle<(WorkerResult, HookOut)>;

impl TrialJob {
    /// Merge one worker (clone) of `job` into the job's trial result.
    fn add_worker(&mut self, r: WorkerResult, job: &ResolvedJob) {
        for (a, b) in self.dirs.iter_mut().zip(&r.dirs) {
            a.merge(b);
        }
        self.sync.merge(&r.sync);
        self.trim.merge(&r.trim);
        self.runtime_ns = self.runtime_ns.max(r.runtime_ns);
        self.thread_cpu.add(&r.thread_cpu);
        self.max_worker_cpu = self.max_worker_cpu.max(r.cpu_busy);
        self.interrupted |= r.interrupted;
        self.workers += 1;
        self.queue.add(&r.queue);
        merge_ticks(&mut self.ticks, &r.ticks);
        if self.fatal_errno == 0 {
            self.fatal_errno = r.fatal_errno;
        }
        self.ignored_errors += r.ignored_errors;
        if self.first_ignored == 0 {
            self.first_ignored = r.first_ignored;
        }
        if self.first_error.is_none() {
            if let Some(e) = r.first_error {
                let path = job
                    .clones
                    .first()
                    .and_then(|f| f.get(e.file as usize))
                    .map(|f| f.path.display().to_string())
                    .unwrap_or_default();
                self.first_error = Some((e, path));
            }
        }
    }
}

/// The live line on stderr: elapsed, remaining, IOPS and bandwidth since the last update.
struct ProgressLine {
    label: String,
    t0: u64,
    total_ns: u64,
    timed: bool,
    /// (time, ios, bytes) at the last update.
    last: (u64, u64, u64),
}

impl ProgressLine {
    fn show(&mut self, progs: &[Arc<Progress>], now: u64) {
        let ios: u64 = progs.iter().map(|p| p.ios.load(Ordering::Relaxed)).sum();
        let bytes: u64 = progs.iter().map(|p| p.bytes.load(Ordering::Relaxed)).sum();
        let dt = (now - self.last.0).max(1) as f64 / 1e9;
        let el = (now - self.t0) as f64 / 1e9;
        let total = self.total_ns as f64 / 1e9;
        let remain = if self.timed {
            format!(" remaining {:.0}s", (total - el).max(0.0))
        } else {
            String::new()
        };
        eprint!(
            "\r\x1b[K{} elapsed {:.0}s{remain}  IOPS {}  BW {}/s",
            self.label,
            el,
            crate::results::human_count((ios.saturating_sub(self.last.1)) as f64 / dt),
            crate::results::human_rate((bytes.saturating_sub(self.last.2)) as f64 / dt)
        );
        self.last = (now, ios, bytes);
    }
}
