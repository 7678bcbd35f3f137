//! The one procedure that decides a comparison and prints it, for a fixed
//! number of trials and for `compare --run`'s sequential looks.
//!
//! - The **estimate** of a change is the Hodges–Lehmann shift of the
//!   logarithms of the per-trial values (so a ratio B/A), and its
//!   **interval** is inverted from the same two-sided Mann–Whitney U test
//!   ([`shift_interval`]). The verdict is read off that interval
//!   ([`verdict_of`]): significant exactly when the interval lies outside
//!   the no-change zone ±threshold.
//! - Several gate tests (gate metrics × jobs) share the error rate by
//!   Bonferroni: each test's interval is at level 1 − α/G, so all G
//!   intervals cover together with probability ≥ 1 − α.
//! - `compare --run` looks after every pair from `min_n` to `max_n` trials
//!   per side. Its boundaries spend each test's α/G over the looks with
//!   Lan–DeMets' O'Brien–Fleming-type spending function
//!   ([`Design::boundary`]); the interval at a look is the *repeated
//!   confidence interval* of that look's boundary (Jennison & Turnbull
//!   1989), which covers at every look at once, so stopping when the
//!   verdict is clear keeps the error rate. [`decide`] is the stopping rule:
//!   a pure function that `commands/compare.rs` calls after every pair and
//!   the simulation in `tests/statistics` calls on synthetic series.
//!
//! docs/STATISTICS.md states the estimand, the error rates, the power and
//! the references.

use super::compare::Verdict;
use crate::stats::significance::{normal_sf, shift_interval, u_critical, u_tail};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The interval of one test at one look: the U test's critical value and
/// the interval's own (nominal, two-sided) level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boundary {
    /// Reject when U ≤ c or U ≥ n² − c.
    pub c: usize,
    /// 1 − 2·P(U ≤ c): the confidence level of the interval at this look.
    pub level: f64,
}

/// The change of one metric as the comparison prints it and judges it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// (B/A − 1)·100 of the Hodges–Lehmann ratio.
    pub change_pct: f64,
    /// The interval of the change in %, at `level`; `None` with too few
    /// trials for any interval at that level.
    pub ci_pct: Option<(f64, f64)>,
    pub level: Option<f64>,
    pub verdict: Verdict,
}

/// The verdict, read off the interval alone: outside ±threshold on one
/// side is significant (better or worse by the metric's direction), inside
/// it is no meaningful change, across a bound is no significant change,
/// and no interval is too few trials. This is the only place a verdict on
/// a measured metric is made.
pub fn verdict_of(
    ci_pct: Option<(f64, f64)>,
    threshold_pct: f64,
    higher_is_better: bool,
) -> Verdict {
    let Some((lo, hi)) = ci_pct else {
        return Verdict::TooFewTrials;
    };
    let up = if higher_is_better {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    let down = if higher_is_better {
        Verdict::Worse
    } else {
        Verdict::Better
    };
    if lo > threshold_pct {
        up
    } else if hi < -threshold_pct {
        down
    } else if lo >= -threshold_pct && hi <= threshold_pct {
        Verdict::NoMeaningfulChange
    } else {
        Verdict::NoSignificantChange
    }
}

/// Whether a verdict is a significant change.
pub fn significant(v: Verdict) -> bool {
    matches!(v, Verdict::Better | Verdict::Worse)
}

/// Judge `b` against `a` (per-trial values, all > 0) with the U test's
/// critical value `c` (`None`: no interval at the level asked). `None`
/// when a side has no positive value.
pub fn judge(
    a: &[f64],
    b: &[f64],
    bound: Option<Boundary>,
    threshold_pct: f64,
    higher_is_better: bool,
) -> Option<Judged> {
    if a.is_empty()
        || b.is_empty()
        || a.iter()
            .chain(b)
            .any(|x| x.is_nan() || *x <= 0.0 || x.is_infinite())
    {
        return None;
    }
    let la: Vec<f64> = a.iter().map(|x| x.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|x| x.ln()).collect();
    let s = shift_interval(&la, &lb, bound.map(|b| b.c))?;
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    let ci_pct = s.interval.map(|(l, h)| (pct(l), pct(h)));
    Some(Judged {
        change_pct: pct(s.estimate),
        ci_pct,
        level: ci_pct.and(bound.map(|b| b.level)),
        verdict: verdict_of(ci_pct, threshold_pct, higher_is_better),
    })
}

/// The boundary of a single look at `m` against `n` with two-sided level
/// `alpha` (a fixed-size comparison).
pub fn fixed_boundary(m: usize, n: usize, alpha: f64) -> Option<Boundary> {
    let c = u_critical(m, n, alpha)?;
    Some(Boundary {
        c,
        level: 1.0 - u_tail(m, n, c),
    })
}

/// The plan of a sequential comparison: looks after every pair from
/// `min_n` to `max_n` per side, `alpha` per test (the family's α over the
/// number of gate tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Design {
    pub min_n: usize,
    pub max_n: usize,
    pub alpha: f64,
}

/// Lan–DeMets' O'Brien–Fleming-type spending function, two-sided:
/// α(t) = 2 − 2Φ(z_{1−α/2}/√t) at information fraction t (Lan & DeMets
/// 1983, "Discrete sequential boundaries for clinical trials",
/// Biometrika 70:659–663). Spends almost nothing early, so a stop at the
/// first looks needs an overwhelming change and the last look keeps
/// nearly the whole α.
pub fn obf_spent(alpha: f64, t: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    let z = crate::stats::significance::normal_quantile(1.0 - alpha / 2.0);
    (2.0 * normal_sf(z / t.min(1.0).sqrt())).min(alpha)
}

/// Random paths the boundaries are calibrated on.
const PATHS: usize = 100_000;

impl Design {
    /// The boundary at `n` trials per side; `None` before the first look or
    /// when the look may not reject (nothing spent yet).
    pub fn boundary(&self, n: usize) -> Option<Boundary> {
        let first = self.min_n.max(1);
        if n < first || n > self.max_n {
            return None;
        }
        boundaries(self).get(n - first).copied().flatten()
    }
}

type Key = (usize, usize, u64);

/// The critical values of every look of `d`, computed once per design.
///
/// Under H0 (both sides draw from one continuous distribution) the order
/// of the pooled values is a uniform random permutation, so the joint
/// distribution of U over the looks is the same for every distribution:
/// it is computed here by simulating [`PATHS`] random orders (a seeded
/// generator, so the boundaries are the same on every run). Look by look,
/// `c_k` is the largest value for which the share of paths that crossed at
/// any look up to k stays within the spending function's α(n_k / max_n).
/// A look whose c would be below 0 cannot reject (`None`).
fn boundaries(d: &Design) -> Arc<Vec<Option<Boundary>>> {
    type Table = Arc<Vec<Option<Boundary>>>;
    static CACHE: OnceLock<Mutex<HashMap<Key, Table>>> = OnceLock::new();
    let key = (d.min_n, d.max_n, d.alpha.to_bits());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return v.clone();
    }
    let v: Table = Arc::new(
        calibrate(d)
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let n = d.min_n.max(1) + i;
                c.map(|c| Boundary {
                    c,
                    level: 1.0 - u_tail(n, n, c),
                })
            })
            .collect(),
    );
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, v.clone());
    v
}

fn calibrate(d: &Design) -> Vec<Option<usize>> {
    let (min_n, max_n) = (d.min_n.max(1), d.max_n.max(d.min_n.max(1)));
    let looks = max_n - min_n + 1;
    // Fewer paths for very long designs (the cost grows with max_n²).
    let paths = (2.0e9 / (max_n * max_n) as f64).clamp(20_000.0, PATHS as f64) as usize;
    // Per path and look: min(U, n² − U), the distance from the tail.
    let mut s = vec![0u32; paths * looks];
    let mut rng = crate::stats::significance::SplitMix64::new(0xd1_05c0_9e5e);
    let (mut a, mut b) = (vec![0u64; max_n], vec![0u64; max_n]);
    for p in 0..paths {
        let mut u = 0u64;
        for k in 0..max_n {
            a[k] = rng.next_u64();
            b[k] = rng.next_u64();
            u += a[..k].iter().filter(|&&x| x > b[k]).count() as u64;
            u += b[..k].iter().filter(|&&y| a[k] > y).count() as u64;
            u += (a[k] > b[k]) as u64;
            let n = k + 1;
            if n >= min_n {
                let nn = (n * n) as u64;
                s[p * looks + n - min_n] = u.min(nn - u) as u32;
            }
        }
    }
    let mut crossed = vec![false; paths];
    let mut n_crossed = 0usize;
    let mut out = Vec::with_capacity(looks);
    for l in 0..looks {
        let n = min_n + l;
        let allowed = (obf_spent(d.alpha, n as f64 / max_n as f64) * paths as f64).floor() as usize;
        let half = n * n / 2;
        let mut hist = vec![0usize; half + 1];
        for p in 0..paths {
            if !crossed[p] {
                hist[(s[p * looks + l] as usize).min(half)] += 1;
            }
        }
        let mut c = None;
        let mut cum = n_crossed;
        for (v, &h) in hist.iter().enumerate() {
            cum += h;
            if cum > allowed {
                break;
            }
            c = Some(v);
        }
        // A boundary may never be wider than a fixed test at the whole α
        // (the interval must be a real confidence interval on its own).
        c = match (c, u_critical(n, n, d.alpha)) {
            (Some(x), Some(y)) => Some(x.min(y)),
            _ => None,
        };
        if let Some(c) = c {
            for p in 0..paths {
                if !crossed[p] && s[p * looks + l] as usize <= c {
                    crossed[p] = true;
                    n_crossed += 1;
                }
            }
        }
        out.push(c);
    }
    out
}

/// One gate test at a look: a metric of a job, its per-trial values on
/// each side so far, and its direction.
#[derive(Debug, Clone, Copy)]
pub struct Gate<'a> {
    pub a: &'a [f64],
    pub b: &'a [f64],
    pub higher_is_better: bool,
}

/// Why a sequential comparison stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Every gate's interval is outside the no-change zone or inside it.
    Clear,
    /// `max_n` trials per side ran; some verdict is not clear.
    MaxTrials,
}

/// What [`decide`] says after a look.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Continue,
    /// Stop, with every gate's judgement at this look.
    Stop(Stop, Vec<Option<Judged>>),
}

/// `compare --run`'s stopping rule, after a pair: with `n` trials on each
/// side of every gate (the smaller side counts), judge every gate at this
/// look's boundary; stop when each is clear (significant, or its interval
/// inside ±threshold) or at `max_n`. Stopping for "no meaningful change"
/// never adds a false "significant" (the boundaries are computed as if the
/// run always went on), and a stop at any look keeps the repeated
/// intervals' coverage.
pub fn decide(gates: &[Gate], design: &Design, threshold_pct: f64) -> Step {
    let n = gates
        .iter()
        .map(|g| g.a.len().min(g.b.len()))
        .min()
        .unwrap_or(0);
    let judged = || -> Vec<Option<Judged>> {
        gates
            .iter()
            .map(|g| {
                judge(
                    g.a,
                    g.b,
                    design.boundary(n),
                    threshold_pct,
                    g.higher_is_better,
                )
            })
            .collect()
    };
    if n >= design.max_n {
        return Step::Stop(Stop::MaxTrials, judged());
    }
    if n < design.min_n || design.boundary(n).is_none() || gates.is_empty() {
        return Step::Continue;
    }
    let j = judged();
    let clear = j.iter().all(|x| {
        x.is_some_and(|x| significant(x.verdict) || x.verdict == Verdict::NoMeaningfulChange)
    });
    if clear {
        Step::Stop(Stop::Clear, j)
    } else {
        Step::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_is_the_interval() {
        let t = 2.0;
        assert_eq!(verdict_of(Some((2.1, 9.0)), t, true), Verdict::Better);
        assert_eq!(verdict_of(Some((2.1, 9.0)), t, false), Verdict::Worse);
        assert_eq!(verdict_of(Some((-9.0, -2.1)), t, true), Verdict::Worse);
        assert_eq!(
            verdict_of(Some((-1.0, 1.5)), t, true),
            Verdict::NoMeaningfulChange
        );
        assert_eq!(
            verdict_of(Some((-1.0, 2.5)), t, true),
            Verdict::NoSignificantChange
        );
        assert_eq!(
            verdict_of(Some((0.5, 2.5)), t, true),
            Verdict::NoSignificantChange
        );
        assert_eq!(verdict_of(None, t, true), Verdict::TooFewTrials);
    }

    #[test]
    fn the_interval_excludes_zero_exactly_when_the_u_test_rejects() {
        use crate::stats::significance::mann_whitney;
        // Random small samples: the fixed interval at 5 % excludes 0 iff the
        // exact U test's p ≤ the attained level.
        let mut rng = crate::stats::significance::SplitMix64::new(9);
        for _ in 0..300 {
            let m = 4 + rng.below(5);
            let n = 4 + rng.below(5);
            let a: Vec<f64> = (0..m)
                .map(|_| 100.0 + rng.below(1000) as f64 / 10.0)
                .collect();
            let b: Vec<f64> = (0..n)
                .map(|_| 103.0 + rng.below(1000) as f64 / 10.0)
                .collect();
            let mut all: Vec<f64> = a.iter().chain(&b).copied().collect();
            all.sort_by(f64::total_cmp);
            if all.windows(2).any(|w| w[0] == w[1]) {
                continue; // ties: the U test's p is then approximate
            }
            let bound = fixed_boundary(m, n, 0.05).unwrap();
            let j = judge(&a, &b, Some(bound), 0.0, true).unwrap();
            let (lo, hi) = j.ci_pct.unwrap();
            let p = mann_whitney(&a, &b).unwrap().p;
            let excludes = lo > 0.0 || hi < 0.0;
            assert_eq!(
                excludes,
                p <= 1.0 - bound.level + 1e-12,
                "{a:?} {b:?} p={p} {j:?}"
            );
            assert_eq!(excludes, significant(j.verdict));
        }
    }

    #[test]
    fn one_against_one_has_no_interval() {
        let j = judge(&[100.0], &[50.0], fixed_boundary(1, 1, 0.05), 2.0, true).unwrap();
        assert_eq!(j.ci_pct, None);
        assert_eq!(j.level, None);
        assert!((j.change_pct + 50.0).abs() < 1e-9);
        assert_eq!(j.verdict, Verdict::TooFewTrials);
        // 3 against 3: the smallest two-sided p is 0.1, no 95 % interval.
        assert!(fixed_boundary(3, 3, 0.05).is_none());
        assert_eq!(fixed_boundary(4, 4, 0.05).unwrap().c, 0);
    }

    #[test]
    fn boundaries_spend_little_early_and_the_whole_alpha_by_the_end() {
        let d = Design {
            min_n: 4,
            max_n: 30,
            alpha: 0.05,
        };
        // Nothing can be rejected at the first looks.
        assert!(d.boundary(4).is_none() && d.boundary(5).is_none());
        let last = d.boundary(30).unwrap();
        let fixed = fixed_boundary(30, 30, 0.05).unwrap();
        assert!(
            last.c <= fixed.c && last.c + 40 > fixed.c,
            "{last:?} {fixed:?}"
        );
        assert!(last.level > 0.95 && last.level < 0.975, "{last:?}");
        // The levels fall from look to look (the intervals grow more liberal).
        let levels: Vec<f64> = (4..=30)
            .filter_map(|n| d.boundary(n))
            .map(|b| b.level)
            .collect();
        assert!(
            levels.windows(2).all(|w| w[1] <= w[0] + 1e-12),
            "{levels:?}"
        );
        assert!(obf_spent(0.05, 1.0) > 0.0499 && obf_spent(0.05, 0.2) < 1e-4);
    }

    #[test]
    fn decide_stops_on_a_clear_change_and_continues_on_noise() {
        let d = Design {
            min_n: 4,
            max_n: 30,
            alpha: 0.05,
        };
        let a: Vec<f64> = (0..12).map(|i| 1000.0 + (i * 7 % 11) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 0.7).collect();
        let g = [Gate {
            a: &a,
            b: &b,
            higher_is_better: true,
        }];
        match decide(&g, &d, 2.0) {
            Step::Stop(Stop::Clear, j) => assert_eq!(j[0].unwrap().verdict, Verdict::Worse),
            s => panic!("{s:?}"),
        }
        let noisy_b: Vec<f64> = a.iter().rev().map(|x| x * 1.001).collect();
        let g = [Gate {
            a: &a[..6],
            b: &noisy_b[..6],
            higher_is_better: true,
        }];
        assert_eq!(decide(&g, &d, 2.0), Step::Continue);
    }
}
