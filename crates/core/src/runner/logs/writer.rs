//! The writer thread of a worker's logs: it takes the buffers of records
//! and the closed windows the worker's [`LogSink`](super::LogSink) sends,
//! formats fio's lines (`time_ms, value, direction, bs[, offset], prio`,
//! per I/O or per `log_avg_msec` window), fills the histogram log, writes
//! the files, and hands each emptied buffer back.

use super::hist::HistLog;
use super::{Acc, HistPlan, LogPlan, Msg, Rec};
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender};

/// The writer thread's state: the files, the histogram log, the columns.
pub(super) struct Writer {
    files: Vec<(&'static str, std::io::BufWriter<std::fs::File>)>,
    hist: Option<HistLog>,
    max_value: bool,
    offset: bool,
    prio: bool,
    both: bool,
    issue_time: bool,
    shared: bool,
    /// The logs have a line per I/O (no `log_avg_msec`); else the records
    /// are the histogram log's alone, the logs get their lines per window.
    per_io: bool,
    /// The slat log stays empty (fio's, for I/O done when submitted).
    no_slat: bool,
    /// Added to every time: the epoch's ms at the job's start, or 0.
    epoch_ms: u64,
    /// Time of the latest record.
    last_t: u64,
    /// Lines of one file formatted before a write (whole lines per write
    /// keep shared files' lines intact).
    line: String,
}

impl Writer {
    pub(super) fn new(
        plan: &LogPlan,
        files: Vec<(&'static str, std::fs::File)>,
        hist: Option<(HistPlan, std::fs::File)>,
        epoch_ms: u64,
    ) -> Writer {
        Writer {
            files: files
                .into_iter()
                .map(|(k, f)| (k, std::io::BufWriter::with_capacity(1 << 20, f)))
                .collect(),
            hist: hist.map(|(p, f)| HistLog::new(&p, f)),
            max_value: plan.max_value,
            offset: plan.offset,
            prio: plan.prio,
            both: plan.both,
            issue_time: plan.issue_time,
            shared: plan.shared,
            per_io: plan.avg_ms == 0,
            no_slat: plan.no_slat,
            epoch_ms,
            last_t: 0,
            line: String::new(),
        }
    }

    // `pub`, not `pub(super)`, keeps the signature on one line; `Writer`
    // itself is `pub(super)`.
    pub fn run(mut self, full: Receiver<Msg>, empty: SyncSender<Vec<Rec>>) -> std::io::Result<()> {
        let mut err = None;
        for m in full {
            let r = match m {
                Msg::Recs(mut buf) => {
                    let r = if err.is_none() {
                        self.write(&buf)
                    } else {
                        Ok(())
                    };
                    buf.clear();
                    let _ = empty.try_send(buf);
                    r
                }
                Msg::Window {
                    end,
                    len,
                    acc,
                    rates,
                } if err.is_none() => self.window(end, len, &acc, rates),
                Msg::Window { .. } => Ok(()),
            };
            if let Err(e) = r {
                err.get_or_insert(e);
            }
        }
        for (_, f) in &mut self.files {
            f.flush()?;
        }
        if let Some(h) = &mut self.hist {
            h.finish(self.last_t / 1_000_000 + self.epoch_ms, &mut self.line)?;
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

    /// The last column: fio's priority. dioscope issues every I/O at the
    /// default priority (it has no `prio`/`cmdprio` options): 0, not a
    /// high-priority I/O; with `log_prio`, the ioprio value, 0, in hex.
    fn prio_col(&self) -> &'static str {
        if self.prio {
            ", 0x0000"
        } else {
            ", 0"
        }
    }

    fn write(&mut self, recs: &[Rec]) -> std::io::Result<()> {
        use std::fmt::Write as _;
        if let Some(h) = &mut self.hist {
            for r in recs {
                h.add(r, self.epoch_ms, &mut self.line)?;
            }
        }
        if let Some(r) = recs.last() {
            self.last_t = self.last_t.max(r.t_ns);
        }
        if !self.per_io {
            return Ok(());
        }
        let prio = self.prio_col();
        for (kind, f) in &mut self.files {
            if *kind == "slat" && self.no_slat {
                continue;
            }
            self.line.clear();
            for r in recs {
                let v = Self::value(kind, r).round() as u64;
                let _ = write!(
                    self.line,
                    "{}, {v}, {}, {}",
                    r.t_ns / 1_000_000 + self.epoch_ms,
                    if r.trim { 2 } else { r.write as u8 },
                    r.len
                );
                if self.offset {
                    let _ = write!(self.line, ", {}", r.offset);
                }
                self.line.push_str(prio);
                if self.issue_time {
                    // Issued when its completion latency began: the
                    // completion time less clat, in ns on the time column's base.
                    let issued =
                        r.t_ns.saturating_sub(r.clat_ns as u64) + self.epoch_ms * 1_000_000;
                    let _ = write!(self.line, ", {issued}");
                }
                self.line.push('\n');
            }
            f.write_all(self.line.as_bytes())?;
            if self.shared {
                f.flush()?;
            }
        }
        Ok(())
    }

    /// One line per direction with I/O in the window ending at `end` (ns
    /// since the job's start) and `len` ns long: the mean (or the maximum
    /// with `log_max_value`) of latencies; the window's rate for bandwidth
    /// (KiB/s) and IOPS (fio samples these once per window, so its mean
    /// and maximum are the same rate); bs and offset 0, as fio writes them.
    fn window(&mut self, end: u64, len: u64, acc: &[Acc; 2], rates: bool) -> std::io::Result<()> {
        use std::fmt::Write as _;
        let secs = len as f64 / 1e9;
        let prio = self.prio_col();
        for (kind, f) in &mut self.files {
            let rate = matches!(*kind, "bw" | "iops");
            if (*kind == "slat" && self.no_slat) || (rate && !rates) {
                continue;
            }
            self.line.clear();
            for (d, w) in acc.iter().enumerate() {
                if (rate && w.n == 0) || (!rate && w.lat_n == 0) {
                    continue;
                }
                let mean = |sum: u64| sum as f64 / w.lat_n as f64;
                let value = |max: bool| match (*kind, max) {
                    ("bw", _) => w.bytes as f64 / 1024.0 / secs,
                    ("iops", _) => w.n as f64 / secs,
                    ("slat", true) => w.slat_max as f64,
                    ("clat", true) => w.clat_max as f64,
                    ("lat", true) => w.lat_max as f64,
                    ("slat", false) => mean(w.slat_sum),
                    ("clat", false) => mean(w.clat_sum),
                    _ => mean(w.slat_sum + w.clat_sum),
                };
                let _ = write!(
                    self.line,
                    "{}, {}",
                    end / 1_000_000 + self.epoch_ms,
                    value(self.max_value && !self.both).round() as u64
                );
                if self.both {
                    let _ = write!(self.line, ", {}", value(true).round() as u64);
                }
                let _ = write!(self.line, ", {d}, 0");
                if self.offset {
                    self.line.push_str(", 0");
                }
                self.line.push_str(prio);
                if self.issue_time {
                    self.line.push_str(", 0");
                }
                self.line.push('\n');
            }
            f.write_all(self.line.as_bytes())?;
            if self.shared {
                f.flush()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{rec, run};
    use super::super::LogSink;
    use super::*;

    #[test]
    fn epoch_prio_and_the_rates_of_windowed_maxima() {
        let d = tempfile::tempdir().unwrap();
        let p = |k: &str| d.path().join(k).display().to_string();
        let start = dioscope_sys::clock::now_ns();
        let wall = dioscope_sys::clock::wall_ms();
        let mut s = LogSink::start(
            &LogPlan {
                files: vec![("clat", p("e"))],
                prio: true,
                epoch_clock: Some(0),
                ..Default::default()
            },
            start,
        )
        .unwrap();
        s.push(rec(5, false));
        s.finish().unwrap();
        let l = std::fs::read_to_string(p("e")).unwrap();
        let f: Vec<&str> = l.trim().split(", ").collect();
        let t: u64 = f[0].parse().unwrap();
        assert!(t.abs_diff(wall + 5) < 1000, "{t} vs {wall}: Unix epoch ms");
        assert_eq!(f[4], "0x0000", "log_prio: the priority value in hex: {l}");
        let e = LogSink::start(
            &LogPlan {
                files: vec![("clat", p("x"))],
                epoch_clock: Some(12345),
                ..Default::default()
            },
            start,
        )
        .err()
        .unwrap();
        assert!(e.contains("12345") && e.contains("CLOCK_REALTIME"), "{e}");
        // log_max_value: latencies' maximum, but IOPS stay the window's rate.
        let recs: Vec<Rec> = (0..2000).map(|i| rec(i / 2, false)).collect();
        let out = run(
            LogPlan {
                files: vec![("iops", p("mi"))],
                avg_ms: 500,
                max_value: true,
                ..Default::default()
            },
            &recs,
        );
        assert_eq!(out[0].lines().next(), Some("500, 2000, 0, 0, 0"));
    }

    #[test]
    fn window_value_both_and_issue_time_columns() {
        let d = tempfile::tempdir().unwrap();
        let p = |k: &str| d.path().join(k).display().to_string();
        // Latencies 4100 then 8100 ns (slat 100): mean 6100, max 8100.
        let mut recs: Vec<Rec> = (0..1000).map(|i| rec(i / 2, false)).collect();
        for r in recs.iter_mut().skip(1).step_by(2) {
            r.clat_ns = 8000;
        }
        let out = run(
            LogPlan {
                files: vec![("lat", p("bl")), ("iops", p("bi"))],
                avg_ms: 250,
                both: true,
                offset: true,
                ..Default::default()
            },
            &recs,
        );
        // time, mean, max, direction, bs, offset, prio; the mean has the
        // I/O that reached the window's end too (fio): 501 I/Os.
        assert_eq!(out[0].lines().next(), Some("250, 6096, 8100, 0, 0, 0, 0"));
        // One rate per window: both columns hold it.
        assert_eq!(out[1].lines().next(), Some("250, 2000, 2000, 0, 0, 0, 0"));
        // log_issue_time: the completion time less clat, in ns, last.
        let out = run(
            LogPlan {
                files: vec![("clat", p("it"))],
                offset: true,
                issue_time: true,
                ..Default::default()
            },
            &[rec(7, true)],
        );
        assert_eq!(
            out[0],
            format!("7, 4000, 1, 4096, 8192, 0, {}\n", 7_000_000 - 4000)
        );
    }
}
