//! Calls relative to an open directory (`openat`, `fstatat`, `unlinkat`):
//! a private working folder creates and removes its files through its own
//! descriptor, so a rename or symlink planted on the way cannot redirect
//! them.

use crate::cvt;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;

fn name_c(name: &std::ffi::OsStr) -> io::Result<CString> {
    if name.is_empty() || name.as_bytes().contains(&b'/') || name == "." || name == ".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a plain file name", name.to_string_lossy()),
        ));
    }
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a file name"))
}

/// Create `name` in the directory `dir`: a new regular file (`O_CREAT |
/// O_EXCL | O_NOFOLLOW`), opened for writing, mode `mode`.
pub fn create_new_at(dir: RawFd, name: &std::ffi::OsStr, mode: u32) -> io::Result<File> {
    let c = name_c(name)?;
    // SAFETY: c is NUL-terminated; the descriptor returned is ours to own.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Who a file is: device, inode, mode (`st_mode`) and birth time in ns
/// (0 where the file system does not keep it). An inode number freed by
/// `unlink` can be given at once to a new file; the birth time tells them
/// apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub btime_ns: u64,
}

fn statx_raw(dir: RawFd, c: &CString, flags: i32) -> io::Result<FileId> {
    // SAFETY: st is plain data filled by statx; c is NUL-terminated.
    unsafe {
        let mut st: libc::statx = std::mem::zeroed();
        cvt(libc::statx(
            dir,
            c.as_ptr(),
            flags,
            libc::STATX_BASIC_STATS | libc::STATX_BTIME,
            &mut st,
        ))?;
        let btime_ns = if st.stx_mask & libc::STATX_BTIME != 0 {
            (st.stx_btime.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(st.stx_btime.tv_nsec as u64)
        } else {
            0
        };
        Ok(FileId {
            dev: libc::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            mode: st.stx_mode as u32,
            btime_ns,
        })
    }
}

/// [`FileId`] of `name` in `dir`, without following a symbolic link.
pub fn stat_at(dir: RawFd, name: &std::ffi::OsStr) -> io::Result<FileId> {
    let c = name_c(name)?;
    statx_raw(dir, &c, libc::AT_SYMLINK_NOFOLLOW)
}

/// [`FileId`] of an open descriptor.
pub fn stat_fd(fd: RawFd) -> io::Result<FileId> {
    let c = CString::new("").map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    statx_raw(fd, &c, libc::AT_EMPTY_PATH)
}

/// Open `name` in `dir` read-only, never through a symbolic link (and
/// without blocking on a FIFO).
pub fn open_at_readonly(dir: RawFd, name: &std::ffi::OsStr) -> io::Result<File> {
    let c = name_c(name)?;
    // SAFETY: c is NUL-terminated; the descriptor returned is ours to own.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Remove `name` from `dir` (a directory with `AT_REMOVEDIR`).
pub fn unlink_at(dir: RawFd, name: &std::ffi::OsStr, is_dir: bool) -> io::Result<()> {
    let c = name_c(name)?;
    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: c is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, c.as_ptr(), flags) }).map(drop)
}

/// Clear `FD_CLOEXEC` of `fd`, so that a child process inherits it.
pub fn inherit(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on an integer descriptor.
    let fl = cvt(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFD, fl & !libc::FD_CLOEXEC) }).map(drop)
}

/// Send `sig` to the process group `pgid` (`kill(-pgid)`).
pub fn signal_group(pgid: u32, sig: i32) -> io::Result<()> {
    let p = libc::pid_t::try_from(pgid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    if p <= 1 {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    // SAFETY: kill takes integers only.
    cvt(unsafe { libc::kill(-p, sig) }).map(drop)
}

/// `openat(dir, name, flags, mode)`: `name` is one path component, opened
/// relative to the directory descriptor `dir` (so a rename of the
/// directory's path between a check and the open changes nothing).
pub fn openat(
    dir: RawFd,
    name: &std::ffi::OsStr,
    flags: i32,
    mode: u32,
) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = name_c(name)?;
    // SAFETY: a NUL-terminated string that outlives the call; the returned
    // descriptor is new and owned by nobody else.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            c.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: `fd` was just opened and is valid.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// `mkdirat(dir, name, mode)`: a new directory `name` in the directory
/// descriptor `dir`; EEXIST when anything has that name.
pub fn mkdirat(dir: RawFd, name: &std::ffi::OsStr, mode: u32) -> io::Result<()> {
    let c = name_c(name)?;
    // SAFETY: a NUL-terminated string that outlives the call.
    cvt(unsafe { libc::mkdirat(dir, c.as_ptr(), mode as libc::mode_t) }).map(drop)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what `name` in `dir` is,
/// without following a symbolic link there. `(st_mode, st_dev, st_ino, st_rdev)`.
pub fn lstatat(dir: RawFd, name: &std::ffi::OsStr) -> io::Result<(u32, u64, u64, u64)> {
    let c = name_c(name)?;
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated string and a valid out-pointer for the call.
    cvt(unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok((st.st_mode, st.st_dev, st.st_ino, st.st_rdev))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn create_new_at_refuses_a_symlink_and_an_existing_name() {
        let d = tempfile::tempdir().unwrap();
        let dir = File::open(d.path()).unwrap();
        std::fs::write(d.path().join("victim"), b"keep").unwrap();
        std::os::unix::fs::symlink(d.path().join("victim"), d.path().join("link")).unwrap();
        assert!(create_new_at(dir.as_raw_fd(), "link".as_ref(), 0o600).is_err());
        assert!(create_new_at(dir.as_raw_fd(), "victim".as_ref(), 0o600).is_err());
        assert!(create_new_at(dir.as_raw_fd(), "../x".as_ref(), 0o600).is_err());
        assert_eq!(std::fs::read(d.path().join("victim")).unwrap(), b"keep");
        let f = create_new_at(dir.as_raw_fd(), "new".as_ref(), 0o600).unwrap();
        drop(f);
        let id = stat_at(dir.as_raw_fd(), "new".as_ref()).unwrap();
        assert_eq!(id.mode & 0o777, 0o600);
        let f = File::open(d.path().join("new")).unwrap();
        assert_eq!(stat_fd(f.as_raw_fd()).unwrap(), id);
        unlink_at(dir.as_raw_fd(), "new".as_ref(), false).unwrap();
        assert!(!d.path().join("new").exists());
    }
}
