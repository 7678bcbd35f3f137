//! filesetxattr: fio's engine that times extended attributes: each I/O
//! sets `xattr_count` attributes of `xattr_size` bytes (user.dioscope.N)
//! on one of the job's files, laid out before the run (meta.rs).

use super::meta::{meta_def, Op};
use super::EngineDef;

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["filesetxattr"];
    const HELP: &'static str = "no data moves: each I/O sets xattr_count extended attributes \
         (user.dioscope.0 …) of xattr_size bytes on one of the job's files with setxattr(2), \
         timed together; one operation per file per pass";
    const OPTIONS: &'static [&'static str] = &["xattr_count", "xattr_size"];
    meta_def!(Op::SetXattr);
}
