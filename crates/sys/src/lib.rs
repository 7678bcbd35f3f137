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
