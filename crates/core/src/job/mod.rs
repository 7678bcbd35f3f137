//! Jobs: the option table, fio's units, job files, command lines and fio's
//! invocation flags.

pub mod compat;
pub mod created;
pub mod debug;
/// fio's invocation flags that are not job options (`--output`, `--section`, …).
pub mod flags;
pub mod input;
pub mod options;
pub mod parse;
pub mod spec;
pub mod units;

#[cfg(test)]
mod audit;

pub use parse::{parse_args, parse_job_text, ParseError};
pub use spec::{
    BlockSizes, EngineKind, Eta, GlobalSettings, JobSpec, Plan, RandomDist, RankStonewall, RwMode,
};
