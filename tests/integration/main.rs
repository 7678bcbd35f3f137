//! One integration-test binary driving the `dioscope` executable, split by topic.

mod common;
/// The sources' `.rs` files without their test code (one definition with
/// crates/core's source-reading tests).
#[path = "../../crates/core/tests/common/mod.rs"]
mod source_scan;

mod amplification;
mod blockdev;
mod buffers;
mod citizen;
mod cli;
mod conventions;
mod diag;
mod engines;
mod engines2;
mod engines_meta;
mod experiments;
mod faults;
mod fio342;
mod fio_readers;
mod fio_text;
mod fio_tscripts_fixes;
mod groups;
mod jobfile;
mod json;
mod kernflags;
mod leftovers;
mod options;
mod pacing;
mod pacing2;
mod peak;
mod profile;
mod random_offsets;
mod report;
mod report_logs;
mod results;
mod safety2;
mod safety3;
mod safety3_private;
mod seen;
mod signals;
mod status_interval;
mod verdicts;
mod verify;
mod workload;
mod workload2;
