//! Statistics over trials: mean ± σ, median, range, 95 % confidence interval
//! and coefficient of variation of one metric.

use serde::Serialize;

/// The name of an interval widened for `--trials=auto`'s stop
/// ([`Summary::of_trials`]).
pub const AUTO_STOP_CI: &str = "95 % CI widened for trials=auto's stop";

/// Summary of a small sample (one value per trial).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize, Default)]
#[serde(from = "SummaryJson", into = "SummaryJson")]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n-1).
    pub stddev: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// 95 % confidence interval of the mean (Student's t), as (low, high);
    /// with one value, (mean, mean), which no output shows: the JSON says
    /// `null` and the renderers print no interval below 2 values.
    pub ci95: (f64, f64),
    /// σ / mean (0 when the mean is 0).
    pub cv: f64,
    /// The trials were chosen by `--trials=auto`, whose stop depends on the
    /// data: `ci95` is widened for it ([`Summary::of_trials`]).
    pub auto_stop: bool,
}

/// [`Summary`] as the JSON has it: no interval (`null`) for fewer than two
/// values.
#[derive(Serialize, serde::Deserialize)]
struct SummaryJson {
    n: usize,
    mean: f64,
    stddev: f64,
    median: f64,
    min: f64,
    max: f64,
    ci95: Option<(f64, f64)>,
    cv: f64,
    /// Present (true) only when `ci95` is widened for `--trials=auto`'s
    /// data-dependent stop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    ci95_widened_for_auto_stop: bool,
}

impl From<Summary> for SummaryJson {
    fn from(s: Summary) -> Self {
        SummaryJson {
            n: s.n,
            mean: s.mean,
            stddev: s.stddev,
            median: s.median,
            min: s.min,
            max: s.max,
            ci95: (s.n >= 2).then_some(s.ci95),
            cv: s.cv,
            ci95_widened_for_auto_stop: s.auto_stop && s.n >= 2,
        }
    }
}

impl From<SummaryJson> for Summary {
    fn from(s: SummaryJson) -> Self {
        Summary {
            n: s.n,
            mean: s.mean,
            stddev: s.stddev,
            median: s.median,
            min: s.min,
            max: s.max,
            ci95: s.ci95.unwrap_or((s.mean, s.mean)),
            cv: s.cv,
            auto_stop: s.ci95_widened_for_auto_stop,
        }
    }
}

/// Two-sided 97.5 % quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        31..=60 => 2.042 - (df - 30) as f64 * (2.042 - 2.000) / 30.0,
        61..=120 => 2.000 - (df - 60) as f64 * (2.000 - 1.980) / 60.0,
        _ => 1.960,
    }
}

pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Summary {
    pub fn of(xs: &[f64]) -> Summary {
        let n = xs.len();
        if n == 0 {
            return Summary::default();
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let half = if n > 1 {
            t975(n - 1) * stddev / (n as f64).sqrt()
        } else {
            0.0
        };
        Summary {
            n,
            mean,
            stddev,
            median: median(xs),
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ci95: (mean - half, mean + half),
            cv: if mean != 0.0 {
                stddev / mean.abs()
            } else {
                0.0
            },
            auto_stop: false,
        }
    }

    /// The summary of one value per trial. When `--trials=auto` chose how
    /// many (`auto_stop`), the interval is widened by √((n−1)/χ²₀.₁₀(n−1)):
    /// the standard deviation at its one-sided 90 % upper bound, the same
    /// bound the stopping rule uses. The stop favours runs whose trials
    /// happened to agree, and the plain 95 % interval of such a run covers
    /// the mean less often than 95 % (two-level series: 90–94 %); widened,
    /// it covers ≥ 94 % in every shape tests/statistics simulates.
    pub fn of_trials(xs: &[f64], auto_stop: bool) -> Summary {
        let mut s = Summary::of(xs);
        if auto_stop && s.n >= 2 {
            let half = (s.ci95.1 - s.mean) * super::significance::auto_stop_widening(s.n);
            s.ci95 = (s.mean - half, s.mean + half);
            s.auto_stop = true;
        }
        s
    }

    /// The name of the interval `ci95` holds, for a header or a label.
    pub fn ci_name(&self) -> &'static str {
        if self.auto_stop {
            AUTO_STOP_CI
        } else {
            "95 % CI"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sample() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.median, 4.5);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        let half = 2.365 * s.stddev / 8f64.sqrt();
        assert!((s.ci95.1 - 5.0 - half).abs() < 1e-9);
        assert!((s.cv - s.stddev / 5.0).abs() < 1e-12);
    }

    #[test]
    fn single_value() {
        let s = Summary::of(&[3.0]);
        assert_eq!((s.mean, s.stddev, s.ci95), (3.0, 0.0, (3.0, 3.0)));
        // No interval in the JSON, and it reads back the same.
        let j = serde_json::to_value(s).unwrap();
        assert_eq!(j["ci95"], serde_json::Value::Null, "{j}");
        assert_eq!(serde_json::from_value::<Summary>(j).unwrap(), s);
        let two = Summary::of(&[3.0, 5.0]);
        let j = serde_json::to_value(two).unwrap();
        assert_eq!(j["ci95"][0].as_f64(), Some(two.ci95.0), "{j}");
        assert_eq!(serde_json::from_value::<Summary>(j).unwrap(), two);
    }

    #[test]
    fn an_auto_stop_widens_the_interval_and_says_so() {
        let xs = [9.0, 10.0, 11.0, 10.5, 9.5, 10.2, 9.8, 10.1, 9.9, 10.0];
        let plain = Summary::of_trials(&xs, false);
        assert_eq!(plain, Summary::of(&xs));
        assert_eq!(plain.ci_name(), "95 % CI");
        let auto = Summary::of_trials(&xs, true);
        let k = crate::stats::significance::auto_stop_widening(xs.len());
        // χ²₀.₁₀(9) = 4.168: √(9/4.168) = 1.469.
        assert!((k - 1.469).abs() < 0.01, "{k}");
        assert!(((auto.ci95.1 - auto.mean) - k * (plain.ci95.1 - plain.mean)).abs() < 1e-9);
        assert!(((auto.mean - auto.ci95.0) - k * (plain.mean - plain.ci95.0)).abs() < 1e-9);
        assert_eq!((auto.mean, auto.stddev), (plain.mean, plain.stddev));
        assert_eq!(auto.ci_name(), AUTO_STOP_CI);
        // The JSON keeps it, and says so only when widened.
        let j = serde_json::to_value(auto).unwrap();
        assert_eq!(j["ci95_widened_for_auto_stop"], true);
        assert_eq!(serde_json::from_value::<Summary>(j).unwrap(), auto);
        let j = serde_json::to_value(plain).unwrap();
        assert!(j.get("ci95_widened_for_auto_stop").is_none());
        // One value: no interval to widen.
        assert!(!Summary::of_trials(&[3.0], true).auto_stop);
    }
}
