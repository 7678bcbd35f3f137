//! Is B different from A? Pure functions over two small samples (one value
//! per trial, typically 3–30 per side), used by `dioscope compare`, by
//! `compare --run`'s stopping rule and by `--trials=auto`.
//!
//! - [`mann_whitney`]: the Mann–Whitney U test (rank-sum test), two-sided.
//!   Chosen because storage results are often not normal (a long right tail
//!   of slow trials, bimodal devices) and the test assumes only that the
//!   trials of a side are independent draws from one distribution. Exact
//!   for small untied samples, normal approximation with tie and continuity
//!   correction otherwise.
//! - [`shift_interval`]: the Hodges–Lehmann shift with the interval
//!   inverted from the same U test (on log values: the ratio B/A), so the
//!   test and the interval it prints cannot disagree.
//! - [`min_trials_per_side`]: the fewest trials per side with which the U
//!   test can reach a given significance level at all.
//! - [`relative_half_width`]: the 95 % CI half-width of a mean relative to
//!   the mean, the precision `--trials=auto` aims for.
//!
//! docs/STATISTICS.md explains the choices for a reader who wants to check them.

use super::summary::Summary;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The result of a two-sided Mann–Whitney U test of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MannWhitney {
    /// U of sample `a`: the number of pairs (x from a, y from b) with x > y,
    /// ties counting ½.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (small samples without ties) or from the normal
    /// approximation.
    pub exact: bool,
}

/// Samples up to this size per side get the exact distribution of U when
/// there are no ties (the table has (n1·n2+1) entries per step, cheap).
const EXACT_MAX: usize = 50;

/// Mann–Whitney U test, two-sided (Mann & Whitney 1947, "On a test of
/// whether one of two random variables is stochastically larger than the
/// other", Ann. Math. Statist. 18(1):50–60).
///
/// Exact p-value: the permutation distribution of U under H0, counted with
/// the recurrence of Mann & Whitney (1947, eq. 1):
/// `f(u; m, n) = f(u − n; m − 1, n) + f(u; m, n − 1)`; p = 2·min(P(U ≤ u),
/// P(U ≥ u)), at most 1. With ties, or more than [`EXACT_MAX`] values on a
/// side: the normal approximation with the tie-corrected variance
/// `σ² = n1·n2/12 · ((N+1) − Σ(t³−t)/(N(N−1)))` and a continuity correction
/// of ½ (as in Hollander & Wolfe, "Nonparametric Statistical Methods",
/// 2nd ed. 1999, §4.1). `None` when a side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut u = 0.0f64;
    for &x in a {
        for &y in b {
            u += if x > y {
                1.0
            } else if x == y {
                0.5
            } else {
                0.0
            };
        }
    }
    // Tie groups in the pooled sample.
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(|x, y| x.total_cmp(y));
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j] == all[i] {
            j += 1;
        }
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    if tie_term == 0.0 && n1 <= EXACT_MAX && n2 <= EXACT_MAX {
        let dist = u_distribution(n1, n2);
        let total: f64 = dist.iter().sum();
        let k = u.round() as usize;
        let lower: f64 = dist[..=k].iter().sum::<f64>() / total;
        let upper: f64 = dist[k..].iter().sum::<f64>() / total;
        return Some(MannWhitney {
            u,
            p: (2.0 * lower.min(upper)).min(1.0),
            exact: true,
        });
    }
    let (m, n) = (n1 as f64, n2 as f64);
    let nn = m + n;
    let mean = m * n / 2.0;
    let var = m * n / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
    if var <= 0.0 {
        // Every value equal: no evidence of any difference.
        return Some(MannWhitney {
            u,
            p: 1.0,
            exact: false,
        });
    }
    let d = (u - mean).abs();
    let z = ((d - 0.5).max(0.0)) / var.sqrt();
    Some(MannWhitney {
        u,
        p: (2.0 * normal_sf(z)).min(1.0),
        exact: false,
    })
}

/// Counts of each U = 0..=m·n over all C(m+n, m) arrangements (as f64: the
/// counts exceed u64 for 50 against 50), computed once per pair of sizes in
/// a process (the table costs O(m²n²); a comparison asks for the same sizes
/// for every metric and job, `compare --run` at every look). The counts are
/// symmetric in m and n.
fn u_distribution(m: usize, n: usize) -> Arc<Vec<f64>> {
    type Cache = Mutex<HashMap<(usize, usize), Arc<Vec<f64>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (m.min(n), m.max(n));
    let cache = CACHE.get_or_init(Cache::default);
    let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = lock().get(&key) {
        return Arc::clone(d);
    }
    let d = Arc::new(u_counts(key.0, key.1));
    lock().insert(key, Arc::clone(&d));
    d
}

/// [`u_distribution`]'s table, computed.
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // f[i][j] as rolling rows over j, built with the recurrence above.
    let max = m * n;
    // table[i][j] is a vector of length i*j+1.
    let mut prev: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect(); // i = 0
    for i in 1..=m {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        cur.push(vec![1.0]); // j = 0
        for j in 1..=n {
            let mut v = vec![0.0; i * j + 1];
            // f(u; i, j) = f(u - j; i - 1, j) + f(u; i, j - 1)
            for (u, slot) in v.iter_mut().enumerate() {
                let a = if u >= j {
                    prev[j].get(u - j).copied().unwrap_or(0.0)
                } else {
                    0.0
                };
                let b = cur[j - 1].get(u).copied().unwrap_or(0.0);
                *slot = a + b;
            }
            cur.push(v);
        }
        prev = cur;
    }
    let out = prev.swap_remove(n);
    debug_assert_eq!(out.len(), max + 1);
    out
}

/// Upper tail of the standard normal, `P(Z > z)`, from the complementary
/// error function (W. J. Cody's rational approximation as given in
/// Numerical Recipes 3rd ed. §6.2.2, `erfc` with fractional error < 1.2e-7).
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The standard normal quantile: the z with `P(Z ≤ z) = p`, by bisection on
/// [`normal_sf`] (60 halvings: far below the 1.2e-7 error of `erfc`).
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if 1.0 - normal_sf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The critical value of the two-sided U test at level `alpha`: the largest
/// `c` with `P(U ≤ c) ≤ alpha/2` under H0 for `m` against `n` values, so the
/// test rejects when `U ≤ c` or `U ≥ m·n − c`. Exact (the permutation
/// distribution, as in [`mann_whitney`]) up to [`EXACT_MAX`] per side, the
/// normal approximation with continuity correction beyond. `None` when
/// even `U = 0` is more likely than `alpha/2`: with so few values no
/// interval at this level exists (1 against 1, 3 against 3 at 5 %).
pub fn u_critical(m: usize, n: usize, alpha: f64) -> Option<usize> {
    if m == 0 || n == 0 || alpha <= 0.0 {
        return None;
    }
    if m <= EXACT_MAX && n <= EXACT_MAX {
        let dist = u_distribution(m, n);
        let total: f64 = dist.iter().sum();
        let mut cum = 0.0;
        let mut c = None;
        for (u, w) in dist.iter().enumerate() {
            cum += w / total;
            if cum > alpha / 2.0 * (1.0 + 1e-12) {
                break;
            }
            c = Some(u);
        }
        return c;
    }
    let (mf, nf) = (m as f64, n as f64);
    let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
    let c = mf * nf / 2.0 - normal_quantile(1.0 - alpha / 2.0) * sd - 0.5;
    (c >= 0.0).then(|| c.floor() as usize)
}

/// The two-sided probability `2·P(U ≤ c)` of the U test's rejection region
/// for `m` against `n` (exact up to [`EXACT_MAX`] per side): one minus the
/// level of the interval [`shift_interval`] gives with `c`.
pub fn u_tail(m: usize, n: usize, c: usize) -> f64 {
    if m <= EXACT_MAX && n <= EXACT_MAX {
        let dist = u_distribution(m, n);
        let total: f64 = dist.iter().sum();
        let k = c.min(dist.len() - 1);
        return (2.0 * dist[..=k].iter().sum::<f64>() / total).min(1.0);
    }
    let (mf, nf) = (m as f64, n as f64);
    let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
    (2.0 * normal_sf((mf * nf / 2.0 - c as f64 - 0.5) / sd)).min(1.0)
}

/// The Hodges–Lehmann estimate of the shift of `b` against `a` and its
/// interval inverted from the U test with critical value `c` (Hodges &
/// Lehmann 1963, "Estimates of location based on rank tests", Ann. Math.
/// Statist. 34:598–611; Moses' interval, Hollander & Wolfe 1999 §4.3,
/// Lehmann 1975 "Nonparametrics" §2.6): of the m·n differences `b_j − a_i`,
/// sorted as D(1) ≤ … ≤ D(mn), the estimate is their median and the
/// interval is [D(c+1), D(mn−c)]. It excludes 0 exactly when the U test
/// with critical value `c` rejects (no ties at 0): the interval *is* the
/// test. Under the shift model (b is a shifted by δ) it covers δ with
/// probability 1 − [`u_tail`]`(m, n, c)` whatever the distribution.
/// `None` when a side is empty.
pub fn shift_interval(a: &[f64], b: &[f64], c: Option<usize>) -> Option<Shift> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut d: Vec<f64> = Vec::with_capacity(a.len() * b.len());
    for &y in b {
        d.extend(a.iter().map(|&x| y - x));
    }
    let n = d.len();
    let mut nth = |k: usize| {
        let (_, v, _) = d.select_nth_unstable_by(k, |x, y| x.total_cmp(y));
        *v
    };
    let estimate = if n % 2 == 1 {
        nth(n / 2)
    } else {
        0.5 * (nth(n / 2 - 1) + nth(n / 2))
    };
    let interval = c.filter(|&c| 2 * c < n).map(|c| (nth(c), nth(n - 1 - c)));
    Some(Shift { estimate, interval })
}

/// [`shift_interval`]'s answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// The Hodges–Lehmann estimate: the median of the pairwise differences.
    pub estimate: f64,
    /// The interval inverted from the U test; `None` when the test cannot
    /// reject at the level asked with so few values.
    pub interval: Option<(f64, f64)>,
}

/// The fewest trials per side (equal sides) with which a two-sided exact
/// U test can give `p < alpha` at all: the smallest possible p with n
/// against n is 2/C(2n, n) (complete separation), so 3 against 3 never goes
/// below 0.1 and 4 against 4 reaches 0.029 < 0.05.
pub fn min_trials_per_side(alpha: f64) -> usize {
    (1..=EXACT_MAX)
        .find(|&n| 2.0 / binomial(2 * n, n) < alpha)
        .unwrap_or(EXACT_MAX)
}

/// The smallest two-sided p the exact U test can reach with `n1` against `n2`.
pub fn min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    (2.0 / binomial(n1 + n2, n1)).min(1.0)
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The 95 % CI half-width of the mean of `xs` (Student's t) relative to
/// the mean; `None` with fewer than two values or a zero mean.
pub fn relative_half_width(xs: &[f64]) -> Option<f64> {
    let s = Summary::of(xs);
    if s.n < 2 || s.mean == 0.0 {
        return None;
    }
    Some((s.ci95.1 - s.mean) / s.mean.abs())
}

/// `--trials=auto`: how precise the primary metric must be, and the limits.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoTrials {
    /// Target 95 % CI half-width relative to the mean (0.02 = ±2 %).
    pub precision: f64,
    pub max_trials: u32,
    pub max_time_s: f64,
    /// The metric: `iops`, `bw`, `lat_mean`, `lat_p99`, `cpu_us_per_io`.
    pub metric: String,
}

impl Default for AutoTrials {
    fn default() -> Self {
        AutoTrials {
            precision: 0.02,
            max_trials: 30,
            max_time_s: 600.0,
            metric: "iops".into(),
        }
    }
}

/// The metrics `--precision-metric` takes.
pub const PRECISION_METRICS: &[&str] = &["iops", "bw", "lat_mean", "lat_p99", "cpu_us_per_io"];

/// `--trials=auto` never stops before this many trials (hyperfine's
/// minimum of runs, too). Fewer trials that happen to agree stop too often
/// on a lucky small spread, and their interval then misses the mean: with
/// 4, a series whose slower state comes in 30 % of trials shows only its
/// faster state in 24 % of runs (0.7⁴); with 10, in 2.8 %.
/// tests/statistics measures the final interval's coverage.
pub const AUTO_MIN_TRIALS: usize = 10;

/// What `--trials=auto` decides after a trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AutoStep {
    /// Run another trial.
    More,
    /// The half-width is within the precision.
    Converged { half: f64 },
    /// A limit was reached first (`half`: the half-width reached, if any).
    Limit { half: Option<f64>, by_time: bool },
}

impl AutoTrials {
    /// The floor: [`AUTO_MIN_TRIALS`] (and never fewer than a comparison
    /// of two such results needs to reach significance at 5 %,
    /// [`min_trials_per_side`]), at most `max_trials`.
    pub fn min_trials(&self) -> usize {
        AUTO_MIN_TRIALS
            .max(min_trials_per_side(0.05))
            .min(self.max_trials.max(1) as usize)
    }

    /// Decide after the trials `xs` (the primary metric, one per trial),
    /// `elapsed_s` into the run and `trial_s` for the last trial.
    ///
    /// Converged needs the half-width within the precision even with a
    /// pessimistic spread: the sample standard deviation raised to its
    /// one-sided 90 % upper confidence bound, s·√((n−1)/χ²₀.₁₀(n−1)).
    /// Stopping on the plain half-width stops most often after trials
    /// that happened to agree, and the final interval then covers less
    /// than its 95 % (tests/statistics measures it); the bound and the
    /// floor of [`AUTO_MIN_TRIALS`] make a stop on a lucky small spread
    /// rare. The half-width recorded is the widened one: the interval the
    /// result prints ([`Summary::of_trials`]), within the precision when
    /// converged.
    pub fn step(&self, xs: &[f64], elapsed_s: f64, trial_s: f64) -> AutoStep {
        let half = relative_half_width(xs).map(|h| h * auto_stop_widening(xs.len()));
        if xs.len() >= self.min_trials() {
            if let Some(h) = half.filter(|h| *h <= self.precision) {
                return AutoStep::Converged { half: h };
            }
        }
        if xs.len() >= self.max_trials as usize {
            return AutoStep::Limit {
                half,
                by_time: false,
            };
        }
        if elapsed_s + trial_s > self.max_time_s {
            return AutoStep::Limit {
                half,
                by_time: true,
            };
        }
        AutoStep::More
    }
}

/// √((n−1)/χ²₀.₁₀(n−1)): the factor that raises the sample standard
/// deviation of `n` values to its one-sided 90 % upper confidence bound.
/// `--trials=auto` stops only when the half-width so raised is within the
/// precision, and the interval it prints is widened by it
/// ([`Summary::of_trials`]).
pub fn auto_stop_widening(n: usize) -> f64 {
    let df = n.saturating_sub(1).max(1) as f64;
    (df / chi2_quantile_10(df)).sqrt()
}

/// The 10 % quantile of the χ² distribution with `k` degrees of freedom,
/// by the Wilson–Hilferty cube-root approximation (Wilson & Hilferty 1931,
/// PNAS 17:684–688): k·(1 − 2/(9k) + z·√(2/(9k)))³ with z = −1.2816;
/// within 1 % of the tables from k = 9 on (4.17 against 4.168 for k = 9,
/// 19.77 against 19.768 for k = 29).
fn chi2_quantile_10(k: f64) -> f64 {
    let a = 2.0 / (9.0 * k);
    (k * (1.0 - a - 1.281_55 * a.sqrt()).powi(3)).max(1e-9)
}

/// How `--trials=auto` ended for one group: recorded in the result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AutoOutcome {
    pub group: u32,
    pub metric: String,
    pub trials: u32,
    pub converged: bool,
    /// The 95 % CI half-width reached, relative to the mean, in %: the
    /// interval widened for the stop, as the result prints it.
    pub half_width_pct: Option<f64>,
    pub precision_pct: f64,
    /// Why it stopped: `converged`, `max-trials`, `max-time`.
    pub stopped_by: String,
    /// The metric's value per trial.
    pub values: Vec<f64>,
}

/// Steele's SplitMix64 (Steele, Lea & Flood 2014, "Fast splittable
/// pseudorandom number generators", OOPSLA): small, fast, good enough for
/// resampling indices and for the simulations that calibrate and check the
/// comparison's boundaries.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.next()
    }
    /// A uniform value in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-sided exact p by enumerating every split of the pooled sample:
    /// an independent check of the recurrence.
    fn brute_p(a: &[f64], b: &[f64]) -> f64 {
        let all: Vec<f64> = a.iter().chain(b).copied().collect();
        let n = all.len();
        let m = a.len();
        let u_of = |mask: u32| {
            let mut u = 0.0f64;
            for i in 0..n {
                if mask & (1 << i) == 0 {
                    continue;
                }
                for j in 0..n {
                    if mask & (1 << j) != 0 {
                        continue;
                    }
                    if all[i] > all[j] {
                        u += 1.0;
                    }
                }
            }
            u
        };
        let obs = u_of((1u32 << m) - 1);
        let (mut le, mut ge, mut tot) = (0.0f64, 0.0f64, 0.0f64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != m {
                continue;
            }
            let u = u_of(mask);
            tot += 1.0;
            if u <= obs {
                le += 1.0;
            }
            if u >= obs {
                ge += 1.0;
            }
        }
        (2.0 * (le / tot).min(ge / tot)).min(1.0)
    }

    #[test]
    fn complete_separation_gives_the_known_minimum_p() {
        // 2/C(6,3) = 0.1, 2/C(8,4) = 0.02857, 2/C(10,5) = 0.00794.
        let r = mann_whitney(&[1., 2., 3.], &[4., 5., 6.]).unwrap();
        assert_eq!(r.u, 0.0);
        assert!(r.exact);
        assert!((r.p - 0.1).abs() < 1e-12, "{r:?}");
        let r = mann_whitney(&[5., 6., 7., 8.], &[1., 2., 3., 4.]).unwrap();
        assert_eq!(r.u, 16.0);
        assert!((r.p - 2.0 / 70.0).abs() < 1e-12, "{r:?}");
        let r = mann_whitney(&[1., 2., 3., 4., 5.], &[6., 7., 8., 9., 10.]).unwrap();
        assert!((r.p - 2.0 / 252.0).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn exact_p_matches_enumeration() {
        let cases: &[(&[f64], &[f64])] = &[
            (&[19., 22., 16., 29., 24.], &[20., 11., 17., 12.]),
            (&[1.1, 3.3, 2.2], &[2.5, 0.5, 4.4, 3.0]),
            (&[10., 12., 14., 9., 30., 1.], &[11., 13., 15., 16., 2.]),
        ];
        for (a, b) in cases {
            let r = mann_whitney(a, b).unwrap();
            assert!(r.exact);
            let bp = brute_p(a, b);
            assert!((r.p - bp).abs() < 1e-12, "{a:?} {b:?}: {} vs {bp}", r.p);
        }
        // The textbook example (U = 17 of 20 for the first sample).
        let r = mann_whitney(&[19., 22., 16., 29., 24.], &[20., 11., 17., 12.]).unwrap();
        assert_eq!(r.u, 17.0);
        // P(U >= 17) = 7/126 for 5 against 4 → two-sided 0.1111.
        assert!((r.p - 14.0 / 126.0).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        // a = [1,2,2,3], b = [2,3,4,5]: U_a = 2.5 (1 beats nothing; each 2
        // ties one 2: ½ + ½; 3 beats 2 and ties 3: 1.5).
        let r = mann_whitney(&[1., 2., 2., 3.], &[2., 3., 4., 5.]).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 2.5);
        // Ties: 2 three times, 3 twice → Σ(t³−t) = 24 + 6 = 30; N = 8.
        let var: f64 = 16.0 / 12.0 * (9.0 - 30.0 / 56.0);
        let z = ((8.0f64 - 2.5).abs() - 0.5) / var.sqrt();
        let want = 2.0 * normal_sf(z);
        assert!((r.p - want).abs() < 1e-12);
        // z = 5/√11.286 = 1.488 → p ≈ 2 · 0.0683 = 0.1367 (normal table).
        assert!((r.p - 0.1367).abs() < 0.001, "{r:?}");
    }

    #[test]
    fn identical_samples_are_not_different() {
        let r = mann_whitney(&[5., 5., 5.], &[5., 5., 5.]).unwrap();
        assert_eq!(r.p, 1.0);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }

    #[test]
    fn normal_tail_matches_the_table() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_sf(-1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((normal_sf(3.0) - 0.001_349_9).abs() < 1e-6);
    }

    #[test]
    fn the_floor_of_trials() {
        assert_eq!(min_trials_per_side(0.05), 4);
        assert_eq!(min_trials_per_side(0.01), 5);
        assert!((min_p(3, 3) - 0.1).abs() < 1e-12);
        assert!(min_p(4, 4) < 0.05);
        assert_eq!(min_p(0, 3), 1.0);
    }

    #[test]
    fn auto_trials_converge_on_a_stable_series_and_not_on_a_noisy_one() {
        let a = AutoTrials::default();
        assert_eq!(a.min_trials(), 10);
        let stable = [
            1000.0, 1002.0, 998.0, 1001.0, 999.0, 1000.0, 1003.0, 997.0, 1001.0, 999.0,
        ];
        // Nine trials are below the floor even when they agree.
        assert_eq!(a.step(&stable[..9], 1.0, 1.0), AutoStep::More);
        assert!(matches!(
            a.step(&stable, 1.0, 1.0),
            AutoStep::Converged { half } if half < 0.01
        ));
        // A planted noisy series (±30 %) never gets within 2 % in 30 trials.
        let noisy: Vec<f64> = (0..30)
            .map(|i| if i % 2 == 0 { 700.0 } else { 1300.0 } + i as f64)
            .collect();
        for n in 4..30 {
            assert_eq!(a.step(&noisy[..n], 1.0, 1.0), AutoStep::More, "{n}");
        }
        assert!(matches!(
            a.step(&noisy, 1.0, 1.0),
            AutoStep::Limit { half: Some(h), by_time: false } if h > 0.05
        ));
        // The time limit: another trial would overrun it.
        assert!(matches!(
            a.step(&noisy[..5], 590.0, 20.0),
            AutoStep::Limit { by_time: true, .. }
        ));
    }

    #[test]
    fn relative_half_width_is_t_based() {
        // mean 10, sd 1, n 4: half = 3.182 · 1/2 = 1.591 → 0.1591.
        let xs = [9.0, 10.0, 10.0, 11.0];
        let sd = (2.0f64 / 3.0).sqrt();
        let want = 3.182 * sd / 2.0 / 10.0;
        assert!((relative_half_width(&xs).unwrap() - want).abs() < 1e-12);
        assert!(relative_half_width(&[1.0]).is_none());
    }
}
