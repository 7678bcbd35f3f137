//! Latency histogram with bounded relative error.
//!
//! Log-linear buckets (the HdrHistogram layout): values below 2^SUB_BITS are
//! exact; above, each power of two is split into 2^SUB_BITS equal buckets, so
//! a bucket's width is at most 1/128 of its lower bound. Reporting the
//! bucket's midpoint bounds the relative error by 1/256 ≈ 0.4 %, well inside
//! the 1 % the spec asks for. Recording is a leading-zero count, a shift and an
//! add: no branch on the value's magnitude beyond one compare, no allocation.
//! min, max, sum and sum of squares are kept exactly.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Largest exponent tracked: 2^44 ns ≈ 4.9 hours; larger values are clamped.
const MAX_EXP: u32 = 44;
/// Number of buckets.
const NBUCKETS: usize = ((MAX_EXP - SUB_BITS + 2) as usize) * SUB as usize;

/// A histogram's exact state, serializable: see [`Histogram::to_parts`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HistParts {
    pub buckets: Vec<(u32, u64)>,
    pub n: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub sum_sq: f64,
}

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    n: u64,
    min: u64,
    max: u64,
    sum: u64,
    /// Sum of squares in floating point: exact enough for σ (53-bit
    /// mantissa) and one multiply-add per sample instead of 128-bit math.
    sum_sq: f64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("n", &self.n)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let e = e.min(MAX_EXP);
    let shift = e - SUB_BITS;
    let top = (v >> shift).min(2 * SUB - 1);
    ((e - SUB_BITS + 1) as u64 * SUB + (top - SUB)) as usize
}

/// Lower bound and width of bucket `i`.
fn bucket_bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, 1);
    }
    let group = i / SUB; // 1 + (e - SUB_BITS)
    let off = i % SUB;
    let shift = (group - 1) as u32;
    ((SUB + off) << shift, 1u64 << shift)
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0u64; NBUCKETS].into_boxed_slice(),
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0.0,
        }
    }

    /// Record one value (nanoseconds).
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        // SAFETY-free bound: index() never exceeds NBUCKETS - 1 by construction.
        let i = index(v);
        debug_assert!(i < NBUCKETS);
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum = self.sum.wrapping_add(v);
        // Through i64: x86-64 converts signed integers in one instruction
        // (cvtsi2sd) and unsigned ones in six (3 records an I/O); latencies
        // above i64::MAX ns (292 years) are clamped, not wrapped.
        let f = v.min(i64::MAX as u64) as i64 as f64;
        self.sum_sq += f * f;
    }

    /// Record `n` values of `v` at once: histograms read back from json+
    /// bins (counts per value), and the worker's runs of I/Os with equal
    /// latencies (runner/worker/mod.rs, `LatRun`). The same state as `n`
    /// calls of [`Self::record`], but for the sum of squares' rounding (one
    /// multiply instead of `n` additions).
    #[inline(always)]
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        if let Some(c) = self.counts.get_mut(index(v)) {
            *c += n;
        }
        self.n += n;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum = self.sum.wrapping_add(v.wrapping_mul(n));
        // Through i64, as in `record`.
        let f = v.min(i64::MAX as u64) as i64 as f64;
        self.sum_sq += f * f * (n.min(i64::MAX as u64) as i64 as f64);
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.n += o.n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
    }

    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.n = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sum_sq = 0.0;
    }

    /// Sum of all recorded values (ns), saturating.
    #[inline]
    pub fn sum_ns(&self) -> u64 {
        self.sum
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn min(&self) -> u64 {
        if self.n == 0 {
            0
        } else {
            self.min
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    /// Population standard deviation (as fio reports it, over all samples).
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let mean = self.sum as f64 / n;
        let var = (self.sum_sq / n - mean * mean).max(0.0);
        // Sample (n-1) correction, as fio does.
        (var * n / (n - 1.0)).sqrt()
    }

    /// The value at percentile `p` (0..=100): the smallest recorded value v
    /// such that at least p % of samples are ≤ v, reported as its bucket's
    /// midpoint and clamped to [min, max].
    pub fn percentile(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut cum = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            cum += c;
            if cum >= rank {
                let (lo, w) = bucket_bounds(i);
                return (lo + w / 2).clamp(self.min(), self.max);
            }
        }
        self.max
    }

    /// The exact state (non-empty buckets by index), to merge a histogram
    /// recorded by another process (distributed runs send these, never
    /// percentiles).
    pub fn to_parts(&self) -> HistParts {
        HistParts {
            buckets: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (i as u32, c))
                .collect(),
            n: self.n,
            min: self.min,
            max: self.max,
            sum: self.sum,
            sum_sq: self.sum_sq,
        }
    }

    /// The histogram [`Histogram::to_parts`] described; bucket indexes out
    /// of range are dropped (they cannot come from this layout).
    pub fn from_parts(p: &HistParts) -> Histogram {
        let mut h = Histogram::new();
        for &(i, c) in &p.buckets {
            if let Some(slot) = h.counts.get_mut(i as usize) {
                *slot = c;
            }
        }
        h.n = p.n;
        h.min = p.min;
        h.max = p.max;
        h.sum = p.sum;
        h.sum_sq = p.sum_sq;
        h
    }

    /// Become a copy of `o` without allocating (both have the same buckets):
    /// the worker keeps the previous interval's histogram this way.
    pub fn copy_from(&mut self, o: &Histogram) {
        self.counts.copy_from_slice(&o.counts);
        self.n = o.n;
        self.min = o.min;
        self.max = o.max;
        self.sum = o.sum;
        self.sum_sq = o.sum_sq;
    }

    /// Percentiles `ps` (ascending, 0..=100) of the values recorded since
    /// `prev` was copied from this histogram: one pass over the bucket
    /// differences, no allocation. Bucket midpoints, as [`Self::percentile`];
    /// 0 when nothing was recorded since.
    pub fn percentiles_since<const N: usize>(&self, prev: &Histogram, ps: [f64; N]) -> [u64; N] {
        let mut out = [0u64; N];
        let n = self.n.saturating_sub(prev.n);
        if n == 0 {
            return out;
        }
        let ranks = ps.map(|p| ((p / 100.0) * n as f64).ceil().max(1.0) as u64);
        let mut k = 0;
        let mut cum = 0u64;
        for (i, (&a, &b)) in self.counts.iter().zip(prev.counts.iter()).enumerate() {
            cum += a.saturating_sub(b);
            while k < N && cum >= ranks[k] {
                let (lo, w) = bucket_bounds(i);
                out[k] = (lo + w / 2).min(self.max);
                k += 1;
            }
            if k == N {
                break;
            }
        }
        out
    }

    /// Non-empty buckets as (representative value, count), ascending.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| {
                let (lo, w) = bucket_bounds(i);
                (lo + w / 2, c)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_of_squares_converts_like_an_unsigned_cast() {
        // Values around the precision limits of f64 and of i64: the signed
        // conversion must round exactly as `v as f64` did.
        let vs = [
            0u64,
            1,
            127,
            128,
            999_999_937,
            (1 << 53) + 1,
            (1 << 62) + 12345,
            i64::MAX as u64,
        ];
        let mut h = Histogram::new();
        let mut want = 0f64;
        for &v in &vs {
            h.record(v);
            want += (v as f64) * (v as f64);
        }
        assert_eq!(h.to_parts().sum_sq, want);
        // Beyond i64::MAX: clamped, never negative or NaN.
        h.record(u64::MAX);
        let s = h.to_parts().sum_sq;
        assert!(s.is_finite() && s >= want, "{s}");
    }

    #[test]
    fn record_n_is_n_records() {
        // Latency-like values, each recorded k times at once and k times
        // one by one: the same buckets, count, min, max and sum; the sum of
        // squares to rounding.
        let mut s = 9;
        let (mut a, mut b) = (Histogram::new(), Histogram::new());
        for _ in 0..5_000 {
            let v = rng(&mut s) % 300_000;
            let k = 1 + rng(&mut s) % 32;
            a.record_n(v, k);
            for _ in 0..k {
                b.record(v);
            }
        }
        a.record_n(12_345, 0);
        let (pa, pb) = (a.to_parts(), b.to_parts());
        assert_eq!(
            (&pa.buckets, pa.n, pa.min, pa.max, pa.sum),
            (&pb.buckets, pb.n, pb.min, pb.max, pb.sum)
        );
        assert!(
            (pa.sum_sq - pb.sum_sq).abs() <= pb.sum_sq * 1e-12,
            "{} {}",
            pa.sum_sq,
            pb.sum_sq
        );
        assert_eq!(a.percentile(99.9), b.percentile(99.9));
    }

    #[test]
    fn parts_round_trip_and_merge_exactly() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for v in [1u64, 90, 5_000, 77_777, 1 << 30] {
            a.record(v);
            b.record(v * 3 + 1);
        }
        let back = Histogram::from_parts(&a.to_parts());
        assert_eq!(back.to_parts(), a.to_parts());
        let mut m1 = a.clone();
        m1.merge(&b);
        let mut m2 = Histogram::from_parts(&a.to_parts());
        m2.merge(&Histogram::from_parts(&b.to_parts()));
        assert_eq!(m1.to_parts(), m2.to_parts());
        assert_eq!(m2.percentile(99.0), m1.percentile(99.0));
    }

    /// A small deterministic PRNG (splitmix64) so the tests need no crate.
    fn rng(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }

    fn exact_percentile(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank - 1]
    }

    fn check_against_exact(mut vals: Vec<u64>) {
        let mut h = Histogram::new();
        vals.iter().for_each(|&v| h.record(v));
        vals.sort_unstable();
        for p in [
            1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0,
        ] {
            let exact = exact_percentile(&vals, p) as f64;
            let got = h.percentile(p) as f64;
            let err = (got - exact).abs() / exact.max(1.0);
            assert!(
                err <= 0.01,
                "p{p}: got {got}, exact {exact}, error {:.3}%",
                err * 100.0
            );
        }
        let mean = vals.iter().map(|&v| v as f64).sum::<f64>() / vals.len() as f64;
        assert!((h.mean() - mean).abs() < 1e-6 * mean.max(1.0));
        assert_eq!(h.min(), vals[0]);
        assert_eq!(h.max(), *vals.last().unwrap());
    }

    #[test]
    fn uniform_distribution() {
        let mut s = 1;
        check_against_exact((0..200_000).map(|_| 1_000 + rng(&mut s) % 99_000).collect());
    }

    #[test]
    fn exponential_distribution() {
        let mut s = 2;
        check_against_exact(
            (0..200_000)
                .map(|_| {
                    let u = (rng(&mut s) >> 11) as f64 / (1u64 << 53) as f64;
                    (-(1.0 - u).ln() * 20_000.0) as u64 + 500
                })
                .collect(),
        );
    }

    #[test]
    fn lognormal_wide_range() {
        let mut s = 3;
        check_against_exact(
            (0..100_000)
                .map(|_| {
                    // Box-Muller normal, then exp: values spanning ~5 decades.
                    let u1 = ((rng(&mut s) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                    let u2 = (rng(&mut s) >> 11) as f64 / (1u64 << 53) as f64;
                    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                    (10.0 + 2.0 * z).exp() as u64
                })
                .collect(),
        );
    }

    #[test]
    fn small_values_exact_and_stddev() {
        let mut h = Histogram::new();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            h.record(v);
        }
        assert_eq!(h.percentile(50.0), 4);
        assert_eq!(h.percentile(100.0), 9);
        // Sample standard deviation of that set is sqrt(32/7).
        assert!((h.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn bucket_bounds_cover_every_index() {
        for v in [0u64, 1, 127, 128, 129, 255, 256, 1000, 123_456_789, 1 << 40] {
            let (lo, w) = bucket_bounds(index(v));
            assert!(lo <= v && v < lo + w, "{v} not in [{lo}, {})", lo + w);
            assert!(w as f64 <= (lo as f64 / 128.0).max(1.0));
        }
        assert!(index(u64::MAX) < NBUCKETS);
    }

    #[test]
    fn merge_equals_recording_together() {
        let (mut a, mut b, mut c) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in 0..1000u64 {
            if v % 2 == 0 {
                a.record(v * 37)
            } else {
                b.record(v * 37)
            }
            c.record(v * 37);
        }
        a.merge(&b);
        assert_eq!(a.count(), c.count());
        assert_eq!(a.percentile(99.0), c.percentile(99.0));
        assert_eq!(a.bins().collect::<Vec<_>>(), c.bins().collect::<Vec<_>>());
    }
}
