//! fio's iolog: record the I/Os a job issues (`write_iolog`) and replay
//! them (`read_iolog`). The format is fio's trace format v2 (`fio version 2
//! iolog`: `FILE add|open|close`, `FILE read|write|trim|sync|datasync
//! OFFSET LENGTH`, `FILE wait USEC`) and v3 (`fio version 3 iolog`: the same
//! with a leading timestamp in microseconds from the start of the job, as
//! fio 3.33 writes it).
//! dioscope writes v3.
//!
//! Recording appends each issued I/O to a buffer allocated once and
//! written out when nearly full, so the worker allocates nothing per I/O.
//! Replay parses the whole log before the run: a bad line is an error
//! naming the file, the line and what is wrong, before any I/O.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What one line of an iolog asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
    Trim,
    Sync,
    Datasync,
}

impl OpKind {
    fn parse(s: &str) -> Option<OpKind> {
        Some(match s {
            "read" => OpKind::Read,
            "write" => OpKind::Write,
            "trim" => OpKind::Trim,
            "sync" => OpKind::Sync,
            "datasync" => OpKind::Datasync,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Trim => "trim",
            OpKind::Sync => "sync",
            OpKind::Datasync => "datasync",
        }
    }
}

/// One I/O of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// When to issue it, in ns from the start (v3 timestamps, v2 waits).
    pub at_ns: u64,
    pub file: u32,
    pub kind: OpKind,
    pub offset: u64,
    pub len: u64,
}

/// A parsed iolog: its files (in order of `add`) and its I/Os.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IoLog {
    pub files: Vec<PathBuf>,
    pub ops: Vec<Op>,
    /// Whether the log carries times (v3, or v2 with waits).
    pub timed: bool,
}

/// Why an iolog cannot be replayed: the file, the line, the problem.
#[derive(Debug, thiserror::Error)]
pub enum IologError {
    #[error("read_iolog={path}: {err}; check the path")]
    Read { path: String, err: io::Error },
    #[error("read_iolog={path}: line {line}: {msg}")]
    Bad {
        path: String,
        line: usize,
        msg: String,
    },
}

impl IoLog {
    /// Read and parse the log at `path`.
    pub fn load(path: &Path) -> Result<IoLog, IologError> {
        let text = std::fs::read_to_string(path).map_err(|err| IologError::Read {
            path: path.display().to_string(),
            err,
        })?;
        IoLog::parse(&text).map_err(|(line, msg)| IologError::Bad {
            path: path.display().to_string(),
            line,
            msg,
        })
    }

    /// Parse a v2 or v3 log; the error is (1-based line, what is wrong).
    pub fn parse(text: &str) -> Result<IoLog, (usize, String)> {
        let mut lines = text.lines().enumerate();
        let version = parse_header(lines.next().map(|(_, l)| l))?;
        let mut p = Parser {
            log: IoLog {
                timed: version == 3,
                ..Default::default()
            },
            version,
            open: Vec::new(),
            wait_ns: 0,
        };
        for (i, line) in lines {
            p.line(i + 1, line)?;
        }
        if p.log.ops.is_empty() {
            return Err((1, "the log has no I/O".into()));
        }
        Ok(p.log)
    }

    /// Apply `replay_scale` (divide) and `replay_align` (round down) to
    /// every offset, and send everything to one file with `replay_redirect`.
    pub fn adjust(&mut self, scale: u64, align: u64, redirect: Option<&Path>) {
        for op in &mut self.ops {
            op.offset /= scale.max(1);
            if align > 1 {
                op.offset &= !(align - 1);
            }
        }
        if let Some(r) = redirect {
            self.files = vec![r.to_path_buf()];
            for op in &mut self.ops {
                op.file = 0;
            }
        }
    }

    /// `replay_skip`: drop the I/Os of these kinds ("sync" drops datasync
    /// too); `replay_time_scale`: run at `pct` percent of the recorded rate.
    pub(super) fn filter_and_pace(&mut self, skip: &[String], pct: u32) {
        let skipped = |k: OpKind| {
            let name = match k {
                OpKind::Datasync => "sync",
                k => k.as_str(),
            };
            skip.iter().any(|s| s == name)
        };
        self.ops.retain(|o| !skipped(o.kind));
        if pct != 100 && pct > 0 {
            for o in &mut self.ops {
                o.at_ns = o.at_ns.saturating_mul(100) / pct as u64;
            }
        }
    }

    /// Bytes file `f` must hold for the log's I/Os.
    pub fn extent(&self, f: u32) -> u64 {
        self.ops
            .iter()
            .filter(|o| o.file == f)
            .map(|o| o.offset + o.len)
            .max()
            .unwrap_or(0)
    }

    /// The longest I/O (the buffer size a replay needs).
    pub fn max_len(&self) -> u64 {
        self.ops.iter().map(|o| o.len).max().unwrap_or(0)
    }

    /// Whether the log changes data (writes or trims).
    pub(super) fn modifies(&self) -> bool {
        self.ops
            .iter()
            .any(|o| matches!(o.kind, OpKind::Write | OpKind::Trim))
    }
}

/// The version an iolog's first line declares (2 or 3).
fn parse_header(first: Option<&str>) -> Result<u32, (usize, String)> {
    match first {
        Some(l) if l.trim() == "fio version 2 iolog" => Ok(2),
        Some(l) if l.trim() == "fio version 3 iolog" => Ok(3),
        Some(l) => Err((
            1,
            format!(
                "'{}' is not an iolog header; dioscope replays fio's 'fio version 2 iolog' \
                 and 'fio version 3 iolog' (blktrace files are not supported by dioscope)",
                l.trim()
            ),
        )),
        None => Err((1, "the file is empty".into())),
    }
}

/// A byte count `s` (a `what`: offset, length, wait) on line `n`.
fn byte_num(n: usize, s: &str, what: &str) -> Result<u64, (usize, String)> {
    s.parse()
        .map_err(|_| (n, format!("'{s}' is not a byte {what}")))
}

/// The state of parsing an iolog's lines after its header.
struct Parser {
    log: IoLog,
    version: u32,
    /// Per file of `log.files`: whether it is open.
    open: Vec<bool>,
    /// v2: the waits so far, in ns.
    wait_ns: u64,
}

impl Parser {
    /// Parse line `n` (1-based).
    fn line(&mut self, n: usize, line: &str) -> Result<(), (usize, String)> {
        let mut t: Vec<&str> = line.split_whitespace().collect();
        if t.is_empty() {
            return Ok(());
        }
        let at_ns = if self.version == 3 {
            let us: u64 = t[0]
                .parse()
                .map_err(|_| (n, format!("'{}' is not a timestamp (µs)", t[0])))?;
            t.remove(0);
            us.saturating_mul(1_000)
        } else {
            self.wait_ns
        };
        match t.as_slice() {
            [f, "add"] => self.add(f),
            [f, a @ ("open" | "close")] => {
                let k = self.file_index(n, f)?;
                self.open[k] = *a == "open";
            }
            [_, "wait", us] | [_, "wait", us, _] if self.version == 2 => self.wait(n, us)?,
            [f, a, off, len] => self.io(n, at_ns, f, a, off, len)?,
            // sync and datasync may come without offset and length.
            [f, a @ ("sync" | "datasync")] => {
                let k = self.file_index(n, f)?;
                self.log.ops.push(Op {
                    at_ns,
                    file: k as u32,
                    kind: OpKind::parse(a).unwrap_or(OpKind::Sync),
                    offset: 0,
                    len: 0,
                });
            }
            _ => {
                return Err((
                    n,
                    format!(
                        "'{}' is not 'FILE ACTION' or 'FILE ACTION OFFSET LENGTH'",
                        line.trim()
                    ),
                ))
            }
        }
        Ok(())
    }

    /// `FILE add`: a new file (again: nothing).
    fn add(&mut self, f: &str) {
        if !self.log.files.iter().any(|p| p == Path::new(f)) {
            self.log.files.push(PathBuf::from(f));
            self.open.push(false);
        }
    }

    /// The index of file `f`, used on line `n`: an error before its `add`.
    fn file_index(&self, n: usize, f: &str) -> Result<usize, (usize, String)> {
        self.log
            .files
            .iter()
            .position(|p| p == Path::new(f))
            .ok_or_else(|| (n, format!("{f} is used before its 'add' line")))
    }

    /// v2 `FILE wait USEC`: delay the I/Os that follow.
    fn wait(&mut self, n: usize, us: &str) -> Result<(), (usize, String)> {
        let us = byte_num(n, us, "wait")?;
        self.log.timed = true;
        // fio ignores waits under 100 µs.
        if us >= 100 {
            self.wait_ns += us * 1000;
        }
        Ok(())
    }

    /// `FILE ACTION OFFSET LENGTH`: one I/O, at `at_ns`.
    fn io(
        &mut self,
        n: usize,
        at_ns: u64,
        f: &str,
        a: &str,
        off: &str,
        len: &str,
    ) -> Result<(), (usize, String)> {
        let kind = OpKind::parse(a).ok_or_else(|| {
            (
                n,
                format!("'{a}' is not read, write, trim, sync, datasync or wait"),
            )
        })?;
        let k = self.file_index(n, f)?;
        if !self.open[k] {
            return Err((n, format!("{f} is used while not open")));
        }
        let (offset, len) = (byte_num(n, off, "offset")?, byte_num(n, len, "length")?);
        if len == 0 && matches!(kind, OpKind::Read | OpKind::Write | OpKind::Trim) {
            return Err((n, "an I/O of length 0".into()));
        }
        self.log.ops.push(Op {
            at_ns,
            file: k as u32,
            kind,
            offset,
            len,
        });
        Ok(())
    }
}

/// The buffer of a recording: flushed when this much is pending.
const FLUSH_AT: usize = 60 << 10;

/// Records the I/Os a worker issues in fio's v3 format.
#[derive(Debug)]
pub struct IologWriter {
    file: File,
    buf: Vec<u8>,
    names: Vec<Vec<u8>>,
    start_ns: u64,
    err: Option<io::Error>,
}

impl IologWriter {
    /// Create `path` (appending, as fio does) with the header and each file's
    /// `add` and `open` lines.
    pub fn create(path: &Path, files: &[PathBuf], start_ns: u64) -> io::Result<IologWriter> {
        let file = crate::outfile::open(
            path,
            crate::outfile::Mode::Append,
            &crate::outfile::Rules::new("write_iolog"),
        )
        .map_err(|e| io::Error::other(e.why))?;
        let mut w = IologWriter {
            file,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            names: files
                .iter()
                .map(|p| p.as_os_str().as_encoded_bytes().to_vec())
                .collect(),
            start_ns,
            err: None,
        };
        w.buf.extend_from_slice(b"fio version 3 iolog\n");
        for i in 0..w.names.len() {
            w.action(start_ns, i as u32, "add");
        }
        for i in 0..w.names.len() {
            w.action(start_ns, i as u32, "open");
        }
        Ok(w)
    }

    fn stamp(&mut self, now_ns: u64, file: u32) {
        let us = now_ns.saturating_sub(self.start_ns) / 1_000;
        let _ = write!(self.buf, "{us} ");
        if let Some(n) = self.names.get(file as usize) {
            self.buf.extend_from_slice(n);
        }
    }

    fn action(&mut self, now_ns: u64, file: u32, what: &str) {
        self.stamp(now_ns, file);
        let _ = writeln!(self.buf, " {what}");
    }

    /// One issued I/O.
    #[inline]
    pub fn io(&mut self, now_ns: u64, file: u32, kind: OpKind, offset: u64, len: u64) {
        self.stamp(now_ns, file);
        let _ = writeln!(self.buf, " {} {offset} {len}", kind.as_str());
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    #[cold]
    #[inline(never)]
    fn flush(&mut self) {
        if let Err(e) = self.file.write_all(&self.buf) {
            self.err.get_or_insert(e);
        }
        self.buf.clear();
    }

    /// Close every file and write out the rest; the first write error, if any.
    pub fn finish(mut self, now_ns: u64) -> io::Result<()> {
        for i in 0..self.names.len() {
            self.action(now_ns, i as u32, "close");
        }
        self.flush();
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_v2_and_v3() {
        let v2 = "fio version 2 iolog\n/tmp/a add\n/tmp/a open\n/tmp/a write 0 4096\n\
                  /tmp/a wait 50\n/tmp/a wait 2000\n/tmp/a read 4096 8192\n/tmp/a sync 0 0\n\
                  /tmp/a trim 0 4096\n/tmp/a close\n";
        let l = IoLog::parse(v2).unwrap();
        assert_eq!(l.files, vec![PathBuf::from("/tmp/a")]);
        assert_eq!(l.ops.len(), 4);
        assert_eq!(l.ops[0].kind, OpKind::Write);
        assert_eq!(l.ops[0].at_ns, 0);
        // The 50 µs wait is dropped, the 2 ms one counts.
        assert_eq!(l.ops[1].at_ns, 2_000_000);
        assert_eq!((l.ops[1].offset, l.ops[1].len), (4096, 8192));
        assert_eq!(l.ops[2].kind, OpKind::Sync);
        assert_eq!(l.ops[3].kind, OpKind::Trim);
        assert!(l.modifies());
        assert_eq!(l.extent(0), 12288);

        let v3 = "fio version 3 iolog\n0 /tmp/b add\n0 /tmp/c add\n0 /tmp/b open\n\
                  0 /tmp/c open\n1 /tmp/c read 8192 4096\n7 /tmp/b read 0 4096\n9 /tmp/b close\n";
        let l = IoLog::parse(v3).unwrap();
        assert_eq!(l.files.len(), 2);
        assert_eq!(l.ops[0].file, 1);
        assert_eq!(l.ops[1].at_ns, 7_000);
        assert!(!l.modifies());
    }

    #[test]
    fn bad_lines_are_named() {
        let e = IoLog::parse("hello\n").unwrap_err();
        assert!(e.1.contains("not an iolog header"), "{e:?}");
        let e = IoLog::parse("fio version 2 iolog\n/a read 0 4096\n").unwrap_err();
        assert_eq!(e.0, 2);
        assert!(e.1.contains("before its 'add'"), "{e:?}");
        let e = IoLog::parse("fio version 2 iolog\n/a add\n/a read 0 4096\n").unwrap_err();
        assert!(e.1.contains("not open"), "{e:?}");
        let e = IoLog::parse("fio version 2 iolog\n/a add\n/a open\n/a frob 0 1\n").unwrap_err();
        assert!(e.1.contains("frob"), "{e:?}");
        let e =
            IoLog::parse("fio version 3 iolog\n0 /a add\n0 /a open\nx /a read 0 1\n").unwrap_err();
        assert!(e.1.contains("timestamp"), "{e:?}");
    }

    #[test]
    fn writer_output_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        let files = vec![PathBuf::from("/x/f0"), PathBuf::from("/x/f1")];
        let mut w = IologWriter::create(&p, &files, 1_000).unwrap();
        let mut want = Vec::new();
        for i in 0..5000u64 {
            let kind = if i % 3 == 0 {
                OpKind::Write
            } else {
                OpKind::Read
            };
            w.io(1_000 + i * 10_000, (i % 2) as u32, kind, i * 4096, 4096);
            want.push(((i % 2) as u32, kind, i * 4096, 4096));
        }
        w.finish(1_000 + 60_000_000).unwrap();
        let l = IoLog::load(&p).unwrap();
        assert_eq!(l.files, files);
        let got: Vec<_> = l
            .ops
            .iter()
            .map(|o| (o.file, o.kind, o.offset, o.len))
            .collect();
        assert_eq!(got, want);
        assert_eq!(l.ops[4999].at_ns, 4999 * 10_000 / 1_000 * 1_000);
    }

    #[test]
    fn adjust_scales_aligns_redirects() {
        let mut l = IoLog::parse(
            "fio version 2 iolog\n/a add\n/b add\n/a open\n/b open\n/a read 12288 4096\n/b read 5000 512\n",
        )
        .unwrap();
        l.filter_and_pace(&["read".to_string()], 100);
        assert!(l.ops.is_empty());
        let mut l = IoLog::parse(
            "fio version 3 iolog\n0 /a add\n0 /a open\n1000 /a write 0 4096\n2000 /a sync 0 0\n",
        )
        .unwrap();
        l.filter_and_pace(&["sync".to_string()], 200);
        assert_eq!(l.ops.len(), 1);
        assert_eq!(l.ops[0].at_ns, 500_000, "twice as fast");
        let mut l = IoLog::parse(
            "fio version 2 iolog\n/a add\n/b add\n/a open\n/b open\n/a read 12288 4096\n/b read 5000 512\n",
        )
        .unwrap();
        l.adjust(2, 4096, Some(Path::new("/dev/x")));
        assert_eq!(l.files, vec![PathBuf::from("/dev/x")]);
        assert_eq!(l.ops[0].offset, 4096);
        assert_eq!(l.ops[1].offset, 0);
        assert!(l.ops.iter().all(|o| o.file == 0));
    }
}
