//! The Wilcoxon signed-rank test for paired differences, exactly: its null
//! distribution, and the Hodges–Lehmann estimate of the differences'
//! centre (the median of the Walsh averages) with the interval the test
//! inverts to (Hollander & Wolfe, *Nonparametric Statistical Methods*,
//! ch. 3). For `n` independent differences symmetric about 0, each of the
//! 2ⁿ sign patterns is equally likely; the interval's ends are the
//! (k+1)-th smallest and largest of the n(n+1)/2 Walsh averages, where k
//! is the largest rank sum with P(W⁺ ≤ k) ≤ α/2.

/// P(W⁺ ≤ w) for w = 0 ..= n(n+1)/2 under the null.
pub fn null_cdf(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    // counts[w]: sign patterns of ranks 1..=i with positive-rank sum w.
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for r in 1..=n {
        for w in (r..=max).rev() {
            counts[w] += counts[w - r];
        }
    }
    let total = 2f64.powi(n as i32);
    let mut acc = 0.0;
    counts
        .into_iter()
        .map(|c| {
            acc += c;
            acc / total
        })
        .collect()
}

/// The largest k with P(W⁺ ≤ k) ≤ alpha/2, `None` when even W⁺ = 0 is more
/// likely than that (too few differences for an interval at this level).
pub fn critical(n: usize, alpha: f64) -> Option<usize> {
    null_cdf(n)
        .iter()
        .take_while(|p| **p <= alpha / 2.0 + 1e-12)
        .count()
        .checked_sub(1)
}

/// The Hodges–Lehmann estimate of the centre of `d` and its two-sided
/// `1 − alpha` interval (`None` with too few differences). `None` when `d`
/// is empty or holds a non-finite value.
pub fn hodges_lehmann(d: &[f64], alpha: f64) -> Option<(f64, Option<(f64, f64)>)> {
    if d.is_empty() || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut w = Vec::with_capacity(d.len() * (d.len() + 1) / 2);
    for i in 0..d.len() {
        for j in i..d.len() {
            w.push((d[i] + d[j]) / 2.0);
        }
    }
    w.sort_by(f64::total_cmp);
    let m = w.len();
    let est = if m % 2 == 1 {
        w[m / 2]
    } else {
        (w[m / 2 - 1] + w[m / 2]) / 2.0
    };
    let ci = critical(d.len(), alpha).map(|k| (w[k], w[m - 1 - k]));
    Some((est, ci))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_null_distribution_matches_the_tables() {
        // n = 8: P(W+ ≤ 3) = 5/256, P(W+ ≤ 4) = 7/256; 95 % two-sided → k = 3.
        let c = null_cdf(8);
        assert!((c[3] - 5.0 / 256.0).abs() < 1e-12);
        assert!((c[4] - 7.0 / 256.0).abs() < 1e-12);
        assert!((c[36] - 1.0).abs() < 1e-12);
        assert_eq!(critical(8, 0.05), Some(3));
        // Tables (Hollander & Wolfe A.4): n = 6 → 0, n = 10 → 8, n = 12 → 13.
        assert_eq!(critical(6, 0.05), Some(0));
        assert_eq!(critical(10, 0.05), Some(8));
        assert_eq!(critical(12, 0.05), Some(13));
        // n = 5: 2/32 > 0.025: no 95 % interval.
        assert_eq!(critical(5, 0.05), None);
    }

    #[test]
    fn the_estimate_is_the_median_of_walsh_averages() {
        let (e, ci) = hodges_lehmann(&[1.0, 2.0, 9.0], 0.05).unwrap();
        // Walsh averages: 1, 1.5, 5, 2, 5.5, 9 → sorted 1 1.5 2 5 5.5 9.
        assert_eq!(e, 3.5);
        assert_eq!(ci, None);
        let d: Vec<f64> = (1..=8).map(f64::from).collect();
        let (e, ci) = hodges_lehmann(&d, 0.05).unwrap();
        assert_eq!(e, 4.5);
        let (lo, hi) = ci.unwrap();
        assert!(lo > 1.0 && lo < 4.5 && hi > 4.5 && hi < 8.0, "{lo} {hi}");
        assert!(hodges_lehmann(&[], 0.05).is_none());
        assert!(hodges_lehmann(&[f64::NAN], 0.05).is_none());
    }
}
