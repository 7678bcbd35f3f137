//! Stop signals (SIGINT, SIGTERM, SIGHUP) as a counter the runner polls.
//!
//! The handler only touches atomics and async-signal-safe calls: it counts the
//! signal, and on a second SIGINT it unlinks the registered scratch files and
//! exits at once with status 130, as users expect of a second Ctrl-C.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

static STOPS: AtomicU32 = AtomicU32::new(0);
/// Set by a command whose clean-up must run to its end (scratch devices):
/// a second SIGINT then only counts, and the command finishes its clean-up.
static CLEANUP_FIRST: AtomicBool = AtomicBool::new(false);
static LAST: AtomicU32 = AtomicU32::new(0);

const MAX_SCRATCH: usize = 64;
static SCRATCH: [AtomicPtr<libc::c_char>; MAX_SCRATCH] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SCRATCH];
static NSCRATCH: AtomicUsize = AtomicUsize::new(0);
/// Device and inode of each registered scratch file: the handler removes a
/// path only while it still names the file dioscope created.
static SCRATCH_ID: [(AtomicU64, AtomicU64); MAX_SCRATCH] =
    [const { (AtomicU64::new(0), AtomicU64::new(0)) }; MAX_SCRATCH];

extern "C" fn on_signal(sig: libc::c_int) {
    let n = STOPS.fetch_add(1, Ordering::SeqCst) + 1;
    LAST.store(sig as u32, Ordering::SeqCst);
    if n >= 2 && sig == libc::SIGINT && !CLEANUP_FIRST.load(Ordering::SeqCst) {
        for (slot, id) in SCRATCH.iter().zip(SCRATCH_ID.iter()) {
            let p = slot.load(Ordering::SeqCst);
            if p.is_null() {
                continue;
            }
            // SAFETY: p is a leaked NUL-terminated CString; st is plain data
            // on our stack; lstat and unlink are async-signal-safe.
            unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::lstat(p, &mut st) == 0
                    && st.st_dev == id.0.load(Ordering::SeqCst)
                    && st.st_ino == id.1.load(Ordering::SeqCst)
                {
                    libc::unlink(p);
                }
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

/// A second SIGINT no longer exits at once: this process has devices to
/// remove and finishes removing them (quickly) instead of abandoning them.
pub fn finish_cleanup_on_second_interrupt() {
    CLEANUP_FIRST.store(true, Ordering::SeqCst);
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

/// Register a scratch file (just created) to be unlinked if the user insists
/// with a second SIGINT — only while the path still names that file.
pub fn register_scratch(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    use std::os::unix::fs::MetadataExt;
    // Only a file that exists can be registered: its identity is what the
    // handler checks before removing the path.
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return;
    };
    let i = NSCRATCH.fetch_add(1, Ordering::SeqCst);
    if i < MAX_SCRATCH {
        SCRATCH_ID[i].0.store(m.dev(), Ordering::SeqCst);
        SCRATCH_ID[i].1.store(m.ino(), Ordering::SeqCst);
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
