//! Where each I/O goes: sequential cursors, uniform random blocks from
//! fio's generators (runner/randgen.rs: taus88 or lfsr258 with the random
//! map, each block once per pass, or with repeats under `norandommap`; an
//! LFSR, each block once per pass without a map), and skewed distributions
//! (zipf, pareto, normal). All reproducible from the job's seed.

use super::randgen::{BlockMap, Lfsr, Taus};
use crate::job::spec::{FileService, RandomGenerator, ZoneSize};
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

/// Everything about a job that decides where its I/Os go.
#[derive(Debug, Clone)]
pub struct OffsetCfg {
    /// Granularity of random offsets (the smallest block size, or
    /// `blockalign`, already checked against the alignment).
    pub unit: u64,
    pub random: bool,
    /// Each block once per pass (a permutation) rather than independent draws.
    pub randommap: bool,
    pub dist: RandomDist,
    /// `random_generator`: uniform offsets from taus88/lfsr258 (with the
    /// random map for each block once per pass), or an LFSR (each block
    /// once per pass by construction).
    pub generator: RandomGenerator,
    /// Where the most likely offset of a skewed distribution lies (0..1).
    pub center: Option<f64>,
    /// `rw=read:8k`: bytes added after each sequential I/O (negative: backwards).
    pub seq_add: i64,
    /// `rw=randread:8`: I/Os per random offset; the others follow it.
    pub rand_run: u64,
    /// `rw_sequencer=identical`: the I/Os after a random one repeat its offset.
    pub run_identical: bool,
    /// `blockalign` per direction (0: `unit`): random offsets are rounded
    /// down to it.
    pub blockalign: [u64; 2],
    /// `percentage_random` per direction (read, write).
    pub pct_random: [u32; 2],
    pub file_service: FileService,
    /// I/Os to one file before choosing the next (roundrobin, random).
    pub file_every: u32,
    /// Files served at once (0: all).
    pub open_files: u32,
    /// `zonemode=strided`: (zonerange, zonesize, zoneskip).
    pub zones: Option<(u64, u64, u64)>,
    /// `random_sequence_stride` (with `RandomDist::Sequence`).
    pub seq_stride: bool,
}

impl OffsetCfg {
    /// Plain sequential or uniform random offsets.
    pub fn simple(unit: u64, random: bool, randommap: bool, dist: RandomDist) -> OffsetCfg {
        OffsetCfg {
            unit,
            random,
            randommap,
            dist,
            generator: RandomGenerator::Tausworthe,
            center: None,
            seq_add: 0,
            rand_run: 1,
            run_identical: false,
            blockalign: [0; 2],
            pct_random: [100; 2],
            file_service: FileService::RoundRobin,
            file_every: 1,
            open_files: 0,
            zones: None,
            seq_stride: false,
        }
    }
}

/// One file's region, the window I/O is confined to (a strided zone, or
/// the whole region) and its cursor.
// Aligned to 128 bytes (a pair of cache lines, which Intel prefetches
// together): the runner allocates every worker's regions on its own thread,
// side by side, and the cursor is written per I/O; aligned, no two workers
// ever write one line (false sharing), whatever the allocator does.
#[repr(align(128))]
#[derive(Debug, Clone)]
pub struct Region {
    pub start: u64,
    pub len: u64,
    /// The window, relative to `start`.
    win: u64,
    win_len: u64,
    /// Blocks of `unit` in the window.
    nblocks: u64,
    /// Sequential cursor in the window (next offset when continuing).
    pos: u64,
    /// Random map position (blocks drawn in this pass).
    drawn: u64,
    pass: u64,
    /// Bytes served since the file (or zone) was entered.
    served: u64,
    /// Scatters the ranks of skewed distributions over the window.
    perm: Permutation,
    /// The random map (tausworthe with it on), or the LFSR (`lfsr`).
    map: Option<BlockMap>,
    lfsr: Option<Lfsr>,
}

/// One zone of a zoned distribution, resolved: cumulative I/O percent and
/// the zone's bounds as fractions of the window (`zoned`) or bytes (`zoned_abs`).
#[derive(Debug, Clone, Copy)]
struct ZoneCut {
    io_cum: u32,
    lo: f64,
    hi: f64,
    abs: bool,
}

/// The generator [`OffsetGen::next_dir`] runs, chosen once per job: the
/// general one serves file services, zones, `rw` modifiers and mixed
/// random/sequential offsets, and its checks cost ~90 instructions an I/O;
/// the plain job (one file, none of those) is most jobs and every
/// benchmark, and takes a short path behind one predictable branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plain {
    No,
    Sequential,
    /// Uniform, each block once per pass.
    RandomMap,
    /// Uniform with repeats (`norandommap`).
    Random,
}

/// Offset generator of one worker. Everything is allocated here; `next`
/// allocates nothing.
#[derive(Debug, Clone)]
pub struct OffsetGen {
    plain: Plain,
    regions: Vec<Region>,
    cfg: OffsetCfg,
    zipf: Option<Zipf>,
    file_zipf: Option<Zipf>,
    zoned: [Vec<ZoneCut>; 2],
    seed: u64,
    cur_file: usize,
    /// I/Os left on the current file before the file service picks again.
    file_left: u32,
    /// First file of the open set (`openfiles`) and its size.
    open_lo: usize,
    open_n: usize,
    /// Files of the open set that finished their pass.
    open_done: usize,
    /// I/Os left in the current `rw=randread:N` run, and the last offset.
    run_left: u64,
    last: u64,
    /// I/Os drawn from a `sequence` distribution so far.
    seq_n: u64,
    pub rng: Rng,
    /// `sprandom=1`: its generator gives every offset (runner/sprandom.rs).
    spr: Option<Box<super::sprandom::Sprandom>>,
    /// Uniform random blocks (`random_generator` tausworthe/tausworthe64).
    taus: Taus,
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
        OffsetGen::with(
            regions,
            OffsetCfg::simple(unit, random, randommap, dist),
            seed,
        )
    }

    pub fn with(regions: &[(u64, u64)], mut cfg: OffsetCfg, seed: u64) -> OffsetGen {
        cfg.unit = cfg.unit.max(1);
        cfg.rand_run = cfg.rand_run.max(1);
        cfg.file_every = cfg.file_every.max(1);
        // An LFSR never repeats a block within a pass, map or no map.
        if cfg.generator == RandomGenerator::Lfsr {
            cfg.randommap = true;
        }
        let unit = cfg.unit;
        let uniform_map = cfg.random && cfg.randommap && cfg.dist == RandomDist::Uniform;
        let lfsr = uniform_map && cfg.generator == RandomGenerator::Lfsr;
        let regions: Vec<Region> = regions
            .iter()
            .enumerate()
            .map(|(i, &(start, len))| {
                let win_len = match cfg.zones {
                    Some((range, _, _)) if range > 0 => range.min(len),
                    _ => len,
                };
                let nblocks = (win_len / unit).max(1);
                Region {
                    start,
                    len,
                    win: 0,
                    win_len,
                    nblocks,
                    pos: 0,
                    drawn: 0,
                    pass: 0,
                    served: 0,
                    perm: Permutation::new(nblocks, seed ^ mix(i as u64 + 1)),
                    map: (uniform_map && !lfsr).then(|| BlockMap::new(nblocks)),
                    lfsr: lfsr.then(|| Lfsr::new(nblocks, seed ^ mix(i as u64 + 1))),
                }
            })
            .collect();
        let zipf = match cfg.dist {
            RandomDist::Zipf(s) => Some(Zipf::new(
                regions.first().map(|r| r.nblocks).unwrap_or(1),
                s,
            )),
            _ => None,
        };
        let file_zipf = match cfg.file_service {
            FileService::Zipf(s) => Some(Zipf::new(regions.len() as u64, s)),
            _ => None,
        };
        let zoned = match &cfg.dist {
            RandomDist::Zoned(dirs) => dirs.clone().map(|zs| {
                let (mut io, mut at) = (0u32, 0f64);
                zs.iter()
                    .map(|z| {
                        io += z.io_pct;
                        let (size, abs) = match z.size {
                            ZoneSize::Pct(p) => (p / 100.0, false),
                            ZoneSize::Bytes(b) => (b as f64, true),
                        };
                        let c = ZoneCut {
                            io_cum: io,
                            lo: at,
                            hi: at + size,
                            abs,
                        };
                        at += size;
                        c
                    })
                    .collect()
            }),
            _ => [Vec::new(), Vec::new()],
        };
        // fio: tausworthe (32 bits) unless a file has more than 2^32
        // blocks, then tausworthe64.
        let most = regions.iter().map(|r| r.nblocks).max().unwrap_or(1);
        let taus = match cfg.generator {
            RandomGenerator::Tausworthe if most <= 1 << 32 => Taus::taus88(seed),
            _ => Taus::taus258(seed),
        };
        let n = regions.len();
        let open_n = match cfg.open_files as usize {
            0 => n,
            k => k.min(n),
        }
        .max(1);
        let one_window = regions.len() == 1 && cfg.zones.is_none();
        let plain = if !one_window {
            Plain::No
        } else if !cfg.random {
            if cfg.seq_add == 0 {
                Plain::Sequential
            } else {
                Plain::No
            }
        } else if cfg.dist == RandomDist::Uniform
            && cfg.rand_run == 1
            && cfg.pct_random == [100; 2]
            && cfg.blockalign.iter().all(|&b| b == 0 || b == cfg.unit)
        {
            if cfg.randommap {
                Plain::RandomMap
            } else {
                Plain::Random
            }
        } else {
            Plain::No
        };
        OffsetGen {
            plain,
            regions,
            zipf,
            file_zipf,
            zoned,
            seed,
            cur_file: 0,
            file_left: cfg.file_every,
            open_lo: 0,
            open_n,
            open_done: 0,
            run_left: 0,
            last: 0,
            seq_n: 0,
            rng: Rng::new(seed),
            cfg,
            spr: None,
            taus,
        }
    }

    /// Take every offset from `s` (`sprandom=1`), chosen once per job: the
    /// plain paths are left for the general one, which asks it first.
    pub fn set_sprandom(&mut self, s: super::sprandom::Sprandom) {
        self.plain = Plain::No;
        self.spr = Some(Box::new(s));
    }

    /// Bytes covered by one pass over every file.
    pub fn pass_bytes(&self) -> u64 {
        self.regions.iter().map(|r| r.len).sum()
    }

    /// Next (file index, offset) for a read of `len` bytes.
    #[inline]
    pub fn next(&mut self, len: u64) -> (u32, u64) {
        self.next_dir(len, false)
    }

    /// Next (file index, offset) for an I/O of `len` bytes in direction `write`.
    #[inline(always)]
    pub fn next_dir(&mut self, len: u64, write: bool) -> (u32, u64) {
        // The plain paths give the same offsets as the general one (test
        // `plain_paths_match_the_general_one`); they skip what cannot apply
        // to one file without zones: the file service, the pass tracking
        // (`served`), the window offset (0) and the run state.
        let unit = self.cfg.unit;
        let Some(r) = self.regions.first_mut() else {
            return self.next_general(len, write);
        };
        let rel = match self.plain {
            Plain::No => return self.next_general(len, write),
            Plain::Sequential => {
                if r.pos + len > r.win_len {
                    r.pos = 0;
                    r.pass += 1;
                }
                let o = r.pos;
                r.pos = o + len;
                return (0, r.start + o);
            }
            Plain::RandomMap => map_draw(r, &mut self.taus),
            Plain::Random => self.taus.below(r.nblocks),
        };
        (0, r.start + fit(r, rel * unit, len, unit))
    }

    /// [`next_dir`](Self::next_dir) for every job.
    #[inline(never)]
    fn next_general(&mut self, len: u64, write: bool) -> (u32, u64) {
        if let Some(s) = &mut self.spr {
            return (0, s.next_offset());
        }
        let fi = self.pick_file();
        let rel = self.offset_in(fi, len, write);
        let r = &mut self.regions[fi];
        r.served += len;
        let abs = r.start + r.win + rel;
        self.after_io(fi);
        (fi as u32, abs)
    }

    /// The file the next I/O goes to (`file_service_type`, `openfiles`).
    #[inline(always)]
    fn pick_file(&mut self) -> usize {
        let n = self.regions.len();
        if n == 1 {
            return 0;
        }
        let k = self.open_n;
        let slot = match self.cfg.file_service {
            FileService::RoundRobin | FileService::Random => {
                if self.file_left == 0 {
                    self.file_left = self.cfg.file_every;
                    let cur = (self.cur_file + n - self.open_lo) % n;
                    let next = match self.cfg.file_service {
                        FileService::Random => self.rng.below(k as u64) as usize,
                        _ => (cur + 1) % k,
                    };
                    self.cur_file = (self.open_lo + next) % n;
                }
                self.file_left -= 1;
                return self.cur_file;
            }
            // Moves on in `after_io` when the file's pass is done.
            FileService::Sequential => return self.cur_file,
            FileService::Zipf(_) => self
                .file_zipf
                .as_ref()
                .map(|z| z.sample(&mut self.rng))
                .unwrap_or(0),
            FileService::Pareto(h) => {
                let hot = ((k as f64 * h) as u64).max(1);
                if self.rng.unit() < 1.0 - h {
                    self.rng.below(hot)
                } else {
                    hot + self.rng.below((k as u64 - hot).max(1))
                }
            }
            FileService::Normal(dev) => {
                let z = self.gauss();
                let c = k as f64 / 2.0 + z * k as f64 * dev / 100.0;
                c.max(0.0) as u64
            }
        };
        self.cur_file = (self.open_lo + (slot as usize).min(k - 1)) % n;
        self.cur_file
    }

    /// Pass and zone bookkeeping after an I/O on file `fi`.
    #[inline(always)]
    fn after_io(&mut self, fi: usize) {
        let n = self.regions.len();
        let r = &mut self.regions[fi];
        if let Some((range, size, skip)) = self.cfg.zones {
            if size > 0 && r.served >= size {
                // The zone is done: the next one starts range + skip further,
                // back at the start once past the end.
                r.served = 0;
                r.win += range + skip;
                if r.win + r.win_len.min(self.cfg.unit) > r.len || r.win >= r.len {
                    r.win = 0;
                }
                r.win_len = range.min(r.len - r.win).max(1);
                r.nblocks = (r.win_len / self.cfg.unit).max(1);
                r.pos = 0;
                r.drawn = 0;
                r.pass += 1;
                r.perm = Permutation::new(r.nblocks, self.seed ^ mix(r.pass ^ (fi as u64) << 32));
                if let Some(m) = &mut r.map {
                    m.reset(r.nblocks);
                }
                if r.lfsr.is_some() {
                    r.lfsr = Some(Lfsr::new(r.nblocks, self.seed ^ mix(r.pass)));
                }
            }
            return;
        }
        let track = self.cfg.file_service == FileService::Sequential || self.open_n < n;
        if track && r.served >= r.len {
            r.served = 0;
            if self.cfg.file_service == FileService::Sequential {
                self.cur_file = (self.cur_file + 1) % n;
            }
            if self.open_n < n {
                self.open_done += 1;
                if self.open_done >= self.open_n {
                    // Every open file did its pass: the next set is served.
                    self.open_done = 0;
                    self.open_lo = (self.open_lo + self.open_n) % n;
                    self.cur_file = self.open_lo;
                    self.file_left = self.cfg.file_every;
                }
            }
        }
    }

    /// A standard normal draw (Box-Muller).
    #[inline(always)]
    fn gauss(&mut self) -> f64 {
        let u1 = self.rng.unit().max(f64::MIN_POSITIVE);
        let u2 = self.rng.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// The offset of the next I/O inside file `fi`'s window.
    #[inline(always)]
    fn offset_in(&mut self, fi: usize, len: u64, write: bool) -> u64 {
        if !self.cfg.random {
            return self.sequential(fi, len);
        }
        if self.run_left > 0 {
            // rw=randread:N: the rest of the run follows the random offset.
            self.run_left -= 1;
            if self.cfg.run_identical {
                return self.last;
            }
            let o = self.sequential(fi, len);
            self.last = o;
            return o;
        }
        let pct = self.cfg.pct_random[write as usize];
        if pct < 100 && self.rng.below(100) >= pct as u64 {
            return self.sequential(fi, len);
        }
        let o = self.random(fi, len, write);
        self.run_left = self.cfg.rand_run - 1;
        self.last = o;
        let r = &mut self.regions[fi];
        r.pos = o + len;
        o
    }

    /// Continue sequentially from the cursor; `rw=read:8k` adds a gap (or,
    /// negative, goes backwards) and wraps at either end.
    #[inline(always)]
    fn sequential(&mut self, fi: usize, len: u64) -> u64 {
        let add = self.cfg.seq_add;
        let r = &mut self.regions[fi];
        if r.pos + len > r.win_len {
            r.pos = 0;
            r.pass += 1;
        }
        let o = r.pos;
        let next = o as i64 + len as i64 + add;
        r.pos = if next < 0 {
            // Backwards below the start: as fio, wrap by the window's size
            // (`read:-8k` with bs=4k over 64k: 0, 56k, 52k, …, 4k, 0).
            let w = r.win_len as i64 + next - len as i64;
            (w.max(0) as u64).min(r.win_len.saturating_sub(len))
        } else {
            next as u64
        };
        o
    }

    /// A random offset in file `fi`'s window, by the job's distribution.
    #[inline(always)]
    fn random(&mut self, fi: usize, len: u64, write: bool) -> u64 {
        let unit = self.cfg.unit;
        let r = &mut self.regions[fi];
        let n = r.nblocks;
        let center = self.cfg.center;
        let block = match &self.cfg.dist {
            RandomDist::Uniform if self.cfg.randommap => map_draw(r, &mut self.taus),
            RandomDist::Uniform => self.taus.below(n),
            // Skewed: draw a popularity rank, then scatter ranks over the
            // region with the permutation so hot blocks are not adjacent,
            // or put rank 0 at the given center.
            RandomDist::Zipf(_) => {
                let k = self
                    .zipf
                    .as_ref()
                    .map(|z| z.sample(&mut self.rng))
                    .unwrap_or(0)
                    % n;
                place(r, k, center)
            }
            RandomDist::Pareto(h) => {
                // (1-h) of the I/Os go to a fraction h of the blocks.
                let hot = ((n as f64 * h) as u64).max(1);
                let k = if self.rng.unit() < 1.0 - h {
                    self.rng.below(hot)
                } else {
                    hot + self.rng.below((n - hot).max(1))
                };
                place(r, k.min(n - 1), center)
            }
            RandomDist::Normal(pct) => {
                let pct = *pct;
                let u1 = self.rng.unit().max(f64::MIN_POSITIVE);
                let u2 = self.rng.unit();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let c = n as f64 * center.unwrap_or(0.5) + z * n as f64 * pct / 100.0;
                (c.max(0.0) as u64).min(n - 1)
            }
            RandomDist::Sequence(list) => {
                let len = list.len() as u64;
                let i = self.seq_n;
                self.seq_n += 1;
                let round = if self.cfg.seq_stride {
                    i / len * len
                } else {
                    0
                };
                (round + list[(i % len) as usize]) % n
            }
            RandomDist::Zoned(_) => {
                let zones = &self.zoned[write as usize];
                let x = self.rng.below(100) as u32;
                let z = zones
                    .iter()
                    .find(|z| x < z.io_cum)
                    .or(zones.last())
                    .copied();
                match z {
                    Some(z) => {
                        let to_block = |v: f64| {
                            if z.abs {
                                (v / unit as f64) as u64
                            } else {
                                (v * n as f64) as u64
                            }
                        };
                        let lo = to_block(z.lo).min(n - 1);
                        let hi = to_block(z.hi).clamp(lo + 1, n);
                        lo + self.rng.below(hi - lo)
                    }
                    None => self.rng.below(n),
                }
            }
        };
        let ba = match self.cfg.blockalign[write as usize] {
            0 => unit,
            b => b,
        };
        fit(r, block * unit / ba * ba, len, ba)
    }
}

/// The next block of a region with each block once per pass: the LFSR's
/// next (`random_generator=lfsr`), or a uniform draw not yet in the random
/// map (runner/randgen.rs, [`BlockMap::draw`]); the map empties at the end
/// of a pass.
#[inline(always)]
fn map_draw(r: &mut Region, taus: &mut Taus) -> u64 {
    let n = r.nblocks;
    if r.drawn >= n {
        r.drawn = 0;
        r.pass += 1;
    }
    r.drawn += 1;
    if let Some(l) = &mut r.lfsr {
        return l.next_block();
    }
    match &mut r.map {
        Some(m) => m.draw(|| taus.below(n)),
        // Not built for it (a test's hand-made region): no map, repeats.
        None => taus.below(n),
    }
}

/// Offset `o` (aligned to `ba`), or, for a large block near the window's
/// end, the last aligned offset where `len` bytes still fit.
#[inline(always)]
fn fit(r: &Region, o: u64, len: u64, ba: u64) -> u64 {
    if o + len > r.win_len {
        r.win_len.saturating_sub(len) / ba * ba
    } else {
        o
    }
}

/// Where popularity rank `k` lands: scattered by the region's permutation,
/// or counted from `center` (a fraction of the region), wrapping.
#[inline(always)]
fn place(r: &Region, k: u64, center: Option<f64>) -> u64 {
    match center {
        None => r.perm.apply(k),
        Some(c) => (k + (c * r.nblocks as f64) as u64) % r.nblocks,
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
    fn plain_paths_match_the_general_one() {
        // Region not at 0, not a multiple of the largest block: the clamp
        // at the end is exercised; 3 passes of the random map.
        let regions = [(12 * 4096, 301 * 4096 + 512)];
        let cases = [
            (false, false, Plain::Sequential),
            (true, true, Plain::RandomMap),
            (true, false, Plain::Random),
        ];
        for (random, randommap, want) in cases {
            let cfg = OffsetCfg::simple(512, random, randommap, RandomDist::Uniform);
            let mut fast = OffsetGen::with(&regions, cfg, 99);
            assert_eq!(fast.plain, want);
            let mut general = fast.clone();
            general.plain = Plain::No;
            let mut pick = Rng::new(5);
            for i in 0..3000 {
                let len = [512, 4096, 65536][pick.below(3) as usize];
                let write = pick.below(2) == 1;
                assert_eq!(
                    fast.next_dir(len, write),
                    general.next_dir(len, write),
                    "{want:?}: I/O {i}"
                );
            }
        }
        // Anything beyond one plain window takes the general path.
        let mut two = OffsetCfg::simple(512, true, true, RandomDist::Uniform);
        assert_eq!(
            OffsetGen::with(&[(0, 1 << 20), (0, 1 << 20)], two.clone(), 1).plain,
            Plain::No
        );
        let others: [fn(&mut OffsetCfg); 6] = [
            |c| c.zones = Some((4096, 4096, 0)),
            |c| c.rand_run = 2,
            |c| c.pct_random = [50, 100],
            |c| c.blockalign = [0, 8192],
            |c| c.dist = RandomDist::Zipf(1.2),
            |c| {
                c.random = false;
                c.seq_add = 4096
            },
        ];
        for (i, f) in others.iter().enumerate() {
            two = OffsetCfg::simple(512, true, true, RandomDist::Uniform);
            f(&mut two);
            assert_eq!(
                OffsetGen::with(&[(0, 1 << 20)], two.clone(), 1).plain,
                Plain::No,
                "case {i}"
            );
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

    /// The first `draws` blocks of a 4 KiB-block region of `blocks` blocks
    /// (a file at 0, or at 1 MiB: the offsets must not depend on it).
    fn blocks_drawn(
        blocks: u64,
        generator: RandomGenerator,
        randommap: bool,
        seed: u64,
        draws: u64,
    ) -> Vec<u64> {
        let mut c = OffsetCfg::simple(4096, true, randommap, RandomDist::Uniform);
        c.generator = generator;
        let mut g = OffsetGen::with(&[(1 << 20, blocks * 4096)], c, seed);
        (0..draws)
            .map(|_| (g.next(4096).1 - (1 << 20)) / 4096)
            .collect()
    }

    /// The generators as fio's t/run-fio-tests.py checks t0020 (random map)
    /// and t0021 (lfsr, norandommap): every block once, and the runs test
    /// above/below the mean passes at p ≥ 0.05; then the same at 12 other
    /// sizes, and, over 24 seeds each, runs tests centred on 0 and
    /// consecutive blocks uncorrelated (the LFSR, whose seed only rotates
    /// its one sequence: each rotation within bounds).
    #[test]
    fn generators_pass_fios_runs_test_and_cover_every_block() {
        use super::super::randgen::{mean, runs_z};
        let kinds = [
            (RandomGenerator::Tausworthe, true),
            (RandomGenerator::Tausworthe64, true),
            (RandomGenerator::Lfsr, false),
        ];
        // t0020/t0021: filesize=1M bs=4k, the default seed (randseed 0x89).
        for (generator, map) in kinds {
            let v = blocks_drawn(256, generator, map, 0x89, 256);
            let mut sorted = v.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..256).collect::<Vec<u64>>(), "{generator:?}");
            let z = runs_z(&v, mean(&v));
            assert!(z.abs() < 1.96, "{generator:?}: runs test z = {z:.2}");
        }
        for blocks in [
            1u64, 2, 3, 20, 100, 255, 257, 1000, 1023, 4097, 10_000, 65_537,
        ] {
            for (generator, map) in kinds {
                let (mut zs, mut rs) = (Vec::new(), Vec::new());
                for seed in 0..24u64 {
                    // Two passes: each block once in each.
                    let v = blocks_drawn(blocks, generator, map, seed * 7919, 2 * blocks);
                    for pass in v.chunks(blocks as usize) {
                        let mut seen = vec![false; blocks as usize];
                        for &b in pass {
                            assert!(
                                !seen[b as usize],
                                "{generator:?} {blocks} blocks seed {seed}: {b} twice in a pass"
                            );
                            seen[b as usize] = true;
                        }
                    }
                    if blocks < 20 {
                        continue;
                    }
                    let v = &v[..blocks as usize];
                    let z = runs_z(v, mean(v));
                    assert!(
                        z.abs() < 4.0,
                        "{generator:?} {blocks} blocks seed {seed}: z {z:.2}"
                    );
                    zs.push(z);
                    let m = mean(v);
                    let (mut num, mut den) = (0.0, 0.0);
                    for w in v.windows(2) {
                        num += (w[0] as f64 - m) * (w[1] as f64 - m);
                    }
                    for &x in v {
                        den += (x as f64 - m).powi(2);
                    }
                    rs.push(num / den);
                }
                if zs.is_empty() {
                    continue;
                }
                if generator == RandomGenerator::Lfsr {
                    // One sequence per size, the seed only rotates it: each
                    // rotation on its own bounds. Not a true random
                    // generator (fio says so): skipping the states past
                    // the last block leaves consecutive blocks ~2%
                    // correlated at 65537 blocks, harmless to any cache.
                    let bound = (4.0 / (blocks as f64).sqrt()).max(0.03);
                    assert!(
                        rs.iter().all(|r| r.abs() < bound),
                        "{generator:?} {blocks} blocks: lag-1 correlations {rs:?}"
                    );
                    continue;
                }
                // 24 z scores of sd 1: their mean has sd 0.2.
                let zm = zs.iter().sum::<f64>() / zs.len() as f64;
                assert!(
                    zm.abs() < 0.8,
                    "{generator:?} {blocks} blocks: mean z {zm:.2}"
                );
                // Lag-1 correlation of sd 1/sqrt(n), averaged over 24.
                let rm = rs.iter().sum::<f64>() / rs.len() as f64;
                let bound = 4.0 / ((blocks as f64) * rs.len() as f64).sqrt();
                assert!(
                    rm.abs() < bound,
                    "{generator:?} {blocks} blocks: lag-1 correlation {rm:.3}"
                );
            }
        }
    }

    #[test]
    fn norandommap_tausworthe_repeats_blocks_as_uniform_draws_do() {
        // 256 independent draws over 256 blocks: about 256/e never drawn.
        let v = blocks_drawn(256, RandomGenerator::Tausworthe, false, 0x89, 256);
        let mut seen = vec![false; 256];
        v.iter().for_each(|&b| seen[b as usize] = true);
        let missed = seen.iter().filter(|&&s| !s).count();
        assert!((70..120).contains(&missed), "{missed} blocks never drawn");
    }

    #[test]
    fn seeds_repeat_their_sequence() {
        let kinds = [
            (RandomGenerator::Tausworthe, true),
            (RandomGenerator::Tausworthe, false),
            (RandomGenerator::Tausworthe64, true),
            (RandomGenerator::Lfsr, true),
        ];
        for (generator, map) in kinds {
            let a = blocks_drawn(1000, generator, map, 0x89, 500);
            assert_eq!(a, blocks_drawn(1000, generator, map, 0x89, 500));
            assert_ne!(a, blocks_drawn(1000, generator, map, 0x8a, 500));
        }
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
            assert!(b.is_multiple_of(4096) && (4096..=16384).contains(&b));
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

    fn cfg(random: bool) -> OffsetCfg {
        OffsetCfg::simple(4096, random, true, RandomDist::Uniform)
    }

    fn offs(g: &mut OffsetGen, n: usize) -> Vec<u64> {
        (0..n).map(|_| g.next(4096).1).collect()
    }

    #[test]
    fn sequential_with_holes_and_backwards_match_fio() {
        // fio 3.33 write_iolog: rw=read:4k, bs=4k, size=64k.
        let mut c = cfg(false);
        c.seq_add = 4096;
        let mut g = OffsetGen::with(&[(0, 65536)], c.clone(), 1);
        let k: Vec<u64> = (0..16).map(|i| (i % 8) * 8192).collect();
        assert_eq!(offs(&mut g, 16), k);
        // rw=read:-8k: 0, 56k, 52k, …, 4k, 0.
        c.seq_add = -8192;
        let mut g = OffsetGen::with(&[(0, 65536)], c, 1);
        let mut want = vec![0u64];
        want.extend((1..=14).rev().map(|i| i * 4096));
        want.push(0);
        assert_eq!(offs(&mut g, 16), want);
    }

    #[test]
    fn strided_zones_match_fio() {
        // fio 3.33: rw=read bs=4k size=1m zonesize=16k zonerange=64k zoneskip=128k.
        let mut c = cfg(false);
        c.zones = Some((65536, 16384, 131072));
        let mut g = OffsetGen::with(&[(0, 1 << 20)], c, 1);
        let mut want = Vec::new();
        for z in 0..6u64 {
            for b in 0..4u64 {
                want.push(z * 196608 + b * 4096);
            }
        }
        want.extend([0, 4096, 8192, 12288]);
        assert_eq!(offs(&mut g, 28), want);
    }

    #[test]
    fn random_runs_follow_the_random_offset() {
        let mut c = cfg(true);
        c.rand_run = 4;
        let mut g = OffsetGen::with(&[(0, 1 << 20)], c.clone(), 5);
        let v = offs(&mut g, 12);
        for run in v.chunks(4) {
            for k in 1..4 {
                // Continuing past the end wraps to the start, as sequential I/O does.
                assert_eq!(run[k], (run[0] + k as u64 * 4096) % (1 << 20), "{v:?}");
            }
        }
        assert_ne!(v[0] + 4 * 4096, v[4], "a new random offset every 4: {v:?}");
        c.run_identical = true;
        let mut g = OffsetGen::with(&[(0, 1 << 20)], c, 5);
        let v = offs(&mut g, 8);
        assert!(v[..4].iter().all(|&o| o == v[0]) && v[4..].iter().all(|&o| o == v[4]));
    }

    #[test]
    fn percentage_random_mixes_sequential_runs() {
        let mut c = cfg(true);
        c.randommap = false;
        c.pct_random = [0, 100];
        let mut g = OffsetGen::with(&[(0, 1 << 30)], c, 3);
        // Reads: fully sequential; writes: random.
        let first = g.next_dir(4096, false).1;
        for k in 1..100u64 {
            assert_eq!(g.next_dir(4096, false).1, first + k * 4096);
        }
        let mut c = cfg(true);
        c.randommap = false;
        c.pct_random = [50; 2];
        let mut g = OffsetGen::with(&[(0, 1 << 30)], c, 3);
        let v = offs(&mut g, 10_000);
        let seq = v.windows(2).filter(|w| w[1] == w[0] + 4096).count();
        assert!((4_000..6_000).contains(&seq), "{seq} sequential of 10000");
    }

    #[test]
    fn file_services() {
        let regions = [(0, 8192), (0, 8192), (0, 8192)];
        // roundrobin:2
        let mut c = cfg(false);
        c.file_every = 2;
        let mut g = OffsetGen::with(&regions, c, 1);
        let f: Vec<u32> = (0..8).map(|_| g.next(4096).0).collect();
        assert_eq!(f, vec![0, 0, 1, 1, 2, 2, 0, 0]);
        // sequential: each file's pass, then the next.
        let mut c = cfg(false);
        c.file_service = FileService::Sequential;
        let mut g = OffsetGen::with(&regions, c, 1);
        let f: Vec<(u32, u64)> = (0..7).map(|_| g.next(4096)).collect();
        assert_eq!(
            f,
            vec![
                (0, 0),
                (0, 4096),
                (1, 0),
                (1, 4096),
                (2, 0),
                (2, 4096),
                (0, 0)
            ]
        );
        // random: every file is used, not in order.
        let mut c = cfg(false);
        c.file_service = FileService::Random;
        let mut g = OffsetGen::with(&regions, c, 1);
        let mut n = [0; 3];
        for _ in 0..3000 {
            n[g.next(4096).0 as usize] += 1;
        }
        assert!(n.iter().all(|&k| (800..1200).contains(&k)), "{n:?}");
        // zipf over files: file 0 is the hottest.
        let mut c = cfg(false);
        c.file_service = FileService::Zipf(1.2);
        let mut g = OffsetGen::with(&regions, c, 1);
        let mut n = [0; 3];
        for _ in 0..3000 {
            n[g.next(4096).0 as usize] += 1;
        }
        assert!(n[0] > n[1] && n[1] > n[2], "{n:?}");
        // openfiles=2 of 3: files 0 and 1 until both did a pass, then 2 and 0.
        let mut c = cfg(false);
        c.open_files = 2;
        let mut g = OffsetGen::with(&regions, c, 1);
        let f: Vec<u32> = (0..6).map(|_| g.next(4096).0).collect();
        assert_eq!(f, vec![0, 1, 0, 1, 2, 0]);
    }

    #[test]
    fn zoned_distribution_hits_its_zones() {
        use crate::job::spec::{AccessZone, ZoneSize};
        let z = |io, p| AccessZone {
            io_pct: io,
            size: ZoneSize::Pct(p),
        };
        // 80% of reads in the first 10%; writes uniform over the second half.
        let dist = RandomDist::Zoned([
            vec![z(80, 10.0), z(20, 90.0)],
            vec![z(0, 50.0), z(100, 50.0)],
        ]);
        let c = OffsetCfg::simple(4096, true, false, dist);
        let len = 1000 * 4096;
        let mut g = OffsetGen::with(&[(0, len)], c, 9);
        let hot = (0..10_000)
            .filter(|_| g.next_dir(4096, false).1 < len / 10)
            .count();
        assert!((7_600..8_400).contains(&hot), "{hot}");
        assert!((0..1000).all(|_| g.next_dir(4096, true).1 >= len / 2));
        // zoned_abs: 100% in the first 64 KiB.
        let dist = RandomDist::Zoned([
            vec![AccessZone {
                io_pct: 100,
                size: ZoneSize::Bytes(65536),
            }],
            vec![],
        ]);
        let mut g = OffsetGen::with(&[(0, len)], OffsetCfg::simple(4096, true, false, dist), 9);
        assert!((0..1000).all(|_| g.next(4096).1 < 65536));
    }

    #[test]
    fn blockalign_rounds_each_direction() {
        let mut c = OffsetCfg::simple(512, true, false, RandomDist::Uniform);
        c.blockalign = [512, 8192];
        let mut g = OffsetGen::with(&[(0, 1 << 24)], c, 2);
        let reads: Vec<u64> = (0..2000).map(|_| g.next_dir(4096, false).1).collect();
        assert!(
            reads.iter().any(|o| o % 4096 != 0),
            "reads use 512-byte boundaries"
        );
        assert!(reads.iter().all(|o| o % 512 == 0));
        assert!((0..2000).all(|_| g.next_dir(4096, true).1.is_multiple_of(8192)));
    }

    #[test]
    fn skewed_center_moves_the_hot_spot() {
        let mut c = OffsetCfg::simple(4096, true, false, RandomDist::Zipf(1.2));
        c.center = Some(0.5);
        let n = 1000u64;
        let mut g = OffsetGen::with(&[(0, n * 4096)], c, 4);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..20_000 {
            counts[(g.next(4096).1 / 4096) as usize] += 1;
        }
        let top = (0..n as usize).max_by_key(|&i| counts[i]).unwrap();
        assert_eq!(top, 500, "rank 0 at the center");
    }
}
