//! File-system metadata calls by name (the metadata engines' "I/O"): each
//! takes a NUL-terminated path the caller built once, so a call allocates
//! nothing and times only the system call.

use crate::{cvt, cvt_long};
use std::ffi::CStr;
use std::io;

/// `open(O_CREAT|O_RDWR, 0600)` then `close`: fio's filecreate operation.
pub fn create_close(path: &CStr) -> io::Result<()> {
    // SAFETY: path is NUL-terminated and outlives the call.
    let fd = cvt(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    })?;
    // SAFETY: fd was just opened by this thread and is closed once.
    unsafe { libc::close(fd) };
    Ok(())
}

/// `open(O_CREAT|O_EXCL|O_WRONLY)`: a new file, or `EEXIST`. Returns the descriptor.
pub fn create_new(path: &CStr) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: path is NUL-terminated and outlives the call.
    let fd = cvt(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    })?;
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// How a stat operation looks a name up (fio's `stat_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatKind {
    #[default]
    Stat,
    Lstat,
    Statx,
}

/// `stat(2)`, `lstat(2)` or `statx(2)` (all basic fields) of `path`.
pub fn stat(path: &CStr, kind: StatKind) -> io::Result<()> {
    match kind {
        StatKind::Stat | StatKind::Lstat => {
            let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: path is NUL-terminated; st is a writable stat buffer.
            let r = unsafe {
                if kind == StatKind::Stat {
                    libc::stat(path.as_ptr(), st.as_mut_ptr())
                } else {
                    libc::lstat(path.as_ptr(), st.as_mut_ptr())
                }
            };
            cvt(r).map(|_| ())
        }
        StatKind::Statx => {
            let mut st = std::mem::MaybeUninit::<libc::statx>::uninit();
            // SAFETY: path is NUL-terminated; st is a writable statx buffer.
            let r = unsafe {
                libc::statx(
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    0,
                    libc::STATX_ALL,
                    st.as_mut_ptr(),
                )
            };
            cvt(r).map(|_| ())
        }
    }
}

/// `unlink(2)`.
pub fn unlink(path: &CStr) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::unlink(path.as_ptr()) }).map(|_| ())
}

/// `mkdir(2)` with `mode`.
pub fn mkdir(path: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::mkdir(path.as_ptr(), mode as libc::mode_t) }).map(|_| ())
}

/// `rmdir(2)`.
pub fn rmdir(path: &CStr) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::rmdir(path.as_ptr()) }).map(|_| ())
}

/// `setxattr(2)`: set attribute `name` of `path` to `value` (created or replaced).
pub fn setxattr(path: &CStr, name: &CStr, value: &[u8]) -> io::Result<()> {
    // SAFETY: path and name are NUL-terminated; value is valid for its length.
    cvt(unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    })
    .map(|_| ())
}

/// `listxattr(2)` into `buf`: the bytes of the NUL-separated name list.
pub fn listxattr(path: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: path is NUL-terminated; buf is writable for its length.
    let n = unsafe { libc::listxattr(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    cvt_long(n as libc::c_long).map(|n| n as usize)
}

/// `getxattr(2)` into `buf`: the length of attribute `name`'s value.
pub fn getxattr(path: &CStr, name: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: path and name are NUL-terminated; buf is writable for its length.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    cvt_long(n as libc::c_long).map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    fn c(p: &std::path::Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    #[test]
    fn each_call_does_what_it_names() {
        let d = std::env::temp_dir().join(format!("dioscope-sys-meta-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        let f = c(&d.join("f"));
        create_close(&f).unwrap();
        assert!(d.join("f").is_file());
        assert_eq!(
            create_new(&f).unwrap_err().raw_os_error(),
            Some(libc::EEXIST)
        );
        for k in [StatKind::Stat, StatKind::Lstat, StatKind::Statx] {
            stat(&f, k).unwrap();
        }
        unlink(&f).unwrap();
        assert_eq!(
            stat(&f, StatKind::Stat).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
        let sub = c(&d.join("sub"));
        mkdir(&sub, 0o700).unwrap();
        assert!(d.join("sub").is_dir());
        rmdir(&sub).unwrap();
        assert!(!d.join("sub").exists());
        std::fs::remove_dir(&d).unwrap();
    }
}
