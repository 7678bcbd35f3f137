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

    /// A clock for tests. Time moves only as the workers read it: each
    /// reading moves it on by `step` ns (the I/Os are what makes time
    /// pass). The runner's readings do not move it, and time passes only
    /// while the runner waits, never beyond the deadline it waits for: a
    /// worker reading at another time waits until the runner waits again. So the runner sees every
    /// deadline (ramp end, poll) exactly, however the threads are
    /// scheduled. A "stop signal" arrives once time reaches `signal_at`.
    ///
    /// Only for the trial loop: a clock reading on the runner's thread
    /// outside a wait (a read-back) would wait forever.
    #[derive(Debug, Clone)]
    pub struct FakeClock {
        t: Arc<AtomicU64>,
        /// The runner's current deadline: time stops there.
        limit: Arc<AtomicU64>,
        step: u64,
        signal_at: u64,
    }

    const START: u64 = 1_000_000_000;

    impl FakeClock {
        pub fn new(step: u64) -> FakeClock {
            FakeClock {
                t: Arc::new(AtomicU64::new(START)),
                limit: Arc::new(AtomicU64::new(START)),
                step,
                signal_at: u64::MAX,
            }
        }

        /// A stop signal once `after_ns` of time passed from now.
        pub fn signal_after(mut self, after_ns: u64) -> FakeClock {
            self.signal_at = self.peek() + after_ns;
            self
        }

        /// Move time on by `ns`, as far as the runner's deadline lets it.
        fn advance(&self, ns: u64) -> u64 {
            let mut left = ns.max(1);
            loop {
                let cur = self.t.load(Ordering::SeqCst);
                let lim = self.limit.load(Ordering::SeqCst);
                if cur >= lim {
                    std::thread::sleep(std::time::Duration::from_micros(20));
                    continue;
                }
                let new = (cur + left).min(lim);
                if self
                    .t
                    .compare_exchange(cur, new, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    left -= new - cur;
                    if left == 0 {
                        return new;
                    }
                }
            }
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> u64 {
            self.advance(self.step)
        }

        fn peek(&self) -> u64 {
            self.t.load(Ordering::SeqCst)
        }

        fn sleep(&self, ns: u64) {
            self.advance(ns);
        }

        fn sleep_until(&self, deadline: u64, done: &dyn Fn() -> bool, stop: &AtomicBool) {
            self.limit.store(deadline, Ordering::SeqCst);
            // The workers move time; the runner only lets them run.
            while self.peek() < deadline && !done() {
                if self.stop_signalled() {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
            // Time stands still until the runner waits again.
            self.limit.store(self.peek(), Ordering::SeqCst);
        }

        fn stop_signalled(&self) -> bool {
            self.peek() >= self.signal_at
        }
    }

    #[test]
    fn time_moves_by_worker_readings_up_to_the_runners_deadline() {
        let c = FakeClock::new(10);
        let t = c.peek();
        let stop = AtomicBool::new(false);
        // Nothing to wait for: the deadline is now.
        c.sleep_until(t, &|| false, &stop);
        let w = c.clone();
        let worker = std::thread::spawn(move || (0..5).map(|_| w.now()).collect::<Vec<_>>());
        // Five readings of 10 ns, but the runner waits only 25 ns at first.
        c.sleep_until(t + 25, &|| false, &stop);
        assert_eq!(c.peek(), t + 25, "time stops at the deadline");
        c.sleep_until(t + 1000, &|| worker.is_finished(), &stop);
        let seen = worker.join().unwrap();
        // The reading that met the deadline went on once the runner waited again.
        assert_eq!(seen, vec![t + 10, t + 20, t + 30, t + 40, t + 50]);
        assert_eq!(c.peek(), t + 50, "the runner's readings do not move it");
        // A signal 20 ns on: seen once readings moved time that far.
        let s = c.clone().signal_after(20);
        assert!(!s.stop_signalled());
        let w = s.clone();
        let worker = std::thread::spawn(move || {
            for _ in 0..3 {
                w.now();
            }
        });
        s.sleep_until(t + 1000, &|| worker.is_finished(), &stop);
        worker.join().unwrap();
        assert_eq!(s.peek(), t + 80);
        assert!(s.stop_signalled() && !c.stop_signalled());
    }
}
