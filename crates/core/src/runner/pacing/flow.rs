//! `flow`: the one exception to "workers share nothing". The jobs of a
//! trial with the same `flow_id` share one I/O counter ([`FlowShare`], a few
//! atomics), as fio's jobs do, so that each job's share of the I/O follows
//! its weight. Only workers of jobs that set `flow` touch it. A flow whose
//! weights have both signs is fio's older, balanced form (the counter moves
//! by each I/O's weight and is kept near 0, so `flow=-8` against `flow=1`
//! is 1 I/O against 8); fio 3.x still reads those job files (its own test
//! t0011 expects the 1:8 split).
//!
//! [`Flows`] makes a trial's counters before any worker starts; each
//! worker's [`FlowGate`] asks its counter before each I/O, and takes its
//! I/Os and weight out of the flow when it ends.

use super::plan::FlowPlan;
use crate::job::JobSpec;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// The flows of one trial: one shared counter per `flow_id` used by its jobs.
#[derive(Debug, Default)]
pub struct Flows {
    shares: Vec<(u32, Arc<FlowShare>)>,
}

impl Flows {
    /// `jobs`: the trial's jobs with their clone counts. Every member's
    /// weight is in its flow before any worker starts.
    pub fn for_trial<'a>(jobs: impl Iterator<Item = (&'a JobSpec, usize)>) -> Flows {
        // Per flow_id: summed |weight|, and how many workers on each side.
        let mut flows: Vec<(u32, u64, [u64; 2])> = Vec::new();
        for (j, clones) in jobs.filter(|(j, _)| j.flow != 0) {
            let w = u64::from(j.flow.unsigned_abs()) * clones as u64;
            let side = usize::from(j.flow < 0);
            let i = match flows.iter().position(|(id, _, _)| *id == j.flow_id) {
                Some(i) => i,
                None => {
                    flows.push((j.flow_id, 0, [0; 2]));
                    flows.len() - 1
                }
            };
            flows[i].1 += w;
            flows[i].2[side] += clones as u64;
        }
        Flows {
            shares: flows
                .into_iter()
                .map(|(id, w, sides)| {
                    let share = if sides[0] > 0 && sides[1] > 0 {
                        FlowShare::balanced(sides)
                    } else {
                        FlowShare::new(w)
                    };
                    (id, share)
                })
                .collect(),
        }
    }

    /// The flow membership of one worker of job `j` (None: not in a flow).
    pub fn member(&self, j: &JobSpec) -> Option<FlowPlan> {
        if j.flow == 0 {
            return None;
        }
        let (_, share) = self.shares.iter().find(|(id, _)| *id == j.flow_id)?;
        Some(FlowPlan {
            share: share.clone(),
            weight: i64::from(j.flow),
            sleep_ns: j.flow_sleep_us * 1000,
        })
    }
}

/// The I/O counter the workers of one `flow_id` share in a trial.
#[derive(Debug)]
pub struct FlowShare {
    ios: AtomicU64,
    weight: AtomicU64,
    /// Balanced form only: the signed counter, and the workers still
    /// running on the positive and the negative side.
    balanced: bool,
    balance: AtomicI64,
    sides: [AtomicU64; 2],
}

/// How far a balanced flow's counter may lean to one side before that
/// side waits (fio's old `flow_watermark` default).
const FLOW_WATERMARK: i64 = 1024;

impl FlowShare {
    /// A flow whose members' weights add up to `weight`; every member is
    /// counted from the start, so no one runs ahead before the others begin.
    pub fn new(weight: u64) -> Arc<FlowShare> {
        Arc::new(FlowShare {
            // fio starts the shared count at 1: the first I/O of each job passes.
            ios: AtomicU64::new(1),
            weight: AtomicU64::new(weight),
            balanced: false,
            balance: AtomicI64::new(0),
            sides: [AtomicU64::new(0), AtomicU64::new(0)],
        })
    }

    /// A balanced flow with `sides` workers of positive and negative weight.
    pub fn balanced(sides: [u64; 2]) -> Arc<FlowShare> {
        Arc::new(FlowShare {
            ios: AtomicU64::new(1),
            weight: AtomicU64::new(0),
            balanced: true,
            balance: AtomicI64::new(0),
            sides: sides.map(AtomicU64::new),
        })
    }
}

/// One worker's membership in a flow. When the worker ends, its I/Os and
/// weight leave the flow, so the jobs still running are not held back by
/// one that is done.
#[derive(Debug)]
pub(super) struct FlowGate {
    pub(super) share: Arc<FlowShare>,
    pub(super) weight: i64,
    pub(super) mine: u64,
    pub(super) sleep_ns: u64,
}

impl FlowGate {
    /// May this worker issue one more I/O? (Proportional: its share of the
    /// flow's I/Os is at most its share of the weight. Balanced: the
    /// counter does not already lean past the watermark to its side, or
    /// nobody is left on the other side.)
    #[inline(always)]
    pub(super) fn pass(&mut self) -> bool {
        let s = &*self.share;
        if s.balanced {
            let c = s.balance.load(Ordering::Relaxed);
            let (ahead, other) = if self.weight > 0 {
                (c > FLOW_WATERMARK, &s.sides[1])
            } else {
                (c < -FLOW_WATERMARK, &s.sides[0])
            };
            if ahead && other.load(Ordering::Relaxed) > 0 {
                return false;
            }
            s.balance.fetch_add(self.weight, Ordering::Relaxed);
            self.mine += 1;
            return true;
        }
        let all = s.ios.load(Ordering::Relaxed) as u128;
        let weight = s.weight.load(Ordering::Relaxed) as u128;
        if self.mine as u128 * weight > self.weight.unsigned_abs() as u128 * all {
            return false;
        }
        s.ios.fetch_add(1, Ordering::Relaxed);
        self.mine += 1;
        true
    }
}

impl Drop for FlowGate {
    fn drop(&mut self) {
        let s = &*self.share;
        if s.balanced {
            s.sides[usize::from(self.weight < 0)].fetch_sub(1, Ordering::Relaxed);
            return;
        }
        s.ios.fetch_sub(self.mine, Ordering::Relaxed);
        s.weight
            .fetch_sub(self.weight.unsigned_abs(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::plan;
    use super::super::{PacePlan, Pacer};
    use super::*;

    /// A pacer in `share`'s flow with `weight`.
    fn flow_pacer(share: &Arc<FlowShare>, weight: i64) -> Pacer {
        let p = PacePlan {
            flow: Some(FlowPlan {
                share: share.clone(),
                weight,
                sleep_ns: 0,
            }),
            ..plan()
        };
        Pacer::new(&p, 0)
    }

    /// `rounds` turns in which each pacer asks for one I/O: the I/Os each
    /// was admitted.
    fn admit_side_by_side(a: &mut Pacer, b: &mut Pacer, rounds: u64) -> [u64; 2] {
        let mut n = [0u64; 2];
        for i in 0..rounds {
            for (k, pc) in [&mut *a, &mut *b].into_iter().enumerate() {
                if pc.admit(false, i, 0, true).is_some() {
                    n[k] += 1;
                } else {
                    pc.woke(i, i);
                }
            }
        }
        n
    }

    #[test]
    fn flow_shares_follow_the_weights() {
        let share = FlowShare::new(1 + 8);
        let (mut a, mut b) = (flow_pacer(&share, 1), flow_pacer(&share, 8));
        let mut n = admit_side_by_side(&mut a, &mut b, 90_000);
        let ratio = n[1] as f64 / n[0] as f64;
        assert!((ratio - 8.0).abs() < 0.1, "{n:?}");
        // When one member ends, the other is no longer held back.
        drop(a);
        let before = n[1];
        for i in 0..1000 {
            if b.admit(false, i, 0, true).is_some() {
                n[1] += 1;
            }
        }
        assert_eq!(n[1] - before, 1000);
    }

    #[test]
    fn a_flow_with_both_signs_is_balanced() {
        // fio's t0011: flow=-8 against flow=1 is 1 I/O against 8.
        let share = FlowShare::balanced([1, 1]);
        let (mut a, mut b) = (flow_pacer(&share, -8), flow_pacer(&share, 1));
        let mut n = admit_side_by_side(&mut a, &mut b, 90_000);
        let ratio = n[1] as f64 / n[0] as f64;
        assert!((ratio - 8.0).abs() < 0.1, "{n:?}");
        // Once the negative side is done, the positive side runs free.
        drop(a);
        let before = n[1];
        for i in 0..5000 {
            if b.admit(false, i, 0, true).is_some() {
                n[1] += 1;
            }
        }
        assert_eq!(n[1] - before, 5000);
    }

    #[test]
    fn flows_pick_their_form_from_the_signs() {
        let job = |w: i32, id: u32| JobSpec {
            flow: w,
            flow_id: id,
            ..Default::default()
        };
        let jobs = [job(2, 1), job(-2, 1), job(3, 2), job(1, 2)];
        let flows = Flows::for_trial(jobs.iter().map(|j| (j, 1)));
        assert!(flows.member(&jobs[0]).unwrap().share.balanced);
        assert_eq!(flows.member(&jobs[1]).unwrap().weight, -2);
        let p = flows.member(&jobs[2]).unwrap();
        assert!(!p.share.balanced);
        assert_eq!(p.share.weight.load(Ordering::Relaxed), 4);
    }
}
