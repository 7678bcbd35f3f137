//! Run phases and reporting groups: two numberings fio keeps apart.
//!
//! A **phase** is the set of jobs that start together: a `stonewall` job
//! (and a `wait_for` job whose waitee would run beside it) waits for every
//! job before it, so it opens the next phase. A **reporting group** is
//! fio's `groupid`: `stonewall` or `new_group` opens the next one, and
//! `group_reporting`, the JSON's `groupid` and `exit_what=group` follow it.
//! `new_group` alone does not wait: its jobs run beside the jobs before it.
//! Since `stonewall` opens both, a reporting group never spans phases,
//! except across a `wait_for` boundary (fio keeps the waiter's group).

use crate::job::JobSpec;

/// Where one job runs and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The run phase (0-based): its jobs start together.
    pub phase: u32,
    /// fio's `groupid`.
    pub groupid: u32,
}

/// Each job's phase and reporting group, in job-file order. fio numbers
/// groups from 0 and bumps the number at a `stonewall` or `new_group` job
/// that has jobs before it (so a first job with `new_group=1` is group 0).
pub fn place(jobs: &[JobSpec]) -> Vec<Placement> {
    let mut out: Vec<Placement> = Vec::with_capacity(jobs.len());
    for j in jobs {
        let p = match out.last() {
            None => Placement {
                phase: 0,
                groupid: 0,
            },
            Some(prev) => Placement {
                phase: prev.phase + u32::from(j.stonewall || j.wait_phase),
                groupid: prev.groupid + u32::from(j.stonewall || j.new_group),
            },
        };
        out.push(p);
    }
    out
}

/// The number of phases of `placed` (0 for no jobs).
pub(super) fn phase_count(placed: &[Placement]) -> u32 {
    placed.iter().map(|p| p.phase + 1).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(stonewall: bool, new_group: bool, wait_phase: bool) -> JobSpec {
        JobSpec {
            stonewall,
            new_group,
            wait_phase,
            ..JobSpec::default()
        }
    }

    fn pairs(jobs: &[JobSpec]) -> Vec<(u32, u32)> {
        place(jobs).iter().map(|p| (p.phase, p.groupid)).collect()
    }

    #[test]
    fn new_group_reports_apart_but_runs_beside() {
        // fio's exitwhat.fio: slow1 (new_group, first), fast1 (new_group),
        // slow2 (stonewall + new_group), fast2, runsnever.
        let v = [
            job(false, true, false),
            job(false, true, false),
            job(true, true, false),
            job(false, false, false),
            job(false, false, false),
        ];
        assert_eq!(pairs(&v), vec![(0, 0), (0, 1), (1, 2), (1, 2), (1, 2)]);
        assert_eq!(phase_count(&place(&v)), 2);
    }

    #[test]
    fn stonewall_opens_both_and_wait_for_only_a_phase() {
        let v = [
            job(false, false, false),
            job(true, false, false),
            job(false, false, true),
            job(false, true, false),
        ];
        assert_eq!(pairs(&v), vec![(0, 0), (1, 1), (2, 1), (2, 2)]);
        assert!(place(&[]).is_empty());
        assert_eq!(phase_count(&[]), 0);
    }
}
