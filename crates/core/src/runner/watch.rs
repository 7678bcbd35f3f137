//! The trial's watcher: a thread beside the workers that ends jobs early —
//! steady state reached (`ss`, runner/steadystate.rs), a job of a run with
//! `exitall` finished, a job with `exitall_on_error` failed. What such a job
//! stops is its `exit_what`, as fio: its reporting group (`group`), every
//! running job (`stonewall`), or every job (`all`).
//!
//! It reads only what the workers publish for the progress line (their
//! [`Progress`]: I/O and byte counts, measuring, done, failed) and raises a
//! worker's `halt` flag, which the worker reads once per batch: the hot path
//! gains no lock and no shared write. The thread exists only in trials whose
//! jobs use one of these options.

use super::steadystate::{Detector, SteadyReport};
use super::worker::Progress;
use crate::job::options::pacing::ExitWhat;
use crate::job::JobSpec;
use dioscope_sys::clock::now_ns;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How often the watcher looks: exitall stops the others within this.
const POLL_NS: u64 = 10_000_000;
/// One steady-state sample a second, as fio.
const SAMPLE_NS: u64 = 1_000_000_000;

/// What the watcher found in one trial.
#[derive(Debug, Default)]
pub struct WatchOut {
    /// Per worker, in spawn order: its steady-state judgement (when its
    /// job sets `ss_dur`; with `group_reporting` the group's, for each member).
    pub steady: Vec<Option<SteadyReport>>,
    /// `exitall` with `exit_what=all` fired: no later trial or phase runs.
    pub(super) end_run: bool,
    /// Reporting groups `exit_what=group` stopped: their jobs in later
    /// phases (behind a `wait_for`) never start.
    pub(super) ended_groups: Vec<u32>,
    /// What ended jobs early, for the report.
    pub notes: Vec<String>,
}

/// A running watcher.
pub struct Watch {
    handle: JoinHandle<WatchOut>,
    quit: Arc<AtomicBool>,
}

/// One job of the trial, as the runner hands it to the watcher.
pub struct Watched<'a> {
    pub spec: &'a JobSpec,
    /// Its workers (one per clone), in spawn order.
    pub clones: usize,
    /// fio's reporting group.
    pub groupid: u32,
}

/// The per-job facts the watcher needs.
#[derive(Debug, Clone)]
struct JobFacts {
    name: String,
    groupid: u32,
    /// The run has `exitall`: this job's end stops what `exit_what` names.
    exitall: bool,
    exit_what: ExitWhat,
    exit_on_error: bool,
}

/// Steady-state detection over some workers (one clone, or a reporting group).
struct Unit {
    workers: Vec<usize>,
    det: Detector,
    /// `ss_ramp` beyond `ramp_time`: counted from the end of the ramp.
    extra_ns: u64,
    begin_at: Option<u64>,
    /// (time, [I/Os, bytes, completion latency ns, latencies]) at the last sample.
    last: Option<(u64, [u64; 4])>,
    attained_at: Option<u64>,
    over: bool,
}

fn wants_watch(j: &JobSpec) -> bool {
    j.ss_dur_us > 0 || j.exitall || j.exitall_on_error
}

impl Watch {
    /// Start watching the workers of a trial: `jobs` in spawn order,
    /// `progs` one per worker in the same order. None when no job needs
    /// watching.
    pub fn start(jobs: &[Watched], progs: &[Arc<Progress>]) -> Option<Watch> {
        if !jobs.iter().any(|w| wants_watch(w.spec)) {
            return None;
        }
        let mut facts = Vec::new();
        let mut job_of = Vec::new();
        let mut units: Vec<Unit> = Vec::new();
        // (reporting group, its steady-state unit) under group_reporting.
        let mut group_units: Vec<(u32, usize)> = Vec::new();
        let mut w = 0;
        for (k, wj) in jobs.iter().enumerate() {
            let (j, clones) = (wj.spec, &wj.clones);
            facts.push(JobFacts {
                name: j.name.clone(),
                groupid: wj.groupid,
                exitall: j.exitall,
                exit_what: j.exit_what,
                exit_on_error: j.exitall_on_error,
            });
            let workers: Vec<usize> = (w..w + clones).collect();
            job_of.extend(std::iter::repeat_n(k, *clones));
            w += clones;
            if j.ss_dur_us == 0 {
                continue;
            }
            let unit = |ws: Vec<usize>| Unit {
                workers: ws,
                det: Detector::new(j.steadystate, (j.ss_dur_us / 1_000_000) as usize),
                extra_ns: j.ss_ramp_us.saturating_sub(j.ramp_time_us) * 1000,
                begin_at: None,
                last: None,
                attained_at: None,
                over: false,
            };
            if j.group_reporting {
                // fio: with group_reporting the group is judged as one.
                match group_units.iter().find(|(g, _)| *g == wj.groupid) {
                    Some(&(_, u)) => units[u].workers.extend(workers),
                    None => {
                        group_units.push((wj.groupid, units.len()));
                        units.push(unit(workers));
                    }
                }
            } else {
                units.extend(workers.into_iter().map(|x| unit(vec![x])));
            }
        }
        let progs: Vec<Arc<Progress>> = progs.to_vec();
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let handle = std::thread::Builder::new()
            .name("dioscope-watch".into())
            .spawn(move || run(facts, job_of, units, progs, &q))
            .ok()?;
        Some(Watch { handle, quit })
    }

    /// Wait for the watcher (the workers are done) and take its findings.
    pub fn finish(self) -> WatchOut {
        // Release: the workers' `done` (the runner joined them) is seen
        // by the watcher once it sees `quit`.
        self.quit.store(true, Ordering::Release);
        self.handle.join().unwrap_or_default()
    }
}

fn run(
    facts: Vec<JobFacts>,
    job_of: Vec<usize>,
    mut units: Vec<Unit>,
    progs: Vec<Arc<Progress>>,
    quit: &AtomicBool,
) -> WatchOut {
    let t0 = now_ns();
    let mut out = WatchOut {
        steady: (0..progs.len()).map(|_| None).collect(),
        ..Default::default()
    };
    // Workers whose end was already acted on.
    let mut seen = vec![false; progs.len()];
    loop {
        // Read before `done`: once the runner says quit, every worker is
        // done, so this last pass sees every end (ended_groups, end_run).
        let quitting = quit.load(Ordering::Acquire);
        let now = now_ns();
        let done: Vec<bool> = progs
            .iter()
            .map(|p| p.done.load(Ordering::Relaxed))
            .collect();
        for w in 0..progs.len() {
            if !done[w] || seen[w] {
                continue;
            }
            seen[w] = true;
            let f = &facts[job_of[w]];
            let failed = progs[w].failed.load(Ordering::Relaxed);
            if f.exitall || (f.exit_on_error && failed) {
                exit_what(f, failed, &facts, &job_of, &progs, &done, &mut out);
            }
        }
        for u in units.iter_mut().filter(|u| !u.over) {
            sample(u, &progs, &done, now);
        }
        if quitting || done.iter().all(|&d| d) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_nanos(POLL_NS));
    }
    for u in units {
        for &w in &u.workers {
            out.steady[w] = Some(SteadyReport {
                detector: u.det.clone(),
                attained_after_s: u.attained_at.map(|t| t.saturating_sub(t0) as f64 / 1e9),
            });
        }
    }
    out
}

/// A job ended in a run with `exitall` (or failed with `exitall_on_error`):
/// halt what its `exit_what` names, as fio's terminate does, and say so
/// once when it stopped anything still running.
fn exit_what(
    f: &JobFacts,
    failed: bool,
    facts: &[JobFacts],
    job_of: &[usize],
    progs: &[Arc<Progress>],
    done: &[bool],
    out: &mut WatchOut,
) {
    let hits = |x: usize| match f.exit_what {
        ExitWhat::Group => facts[job_of[x]].groupid == f.groupid,
        ExitWhat::Stonewall | ExitWhat::All => true,
    };
    let mut stopped = 0;
    for (x, p) in progs.iter().enumerate().filter(|&(x, _)| hits(x)) {
        if !done[x] && !p.halt.swap(true, Ordering::Relaxed) {
            stopped += 1;
        }
    }
    let what = match f.exit_what {
        ExitWhat::Group => {
            if !out.ended_groups.contains(&f.groupid) {
                out.ended_groups.push(f.groupid);
            }
            format!("the other jobs of reporting group {}", f.groupid)
        }
        ExitWhat::Stonewall => "every running job (exit_what=stonewall)".to_string(),
        ExitWhat::All => {
            let first = !out.end_run;
            out.end_run = true;
            if first && stopped == 0 {
                out.notes.push(format!(
                    "job '{}' ended: exit_what=all: no later phase or trial runs",
                    f.name
                ));
            }
            "every job (exit_what=all: no later phase or trial runs)".to_string()
        }
    };
    if stopped > 0 {
        out.notes.push(if failed && f.exit_on_error {
            format!("job '{}' failed: exitall_on_error stopped {what}", f.name)
        } else {
            format!("job '{}' finished: exitall stopped {what}", f.name)
        });
    }
}

/// Take a unit's sample when one is due, and stop its workers when steady.
fn sample(u: &mut Unit, progs: &[Arc<Progress>], done: &[bool], now: u64) {
    if u.workers.iter().all(|&w| done[w]) {
        u.over = true;
        return;
    }
    let sums = || {
        u.workers.iter().fold([0u64; 4], |s, &w| {
            let p = &progs[w];
            [
                s[0] + p.ios.load(Ordering::Relaxed),
                s[1] + p.bytes.load(Ordering::Relaxed),
                s[2] + p.clat_ns.load(Ordering::Relaxed),
                s[3] + p.clat_n.load(Ordering::Relaxed),
            ]
        })
    };
    let Some(begin) = u.begin_at else {
        // The workers publish counts once measuring (after ramp_time).
        if u.workers
            .iter()
            .any(|&w| progs[w].measuring.load(Ordering::Relaxed))
        {
            u.begin_at = Some(now + u.extra_ns);
        }
        return;
    };
    let Some((t, before)) = u.last else {
        if now >= begin {
            u.last = Some((now, sums()));
        }
        return;
    };
    if now < t + SAMPLE_NS {
        return;
    }
    let s = sums();
    let dt = (now - t) as f64;
    let per_s = |n: u64| (n as f64 * 1e9 / dt).round() as u64;
    let d = |k: usize| s[k].saturating_sub(before[k]);
    // fio: the mean completion latency of the I/Os completed this second.
    let lat = d(2).checked_div(d(3)).unwrap_or(0);
    u.last = Some((now, s));
    if u.det.push(per_s(d(0)), per_s(d(1)), lat) {
        u.attained_at = Some(now);
        u.over = true;
        for &w in &u.workers {
            progs[w].halt.store(true, Ordering::Relaxed);
        }
    }
}
