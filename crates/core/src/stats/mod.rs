//! Statistics: latency histograms, per-direction counters, CPU accounting and
//! summaries over trials.

pub mod cpu;
pub mod histogram;
pub mod signed_rank;
pub mod significance;
pub mod summary;
pub mod trials;

pub use histogram::Histogram;
pub use summary::Summary;
