//! filedelete: fio's engine that times unlink: each I/O removes one of the
//! job's files, which the run lays out itself first (meta.rs: it never
//! deletes a file it did not make).

use super::meta::{meta_def, Op};
use super::EngineDef;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["filedelete"];
    const HELP: &'static str = "no data moves: each I/O is unlink(2) of one of the job's files, \
         which the run lays out first (a name that exists before the run is refused: it \
         deletes only what it made); one operation per file";
    meta_def!(Op::FileDelete);
}
