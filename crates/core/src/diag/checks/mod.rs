//! The table of checks that both `doctor` (on one target, before any
//! workload) and `diagnose` (after a run) walk.
//!
//! One file per check. A check has a name (the doctor's checklist line) and
//! up to two sides:
//! - `doctor`: look at the target as it is now ([`DoctorCtx`]) and return one
//!   checklist line, or `None` when the check does not apply to this target;
//! - `after_run`: look at a finished run and what the hooks recorded
//!   ([`RunCtx`]) and return the findings.
//!
//! Adding a check: a file here with its `CHECK` constant, and its name in
//! the `checks!` list below. The order of the table is the order of the checklist and of
//! the run's findings within a severity.

use std::path::Path;

use super::checklist::{Check, DoctorReport};
use super::env::TargetEnv;
use super::findings::Finding;
use super::hooks::DiagHooks;
use crate::results::JobSummary;
use crate::runner::RunResult;

/// What a doctor-side check sees.
pub struct DoctorCtx<'a> {
    pub path: &'a Path,
    /// The path as the user gave it, for the texts.
    pub name: String,
    pub target: TargetEnv,
    /// The target's size in bytes (0 when unknown).
    pub size: u64,
    /// The report being built: checks may record what they measured in it
    /// (page-cache residency, file layout, zram contents).
    pub report: &'a mut DoctorReport,
    /// Set by a check after which nothing else can be checked (no target).
    pub stop: bool,
}

/// What a run-side check sees.
pub struct RunCtx<'a> {
    pub result: &'a RunResult,
    pub hooks: &'a DiagHooks,
    /// The run's per-job (or per-reported-group) summaries.
    pub sums: &'a [JobSummary],
}

/// One check: its name and what it does before and after a run.
pub struct CheckDef {
    pub name: &'static str,
    pub doctor: Option<fn(&mut DoctorCtx) -> Option<Check>>,
    pub after_run: Option<fn(&RunCtx) -> Vec<Finding>>,
}

/// Declares the check modules and [`CHECKS`], in the order given.
macro_rules! checks {
    ($($(#[$a:meta])* $m:ident,)*) => {
        $($(#[$a])* mod $m;)*

        /// Every check, in checklist order.
        pub const CHECKS: &[&CheckDef] = &[$($(#[$a])* &$m::CHECK,)*];
    };
}

/// Walk the doctor side of every check.
pub fn doctor_all(ctx: &mut DoctorCtx) {
    for c in CHECKS {
        let Some(f) = c.doctor else { continue };
        if let Some(check) = f(ctx) {
            ctx.report.checks.push(check);
        }
        if ctx.stop {
            break;
        }
    }
}

/// Walk the run side of every check; each finding once, in table order.
pub fn after_run_all(ctx: &RunCtx) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for c in CHECKS {
        let Some(f) = c.after_run else { continue };
        for x in f(ctx) {
            if !out.contains(&x) {
                out.push(x);
            }
        }
    }
    out
}

checks! {
    target,
    direct_io,
    really_direct,
    job_options,
    page_cache,
    device_sharing,
    write_amplification,
    written_data,
    fragmentation,
    trials,
    cpu,
    governor,
    polled_io,
    other_openers,
    auto_trials,
    // docs/ARCHITECTURE.md's "Add a check" followed to the letter by a
    // test-only check (it plants the test-only finding of "Add a finding").
    #[cfg(test)]
    example_check,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_check_does_something() {
        let mut names: Vec<&str> = CHECKS.iter().map(|c| c.name).collect();
        assert!(CHECKS
            .iter()
            .all(|c| c.doctor.is_some() || c.after_run.is_some()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CHECKS.len());
    }
}
