//! Jobs: the option table, fio's units, job files and command lines.

pub mod created;
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
