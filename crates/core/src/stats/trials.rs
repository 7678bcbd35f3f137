//! Consistency of repeated measurements: outliers, bimodality and drift.
//!
//! These are small pure functions over one metric, either one value per trial
//! (typically 3–10 values) or one value per interval of a trial (10–3600
//! values). The diagnostics in [`crate::diag`] turn their results into findings.
//!
//! - [`outliers`]: modified Z-score of Iglewicz & Hoaglin (1993), "How to Detect
//!   and Handle Outliers", ASQC Basic References in Quality Control vol. 16:
//!   `M = 0.6745·(x − median)/MAD`, outlier when `|M| > 3.5`.
//! - [`bimodality`]: an optimal two-means split of the sorted values that must
//!   separate cleanly (see the function for the rules), plus Sarle's bimodality
//!   coefficient (SAS Institute, 1990s; see Pfister et al. 2013, "Good things
//!   peak in pairs", Front. Psychol. 4:700) once there are enough values for it
//!   to mean anything.
//! - [`drift`]: the Mann–Kendall trend test (Mann 1945, Kendall 1975), exact for
//!   small untied samples, with Sen's (1968) slope for the size of the change.

use serde::Serialize;

use super::summary::median;

/// `|M|` above which a value is an outlier (Iglewicz & Hoaglin's recommendation).
const OUTLIER_THRESHOLD: f64 = 3.5;

/// The practical-size floor shared by every pattern rule (docs/STATISTICS.md):
/// a value less than 10 % from the median is never an outlier, two groups
/// whose means differ by less than 10 % of the median are never two modes,
/// and a trend that changes the metric by less than 10 % over the series is
/// never drift. Smaller effects can be statistically clear on a quiet
/// machine yet change no conclusion; they still widen the confidence
/// interval, which the `high_variance` rule (±5 %) reports.
const PRACTICAL_REL: f64 = 0.10;

/// Fewest values any pattern rule (outliers, two modes) judges. With 3 or 4
/// trials the median and MAD rest on one or two values, any two close trials
/// make the third "an outlier", and two groups of two cannot be told from
/// chance; the Mann–Kendall drift test cannot reach p < 0.05 below 5 values
/// either (smallest exact p for n = 4 is 1/12). Below it only the confidence
/// interval speaks.
const MIN_PATTERN_VALUES: usize = 5;

/// One value flagged by [`outliers`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outlier {
    /// Position in the input (trial number − 1, or interval index).
    pub index: usize,
    pub value: f64,
    /// Modified Z-score.
    pub score: f64,
}

/// Median absolute deviation from the median.
fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Modified Z-scores `0.6745·(x − median)/MAD`.
///
/// When more than half of the values are equal the MAD is 0; then, as IBM
/// SPSS does, the mean absolute deviation scaled by 1.253314 (which makes it a
/// consistent estimator of σ for normal data, like 1/0.6745 does for the MAD)
/// takes its place. All-equal data gives all-zero scores.
fn modified_z_scores(xs: &[f64]) -> Vec<f64> {
    let m = median(xs);
    let mad = mad(xs);
    if mad > 0.0 {
        return xs.iter().map(|x| 0.6745 * (x - m) / mad).collect();
    }
    let mean_ad = xs.iter().map(|x| (x - m).abs()).sum::<f64>() / xs.len().max(1) as f64;
    if mean_ad > 0.0 {
        xs.iter().map(|x| (x - m) / (1.253314 * mean_ad)).collect()
    } else {
        vec![0.0; xs.len()]
    }
}

/// Values whose modified Z-score exceeds [`OUTLIER_THRESHOLD`] and that lie
/// at least [`PRACTICAL_REL`] from the median. Fewer than
/// [`MIN_PATTERN_VALUES`] values have no outliers.
pub fn outliers(xs: &[f64]) -> Vec<Outlier> {
    if xs.len() < MIN_PATTERN_VALUES {
        return Vec::new();
    }
    let med = median(xs);
    modified_z_scores(xs)
        .into_iter()
        .enumerate()
        .filter(|(_, s)| s.abs() > OUTLIER_THRESHOLD)
        .filter(|&(i, _)| (xs[i] - med).abs() >= PRACTICAL_REL * med.abs())
        .map(|(i, s)| Outlier {
            index: i,
            value: xs[i],
            score: s,
        })
        .collect()
}

/// Sarle's bimodality coefficient `(G1² + 1) / (G2 + 3(n−1)²/((n−2)(n−3)))`
/// from the bias-corrected sample skewness G1 and excess kurtosis G2. Values
/// above 5/9 (that of a uniform distribution) suggest two modes. `None` for
/// fewer than 4 values or no spread.
fn bimodality_coefficient(xs: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 4 {
        return None;
    }
    let nf = n as f64;
    let mean = xs.iter().sum::<f64>() / nf;
    let m = |k: i32| xs.iter().map(|x| (x - mean).powi(k)).sum::<f64>() / nf;
    let (m2, m3, m4) = (m(2), m(3), m(4));
    if m2 <= f64::EPSILON * mean.abs().max(1.0) * mean.abs().max(1.0) {
        return None;
    }
    let g1 = m3 / m2.powf(1.5);
    let g2 = m4 / (m2 * m2) - 3.0;
    let big_g1 = g1 * (nf * (nf - 1.0)).sqrt() / (nf - 2.0);
    let big_g2 = ((nf + 1.0) * g2 + 6.0) * (nf - 1.0) / ((nf - 2.0) * (nf - 3.0));
    let denom = big_g2 + 3.0 * (nf - 1.0).powi(2) / ((nf - 2.0) * (nf - 3.0));
    (denom > 0.0).then(|| (big_g1 * big_g1 + 1.0) / denom)
}

/// Sarle's threshold: the coefficient of a uniform distribution.
const BC_THRESHOLD: f64 = 5.0 / 9.0;

/// The best split of the values into a low and a high group (1-D two-means:
/// the cut between sorted neighbours that minimises the within-group sum of
/// squares, found exactly by trying every cut).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TwoMeans {
    /// Indices (into the input) of the low group, in input order.
    pub low: Vec<usize>,
    pub high: Vec<usize>,
    pub low_mean: f64,
    pub high_mean: f64,
    /// Smallest high value minus largest low value.
    pub gap: f64,
    /// Pooled within-group standard deviation, √(SSW/(n−2)).
    within_sd: f64,
    /// Share of the total variance the split explains, 1 − SSW/SST.
    explained: f64,
}

fn two_means(xs: &[f64]) -> Option<TwoMeans> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let v: Vec<f64> = idx.iter().map(|&i| xs[i]).collect();
    // Shift by the mean so prefix sums of squares keep their precision.
    let mean = v.iter().sum::<f64>() / n as f64;
    let mut s = vec![0.0; n + 1];
    let mut q = vec![0.0; n + 1];
    for (i, x) in v.iter().enumerate() {
        s[i + 1] = s[i] + (x - mean);
        q[i + 1] = q[i] + (x - mean) * (x - mean);
    }
    let ss = |a: usize, b: usize| {
        let k = (b - a) as f64;
        let sum = s[b] - s[a];
        (q[b] - q[a] - sum * sum / k).max(0.0)
    };
    let sst = ss(0, n);
    let (cut, ssw) = (1..n)
        .map(|k| (k, ss(0, k) + ss(k, n)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let mut low: Vec<usize> = idx[..cut].to_vec();
    let mut high: Vec<usize> = idx[cut..].to_vec();
    low.sort_unstable();
    high.sort_unstable();
    let mean_of = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    Some(TwoMeans {
        low,
        high,
        low_mean: mean_of(&v[..cut]),
        high_mean: mean_of(&v[cut..]),
        gap: v[cut] - v[cut - 1],
        within_sd: if n > 2 {
            (ssw / (n - 2) as f64).sqrt()
        } else {
            0.0
        },
        explained: if sst > 0.0 { 1.0 - ssw / sst } else { 0.0 },
    })
}

/// Smallest difference between the two group means, relative to the median,
/// that is reported: the shared practical floor.
const BIMODAL_MIN_REL_GAP: f64 = PRACTICAL_REL;
/// How cleanly the two groups must separate, by number of values: the share
/// of the variance the split explains (1 − SSW/SST), and the empty gap between
/// the groups in pooled within-group σ. Small samples of pure normal noise
/// often fall into two groups by chance (with 5 values, the best split explains
/// over 96 % of the variance one time in twenty), so the bar is high there and
/// falls as n grows. Each pair is about the 99th percentile of that statistic
/// over 4000 simulated normal samples of that size (the `normal_noise_is_not_bimodal`
/// test checks the joint false-alarm rate); between table rows the bar is
/// interpolated, beyond the last row it stays.
const SEPARATION: [(usize, f64, f64); 6] = [
    (4, 0.998, 30.0),
    (5, 0.985, 11.0),
    (6, 0.97, 8.0),
    (8, 0.935, 5.0),
    (10, 0.91, 4.0),
    (20, 0.85, 2.5),
];

/// `(min explained share, min gap in within-group σ)` for `n` values.
fn separation_thresholds(n: usize) -> (f64, f64) {
    let first = SEPARATION[0];
    if n <= first.0 {
        return (first.1, first.2);
    }
    for w in SEPARATION.windows(2) {
        let (a, b) = (w[0], w[1]);
        if n <= b.0 {
            let t = (n - a.0) as f64 / (b.0 - a.0) as f64;
            return (a.1 + t * (b.1 - a.1), a.2 + t * (b.2 - a.2));
        }
    }
    let last = SEPARATION[SEPARATION.len() - 1];
    (last.1, last.2)
}

/// From this many values on, Sarle's coefficient must agree too; below it the
/// coefficient's small-sample bias is too large to be useful (for n = 6 even
/// two perfectly separated points give 0.34).
const BIMODAL_BC_MIN_N: usize = 20;

/// The verdict of [`bimodality`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bimodality {
    pub bimodal: bool,
    pub split: TwoMeans,
    /// Sarle's coefficient, when defined.
    pub coefficient: Option<f64>,
    /// `(high_mean − low_mean) / |median|`.
    rel_gap: f64,
}

/// Whether the values fall into two separate groups.
///
/// Method: split the values optimally into two groups (see [`TwoMeans`]) and
/// call them bimodal when all of these hold:
/// 1. each group has at least 2 values and at least 10 % of them (one odd
///    value is an outlier, not a mode);
/// 2. the split explains a large share of the variance and
/// 3. leaves an empty gap of several pooled within-group standard deviations
///    between the groups (clusters, not a smear); both bars depend on n, see
///    [`separation_thresholds`];
/// 4. the group means differ by at least [`BIMODAL_MIN_REL_GAP`] of the median;
/// 5. with [`BIMODAL_BC_MIN_N`] values or more, Sarle's coefficient exceeds 5/9.
///
/// With few values only large separations are found: with 5 trials, modes
/// about 20 σ apart (seed 004's clusters were 35 % apart and tight); with 40
/// per-second points, 8 σ. Returns `None` below 4 values, where two groups
/// cannot be told from chance.
pub fn bimodality(xs: &[f64]) -> Option<Bimodality> {
    let n = xs.len();
    if n < 4 {
        return None;
    }
    let split = two_means(xs)?;
    let coefficient = bimodality_coefficient(xs);
    let med = median(xs).abs();
    let rel_gap = if med > 0.0 {
        (split.high_mean - split.low_mean) / med
    } else {
        0.0
    };
    let min_group = 2usize.max(n.div_ceil(10));
    let sizes_ok = split.low.len() >= min_group && split.high.len() >= min_group;
    let (min_explained, min_gap_sd) = separation_thresholds(n);
    let separated = split.explained >= min_explained
        && split.gap >= min_gap_sd * split.within_sd
        && split.gap > 0.0;
    let bc_ok = n < BIMODAL_BC_MIN_N || coefficient.is_some_and(|c| c > BC_THRESHOLD);
    let bimodal =
        n >= MIN_PATTERN_VALUES && sizes_ok && separated && rel_gap >= BIMODAL_MIN_REL_GAP && bc_ok;
    Some(Bimodality {
        bimodal,
        split,
        coefficient,
        rel_gap,
    })
}

/// The largest one-sided permutation p-value at which the trials under a
/// measured condition form a group of their own ([`conditioned_split`]).
const CONDITION_ALPHA: f64 = 0.05;
/// The empty gap between the trials under a condition and the rest, in
/// pooled within-group standard deviations, that [`conditioned_split`]
/// needs. Far below the data-searched split's bar (5 σ at 8 values): the
/// groups are named by a measurement, not found by trying every cut, so
/// chance has one split to offer, not n − 1. It is still there because on
/// noisy unimodal data a random group that happens to be the lowest values
/// sits right next to the others (a gap of about half a σ), while a
/// condition that moves its trials leaves a clear hole.
const CONDITION_MIN_GAP_SD: f64 = 2.0;

/// `C(n, k)` as a float (exact for the trial counts seen here).
fn choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Whether the trials under a measured condition (`flagged`: 0-based
/// indices, e.g. the trials with CPU contention) form a group of their own,
/// worse than the rest.
///
/// The groups are given, not searched for, so the test is a plain
/// two-sample permutation test: under "the condition did not change the
/// values" every choice of k of the n trials is equally likely to be the k
/// worst, and the k flagged ones being *all* worse than every other trial
/// has probability exactly `1/C(n, k)`, whatever the distribution of the
/// values. The split is called two modes (`bimodal`) when:
/// 1. n ≥ [`MIN_PATTERN_VALUES`] and each group has ≥ 2 trials (one trial
///    is an outlier, not a mode);
/// 2. every flagged trial is worse than every other (complete separation;
///    worse = lower when `higher_is_better`), so p = 1/C(n, k) ≤
///    [`CONDITION_ALPHA`] (8 trials: 2 flagged give 1/28, 3 give 1/56);
/// 3. the empty gap between the groups is ≥ [`CONDITION_MIN_GAP_SD`] pooled
///    within-group σ;
/// 4. the group means differ by ≥ [`PRACTICAL_REL`] of the median.
///
/// `None` below 4 values. `split.low` is the worse group when it is the
/// flagged one (the usual case) — in general the group with the lower mean.
pub fn conditioned_split(
    xs: &[f64],
    flagged: &[usize],
    higher_is_better: bool,
) -> Option<Bimodality> {
    let n = xs.len();
    if n < 4 {
        return None;
    }
    let is_flagged = |i: usize| flagged.contains(&i);
    let (f, rest): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| is_flagged(i));
    let mean_of = |ix: &[usize]| ix.iter().map(|&i| xs[i]).sum::<f64>() / ix.len().max(1) as f64;
    let ss_of = |ix: &[usize]| {
        let m = mean_of(ix);
        ix.iter().map(|&i| (xs[i] - m).powi(2)).sum::<f64>()
    };
    let (fm, rm) = (mean_of(&f), mean_of(&rest));
    let (low, high) = if fm <= rm {
        (f.clone(), rest.clone())
    } else {
        (rest.clone(), f.clone())
    };
    let max_of = |ix: &[usize]| ix.iter().map(|&i| xs[i]).fold(f64::NEG_INFINITY, f64::max);
    let min_of = |ix: &[usize]| ix.iter().map(|&i| xs[i]).fold(f64::INFINITY, f64::min);
    let gap = min_of(&high) - max_of(&low);
    let all_mean = xs.iter().sum::<f64>() / n as f64;
    let sst: f64 = xs.iter().map(|x| (x - all_mean).powi(2)).sum();
    let ssw = ss_of(&low) + ss_of(&high);
    let split = TwoMeans {
        low_mean: mean_of(&low),
        high_mean: mean_of(&high),
        low,
        high,
        gap,
        within_sd: if n > 2 {
            (ssw / (n - 2) as f64).sqrt()
        } else {
            0.0
        },
        explained: if sst > 0.0 { 1.0 - ssw / sst } else { 0.0 },
    };
    let med = median(xs).abs();
    let rel_gap = if med > 0.0 {
        (split.high_mean - split.low_mean) / med
    } else {
        0.0
    };
    let k = f.len();
    let flagged_worse = if higher_is_better { fm < rm } else { fm > rm };
    let bimodal = n >= MIN_PATTERN_VALUES
        && k >= 2
        && n - k >= 2
        && flagged_worse
        && gap > 0.0
        && 1.0 / choose(n, k) < CONDITION_ALPHA
        && gap >= CONDITION_MIN_GAP_SD * split.within_sd
        && rel_gap >= PRACTICAL_REL;
    Some(Bimodality {
        bimodal,
        split,
        coefficient: bimodality_coefficient(xs),
        rel_gap,
    })
}

/// Significance level of the drift test.
const DRIFT_ALPHA: f64 = 0.05;
/// Smallest change over the series reported as drift: the shared practical
/// floor. Per-interval series are also autocorrelated, which makes the test
/// over-confident; requiring a change users care about keeps it honest.
const DRIFT_MIN_REL_CHANGE: f64 = PRACTICAL_REL;

/// The verdict of [`drift`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Drift {
    pub n: usize,
    /// Mann–Kendall S: concordant minus discordant pairs.
    pub s: i64,
    /// Two-sided p-value of "no monotonic trend".
    pub p_value: f64,
    /// Whether the p-value is exact (no ties, n ≤ 30) or the normal approximation.
    pub exact: bool,
    /// Sen's slope: median of pairwise slopes, per step.
    pub slope: f64,
    /// Slope × (n − 1) / |median|: the change over the series.
    pub rel_change: f64,
    pub drifting: bool,
}

/// Mann–Kendall test for a monotonic trend, with Sen's slope.
///
/// S = Σ_{i<j} sign(x_j − x_i). Without ties and for n ≤ 30 the p-value is
/// exact: S = n(n−1)/2 − 2·(inversions), and the number of permutations with k
/// inversions follows the Mahonian numbers. Otherwise the normal approximation
/// with the tie-corrected variance
/// `[n(n−1)(2n+5) − Σ t(t−1)(2t+5)]/18` and a continuity correction is used.
/// Drifting means p < [`DRIFT_ALPHA`] and |relative change| ≥
/// [`DRIFT_MIN_REL_CHANGE`]. Three values can never be significant (smallest
/// exact p is 1/3); five can (p = 1/60). `None` below 3 values.
pub fn drift(xs: &[f64]) -> Option<Drift> {
    let n = xs.len();
    if n < 3 {
        return None;
    }
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += match xs[j].partial_cmp(&xs[i]) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mut tie_term = 0.0;
    let mut has_ties = false;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        if t > 1.0 {
            has_ties = true;
            tie_term += t * (t - 1.0) * (2.0 * t + 5.0);
        }
        i = j + 1;
    }
    let exact = !has_ties && n <= 30;
    let p_value = if s == 0 {
        1.0
    } else if exact {
        mann_kendall_exact_p(n, s)
    } else {
        let nf = n as f64;
        let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - tie_term) / 18.0;
        if var <= 0.0 {
            1.0
        } else {
            let z = (s.abs() as f64 - 1.0) / var.sqrt();
            erfc(z / std::f64::consts::SQRT_2).min(1.0)
        }
    };
    let slope = sen_slope(xs);
    let med = median(xs).abs();
    let rel_change = if med > 0.0 {
        slope * (n - 1) as f64 / med
    } else {
        0.0
    };
    Some(Drift {
        n,
        s,
        p_value,
        exact,
        slope,
        rel_change,
        drifting: p_value < DRIFT_ALPHA && rel_change.abs() >= DRIFT_MIN_REL_CHANGE,
    })
}

/// Two-sided exact p-value P(|S| ≥ |s|) for n untied values.
fn mann_kendall_exact_p(n: usize, s: i64) -> f64 {
    let pairs = n * (n - 1) / 2;
    // dist[k] = P(k inversions) for a random permutation, built one element
    // at a time: the m-th element adds 0..m−1 inversions, uniformly.
    let mut dist = vec![1.0f64];
    for m in 2..=n {
        let mut next = vec![0.0; dist.len() + m - 1];
        for (k, &p) in dist.iter().enumerate() {
            for add in 0..m {
                next[k + add] += p / m as f64;
            }
        }
        dist = next;
    }
    // |S| ≥ |s|  ⇔  inversions ≤ (pairs − |s|)/2, or the mirror image.
    let kmax = (pairs as i64 - s.abs()) / 2;
    let tail: f64 = dist.iter().take(kmax as usize + 1).sum();
    (2.0 * tail).min(1.0)
}

/// Sen's slope: the median of (x_j − x_i)/(j − i) over all pairs. Above 2000
/// values (a long per-second series) the least-squares slope is used instead,
/// to keep the cost linear.
fn sen_slope(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    if n > 2000 {
        let nf = n as f64;
        let mx = (nf - 1.0) / 2.0;
        let my = xs.iter().sum::<f64>() / nf;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, y) in xs.iter().enumerate() {
            sxy += (i as f64 - mx) * (y - my);
            sxx += (i as f64 - mx).powi(2);
        }
        return sxy / sxx;
    }
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            slopes.push((xs[j] - xs[i]) / (j - i) as f64);
        }
    }
    median(&slopes)
}

/// Complementary error function, Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7),
/// enough for p-values compared with 0.05.
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    poly * (-x * x).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64* and Box–Muller: deterministic normal samples for tests.
    struct Rng(u64);
    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self, mean: f64, sd: f64) -> f64 {
            let (u1, u2) = (self.uniform(), self.uniform());
            mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
        fn sample(&mut self, n: usize, mean: f64, sd: f64) -> Vec<f64> {
            (0..n).map(|_| self.normal(mean, sd)).collect()
        }
    }

    #[test]
    fn outlier_by_modified_z_score() {
        let xs = [100.0, 101.0, 99.0, 100.5, 99.5, 60.0];
        let o = outliers(&xs);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].index, 5);
        // median 99.75, MAD 0.75: M = 0.6745 × (60 − 99.75)/0.75
        assert!((o[0].score - 0.6745 * (60.0 - 99.75) / 0.75).abs() < 1e-9);
    }

    #[test]
    fn no_outliers_in_normal_noise_and_constant_data() {
        let mut r = Rng(7);
        let xs = r.sample(10, 1000.0, 10.0);
        assert!(outliers(&xs).is_empty(), "{:?}", modified_z_scores(&xs));
        assert!(outliers(&[5.0; 8]).is_empty());
        assert_eq!(modified_z_scores(&[5.0; 3]), vec![0.0; 3]);
    }

    #[test]
    fn outlier_when_mad_is_zero() {
        // More than half equal: MAD = 0, the mean-AD fallback still sees 50.
        let o = outliers(&[10.0, 10.0, 10.0, 10.0, 50.0]);
        assert_eq!(o.iter().map(|o| o.index).collect::<Vec<_>>(), vec![4]);
    }

    #[test]
    fn tiny_samples_have_no_verdicts() {
        for xs in [&[][..], &[1.0][..], &[1.0, 100.0][..]] {
            assert!(outliers(xs).is_empty());
            assert!(bimodality(xs).is_none());
            assert!(drift(xs).is_none());
        }
        assert_eq!(sen_slope(&[3.0]), 0.0);
        assert!(two_means(&[1.0]).is_none());
    }

    #[test]
    fn seed_004_trials_are_bimodal() {
        // 3800 MB/s when the race did not trigger, under 2400 when it did.
        let xs = [3810.0, 2390.0, 3795.0, 3820.0, 2405.0, 3790.0];
        let b = bimodality(&xs).unwrap();
        assert!(b.bimodal, "{b:?}");
        assert_eq!(b.split.low, vec![1, 4]);
        assert!((b.split.low_mean - 2397.5).abs() < 1e-9);
        assert!(b.rel_gap > 0.3);
        // Five trials, two slow.
        assert!(
            bimodality(&[100.0, 65.0, 101.0, 99.0, 64.0])
                .unwrap()
                .bimodal
        );
    }

    #[test]
    fn bimodal_per_second_series_is_flagged() {
        let mut r = Rng(11);
        let mut xs = r.sample(20, 3800.0, 30.0);
        xs.extend(r.sample(20, 2400.0, 30.0));
        let b = bimodality(&xs).unwrap();
        assert!(b.bimodal, "{b:?}");
        assert!(b.coefficient.unwrap() > BC_THRESHOLD);
    }

    #[test]
    fn normal_noise_is_not_bimodal() {
        // False-alarm rate on unimodal normal data, for trial counts and
        // per-second series lengths dioscope sees.
        let mut r = Rng(12345);
        for &n in &[4usize, 5, 6, 8, 10, 20, 30, 60] {
            let runs = 2000;
            let alarms = (0..runs)
                .filter(|_| bimodality(&r.sample(n, 1000.0, 20.0)).unwrap().bimodal)
                .count();
            assert!(
                (alarms as f64) < 0.02 * runs as f64,
                "n={n}: {alarms}/{runs} false alarms"
            );
        }
    }

    #[test]
    fn well_separated_modes_are_found_reliably() {
        // A minority of slow trials, as the seed's race produced; the fewer the
        // values, the wider the separation needed (see `separation_thresholds`).
        let mut r = Rng(99);
        // σ = 2 %, so every separation here is also above the 10 % floor.
        for &(n_fast, n_slow, sep) in &[
            (3usize, 2usize, 20.0),
            (4, 2, 15.0),
            (6, 4, 10.0),
            (7, 3, 10.0),
            (30, 10, 8.0),
        ] {
            let runs = 500;
            let hits = (0..runs)
                .filter(|_| {
                    let mut xs = r.sample(n_fast, 1000.0, 20.0);
                    xs.extend(r.sample(n_slow, 1000.0 - sep * 20.0, 20.0));
                    bimodality(&xs).unwrap().bimodal
                })
                .count();
            assert!(
                hits as f64 > 0.9 * runs as f64,
                "{n_fast}+{n_slow}: found {hits}/{runs}"
            );
        }
    }

    #[test]
    fn constant_data_is_neither_bimodal_nor_drifting() {
        let xs = [42.0; 10];
        assert!(!bimodality(&xs).unwrap().bimodal);
        assert_eq!(bimodality_coefficient(&xs), None);
        let d = drift(&xs).unwrap();
        assert!(!d.drifting);
        assert_eq!(d.s, 0);
        assert_eq!(d.p_value, 1.0);
    }

    #[test]
    fn one_outlier_is_not_a_mode() {
        let xs = [100.0, 101.0, 99.0, 100.0, 100.5, 70.0];
        assert!(!bimodality(&xs).unwrap().bimodal);
        assert_eq!(outliers(&xs).len(), 1);
    }

    #[test]
    fn sarle_coefficient_of_known_shapes() {
        // Two-point data with many samples approaches 1; normal data ~1/3.
        let mut two = vec![0.0; 500];
        two.extend(vec![1.0; 500]);
        let bc = bimodality_coefficient(&two).unwrap();
        assert!((bc - 1.0).abs() < 0.02, "{bc}");
        let mut r = Rng(5);
        let bc = bimodality_coefficient(&r.sample(5000, 0.0, 1.0)).unwrap();
        assert!((bc - 1.0 / 3.0).abs() < 0.03, "{bc}");
    }

    #[test]
    fn exact_mann_kendall_p_values() {
        // Perfectly increasing 5 values: only 2 of 120 orderings are as extreme.
        let d = drift(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!(d.exact);
        assert_eq!(d.s, 10);
        assert!((d.p_value - 2.0 / 120.0).abs() < 1e-12);
        // Three values can never be significant.
        let d = drift(&[1.0, 2.0, 3.0]).unwrap();
        assert!((d.p_value - 2.0 / 6.0).abs() < 1e-12);
        assert!(!d.drifting);
        // n = 4, S = 4 (one discordant pair): P(|S| ≥ 4) = 2 × 4/24.
        let d = drift(&[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(d.s, 4);
        assert!((d.p_value - 8.0 / 24.0).abs() < 1e-12);
    }

    #[test]
    fn normal_approximation_agrees_with_exact() {
        let mut r = Rng(3);
        let xs: Vec<f64> = (0..30)
            .map(|i| i as f64 * 0.5 + r.normal(0.0, 4.0))
            .collect();
        let exact = drift(&xs).unwrap();
        assert!(exact.exact);
        let mut tied = xs.clone();
        tied[0] = tied[1]; // one tie forces the approximation
        let approx = drift(&tied).unwrap();
        assert!(!approx.exact);
        assert!((exact.p_value - approx.p_value).abs() < 0.02);
    }

    #[test]
    fn trending_series_drifts() {
        // Throughput falling 1 % per step with noise, as a filling SSD does.
        let mut r = Rng(21);
        let xs: Vec<f64> = (0..30)
            .map(|i| 1000.0 * (1.0 - 0.01 * i as f64) + r.normal(0.0, 10.0))
            .collect();
        let d = drift(&xs).unwrap();
        assert!(d.drifting, "{d:?}");
        assert!(d.rel_change < -0.2 && d.rel_change > -0.4, "{d:?}");
        // Sen's slope of a clean line is its slope.
        assert!((sen_slope(&[1.0, 3.0, 5.0, 7.0]) - 2.0).abs() < 1e-12);
        // Five steadily rising trials.
        assert!(
            drift(&[100.0, 108.0, 115.0, 121.0, 130.0])
                .unwrap()
                .drifting
        );
    }

    #[test]
    fn noise_does_not_drift() {
        let mut r = Rng(77);
        let runs = 1000;
        // Noisy series (σ = 5 %): about α of them are significant by chance,
        // and most of those also change by 5 %; α + 3 binomial σ is the bound.
        let alarms = (0..runs)
            .filter(|_| drift(&r.sample(20, 1000.0, 50.0)).unwrap().drifting)
            .count();
        assert!(alarms <= 71, "{alarms}/{runs}");
        // Typical benchmark noise (σ = 1 %): chance trends are far below 5 %.
        let alarms = (0..runs)
            .filter(|_| drift(&r.sample(20, 1000.0, 10.0)).unwrap().drifting)
            .count();
        assert!(alarms <= 2, "{alarms}/{runs}");
    }

    #[test]
    fn significant_but_tiny_trend_is_not_drift() {
        let xs: Vec<f64> = (0..20).map(|i| 1000.0 + i as f64 * 0.01).collect();
        let d = drift(&xs).unwrap();
        assert!(d.p_value < 1e-6);
        assert!(!d.drifting, "0.02 % is not worth a warning");
    }

    #[test]
    fn small_deviations_are_never_outliers() {
        // A 6 % dip among trials within 0.1 %: far out in MAD units, but
        // under the practical floor.
        let xs = [1000.0, 1001.0, 999.0, 1000.5, 940.0];
        assert!(modified_z_scores(&xs)[4].abs() > OUTLIER_THRESHOLD);
        assert!(outliers(&xs).is_empty());
        let xs = [1000.0, 1001.0, 999.0, 1000.5, 880.0];
        assert_eq!(outliers(&xs).len(), 1);
    }

    #[test]
    fn patterns_need_five_values() {
        // Four trials, one of them at half speed: no outlier, no modes.
        let xs = [100.0, 100.5, 99.5, 50.0];
        assert!(outliers(&xs).is_empty());
        assert!(!bimodality(&[100.0, 101.0, 50.0, 51.0]).unwrap().bimodal);
        // Five do.
        assert_eq!(outliers(&[100.0, 100.5, 99.5, 100.2, 50.0]).len(), 1);
        assert!(
            bimodality(&[100.0, 101.0, 100.5, 50.0, 51.0])
                .unwrap()
                .bimodal
        );
    }

    #[test]
    fn pattern_rules_respect_the_floor_on_random_series() {
        // Whatever the noise, the number of trials or planted effects: no
        // rule reports an effect under the floor.
        let mut r = Rng(4242);
        for k in 0..3000 {
            let n = 5 + k % 12;
            let cv = [0.005, 0.02, 0.05, 0.15][k % 4];
            let mut xs = r.sample(n, 1000.0, 1000.0 * cv);
            match k % 3 {
                0 => xs[n / 2] *= 1.0 - 0.3 * r.uniform(),
                1 => {
                    for x in xs.iter_mut().take(n / 3) {
                        *x *= 0.8 + 0.15 * r.uniform();
                    }
                }
                _ => {
                    let slope = 0.03 * (r.uniform() - 0.5);
                    for (i, x) in xs.iter_mut().enumerate() {
                        *x *= 1.0 + slope * i as f64;
                    }
                }
            }
            let m = median(&xs).abs();
            for o in outliers(&xs) {
                assert!((o.value - median(&xs)).abs() >= PRACTICAL_REL * m, "{xs:?}");
            }
            if let Some(b) = bimodality(&xs).filter(|b| b.bimodal) {
                assert!(
                    b.split.high_mean - b.split.low_mean >= PRACTICAL_REL * m,
                    "{xs:?}"
                );
            }
            if let Some(d) = drift(&xs).filter(|d| d.drifting) {
                assert!(d.rel_change.abs() >= PRACTICAL_REL, "{xs:?}");
            }
        }
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-6);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-6);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-6);
        // Two-sided p for z = 1.96 is 0.05.
        assert!((erfc(1.96 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-3);
    }
}
