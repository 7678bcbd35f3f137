//! filecreate: fio's engine that times file creation: each I/O is
//! `open(O_CREAT|O_RDWR)` and `close` of one of the job's names (meta.rs).

use super::meta::{meta_def, Op};
use super::EngineDef;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["filecreate"];
    const HELP: &'static str = "no data moves: each I/O creates one of the job's files \
         (open O_CREAT, close) and times it; nrfiles/filename_format name the files, one \
         operation per file per pass";
    meta_def!(Op::FileCreate);
}
