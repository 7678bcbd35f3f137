//! `--output-format=benchmark-bigger` (see [`super::benchmark`]).
pub use super::benchmark::RUN_BIGGER as FORMAT;
