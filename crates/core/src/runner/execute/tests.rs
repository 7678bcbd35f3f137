//! Stage two in unit tests: the null engine (no file, no device) and a
//! [`FakeClock`] whose time moves only as the workers read it (1 ms a
//! reading), so a job of seconds runs in milliseconds and every window is
//! exact. What they pin: the ramp is not measured, `time_based` stops at
//! its runtime, `loops` repeats the pass, a stonewall phase starts after
//! the one before it ends, a stop signal mid-trial marks the trial
//! interrupted and ends the run, and `trials=auto` stops on convergence or
//! on its limits.

use super::*;
use crate::job::Plan;
use crate::runner::clock::FakeClock;
use crate::runner::fixtures;
use crate::runner::hooks::NoHooks;
use crate::runner::resolve::{resolve, Facts, JobFiles};
use crate::stats::significance::AutoTrials;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// One worker reading moves time on by this much.
const STEP: u64 = MS;

fn run_plan(
    plan: &Plan,
    opts: &RunOptions,
    hooks: &mut dyn TrialHooks,
    clock: FakeClock,
) -> RunResult {
    let files = JobFiles::of(plan).unwrap();
    let resolved = resolve(plan, &files, &Facts::default()).unwrap();
    execute_on(resolved, &TargetTable::default(), opts, hooks, clock)
}

/// `--ioengine=null` and `args`, on a fake clock.
fn run(args: &[&str], clock: FakeClock) -> RunResult {
    let mut all = vec!["--ioengine=null", "--bs=4k"];
    all.extend(args);
    run_plan(
        &fixtures::plan(&all),
        &RunOptions::default(),
        &mut NoHooks,
        clock,
    )
}

fn ios(t: &TrialJob) -> u64 {
    t.dirs[0].ios + t.dirs[1].ios
}

/// `x` is within `[lo, lo + slack)`.
fn near(x: u64, lo: u64, slack: u64) -> bool {
    x >= lo && x < lo + slack
}

#[test]
fn the_ramp_is_not_measured() {
    let r = run(
        &[
            "--time_based=1",
            "--runtime=5s",
            "--ramp_time=2s",
            "--size=1m",
        ],
        FakeClock::new(STEP),
    );
    let (t, env) = (&r.jobs[0].trials[0], &r.phases[0].trials[0]);
    // 5 s measured, not the 7 s the job ran.
    assert!(
        near(t.runtime_ns, 5 * S, 10 * MS),
        "job runtime {}",
        t.runtime_ns
    );
    assert!(
        near(env.wall_ns, 5 * S, 10 * MS),
        "trial wall {}",
        env.wall_ns
    );
    // The I/Os of the ramp are forgotten: about one per 2 ms measured
    // (a reading before and after each commit), none of the ramp's.
    let per = t.runtime_ns / ios(t).max(1);
    assert!(near(per, 2 * MS, MS / 10), "{} I/Os, {per} ns each", ios(t));
    assert!(!t.interrupted && !r.interrupted);
    // Without the ramp: the same measured window.
    let r = run(
        &["--time_based=1", "--runtime=5s", "--size=1m"],
        FakeClock::new(STEP),
    );
    assert!(near(r.phases[0].trials[0].wall_ns, 5 * S, 10 * MS));
}

#[test]
fn time_based_stops_at_its_runtime_and_wraps_around_the_region() {
    let r = run(
        &["--time_based=1", "--runtime=3s", "--size=64k"],
        FakeClock::new(STEP),
    );
    let t = &r.jobs[0].trials[0];
    assert!(near(t.runtime_ns, 3 * S, 10 * MS), "{}", t.runtime_ns);
    // 16 blocks a pass: it went round many times.
    assert!(ios(t) > 16 * 50, "{} I/Os", ios(t));
    // Not time_based: one pass, whatever the runtime.
    let r = run(&["--runtime=3s", "--size=64k"], FakeClock::new(STEP));
    assert_eq!(ios(&r.jobs[0].trials[0]), 16);
}

#[test]
fn loops_repeat_the_pass() {
    for (loops, want) in [("1", 16), ("3", 48)] {
        let r = run(
            &["--size=64k", "--rw=randread", &format!("--loops={loops}")],
            FakeClock::new(STEP),
        );
        assert_eq!(ios(&r.jobs[0].trials[0]), want, "loops={loops}");
    }
}

/// What the hooks saw: per trial its phase, its jobs' names and the
/// (fake) times its measurement started and ended.
struct Seen {
    clock: FakeClock,
    trials: Vec<(u32, Vec<String>, u64, u64)>,
}

impl TrialHooks for Seen {
    fn before_trial(&mut self, g: u32, _t: u32, jobs: &[&ResolvedJob], _: &TargetTable) {
        let names = jobs.iter().map(|j| j.spec.name.clone()).collect();
        self.trials.push((g, names, 0, 0));
    }
    fn measure_start(&mut self, _g: u32, _t: u32) {
        self.trials.last_mut().unwrap().2 = self.clock.peek();
    }
    fn measure_end(&mut self, _g: u32, _t: u32, _ios: u64) {
        self.trials.last_mut().unwrap().3 = self.clock.peek();
    }
}

fn three_jobs(stonewall: bool) -> Seen {
    let text = format!(
        "[global]\nioengine=null\ntime_based=1\nsize=1m\n\
         [a]\nruntime=2s\n[b]\nruntime=1s\n[c]\nruntime=1s\n{}",
        if stonewall { "stonewall\n" } else { "" }
    );
    let plan = crate::job::parse_job_text(&text).unwrap();
    let clock = FakeClock::new(STEP);
    let mut seen = Seen {
        clock: clock.clone(),
        trials: Vec::new(),
    };
    let r = run_plan(&plan, &RunOptions::default(), &mut seen, clock);
    // A stonewall starts a reporting group too (fio's new_group).
    let groups = if stonewall { vec![0, 1] } else { vec![0] };
    assert_eq!(r.completed_groups, groups);
    seen
}

#[test]
fn a_stonewall_job_starts_after_the_phase_before_it_ends() {
    let seen = three_jobs(true);
    let t = &seen.trials;
    assert_eq!(t.len(), 2, "{:?}", seen.trials);
    assert_eq!((t[0].0, &t[0].1), (0, &vec!["a".to_string(), "b".into()]));
    assert_eq!((t[1].0, &t[1].1), (1, &vec!["c".to_string()]));
    // The first phase lasts at least as long as its longest job (a: 2 s;
    // up to a poll more when a's thread reached its start after b ran:
    // time is the workers' readings); c starts after it ends.
    assert!(t[0].3 - t[0].2 >= 2 * S, "{t:?}");
    assert!(t[1].2 >= t[0].3, "{t:?}");
    assert!(near(t[1].3 - t[1].2, S, 10 * MS), "{t:?}");
    // Without the stonewall the three start together.
    let seen = three_jobs(false);
    assert_eq!(seen.trials.len(), 1);
    assert_eq!(seen.trials[0].1.len(), 3);
}

#[test]
fn a_stop_signal_mid_trial_interrupts_it_and_ends_the_run() {
    let clock = FakeClock::new(STEP).signal_after(2500 * MS);
    let r = run(
        &["--time_based=1", "--runtime=10s", "--size=1m", "--trials=3"],
        clock,
    );
    assert!(r.interrupted);
    assert_eq!(r.phases[0].trials.len(), 1, "no trial after the signal");
    let t = &r.jobs[0].trials[0];
    assert!(t.interrupted);
    // Stopped within the runner's poll (1 s) of the signal.
    assert!(
        t.runtime_ns >= 2500 * MS && t.runtime_ns < 3600 * MS,
        "{}",
        t.runtime_ns
    );
    assert!(ios(t) > 0);
}

fn auto(a: AutoTrials) -> RunResult {
    let plan = fixtures::plan(&[
        "--ioengine=null",
        "--bs=4k",
        "--time_based=1",
        "--runtime=1s",
        "--size=1m",
        "--trials=auto",
    ]);
    let opts = RunOptions {
        auto: a,
        ..Default::default()
    };
    run_plan(&plan, &opts, &mut NoHooks, FakeClock::new(STEP))
}

#[test]
fn trials_auto_stops_when_precise_enough() {
    // The fake clock makes every trial alike: precise at the floor.
    let a = AutoTrials::default();
    let floor = a.min_trials() as u32;
    let r = auto(a);
    let o = &r.auto_trials[0];
    assert!(o.converged && o.stopped_by == "converged", "{o:?}");
    assert_eq!(o.trials, floor);
    assert_eq!(r.phases[0].trials.len() as u32, floor);
    assert_eq!(r.jobs[0].trials.len() as u32, floor);
    assert!(r.notes.iter().any(|n| n.contains("converged after")));
}

#[test]
fn trials_auto_stops_at_its_limits() {
    // Never precise enough (a negative precision): the trial limit.
    let r = auto(AutoTrials {
        precision: -1.0,
        max_trials: 4,
        ..Default::default()
    });
    let o = &r.auto_trials[0];
    assert_eq!(
        (o.trials, o.converged, o.stopped_by.as_str()),
        (4, false, "max-trials")
    );
    assert_eq!(r.phases[0].trials.len(), 4);
    // The time limit: after trial k, k s have passed and the next would
    // end past 3.5 s, so it stops after the third.
    let r = auto(AutoTrials {
        precision: -1.0,
        max_trials: 100,
        max_time_s: 3.5,
        ..Default::default()
    });
    let o = &r.auto_trials[0];
    assert_eq!((o.trials, o.stopped_by.as_str()), (3, "max-time"), "{o:?}");
    assert!(r.notes.iter().any(|n| n.contains("did NOT converge")));
}
