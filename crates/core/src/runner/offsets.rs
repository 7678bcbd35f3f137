//! Where each I/O goes: [`OffsetGen`], one per worker, built from the
//! job's [`OffsetCfg`]: the file each I/O goes to (`file_service_type`,
//! `openfiles`), strided zones, sequential cursors (with `rw=read:8k`
//! gaps and backwards), `rw=randread:N` runs, `percentage_random`, and the
//! plain paths most jobs take. Random offsets inside a file's window, by
//! the job's distribution (uniform blocks from fio's generators in
//! runner/randgen.rs, zipf, pareto, normal, sequence, zoned), are in
//! `offsets/random.rs`. All reproducible from the job's seed.

mod random;

use super::distributions::{mix, Permutation, Rng, Shuffle, Zipf};
use super::randgen::{BlockMap, Lfsr, Taus};
use crate::job::spec::{FileService, RandomGenerator, ZoneSize};
use crate::job::RandomDist;
use random::{fit, map_draw};

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
    /// The smallest block per direction (0: `unit`): a sequential I/O near
    /// the window's end is cut to the room left only if that room holds it.
    pub min_len: [u64; 2],
    /// Every I/O is exactly one `unit` (one block size, no `bsrange` or
    /// `bssplit`): the random map's order needs no map.
    pub one_unit: bool,
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
            min_len: [0; 2],
            pct_random: [100; 2],
            file_service: FileService::RoundRobin,
            file_every: 1,
            open_files: 0,
            zones: None,
            seq_stride: false,
            one_unit: false,
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
pub(super) struct Region {
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
    /// The random map (tausworthe with it on, I/Os of several sizes), or
    /// the LFSR (`lfsr`).
    map: Option<BlockMap>,
    lfsr: Option<Lfsr>,
    /// The random map's order when every I/O is one `unit`: a keyed
    /// bijection of the pass's counter, keyed anew each pass, so no memory
    /// is read per I/O ([`random::map_draw`]).
    order: Option<Shuffle>,
}

impl Region {
    /// A new pass (or window) of the shuffled order: a new key.
    fn rekey(&mut self) {
        if let Some(o) = &mut self.order {
            o.start_pass(self.nblocks, self.pass);
        }
    }
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

/// The state of each file's region ((start, length) per file) at the start.
fn new_regions(regions: &[(u64, u64)], cfg: &OffsetCfg, seed: u64) -> Vec<Region> {
    let unit = cfg.unit;
    let uniform_map = cfg.random && cfg.randommap && cfg.dist == RandomDist::Uniform;
    let lfsr = uniform_map && cfg.generator == RandomGenerator::Lfsr;
    // Each I/O one unit: no block claims a run after it, so a bijection
    // of the pass position does the map's work.
    let shuffled = uniform_map && !lfsr && cfg.one_unit;
    regions
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
                map: (uniform_map && !lfsr && !shuffled).then(|| BlockMap::new(nblocks)),
                lfsr: lfsr.then(|| Lfsr::new(nblocks, seed ^ mix(i as u64 + 1))),
                order: shuffled.then(|| Shuffle::new(nblocks, mix(seed ^ mix(!(i as u64))))),
            }
        })
        .collect()
}

/// A `random_distribution=zoned` (per direction) as cumulative cuts.
fn zone_cuts(dist: &RandomDist) -> [Vec<ZoneCut>; 2] {
    match dist {
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
    }
}

/// The uniform block generator: fio's tausworthe (32 bits) unless a file
/// has more than 2^32 blocks, then tausworthe64.
fn new_taus(generator: RandomGenerator, regions: &[Region], seed: u64) -> Taus {
    let most = regions.iter().map(|r| r.nblocks).max().unwrap_or(1);
    match generator {
        RandomGenerator::Tausworthe if most <= 1 << 32 => Taus::taus88(seed),
        _ => Taus::taus258(seed),
    }
}

/// The fast path `cfg` allows over `nregions` files, if any.
fn plain_path(cfg: &OffsetCfg, nregions: usize) -> Plain {
    let one_window = nregions == 1 && cfg.zones.is_none();
    if !one_window {
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
    }
}

/// A sequential I/O of `len` bytes at the region's cursor: `len` where it
/// fits; cut to the room left before the window's end (in `unit`s) when
/// that room holds the direction's smallest block `min` (fio picks a size
/// that fits, so `bsrange`/`bssplit` reach the last byte); else the pass
/// ends and the cursor goes back to the start. Returns the I/O's length.
#[inline(always)]
fn seq_fit(r: &mut Region, len: u64, unit: u64, min: u64) -> u64 {
    if r.pos + len <= r.win_len {
        return len;
    }
    let room = r.win_len.saturating_sub(r.pos) / unit * unit;
    if room > 0 && room >= min {
        return room;
    }
    r.pos = 0;
    r.pass += 1;
    len
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

    /// The generator over `regions` ((start, length) per file) that `cfg`
    /// describes, seeded with `seed`.
    pub fn with(regions: &[(u64, u64)], mut cfg: OffsetCfg, seed: u64) -> OffsetGen {
        cfg.unit = cfg.unit.max(1);
        cfg.rand_run = cfg.rand_run.max(1);
        cfg.file_every = cfg.file_every.max(1);
        // An LFSR never repeats a block within a pass, map or no map.
        if cfg.generator == RandomGenerator::Lfsr {
            cfg.randommap = true;
        }
        let regions = new_regions(regions, &cfg, seed);
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
        let zoned = zone_cuts(&cfg.dist);
        let taus = new_taus(cfg.generator, &regions, seed);
        let n = regions.len();
        let open_n = match cfg.open_files as usize {
            0 => n,
            k => k.min(n),
        }
        .max(1);
        let plain = plain_path(&cfg, regions.len());
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

    /// Next (file index, offset, length) for a read of `len` bytes.
    #[inline]
    pub fn next(&mut self, len: u64) -> (u32, u64, u64) {
        self.next_dir(len, false)
    }

    /// Next (file index, offset, length) for an I/O of `len` bytes in
    /// direction `write`: the length is `len`, or less where the random
    /// map cuts a block to the free run it lands on ([`random::claim`]).
    #[inline(always)]
    pub fn next_dir(&mut self, len: u64, write: bool) -> (u32, u64, u64) {
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
                let len = seq_fit(r, len, unit, self.cfg.min_len[write as usize]);
                let o = r.pos;
                r.pos = o + len;
                return (0, r.start + o, len);
            }
            Plain::RandomMap => {
                let b = map_draw(r, &mut self.taus);
                let len = random::claim(r, b, len, unit);
                return (0, r.start + fit(r, b * unit, len, unit), len);
            }
            Plain::Random => self.taus.below(r.nblocks),
        };
        (0, r.start + fit(r, rel * unit, len, unit), len)
    }

    /// [`next_dir`](Self::next_dir) for every job.
    #[inline(never)]
    fn next_general(&mut self, len: u64, write: bool) -> (u32, u64, u64) {
        if let Some(s) = &mut self.spr {
            return (0, s.next_offset(), len);
        }
        let fi = self.pick_file();
        let mut len = len;
        let rel = self.offset_in(fi, &mut len, write);
        let r = &mut self.regions[fi];
        r.served += len;
        let abs = r.start + r.win + rel;
        self.after_io(fi);
        (fi as u32, abs, len)
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
                r.rekey();
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
    fn offset_in(&mut self, fi: usize, len: &mut u64, write: bool) -> u64 {
        if !self.cfg.random {
            return self.sequential(fi, len, write);
        }
        if self.run_left > 0 {
            // rw=randread:N: the rest of the run follows the random offset.
            self.run_left -= 1;
            if self.cfg.run_identical {
                return self.last;
            }
            let o = self.sequential(fi, len, write);
            self.last = o;
            return o;
        }
        let pct = self.cfg.pct_random[write as usize];
        if pct < 100 && self.rng.below(100) >= pct as u64 {
            return self.sequential(fi, len, write);
        }
        let o = self.random(fi, len, write);
        self.run_left = self.cfg.rand_run - 1;
        self.last = o;
        let r = &mut self.regions[fi];
        r.pos = o + *len;
        o
    }

    /// Continue sequentially from the cursor; `rw=read:8k` adds a gap (or,
    /// negative, goes backwards) and wraps at either end.
    #[inline(always)]
    fn sequential(&mut self, fi: usize, len: &mut u64, write: bool) -> u64 {
        let add = self.cfg.seq_add;
        let (unit, min) = (self.cfg.unit, self.cfg.min_len[write as usize]);
        let r = &mut self.regions[fi];
        *len = seq_fit(r, *len, unit, min);
        let len = *len;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sequential I/O with sizes that vary (fio's t0024): the last I/O of
    /// a pass is cut to the room left when the direction's smallest block
    /// fits in it, so every byte is covered once and the next pass starts
    /// at 0; a direction whose smallest block does not fit wraps instead.
    #[test]
    fn sequential_mixed_sizes_reach_the_last_byte() {
        for plain in [true, false] {
            let mut cfg = OffsetCfg::simple(512, false, false, RandomDist::Uniform);
            cfg.min_len = [512, 65536];
            let mut g = OffsetGen::with(&[(0, 1 << 20)], cfg, 1);
            if !plain {
                g.plain = Plain::No;
            }
            let mut pick = Rng::new(3);
            let (mut at, mut cut) = (0, 0);
            while at < 1 << 20 {
                let len = 512 * (1 + pick.below(8));
                let (_, o, l) = g.next_dir(len, false);
                assert_eq!(o, at, "plain {plain}: contiguous");
                cut += u64::from(l < len);
                at += l;
            }
            assert_eq!(at, 1 << 20);
            assert!(cut <= 1, "only the pass's last I/O is cut");
            assert_eq!(g.next_dir(4096, false).1, 0, "the next pass starts at 0");
            // Writes of 64 KiB (their smallest) from 1 MiB − 32 KiB wrap.
            let mut g = OffsetGen::with(&[(0, 1 << 20)], cfg_with(512, [512, 65536]), 1);
            for _ in 0..((1 << 20) - 32768) / 4096 {
                g.next_dir(4096, false);
            }
            assert_eq!(g.next_dir(65536, true), (0, 0, 65536));
        }
    }

    fn cfg_with(unit: u64, min_len: [u64; 2]) -> OffsetCfg {
        let mut c = OffsetCfg::simple(unit, false, false, RandomDist::Uniform);
        c.min_len = min_len;
        c
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
        let v: Vec<(u32, u64)> = (0..6)
            .map(|_| g.next(4096))
            .map(|(f, o, _)| (f, o))
            .collect();
        assert_eq!(
            v,
            vec![(0, 0), (1, 4096), (0, 4096), (1, 8192), (0, 0), (1, 4096)]
        );
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

    /// Random offsets in strided zones, with the random map as a bitmap and
    /// as the shuffled order (one block size): each visit to a zone of 16
    /// blocks takes 16 distinct blocks of that zone; the next visit, in
    /// another order.
    #[test]
    fn random_zones_take_each_block_of_a_zone_once_per_visit() {
        for one_unit in [false, true] {
            let mut c = cfg(true);
            c.one_unit = one_unit;
            // 1 MiB; zones of 64 KiB, every other one (zoneskip 64 KiB).
            c.zones = Some((65536, 65536, 65536));
            let mut g = OffsetGen::with(&[(0, 1 << 20)], c, 3);
            let v = offs(&mut g, 16 * 9);
            let visits: Vec<&[u64]> = v.chunks(16).collect();
            for (k, visit) in visits.iter().enumerate() {
                let zone = (k % 8) as u64 * 131072;
                let mut blocks: Vec<u64> = visit.iter().map(|o| (o - zone) / 4096).collect();
                assert!(
                    visit.iter().all(|&o| (zone..zone + 65536).contains(&o)),
                    "one_unit {one_unit}: visit {k} left its zone: {visit:?}"
                );
                blocks.sort_unstable();
                assert_eq!(
                    blocks,
                    (0..16).collect::<Vec<u64>>(),
                    "one_unit {one_unit}: visit {k}"
                );
            }
            assert_ne!(
                visits[0], visits[8],
                "one_unit {one_unit}: the same order again"
            );
        }
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
        let f: Vec<(u32, u64)> = (0..7)
            .map(|_| g.next(4096))
            .map(|(f, o, _)| (f, o))
            .collect();
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
}
