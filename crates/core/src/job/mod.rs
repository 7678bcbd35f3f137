//! Jobs: the option table, fio's units, job files and command lines.

pub mod options;
pub mod parse;
pub mod spec;
pub mod units;

pub use parse::{parse_args, parse_job_text, ParseError};
pub use spec::{BlockSizes, EngineKind, GlobalSettings, JobSpec, Plan, RandomDist, RwMode};
