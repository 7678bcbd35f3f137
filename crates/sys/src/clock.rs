//! The clock every latency is measured with.
//!
//! `CLOCK_MONOTONIC` through the vDSO: no system call, about 20 ns per read on
//! x86_64 with the TSC clocksource, and nanosecond resolution. The runner reads
//! it once per submitted batch and once per reaped batch rather than once per
//! I/O; see `dioscope_core::runner` for why that keeps per-I/O latency correct.

/// Nanoseconds on the monotonic clock.
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Resolution of the monotonic clock in nanoseconds, as the kernel reports it.
pub fn resolution_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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
}
