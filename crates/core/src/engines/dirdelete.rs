//! dirdelete: fio's engine that times `rmdir` of the job's directories,
//! which the run makes first (meta.rs: it never removes one it did not
//! make).

use super::meta::{meta_def, Op};
use super::EngineDef;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["dirdelete"];
    const HELP: &'static str = "no data moves: each I/O is rmdir(2) of one of the job's \
         directories, which the run makes first (a name that exists before the run is \
         refused); one operation per directory";
    meta_def!(Op::DirDelete);
}
