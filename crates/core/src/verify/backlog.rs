//! `verify_backlog=N`: check written blocks while the job runs, not only
//! after it. Every N completed writes the worker reads back
//! `verify_backlog_batch` of them (default N: all; fewer leaves some
//! unchecked, more checks some twice, as in fio) with a synchronous `pread`
//! on the job's own file descriptor, and checks them like the read-back does.
//! The reads stall the worker, as fio's interleaved verify reads do; they are
//! not counted as the job's reads.

use super::{BlockHook, Checker};
use dioscope_sys::buf::AlignedBuf;
use std::os::fd::RawFd;

pub struct Backlog {
    every: usize,
    batch: usize,
    /// Writes completed since the last check: (file, offset, length).
    recent: Vec<(u32, u64, u32)>,
    fds: Vec<RawFd>,
    buf: AlignedBuf,
    pub checker: Checker,
    pub read_errors: u64,
    pub first_read_error: Option<String>,
}

impl Backlog {
    /// `max_len`: the largest write. Fails only when the read buffer cannot
    /// be mapped.
    pub fn new(
        every: u32,
        batch: u32,
        fds: Vec<RawFd>,
        max_len: usize,
        checker: Checker,
    ) -> std::io::Result<Backlog> {
        let every = every.max(1) as usize;
        Ok(Backlog {
            every,
            batch: if batch == 0 { every } else { batch as usize },
            recent: Vec::with_capacity(every),
            fds,
            buf: AlignedBuf::new(max_len)?,
            checker,
            read_errors: 0,
            first_read_error: None,
        })
    }

    /// A write completed: remember it, and check a batch every `every` writes.
    #[inline]
    pub fn written(&mut self, file: u32, offset: u64, len: u32) {
        self.recent.push((file, offset, len));
        if self.recent.len() >= self.every {
            self.check();
        }
    }

    #[cold]
    #[inline(never)]
    fn check(&mut self) {
        for k in 0..self.batch {
            let (file, offset, len) = self.recent[k % self.recent.len()];
            let Some(&fd) = self.fds.get(file as usize) else {
                continue;
            };
            let buf = &mut self.buf.as_mut_slice()[..len as usize];
            match dioscope_sys::io::pread(fd, buf, offset) {
                Ok(n) => self.checker.after_read(&buf[..n], file, offset),
                Err(e) => {
                    self.read_errors += 1;
                    self.first_read_error.get_or_insert_with(|| {
                        format!("verify_backlog read of {len} bytes at offset {offset}: {e}")
                    });
                }
            }
        }
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    #[test]
    fn checks_every_n_writes_and_finds_a_corrupted_block() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let spec = VerifySpec::new(Algo::Crc32c, 4096, 1, 1);
        let mut w = Writer::new(spec.clone(), Written::new(&[(0, 1 << 20)], 4096));
        let mut data = vec![0u8; 8 * 4096];
        w.before_write(&mut data, 0, 0);
        // Block 5 reaches the file damaged.
        data[5 * 4096 + 200] ^= 1;
        std::fs::write(&path, &data).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        use std::os::fd::AsRawFd;
        let c = Checker::new(spec, None, Some(1), false);
        let mut b = Backlog::new(4, 0, vec![f.as_raw_fd()], 4096, c).unwrap();
        for i in 0..3 {
            b.written(0, i * 4096, 4096);
        }
        assert_eq!(b.checker.checked, 0, "nothing checked before 4 writes");
        b.written(0, 3 * 4096, 4096);
        assert_eq!((b.checker.checked, b.checker.bad_count), (4, 0));
        // A batch of 2 of every 4: blocks 4 and 5, not 6 and 7.
        b.batch = 2;
        for i in 4..8 {
            b.written(0, i * 4096, 4096);
        }
        assert_eq!((b.checker.checked, b.checker.bad_count), (6, 1));
        assert_eq!(b.checker.bad[0].offset, 5 * 4096);
    }
}
