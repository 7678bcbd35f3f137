//! Diagnostics: what distorts direct-I/O measurements, found before, during
//! and after a run, each reported as a [`Finding`] that says what to do.
//!
//! One module per source of findings:
//! - [`findings`]: the [`Finding`] enum; one file per finding with its
//!   fields, severity and text.
//! - [`checks`]: the one table of checks that `doctor` and `diagnose` walk.
//! - [`device`]: the block devices under a target and their `/sys/block/*/stat`
//!   deltas (requests per I/O, request size, merges, utilisation).
//! - [`mounts`]: /proc/self/mountinfo (below `device` and `env`).
//! - [`env`]: kernel, CPU, memory, file system, device and queue limits.
//! - [`pagecache`]: page-cache pages of the target; dropping them.
//! - [`sparse`]: holes, unwritten extents, fragmentation, zram contents.
//! - [`fs`]: targets where O_DIRECT is silently buffered.
//! - [`job`]: a job against its target (alignment, direct=0, hipri).
//! - [`consistency`]: trials and series (outliers, bimodality, drift) and
//!   the tool's own CPU use.
//! - [`doctor`]: all workload-free checks as a checklist.
//! - [`hooks`]: the runner's trial hooks that drop the page cache and record
//!   pages, openers and device counters per trial.
//! - [`stage_findings`]: what `--stages` measured, in the findings (the
//!   cost of completion delivery under CPU contention, io-wq punts).
//! - [`amplification`]: device bytes ÷ job bytes per trial and run.
//! - [`run`]: a finished run and what the hooks saw → findings, the JSON
//!   `"dioscope"` entries and fio's `disk_util`.
//!
//! Other processes holding the target open are found by `crate::safety`;
//! its result becomes [`Finding::OtherOpeners`].

pub mod amplification;
pub mod checklist;
pub mod checks;
pub mod consistency;
pub mod device;
pub mod doctor;
pub mod env;
pub mod findings;
pub mod fs;
pub mod hooks;
pub mod job;
pub mod mounts;
pub mod pagecache;
pub mod peak;
pub mod procs;
pub mod run;
pub mod sharing;
pub mod sparse;
pub mod stage_findings;

#[cfg(test)]
mod root_tests;

pub use doctor::{doctor, Check, DoctorReport, Status};
pub use env::Environment;
pub use findings::{BufferedReason, Finding, Opener, Phase, Severity};
pub use hooks::DiagHooks;
pub use run::{diagnose, RunDiagnosis};
