//! The clock every latency is measured with.
//!
//! Where the kernel itself trusts the CPU's time-stamp counter (clocksource
//! `tsc`, and the CPU has `constant_tsc` and `nonstop_tsc`: the same rate in
//! every power state and on every core), [`now_ns`] reads the TSC directly
//! and scales it with a factor calibrated against `CLOCK_MONOTONIC` at
//! start: about 9 ns a reading on the machines we measured, against about
//! 20 ns for `clock_gettime` through the vDSO. Anywhere else it is
//! `clock_gettime(CLOCK_MONOTONIC)`. Either way the result is nanoseconds on
//! one monotonic time line, so timestamps from both may be compared.
//! `DIOSCOPE_CLOCK_MONOTONIC=1` forces `clock_gettime` (to compare the two).
//!
//! The runner reads the clock twice per batch of I/Os (before committing and
//! after reaping), not per I/O; see `dioscope_core::runner::worker`.

use std::sync::OnceLock;

/// Which clock [`now_ns`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Tsc,
    Monotonic,
}

#[derive(Debug, Clone, Copy)]
struct Calib {
    source: Source,
    base_tsc: u64,
    base_ns: u64,
    /// Nanoseconds per tick as a 32.32 fixed-point factor.
    mult: u64,
}

static CALIB: OnceLock<Calib> = OnceLock::new();

#[inline(always)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU and has no side effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtsc() -> u64 {
    0
}

/// Whether the kernel and CPU make the TSC a safe clock (see module docs).
fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") || std::env::var_os("DIOSCOPE_CLOCK_MONOTONIC").is_some() {
        return false;
    }
    let cs =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    if cs.trim() != "tsc" {
        return false;
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    has("constant_tsc") && has("nonstop_tsc")
}

fn calibrate() -> Calib {
    if !tsc_usable() {
        return Calib {
            source: Source::Monotonic,
            base_tsc: 0,
            base_ns: 0,
            mult: 0,
        };
    }
    // Pair a TSC reading with a monotonic one, taking the pair whose
    // monotonic read was quickest (least uncertainty), at both ends of a
    // 20 ms interval.
    let pair = || {
        let mut best = (u64::MAX, 0u64, 0u64);
        for _ in 0..16 {
            let a = rdtsc();
            let n = monotonic_ns();
            let b = rdtsc();
            if b - a < best.0 {
                best = (b - a, a + (b - a) / 2, n);
            }
        }
        (best.1, best.2)
    };
    let (t0, n0) = pair();
    // Sleep, not spin: only the pairs at both ends need the CPU, and a
    // 20 ms spin was user time charged to every run (8 ns per I/O of a 5 s
    // run at 500k IOPS, in the user-CPU-per-I/O figure we compare with fio).
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (t1, n1) = pair();
    if t1 <= t0 || n1 <= n0 {
        return Calib {
            source: Source::Monotonic,
            base_tsc: 0,
            base_ns: 0,
            mult: 0,
        };
    }
    let mult = (((n1 - n0) as u128) << 32) / (t1 - t0) as u128;
    Calib {
        source: Source::Tsc,
        base_tsc: t1,
        base_ns: n1,
        mult: mult as u64,
    }
}

#[inline(always)]
fn calib() -> &'static Calib {
    CALIB.get_or_init(calibrate)
}

/// Nanoseconds on the monotonic time line.
#[inline(always)]
pub fn now_ns() -> u64 {
    read(calib())
}

/// A copy of the calibration for a loop that reads the clock per batch:
/// [`Clock::now`] is [`now_ns`] without the once-cell check and the pointer
/// chase of every reading (about 5 instructions of 13).
#[derive(Debug, Clone, Copy)]
pub struct Clock(Calib);

impl Clock {
    /// The process's clock (calibrating it on first use).
    pub fn get() -> Clock {
        Clock(*calib())
    }

    /// The same reading as [`now_ns`].
    #[inline(always)]
    pub fn now(&self) -> u64 {
        read(&self.0)
    }
}

#[inline(always)]
fn read(c: &Calib) -> u64 {
    if c.source == Source::Tsc {
        let d = rdtsc().wrapping_sub(c.base_tsc);
        c.base_ns + ((d as u128 * c.mult as u128) >> 32) as u64
    } else {
        monotonic_ns()
    }
}

/// The clock [`now_ns`] reads (calibrating it on first use).
pub fn source() -> Source {
    calib().source
}

/// Resolution of [`now_ns`] in nanoseconds.
pub fn resolution_ns() -> u64 {
    if source() == Source::Tsc {
        // One tick is well under a nanosecond on any TSC of this century.
        return 1;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds on the clock `id` (`clock_gettime`'s clock id: 0 realtime,
/// 1 monotonic, 4 monotonic raw, 7 boottime, 11 TAI, …); `None` when the
/// kernel does not know the clock (fio's `log_alternate_epoch_clock_id`).
pub fn clock_id_ns(id: i32) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an unknown id fails with
    // EINVAL and writes nothing.
    let r = unsafe { libc::clock_gettime(id as libc::clockid_t, &mut ts) };
    (r == 0 && ts.tv_sec >= 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Wall-clock time in milliseconds since the epoch (for result timestamps).
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_copy_reads_the_same_time_line() {
        let c = Clock::get();
        for _ in 0..1000 {
            let a = now_ns();
            let b = c.now();
            let d = now_ns();
            assert!(a <= b && b <= d, "{a} {b} {d}");
        }
    }

    #[test]
    fn monotonic_and_fine_grained() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
        assert!(
            resolution_ns() <= 1_000,
            "clock resolution {} ns",
            resolution_ns()
        );
    }

    #[test]
    fn agrees_with_clock_monotonic() {
        // Whatever the source, 50 ms of now_ns() is 50 ms of CLOCK_MONOTONIC
        // to within 0.1 % (plus a little for the readings themselves).
        let (a, m0) = (now_ns(), monotonic_ns());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (b, m1) = (now_ns(), monotonic_ns());
        let (d, dm) = ((b - a) as f64, (m1 - m0) as f64);
        assert!(
            (d - dm).abs() < dm * 0.001 + 20_000.0,
            "now_ns {d} vs monotonic {dm}"
        );
        // Both read one time line: now_ns() is near CLOCK_MONOTONIC.
        assert!((now_ns() as f64 - monotonic_ns() as f64).abs() < 5_000_000.0);
    }
}
