//! dircreate: fio's engine that times `mkdir` of each of the job's names
//! (meta.rs).

use super::meta::{meta_def, Op};
use super::EngineDef;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["dircreate"];
    const HELP: &'static str = "no data moves: each I/O is mkdir(2) of one of the job's names \
         (nrfiles/filename_format), which must not exist yet; one operation per name";
    meta_def!(Op::DirCreate);
}
