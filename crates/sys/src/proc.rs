//! Process and thread accounting and placement: getrusage, affinity, thread ids.

use crate::cvt;
use std::io;

/// CPU time and context switches from `getrusage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub user_us: u64,
    pub sys_us: u64,
    pub vol_ctx: u64,
    pub invol_ctx: u64,
    pub minflt: u64,
    pub majflt: u64,
    /// Peak resident set size in KiB (process-wide only).
    pub maxrss_kb: u64,
}

impl Usage {
    /// Add another thread's or trial's usage (peak RSS: the larger).
    pub fn add(&mut self, o: &Usage) {
        self.user_us += o.user_us;
        self.sys_us += o.sys_us;
        self.vol_ctx += o.vol_ctx;
        self.invol_ctx += o.invol_ctx;
        self.minflt += o.minflt;
        self.majflt += o.majflt;
        self.maxrss_kb = self.maxrss_kb.max(o.maxrss_kb);
    }

    /// CPU time, user plus system, in microseconds.
    pub fn cpu_us(&self) -> u64 {
        self.user_us + self.sys_us
    }

    /// Context switches, voluntary plus involuntary.
    pub fn ctx_switches(&self) -> u64 {
        self.vol_ctx + self.invol_ctx
    }

    pub fn since(&self, before: &Usage) -> Usage {
        Usage {
            user_us: self.user_us.saturating_sub(before.user_us),
            sys_us: self.sys_us.saturating_sub(before.sys_us),
            vol_ctx: self.vol_ctx.saturating_sub(before.vol_ctx),
            invol_ctx: self.invol_ctx.saturating_sub(before.invol_ctx),
            minflt: self.minflt.saturating_sub(before.minflt),
            majflt: self.majflt.saturating_sub(before.majflt),
            maxrss_kb: self.maxrss_kb,
        }
    }
}

fn usage(who: libc::c_int) -> Usage {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    unsafe { libc::getrusage(who, &mut r) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Usage {
        user_us: tv(r.ru_utime),
        sys_us: tv(r.ru_stime),
        vol_ctx: r.ru_nvcsw as u64,
        invol_ctx: r.ru_nivcsw as u64,
        minflt: r.ru_minflt as u64,
        majflt: r.ru_majflt as u64,
        maxrss_kb: r.ru_maxrss as u64,
    }
}

/// Whole process: every thread, including io_uring's io-wq and SQPOLL threads.
pub fn usage_self() -> Usage {
    usage(libc::RUSAGE_SELF)
}

/// The calling thread only.
pub fn usage_thread() -> Usage {
    usage(libc::RUSAGE_THREAD)
}

/// Pin the calling thread to the given CPUs.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET bounds-checks against the set size.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: valid set pointer and size; pid 0 is the calling thread.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })
        .map(drop)
}

/// Number of online CPUs.
pub fn ncpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// Whether stderr is a terminal.
/// Clock ticks per second of /proc's CPU times (100 when sysconf does not say).
pub fn clk_tck() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

pub fn stderr_is_tty() -> bool {
    // SAFETY: isatty has no preconditions.
    unsafe { libc::isatty(2) == 1 }
}

/// Send `sig` to process `pid` (`kill(2)`), e.g. SIGTERM to a child before
/// its grace time runs out.
pub fn signal_process(pid: u32, sig: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: kill takes integers only.
    crate::cvt(unsafe { libc::kill(pid, sig) }).map(drop)
}

/// `prctl(option, value)` with an `option` the kernel does not know: it
/// changes nothing and fails with EINVAL, but a tracer watching the
/// `syscalls:sys_enter_prctl` tracepoint sees the call and its arguments.
/// `--stages` marks the opening and closing of the measured window with it.
pub fn trace_mark(option: u32, value: u64) {
    // SAFETY: prctl with integer arguments only; an unknown option touches
    // no memory and returns EINVAL, which is ignored on purpose.
    unsafe {
        libc::prctl(option as libc::c_int, value as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_grows_with_work() {
        let a = usage_self();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = usage_self();
        assert!(b.user_us + b.sys_us > a.user_us + a.sys_us);
    }
}
