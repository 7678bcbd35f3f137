//! The classic synchronous calls fio's sync family uses: `lseek` then
//! `read`/`write` (fio's `sync`), `readv`/`writev` after `lseek` (`vsync`,
//! several slot buffers in one call), and `preadv`/`pwritev` (`pvsync`).
//! Also the descriptor facts an engine needs to reopen a file privately
//! (its status flags) or to map it (its size).

use crate::queue::SlotArena;
use crate::{cvt, cvt_long};
use std::io;
use std::os::fd::RawFd;

/// Where a call puts its bytes: after an `lseek` on the descriptor's own
/// position (shared by every user of the open file), or at an explicit offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pos {
    Seek(u64),
    At(u64),
}

fn seek(fd: RawFd, off: u64) -> io::Result<()> {
    // SAFETY: lseek takes no memory.
    let r = unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn retry(mut f: impl FnMut() -> libc::ssize_t) -> io::Result<usize> {
    loop {
        match cvt_long(f() as libc::c_long) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|n| n as usize),
        }
    }
}

/// `lseek(off)` then `read(2)` into `buf`. Retries on EINTR (seeking again:
/// an interrupted read may have moved nothing, but the position is ours to set).
pub fn seek_read(fd: RawFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
    seek(fd, off)?;
    // SAFETY: buf is valid for writes of its length.
    retry(|| unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) })
}

/// `lseek(off)` then `write(2)` from `buf`.
pub fn seek_write(fd: RawFd, buf: &[u8], off: u64) -> io::Result<usize> {
    seek(fd, off)?;
    // SAFETY: buf is valid for reads of its length.
    retry(|| unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) })
}

/// Vectored I/O over slot buffers of one [`SlotArena`]: the iovec array is
/// allocated once (at most `max` entries), so a call allocates nothing.
pub struct SlotVec {
    iov: Vec<libc::iovec>,
}

impl SlotVec {
    pub fn new(max: usize) -> SlotVec {
        SlotVec {
            iov: Vec::with_capacity(max.max(1)),
        }
    }

    /// Read into (`write` false) or write from the buffers of `slots`
    /// (`(slot, len)`, in file order) with one `readv`/`preadv` or
    /// `writev`/`pwritev`. Returns the bytes moved (possibly short).
    pub fn rw(
        &mut self,
        fd: RawFd,
        arena: &mut SlotArena,
        slots: impl Iterator<Item = (u32, u32)>,
        write: bool,
        pos: Pos,
    ) -> io::Result<usize> {
        self.iov.clear();
        for (slot, len) in slots {
            assert!(
                self.iov.len() < self.iov.capacity(),
                "more buffers than the SlotVec was made for"
            );
            // io_ptr checks the slot and the length against the arena.
            self.iov.push(libc::iovec {
                iov_base: arena.io_ptr(slot, len).cast(),
                iov_len: len as usize,
            });
        }
        let n = self.iov.len() as libc::c_int;
        let iov = self.iov.as_ptr();
        // SAFETY: every iovec points into `arena`, which the &mut borrow keeps
        // alive and unaliased for the call; lengths were checked by io_ptr.
        let r = match (pos, write) {
            (Pos::Seek(off), false) => {
                seek(fd, off)?;
                retry(|| unsafe { libc::readv(fd, iov, n) })
            }
            (Pos::Seek(off), true) => {
                seek(fd, off)?;
                retry(|| unsafe { libc::writev(fd, iov, n) })
            }
            (Pos::At(off), false) => retry(|| unsafe { libc::preadv(fd, iov, n, off as i64) }),
            (Pos::At(off), true) => retry(|| unsafe { libc::pwritev(fd, iov, n, off as i64) }),
        };
        self.iov.clear();
        r
    }
}

/// The file status flags of `fd` (`fcntl(F_GETFL)`): access mode, `O_DIRECT`, …
pub fn status_flags(fd: RawFd) -> io::Result<i32> {
    // SAFETY: F_GETFL takes no argument.
    cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })
}

/// `dup(2)` with close-on-exec: a new descriptor number for the same open file.
pub fn dup(fd: RawFd) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_DUPFD_CLOEXEC returns a fresh descriptor we own.
    let n = cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) })?;
    // SAFETY: n is a new, open descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(n) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn seek_and_vectored_calls_move_the_right_bytes() {
        // An unlinked file: nothing to remove afterwards.
        let f = tempfile::tempfile().unwrap();
        let fd = f.as_raw_fd();
        assert_eq!(seek_write(fd, b"hello", 10).unwrap(), 5);
        let mut b = [0u8; 5];
        assert_eq!(seek_read(fd, &mut b, 10).unwrap(), 5);
        assert_eq!(&b, b"hello");

        let mut arena = SlotArena::new(3, 4096).unwrap();
        for s in 0..3u32 {
            arena.slot_mut(s).fill(b'a' + s as u8);
        }
        let mut v = SlotVec::new(3);
        // Slots 2 then 0: file order is the order given.
        let n = v
            .rw(
                fd,
                &mut arena,
                [(2, 100), (0, 50)].into_iter(),
                true,
                Pos::Seek(0),
            )
            .unwrap();
        assert_eq!(n, 150);
        let n = v
            .rw(fd, &mut arena, [(1, 4096)].into_iter(), true, Pos::At(150))
            .unwrap();
        assert_eq!(n, 4096);
        let mut back = vec![0u8; 150 + 4096];
        assert_eq!(seek_read(fd, &mut back, 0).unwrap(), back.len());
        assert!(back[..100].iter().all(|&c| c == b'c'));
        assert!(back[100..150].iter().all(|&c| c == b'a'));
        assert!(back[150..].iter().all(|&c| c == b'b'));
        // preadv into slot 0.
        arena.slot_mut(0).fill(0);
        let n = v
            .rw(fd, &mut arena, [(0, 100)].into_iter(), false, Pos::At(0))
            .unwrap();
        assert_eq!(n, 100);
        assert!(arena.slot_mut(0)[..100].iter().all(|&c| c == b'c'));
        assert!(status_flags(fd).unwrap() & libc::O_ACCMODE == libc::O_RDWR);
        let d = dup(fd).unwrap();
        assert_ne!(d.as_raw_fd(), fd);
    }
}
