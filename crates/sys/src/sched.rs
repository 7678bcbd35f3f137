//! Per-thread scheduling and memory placement: I/O priority
//! (`ioprio_set`), nice value, NUMA memory policy (`set_mempolicy`), the
//! locked-memory limit. Each call applies to the calling thread only (on
//! Linux these are per-thread attributes), so a worker sets its own.

use crate::{cvt, cvt_long};
use std::io;

/// `IOPRIO_CLASS_*`: none, real-time, best-effort, idle.
pub const IOPRIO_CLASS_RT: u32 = 1;
pub const IOPRIO_CLASS_BE: u32 = 2;
pub const IOPRIO_CLASS_IDLE: u32 = 3;
const IOPRIO_CLASS_SHIFT: u32 = 13;
const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// The kernel's ioprio value of a class and level (as used by `ioprio_set`
/// and carried per I/O in an io_uring SQE or an aio iocb).
pub fn ioprio_value(class: u32, level: u32) -> u16 {
    ((class << IOPRIO_CLASS_SHIFT) | (level & 0x7)) as u16
}

/// The thread's ID (what `/proc/self/task/` lists).
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Set the calling thread's I/O priority.
pub fn set_thread_ioprio(value: u16) -> io::Result<()> {
    // SAFETY: ioprio_set takes integers only; who = 0 is the calling thread.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            value as libc::c_int,
        )
    })
    .map(drop)
}

/// The I/O priority of thread `tid` (0: the calling thread).
pub fn thread_ioprio(tid: i32) -> io::Result<u16> {
    // SAFETY: as above.
    cvt_long(unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid) })
        .map(|v| v as u16)
}

/// Set the calling thread's nice value.
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority takes integers only; on Linux a thread ID names
    // that one thread.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid() as libc::id_t, nice) }).map(drop)
}

/// `MPOL_*` memory policy modes.
pub const MPOL_DEFAULT: i32 = 0;
pub const MPOL_PREFERRED: i32 = 1;
pub const MPOL_BIND: i32 = 2;
pub const MPOL_INTERLEAVE: i32 = 3;
pub const MPOL_LOCAL: i32 = 4;

/// Set the calling thread's NUMA memory policy over `nodes` (node numbers;
/// empty for `MPOL_DEFAULT` and `MPOL_LOCAL`).
pub fn set_mempolicy(mode: i32, nodes: &[usize]) -> io::Result<()> {
    let mut mask = [0u64; 16];
    for &n in nodes {
        if n >= mask.len() * 64 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        mask[n / 64] |= 1 << (n % 64);
    }
    let maxnode = if nodes.is_empty() {
        0
    } else {
        mask.len() as u64 * 64 + 1
    };
    let ptr = if nodes.is_empty() {
        std::ptr::null()
    } else {
        mask.as_ptr()
    };
    // SAFETY: `ptr` is null or points to `mask`, which holds maxnode - 1 bits.
    cvt_long(unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) }).map(drop)
}

/// The calling thread's memory policy: (mode, nodes).
pub fn mempolicy() -> io::Result<(i32, Vec<usize>)> {
    let mut mode: libc::c_int = 0;
    let mut mask = [0u64; 16];
    // SAFETY: both pointers point to our own buffers of the sizes given.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            mask.len() as u64 * 64,
            std::ptr::null_mut::<libc::c_void>(),
            0,
        )
    })?;
    let nodes = (0..mask.len() * 64)
        .filter(|&n| mask[n / 64] & (1 << (n % 64)) != 0)
        .collect();
    Ok((mode, nodes))
}

/// The soft `RLIMIT_MEMLOCK` (bytes; `u64::MAX` for unlimited).
pub fn memlock_limit() -> u64 {
    // SAFETY: rlimit is plain data, filled by the kernel.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a valid rlimit to write into.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return 0;
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        r.rlim_cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioprio_and_nice_apply_to_this_thread_only() {
        let before = thread_ioprio(0).unwrap();
        let v = std::thread::spawn(|| {
            set_thread_ioprio(ioprio_value(IOPRIO_CLASS_BE, 6)).unwrap();
            set_thread_nice(5).unwrap();
            (
                thread_ioprio(0).unwrap(),
                std::fs::read_to_string(format!("/proc/self/task/{}/stat", gettid())).unwrap(),
            )
        })
        .join()
        .unwrap();
        assert_eq!(v.0, ioprio_value(IOPRIO_CLASS_BE, 6));
        // Field 19 of stat is the nice value (after the parenthesised name).
        let nice: i32 =
            v.1.rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .nth(16)
                .unwrap()
                .parse()
                .unwrap();
        assert_eq!(nice, 5);
        assert_eq!(
            thread_ioprio(0).unwrap(),
            before,
            "the other thread is untouched"
        );
    }

    #[test]
    fn mempolicy_round_trips() {
        std::thread::spawn(|| {
            set_mempolicy(MPOL_BIND, &[0]).unwrap();
            assert_eq!(mempolicy().unwrap(), (MPOL_BIND, vec![0]));
            set_mempolicy(MPOL_DEFAULT, &[]).unwrap();
            assert_eq!(mempolicy().unwrap().0, MPOL_DEFAULT);
        })
        .join()
        .unwrap();
    }
}
