//! `sprandom=1`: SanDisk pseudo-random preconditioning (fio 3.42's
//! `sprandom`, `spr_op`, `spr_num_regions`, `spr_cs`; semantics from fio's
//! HOWTO, sprandom.c and t/sprandom.py, read, not copied).
//!
//! An SSD written at random for long enough settles into a steady state in
//! which the flash holds blocks of every validity: the oldest written are
//! mostly invalid (overwritten since), the newest fully valid. Writing the
//! drive at random two or three times over to get there takes days on a
//! large drive; sprandom writes that state directly, in about one pass of
//! its physical size.
//!
//! The model (Desnoyers, "Analytic Models of SSD Write Performance", 2012):
//! greedy garbage collection with over-provisioning `op` has a write
//! amplification of about `0.5 / op + 0.7`, and the block it reclaims has
//! validity `1 - 1/WA`; in steady state validity × share of the drive is
//! the same for every validity level, so validity falls from 1 to that of
//! the reclaimed block, with the less valid levels taking more space.
//! Resampled into `spr_num_regions` regions of equal size, and reversed (the
//! first written region is the oldest, the least valid), that gives each
//! region's validity.
//!
//! The write pattern: the job's logical size (its region of the file) is
//! written region after region, `physical size / spr_num_regions` bytes
//! each, every logical block exactly once in a pseudo-random order; of each
//! region's writes, the share its invalidity asks for is written again in
//! the next region (at its start, or with `spr_cs`, the device's write
//! cache, at its end, so that more than a cache's worth of other writes
//! separates a block's two writes and the cache cannot absorb the second).
//! The total is the modelled physical size, `size × (1 + op)` rounded up to
//! the block: fio sets `io_size` to it, and so does dioscope.
//!
//! fio draws the rewrites with a probability per write, so its total and its
//! coverage vary around the model; dioscope draws exactly the number each
//! region asks for (scaled so that the rewrites add up to physical − logical
//! size), so that the job writes exactly the physical size and every block
//! at least once. The sequence is a function of the job's seed.

use super::distributions::{Permutation, Rng};
use crate::job::JobSpec;

/// The modelled physical size of `logical` bytes with over-provisioning
/// `op`: `logical + ⌈logical × op⌉`, rounded up to `bs`.
fn physical_size(logical: u64, op: f64, bs: u64) -> u64 {
    let extra = (logical as f64 * op).ceil() as u64;
    (logical + extra).div_ceil(bs.max(1)) * bs.max(1)
}

/// Each region's validity in steady state (share of its blocks still
/// valid), oldest region first.
pub fn validity(regions: u32, op: f64) -> Vec<f64> {
    let n = regions.max(1) as usize;
    if n == 1 {
        return vec![1.0];
    }
    let wa = 0.5 / op + 0.7;
    let gc = 1.0 - 1.0 / wa;
    // Validity levels equally spaced from 1 down to the reclaimed block's;
    // each level's share of the drive is ∝ 1/validity, so its position on
    // the drive is the running sum of those shares.
    let level = |i: usize| 1.0 + (gc - 1.0) * i as f64 / (n - 1) as f64;
    let ys: Vec<f64> = (0..n).map(level).collect();
    let xs: Vec<f64> = ys
        .iter()
        .scan(0.0, |acc, y| {
            *acc += 1.0 / y;
            Some(*acc)
        })
        .collect();
    let (x0, x1) = (xs[0], xs[n - 1]);
    let mut out: Vec<f64> = (0..n)
        .map(|i| interp(x0 + (x1 - x0) * i as f64 / (n - 1) as f64, &xs, &ys))
        .collect();
    out.reverse();
    out
}

/// Piecewise-linear `ys(t)` over increasing `xs`, clamped at the ends.
fn interp(t: f64, xs: &[f64], ys: &[f64]) -> f64 {
    let last = xs.len() - 1;
    if t <= xs[0] {
        return ys[0];
    }
    if t >= xs[last] {
        return ys[last];
    }
    let k = xs.partition_point(|&x| x <= t).clamp(1, last);
    let (xa, xb, ya, yb) = (xs[k - 1], xs[k], ys[k - 1], ys[k]);
    if xb - xa < 1e-12 {
        return ya;
    }
    ya + (yb - ya) * (t - xa) / (xb - xa)
}

/// Per region: its writes, and how many of them are written again in the
/// next region. The rewrites add up to `physical − logical` blocks (when
/// the regions leave room), so that every logical block is written once
/// and the total is the physical size.
fn schedule(logical: u64, physical: u64, regions: u32, op: f64) -> (Vec<u64>, Vec<u64>) {
    let r = (regions as u64).clamp(1, physical.max(1)) as usize;
    let writes: Vec<u64> = (0..r as u64)
        .map(|i| physical / r as u64 + u64::from(i < physical % r as u64))
        .collect();
    let val = validity(r as u32, op);
    // The last region has no next one to be rewritten in.
    let want: Vec<f64> = (0..r)
        .map(|i| {
            if i + 1 == r {
                0.0
            } else {
                writes[i] as f64 * (1.0 - val[i]).max(0.0)
            }
        })
        .collect();
    let cap: Vec<u64> = (0..r)
        .map(|i| {
            if i + 1 == r {
                0
            } else {
                writes[i].min(writes[i + 1])
            }
        })
        .collect();
    let extra = physical.saturating_sub(logical);
    let total: f64 = want.iter().sum();
    let scale = if total > 0.0 {
        extra as f64 / total
    } else {
        0.0
    };
    let exact: Vec<f64> = want
        .iter()
        .zip(&cap)
        .map(|(w, &c)| (w * scale).min(c as f64))
        .collect();
    let mut rewrites: Vec<u64> = exact.iter().map(|e| e.floor() as u64).collect();
    // Largest remainders first, then any room left, until the sum is exact.
    let mut left = extra.saturating_sub(rewrites.iter().sum());
    let mut order: Vec<usize> = (0..r).collect();
    order.sort_by(|&a, &b| {
        let fa = exact[a] - exact[a].floor();
        let fb = exact[b] - exact[b].floor();
        fb.partial_cmp(&fa).unwrap_or(std::cmp::Ordering::Equal)
    });
    while left > 0 {
        let mut placed = false;
        for &i in &order {
            if left == 0 {
                break;
            }
            if rewrites[i] < cap[i] {
                rewrites[i] += 1;
                left -= 1;
                placed = true;
            }
        }
        if !placed {
            // No room: the extra writes become a second pass of fresh
            // blocks (every block is still written at least once).
            break;
        }
    }
    (writes, rewrites)
}

/// Why the job's sizes do not fit sprandom, if they do not: a region must
/// hold a block, and be larger than the write cache `spr_cs`. `len` is the
/// job's region of its file (the logical size).
pub fn check(j: &JobSpec, len: u64) -> Result<(), String> {
    let bs = j.bs[1].max().max(1);
    let physical = physical_size(len, j.spr_op, bs);
    let r = u64::from(j.spr_num_regions.max(1));
    let region = physical / r;
    if region < bs {
        return Err(format!(
            "sprandom: spr_num_regions={r} splits the modelled physical size ({physical} bytes: \
             {len} × (1 + spr_op={})) into regions of {region} bytes, less than one block \
             (bs={bs}); use spr_num_regions={} or fewer",
            j.spr_op,
            (physical / bs).max(1)
        ));
    }
    if j.spr_cs > 0 && j.spr_cs >= region {
        return Err(format!(
            "sprandom: spr_cs={} is not smaller than a region ({region} bytes: physical size \
             {physical} / spr_num_regions={r}), so no rewrite could get past the cache; lower \
             spr_cs, or spr_num_regions to at most {}",
            j.spr_cs,
            (physical / (j.spr_cs + 1)).max(1)
        ));
    }
    Ok(())
}

/// The offset generator of one worker of a `sprandom=1` job.
/// Everything is allocated in [`Sprandom::new`]; [`Sprandom::next_offset`]
/// allocates nothing.
#[derive(Debug, Clone)]
pub struct Sprandom {
    start: u64,
    bs: u64,
    nblocks: u64,
    seed: u64,
    perm: Permutation,
    /// Passes of fresh blocks started (a second one only when the job goes
    /// on: time_based, loops).
    pass: u64,
    /// Fresh blocks taken from the current pass.
    fresh: u64,
    writes: Vec<u64>,
    rewrites: Vec<u64>,
    region: usize,
    done: u64,
    /// Blocks of the previous region to write again in this one.
    pending: Vec<u64>,
    pend_at: usize,
    /// Blocks of this region chosen to be written again in the next.
    staging: Vec<u64>,
    stage_left: u64,
    /// `spr_cs`: the rewrites come at the end of the region.
    defer: bool,
    rng: Rng,
}

impl Sprandom {
    /// Over `[start, start + len)` of the file, blocks of `bs`.
    pub fn new(
        start: u64,
        len: u64,
        bs: u64,
        op: f64,
        regions: u32,
        cache: u64,
        seed: u64,
    ) -> Sprandom {
        let bs = bs.max(1);
        let nblocks = (len / bs).max(1);
        let logical = nblocks * bs;
        let physical = physical_size(logical, op, bs) / bs;
        let (writes, rewrites) = schedule(nblocks, physical, regions, op);
        let most = rewrites.iter().copied().max().unwrap_or(0) as usize;
        let seed = seed ^ 0x5350_5241_4e44_4f4d;
        Sprandom {
            start,
            bs,
            nblocks,
            seed,
            perm: Permutation::new(nblocks, seed),
            pass: 0,
            fresh: 0,
            stage_left: rewrites.first().copied().unwrap_or(0),
            writes,
            rewrites,
            region: 0,
            done: 0,
            pending: Vec::with_capacity(most),
            pend_at: 0,
            staging: Vec::with_capacity(most),
            defer: cache > 0,
            rng: Rng::new(seed.rotate_left(17)),
        }
    }

    /// The job's generator over its first region.
    pub fn for_job(j: &JobSpec, start: u64, len: u64, seed: u64) -> Sprandom {
        Sprandom::new(
            start,
            len,
            j.bs[1].max(),
            j.spr_op,
            j.spr_num_regions,
            j.spr_cs,
            seed,
        )
    }

    /// Bytes one pass of the pattern writes: the modelled physical size.
    pub fn physical_bytes(&self) -> u64 {
        self.writes.iter().sum::<u64>() * self.bs
    }

    /// The offset of the next write.
    #[inline]
    pub(super) fn next_offset(&mut self) -> u64 {
        if self.done == self.writes[self.region] {
            self.next_region();
        }
        let left = self.writes[self.region] - self.done;
        let replays = (self.pending.len() - self.pend_at) as u64;
        let replay = replays > 0 && (!self.defer || replays >= left);
        let block = if replay {
            let b = self.pending[self.pend_at];
            self.pend_at += 1;
            b
        } else {
            self.fresh_block()
        };
        // Selection sampling: each of the region's writes is staged with
        // probability (still to stage) / (writes left), which stages
        // exactly the region's count, uniformly among its writes.
        if self.stage_left > 0 && self.rng.below(left) < self.stage_left {
            self.staging.push(block);
            self.stage_left -= 1;
        }
        self.done += 1;
        self.start + block * self.bs
    }

    #[inline]
    fn fresh_block(&mut self) -> u64 {
        if self.fresh == self.nblocks {
            self.pass += 1;
            self.perm = Permutation::new(
                self.nblocks,
                self.seed ^ self.pass.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            self.fresh = 0;
        }
        let b = self.perm.apply(self.fresh);
        self.fresh += 1;
        b
    }

    #[cold]
    fn next_region(&mut self) {
        std::mem::swap(&mut self.pending, &mut self.staging);
        self.staging.clear();
        self.pend_at = 0;
        self.done = 0;
        self.region += 1;
        if self.region == self.writes.len() {
            // The pattern is done; a job that goes on starts it again
            // over a new order.
            self.region = 0;
            self.pending.clear();
            self.fresh = self.nblocks;
        }
        self.stage_left = self.rewrites[self.region];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(len: u64, bs: u64, op: f64, regions: u32, cache: u64, seed: u64) -> (Vec<u64>, u64) {
        let mut s = Sprandom::new(0, len, bs, op, regions, cache, seed);
        let total = s.physical_bytes();
        let offs = (0..total / bs).map(|_| s.next_offset()).collect();
        (offs, total)
    }

    #[test]
    fn validity_falls_from_the_newest_to_the_oldest_region() {
        let v = validity(100, 0.2);
        assert_eq!(v.len(), 100);
        assert!((v[99] - 1.0).abs() < 1e-9, "newest region fully valid");
        // WA = 0.5/0.2 + 0.7 = 3.2: the reclaimed block is 1 - 1/3.2 valid.
        assert!((v[0] - (1.0 - 1.0 / 3.2)).abs() < 1e-9, "{}", v[0]);
        assert!(v.windows(2).all(|w| w[0] <= w[1] + 1e-12));
        // The mean validity is close to logical / physical = 1 / (1 + op).
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean - 1.0 / 1.2).abs() < 0.02, "mean {mean}");
    }

    #[test]
    fn every_block_is_written_and_the_total_is_the_physical_size() {
        for (len, bs, op, regions, cache) in [
            (4 << 20, 4096, 0.2, 50, 0),
            (4 << 20, 4096, 0.15, 100, 0),
            (32 << 20, 16384, 0.5, 200, 0),
            (8 << 20, 4096, 0.1, 100, 32768),
            (1 << 20, 4096, 0.25, 1, 0),
            (1 << 20, 4096, 0.9, 3, 0),
            (12288, 4096, 0.3, 2, 0),
        ] {
            let (offs, total) = run(len, bs, op, regions, cache, 7);
            assert_eq!(total, physical_size(len, op, bs), "{len} {op} {regions}");
            assert_eq!(offs.len() as u64 * bs, total);
            let n = len / bs;
            let mut seen = vec![0u32; n as usize];
            for o in &offs {
                assert_eq!(o % bs, 0);
                assert!(*o < len, "{o} past {len}");
                seen[(o / bs) as usize] += 1;
            }
            let missing = seen.iter().filter(|&&c| c == 0).count();
            assert_eq!(
                missing, 0,
                "{len} {op} {regions}: {missing} blocks never written"
            );
            // The rewrites are the difference between the two sizes.
            let again: u64 = seen.iter().map(|&c| u64::from(c.saturating_sub(1))).sum();
            assert_eq!(again * bs, total - n * bs);
        }
    }

    #[test]
    fn the_oldest_regions_are_rewritten_most() {
        let (offs, _) = run(8 << 20, 4096, 0.2, 20, 0, 3);
        let n = (8 << 20) / 4096;
        // A block's last write decides which region holds its valid copy:
        // the first regions keep the fewest.
        let mut last = vec![0usize; n];
        let per = offs.len() / 20;
        for (i, o) in offs.iter().enumerate() {
            last[(o / 4096) as usize] = (i / per).min(19);
        }
        let mut valid = [0u32; 20];
        for r in last {
            valid[r] += 1;
        }
        assert!(valid[0] < valid[19], "{valid:?}");
        assert!(valid[0] * 10 < per as u32 * 8, "{valid:?}");
    }

    #[test]
    fn a_cache_moves_the_rewrites_to_the_end_of_the_region() {
        let bs = 4096;
        let mut s = Sprandom::new(0, 4 << 20, bs, 0.2, 10, 64 << 10, 1);
        let w0 = s.writes[0] as usize;
        let w1 = s.writes[1] as usize;
        let first: Vec<u64> = (0..w0).map(|_| s.next_offset()).collect();
        let second: Vec<u64> = (0..w1).map(|_| s.next_offset()).collect();
        let again = second.iter().filter(|o| first.contains(o)).count();
        assert!(again > 0);
        // All of them are the last writes of the second region.
        assert!(second[w1 - again..].iter().all(|o| first.contains(o)));
        let mut s = Sprandom::new(0, 4 << 20, bs, 0.2, 10, 0, 1);
        let first: Vec<u64> = (0..w0).map(|_| s.next_offset()).collect();
        let second: Vec<u64> = (0..w1).map(|_| s.next_offset()).collect();
        let again = second.iter().filter(|o| first.contains(o)).count();
        assert!(
            second[..again].iter().all(|o| first.contains(o)),
            "without a cache: first"
        );
    }

    #[test]
    fn the_sequence_is_a_function_of_the_seed() {
        let a = run(2 << 20, 4096, 0.2, 50, 0, 11).0;
        assert_eq!(a, run(2 << 20, 4096, 0.2, 50, 0, 11).0);
        assert_ne!(a, run(2 << 20, 4096, 0.2, 50, 0, 12).0);
    }

    #[test]
    fn a_job_that_goes_on_starts_the_pattern_again() {
        let mut s = Sprandom::new(4096, 64 << 10, 4096, 0.2, 4, 0, 5);
        let n = s.physical_bytes() / 4096;
        for _ in 0..3 * n {
            let o = s.next_offset();
            assert!((4096..4096 + (64 << 10)).contains(&o));
        }
    }
}
