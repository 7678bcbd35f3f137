//! Test fixtures shared by the runner's unit tests: jobs written as the
//! command line would give them, so no test spells out a plan's fields.

use crate::job::{JobSpec, Plan};

/// The plan of `--name=t --ioengine=libaio` followed by `args` (an
/// asynchronous engine, so `iodepth` is kept; no file is named, so the
/// null-engine tests and the plan constructor see a virtual region).
pub fn plan(args: &[&str]) -> Plan {
    let mut all = vec!["--name=t".to_string(), "--ioengine=libaio".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    crate::job::parse_args(&all).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The one job of [`plan`].
pub fn job(args: &[&str]) -> JobSpec {
    plan(args).jobs.remove(0)
}
