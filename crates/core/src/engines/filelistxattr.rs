//! filelistxattr: fio's engine that times `listxattr` of each of the job's
//! files, laid out before the run if missing (meta.rs).

use super::meta::{meta_def, Op};
use super::EngineDef;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["filelistxattr"];
    const HELP: &'static str = "no data moves: each I/O is listxattr(2) of one of the job's \
         files (laid out first if missing); one operation per file per pass";
    meta_def!(Op::ListXattr);
}
