//! Pacing inside one worker: the rate caps (`rate`, `rate_iops`; linear or
//! Poisson arrivals), the rate floors (`rate_min`, `rate_iops_min` over
//! `ratecycle`), `thinktime`, `flow`, and the `latency_target` depth search
//! (runner/latency_target.rs).
//!
//! The worker asks [`Pacer::admit`] before each I/O and tells
//! [`Pacer::issued`] and [`Pacer::completed`] after, but only when the job
//! sets one of these options (`Pacer::active`, `Pacer::per_completion`): a
//! job without pacing pays one predictable branch per I/O. Nothing here
//! allocates or locks while the worker runs.
//!
//! The plans the runner builds before a worker starts, and what pacing
//! found in each trial, are in `pacing/plan.rs`; `flow`'s counter shared by
//! the workers of a trial is in `pacing/flow.rs`.
//!
//! Each trial starts pacing afresh: due times start at the worker's start,
//! flow counters are new, the depth search starts at depth 1.

mod flow;
mod plan;

pub use flow::{FlowShare, Flows};
pub use plan::{trials_section, ClonePace, FlowPlan, PacePlan, ThinkPlan, TrialPace};

use super::distributions::Rng;
use super::latency_target::{LatSearch, LatStep};
use super::stepped::{StepEvent, StepMeta, Stepper};
use flow::FlowGate;

/// Due times of the rate caps, in ns after the worker's start.
#[derive(Debug)]
struct Rate {
    /// ns per byte (0.0: the direction is not capped).
    ns_per_byte: [f64; 2],
    /// Poisson: mean ns between I/Os (0.0: linear).
    mean_gap_ns: [f64; 2],
    due: [f64; 2],
    issues: [bool; 2],
    rng: Rng,
}

impl Rate {
    /// The direction to issue at `t` (ns after start): the drawn one, or the
    /// other one when only that is due — fio does the same.
    #[inline(always)]
    fn take(&self, write: bool, t: f64) -> Option<bool> {
        let d = write as usize;
        if t >= self.due[d] {
            Some(write)
        } else if self.issues[d ^ 1] && t >= self.due[d ^ 1] {
            Some(!write)
        } else {
            None
        }
    }

    #[inline(always)]
    fn charge(&mut self, write: bool, len: u64) {
        let d = write as usize;
        if self.ns_per_byte[d] == 0.0 {
            return;
        }
        self.due[d] += if self.mean_gap_ns[d] > 0.0 {
            // Exponential inter-arrival times: a Poisson process.
            -(1.0 - self.rng.unit()).ln() * self.mean_gap_ns[d]
        } else {
            len as f64 * self.ns_per_byte[d]
        };
    }

    fn next_due(&self) -> f64 {
        (0..2)
            .filter(|&d| self.issues[d])
            .map(|d| self.due[d])
            .fold(f64::INFINITY, f64::min)
    }
}

#[derive(Debug)]
struct Think {
    plan: ThinkPlan,
    count: u64,
    /// When the last stall ended (or the measurement began).
    since: u64,
}

/// The floor check of `rate_min` / `rate_iops_min`.
#[derive(Debug)]
struct Floor {
    min_bps: [u64; 2],
    min_iops: [u64; 2],
    cycle_ns: u64,
    issues: [bool; 2],
    /// Start of the current cycle (0: not measuring yet).
    start: u64,
    base: [[u64; 2]; 2],
}

/// Why the worker is holding back until its queue drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    None,
    Think,
    Flow,
    Depth,
}

/// What the worker must do after [`Pacer::tick`] or [`Pacer::completed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaceEvent {
    Nothing,
    /// Forget the measurement so far (latency_target converged).
    ResetStats,
    /// Stop issuing: the job is done (latency_target confirmed).
    Done,
    /// The job fails with this errno and message.
    Fail(i32, String),
    /// iodepth_mode=stepped: a measured run starts (drop the ramp).
    StepRun,
    /// iodepth_mode=stepped: the probe ended (drop it).
    StepDrop,
    /// iodepth_mode=stepped: a step's run ended (keep it).
    StepKeep(StepMeta),
}

/// Whether a run note is a pacing failure of this errno (what the worker's
/// [`PaceEvent::Fail`] message starts with).
pub(super) fn is_failure(note: &str, errno: i32) -> bool {
    match errno {
        libc::EIO => note.starts_with("rate_min=") || note.starts_with("rate_iops_min="),
        libc::ETIMEDOUT => note.starts_with("latency_target="),
        _ => false,
    }
}

/// The pacing state of one running worker.
#[derive(Debug)]
pub struct Pacer {
    /// The staging loop must ask [`Pacer::admit`] and tell [`Pacer::issued`].
    pub active: bool,
    /// Completions must be told to [`Pacer::completed`].
    pub per_completion: bool,
    /// [`Pacer::tick`] must run after each batch.
    pub checks: bool,
    start: u64,
    rate: Option<Rate>,
    think: Option<Think>,
    flow: Option<FlowGate>,
    floor: Option<Floor>,
    pub lat: Option<LatSearch>,
    pub step: Option<Stepper>,
    /// The smallest block per direction, and which directions the job
    /// issues: the steps' rate caps are made from them.
    min_bs: [u64; 2],
    issues: [bool; 2],
    hold: Hold,
    /// The last step of the depth search, for the report.
    lat_target: Option<u64>,
}

impl Pacer {
    pub fn new(p: &PacePlan, start: u64) -> Pacer {
        let rate = (p.bps[0] | p.bps[1] > 0).then(|| Rate {
            ns_per_byte: p.bps.map(|b| if b > 0 { 1e9 / b as f64 } else { 0.0 }),
            mean_gap_ns: [0, 1].map(|d| {
                if p.poisson && p.bps[d] > 0 {
                    1e9 * p.min_bs[d].max(1) as f64 / p.bps[d] as f64
                } else {
                    0.0
                }
            }),
            due: [0.0; 2],
            issues: p.issues,
            rng: Rng::new(p.seed ^ 0x7261_7465),
        });
        let floor = (p.min_bps.iter().chain(&p.min_iops).any(|&x| x > 0)).then_some(Floor {
            min_bps: p.min_bps,
            min_iops: p.min_iops,
            cycle_ns: p.cycle_ns,
            issues: p.issues,
            start: 0,
            base: [[0; 2]; 2],
        });
        let think = p.think.map(|plan| Think {
            plan,
            count: 0,
            since: start,
        });
        let flow = p.flow.as_ref().map(|f| FlowGate {
            share: f.share.clone(),
            weight: f.weight,
            mine: 0,
            sleep_ns: f.sleep_ns,
        });
        let lat = p.lat.map(|l| LatSearch::new(l, start));
        let step = p.step.clone().map(|s| Stepper::new(s, start));
        Pacer {
            active: rate.is_some()
                || think.is_some()
                || flow.is_some()
                || lat.is_some()
                || step.is_some(),
            per_completion: lat.is_some() || think.as_ref().is_some_and(|t| !t.plan.on_issue),
            checks: floor.is_some() || lat.is_some() || step.is_some(),
            step,
            min_bs: p.min_bs,
            issues: p.issues,
            start,
            rate,
            think,
            flow,
            floor,
            lat_target: p.lat.map(|l| l.target_ns),
            lat,
            hold: Hold::None,
        }
    }

    /// No pacing at all.
    pub fn off() -> Pacer {
        Pacer::new(&PacePlan::default(), 0)
    }

    /// May an I/O drawn as `write` go now? The direction it goes (the rate
    /// may send it the other way), or None: hold back for now.
    #[inline(always)]
    pub fn admit(
        &mut self,
        write: bool,
        now: u64,
        inflight: usize,
        measuring: bool,
    ) -> Option<bool> {
        if self.hold != Hold::None {
            return None;
        }
        if let Some(l) = &self.lat {
            if inflight >= l.depth as usize {
                return None;
            }
        }
        if let Some(s) = &self.step {
            if inflight >= s.depth as usize {
                return None;
            }
        }
        if let Some(t) = &self.think {
            // fio does not think during the ramp.
            if measuring
                && ((t.plan.blocks > 0 && t.count >= t.plan.blocks)
                    || (t.plan.iotime_ns > 0 && now.saturating_sub(t.since) >= t.plan.iotime_ns))
            {
                self.hold = Hold::Think;
                return None;
            }
        }
        let dir = match &self.rate {
            Some(r) => r.take(write, now.saturating_sub(self.start) as f64)?,
            None => write,
        };
        if let Some(f) = &mut self.flow {
            if !f.pass() {
                self.hold = Hold::Flow;
                return None;
            }
        }
        if let Some(s) = &mut self.step {
            s.admitted(inflight + 1);
        }
        Some(dir)
    }

    /// An I/O of `len` bytes was staged in direction `write`.
    #[inline(always)]
    pub fn issued(&mut self, write: bool, len: u64) {
        if let Some(r) = &mut self.rate {
            r.charge(write, len);
        }
        if let Some(t) = &mut self.think {
            if t.plan.on_issue {
                t.count += 1;
            }
        }
    }

    /// An I/O completed with total latency `lat_ns`.
    #[inline(always)]
    pub fn completed(&mut self, lat_ns: u64, now: u64) -> PaceEvent {
        if let Some(t) = &mut self.think {
            if !t.plan.on_issue {
                t.count += 1;
            }
        }
        if let Some(l) = &mut self.lat {
            return match l.completed(lat_ns, now) {
                LatStep::Nothing => PaceEvent::Nothing,
                step => self.lat_step(step, lat_ns),
            };
        }
        PaceEvent::Nothing
    }

    #[cold]
    fn lat_step(&mut self, step: LatStep, lat_ns: u64) -> PaceEvent {
        match step {
            LatStep::Nothing => PaceEvent::Nothing,
            LatStep::Drain => {
                self.hold = Hold::Depth;
                PaceEvent::Nothing
            }
            LatStep::ResetStats => PaceEvent::ResetStats,
            LatStep::Done => PaceEvent::Done,
            LatStep::Fatal => PaceEvent::Fail(
                libc::ETIMEDOUT,
                format!(
                    "latency_target={} us not met even at depth 1: an I/O took {} us \
                     (raise latency_target, or lower latency_percentile below 100 to allow late I/Os)",
                    self.lat_target.unwrap_or(0) as f64 / 1000.0,
                    lat_ns as f64 / 1000.0
                ),
            ),
        }
    }

    /// After each batch: the rate floor and the depth search's window.
    /// `done` is the worker's completed I/Os and bytes per direction.
    #[cold]
    pub fn tick(&mut self, now: u64, done: [[u64; 2]; 2], measuring: bool) -> PaceEvent {
        if measuring {
            let ev = match &mut self.step {
                Some(s) => s.check(now, done[0]),
                None => StepEvent::Nothing,
            };
            match ev {
                StepEvent::Nothing => {}
                StepEvent::RunStarts => return PaceEvent::StepRun,
                StepEvent::ProbeEnds => {
                    self.step_rate(now);
                    return PaceEvent::StepDrop;
                }
                StepEvent::RunEnds(m) => {
                    self.step_rate(now);
                    return PaceEvent::StepKeep(m);
                }
            }
        }
        if let Some(l) = &mut self.lat {
            match l.check(now) {
                LatStep::Nothing => {}
                step => return self.lat_step(step, 0),
            }
        }
        let Some(f) = &mut self.floor else {
            return PaceEvent::Nothing;
        };
        if !measuring {
            return PaceEvent::Nothing;
        }
        if f.start == 0 {
            // The measurement starts: counters were reset.
            f.start = now;
            f.base = done;
            return PaceEvent::Nothing;
        }
        let spent = now - f.start;
        if spent < f.cycle_ns {
            return PaceEvent::Nothing;
        }
        for d in 0..2 {
            if !f.issues[d] {
                continue;
            }
            let [ios, bytes] = [done[0][d] - f.base[0][d], done[1][d] - f.base[1][d]];
            let per_s = |n: u64| n as f64 * 1e9 / spent as f64;
            let dir = ["read", "write"][d];
            if f.min_bps[d] > 0 && per_s(bytes) < f.min_bps[d] as f64 {
                return PaceEvent::Fail(
                    libc::EIO,
                    format!(
                        "rate_min={} B/s for {dir}s not met: {:.0} B/s over {} ms \
                         (lower rate_min, or lengthen ratecycle to average over longer)",
                        f.min_bps[d],
                        per_s(bytes),
                        spent / 1_000_000
                    ),
                );
            }
            if f.min_iops[d] > 0 && per_s(ios) < f.min_iops[d] as f64 {
                return PaceEvent::Fail(
                    libc::EIO,
                    format!(
                        "rate_iops_min={} for {dir}s not met: {:.0} IOPS over {} ms \
                         (lower rate_iops_min, or lengthen ratecycle to average over longer)",
                        f.min_iops[d],
                        per_s(ios),
                        spent / 1_000_000
                    ),
                );
            }
        }
        f.start = now;
        f.base = done;
        PaceEvent::Nothing
    }

    /// Nothing is in flight and [`Pacer::admit`] holds back: do what the
    /// hold asks (spin for `thinktime_spin`) and return until when to
    /// sleep (never past `end`). Call [`Pacer::woke`] after the sleep.
    #[cold]
    pub fn wait(&mut self, now: u64, end: u64) -> u64 {
        match self.hold {
            Hold::Think => {
                let t = self.think.as_ref().map(|t| t.plan).unwrap_or(ThinkPlan {
                    think_ns: 0,
                    spin_ns: 0,
                    blocks: 0,
                    on_issue: false,
                    iotime_ns: 0,
                    rate_ignores: false,
                });
                let spin_end = (now + t.spin_ns).min(end);
                let mut n = now;
                while n < spin_end {
                    std::hint::spin_loop();
                    n = dioscope_sys::clock::now_ns();
                }
                (now + t.think_ns).min(end)
            }
            Hold::Flow => (now + self.flow.as_ref().map(|f| f.sleep_ns).unwrap_or(0)).min(end),
            Hold::Depth => now,
            Hold::None => match &self.rate {
                Some(r) => {
                    let due = self.start as f64 + r.next_due();
                    if due.is_finite() {
                        (due.ceil() as u64).clamp(now, end.max(now))
                    } else {
                        end
                    }
                }
                None => now,
            },
        }
    }

    /// After the sleep [`Pacer::wait`] asked for, started at `from`.
    #[cold]
    pub fn woke(&mut self, from: u64, now: u64) {
        if self.hold == Hold::Think {
            if let Some(t) = &mut self.think {
                t.count = 0;
                t.since = now;
                if t.plan.rate_ignores {
                    // Do not catch up on the I/O the stall did not issue.
                    if let Some(r) = &mut self.rate {
                        let missed = now.saturating_sub(from) as f64;
                        for d in &mut r.due {
                            *d += missed;
                        }
                    }
                }
            }
        }
        self.hold = Hold::None;
    }

    /// A new step: its rate cap (or none) from now on, and the queue
    /// drains before its depth applies.
    #[cold]
    fn step_rate(&mut self, now: u64) {
        let Some(s) = &self.step else { return };
        if s.done() {
            return;
        }
        let iops = s.rate_iops;
        self.rate = (iops[0] | iops[1] > 0).then(|| {
            let bps = [0, 1].map(|d| iops[d].saturating_mul(self.min_bs[d].max(1)));
            let t = now.saturating_sub(self.start) as f64;
            Rate {
                ns_per_byte: bps.map(|b| if b > 0 { 1e9 / b as f64 } else { 0.0 }),
                mean_gap_ns: [0.0; 2],
                due: [t; 2],
                issues: self.issues,
                rng: Rng::new(0),
            }
        });
        self.hold = Hold::Depth;
    }

    /// What stepping measured besides its steps: the probe's peak IOPS.
    pub fn step_peak(&self) -> Option<[u64; 2]> {
        self.step.as_ref().map(|s| s.peak_iops)
    }

    /// The depth the search settled on (for the report).
    pub fn depth_found(&self) -> Option<u32> {
        self.lat.as_ref().map(|l| l.depth)
    }

    /// The measurement starts (end of ramp): thinking counts from here.
    pub fn measuring_starts(&mut self, now: u64) {
        if let Some(s) = &mut self.step {
            s.restart(now);
            self.rate = None;
        }
        if let Some(t) = &mut self.think {
            t.since = now;
            t.count = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn plan() -> PacePlan {
        PacePlan {
            min_bs: [4096; 2],
            issues: [true, true],
            cycle_ns: 1_000_000_000,
            seed: 7,
            ..Default::default()
        }
    }

    /// Drive a pacer with an instant device for `secs` of fake time; the
    /// issue times of each direction.
    fn drive(p: &PacePlan, read_pct: u64, secs: u64) -> [Vec<u64>; 2] {
        let mut pc = Pacer::new(p, 0);
        let mut rng = Rng::new(1);
        let mut t = 0;
        let mut out = [Vec::new(), Vec::new()];
        while t < secs * 1_000_000_000 {
            let write = rng.below(100) >= read_pct;
            match pc.admit(write, t, 0, true) {
                Some(w) => {
                    pc.issued(w, 4096);
                    out[w as usize].push(t);
                }
                None => {
                    let until = pc.wait(t, u64::MAX);
                    pc.woke(t, until.max(t + 1));
                    t = until.max(t + 1);
                }
            }
        }
        out
    }

    #[test]
    fn linear_rate_is_exact_per_direction() {
        let mut p = plan();
        p.bps = [4096 * 1000, 4096 * 250];
        let got = drive(&p, 50, 10);
        // 10 s at 1000 and 250 IOPS, the first of each at 0.
        assert_eq!(got[0].len(), 10_000);
        assert_eq!(got[1].len(), 2_500);
        // Evenly spaced.
        assert!(got[0].windows(2).all(|w| w[1] - w[0] == 1_000_000));
    }

    #[test]
    fn one_capped_direction_leaves_the_other_free() {
        let mut p = plan();
        p.bps = [0, 4096 * 100];
        p.issues = [false, true];
        let got = drive(&p, 0, 5);
        assert_eq!(got[1].len(), 500);
    }

    #[test]
    fn poisson_has_the_rate_and_exponential_gaps_and_is_reproducible() {
        let mut p = plan();
        p.poisson = true;
        p.bps = [4096 * 1000, 0];
        p.issues = [true, false];
        let got = drive(&p, 100, 100);
        let n = got[0].len() as f64;
        assert!((n - 100_000.0).abs() < 100_000.0 * 0.02, "{n}");
        let gaps: Vec<f64> = got[0].windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        // An exponential distribution's standard deviation equals its mean.
        assert!((sd / mean - 1.0).abs() < 0.05, "cv {}", sd / mean);
        let seven = drive(&plan_with_seed(7), 100, 3);
        assert_eq!(seven, drive(&plan_with_seed(7), 100, 3));
        assert_ne!(seven, drive(&plan_with_seed(8), 100, 3));
    }

    fn plan_with_seed(seed: u64) -> PacePlan {
        let mut p = plan();
        p.poisson = true;
        p.bps = [4096 * 1000, 0];
        p.issues = [true, false];
        p.seed = seed;
        p
    }

    #[test]
    fn thinktime_stalls_after_blocks_and_rate_can_ignore_it() {
        let mut p = plan();
        p.issues = [true, false];
        p.think = Some(ThinkPlan {
            think_ns: 1_000_000,
            spin_ns: 0,
            blocks: 4,
            on_issue: true,
            iotime_ns: 0,
            rate_ignores: false,
        });
        let got = drive(&p, 100, 1);
        // Bursts of 4 I/Os, one every 1 ms.
        assert_eq!(got[0].len(), 4 * 1000);
        assert_eq!(got[0][4] - got[0][3], 1_000_000);
        // At 2000 IOPS (4 I/Os take 1.5 ms, then 1 ms of thinking) the
        // rate catches up on the stalls...
        p.bps = [4096 * 2000, 0];
        let caught_up = drive(&p, 100, 1)[0].len();
        assert!((1_990..=2_000).contains(&caught_up), "{caught_up}");
        // ...unless rate_ignore_thinktime: then each stall is lost time.
        if let Some(t) = &mut p.think {
            t.rate_ignores = true;
        }
        let ignored = drive(&p, 100, 1)[0].len();
        assert!((1_200..1_500).contains(&ignored), "{ignored}");
    }

    #[test]
    fn the_floor_fails_a_slow_job_after_a_cycle() {
        let mut p = plan();
        p.min_bps = [1_000_000, 0];
        p.issues = [true, false];
        let mut pc = Pacer::new(&p, 0);
        assert!(pc.checks);
        assert_eq!(pc.tick(10, [[0; 2]; 2], true), PaceEvent::Nothing);
        // 2 MB in the first second: fine.
        assert_eq!(
            pc.tick(1_000_000_010, [[500, 0], [2_000_000, 0]], true),
            PaceEvent::Nothing
        );
        // 0.5 MB in the next: below 1 MB/s.
        match pc.tick(2_000_000_010, [[600, 0], [2_500_000, 0]], true) {
            PaceEvent::Fail(e, m) => {
                assert_eq!(e, libc::EIO);
                assert!(m.contains("rate_min=1000000"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
}
