//! Block sizes: [`BsPicker`] chooses each I/O's size in one direction
//! from the job's `bs`, `bsrange` or `bssplit`, allocation-free.

use super::distributions::Rng;
use crate::job::BlockSizes;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
