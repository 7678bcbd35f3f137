//! `latency_target`: fio's search for the deepest queue whose latency stays
//! under a target.
//!
//! The worker starts at depth 1. Every `latency_window` it looks at the
//! I/Os that completed in the window: when at least `latency_percentile` %
//! of them finished (total latency, submission to completion) within the
//! target, the depth goes up — doubling until a window first fails, then
//! bisecting between the last good and the first bad depth; when fewer did,
//! it goes down (bisecting towards the last good depth) and the queue drains
//! first, so that I/Os issued at the deeper queue do not judge the next
//! window. With `latency_percentile=100` a single late I/O fails the window
//! at once, and a late I/O at depth 1 ends the job with `ETIMEDOUT`: the
//! target cannot be met at all.
//!
//! When a step would not change the depth, the search has converged: the
//! statistics are reset so that the job reports only the final depth, one
//! more window runs, and the job ends (or, with `latency_run`, keeps
//! adjusting until its runtime is over). This is fio's algorithm; the code
//! is dioscope's. Every trial searches afresh: the depth found is part of
//! each trial's measurement.

/// What the job asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatPlan {
    pub target_ns: u64,
    pub window_ns: u64,
    /// Share of a window's I/Os that must meet the target, in percent.
    pub percentile: f64,
    /// `latency_run`: keep adjusting after converging instead of ending.
    pub keep_running: bool,
    /// The job's `iodepth`: the search never goes deeper.
    pub max_depth: u32,
}

/// What the worker must do after a step of the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatStep {
    Nothing,
    /// The depth went down: let the queue drain before issuing more.
    Drain,
    /// Converged: forget what was measured so far (only the final depth is reported).
    ResetStats,
    /// Converged and confirmed: stop issuing.
    Done,
    /// Late at depth 1 with `latency_percentile=100`: the job fails (ETIMEDOUT).
    Fatal,
}

/// The state of one worker's search.
#[derive(Debug, Clone)]
pub struct LatSearch {
    plan: LatPlan,
    /// The depth in force.
    pub depth: u32,
    /// Deepest depth known to meet the target.
    low: u32,
    /// Shallowest depth known to miss it (or the job's iodepth).
    high: u32,
    /// A window has failed: from then on the search bisects instead of doubling.
    failed_once: bool,
    window_start: u64,
    ios: u64,
    late: u64,
    final_window: bool,
}

impl LatSearch {
    pub fn new(plan: LatPlan, now: u64) -> LatSearch {
        let max = plan.max_depth.max(1);
        LatSearch {
            plan: LatPlan {
                max_depth: max,
                ..plan
            },
            depth: 1,
            low: 1,
            high: max,
            failed_once: false,
            window_start: now,
            ios: 0,
            late: 0,
            final_window: false,
        }
    }

    fn new_window(&mut self, now: u64) {
        self.window_start = now;
        self.ios = 0;
        self.late = 0;
    }

    /// One completed I/O with its total latency.
    #[inline(always)]
    pub fn completed(&mut self, lat_ns: u64, now: u64) -> LatStep {
        self.ios += 1;
        if lat_ns <= self.plan.target_ns {
            return LatStep::Nothing;
        }
        if self.plan.percentile < 100.0 {
            self.late += 1;
            return LatStep::Nothing;
        }
        if self.depth == 1 {
            return LatStep::Fatal;
        }
        self.step_down(now)
    }

    /// At the end of a window: judge it.
    pub fn check(&mut self, now: u64) -> LatStep {
        if now.saturating_sub(self.window_start) < self.plan.window_ns || self.ios == 0 {
            return LatStep::Nothing;
        }
        let met = 100.0 * (self.ios - self.late) as f64 / self.ios as f64;
        if met >= self.plan.percentile {
            self.step_up(now)
        } else {
            self.step_down(now)
        }
    }

    fn step_down(&mut self, now: u64) -> LatStep {
        self.failed_once = true;
        self.high = self.depth;
        if self.depth == self.low {
            self.low = self.low.saturating_sub(1).max(1);
        }
        self.depth = ((self.depth + self.low) / 2).max(1);
        self.new_window(now);
        LatStep::Drain
    }

    fn step_up(&mut self, now: u64) -> LatStep {
        let was = self.depth;
        self.low = self.depth;
        // Until a window fails, double; after, bisect towards the failure.
        self.depth = if self.failed_once {
            (self.depth + self.high) / 2
        } else {
            self.depth.saturating_mul(2)
        }
        .clamp(1, self.plan.max_depth);
        self.new_window(now);
        if self.depth != was {
            return LatStep::Nothing;
        }
        if !self.final_window {
            self.final_window = true;
            return LatStep::ResetStats;
        }
        if self.plan.keep_running {
            LatStep::Nothing
        } else {
            LatStep::Done
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(pct: f64, max: u32) -> LatPlan {
        LatPlan {
            target_ns: 1000,
            window_ns: 100,
            percentile: pct,
            keep_running: false,
            max_depth: max,
        }
    }

    /// Drive the search against a device whose latency is under the target
    /// up to depth `good` and over it beyond; returns the depths it visited
    /// and how it ended.
    fn search(p: LatPlan, good: u32) -> (Vec<u32>, LatStep) {
        let mut s = LatSearch::new(p, 0);
        let mut t = 0;
        let mut seen = vec![s.depth];
        for _ in 0..1000 {
            let lat = if s.depth <= good { 500 } else { 5000 };
            let mut step = LatStep::Nothing;
            for _ in 0..10 {
                step = s.completed(lat, t);
                if step != LatStep::Nothing {
                    break;
                }
            }
            if step == LatStep::Nothing {
                t += 100;
                step = s.check(t);
            }
            if seen.last() != Some(&s.depth) {
                seen.push(s.depth);
            }
            if matches!(step, LatStep::Done | LatStep::Fatal) {
                return (seen, step);
            }
        }
        panic!("no end: {seen:?}");
    }

    #[test]
    fn doubles_then_bisects_to_the_deepest_good_depth() {
        for max in [1, 2, 7, 16, 64, 100] {
            for good in 1..=max {
                for pct in [100.0, 90.0] {
                    let (seen, end) = search(plan(pct, max), good);
                    assert_eq!(end, LatStep::Done, "max {max} good {good}: {seen:?}");
                    assert_eq!(
                        *seen.last().unwrap(),
                        good,
                        "max {max} good {good}: {seen:?}"
                    );
                }
            }
        }
        let (seen, _) = search(plan(100.0, 64), 20);
        assert_eq!(seen, vec![1, 2, 4, 8, 16, 32, 24, 20, 22, 21, 20]);
    }

    #[test]
    fn a_late_io_at_depth_one_is_fatal_only_at_100_percent() {
        let mut s = LatSearch::new(plan(100.0, 8), 0);
        assert_eq!(s.completed(5000, 1), LatStep::Fatal);
        let mut s = LatSearch::new(plan(99.0, 8), 0);
        assert_eq!(s.completed(5000, 1), LatStep::Nothing);
        // 1 late of 10 is 90 %: under 99 %, the window fails but depth 1 stays.
        for _ in 0..9 {
            s.completed(10, 2);
        }
        assert_eq!(s.check(200), LatStep::Drain);
        assert_eq!(s.depth, 1);
    }

    #[test]
    fn the_percentile_is_judged_per_window() {
        let mut s = LatSearch::new(plan(90.0, 8), 0);
        for i in 0..100 {
            // 10 % late: exactly the allowed share.
            s.completed(if i % 10 == 0 { 5000 } else { 10 }, 5);
        }
        assert_eq!(s.check(50), LatStep::Nothing, "window not over");
        assert_eq!(s.check(100), LatStep::Nothing);
        assert_eq!(s.depth, 2, "90 % met: up");
        for i in 0..100 {
            s.completed(if i % 10 < 2 { 5000 } else { 10 }, 150);
        }
        assert_eq!(s.check(200), LatStep::Drain);
        assert_eq!(s.depth, 1, "80 % met: down");
    }

    #[test]
    fn latency_run_keeps_going() {
        let mut p = plan(100.0, 4);
        p.keep_running = true;
        let mut s = LatSearch::new(p, 0);
        let mut t = 0;
        let mut resets = 0;
        for _ in 0..50 {
            s.completed(10, t);
            t += 100;
            match s.check(t) {
                LatStep::Done | LatStep::Fatal => panic!("stopped"),
                LatStep::ResetStats => resets += 1,
                _ => {}
            }
        }
        assert_eq!(s.depth, 4);
        assert_eq!(resets, 1);
    }
}
