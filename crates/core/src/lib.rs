//! dioscope-core: everything dioscope does, as a library the binary drives.
//!
//! - [`job`]: the option table, units, job files and command lines → a [`job::Plan`].
//! - [`targets`]: opening targets once, laying out files, alignment checks.
//! - [`engines`]: one file per I/O engine behind the [`engines::Engine`] trait.
//! - [`runner`]: workers, offsets, trials, progress and signals.
//! - [`stats`]: latency histograms and summaries.
//! - [`report`]: the human summary and fio-compatible JSON.
//! - [`safety`]: the guard that refuses to overwrite devices in use or holding data.

// Errors carry the option, value, origin and an example: large, but built only
// on the cold path before any I/O.
#![allow(clippy::result_large_err)]

pub mod diag;
pub mod engines;
pub mod job;
pub mod outfile;
pub mod profile;
pub mod report;
pub mod runner;
pub mod safety;
pub mod stats;
pub mod targets;
pub mod verify;

/// The destructive-write guard the runner calls before opening a block
/// device for writing: `Err` carries the full message (which check fired and
/// how to override it).
pub fn safety_check(
    dev: &std::path::Path,
    allow: bool,
    destroy_data_on: &[String],
) -> Result<(), String> {
    let guard = safety::WriteGuard {
        allow_mounted_write: allow,
        destroy_data_on,
    };
    safety::check_block_device_write(dev, &guard).map_err(|e| e.to_string())
}
