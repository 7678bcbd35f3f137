//! What a target is, as the result keeps it (`"dioscope": {"targets":
//! …}`): path, kind, usable size, direct-I/O alignment and where it came
//! from. `targets` opens and lays them out.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    File,
    BlockDevice,
    /// `/dev/null` or `/dev/zero`, which fio's job files read and write
    /// (the data goes nowhere or comes from nowhere; `size=` is its size).
    NullDevice,
}

/// What a target is, without the open file: kept in the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    #[serde(with = "crate::osstr::serde_path")]
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes usable: the file's size after layout, or the device's size.
    pub size: u64,
    /// Direct-I/O alignment of offsets and lengths (bytes).
    pub offset_align: u32,
    /// Direct-I/O alignment of memory (bytes).
    pub mem_align: u32,
    /// Where the alignment came from, for error messages.
    pub align_source: Cow<'static, str>,
    pub direct: bool,
    pub writable: bool,
    /// dioscope created this file in this run.
    pub created: bool,
    /// The size before this run laid it out (0 for a file it created): a
    /// percentage `offset=` is of this size, as in fio.
    #[serde(skip)]
    pub prior_size: u64,
    /// `sync=`'s open flag (O_SYNC, O_DSYNC or 0): which descriptor of a
    /// path a job uses.
    #[serde(skip)]
    pub open_sync: i32,
}
