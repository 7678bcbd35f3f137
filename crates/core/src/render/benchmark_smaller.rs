//! `--output-format=benchmark-smaller` (see [`super::benchmark`]).
pub use super::benchmark::RUN_SMALLER as FORMAT;
