//! One integration-test binary driving the `dioscope` executable, split by topic.

mod common;

mod blockdev;
mod cli;
mod engines;
mod faults;
mod jobfile;
mod json;
mod signals;
