//! Reports: one file per format. Each renders the per-job summaries of
//! [`crate::results`] (trials merged, per-trial metrics kept).

pub mod json;
pub mod text;
