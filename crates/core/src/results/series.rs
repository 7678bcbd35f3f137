//! Time series: what each interval (1 s by default) of a trial measured,
//! per direction — IOPS, bandwidth, latency mean, p50 and p99.
//!
//! The worker closes an interval on its cold path ([`Tick`]: counts and two
//! percentiles of the interval's own latencies) into a buffer allocated
//! before the first I/O with room for [`MAX_TICKS`]. When it is full the
//! worker merges neighbours in place ([`coarsen`]): the interval doubles and
//! half the room is free again. Memory is therefore fixed however long the
//! run (a 24-hour soak at 1 s ends with 1350 intervals of 64 s), and
//! nothing on the hot path allocates.
//!
//! Merging two intervals keeps counts, bytes and latency sums exact; the
//! merged p50 is the I/O-weighted mean of the two and the p99 their maximum
//! (a bound, not the exact percentile: the per-interval histograms are not
//! kept). The same rule merges the series of several workers of one job.
//! The whole-trial percentiles elsewhere in the result come from the full
//! histograms and are exact.

use serde::{Deserialize, Serialize};

/// The interval a series starts with.
pub const INTERVAL_NS: u64 = 1_000_000_000;

/// Intervals one worker keeps at most before merging neighbours.
pub const MAX_TICKS: usize = 2048;

/// One closed interval of one worker (or merged workers). Times are from the
/// job's start, the ramp included; `ramp` intervals are before measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tick {
    /// End of the interval, ns since the job's start.
    pub end_ns: u64,
    /// Length of the interval (ns).
    pub dur_ns: u64,
    pub ramp: bool,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub lat_sum_ns: [u64; 2],
    pub lat_p50_ns: [u64; 2],
    pub lat_p99_ns: [u64; 2],
}

impl Tick {
    /// Fold `o` into this interval (a neighbour in time, or another worker's
    /// same interval when `same_time`).
    pub fn absorb(&mut self, o: &Tick, same_time: bool) {
        for d in 0..2 {
            let (a, b) = (self.ios[d], o.ios[d]);
            self.lat_p50_ns[d] = if a + b == 0 {
                0
            } else {
                ((self.lat_p50_ns[d] as u128 * a as u128 + o.lat_p50_ns[d] as u128 * b as u128)
                    / (a + b) as u128) as u64
            };
            self.lat_p99_ns[d] = self.lat_p99_ns[d].max(o.lat_p99_ns[d]);
            self.ios[d] += o.ios[d];
            self.bytes[d] += o.bytes[d];
            self.lat_sum_ns[d] += o.lat_sum_ns[d];
        }
        if same_time {
            self.end_ns = self.end_ns.max(o.end_ns);
            self.dur_ns = self.dur_ns.max(o.dur_ns);
        } else {
            self.end_ns = o.end_ns;
            self.dur_ns += o.dur_ns;
        }
        self.ramp &= o.ramp;
    }
}

/// Merge neighbours pairwise in place (the last one stays alone when the
/// count is odd): half the room is free again, no allocation.
pub fn coarsen(ticks: &mut Vec<Tick>) {
    let n = ticks.len();
    let mut w = 0;
    let mut i = 0;
    while i < n {
        let mut t = ticks[i];
        if i + 1 < n && ticks[i + 1].ramp == t.ramp {
            t.absorb(&ticks[i + 1], false);
            i += 2;
        } else {
            i += 1;
        }
        ticks[w] = t;
        w += 1;
    }
    ticks.truncate(w);
}

/// Sum the series of several workers of one trial, aligned by interval
/// index (workers of a job share the timeline).
pub fn merge_ticks(into: &mut Vec<Tick>, from: &[Tick]) {
    for (i, t) in from.iter().enumerate() {
        match into.get_mut(i) {
            Some(a) => a.absorb(t, true),
            None => into.push(*t),
        }
    }
}

/// One direction's series, column by column (compact in JSON), aligned
/// with its trial's `t_ms`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirSeries {
    pub iops: Vec<f64>,
    pub bw_bytes: Vec<f64>,
    /// Mean total latency of the I/Os completed in the interval (0 if none).
    pub lat_mean_ns: Vec<f64>,
    #[serde(default)]
    pub lat_p50_ns: Vec<u64>,
    #[serde(default)]
    pub lat_p99_ns: Vec<u64>,
}

impl DirSeries {
    pub fn len(&self) -> usize {
        self.iops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.iops.is_empty()
    }
}

/// One trial's series. `t_ms` is the end of each interval from the job's
/// start and `dur_ms` its length; intervals that end at or before
/// `ramp_ms` are the ramp (not measured). A direction the job does not do
/// is empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialSeries {
    pub trial: u32,
    /// Nominal interval (ms) at the start; longer intervals mean the series
    /// was coarsened to stay within its memory.
    #[serde(default)]
    pub interval_ms: f64,
    #[serde(default)]
    pub ramp_ms: f64,
    pub t_ms: Vec<f64>,
    #[serde(default)]
    pub dur_ms: Vec<f64>,
    pub read: DirSeries,
    pub write: DirSeries,
}

impl TrialSeries {
    /// The series of one trial from its merged ticks.
    pub fn from_ticks(trial: u32, interval_ns: u64, ramp_ns: u64, ticks: &[Tick]) -> TrialSeries {
        let dir = |d: usize| {
            let mut s = DirSeries::default();
            for t in ticks {
                let secs = t.dur_ns.max(1) as f64 / 1e9;
                s.iops.push(round3(t.ios[d] as f64 / secs));
                s.bw_bytes.push((t.bytes[d] as f64 / secs).round());
                s.lat_mean_ns.push(if t.ios[d] > 0 {
                    (t.lat_sum_ns[d] as f64 / t.ios[d] as f64).round()
                } else {
                    0.0
                });
                s.lat_p50_ns.push(t.lat_p50_ns[d]);
                s.lat_p99_ns.push(t.lat_p99_ns[d]);
            }
            s
        };
        let active = |d: usize| ticks.iter().any(|t| t.ios[d] > 0);
        TrialSeries {
            trial,
            interval_ms: interval_ns as f64 / 1e6,
            ramp_ms: ramp_ns as f64 / 1e6,
            t_ms: ticks
                .iter()
                .map(|t| round3(t.end_ns as f64 / 1e6))
                .collect(),
            dur_ms: ticks
                .iter()
                .map(|t| round3(t.dur_ns as f64 / 1e6))
                .collect(),
            read: if active(0) {
                dir(0)
            } else {
                DirSeries::default()
            },
            write: if active(1) {
                dir(1)
            } else {
                DirSeries::default()
            },
        }
    }

    pub fn dir(&self, d: usize) -> &DirSeries {
        if d == 0 {
            &self.read
        } else {
            &self.write
        }
    }

    /// Length of interval `i` in ms (1 s when the result does not say).
    pub fn dur(&self, i: usize) -> f64 {
        self.dur_ms.get(i).copied().unwrap_or(1000.0)
    }

    /// The measured intervals (after the ramp), as indices.
    pub fn measured(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.t_ms.len()).filter(move |&i| self.t_ms[i] - self.dur(i) >= self.ramp_ms - 0.5)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(i: u64, ios: u64, ramp: bool) -> Tick {
        Tick {
            end_ns: (i + 1) * 1_000_000_000,
            dur_ns: 1_000_000_000,
            ramp,
            ios: [ios, 0],
            bytes: [ios * 4096, 0],
            lat_sum_ns: [ios * 100, 0],
            lat_p50_ns: [100, 0],
            lat_p99_ns: [100 + i, 0],
        }
    }

    #[test]
    fn coarsen_keeps_totals_and_time_and_frees_half() {
        let mut v: Vec<Tick> = (0..7).map(|i| tick(i, 10 + i, i < 2)).collect();
        let total: u64 = v.iter().map(|t| t.ios[0]).sum();
        let cap = v.capacity();
        coarsen(&mut v);
        assert_eq!(v.len(), 4);
        assert_eq!(v.capacity(), cap, "in place");
        assert_eq!(v.iter().map(|t| t.ios[0]).sum::<u64>(), total);
        assert_eq!(v.last().unwrap().end_ns, 7_000_000_000);
        assert_eq!(v[0].dur_ns, 2_000_000_000);
        assert!(v[0].ramp && !v[1].ramp);
        assert_eq!(v[1].lat_p99_ns[0], 103, "p99 of a merge is the larger");
        // The durations still tile the time.
        assert_eq!(v.iter().map(|t| t.dur_ns).sum::<u64>(), 7_000_000_000);
    }

    #[test]
    fn a_day_at_one_second_stays_within_the_room() {
        let mut v = Vec::with_capacity(MAX_TICKS);
        for i in 0..86_400 {
            if v.len() == MAX_TICKS {
                coarsen(&mut v);
            }
            v.push(tick(i, 1, false));
        }
        assert!(v.len() <= MAX_TICKS);
        assert_eq!(v.capacity(), MAX_TICKS, "never grew");
        assert_eq!(v.iter().map(|t| t.ios[0]).sum::<u64>(), 86_400);
        assert_eq!(v.last().unwrap().end_ns, 86_400 * 1_000_000_000);
    }

    #[test]
    fn series_per_direction_from_ticks() {
        let ticks: Vec<Tick> = (0..3).map(|i| tick(i, 1000, i == 0)).collect();
        let s = TrialSeries::from_ticks(2, 1_000_000_000, 1_000_000_000, &ticks);
        assert_eq!(s.read.iops, vec![1000.0; 3]);
        assert_eq!(s.read.bw_bytes[1], 4096.0 * 1000.0);
        assert_eq!(s.read.lat_mean_ns[2], 100.0);
        assert!(s.write.is_empty());
        assert_eq!(s.measured().collect::<Vec<_>>(), vec![1, 2]);
    }
}
