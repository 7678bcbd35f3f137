//! Where each I/O goes: sequential cursors, a memory-free random permutation
//! (each block once per pass), uniform random with repeats (`norandommap`),
//! and skewed distributions (zipf, pareto, normal). All reproducible from
//! the job's seed.

use crate::job::{BlockSizes, RandomDist};

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

#[inline(always)]
fn mix(mut z: u64) -> u64 {
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
pub struct Permutation {
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
        helper2((1.0 - self.s) * lx) * lx
    }
    fn h_integral_inv(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0;
        }
        (helper1(t) * x).exp()
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

fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// Block-size chooser for one direction, allocation-free.
#[derive(Debug, Clone)]
pub struct BsPicker {
    kind: u8,
    lo: u64,
    steps: u64,
    unit: u64,
    /// Cumulative percentages for bssplit (at most 64 sizes).
    split: [(u64, u32); 64],
    nsplit: usize,
}

impl BsPicker {
    pub fn new(b: &BlockSizes, unit: u64) -> BsPicker {
        let mut p = BsPicker {
            kind: 0,
            lo: b.min(),
            steps: 1,
            unit,
            split: [(0, 0); 64],
            nsplit: 0,
        };
        match b {
            BlockSizes::Fixed(_) => {}
            BlockSizes::Range(lo, hi) => {
                p.kind = 1;
                p.steps = (hi - lo) / unit + 1;
            }
            BlockSizes::Split(v) => {
                p.kind = 2;
                let mut cum = 0;
                for (i, &(sz, pct)) in v.iter().take(64).enumerate() {
                    cum += pct;
                    p.split[i] = (sz, cum);
                    p.nsplit = i + 1;
                }
            }
        }
        p
    }
    #[inline(always)]
    pub fn pick(&self, rng: &mut Rng) -> u64 {
        match self.kind {
            0 => self.lo,
            1 => self.lo + rng.below(self.steps) * self.unit,
            _ => {
                let r = rng.below(100) as u32;
                for &(sz, cum) in &self.split[..self.nsplit] {
                    if r < cum {
                        return sz;
                    }
                }
                self.split[self.nsplit - 1].0
            }
        }
    }
}

/// One file's region and its cursor.
// Aligned to 128 bytes (a pair of cache lines, which Intel prefetches
// together): the runner allocates every worker's regions on its own thread,
// side by side, and `pos` is written per I/O; unaligned, two workers wrote
// one line (false sharing) and a second thread cost the first one speed.
#[repr(align(128))]
#[derive(Debug, Clone)]
pub struct Region {
    pub start: u64,
    pub len: u64,
    nblocks: u64,
    pos: u64,
    pass: u64,
    perm: Permutation,
}

/// Offset generator of one worker.
#[derive(Debug, Clone)]
pub struct OffsetGen {
    regions: Vec<Region>,
    unit: u64,
    random: bool,
    randommap: bool,
    dist: RandomDist,
    zipf: Option<Zipf>,
    seed: u64,
    next_file: usize,
    pub rng: Rng,
}

impl OffsetGen {
    /// `regions`: (start, length) per file; `unit`: the random-offset granularity
    /// (the smallest block size, already checked against the alignment).
    pub fn new(
        regions: &[(u64, u64)],
        unit: u64,
        random: bool,
        randommap: bool,
        dist: RandomDist,
        seed: u64,
    ) -> OffsetGen {
        let unit = unit.max(1);
        let regions: Vec<Region> = regions
            .iter()
            .enumerate()
            .map(|(i, &(start, len))| {
                let nblocks = (len / unit).max(1);
                Region {
                    start,
                    len,
                    nblocks,
                    pos: 0,
                    pass: 0,
                    perm: Permutation::new(nblocks, seed ^ mix(i as u64 + 1)),
                }
            })
            .collect();
        let zipf = match dist {
            RandomDist::Zipf(s) => Some(Zipf::new(
                regions.first().map(|r| r.nblocks).unwrap_or(1),
                s,
            )),
            _ => None,
        };
        OffsetGen {
            regions,
            unit,
            random,
            randommap,
            dist,
            zipf,
            seed,
            next_file: 0,
            rng: Rng::new(seed),
        }
    }

    /// Bytes covered by one pass over every file.
    pub fn pass_bytes(&self) -> u64 {
        self.regions.iter().map(|r| r.len).sum()
    }

    /// Next (file index, offset) for an I/O of `len` bytes.
    #[inline]
    pub fn next(&mut self, len: u64) -> (u32, u64) {
        let fi = self.next_file;
        self.next_file += 1;
        if self.next_file == self.regions.len() {
            self.next_file = 0;
        }
        let r = &mut self.regions[fi];
        let rel = if !self.random {
            if r.pos + len > r.len {
                r.pos = 0;
                r.pass += 1;
            }
            let o = r.pos;
            r.pos += len;
            o
        } else {
            let block = match self.dist {
                RandomDist::Uniform if self.randommap => {
                    if r.pos >= r.nblocks {
                        r.pos = 0;
                        r.pass += 1;
                        r.perm = Permutation::new(
                            r.nblocks,
                            self.seed ^ mix(r.pass.wrapping_mul(0x1000_0001) + fi as u64),
                        );
                    }
                    let b = r.perm.apply(r.pos);
                    r.pos += 1;
                    b
                }
                RandomDist::Uniform => self.rng.below(r.nblocks),
                // Skewed: draw a popularity rank, then scatter ranks over the
                // region with the permutation so hot blocks are not adjacent.
                RandomDist::Zipf(_) => {
                    let k = self
                        .zipf
                        .as_ref()
                        .map(|z| z.sample(&mut self.rng))
                        .unwrap_or(0)
                        % r.nblocks;
                    r.perm.apply(k)
                }
                RandomDist::Pareto(h) => {
                    // (1-h) of the I/Os go to a fraction h of the blocks.
                    let hot = ((r.nblocks as f64 * h) as u64).max(1);
                    let k = if self.rng.unit() < 1.0 - h {
                        self.rng.below(hot)
                    } else {
                        hot + self.rng.below((r.nblocks - hot).max(1))
                    };
                    r.perm.apply(k.min(r.nblocks - 1))
                }
                RandomDist::Normal(pct) => {
                    let u1 = self.rng.unit().max(f64::MIN_POSITIVE);
                    let u2 = self.rng.unit();
                    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                    let c = r.nblocks as f64 / 2.0 + z * r.nblocks as f64 * pct / 100.0;
                    (c.max(0.0) as u64).min(r.nblocks - 1)
                }
            };
            let o = block * self.unit;
            if o + len > r.len {
                // A large block near the end: pull it back inside, aligned.
                r.len.saturating_sub(len) / self.unit * self.unit
            } else {
                o
            }
        };
        (fi as u32, r.start + rel)
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
    fn randommap_visits_each_block_once_per_pass() {
        let mut g = OffsetGen::new(
            &[(0, 1000 * 4096)],
            4096,
            true,
            true,
            RandomDist::Uniform,
            7,
        );
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let (_, o) = g.next(4096);
            assert_eq!(o % 4096, 0);
            assert!(seen.insert(o), "offset {o} repeated within a pass");
        }
        assert_eq!(seen.len(), 1000);
        // Second pass: again each once, in another order.
        let second: Vec<u64> = (0..1000).map(|_| g.next(4096).1).collect();
        let set: std::collections::HashSet<_> = second.iter().collect();
        assert_eq!(set.len(), 1000);
    }

    #[test]
    fn reproducible_from_seed() {
        let a: Vec<u64> = {
            let mut g = OffsetGen::new(
                &[(0, 1 << 30)],
                4096,
                true,
                false,
                RandomDist::Uniform,
                0x89,
            );
            (0..100).map(|_| g.next(4096).1).collect()
        };
        let mut g = OffsetGen::new(
            &[(0, 1 << 30)],
            4096,
            true,
            false,
            RandomDist::Uniform,
            0x89,
        );
        let b: Vec<u64> = (0..100).map(|_| g.next(4096).1).collect();
        assert_eq!(a, b);
        let mut g = OffsetGen::new(
            &[(0, 1 << 30)],
            4096,
            true,
            false,
            RandomDist::Uniform,
            0x8a,
        );
        let c: Vec<u64> = (0..100).map(|_| g.next(4096).1).collect();
        assert_ne!(a, c);
    }

    #[test]
    fn sequential_wraps_and_spans_files() {
        let mut g = OffsetGen::new(
            &[(0, 8192), (4096, 8192)],
            4096,
            false,
            false,
            RandomDist::Uniform,
            1,
        );
        let v: Vec<(u32, u64)> = (0..6).map(|_| g.next(4096)).collect();
        assert_eq!(
            v,
            vec![(0, 0), (1, 4096), (0, 4096), (1, 8192), (0, 0), (1, 4096)]
        );
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

    #[test]
    fn bs_picker_split_and_range() {
        let mut rng = Rng::new(3);
        let p = BsPicker::new(&BlockSizes::Split(vec![(4096, 75), (65536, 25)]), 4096);
        let big = (0..10_000).filter(|_| p.pick(&mut rng) == 65536).count();
        assert!((2_000..3_000).contains(&big), "{big}");
        let p = BsPicker::new(&BlockSizes::Range(4096, 16384), 4096);
        for _ in 0..1000 {
            let b = p.pick(&mut rng);
            assert!(b % 4096 == 0 && (4096..=16384).contains(&b));
        }
    }

    #[test]
    fn large_blocks_stay_inside() {
        let mut g = OffsetGen::new(&[(0, 10 * 4096)], 4096, true, false, RandomDist::Uniform, 9);
        for _ in 0..1000 {
            let (_, o) = g.next(16384);
            assert!(o + 16384 <= 10 * 4096 && o % 4096 == 0);
        }
    }
}
