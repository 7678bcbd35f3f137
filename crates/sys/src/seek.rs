//! `lseek(2)` with `SEEK_DATA` / `SEEK_HOLE`: where a sparse file has data.
//!
//! File systems without hole tracking report the whole file as data, which is
//! the conservative answer for dioscope (it only warns about holes it sees).

use std::io;
use std::os::fd::RawFd;

fn lseek(fd: RawFd, off: u64, whence: libc::c_int) -> io::Result<Option<u64>> {
    // SAFETY: lseek takes no memory.
    let r = unsafe { libc::lseek(fd, off as libc::off_t, whence) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENXIO) {
            return Ok(None);
        }
        return Err(e);
    }
    Ok(Some(r as u64))
}

/// Start of the next data region at or after `off`; `None` when there is no
/// data from `off` to the end of the file.
pub fn seek_data(fd: RawFd, off: u64) -> io::Result<Option<u64>> {
    lseek(fd, off, libc::SEEK_DATA)
}

/// Start of the next hole at or after `off` (the file size counts as a hole);
/// `None` when `off` is at or past the end of the file.
pub fn seek_hole(fd: RawFd, off: u64) -> io::Result<Option<u64>> {
    lseek(fd, off, libc::SEEK_HOLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    #[test]
    fn finds_data_after_a_hole() {
        let p = std::env::temp_dir().join(format!("dioscope-seek-{}", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(4 << 20).unwrap();
        f.write_all_at(&[1u8; 4096], 2 << 20).unwrap();
        let fd = f.as_raw_fd();
        let d = seek_data(fd, 0).unwrap().unwrap();
        // Either the fs tracks holes (data at 2 MiB, possibly rounded down to
        // its block) or it reports everything as data (offset 0).
        assert!(d == 0 || (d <= 2 << 20 && d > 0), "data at {d}");
        let h = seek_hole(fd, d).unwrap().unwrap();
        assert!(h > d);
        assert_eq!(seek_hole(fd, 4 << 20).unwrap(), None);
        std::fs::remove_file(p).unwrap();
    }
}
