//! dioscope-sys: every raw kernel interface dioscope uses, and nothing else.
//!
//! All `unsafe` code of the project lives here. Each module wraps one family of
//! system calls behind safe functions that return `std::io::Result`, so the core
//! crate never touches a raw pointer. The few `pub unsafe fn`s document their
//! contract in a `# Safety` section.

pub mod aio;
pub mod block;
pub mod bpf;
pub mod buf;
pub mod cache;
pub mod clock;
pub mod dirfd;
pub mod fiemap;
pub mod fs;
pub mod fsinfo;
pub mod handoff;
pub mod io;
pub mod meta;
pub mod mmap;
pub mod posixaio;
pub mod proc;
pub mod queue;
pub mod sched;
pub mod seccomp;
pub mod seek;
pub mod signal;
pub mod uring;
pub mod vio;

/// A system call as one `syscall` instruction, inlined into its caller:
/// no call through libc's wrappers. glibc's `pread`/`preadv2` are
/// cancellation points (each call enables and disables asynchronous
/// cancellation around the system call: 14 % of psync's user time per I/O
/// here), and its variadic `syscall()` shuffles arguments through a PLT
/// entry. dioscope never cancels threads. Returns the kernel's result: a
/// value, or -errno.
///
/// # Safety
/// The caller passes arguments valid for system call `nr` (pointers to
/// memory the kernel may read or write as that call does).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn syscall6(nr: libc::c_long, a: [u64; 6]) -> i64 {
    let ret: i64;
    // SAFETY: the caller's contract; the asm is not `nomem`, so the
    // compiler keeps memory accesses on their side of it. `syscall`
    // clobbers rcx and r11.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// As the x86_64 [`syscall6`] through libc's `syscall()` (its -1 and
/// errno turned into -errno).
///
/// # Safety
/// As the x86_64 one.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) unsafe fn syscall6(nr: libc::c_long, a: [u64; 6]) -> i64 {
    // SAFETY: the caller's contract.
    let r = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
    if r < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    } else {
        r as i64
    }
}

/// A system call that returns a count, retried on EINTR:
/// `call` makes the call and returns the kernel's value or -errno.
#[inline(always)]
pub(crate) fn retry_eintr(mut call: impl FnMut() -> i64) -> std::io::Result<usize> {
    loop {
        let r = call();
        if r >= 0 {
            return Ok(r as usize);
        }
        if r != -(libc::EINTR as i64) {
            return Err(std::io::Error::from_raw_os_error(-r as i32));
        }
    }
}

/// Turn a libc return value into an `std::io::Result`, reading `errno` on -1.
#[inline]
pub(crate) fn cvt(ret: libc::c_int) -> std::io::Result<libc::c_int> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// As [`cvt`] for the `long` returned by `syscall(2)` and `pread(2)`.
#[inline]
pub(crate) fn cvt_long(ret: libc::c_long) -> std::io::Result<libc::c_long> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
