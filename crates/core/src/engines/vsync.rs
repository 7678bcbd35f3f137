//! vsync: lseek then readv/writev. As in fio, a queue (iodepth > 1) is
//! emulated by coalescing: the I/Os of a batch that follow each other in the
//! file (same file and direction, each starting where the previous one
//! ended) go to the kernel in one call; the call blocks, so everything a
//! commit submits is complete when it returns.

use super::blocking::private_fds;
use super::{Caps, Completion, Engine, EngineDef, EngineOpts, IoDesc, SlotArena, WithEngine};
use dioscope_sys::vio::{Pos, SlotVec};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// Buffers in one readv/writev at most (Linux's IOV_MAX).
const IOV_MAX: usize = 1024;

pub struct Def;

impl EngineDef for Def {
    type Params = ();
    const NAMES: &'static [&'static str] = &["vsync"];
    const HELP: &'static str = "lseek(2) then readv(2)/writev(2); with iodepth > 1 the I/Os of a \
         batch that are adjacent in the file (same file and direction) go in one call, as fio \
         coalesces them — random I/O stays one call per I/O";
    const CAPS: Caps = Caps::BASE;
    fn with<W: WithEngine>(
        arena: SlotArena,
        fds: &[RawFd],
        _: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        let own = private_fds(fds)?;
        Ok((f.run(&mut Vsync::new(arena, own)), None))
    }
}

pub struct Vsync {
    arena: SlotArena,
    files: Vec<File>,
    vec: SlotVec,
    staged: Vec<IoDesc>,
    done: Vec<Completion>,
}

impl Vsync {
    fn new(arena: SlotArena, files: Vec<File>) -> Vsync {
        let n = arena.nslots() as usize;
        Vsync {
            arena,
            files,
            vec: SlotVec::new(n.min(IOV_MAX)),
            staged: Vec::with_capacity(n),
            done: Vec::with_capacity(n),
        }
    }

    /// One call for `staged[a..b]` (adjacent in the file); each I/O gets its
    /// share of the bytes moved, in file order.
    fn run(&mut self, a: usize, b: usize) {
        let first = self.staged[a];
        let fd = self.files[first.file as usize].as_raw_fd();
        let r = self.vec.rw(
            fd,
            &mut self.arena,
            self.staged[a..b].iter().map(|d| (d.slot, d.len)),
            first.write,
            Pos::Seek(first.offset),
        );
        match r {
            Ok(mut n) => {
                for d in &self.staged[a..b] {
                    let got = n.min(d.len as usize);
                    n -= got;
                    self.done.push(Completion {
                        slot: d.slot,
                        res: got as i32,
                    });
                }
            }
            Err(e) => {
                let res = -e.raw_os_error().unwrap_or(libc::EIO);
                for d in &self.staged[a..b] {
                    self.done.push(Completion { slot: d.slot, res });
                }
            }
        }
    }
}

impl Engine for Vsync {
    #[inline]
    fn stage(&mut self, d: IoDesc) {
        self.staged.push(d);
    }

    fn commit(&mut self, _min: u32) -> io::Result<u32> {
        let n = self.staged.len();
        let mut a = 0;
        while a < n {
            let mut b = a + 1;
            while b < n && b - a < IOV_MAX {
                let (p, d) = (self.staged[b - 1], self.staged[b]);
                if d.file != p.file || d.write != p.write || d.offset != p.offset + p.len as u64 {
                    break;
                }
                b += 1;
            }
            self.run(a, b);
            a = b;
        }
        self.staged.clear();
        Ok(n as u32)
    }

    #[inline]
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        let n = self.done.len().min(out.len());
        out[..n].copy_from_slice(&self.done[..n]);
        self.done.drain(..n);
        n
    }

    fn arena(&mut self) -> &mut SlotArena {
        &mut self.arena
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_ios_share_a_call_and_each_gets_its_bytes() {
        // An unlinked file: nothing to remove afterwards.
        let f = tempfile::tempfile().unwrap();
        let mut arena = SlotArena::new(4, 4096).unwrap();
        for s in 0..4u32 {
            arena.slot_mut(s).fill(b'a' + s as u8);
        }
        let mut v = Vsync::new(arena, vec![f]);
        let io = |slot: u32, write: bool, offset: u64| IoDesc {
            slot,
            write,
            file: 0,
            offset,
            len: 4096,
            prio: 0,
        };
        // Two adjacent writes, then one elsewhere.
        v.stage(io(0, true, 0));
        v.stage(io(1, true, 4096));
        v.stage(io(2, true, 5 * 4096));
        assert_eq!(v.commit(0).unwrap(), 3);
        let mut out = [Completion::default(); 4];
        assert_eq!(v.reap(&mut out), 3);
        assert!(out[..3].iter().all(|c| c.res == 4096));
        // Read back: the file is 6 blocks; a read of blocks 5 and 6 is short.
        v.stage(io(3, false, 0));
        v.stage(io(0, false, 4096));
        v.stage(io(1, false, 5 * 4096));
        v.stage(io(2, false, 6 * 4096));
        v.commit(0).unwrap();
        assert_eq!(v.reap(&mut out), 4);
        assert_eq!(
            out.map(|c| c.res),
            [4096, 4096, 4096, 0],
            "the short call's bytes go to the first I/O of the run"
        );
        assert!(v.arena().slot_mut(3).iter().all(|&c| c == b'a'));
        assert!(v.arena().slot_mut(0).iter().all(|&c| c == b'b'));
        assert!(v.arena().slot_mut(1).iter().all(|&c| c == b'c'));
    }
}
