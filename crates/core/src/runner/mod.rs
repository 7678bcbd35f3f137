//! The runner: from a [`Plan`] to a [`RunResult`].
//!
//! Stage one (`resolve.rs`) resolves every job against its targets (paths,
//! sizes, regions, alignment) without doing any I/O; any error there exits
//! before a byte is written. Stage two (`execute.rs`) runs the phases in
//! order (a `stonewall` starts one; `new_group` only starts a reporting
//! group: `plan.rs`); the jobs of a phase run concurrently, each clone on
//! its own thread (`start.rs`) with its own engine, slots and statistics
//! (`worker/`, the hot path). A phase is repeated for its trials
//! (`trial.rs`). Workers merge nothing while running: the runner merges
//! their results when they end. Time and the stop signal come through one
//! seam (`clock.rs`), so unit tests drive stage two with the null engine
//! and a fake clock.
//!
//! [`Plan`]: crate::job::Plan

pub mod block_sizes;
pub mod buffers;
pub mod clock;
pub mod distributions;
mod execute;
pub mod hint;
mod hooks;
pub mod iolog;
mod kernflags;
pub mod latency_target;
pub mod logs;
mod offload;
pub mod offsets;
pub mod pacing;
mod paths;
pub mod plan;
pub mod preflight;
pub mod randgen;
pub mod resolve;
mod result;
pub mod sprandom;
mod start;
pub mod status;
pub mod steadystate;
pub mod stepped;
mod thread_setup;
mod trial;
mod verifying;
pub mod watch;
pub mod worker;

pub use crate::results::measure::{TrialEnv, TrialJob};
pub use execute::execute;
pub use hooks::{Chain, NoHooks, TrialHooks};
pub use paths::{created_files, input_paths, replay_log, target_paths};
pub use resolve::prepare;
pub use result::{
    FileUse, JobRun, PhaseRun, ResolvedJob, RunOptions, RunResult, SetupError, WorkerSetupError,
};
pub use start::Gate;
pub use status::{merge_snapshots, Snapshots};
pub use worker::{
    merge_ticks, DirStats, IoErrorInfo, Progress, QueueStats, Tick, WorkerPlan, WorkerResult,
};

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod readback_tests;
