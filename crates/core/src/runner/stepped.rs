//! `iodepth_mode=stepped:LOW-HIGH/INC[,RAMP/RUN]`: a load-latency curve in
//! one job (fio 3.42; semantics from its options and target.c, read, not
//! copied).
//!
//! The job first probes: RAMP at its full `iodepth`, then RUN, measuring
//! the peak IOPS. Then it steps the load through LOW%, LOW+INC%, … up to
//! HIGH%, where HIGH% is the job's `iodepth`: a step under 100% is rate
//! limited to that share of the peak IOPS at the depth of 100%
//! (`iodepth × 100 / HIGH`); a step at or above 100% runs unthrottled at
//! `iodepth × load / HIGH`. Each step ramps for RAMP (not measured: the
//! queue settles at its new depth) and runs for RUN (measured); the queue
//! drains before each new depth. The job ends after its last step (or its
//! runtime, whichever comes first).
//!
//! What is measured: each step's IOPS, bandwidth and mean latency per
//! direction (`iodepth_steps` under the job in the JSON, a table in the
//! text), and the job's totals over the measured runs only: the probe and
//! every ramp are left out of its I/Os, latencies and runtime.
//!
//! Differences from fio's code, on purpose: fio starts its steps at INC
//! whatever LOW is (its own example's comment reads "from 10% to 130%", so
//! LOW is meant as the first step); fio resets the job's statistics at
//! every step, so its totals are the last step's; fio always probes,
//! dioscope only when a step is under 100%.
//!
//! The mechanism is the latency target's (runner/pacing.rs): the pacer caps
//! the in-flight I/Os at the step's depth in `admit`, and the rate caps are
//! the pacer's own. The worker keeps the measured stats ([`StepKeep`]) at
//! the step boundaries, which are checked once per batch, never per I/O.

use crate::job::options::pacing::SteppedDepth;
use crate::results::measure::DirStats;
use serde::{Deserialize, Serialize};

/// What a worker's stepping is, computed before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPlan {
    pub mode: SteppedDepth,
    /// The load of each step, percent.
    pub levels: Vec<u32>,
    pub iodepth: u32,
    pub ramp_ns: u64,
    run_ns: u64,
    /// Which directions the job issues.
    pub issues: [bool; 2],
}

impl StepPlan {
    pub fn new(mode: SteppedDepth, iodepth: u32, issues: [bool; 2]) -> StepPlan {
        StepPlan {
            mode,
            levels: mode.levels().collect(),
            iodepth: iodepth.max(1),
            ramp_ns: mode.ramp_us.saturating_mul(1000),
            run_ns: mode.run_us.saturating_mul(1000),
            issues,
        }
    }

    /// The depth of a step at `pct` percent load.
    pub fn depth(&self, pct: u32) -> u32 {
        let high = u64::from(self.mode.high.max(1));
        let at = u64::from(pct.max(100));
        ((u64::from(self.iodepth) * at / high) as u32).clamp(1, self.iodepth)
    }

    fn probes(&self) -> bool {
        self.levels.iter().any(|&p| p < 100)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    ProbeRamp,
    ProbeRun,
    Ramp,
    Run,
    Done,
}

/// The facts of a step that the pacer knows (the worker adds the counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepMeta {
    pub step: u32,
    pub load_pct: u32,
    pub depth: u32,
    /// The rate cap per direction (0: none).
    pub rate_iops: [u64; 2],
    pub max_inflight: u32,
    /// The last step: the job is done.
    pub last: bool,
}

/// What the worker must do at a boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEvent {
    Nothing,
    /// A measured run starts: drop what was counted since the last kept run
    /// (a ramp, or the probe).
    RunStarts,
    /// The probe's run ended: drop it (its IOPS are the peak).
    ProbeEnds,
    /// A step's run ended: keep it.
    RunEnds(StepMeta),
}

/// The state of one worker's stepping.
#[derive(Debug, Clone)]
pub struct Stepper {
    plan: StepPlan,
    phase: Phase,
    since: u64,
    step: usize,
    /// The in-flight cap now.
    pub depth: u32,
    /// The rate cap of the step in force (0: none), for the pacer.
    pub rate_iops: [u64; 2],
    base: [u64; 2],
    pub peak_iops: [u64; 2],
    max_inflight: u32,
}

impl Stepper {
    pub fn new(plan: StepPlan, now: u64) -> Stepper {
        let mut s = Stepper {
            depth: plan.iodepth,
            plan,
            phase: Phase::ProbeRamp,
            since: now,
            step: 0,
            rate_iops: [0; 2],
            base: [0; 2],
            peak_iops: [0; 2],
            max_inflight: 0,
        };
        s.restart(now);
        s
    }

    /// Start over (the measurement starts after `ramp_time`).
    pub(super) fn restart(&mut self, now: u64) {
        self.since = now;
        self.step = 0;
        self.max_inflight = 0;
        self.rate_iops = [0; 2];
        self.depth = self.plan.iodepth;
        if self.plan.probes() {
            self.phase = Phase::ProbeRamp;
        } else {
            self.phase = Phase::Ramp;
            self.set_level(0);
        }
        if self.plan.levels.is_empty() {
            self.phase = Phase::Done;
        }
    }

    fn set_level(&mut self, k: usize) {
        let pct = self.plan.levels[k];
        self.depth = self.plan.depth(pct);
        self.rate_iops = if pct < 100 {
            [0, 1].map(|d| {
                if self.plan.issues[d] {
                    (self.peak_iops[d] * u64::from(pct) / 100).max(1)
                } else {
                    0
                }
            })
        } else {
            [0; 2]
        };
    }

    /// An I/O was admitted with `inflight` I/Os then in flight.
    #[inline(always)]
    pub fn admitted(&mut self, inflight: usize) {
        if self.phase == Phase::Run {
            self.max_inflight = self.max_inflight.max(inflight as u32);
        }
    }

    /// Whether the job's steps are all done.
    pub fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// After a batch: move on when the phase's time is up. `ios` is the
    /// worker's completed I/Os per direction.
    pub fn check(&mut self, now: u64, ios: [u64; 2]) -> StepEvent {
        let spent = now.saturating_sub(self.since);
        let p = &self.plan;
        match self.phase {
            Phase::ProbeRamp if spent >= p.ramp_ns => {
                self.phase = Phase::ProbeRun;
                self.since = now;
                self.base = ios;
                StepEvent::RunStarts
            }
            Phase::ProbeRun if spent >= p.run_ns => {
                let base = self.base;
                self.peak_iops = [0, 1].map(|d| {
                    let n = ios[d].saturating_sub(base[d]);
                    (n as u128 * 1_000_000_000 / spent.max(1) as u128) as u64
                });
                self.phase = Phase::Ramp;
                self.since = now;
                self.set_level(0);
                StepEvent::ProbeEnds
            }
            Phase::Ramp if spent >= p.ramp_ns => {
                self.phase = Phase::Run;
                self.since = now;
                self.max_inflight = 0;
                StepEvent::RunStarts
            }
            Phase::Run if spent >= p.run_ns => {
                let last = self.step + 1 == p.levels.len();
                let meta = StepMeta {
                    step: self.step as u32 + 1,
                    load_pct: p.levels[self.step],
                    depth: self.depth,
                    rate_iops: self.rate_iops,
                    max_inflight: self.max_inflight,
                    last,
                };
                self.since = now;
                if last {
                    self.phase = Phase::Done;
                } else {
                    self.step += 1;
                    self.phase = Phase::Ramp;
                    self.set_level(self.step);
                }
                StepEvent::RunEnds(meta)
            }
            _ => StepEvent::Nothing,
        }
    }
}

/// One measured step of one worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSample {
    pub step: u32,
    pub load_pct: u32,
    pub depth: u32,
    pub rate_iops: [u64; 2],
    pub max_inflight: u32,
    pub runtime_ns: u64,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub lat_sum_ns: [u64; 2],
}

/// What one worker's stepping measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepReport {
    pub peak_iops: [u64; 2],
    pub steps: Vec<StepSample>,
}

/// The worker's side: the stats as of the end of the last kept run, to
/// drop what ramps and the probe counted.
#[derive(Debug)]
pub struct StepKeep {
    kept: [DirStats; 2],
    pub in_run: bool,
    run_start: u64,
    pub measured_ns: u64,
    pub samples: Vec<StepSample>,
}

/// `dst` = `src`, without allocating; `dst`'s errors stay (a fault in a
/// ramp is still a fault of the run).
fn copy_dir(dst: &mut DirStats, src: &DirStats) {
    dst.copy_measures_from(src);
}

impl StepKeep {
    pub fn new(steps: usize) -> StepKeep {
        StepKeep {
            kept: Default::default(),
            in_run: false,
            run_start: 0,
            measured_ns: 0,
            samples: Vec::with_capacity(steps),
        }
    }

    /// The measurement starts (the stats were just reset).
    pub fn reset(&mut self) {
        for d in &mut self.kept {
            d.reset();
        }
        self.in_run = false;
        self.measured_ns = 0;
        self.samples.clear();
    }

    /// Drop what was counted since the last kept run.
    pub fn restore(&self, dirs: &mut [DirStats; 2]) {
        for (d, k) in dirs.iter_mut().zip(&self.kept) {
            copy_dir(d, k);
        }
    }

    pub fn run_starts(&mut self, now: u64) {
        self.in_run = true;
        self.run_start = now;
    }

    /// A run ended at `now`: keep it, and sample it when `meta` says which step it was.
    pub fn run_ends(&mut self, dirs: &[DirStats; 2], now: u64, meta: Option<StepMeta>) {
        if !self.in_run {
            return;
        }
        let spent = now.saturating_sub(self.run_start);
        if let Some(m) = meta {
            let k = &self.kept;
            let d = dirs;
            // Capacity is the number of steps: no allocation here.
            self.samples.push(StepSample {
                step: m.step,
                load_pct: m.load_pct,
                depth: m.depth,
                rate_iops: m.rate_iops,
                max_inflight: m.max_inflight,
                runtime_ns: spent,
                ios: [0, 1].map(|i| d[i].ios - k[i].ios),
                bytes: [0, 1].map(|i| d[i].bytes - k[i].bytes),
                lat_sum_ns: [0, 1].map(|i| d[i].lat.sum_ns().wrapping_sub(k[i].lat.sum_ns())),
            });
        }
        for (k, d) in self.kept.iter_mut().zip(dirs) {
            copy_dir(k, d);
        }
        self.measured_ns += spent;
        self.in_run = false;
    }
}

/// The `iodepth_steps` object of one job entry: the steps of its clones
/// (the last trial's), merged step by step — I/Os and IOPS add up, latency
/// is the mean over all the step's I/Os, the in-flight maximum is the
/// largest of any clone.
pub fn to_json(mode: &SteppedDepth, clones: &[&StepReport]) -> serde_json::Value {
    use serde_json::json;
    let n = clones.iter().map(|c| c.steps.len()).max().unwrap_or(0);
    let steps: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let of: Vec<&StepSample> = clones.iter().filter_map(|c| c.steps.get(i)).collect();
            let first = of[0];
            let per_dir = |d: usize| {
                let ios: u64 = of.iter().map(|s| s.ios[d]).sum();
                let bytes: u64 = of.iter().map(|s| s.bytes[d]).sum();
                let lat: u64 = of.iter().map(|s| s.lat_sum_ns[d]).sum();
                let per_s = |x: u64, s: &StepSample| x as f64 * 1e9 / s.runtime_ns.max(1) as f64;
                json!({
                    "io_bytes": bytes,
                    "total_ios": ios,
                    "iops": of.iter().map(|s| per_s(s.ios[d], s)).sum::<f64>(),
                    "bw_bytes": of.iter().map(|s| per_s(s.bytes[d], s)).sum::<f64>().round() as u64,
                    "lat_mean_ns": if ios > 0 { lat as f64 / ios as f64 } else { 0.0 },
                })
            };
            json!({
                "step": first.step,
                "load_pct": first.load_pct,
                "depth": first.depth,
                "rate_iops": {
                    "read": of.iter().map(|s| s.rate_iops[0]).sum::<u64>(),
                    "write": of.iter().map(|s| s.rate_iops[1]).sum::<u64>(),
                },
                "max_inflight": of.iter().map(|s| s.max_inflight).max().unwrap_or(0),
                "runtime_ms": of.iter().map(|s| s.runtime_ns).max().unwrap_or(0) as f64 / 1e6,
                "read": per_dir(0),
                "write": per_dir(1),
            })
        })
        .collect();
    let m = mode;
    json!({
        "mode": format!(
            "stepped:{}-{}/{},{}/{}",
            m.low,
            m.high,
            m.inc,
            m.ramp_us as f64 / 1e6,
            m.run_us as f64 / 1e6
        ),
        "peak_iops": {
            "read": clones.iter().map(|c| c.peak_iops[0]).sum::<u64>(),
            "write": clones.iter().map(|c| c.peak_iops[1]).sum::<u64>(),
        },
        "steps": steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(form: &str, depth: u32) -> StepPlan {
        let m = SteppedDepth::parse(form).unwrap().unwrap();
        StepPlan::new(m, depth, [true, false])
    }

    #[test]
    fn the_forms_parse_with_fio_units_and_bad_ones_are_named() {
        let m = SteppedDepth::parse("stepped:10-130/5,5/30")
            .unwrap()
            .unwrap();
        assert_eq!((m.low, m.high, m.inc), (10, 130, 5));
        assert_eq!((m.ramp_us, m.run_us), (5_000_000, 30_000_000));
        let m = SteppedDepth::parse("stepped:20-120/10").unwrap().unwrap();
        assert_eq!(
            (m.ramp_us, m.run_us),
            (5_000_000, 30_000_000),
            "fio's defaults"
        );
        let m = SteppedDepth::parse("stepped:20-120/10,500ms/2")
            .unwrap()
            .unwrap();
        assert_eq!((m.ramp_us, m.run_us), (500_000, 2_000_000));
        assert_eq!(SteppedDepth::parse("none").unwrap(), None);
        for bad in [
            "stepped",
            "stepped:",
            "stepped:10-130",
            "stepped:130-10/5",
            "stepped:10-130/0",
            "stepped:10-130/5,5",
            "stepped:10-130/5,5/0",
            "stepped:ten-130/5",
            "staircase:10-130/5",
        ] {
            let e = SteppedDepth::parse(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("LOW-HIGH/INC"), "{bad}: {e}");
        }
    }

    #[test]
    fn levels_and_depths() {
        let p = plan("stepped:20-120/10,2/10", 32);
        assert_eq!(
            p.levels,
            vec![20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120]
        );
        // Under 100 %: the depth of 100 % (and a rate); above, deeper.
        assert_eq!(p.depth(20), 26);
        assert_eq!(p.depth(100), 26);
        assert_eq!(p.depth(110), 29);
        assert_eq!(p.depth(120), 32);
        assert_eq!(plan("stepped:0-30/10", 8).levels, vec![10, 20, 30]);
        assert_eq!(plan("stepped:100-400/100", 1).depth(100), 1);
    }

    #[test]
    fn the_phases_follow_each_other_in_order() {
        let mut s = Stepper::new(plan("stepped:50-150/50,1/2", 30), 0);
        let mut ios = [0u64, 0];
        let mut t = 0;
        let mut seen = Vec::new();
        for _ in 0..200 {
            t += 100_000_000; // 0.1 s
            ios[0] += 1000; // 10k IOPS
            match s.check(t, ios) {
                StepEvent::Nothing => {}
                e => seen.push((t / 100_000_000, e, s.depth, s.rate_iops[0])),
            }
            if s.done() {
                break;
            }
        }
        let kinds: Vec<&str> = seen
            .iter()
            .map(|x| match x.1 {
                StepEvent::RunStarts => "run",
                StepEvent::ProbeEnds => "probe-end",
                StepEvent::RunEnds(_) => "end",
                StepEvent::Nothing => "",
            })
            .collect();
        assert_eq!(
            kinds,
            ["run", "probe-end", "run", "end", "run", "end", "run", "end"]
        );
        assert_eq!(s.peak_iops[0], 10_000);
        let metas: Vec<StepMeta> = seen
            .iter()
            .filter_map(|x| match x.1 {
                StepEvent::RunEnds(m) => Some(m),
                _ => None,
            })
            .collect();
        assert_eq!(
            metas.iter().map(|m| m.load_pct).collect::<Vec<_>>(),
            [50, 100, 150]
        );
        assert_eq!(
            metas.iter().map(|m| m.depth).collect::<Vec<_>>(),
            [20, 20, 30]
        );
        assert_eq!(metas[0].rate_iops, [5000, 0], "half of the peak");
        assert_eq!(metas[1].rate_iops, [0, 0]);
        assert!(metas[2].last && !metas[1].last);
        // Probe: ramp 1 s + run 2 s; then each step 1 s + 2 s.
        assert_eq!(seen[0].0, 10);
        assert_eq!(seen[1].0, 30);
        assert_eq!(seen.last().unwrap().0, 30 + 3 * 30);
    }
}
