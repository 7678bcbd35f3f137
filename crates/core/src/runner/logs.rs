//! fio's log family: `write_bw_log`, `write_iops_log`, `write_lat_log`
//! (slat, clat, lat), with `log_avg_msec`, `log_max_value`, `log_offset`
//! and `per_job_logs`, in fio's file names and line format
//! (`time_ms, value, direction, bs[, offset], prio`), so fio's own plotting
//! tools (fio2gnuplot, fio_generate_plots) read them.
//!
//! Cost only when asked. Without a log option the worker pays one
//! predictable branch per I/O. With one, each measured completion appends a
//! 32-byte record to a buffer allocated before the first I/O; a full buffer
//! is handed over a bounded channel to this worker's writer thread, which
//! formats the lines (one per I/O, or windowed averages/maxima when
//! `log_avg_msec` is set) and writes them, and hands the emptied buffer
//! back. Four buffers of [`REC_PER_BUF`] records circulate, so the loop
//! never allocates and never writes to disk. If the writer falls three
//! buffers behind, the worker waits for one to come back (counted: the
//! result's notes say how often) rather than grow without bound or drop
//! records. Measured cost: docs/PERFORMANCE.md.
//!
//! Files: `PREFIX_TYPE.N.log` (N: the job's index, 1..N over all jobs and
//! clones, as fio numbers them), `PREFIX_TYPE.log` with `per_job_logs=0`
//! (workers of a job append whole lines to the one file). dioscope repeats
//! a job in trials: trial 1 writes fio's name, trial K > 1 adds `.tK`
//! (`PREFIX_bw.1.t2.log`), which fio's tools' `*_bw.*.log` globs also find.
//! Times are ms since the job's start in that trial; ramp I/Os are not
//! logged. `write_hist_log` and `log_compression` are not implemented.

use crate::job::JobSpec;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Records per buffer (32 B each: 2 MiB per buffer, 8 MiB per worker).
pub const REC_PER_BUF: usize = 65_536;
const BUFFERS: usize = 4;

/// One completed I/O as the logs need it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rec {
    /// Completion time, ns since the job's start.
    pub t_ns: u64,
    pub offset: u64,
    pub slat_ns: u32,
    pub clat_ns: u32,
    pub len: u32,
    pub write: bool,
}

/// Which logs a worker writes, and how. Built before the trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogPlan {
    /// (kind, path): kind is `bw`, `iops`, `slat`, `clat` or `lat`.
    pub files: Vec<(&'static str, String)>,
    pub avg_ms: u64,
    pub max_value: bool,
    pub offset: bool,
    /// Several workers append to one file (`per_job_logs=0`).
    pub shared: bool,
}

/// The logs of worker `index` (1-based over all jobs' clones) in trial
/// `trial` (0-based); `None` when the job asks for none.
pub fn plan_for(j: &JobSpec, index: usize, trial: u32) -> Option<LogPlan> {
    let mut files = Vec::new();
    let name = |prefix: &str, kind: &str| {
        let t = if trial > 0 {
            format!(".t{}", trial + 1)
        } else {
            String::new()
        };
        if j.per_job_logs {
            format!("{prefix}_{kind}.{index}{t}.log")
        } else {
            format!("{prefix}_{kind}{t}.log")
        }
    };
    if let Some(p) = &j.write_bw_log {
        files.push(("bw", name(p, "bw")));
    }
    if let Some(p) = &j.write_iops_log {
        files.push(("iops", name(p, "iops")));
    }
    if let Some(p) = &j.write_lat_log {
        for k in ["slat", "clat", "lat"] {
            files.push((k, name(p, k)));
        }
    }
    (!files.is_empty()).then_some(LogPlan {
        files,
        avg_ms: j.log_avg_msec,
        max_value: j.log_max_value,
        offset: j.log_offset,
        shared: !j.per_job_logs,
    })
}

/// The worker's end of the logs: the buffer being filled and the channels
/// to and from the writer thread.
pub struct LogSink {
    buf: Vec<Rec>,
    full: SyncSender<Vec<Rec>>,
    empty: Receiver<Vec<Rec>>,
    writer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    /// Times the worker waited for the writer.
    pub stalls: u64,
}

impl LogSink {
    /// Open the files (truncated, or appended to when shared) and start
    /// the writer thread. `Err` names the file and the reason.
    pub fn start(plan: &LogPlan) -> Result<LogSink, String> {
        let mut files = Vec::new();
        for (kind, path) in &plan.files {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(plan.shared)
                .truncate(!plan.shared)
                .open(path)
                .map_err(|e| {
                    format!("cannot open the log {path}: {e} (check the directory and permissions)")
                })?;
            files.push((*kind, f));
        }
        let (full_tx, full_rx) = sync_channel::<Vec<Rec>>(BUFFERS);
        let (empty_tx, empty_rx) = sync_channel::<Vec<Rec>>(BUFFERS);
        for _ in 1..BUFFERS {
            let _ = empty_tx.send(Vec::with_capacity(REC_PER_BUF));
        }
        let w = Writer::new(plan, files);
        let writer = std::thread::Builder::new()
            .name("dioscope-log".into())
            .spawn(move || w.run(full_rx, empty_tx))
            .map_err(|e| format!("cannot start the log writer: {e}"))?;
        Ok(LogSink {
            buf: Vec::with_capacity(REC_PER_BUF),
            full: full_tx,
            empty: empty_rx,
            writer: Some(writer),
            stalls: 0,
        })
    }

    /// Append one record: no allocation (the buffer has its capacity).
    #[inline(always)]
    pub fn push(&mut self, r: Rec) {
        if self.buf.len() == REC_PER_BUF {
            self.hand_over();
        }
        self.buf.push(r);
    }

    #[cold]
    #[inline(never)]
    fn hand_over(&mut self) {
        let next = match self.empty.try_recv() {
            Ok(b) => b,
            Err(_) => {
                self.stalls += 1;
                // The writer is behind: wait for a buffer rather than drop
                // records or grow (bounded memory).
                match self.empty.recv() {
                    Ok(b) => b,
                    Err(_) => Vec::with_capacity(REC_PER_BUF),
                }
            }
        };
        let full = std::mem::replace(&mut self.buf, next);
        let _ = self.full.send(full);
    }

    /// Hand over what is left, wait for the writer to finish the files.
    pub fn finish(mut self) -> Result<u64, String> {
        let rest = std::mem::take(&mut self.buf);
        let _ = self.full.send(rest);
        let LogSink {
            full,
            writer,
            stalls,
            ..
        } = self;
        drop(full);
        match writer.map(|w| w.join()) {
            Some(Ok(Ok(()))) | None => Ok(stalls),
            Some(Ok(Err(e))) => Err(format!("writing a log failed: {e}")),
            Some(Err(_)) => Err("the log writer panicked".into()),
        }
    }
}

/// Windowed values of one direction of one log.
#[derive(Clone, Copy, Default)]
struct Window {
    sum: f64,
    max: f64,
    n: u64,
    bytes: u64,
}

/// The writer thread's state: the files and, for windowed logs, the open
/// window per file and direction.
struct Writer {
    files: Vec<(&'static str, std::io::BufWriter<std::fs::File>)>,
    avg_ns: u64,
    max_value: bool,
    offset: bool,
    shared: bool,
    win_end: u64,
    /// Time of the latest record.
    last_t: u64,
    win: Vec<[Window; 2]>,
    /// Lines of one file formatted before a write (whole lines per write
    /// keep shared files' lines intact).
    line: String,
}

impl Writer {
    fn new(plan: &LogPlan, files: Vec<(&'static str, std::fs::File)>) -> Writer {
        let n = files.len();
        Writer {
            files: files
                .into_iter()
                .map(|(k, f)| (k, std::io::BufWriter::with_capacity(1 << 20, f)))
                .collect(),
            avg_ns: plan.avg_ms * 1_000_000,
            max_value: plan.max_value,
            offset: plan.offset,
            shared: plan.shared,
            win_end: plan.avg_ms * 1_000_000,
            last_t: 0,
            win: vec![[Window::default(); 2]; n],
            line: String::new(),
        }
    }

    fn run(mut self, full: Receiver<Vec<Rec>>, empty: SyncSender<Vec<Rec>>) -> std::io::Result<()> {
        let mut err = None;
        for mut buf in full {
            if err.is_none() {
                if let Err(e) = self.write(&buf) {
                    err = Some(e);
                }
            }
            buf.clear();
            let _ = empty.try_send(buf);
        }
        // The last window, if the run covered at least half of it (a
        // sliver's rate would be noise), with its rate over the time covered.
        if self.avg_ns > 0 && self.last_t + self.avg_ns / 2 >= self.win_end {
            let covered = self.last_t + self.avg_ns - self.win_end;
            let end = self.win_end;
            self.avg_ns = covered.max(1);
            self.close_window(end)?;
        }
        for (_, f) in &mut self.files {
            f.flush()?;
        }
        err.map_or(Ok(()), Err)
    }

    /// The value of one record in a log of `kind`: fio's units (latency ns,
    /// bandwidth bytes per ms of completion latency, i.e. fio's "KiB/s"
    /// column, and 1 I/O for the IOPS log).
    fn value(kind: &str, r: &Rec) -> f64 {
        match kind {
            "slat" => r.slat_ns as f64,
            "clat" => r.clat_ns as f64,
            "lat" => r.slat_ns as f64 + r.clat_ns as f64,
            "bw" => r.len as f64 * 1e6 / (r.clat_ns.max(1) as f64),
            _ => 1.0,
        }
    }

    fn write(&mut self, recs: &[Rec]) -> std::io::Result<()> {
        use std::fmt::Write as _;
        if self.avg_ns == 0 {
            for (kind, f) in &mut self.files {
                self.line.clear();
                for r in recs {
                    let v = Self::value(kind, r).round() as u64;
                    let _ = write!(
                        self.line,
                        "{}, {v}, {}, {}",
                        r.t_ns / 1_000_000,
                        r.write as u8,
                        r.len
                    );
                    if self.offset {
                        let _ = write!(self.line, ", {}", r.offset);
                    }
                    self.line.push_str(", 0\n");
                }
                f.write_all(self.line.as_bytes())?;
                if self.shared {
                    f.flush()?;
                }
            }
            return Ok(());
        }
        for r in recs {
            self.last_t = r.t_ns;
            while r.t_ns >= self.win_end {
                let end = self.win_end;
                self.close_window(end)?;
                self.win_end += self.avg_ns;
            }
            for (i, (kind, _)) in self.files.iter().enumerate() {
                let w = &mut self.win[i][r.write as usize];
                let v = Self::value(kind, r);
                w.sum += v;
                w.max = w.max.max(v);
                w.n += 1;
                w.bytes += r.len as u64;
            }
        }
        Ok(())
    }

    /// One line per direction with I/O in the window: the mean (or the
    /// maximum with `log_max_value`) of latencies; the window's rate for
    /// bandwidth (KiB/s) and IOPS; bs and offset 0, as fio writes them.
    fn close_window(&mut self, end: u64) -> std::io::Result<()> {
        use std::fmt::Write as _;
        let secs = self.avg_ns as f64 / 1e9;
        for (i, (kind, f)) in self.files.iter_mut().enumerate() {
            self.line.clear();
            for d in 0..2 {
                let w = self.win[i][d];
                if w.n == 0 {
                    continue;
                }
                let v = match *kind {
                    "bw" if !self.max_value => w.bytes as f64 / 1024.0 / secs,
                    "iops" if !self.max_value => w.n as f64 / secs,
                    _ if self.max_value => w.max,
                    _ => w.sum / w.n as f64,
                };
                let _ = write!(
                    self.line,
                    "{}, {}, {d}, 0",
                    end / 1_000_000,
                    v.round() as u64
                );
                if self.offset {
                    self.line.push_str(", 0");
                }
                self.line.push_str(", 0\n");
                self.win[i][d] = Window::default();
            }
            f.write_all(self.line.as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t_ms: u64, write: bool) -> Rec {
        Rec {
            t_ns: t_ms * 1_000_000,
            offset: 8192,
            slat_ns: 100,
            clat_ns: 4000,
            len: 4096,
            write,
        }
    }

    #[test]
    fn names_follow_fio() {
        let mut j = JobSpec {
            write_bw_log: Some("x".into()),
            write_lat_log: Some("y".into()),
            per_job_logs: true,
            ..Default::default()
        };
        let p = plan_for(&j, 2, 0).unwrap();
        let names: Vec<&str> = p.files.iter().map(|f| f.1.as_str()).collect();
        assert_eq!(
            names,
            ["x_bw.2.log", "y_slat.2.log", "y_clat.2.log", "y_lat.2.log"]
        );
        assert_eq!(plan_for(&j, 2, 1).unwrap().files[0].1, "x_bw.2.t2.log");
        j.per_job_logs = false;
        assert_eq!(plan_for(&j, 2, 0).unwrap().files[0].1, "x_bw.log");
        assert!(plan_for(&JobSpec::default(), 1, 0).is_none());
    }

    fn run(plan: LogPlan, recs: &[Rec]) -> Vec<String> {
        let mut s = LogSink::start(&plan).unwrap();
        for r in recs {
            s.push(*r);
        }
        // Waits for the writer (counted) are allowed; losing lines is not.
        s.finish().unwrap();
        plan.files
            .iter()
            .map(|(_, p)| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    #[test]
    fn one_line_per_io_and_windows() {
        let d = tempfile::tempdir().unwrap();
        let p = |k: &str| d.path().join(k).display().to_string();
        let out = run(
            LogPlan {
                files: vec![("clat", p("c")), ("iops", p("i")), ("bw", p("b"))],
                offset: true,
                ..Default::default()
            },
            &[rec(1, false), rec(2, true)],
        );
        assert_eq!(
            out[0],
            "1, 4000, 0, 4096, 8192, 0\n2, 4000, 1, 4096, 8192, 0\n"
        );
        assert_eq!(out[1].lines().next(), Some("1, 1, 0, 4096, 8192, 0"));
        assert_eq!(out[2].lines().next(), Some("1, 1024000, 0, 4096, 8192, 0"));
        let recs: Vec<Rec> = (0..2000).map(|i| rec(i / 2, false)).collect();
        let out = run(
            LogPlan {
                files: vec![("iops", p("wi")), ("lat", p("wl"))],
                avg_ms: 500,
                ..Default::default()
            },
            &recs,
        );
        // 2 I/Os per ms: 2000 IOPS in each 500 ms window; mean latency.
        // The last window is the run's last, rated over the time it covered.
        let l: Vec<&str> = out[0].lines().collect();
        assert_eq!(l[0], "500, 2000, 0, 0, 0");
        let last: Vec<u64> = l[1].split(", ").map(|x| x.parse().unwrap()).collect();
        assert!(
            l.len() == 2 && last[0] == 1000 && (1990..=2010).contains(&last[1]),
            "{l:?}"
        );
        assert_eq!(out[1].lines().next(), Some("500, 4100, 0, 0, 0"));
    }

    #[test]
    fn more_records_than_buffers_hold_are_all_written() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("i").display().to_string();
        let n = REC_PER_BUF * 5 + 7;
        let recs: Vec<Rec> = (0..n as u64).map(|i| rec(i / 1000, false)).collect();
        let out = run(
            LogPlan {
                files: vec![("iops", path)],
                ..Default::default()
            },
            &recs,
        );
        assert_eq!(out[0].lines().count(), n);
    }
}
