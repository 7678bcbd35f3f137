//! fio's log family: `write_bw_log`, `write_iops_log`, `write_lat_log`
//! (slat, clat, lat), with `log_avg_msec`, `log_max_value`, `log_offset`,
//! `log_prio`, `log_unix_epoch` / `log_alternate_epoch` and `per_job_logs`,
//! in fio's file names and line format (`time_ms, value, direction, bs[,
//! offset], prio`), so fio's own plotting tools (fio2gnuplot,
//! fio_generate_plots) read them; and `write_hist_log` with
//! `log_hist_msec` / `log_hist_coarseness`: completion-latency histograms
//! in fio's bins (`time_ms, direction, bs, bin0, …, bin1855`), which fio's
//! `fiologparser_hist.py` turns into percentiles.
//!
//! Cost only when asked. Without a log option the worker pays one
//! predictable branch per I/O. With `log_avg_msec`, the worker sums each
//! window itself (a few adds per I/O into two preallocated accumulators)
//! and sends one message per window. A per-I/O log (or the histogram log)
//! appends a 32-byte record per measured completion to a buffer allocated
//! before the first I/O; a full buffer is handed over a bounded channel to
//! this worker's writer thread, which formats the lines (or fills the
//! histogram) and writes them, and hands the emptied buffer back. Four
//! buffers of [`REC_PER_BUF`] records circulate, so the loop never
//! allocates and never writes to disk. If the writer falls three
//! buffers behind, the worker waits for one to come back (counted: the
//! result's notes say how often) rather than grow without bound or drop
//! records. Measured cost: docs/PERFORMANCE.md.
//!
//! Files: `PREFIX_TYPE.N.log` (N: the job's index, 1..N over all jobs and
//! clones, as fio numbers them), `PREFIX_TYPE.log` with `per_job_logs=0`
//! (workers of a job append whole lines to the one file). dioscope repeats
//! a job in trials: trial 1 writes fio's name, trial K > 1 adds `.tK`
//! (`PREFIX_bw.1.t2.log`), which fio's tools' `*_bw.*.log` globs also find.
//! Times are ms since the job's start in that trial (or on the epoch of
//! `log_unix_epoch` / `log_alternate_epoch_clock_id`); ramp I/Os are not
//! logged.
//!
//! The writer thread (`logs/writer.rs`) formats the lines and writes them;
//! fio's latency bins and the histogram log are `logs/hist.rs`.

pub mod agg;
mod hist;
mod writer;

pub use hist::{fio_plat_index, fio_plat_lower, FIO_PLAT_BITS, FIO_PLAT_NR};

use crate::job::JobSpec;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use writer::Writer;

/// Records per buffer (32 B each: 2 MiB per buffer, 8 MiB per worker).
const REC_PER_BUF: usize = 65_536;
const BUFFERS: usize = 4;
const MS: u64 = 1_000_000;

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
    /// A trim (`rw=trim`, `trimwrite`): direction 2 in the per-I/O logs, as
    /// fio writes it (`write` is true too, trims count on the write side).
    pub trim: bool,
}

/// Which logs a worker writes, and how. Built before the trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogPlan {
    /// (kind, path): kind is `bw`, `iops`, `slat`, `clat` or `lat`.
    pub files: Vec<(&'static str, String)>,
    pub(super) avg_ms: u64,
    pub(super) max_value: bool,
    pub offset: bool,
    /// `log_prio`: the prio column is the I/O's priority value in hex.
    pub prio: bool,
    /// `log_window_value=both`: a window's line has the mean, then the maximum.
    pub both: bool,
    /// `log_issue_time`: a last column with the I/O's issue time in ns.
    pub(super) issue_time: bool,
    /// The slat log has lines: fio measures no submission latency for an
    /// I/O done when submitted (sync engines, null at iodepth 1), and
    /// leaves their slat log empty.
    pub(super) no_slat: bool,
    /// Several workers append to one file (`per_job_logs=0`).
    pub shared: bool,
    /// `write_hist_log`.
    pub hist: Option<HistPlan>,
    /// When the job stops at the latest, ns since its start (its ramp and
    /// runtime; 0: no runtime): windows ending then have no rate lines.
    stop_ns: u64,
    /// Times on this clock's epoch (`clock_gettime` id) instead of from
    /// the job's start: `log_unix_epoch` (0) or `log_alternate_epoch`.
    pub(super) epoch_clock: Option<i32>,
}

/// A histogram log: its file, window and coarseness.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistPlan {
    pub path: String,
    /// `log_hist_msec`; 0 writes an empty file, as fio does.
    pub ms: u64,
    /// `log_hist_coarseness` (0–6): 2^c neighbouring bins summed.
    pub coarseness: u32,
}

/// The logs of worker `index` (1-based over all jobs' clones) in trial
/// `trial` (0-based); `None` when the job asks for none.
pub(super) fn plan_for(j: &JobSpec, index: usize, trial: u32) -> Option<LogPlan> {
    let mut files = Vec::new();
    let name =
        |prefix: &str, kind: &str| crate::job::created::log_file(j, prefix, kind, index, trial);
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
    let hist = j.write_hist_log.as_ref().map(|p| HistPlan {
        path: name(p, "clat_hist"),
        ms: j.log_hist_msec,
        coarseness: j.log_hist_coarseness,
    });
    (!files.is_empty() || hist.is_some()).then_some(LogPlan {
        files,
        avg_ms: j.log_avg_msec,
        max_value: j.log_max_value,
        offset: j.log_offset,
        prio: j.log_prio,
        both: j.log_window_both,
        issue_time: j.log_issue_time,
        // No submission latency where an I/O completes as it is submitted:
        // sync engines, and engines without real I/O (null) at depth 1.
        no_slat: crate::engines::caps(j.ioengine).sync
            || (!crate::engines::caps(j.ioengine).real_io && j.iodepth <= 1),
        shared: !j.per_job_logs,
        hist,
        stop_ns: if j.runtime_us > 0 {
            (j.ramp_time_us + j.runtime_us) * 1000
        } else {
            0
        },
        // fio: either option counts times from the epoch of the clock
        // `log_alternate_epoch_clock_id` names (0, CLOCK_REALTIME: Unix).
        epoch_clock: (j.log_unix_epoch || j.log_alternate_epoch)
            .then_some(j.log_alternate_epoch_clock_id),
    })
}

/// One direction's windowed sums, kept by the worker (`log_avg_msec`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Acc {
    /// I/Os and bytes, for the rates (bw, iops).
    n: u64,
    bytes: u64,
    /// I/Os in the latency sums: fio counts the I/O that closes a window
    /// in that window's latencies, and in the next one's rate.
    lat_n: u64,
    slat_sum: u64,
    clat_sum: u64,
    slat_max: u64,
    clat_max: u64,
    lat_max: u64,
}

impl Acc {
    #[inline(always)]
    fn add(&mut self, r: &Rec) {
        self.add_rate(r);
        self.add_lat(r);
    }
    #[inline(always)]
    fn add_rate(&mut self, r: &Rec) {
        self.n += 1;
        self.bytes += r.len as u64;
    }
    #[inline(always)]
    fn add_lat(&mut self, r: &Rec) {
        let (s, c) = (r.slat_ns as u64, r.clat_ns as u64);
        self.lat_n += 1;
        self.slat_sum += s;
        self.clat_sum += c;
        self.slat_max = self.slat_max.max(s);
        self.clat_max = self.clat_max.max(c);
        self.lat_max = self.lat_max.max(s + c);
    }
}

/// What the worker sends its writer.
enum Msg {
    /// Records, one per I/O (per-I/O logs, the histogram log).
    Recs(Vec<Rec>),
    /// A closed window (`log_avg_msec`): its end (ns since the job's
    /// start), its length and its sums per direction; `rates`: whether the
    /// bandwidth and IOPS logs get its line.
    Window {
        end: u64,
        len: u64,
        acc: [Acc; 2],
        rates: bool,
    },
}

/// The open window of windowed logs, in the worker.
struct Windows {
    len: u64,
    end: u64,
    /// When the job stops at the latest (its runtime), ns since its start.
    stop: u64,
    /// Time of the latest record.
    last: u64,
    acc: [Acc; 2],
}

/// The worker's end of the logs: the buffer being filled, the open window
/// and the channels to and from the writer thread.
pub struct LogSink {
    buf: Vec<Rec>,
    /// Records go to the writer (per-I/O logs or the histogram log).
    recs: bool,
    /// Windowed logs: summed here, one message per window.
    win: Option<Windows>,
    full: SyncSender<Msg>,
    empty: Receiver<Vec<Rec>>,
    writer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    /// Times the worker waited for the writer.
    pub stalls: u64,
}

impl LogSink {
    /// Open the files (truncated, or appended to when shared) and start
    /// the writer thread. `start_ns` is the job's start on
    /// [`dioscope_sys::clock::now_ns`]'s time line (records' times count
    /// from it). `Err` names the file and the reason.
    pub fn start(plan: &LogPlan, start_ns: u64) -> Result<LogSink, String> {
        // Through the one checked way to create a file (outfile::open):
        // never a target, a device, a FIFO or through a planted symlink.
        let open = |path: &str| {
            let mode = if plan.shared {
                crate::outfile::Mode::Append
            } else {
                crate::outfile::Mode::Truncate
            };
            crate::outfile::open(
                std::path::Path::new(path),
                mode,
                &crate::outfile::Rules::new("a log file"),
            )
            .map_err(|e| format!("cannot open the log {path}: {}", e.why))
        };
        let mut files = Vec::new();
        for (kind, path) in &plan.files {
            files.push((*kind, open(path)?));
        }
        let hist = match &plan.hist {
            Some(h) => Some((h.clone(), open(&h.path)?)),
            None => None,
        };
        // The job's start on the epoch's clock: that clock now, less the
        // time since the start.
        let epoch_ms = match plan.epoch_clock {
            None => 0,
            Some(id) => {
                let now = dioscope_sys::clock::clock_id_ns(id).ok_or_else(|| {
                    format!(
                        "log_alternate_epoch_clock_id={id}: this kernel has no such clock \
                         (0 is CLOCK_REALTIME, 1 CLOCK_MONOTONIC, 7 CLOCK_BOOTTIME)"
                    )
                })?;
                let since = dioscope_sys::clock::now_ns().saturating_sub(start_ns);
                now.saturating_sub(since) / 1_000_000
            }
        };
        let windowed = plan.avg_ms > 0 && !plan.files.is_empty();
        let recs = hist.is_some() || (plan.avg_ms == 0 && !plan.files.is_empty());
        // Room for the record buffers and for windows the writer has not
        // taken yet (a send beyond it waits: bounded, never allocating).
        let (full_tx, full_rx) = sync_channel::<Msg>(BUFFERS + 64);
        let (empty_tx, empty_rx) = sync_channel::<Vec<Rec>>(BUFFERS);
        if recs {
            for _ in 1..BUFFERS {
                let _ = empty_tx.send(Vec::with_capacity(REC_PER_BUF));
            }
        }
        let w = Writer::new(plan, files, hist, epoch_ms);
        let writer = std::thread::Builder::new()
            .name("dioscope-log".into())
            .spawn(move || w.run(full_rx, empty_tx))
            .map_err(|e| format!("cannot start the log writer: {e}"))?;
        let avg_ns = plan.avg_ms * 1_000_000;
        Ok(LogSink {
            buf: Vec::with_capacity(if recs { REC_PER_BUF } else { 0 }),
            recs,
            win: windowed.then_some(Windows {
                len: avg_ns,
                end: avg_ns,
                stop: if plan.stop_ns == 0 {
                    u64::MAX
                } else {
                    plan.stop_ns
                },
                last: 0,
                acc: [Acc::default(); 2],
            }),
            full: full_tx,
            empty: empty_rx,
            writer: Some(writer),
            stalls: 0,
        })
    }

    /// One measured I/O: into the open window (a few adds) and, when a
    /// log needs every I/O, into the buffer. No allocation: the buffer
    /// has its capacity, a window is sent by value.
    #[inline(always)]
    pub fn push(&mut self, r: Rec) {
        // Trims are in the per-I/O lines only (fio's windows of them: not kept).
        if let Some(w) = self.win.as_mut().filter(|_| !r.trim) {
            let d = r.write as usize;
            if r.t_ns >= w.end {
                // fio: the I/O that reaches a window's end is in its
                // latencies, and in the next window's rate.
                w.acc[d].add_lat(&r);
                self.close_windows(r.t_ns);
                if let Some(w) = &mut self.win {
                    w.acc[d].add_rate(&r);
                    w.last = r.t_ns;
                }
            } else {
                w.acc[d].add(&r);
                w.last = r.t_ns;
            }
        }
        if self.recs {
            if self.buf.len() == REC_PER_BUF {
                self.hand_over();
            }
            self.buf.push(r);
        }
    }

    /// Send the windows that ended before `t` (those without I/O are not
    /// logged, as in fio).
    #[cold]
    #[inline(never)]
    fn close_windows(&mut self, t: u64) {
        let Some(w) = &mut self.win else {
            return;
        };
        while t >= w.end {
            if w.acc.iter().any(|a| a.n > 0 || a.lat_n > 0) {
                let m = Msg::Window {
                    end: w.end,
                    len: w.len,
                    acc: w.acc,
                    // fio samples rates while the job runs: none for a
                    // window ending when (or after) its runtime does.
                    rates: w.end < w.stop,
                };
                if let Err(std::sync::mpsc::TrySendError::Full(m)) = self.full.try_send(m) {
                    self.stalls += 1;
                    let _ = self.full.send(m);
                }
                w.acc = [Acc::default(); 2];
            }
            w.end += w.len;
        }
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
        let _ = self.full.send(Msg::Recs(full));
    }

    /// Hand over what is left, wait for the writer to finish the files.
    pub fn finish(mut self) -> Result<u64, String> {
        if self.recs {
            let rest = std::mem::take(&mut self.buf);
            let _ = self.full.send(Msg::Recs(rest));
        }
        // The window open at the end, as fio ends it: the latency logs
        // get its line, at its last I/O's ms (fio flushes their pending
        // averages when the job ends); the bandwidth and IOPS logs do not
        // (fio samples rates at window ends only, and the job stops before
        // that of its last window).
        if let Some(w) = self.win.take() {
            if w.acc.iter().any(|a| a.lat_n > 0) {
                let _ = self.full.send(Msg::Window {
                    end: w.end.min(w.last / MS * MS),
                    len: (w.last + w.len - w.end).max(1),
                    acc: w.acc,
                    rates: false,
                });
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn rec(t_ms: u64, write: bool) -> Rec {
        Rec {
            t_ns: t_ms * 1_000_000,
            offset: 8192,
            slat_ns: 100,
            clat_ns: 4000,
            len: 4096,
            write,
            trim: false,
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

    pub(super) fn run(plan: LogPlan, recs: &[Rec]) -> Vec<String> {
        let mut s = LogSink::start(&plan, dioscope_sys::clock::now_ns()).unwrap();
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
        // The window open at the end (fio): the latency log's line, at
        // the end of the last I/O's ms, but no rate.
        assert_eq!(out[0], "500, 2000, 0, 0, 0\n");
        assert_eq!(out[1], "500, 4100, 0, 0, 0\n999, 4100, 0, 0, 0\n");
        let short: Vec<Rec> = (0..1300).map(|i| rec(i / 2, false)).collect();
        let out = run(
            LogPlan {
                files: vec![("bw", p("sb")), ("clat", p("sc"))],
                avg_ms: 500,
                ..Default::default()
            },
            &short,
        );
        assert_eq!(out[0], "500, 8000, 0, 0, 0\n");
        assert_eq!(out[1], "500, 4000, 0, 0, 0\n649, 4000, 0, 0, 0\n");
    }

    #[test]
    fn a_histogram_log_leaves_the_windowed_logs_their_windows() {
        // write_hist_log sends every record to the writer; the windowed
        // logs must still have only their lines per window (fio).
        let d = tempfile::tempdir().unwrap();
        let p = |k: &str| d.path().join(k).display().to_string();
        let recs: Vec<Rec> = (0..2000).map(|i| rec(i / 2, i % 3 == 0)).collect();
        let plan = LogPlan {
            files: vec![("iops", p("i")), ("bw", p("b")), ("clat", p("c"))],
            avg_ms: 500,
            hist: Some(HistPlan {
                path: p("h"),
                ms: 500,
                coarseness: 0,
            }),
            ..Default::default()
        };
        let out = run(plan, &recs);
        for (f, text) in out.iter().enumerate() {
            // Windows ending at 500 and 1000 ms, a line per direction.
            let times: Vec<&str> = text.lines().map(|l| l.split(',').next().unwrap()).collect();
            // The window open at the end: the latency log's alone.
            let want: &[&str] = if f == 2 {
                &["500", "500", "999", "999"]
            } else {
                &["500", "500"]
            };
            assert_eq!(times, want, "file {f}: {text}");
        }
        let hist = std::fs::read_to_string(p("h")).unwrap();
        assert_eq!(hist.lines().count(), 4, "{hist}");
        // A sync engine's slat log: the file, no lines (fio), per I/O or
        // per window.
        for avg_ms in [0, 500] {
            let plan = LogPlan {
                files: vec![("slat", p("s")), ("lat", p("l"))],
                avg_ms,
                no_slat: true,
                ..Default::default()
            };
            let out = run(plan, &recs);
            assert_eq!(out[0], "", "log_avg_msec={avg_ms}");
            assert!(!out[1].is_empty());
        }
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
