//! Steady state (`ss`, `ss_dur`, `ss_ramp`): stop a job once its IOPS or
//! bandwidth has settled — the SSD-preconditioning workflow.
//!
//! As in fio: once a second (after `ss_ramp`), the job's IOPS and bandwidth
//! over the last second go into a rolling window of `ss_dur` seconds. When
//! the window is full, the criterion is judged on it: `iops`/`bw` — every
//! value lies within the limit of the window's mean (the largest deviation
//! is below the limit); `iops_slope`/`bw_slope` — the least-squares slope,
//! per second, is below the limit in absolute value. A limit with `%` is a
//! share of the window's mean. When it holds, the job (each clone, or with
//! `group_reporting` the group's jobs together, judged on their sum) stops.
//!
//! The sampling runs on a watcher thread of the trial ([`super::watch`]):
//! the workers only publish their counters, as they do for the progress line.
//! Each trial judges afresh; the JSON's `steadystate` object is fio's, from
//! the job's last trial.

use crate::job::options::pacing::{SsMetric, SteadyCriterion};
use serde_json::{json, Value};

/// The rolling window and the last judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct Detector {
    crit: SteadyCriterion,
    /// Window length in samples (seconds).
    pub len: usize,
    iops: Vec<u64>,
    bw: Vec<u64>,
    /// Mean completion latency of each second (ns).
    lat: Vec<u64>,
    /// Samples taken so far (the window holds the last `len`).
    taken: usize,
    pub attained: bool,
    pub criterion: f64,
    pub max_deviation: f64,
    pub slope: f64,
}

impl Detector {
    pub fn new(crit: SteadyCriterion, len: usize) -> Detector {
        let len = len.max(1);
        Detector {
            crit,
            len,
            iops: Vec::with_capacity(len),
            bw: Vec::with_capacity(len),
            lat: Vec::with_capacity(len),
            taken: 0,
            attained: false,
            criterion: 0.0,
            max_deviation: 0.0,
            slope: 0.0,
        }
    }

    /// One second's IOPS, bandwidth (bytes/s) and mean completion latency
    /// (ns). True: steady state reached.
    pub fn push(&mut self, iops: u64, bw: u64, lat: u64) -> bool {
        if self.iops.len() == self.len {
            self.iops.remove(0);
            self.bw.remove(0);
            self.lat.remove(0);
        }
        self.iops.push(iops);
        self.bw.push(bw);
        self.lat.push(lat);
        self.taken += 1;
        if self.iops.len() < self.len {
            return false;
        }
        let y: Vec<f64> = match self.crit.metric {
            SsMetric::Iops => self.iops.iter().map(|&v| v as f64).collect(),
            SsMetric::Bw => self.bw.iter().map(|&v| v as f64).collect(),
            SsMetric::Lat => self.lat.iter().map(|&v| v as f64).collect(),
        };
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        let value = if self.crit.slope {
            // Least squares over x = 0, 1, …, n-1 (one sample a second).
            let xm = (n - 1.0) / 2.0;
            let sxx: f64 = (0..y.len()).map(|i| (i as f64 - xm).powi(2)).sum();
            let sxy: f64 = y
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64 - xm) * (v - mean))
                .sum();
            self.slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
            self.slope
        } else {
            self.max_deviation = y.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
            self.max_deviation
        };
        self.criterion = if self.crit.pct {
            if mean > 0.0 {
                100.0 * value / mean
            } else {
                f64::INFINITY
            }
        } else {
            value
        };
        // One sample has no slope (fio divides by zero there and never attains).
        self.attained = self.criterion.abs() < self.crit.limit && !(self.crit.slope && y.len() < 2);
        self.attained
    }

    /// fio's per-job `steadystate` object.
    pub fn to_fio_json(&self) -> Value {
        let pad = |v: &[u64]| -> Vec<u64> {
            let mut v = v.to_vec();
            v.resize(self.len, 0);
            v
        };
        let mean = |v: &[u64]| v.iter().sum::<u64>() / self.len as u64;
        let pct = if self.crit.pct { "%" } else { "" };
        let mut data = json!({
            "bw_mean": mean(&self.bw),
            "iops_mean": mean(&self.iops),
        });
        if self.crit.metric == SsMetric::Lat {
            data["lat_mean"] = json!(mean(&self.lat));
            data["lat_ns"] = json!(pad(&self.lat));
        }
        data["iops"] = json!(pad(&self.iops));
        data["bw"] = json!(pad(&self.bw));
        json!({
            "ss": format!("{}:{:.6}{pct}", self.crit.name(), self.crit.limit as f32),
            "duration": self.len,
            "attained": u8::from(self.attained),
            "criterion": format!("{:.6}{pct}", self.criterion as f32),
            "max_deviation": self.max_deviation,
            "slope": self.slope,
            "data": data,
        })
    }
}

/// What steady-state detection found for one worker in one trial.
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyReport {
    pub detector: Detector,
    /// When it was attained, in seconds after the trial started.
    pub attained_after_s: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crit(metric: SsMetric, slope: bool, limit: f64, pct: bool) -> SteadyCriterion {
        SteadyCriterion {
            metric,
            slope,
            limit,
            pct,
        }
    }

    #[test]
    fn deviation_is_judged_on_a_full_window() {
        let mut d = Detector::new(crit(SsMetric::Iops, false, 10.0, true), 3);
        assert!(!d.push(100, 0, 0));
        assert!(!d.push(200, 0, 0));
        // 200, 105, 100: mean 135, largest deviation 65 = 48 %.
        assert!(!d.push(105, 0, 0));
        assert!((d.max_deviation - (200.0 - 135.0)).abs() < 1e-9);
        assert!(!d.push(100, 0, 0));
        // 105, 100, 104: mean 103, deviation 3 = 2.9 %.
        assert!(d.push(104, 0, 0));
        assert!(d.attained);
        let j = d.to_fio_json();
        assert_eq!(j["ss"], "iops:10.000000%");
        assert_eq!(j["attained"], 1);
        assert_eq!(j["data"]["iops"], json!([105, 100, 104]));
        assert_eq!(j["data"]["iops_mean"], 103);
        assert_eq!(j["duration"], 3);
    }

    #[test]
    fn slope_is_least_squares_per_second() {
        // A straight line rising 10 per second: slope 10.
        let mut d = Detector::new(crit(SsMetric::Bw, true, 5.0, false), 5);
        for i in 0..5 {
            d.push(0, 1000 + 10 * i, 0);
        }
        assert!((d.slope - 10.0).abs() < 1e-9);
        assert!(!d.attained);
        // As a share of the mean (1020): 0.98 %, under 1 %.
        let mut d = Detector::new(crit(SsMetric::Bw, true, 1.0, true), 5);
        for i in 0..5 {
            d.push(0, 1000 + 10 * i, 0);
        }
        assert!(d.attained, "{}", d.criterion);
        // Falling counts too (absolute value).
        let mut d = Detector::new(crit(SsMetric::Iops, true, 5.0, false), 4);
        for i in 0..4 {
            d.push(1000 - 20 * i, 0, 0);
        }
        assert!((d.slope + 20.0).abs() < 1e-9);
        assert!(!d.attained);
    }

    /// `ss=lat:…` (fio 3.41): judged on each second's mean completion
    /// latency, and fio's JSON carries the window as `lat_ns`.
    #[test]
    fn latency_is_judged_on_its_own_series() {
        let mut d = Detector::new(crit(SsMetric::Lat, false, 5.0, true), 3);
        // IOPS all over the place, latency within 5 % of its mean.
        assert!(!d.push(10, 1, 100_000));
        assert!(!d.push(90, 1, 102_000));
        assert!(d.push(50, 1, 101_000));
        let j = d.to_fio_json();
        assert_eq!(j["ss"], "lat:5.000000%");
        assert_eq!(j["data"]["lat_ns"], json!([100_000, 102_000, 101_000]));
        assert_eq!(j["data"]["lat_mean"], 101_000);
        let keys: Vec<&String> = j["data"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["bw_mean", "iops_mean", "lat_mean", "lat_ns", "iops", "bw"]
        );
        // A latency that keeps rising has a slope.
        let mut d = Detector::new(crit(SsMetric::Lat, true, 100.0, false), 4);
        for i in 0..4 {
            d.push(1000, 1, 50_000 + 1000 * i);
        }
        assert!((d.slope - 1000.0).abs() < 1e-9 && !d.attained);
        // Other criteria leave latency out of fio's JSON.
        let mut d = Detector::new(crit(SsMetric::Iops, false, 5.0, true), 1);
        d.push(1, 1, 7);
        assert!(d.to_fio_json()["data"].get("lat_ns").is_none());
    }

    #[test]
    fn an_unfilled_window_pads_with_zeros_and_is_not_attained() {
        let mut d = Detector::new(crit(SsMetric::Iops, true, 0.01, true), 4);
        d.push(7, 70, 0);
        let j = d.to_fio_json();
        assert_eq!(j["attained"], 0);
        assert_eq!(j["data"]["iops"], json!([7, 0, 0, 0]));
        assert_eq!(j["data"]["bw"], json!([70, 0, 0, 0]));
        assert_eq!(j["ss"], "iops_slope:0.010000%");
        // A one-second window has no slope: never steady by slope.
        let mut d = Detector::new(crit(SsMetric::Iops, true, 50.0, true), 1);
        assert!(!d.push(100, 0, 0) && !d.push(100, 0, 0));
        let mut d = Detector::new(crit(SsMetric::Iops, false, 50.0, true), 1);
        assert!(d.push(100, 0, 0));
    }
}
