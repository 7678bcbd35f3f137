//! filestat: fio's engine that times name lookups: each I/O is a
//! `stat`/`lstat`/`statx` (`stat_type`) of one of the job's files, laid
//! out before the run (meta.rs).

use super::meta::{meta_def, Op};
use super::EngineDef;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["filestat"];
    const HELP: &'static str = "no data moves: each I/O is stat(2), lstat(2) or statx(2) \
         (stat_type) of one of the job's files, laid out before the run; one operation per \
         file per pass";
    const OPTIONS: &'static [&'static str] = &["stat_type"];
    meta_def!(Op::FileStat);
}
