//! Stop signals (SIGINT, SIGTERM, SIGHUP) as a counter the runner polls.
//!
//! The handler only touches atomics and async-signal-safe calls: it counts the
//! signal, and on a second SIGINT it unlinks the registered scratch files and
//! exits at once with status 130, as users expect of a second Ctrl-C.

use std::ffi::CString;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

static STOPS: AtomicU32 = AtomicU32::new(0);
static LAST: AtomicU32 = AtomicU32::new(0);

const MAX_SCRATCH: usize = 64;
static SCRATCH: [AtomicPtr<libc::c_char>; MAX_SCRATCH] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SCRATCH];
static NSCRATCH: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    let n = STOPS.fetch_add(1, Ordering::SeqCst) + 1;
    LAST.store(sig as u32, Ordering::SeqCst);
    if n >= 2 && sig == libc::SIGINT {
        for slot in SCRATCH.iter() {
            let p = slot.load(Ordering::SeqCst);
            if !p.is_null() {
                // SAFETY: p is a leaked NUL-terminated CString; unlink is async-signal-safe.
                unsafe { libc::unlink(p) };
            }
        }
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Install the handler for SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction is zeroable; the handler is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// How many stop signals have arrived.
#[inline]
pub fn stop_count() -> u32 {
    STOPS.load(Ordering::Relaxed)
}

/// The last stop signal received (0 if none).
pub fn last_signal() -> i32 {
    LAST.load(Ordering::Relaxed) as i32
}

/// Register a scratch file to be unlinked if the user insists with a second SIGINT.
pub fn register_scratch(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    let i = NSCRATCH.fetch_add(1, Ordering::SeqCst);
    if i < MAX_SCRATCH {
        SCRATCH[i].store(c.into_raw(), Ordering::SeqCst);
    }
}

/// Forget a scratch file (it was removed normally).
pub fn unregister_scratch(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    for slot in SCRATCH.iter() {
        let p = slot.load(Ordering::SeqCst);
        if p.is_null() {
            continue;
        }
        // SAFETY: p is a leaked CString we stored.
        let s = unsafe { std::ffi::CStr::from_ptr(p) };
        if s.to_bytes() == path.as_os_str().as_bytes() {
            slot.store(std::ptr::null_mut(), Ordering::SeqCst);
            // SAFETY: reclaim the CString leaked by register_scratch.
            drop(unsafe { CString::from_raw(p) });
        }
    }
}
