//! dioscope-core: everything dioscope does, as a library the binary drives.
//!
//! - [`job`]: the option table, units, job files and command lines → a [`job::Plan`].
//! - [`target`]: opening targets once, laying out files, alignment checks.
//! - [`engines`]: one file per I/O engine behind the [`engines::Engine`] trait.
//! - [`runner`]: workers, offsets, trials, progress and signals.
//! - [`stats`]: latency histograms and summaries.
//! - [`report`]: the human summary and fio-compatible JSON.

pub mod diag;
pub mod engines;
pub mod job;
pub mod report;
pub mod runner;
pub mod stats;
pub mod target;
