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

/// Feistel rounds of [`Permutation`] (even: each half is mixed as often).
const ROUNDS: usize = 6;

/// A keyed bijection on [0, n) with no memory: a Feistel network of
/// [`ROUNDS`] rounds on the smallest power-of-two domain 2^k ≥ n, its k bits
/// split into a high and a low half (unequal when k is odd, so the domain
/// is < 2n), each round xoring one half with a keyed hash of the other;
/// then cycle-walking until the value falls below n (fewer than 2 walks on
/// average). A round is two multiplies, two shifts and three xors.
///
/// It scatters popularity ranks over a region, and is the random map's
/// order when every I/O is one block (runner/offsets/random.rs), where it
/// maps the pass's counter 0, 1, 2, …: a weaker mix (two multiply and
/// xor-shift rounds on the whole k bits) failed fio's runs test on such
/// counters (z = −15 at 1000 blocks), and four rounds of this one were
/// rejected by it 8.3 % of the time at p < 0.05; six pass (test
/// `the_shuffled_order_is_as_random_as_the_map`).
#[derive(Debug, Clone)]
pub(super) struct Permutation {
    n: u64,
    /// Bits in the low half, and the two halves' masks.
    low_bits: u32,
    low: u64,
    high: u64,
    keys: [u64; ROUNDS],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        let n = n.max(1);
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let low_bits = bits.div_ceil(2);
        let high_bits = bits - low_bits;
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            mix(s)
        };
        Permutation {
            n,
            low_bits,
            low: (1u64 << low_bits) - 1,
            high: (1u64 << high_bits) - 1,
            keys: std::array::from_fn(|_| next()),
        }
    }

    /// The round function: 32 well-mixed bits of `v` under `key` (the top
    /// bits of a product, which depend on every bit of `v`); a round keeps
    /// the low ones its half needs.
    #[inline(always)]
    fn hash(v: u64, key: u64) -> u64 {
        let z = (v ^ key).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (z ^ (z >> 31)).wrapping_mul(0x94d0_49bb_1331_11eb) >> 32
    }

    /// The rounds on `N` values side by side: their chains of dependent
    /// multiplies are independent, so the CPU overlaps them.
    #[inline(always)]
    fn rounds<const N: usize>(&self, x: [u64; N]) -> [u64; N] {
        let mut lo = x.map(|v| v & self.low);
        let mut hi = x.map(|v| v >> self.low_bits);
        for k in self.keys.chunks_exact(2) {
            for j in 0..N {
                hi[j] ^= Self::hash(lo[j], k[0]) & self.high;
            }
            for j in 0..N {
                lo[j] ^= Self::hash(hi[j], k[1]) & self.low;
            }
        }
        std::array::from_fn(|j| hi[j] << self.low_bits | lo[j])
    }

    /// The image of `i` (< n).
    #[inline(always)]
    pub fn apply(&self, i: u64) -> u64 {
        self.apply_from::<1>(i)[0]
    }

    /// The images of i, i + 1, …, i + N - 1, computed side by side; those
    /// of values ≥ n are left unwalked (not images of anything: unused).
    #[inline(always)]
    pub fn apply_from<const N: usize>(&self, i: u64) -> [u64; N] {
        let mut y = self.rounds(std::array::from_fn(|j| i + j as u64));
        for (j, y) in y.iter_mut().enumerate() {
            // A value ≥ n may sit on a cycle of such values only: walk
            // from images of [0, n) alone, whose cycles reach back below n.
            if i + (j as u64) < self.n {
                while *y >= self.n {
                    *y = self.rounds([*y])[0];
                }
            }
        }
        y
    }
}

/// Blocks computed at a time by [`Shuffle`].
const LANES: usize = 4;

/// The random map's order for I/Os of one block each: the pass's i-th
/// block is [`Permutation`] of i, keyed anew each pass, computed [`LANES`]
/// at a time (their rounds overlap in the CPU: io_uring's user time per
/// I/O went from 43.7 to 38.4 ns against one block at a time).
#[derive(Debug, Clone)]
pub(super) struct Shuffle {
    perm: Permutation,
    key: u64,
    ahead: [u64; LANES],
    /// The next of `ahead` to give; LANES: none computed.
    next: usize,
}

impl Shuffle {
    /// Keyed by `key`, at the start of pass 0.
    pub fn new(n: u64, key: u64) -> Shuffle {
        let mut s = Shuffle {
            perm: Permutation::new(n, 0),
            key,
            ahead: [0; LANES],
            next: LANES,
        };
        s.start_pass(n, 0);
        s
    }

    /// The start of a pass (or of a window of `n` blocks): a new key.
    pub fn start_pass(&mut self, n: u64, pass: u64) {
        self.perm = Permutation::new(n, mix(self.key ^ pass));
        self.next = LANES;
    }

    /// The pass's block `i`; `i` counts 0, 1, 2, … from the pass's start.
    #[inline(always)]
    pub fn block(&mut self, i: u64) -> u64 {
        if self.next == LANES {
            self.ahead = self.perm.apply_from(i);
            self.next = 0;
        }
        let b = self.ahead[self.next];
        self.next += 1;
        b
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
