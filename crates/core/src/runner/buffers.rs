//! What a worker writes: the contents of its write buffers (zero_buffers,
//! buffer_pattern, scramble_buffers, refill_buffers,
//! buffer_compress_percentage, dedupe_percentage) and its per-I/O
//! priorities (cmdprio_*).
//!
//! Both are parts of a worker's block hook (`JobHook`, in `verifying.rs`);
//! the buffers' first contents are laid down when the worker's slots are
//! allocated (`thread_setup.rs`).

use crate::job::JobSpec;
use dioscope_sys::queue::SlotArena;
use dioscope_sys::sched;
use std::sync::Arc;

/// How each write's buffer is prepared.
pub struct Fill {
    /// New contents for every write (`None`: the buffer keeps what it has).
    refill: Option<Refill>,
    /// `scramble_buffers`: stamp every 512 bytes with the offset and a counter.
    scramble: bool,
    rng: u64,
    count: u64,
}

enum Refill {
    /// The pattern at the write's offset (`%o`, or a job that also reads
    /// into the same buffers).
    Pattern(Arc<crate::verify::pattern::Pattern>),
    Zero,
    /// Random bytes; with `compress`, each chunk is this percentage
    /// compressible (zeros or the pattern after the random part); with
    /// `dedupe`, this percentage of writes repeat the last unique one.
    Random {
        compress: Option<(u32, usize)>,
        fixed: Option<Arc<crate::verify::pattern::Pattern>>,
        dedupe: Dedupe,
    },
}

#[inline]
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// splitmix64's finaliser: unrelated streams from neighbouring seeds (a
/// seed taken from one xorshift stream would only shift that stream, which
/// a compressor finds).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fill_random(buf: &mut [u8], seed: u64) {
    let mut x = mix(seed) | 1;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&xorshift(&mut x).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&xorshift(&mut x).to_le_bytes()[..n]);
}

/// dedupe_percentage: which earlier contents a deduplicable write repeats.
/// Contents are generated from a seed, so a buffer is its number: unique
/// write k has `base ^ mix(k)`.
struct Dedupe {
    percentage: u32,
    /// This worker's unique writes.
    base: u64,
    /// The buffers repeated (dedupe_global: one base for every job).
    dup_base: u64,
    uniques: u64,
    /// dedupe_mode=working_set: pick among this many buffers; 0: repeat
    /// the last unique write.
    working_set: u64,
}

impl Dedupe {
    #[inline]
    fn seed(&mut self, rng: &mut u64) -> u64 {
        if self.percentage > 0 && xorshift(rng) % 100 < self.percentage as u64 {
            let k = if self.working_set > 0 {
                let n = if self.dup_base == self.base {
                    self.working_set.min(self.uniques.max(1))
                } else {
                    self.working_set
                };
                xorshift(rng) % n
            } else if self.dup_base == self.base {
                self.uniques.saturating_sub(1)
            } else {
                0
            };
            return self.dup_base ^ mix(k);
        }
        self.uniques += 1;
        self.base ^ mix(self.uniques - 1)
    }
}

impl Fill {
    /// The fill of a writing job without verify, or `None` when its buffers
    /// need no per-write work.
    pub fn of(j: &JobSpec, seed: u64) -> Option<Fill> {
        if !j.rw.writes() || j.verify.is_some() {
            return None;
        }
        let pattern = j.buffer_pattern.clone().map(Arc::new);
        let dedupe = |percentage: u32| {
            let base = mix(seed ^ 0x5eed);
            let working_set = match (j.dedupe_working_set, &j.size) {
                (true, Some(crate::job::units::SizeOrPct::Bytes(b))) => {
                    (b * j.dedupe_working_set_percentage as u64 / 100 / j.bs[1].min().max(1)).max(1)
                }
                _ => 0,
            };
            Dedupe {
                percentage,
                base,
                // Shared buffers: the same numbers in every job.
                dup_base: if j.dedupe_global {
                    0x0dd5_eed5_6a1b_a15e
                } else {
                    base
                },
                uniques: 0,
                working_set,
            }
        };
        let refill =
            if j.buffer_compress_percentage.is_some_and(|p| p > 0) || j.dedupe_percentage > 0 {
                Some(Refill::Random {
                    compress: j
                        .buffer_compress_percentage
                        .filter(|&p| p > 0)
                        .map(|p| (p, j.buffer_compress_chunk as usize)),
                    fixed: pattern,
                    dedupe: dedupe(j.dedupe_percentage),
                })
            } else if let Some(p) = pattern {
                // Reads land in the same buffers: a job that also reads must
                // put its pattern back before each write (fio does the same).
                (p.has_offset() || j.rw.reads() || j.refill_buffers).then_some(Refill::Pattern(p))
            } else if j.zero_buffers {
                (j.rw.reads() || j.refill_buffers).then_some(Refill::Zero)
            } else if j.refill_buffers {
                Some(Refill::Random {
                    compress: None,
                    fixed: None,
                    dedupe: dedupe(0),
                })
            } else {
                None
            };
        // fio: scramble unless asked not to or to zero the buffers, and
        // never on top of contents made for each write.
        let scramble = refill.is_none() && j.scramble_buffers.unwrap_or(!j.zero_buffers);
        (refill.is_some() || scramble).then_some(Fill {
            refill,
            scramble,
            rng: seed | 1,
            count: 0,
        })
    }

    /// What every slot holds before the first write.
    pub fn initial(j: &JobSpec, arena: &mut SlotArena) {
        if !j.rw.writes() {
            return;
        }
        if let Some(p) = &j.buffer_pattern {
            for s in 0..arena.nslots() {
                p.fill(arena.slot_mut(s), 0);
            }
        } else if !j.zero_buffers {
            arena.fill_random(j.randseed ^ 0xD10);
        }
        // zero_buffers: the mapping is zeroed.
    }

    #[inline]
    pub(super) fn before_write(&mut self, buf: &mut [u8], offset: u64) {
        self.count += 1;
        match &mut self.refill {
            None => {}
            Some(Refill::Pattern(p)) => p.fill(buf, offset),
            Some(Refill::Zero) => buf.fill(0),
            Some(Refill::Random {
                compress,
                fixed,
                dedupe,
            }) => {
                let seed = dedupe.seed(&mut self.rng);
                match compress {
                    None => fill_random(buf, seed),
                    Some((pct, chunk)) => {
                        let chunk = if *chunk == 0 { buf.len() } else { *chunk };
                        for (k, c) in buf.chunks_mut(chunk).enumerate() {
                            // The random head of each chunk, then the
                            // compressible tail.
                            let head = c.len() * (100 - *pct as usize) / 100;
                            fill_random(&mut c[..head], seed ^ mix(k as u64));
                            match fixed {
                                Some(p) => p.fill(&mut c[head..], offset),
                                None => c[head..].fill(0),
                            }
                        }
                    }
                }
            }
        }
        if self.scramble {
            self.scramble(buf, offset);
        }
    }

    /// Overwrite the first 16 bytes of every 512 with the sector's offset
    /// and this write's number, masked with random constants so they look
    /// like the rest (no runs of zeros): no two writes are identical
    /// (deduplication finds nothing), the rest of the data stays as it was,
    /// and the cost is two stores per sector.
    #[inline]
    fn scramble(&self, buf: &mut [u8], offset: u64) {
        let stamp = (self.count ^ mix(self.rng)).to_le_bytes();
        let mask = mix(!self.rng);
        for (i, sector) in buf.chunks_exact_mut(512).enumerate() {
            let off = offset + (i as u64) * 512;
            sector[..8].copy_from_slice(&(off ^ mask).to_le_bytes());
            sector[8..16].copy_from_slice(&stamp);
        }
    }
}

// ---------------------------------------------------------------- priorities

/// Chooses each I/O's priority (cmdprio_percentage / cmdprio_bssplit).
pub(super) struct PrioPicker {
    /// Per direction: (block size or 0 for any, percentage, ioprio value).
    rules: [Vec<(u64, u32, u16)>; 2],
    rng: u64,
}

impl PrioPicker {
    pub fn of(j: &JobSpec, seed: u64) -> Option<PrioPicker> {
        let c = &j.cmdprio;
        if !c.active() {
            return None;
        }
        let rules = [0, 1].map(|d| {
            let class = c.class[d].unwrap_or(sched::IOPRIO_CLASS_RT);
            if c.bssplit[d].is_empty() {
                vec![(0, c.percentage[d], sched::ioprio_value(class, c.level[d]))]
            } else {
                c.bssplit[d]
                    .iter()
                    .map(|&(bs, pct, cl, lv)| {
                        (
                            bs,
                            pct,
                            sched::ioprio_value(cl.unwrap_or(class), lv.unwrap_or(c.level[d])),
                        )
                    })
                    .collect()
            }
        });
        Some(PrioPicker {
            rules,
            rng: seed | 1,
        })
    }

    /// Entries of one block size share its I/Os: `64k/25/1/1:64k/75/3/2`
    /// gives a quarter of the 64 KiB I/Os one priority, the rest another.
    #[inline]
    pub(super) fn pick(&mut self, write: bool, len: u64) -> u16 {
        let roll = xorshift(&mut self.rng) % 100;
        let mut below = 0;
        for &(bs, pct, value) in &self.rules[write as usize] {
            if bs == 0 || bs == len {
                below += pct as u64;
                if roll < below {
                    return value;
                }
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::RwMode;
    use std::collections::HashSet;

    fn writer_job() -> JobSpec {
        JobSpec {
            rw: RwMode::Write,
            ..JobSpec::default()
        }
    }

    #[test]
    fn scramble_is_fio_default_and_off_for_zero_buffers() {
        let j = writer_job();
        let mut f = Fill::of(&j, 1).expect("scramble by default");
        assert!(f.scramble && f.refill.is_none());
        let mut a = vec![7u8; 4096];
        let mut b = vec![7u8; 4096];
        f.before_write(&mut a, 0);
        f.before_write(&mut b, 0);
        assert_ne!(a, b, "two writes of one buffer differ");
        let changed = a.iter().filter(|&&x| x != 7).count();
        assert!(changed <= 8 * 16, "a light touch: {changed} bytes");
        let z = JobSpec {
            zero_buffers: true,
            ..writer_job()
        };
        assert!(Fill::of(&z, 1).is_none(), "zero_buffers: no per-write work");
        let zs = JobSpec {
            zero_buffers: true,
            scramble_buffers: Some(true),
            ..writer_job()
        };
        assert!(Fill::of(&zs, 1).unwrap().scramble);
        let reads = JobSpec {
            rw: RwMode::Read,
            ..JobSpec::default()
        };
        assert!(Fill::of(&reads, 1).is_none());
    }

    #[test]
    fn compress_and_dedupe_fill() {
        let j = JobSpec {
            buffer_compress_percentage: Some(75),
            buffer_compress_chunk: 1024,
            ..writer_job()
        };
        let mut f = Fill::of(&j, 3).unwrap();
        let mut b = vec![1u8; 8192];
        f.before_write(&mut b, 0);
        for c in b.chunks(1024) {
            assert!(c[256..].iter().all(|&x| x == 0), "tail zero");
            assert!(
                c[..256].iter().filter(|&&x| x == 0).count() < 16,
                "head random"
            );
        }
        let d = JobSpec {
            dedupe_percentage: 50,
            ..writer_job()
        };
        let mut f = Fill::of(&d, 3).unwrap();
        let mut seen = HashSet::new();
        for _ in 0..1000 {
            let mut b = vec![0u8; 512];
            f.before_write(&mut b, 0);
            seen.insert(b);
        }
        assert!(
            (400..600).contains(&seen.len()),
            "{} unique of 1000",
            seen.len()
        );
    }

    #[test]
    fn dedupe_working_set_and_global_share_buffers() {
        let one = |seed: u64, global: bool| {
            let j = JobSpec {
                dedupe_percentage: 50,
                dedupe_working_set: true,
                dedupe_working_set_percentage: 10,
                dedupe_global: global,
                size: Some(crate::job::units::SizeOrPct::Bytes(400 * 4096)),
                ..writer_job()
            };
            let mut f = Fill::of(&j, seed).unwrap();
            (0..2000)
                .map(|_| {
                    let mut b = vec![0u8; 64];
                    f.before_write(&mut b, 0);
                    b
                })
                .collect::<Vec<_>>()
        };
        // 10 % of 400 blocks: repeats come from 40 buffers.
        let a = one(1, false);
        let mut count = std::collections::HashMap::new();
        for b in &a {
            *count.entry(b.clone()).or_insert(0) += 1;
        }
        let repeated = count.values().filter(|&&n| n > 1).count();
        assert!((30..=40).contains(&repeated), "{repeated} buffers repeated");
        // Two jobs: their repeats are the same buffers only with dedupe_global.
        let shared = |x: &[Vec<u8>], y: &[Vec<u8>]| {
            let xs: HashSet<&Vec<u8>> = x.iter().collect();
            y.iter().filter(|b| xs.contains(b)).count()
        };
        assert_eq!(shared(&one(1, false), &one(2, false)), 0);
        assert!(shared(&one(1, true), &one(2, true)) > 500);
    }

    #[test]
    fn cmdprio_picks_the_share_asked() {
        let mut j = writer_job();
        j.cmdprio.percentage = [0, 30];
        j.cmdprio.level = [0, 5];
        let mut p = PrioPicker::of(&j, 9).unwrap();
        assert!((0..100).all(|_| p.pick(false, 4096) == 0));
        let hi = (0..10_000).filter(|_| p.pick(true, 4096) != 0).count();
        assert!((2700..3300).contains(&hi), "{hi}");
        assert_eq!(
            (0..100).map(|_| p.pick(true, 4096)).max(),
            Some(sched::ioprio_value(1, 5))
        );
        j.cmdprio.bssplit = [vec![], vec![(8192, 100, Some(2), Some(1))]];
        let mut p = PrioPicker::of(&j, 9).unwrap();
        assert_eq!(p.pick(true, 8192), sched::ioprio_value(2, 1));
        assert_eq!(
            p.pick(true, 4096),
            0,
            "sizes not listed keep the thread's priority"
        );
    }
}
