//! The result layer: what a run measured, in the forms everything above
//! reads. It sits below the runner, the renderers and the diagnosis and
//! imports none of them (only `stats` and `dioscope_sys` data types).
//!
//! - [`measure`]: the raw measurements the runner fills (per-direction
//!   counters and histograms, ticks, a job's and a group's trial).
//! - [`summary`]: aggregation — trials and `group_reporting` jobs merged
//!   into [`JobSummary`], per-trial [`TrialMetrics`] and their statistics.
//! - [`model`]: the typed result document ([`RunDoc`]): fio's JSON plus
//!   dioscope's section, written and read back (also fio's own JSON).
//! - [`series`]: per-interval time series (bounded memory), per trial.
//! - [`units`]: the one place numbers become human text.

pub mod amplification;
pub mod devices;
pub mod doctor;
pub mod environment;
pub mod measure;
pub mod model;
pub mod ordered;
pub mod pagecache;
pub mod profile;
pub mod ranks;
pub mod series;
pub mod stages;
pub mod summary;
pub mod targets;
pub mod units;
pub mod verify;

pub use model::{RunDoc, SCHEMA};
pub use ordered::OrderedMap;
pub use series::{DirSeries, TrialSeries};
pub use summary::{summarize, JobInput, JobSummary, PhaseInput, TrialMetrics, TrialStats};
pub use units::{ctime, human_bytes, human_count, human_ns, human_rate};
