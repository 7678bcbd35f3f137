//! A distributed run's section (`"dioscope": {"ranks": …}`): the
//! aggregate's windows (first start → last end, first start → first done)
//! and every rank's own figures, windows and findings with its host. The
//! jobs at the top of the document are the aggregate; this section keeps
//! the per-rank detail (docs/DISTRIBUTED.md). Plain data: readable without
//! the `mpi` feature.

use serde::{Deserialize, Serialize};

/// The key under `"dioscope"`.
pub const KEY: &str = "ranks";

/// One rank's measured window of one trial. Times are wall-clock
/// nanoseconds since the Unix epoch (compare across hosts only as well as
/// their clocks agree).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub group: u32,
    pub trial: u32,
    /// The measured part began (after the start barrier and the ramp).
    pub start_ns: u64,
    /// This rank's workers had all finished.
    pub done_ns: u64,
    /// The trial's measurement ended on this rank.
    pub end_ns: u64,
    /// Measured I/Os and bytes of the trial on this rank.
    pub ios: u64,
    pub bytes: u64,
    /// I/Os and bytes this rank had done when the first rank was done
    /// (stonewalling; otherwise equal to `ios`, `bytes`).
    pub ios_first_done: u64,
    pub bytes_first_done: u64,
}

/// The whole run's figures for one trial of one group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregateTrial {
    pub group: u32,
    pub trial: u32,
    /// First start → last end.
    pub window_ns: u64,
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes: f64,
    /// First start → first rank done, and what every rank had done by then.
    pub first_done_ns: u64,
    pub ios_first_done: u64,
    pub bytes_first_done: u64,
    pub iops_first_done: f64,
    pub bw_bytes_first_done: f64,
    /// Last start − first start: how well the start barrier aligned the ranks.
    pub start_spread_ns: u64,
    /// Last end − first done: how long the slowest rank trailed the fastest.
    pub end_spread_ns: u64,
}

/// One rank's own result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankDoc {
    pub rank: u32,
    pub host: String,
    pub exit_code: i32,
    pub jobs: Vec<RankJob>,
    pub windows: Vec<Window>,
    /// This rank's findings, as in `"dioscope": {"findings": …}`.
    pub findings: serde_json::Value,
}

/// One job's figures on one rank (all its trials).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankJob {
    pub jobname: String,
    pub read_ios: u64,
    pub read_bytes: u64,
    pub read_iops: f64,
    pub read_bw_bytes: u64,
    pub write_ios: u64,
    pub write_bytes: u64,
    pub write_iops: f64,
    pub write_bw_bytes: u64,
}

/// The section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ranks {
    pub size: u32,
    /// `--rank_stonewall`: off, stop or wearout.
    pub stonewall: String,
    pub aggregate: Vec<AggregateTrial>,
    pub ranks: Vec<RankDoc>,
}
