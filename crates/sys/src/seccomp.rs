//! A known kernel-side cost per system call, for a recipe's positive
//! control: a seccomp filter that allows every call after running a fixed
//! number of BPF instructions on it. It reads the call's first argument
//! first, so the kernel cannot cache an "always allow" and skip it. A
//! filter stays for the rest of the thread's life and is inherited by the
//! threads it starts afterwards; it never denies anything.

use crate::cvt;
use std::io;
use std::time::Instant;

/// The most instructions one filter may have (the kernel's BPF_MAXINSNS).
pub const MAX_INSNS: usize = 4096;

/// A filter of `insns` instructions (3 ..= [`MAX_INSNS`]): load args[0],
/// `insns − 2` additions, allow.
fn program(insns: usize) -> Vec<libc::sock_filter> {
    let n = insns.clamp(3, MAX_INSNS);
    let op = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    // offsetof(struct seccomp_data, args[0]) = 16.
    let mut v = vec![op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 16)];
    v.extend((0..n - 2).map(|_| op(libc::BPF_ALU | libc::BPF_ADD | libc::BPF_K, 1)));
    v.push(op(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    v
}

/// Install on the calling thread a filter of `insns` instructions that
/// allows every system call (needs CAP_SYS_ADMIN: dioscope does not set
/// no_new_privs). Threads it starts afterwards inherit it.
pub fn install_cost_filter(insns: usize) -> io::Result<()> {
    let prog = program(insns);
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: fprog points at `prog`, alive for the call; the kernel copies
    // the program.
    cvt(unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &fprog as *const libc::sock_fprog as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    })
    .map(|_| ())
}

/// Nanoseconds of `calls` getppid() calls, on this thread.
fn time_calls(calls: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..calls {
        // SAFETY: getppid has no preconditions.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    t.elapsed().as_nanos() as f64 / calls as f64
}

/// What one instruction of the filter costs per system call, in ns,
/// measured in a child process (the filter cannot be removed): the child
/// times getppid() with and without a [`MAX_INSNS`]-instruction filter,
/// the best of 5 rounds each.
pub fn ns_per_insn() -> io::Result<f64> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a 2-int array.
    cvt(unsafe { libc::pipe(fds.as_mut_ptr()) })?;
    // SAFETY: the child only makes system calls and exits with _exit.
    let pid = cvt(unsafe { libc::fork() });
    let pid = match pid {
        Ok(p) => p,
        Err(e) => {
            // SAFETY: both descriptors are ours.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            return Err(e);
        }
    };
    if pid == 0 {
        let best = |_| (0..5).map(|_| time_calls(20_000)).fold(f64::MAX, f64::min);
        let bare = best(0);
        let ok = install_cost_filter(MAX_INSNS).is_ok();
        let with = best(1);
        let v: f64 = if ok {
            (with - bare) / MAX_INSNS as f64
        } else {
            -1.0
        };
        let b = v.to_ne_bytes();
        // SAFETY: b is 8 bytes; _exit ends the child without unwinding.
        unsafe {
            libc::write(fds[1], b.as_ptr().cast(), b.len());
            libc::_exit(0);
        }
    }
    let mut b = [0u8; 8];
    // SAFETY: both descriptors are ours; b is 8 bytes; pid is our child.
    let n = unsafe {
        libc::close(fds[1]);
        let n = libc::read(fds[0], b.as_mut_ptr().cast(), b.len());
        libc::close(fds[0]);
        let mut st = 0;
        libc::waitpid(pid, &mut st, 0);
        n
    };
    let v = f64::from_ne_bytes(b);
    if n != 8 || v <= 0.0 || !v.is_finite() {
        return Err(io::Error::other(
            "the seccomp filter could not be installed or timed (needs CAP_SYS_ADMIN)",
        ));
    }
    Ok(v)
}
