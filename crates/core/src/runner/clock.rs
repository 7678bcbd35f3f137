//! The seam between the trial logic and the outside world it waits on:
//! time and the stop signal. The runner (phases, trials, `trials=auto`,
//! ramp and measuring windows) and the workers read time only through a
//! [`Clock`], so unit tests drive the whole trial loop with the null
//! engine and a [`FakeClock`] whose time moves only as the workers read it
//! — deterministic, and no test sleeps for its job's `runtime`.
//!
//! The clock is a type parameter, not a trait object: the worker loop is
//! monomorphised per clock as it is per engine, and [`SysClock::now`] is
//! the inlined calibrated TSC read the loop made before the seam existed
//! (no dynamic dispatch, lock or allocation per I/O).

use std::sync::atomic::{AtomicBool, Ordering};

/// Time as the runner and its workers read it, and the stop signal.
pub trait Clock: Clone + Send + Sync + 'static {
    /// Monotonic nanoseconds; the worker loop's reading (per batch).
    fn now(&self) -> u64;
    /// The runner's reading (a [`FakeClock`] does not move for it).
    fn peek(&self) -> u64 {
        self.now()
    }
    /// A worker's pause of at most `ns` (pacing, start delay, a timed replay).
    fn sleep(&self, ns: u64);
    /// The runner's wait: until `deadline` or `done()`. A stop signal
    /// raises `stop` (the workers also see the signal themselves) but does
    /// not cut the wait short: the caller must not spin while workers drain.
    fn sleep_until(&self, deadline: u64, done: &dyn Fn() -> bool, stop: &AtomicBool);
    /// A stop signal (SIGINT, SIGTERM, ...) arrived.
    fn stop_signalled(&self) -> bool;
}

/// The process's clock (dioscope_sys::clock, calibrated once) and its
/// real signals.
#[derive(Debug, Clone, Copy)]
pub struct SysClock(dioscope_sys::clock::Clock);

impl SysClock {
    pub fn get() -> SysClock {
        SysClock(dioscope_sys::clock::Clock::get())
    }
}

impl Clock for SysClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        self.0.now()
    }

    fn sleep(&self, ns: u64) {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }

    fn sleep_until(&self, deadline: u64, done: &dyn Fn() -> bool, stop: &AtomicBool) {
        loop {
            let now = self.now();
            if now >= deadline || done() {
                return;
            }
            if self.stop_signalled() {
                stop.store(true, Ordering::Relaxed);
            }
            self.sleep((deadline - now).min(50_000_000));
        }
    }

    #[inline]
    fn stop_signalled(&self) -> bool {
        dioscope_sys::signal::stop_count() > 0
    }
}

#[cfg(test)]
pub use fake::FakeClock;

#[cfg(test)]
mod fake {
    use super::Clock;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    /// A clock for tests: every worker reading moves time on by `step` ns
    /// (the I/Os are what makes time pass), the runner's readings and waits
    /// do not move it, and a "stop signal" arrives once time reaches
    /// `signal_at`.
    #[derive(Debug, Clone)]
    pub struct FakeClock {
        t: Arc<AtomicU64>,
        step: u64,
        signal_at: u64,
    }

    impl FakeClock {
        pub fn new(step: u64) -> FakeClock {
            FakeClock {
                t: Arc::new(AtomicU64::new(1_000_000_000)),
                step,
                signal_at: u64::MAX,
            }
        }

        /// A stop signal once `after_ns` of time passed from now.
        pub fn signal_after(mut self, after_ns: u64) -> FakeClock {
            self.signal_at = self.peek() + after_ns;
            self
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> u64 {
            self.t.fetch_add(self.step, Ordering::Relaxed) + self.step
        }

        fn peek(&self) -> u64 {
            self.t.load(Ordering::Relaxed)
        }

        fn sleep(&self, ns: u64) {
            self.t.fetch_add(ns.max(1), Ordering::Relaxed);
        }

        fn sleep_until(&self, deadline: u64, done: &dyn Fn() -> bool, stop: &AtomicBool) {
            // The workers move time; the runner only lets them run.
            while self.peek() < deadline && !done() {
                if self.stop_signalled() {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }

        fn stop_signalled(&self) -> bool {
            self.peek() >= self.signal_at
        }
    }

    #[test]
    fn worker_readings_move_time_and_runner_readings_do_not() {
        let c = FakeClock::new(10);
        let t = c.peek();
        assert_eq!(c.now(), t + 10);
        assert_eq!(c.peek(), t + 10);
        assert_eq!(c.peek(), t + 10);
        let s = c.clone().signal_after(25);
        assert!(!s.stop_signalled());
        s.now();
        s.now();
        assert!(!s.stop_signalled());
        s.now();
        assert!(s.stop_signalled(), "the clone shares the time line");
    }
}
