//! fio's latency bins and the histogram log (`write_hist_log`,
//! `log_hist_msec`, `log_hist_coarseness`), which the writer thread fills
//! from the records.
//!
//! Histogram logs follow fio: per direction, a line when an I/O completes
//! `log_hist_msec` or more after the window opened (the window then moves
//! on by whole `log_hist_msec`), with the counts of the I/Os since the
//! previous line in fio's 1856 latency bins (6 bits of mantissa: ≤ 1/64
//! relative width), `2^log_hist_coarseness` neighbouring bins summed. At
//! the end, the last, partial window is written too (fio drops it), so the
//! lines add up to every measured I/O.

use super::{HistPlan, Rec};
use std::io::Write;

/// fio's latency bins: values below 128 ns exact, above each power of two
/// split into 64 (`FIO_IO_U_PLAT_BITS` 6), 29 groups (`FIO_IO_U_PLAT_NR`).
pub const FIO_PLAT_BITS: u32 = 6;
pub const FIO_PLAT_NR: usize = 29 << FIO_PLAT_BITS;

/// The fio bin of a latency in ns.
pub fn fio_plat_index(ns: u64) -> usize {
    let val = 1u64 << FIO_PLAT_BITS;
    if ns < val << 1 {
        return ns as usize;
    }
    let msb = 63 - ns.leading_zeros();
    let error_bits = msb - FIO_PLAT_BITS;
    let base = ((error_bits + 1) as u64) << FIO_PLAT_BITS;
    let idx = base + ((ns >> error_bits) & (val - 1));
    (idx as usize).min(FIO_PLAT_NR - 1)
}

/// Lower bound of fio bin `idx` in ns (its width is ≤ 1/64 of it).
pub fn fio_plat_lower(idx: usize) -> u64 {
    let val = 1u64 << FIO_PLAT_BITS;
    let idx = idx as u64;
    if idx < val << 1 {
        return idx;
    }
    let error_bits = (idx >> FIO_PLAT_BITS) - 1;
    (1u64 << (error_bits + FIO_PLAT_BITS as u64)) + (idx % val) * (1u64 << error_bits)
}

/// The histogram log's state: per direction the counts since its last
/// line and when its window opened.
pub(super) struct HistLog {
    file: std::io::BufWriter<std::fs::File>,
    ms: u64,
    coarseness: u32,
    bins: [Vec<u64>; 2],
    /// Per direction: when the window opened (ms), the block size of its
    /// latest I/O.
    open: [Option<u64>; 2],
    bs: [u32; 2],
    n: [u64; 2],
}

impl HistLog {
    pub(super) fn new(plan: &HistPlan, f: std::fs::File) -> HistLog {
        HistLog {
            file: std::io::BufWriter::with_capacity(1 << 16, f),
            ms: plan.ms,
            coarseness: plan.coarseness.min(6),
            bins: [vec![0; FIO_PLAT_NR], vec![0; FIO_PLAT_NR]],
            open: [None; 2],
            bs: [0; 2],
            n: [0; 2],
        }
    }

    pub(super) fn add(&mut self, r: &Rec, epoch_ms: u64, line: &mut String) -> std::io::Result<()> {
        if self.ms == 0 || r.trim {
            return Ok(());
        }
        let d = r.write as usize;
        self.bins[d][fio_plat_index(r.clat_ns as u64)] += 1;
        self.n[d] += 1;
        self.bs[d] = r.len;
        let t = r.t_ns / 1_000_000;
        let open = *self.open[d].get_or_insert(t);
        let elapsed = t.saturating_sub(open);
        if elapsed >= self.ms {
            self.line(d, t + epoch_ms, line)?;
            // The next window opens where this one should have ended: no
            // drift however late the closing I/O came.
            self.open[d] = Some(t - (elapsed - self.ms));
        }
        Ok(())
    }

    /// One line of direction `d`, and the counts start again.
    fn line(&mut self, d: usize, t_ms: u64, line: &mut String) -> std::io::Result<()> {
        use std::fmt::Write as _;
        line.clear();
        let _ = write!(line, "{t_ms}, {d}, {}", self.bs[d]);
        for chunk in self.bins[d].chunks(1 << self.coarseness) {
            let _ = write!(line, ", {}", chunk.iter().sum::<u64>());
        }
        line.push('\n');
        self.bins[d].iter_mut().for_each(|b| *b = 0);
        self.n[d] = 0;
        self.file.write_all(line.as_bytes())
    }

    /// The last, partial windows, at the time of the last record.
    pub(super) fn finish(&mut self, last_ms: u64, line: &mut String) -> std::io::Result<()> {
        for d in 0..2 {
            if self.n[d] > 0 {
                self.line(d, last_ms, line)?;
            }
        }
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::rec;
    use super::super::{LogPlan, LogSink};
    use super::*;

    #[test]
    fn fio_bins_bound_each_value_within_a_64th() {
        let mut last = 0;
        for idx in 0..FIO_PLAT_NR {
            let lo = fio_plat_lower(idx);
            assert_eq!(fio_plat_index(lo), idx, "bin {idx} starts at {lo}");
            assert!(idx == 0 || lo > last, "ascending");
            last = lo;
        }
        for v in [0u64, 1, 127, 128, 129, 4000, 65_537, 1 << 33, 123_456_789] {
            let i = fio_plat_index(v);
            let (lo, hi) = (fio_plat_lower(i), fio_plat_lower(i + 1));
            assert!(lo <= v && v < hi, "{v} in [{lo}, {hi})");
            assert!(
                (hi - lo) as f64 <= (lo as f64 / 64.0).max(1.0),
                "{v}: width"
            );
        }
        // Beyond the last group: the last bin, as fio clamps.
        assert_eq!(fio_plat_index(u64::MAX), FIO_PLAT_NR - 1);
    }

    #[test]
    fn histogram_windows_per_direction_coarse_bins_and_the_last_partial_window() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("h").display().to_string();
        let hist = |ms, coarseness| LogPlan {
            hist: Some(HistPlan {
                path: path.clone(),
                ms,
                coarseness,
            }),
            ..Default::default()
        };
        // Reads every ms from 0 to 2499 ms, 4000 ns each; one write at 10 ms.
        let mut recs: Vec<Rec> = (0..2500).map(|i| rec(i, false)).collect();
        recs.insert(11, rec(10, true));
        let mut s = LogSink::start(&hist(1000, 0), dioscope_sys::clock::now_ns()).unwrap();
        recs.iter().for_each(|r| s.push(*r));
        s.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Vec<u64>> = text
            .lines()
            .map(|l| l.split(", ").map(|x| x.parse().unwrap()).collect())
            .collect();
        // Reads: windows close at 1000 and 2000 ms, the rest at 2499;
        // the write's window is only its own partial one, at the end.
        let heads: Vec<(u64, u64, u64)> = lines.iter().map(|l| (l[0], l[1], l[2])).collect();
        assert_eq!(
            heads,
            [
                (1000, 0, 4096),
                (2000, 0, 4096),
                (2499, 0, 4096),
                (2499, 1, 4096)
            ]
        );
        assert!(lines.iter().all(|l| l.len() == 3 + FIO_PLAT_NR));
        let bin = 3 + fio_plat_index(4000);
        let counts: Vec<u64> = lines.iter().map(|l| l[bin]).collect();
        // 0..=1000 ms, 1001..=2000, 2001..=2499: every read once.
        assert_eq!(counts, [1001, 1000, 499, 1]);
        assert_eq!(
            lines
                .iter()
                .map(|l| l[3..].iter().sum::<u64>())
                .sum::<u64>(),
            2501
        );
        // Coarseness 2: 4 bins summed, a quarter of the columns.
        let mut s = LogSink::start(&hist(1000, 2), dioscope_sys::clock::now_ns()).unwrap();
        recs.iter().for_each(|r| s.push(*r));
        s.finish().unwrap();
        let first = std::fs::read_to_string(&path).unwrap();
        let l: Vec<u64> = first
            .lines()
            .next()
            .unwrap()
            .split(", ")
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(l.len(), 3 + FIO_PLAT_NR / 4);
        assert_eq!(l[3 + fio_plat_index(4000) / 4], 1001);
        // log_hist_msec=0: an empty file, as fio leaves it.
        let mut s = LogSink::start(&hist(0, 0), dioscope_sys::clock::now_ns()).unwrap();
        recs.iter().for_each(|r| s.push(*r));
        s.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }
}
