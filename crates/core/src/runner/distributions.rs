//! The random primitives the runner draws from: [`Rng`] (wyrand, the
//! worker's fast generator for block sizes, skewed offsets, file choice and
//! pacing), [`Permutation`] (a keyed bijection with no memory, which
//! scatters popularity ranks over a region), [`Zipf`] (rejection-inversion
//! sampling) and `mix` (splitmix64's finaliser, for seeds). fio's own
//! generators (taus88, lfsr258, the random map) are in `randgen.rs`.

/// wyrand: one multiply per draw, passes BigCrush, 64-bit state.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    }
    /// Uniform in [0, n) (Lemire's multiply-shift; bias < n/2^64).
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in [0, 1).
    #[inline(always)]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// splitmix64's finaliser: unrelated values from neighbouring seeds.
#[inline(always)]
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A keyed bijection on [0, n) with no memory: on the smallest power-of-two
/// domain 2^k ≥ n, alternate steps that are each bijective mod 2^k (xor
/// with a key, multiply by an odd constant, xor with a right shift of
/// itself, add a key), then cycle-walk until the value falls below n. The
/// domain is < 2n, so fewer than 2 walks on average; about 20 instructions a
/// walk, against a bitmap's memory and a Feistel network's 6 hash rounds.
#[derive(Debug, Clone)]
pub(super) struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [u64; 2],
    muls: [u64; 2],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        let n = n.max(1);
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            mix(s)
        };
        Permutation {
            n,
            mask,
            shift: bits.div_ceil(2),
            keys: [next() & mask, next() & mask],
            muls: [next() | 1, next() | 1],
        }
    }

    #[inline(always)]
    fn round_trip(&self, x: u64) -> u64 {
        let m = self.mask;
        let mut x = x ^ self.keys[0];
        x = x.wrapping_mul(self.muls[0]) & m;
        x ^= x >> self.shift;
        x = x.wrapping_mul(self.muls[1]) & m;
        x ^= x >> self.shift;
        x.wrapping_add(self.keys[1]) & m
    }

    /// The image of `i` (< n).
    #[inline(always)]
    pub fn apply(&self, i: u64) -> u64 {
        let mut x = self.round_trip(i);
        while x >= self.n {
            x = self.round_trip(x);
        }
        x
    }
}

/// Zipf sampling by rejection-inversion (Hörmann & Derflinger, 1996):
/// O(1) per draw, no table, exact for any n.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1) as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        exp_m1_over((1.0 - self.s) * lx) * lx
    }
    fn h_integral_inv(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0;
        }
        (ln_1p_over(t) * x).exp()
    }
    /// A rank in [0, n), 0 the most popular.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64 - 1;
            }
        }
    }
}

/// ln(1 + x) / x, accurate near 0 (Zipf's `h_integral_inv`).
fn ln_1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, accurate near 0 (Zipf's `h_integral`).
fn exp_m1_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.apply(i);
                assert!(x < n);
                assert!(!seen[x as usize], "n={n}: {x} twice");
                seen[x as usize] = true;
            }
        }
    }

    #[test]
    fn zipf_is_skewed() {
        let z = Zipf::new(1000, 1.2);
        let mut rng = Rng::new(1);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        // Rank 0 vs rank 9: ratio ≈ 10^1.2 ≈ 15.8.
        let r = counts[0] as f64 / counts[9] as f64;
        assert!((10.0..25.0).contains(&r), "ratio {r}");
        assert!(counts[0] > counts[1] && counts[1] > counts[5]);
    }
}
