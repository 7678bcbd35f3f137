//! The read-back check's outcome as plain data (`"dioscope": {"verify":
//! {JOB: …}}`): algorithm, blocks checked, what was bad and where. `verify`
//! writes and checks the blocks and fills it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algo {
    Crc32c,
    Xxhash,
    Sha256,
    Pattern,
    Md5,
    /// CRC-32 (IEEE 802.3), fio's `crc32`; not the same as crc32c.
    Crc32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadKind {
    LostWrite,
    TornWrite,
    MisplacedWrite,
    StaleGeneration,
}

/// One interval that read back wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadBlock {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    pub kind: BadKind,
    /// What the header said, when it was valid: (offset, generation, seed).
    pub found_offset: Option<u64>,
    pub found_generation: Option<u64>,
}

/// The verify outcome of one job, for the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    pub algo: Option<Algo>,
    pub interval: u32,
    pub checked: u64,
    pub bad: u64,
    pub lost_writes: u64,
    pub torn_writes: u64,
    pub misplaced_writes: u64,
    pub stale_generations: u64,
    /// The first bad blocks (at most `verify::MAX_REPORTED`), with their file path.
    pub bad_blocks: Vec<(String, BadBlock)>,
    /// Read errors during the read-back.
    pub read_errors: u64,
    pub first_read_error: Option<String>,
}
