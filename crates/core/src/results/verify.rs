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
    /// CRC-64/XZ (the ECMA-182 polynomial, reflected).
    Crc64,
    /// CRC-16/ARC, the kernel's crc16.
    Crc16,
    /// CRC-7/MMC, the kernel's crc7.
    Crc7,
    /// SHA-512, its first 32 bytes in the header.
    Sha512,
    /// fio's deprecated `meta`: the header alone (offset, generation,
    /// seed, its own CRC); the payload is not checked.
    Meta,
    /// fio 3.41's `pattern_hdr`: the header, then `verify_pattern` as the
    /// payload, compared byte for byte.
    PatternHdr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadKind {
    LostWrite,
    TornWrite,
    MisplacedWrite,
    StaleGeneration,
    /// `verify=pattern` with `verify_pattern`: blocks carry no header, only
    /// the pattern, so a wrong block is only known to differ.
    PatternMismatch,
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
    /// Blocks that do not hold their verify_pattern (header-less pattern verify).
    #[serde(default)]
    pub pattern_mismatches: u64,
    /// The first bad blocks (at most `verify::MAX_REPORTED`), with their file path.
    pub bad_blocks: Vec<(String, BadBlock)>,
    /// Read errors during the read-back.
    pub read_errors: u64,
    pub first_read_error: Option<String>,
}
