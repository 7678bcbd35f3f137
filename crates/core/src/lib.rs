//! dioscope-core: everything dioscope does, as a library the binary drives.
//!
//! - [`commands`]: run, doctor, options: one file each, one table, the usage.
//! - [`job`]: the option table, units, job files and command lines → a [`job::Plan`].
//! - [`targets`]: opening targets once, laying out files, alignment checks.
//! - [`engines`]: one file per I/O engine behind the [`engines::Engine`] trait.
//! - [`runner`]: workers, offsets, trials, progress and signals.
//! - [`results`]: the result layer (raw measurements, aggregation, units).
//! - [`stats`]: latency histograms and summaries.
//! - [`render`]: one renderer per output format, over the typed result.
//! - [`experiment`]: comparisons with significance and sweeps over option grids.
//! - [`safety`]: the guard that refuses to overwrite devices in use or holding data.

// Errors carry the option, value, origin and an example: large, but built only
// on the cold path before any I/O.
#![allow(clippy::result_large_err)]
// All unsafe code lives in dioscope-sys, behind safe types.
#![forbid(unsafe_code)]

pub mod commands;
pub mod console;
pub mod diag;
#[cfg(feature = "mpi")]
pub mod dist;
pub mod engines;
pub mod experiment;
pub mod infile;
pub mod job;
pub mod osstr;
pub mod outfile;
pub mod pipeline;
pub mod profile;
pub mod recipes;
pub mod render;
pub mod results;
pub mod runner;
pub mod safety;
pub mod scratch;
pub mod stats;
pub mod svg;
pub mod targets;
pub mod verify;
