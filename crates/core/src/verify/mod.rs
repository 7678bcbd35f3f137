//! `verify=`: blocks that carry a checksum, their offset, a generation and
//! the job's seed, and a read-back that names every block that came back
//! wrong.
//!
//! Every verify interval (by default the smallest block size) starts with an
//! 80-byte header:
//!
//! | bytes | field |
//! | --- | --- |
//! | 0..4 | magic `DIOV` |
//! | 4 | format version (1) |
//! | 5 | algorithm (1 crc32c, 2 xxhash, 3 sha256, 4 pattern, 5 md5, 6 crc32) |
//! | 8..16 | absolute offset of the interval in its file |
//! | 16..24 | generation (the trial that wrote it, from 1) |
//! | 24..32 | the job's seed |
//! | 32..36 | interval length |
//! | 36..40 | crc32c of the rest of the header |
//! | 40..72 | checksum of the payload (bytes 80..len) |
//!
//! The payload is a pseudo-random stream derived from (seed, offset,
//! generation), so `pattern` can regenerate it and compressing devices gain
//! nothing. A bad interval is classified:
//!
//! - **lost write**: no valid header (never written, or the write never
//!   reached the media), or a header written by another job;
//! - **misplaced write**: a valid block, but for another offset;
//! - **stale generation**: a valid block from an earlier trial: the newer
//!   write was lost;
//! - **torn write**: a valid header whose payload does not match: part of
//!   the write is missing.

pub mod backlog;
pub mod pattern;

use pattern::Pattern;
use serde::{Deserialize, Serialize};
// Plain data in the result layer; writing and checking blocks is here.
pub use crate::results::verify::{Algo, BadBlock, BadKind, VerifyReport};
use sha2::Digest;
use std::sync::Arc;

pub const HEADER_LEN: usize = 80;
const MAGIC: &[u8; 4] = b"DIOV";
/// How many bad blocks are kept in full (all are counted).
pub const MAX_REPORTED: usize = 1000;

/// Per-block work around the I/O itself: filling a block before it is
/// written and checking it after it is read (verify). The worker loop is
/// generic over the hook, so a run without one pays nothing for it.
pub trait BlockHook {
    /// False for the no-op hook: the calls below are compiled out.
    const ACTIVE: bool;
    /// Fill `buf` (the whole block) before it is written at `offset` of file `file`.
    fn before_write(&mut self, _buf: &mut [u8], _file: u32, _offset: u64) {}
    /// Check `buf` (the `res` bytes read) after a read from `offset` of file `file` completed.
    fn after_read(&mut self, _buf: &[u8], _file: u32, _offset: u64) {}
    /// A write of `len` bytes at `offset` of file `file` completed
    /// (verify's record of what was written, verify_backlog).
    fn after_write(&mut self, _file: u32, _offset: u64, _len: u32) {}
    /// `len` bytes at `offset` of file `file` were trimmed.
    fn after_trim(&mut self, _file: u32, _offset: u64, _len: u64) {}
    /// The I/O priority (ioprio_set's value, 0: the thread's) of the next
    /// I/O (cmdprio_percentage, cmdprio_bssplit).
    fn io_prio(&mut self, _write: bool, _len: u64) -> u16 {
        0
    }
    /// Whether the worker should stop issuing (verify_fatal after a bad block).
    fn should_stop(&self) -> bool {
        false
    }
}

/// No per-block work.
pub struct NoHook;
impl BlockHook for NoHook {
    const ACTIVE: bool = false;
}

impl Algo {
    /// Every `verify=` method, by fio's name.
    pub const NAMES: &'static [&'static str] = &[
        "crc32c",
        "crc32",
        "crc64",
        "crc16",
        "crc7",
        "xxhash",
        "sha256",
        "sha512",
        "md5",
        "meta",
        "pattern",
        "pattern_hdr",
    ];

    pub fn parse(s: &str) -> Option<Algo> {
        Some(match s {
            "crc32c" => Algo::Crc32c,
            "crc32" => Algo::Crc32,
            "crc64" => Algo::Crc64,
            "crc16" => Algo::Crc16,
            "crc7" => Algo::Crc7,
            "sha512" => Algo::Sha512,
            "meta" => Algo::Meta,
            "xxhash" => Algo::Xxhash,
            "sha256" => Algo::Sha256,
            "md5" => Algo::Md5,
            "pattern" => Algo::Pattern,
            "pattern_hdr" => Algo::PatternHdr,
            _ => return None,
        })
    }
    fn code(self) -> u8 {
        match self {
            Algo::Crc32c => 1,
            Algo::Xxhash => 2,
            Algo::Sha256 => 3,
            Algo::Pattern => 4,
            Algo::Md5 => 5,
            Algo::Crc32 => 6,
            Algo::Crc64 => 7,
            Algo::Crc16 => 8,
            Algo::Crc7 => 9,
            Algo::Sha512 => 10,
            Algo::Meta => 11,
            Algo::PatternHdr => 12,
        }
    }
    fn digest(self, data: &[u8], out: &mut [u8; 32]) {
        *out = [0; 32];
        match self {
            Algo::Crc32c => out[..4].copy_from_slice(&crc32c::crc32c(data).to_le_bytes()),
            Algo::Xxhash => {
                out[..8].copy_from_slice(&xxhash_rust::xxh64::xxh64(data, 0).to_le_bytes())
            }
            Algo::Sha256 => out.copy_from_slice(&sha2::Sha256::digest(data)),
            Algo::Md5 => out[..16].copy_from_slice(&md5::Md5::digest(data)),
            Algo::Crc32 => out[..4].copy_from_slice(&crc32_ieee(data).to_le_bytes()),
            Algo::Crc64 => out[..8].copy_from_slice(&crc64_xz(data).to_le_bytes()),
            Algo::Crc16 => out[..2].copy_from_slice(&crc16_arc(data).to_le_bytes()),
            Algo::Crc7 => out[0] = crc7_mmc(data),
            Algo::Sha512 => out.copy_from_slice(&sha2::Sha512::digest(data)[..32]),
            // The payload itself is the check (pattern), or is not checked
            // (meta); the header carries no digest.
            Algo::Pattern | Algo::PatternHdr | Algo::Meta => {}
        }
    }
}

/// CRC-32 with the IEEE 802.3 polynomial (reflected 0xEDB88320), as zlib
/// and fio's `crc32` compute it.
fn crc32_ieee(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !data.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8)
    })
}

/// CRC-64/XZ: reflected ECMA-182 polynomial, init and final xor all ones.
fn crc64_xz(data: &[u8]) -> u64 {
    const TABLE: [u64; 256] = {
        let mut t = [0u64; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u64;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xC96C_5795_D787_0F42 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !data.iter().fold(!0u64, |c, &b| {
        TABLE[((c ^ b as u64) & 0xff) as usize] ^ (c >> 8)
    })
}

/// CRC-16/ARC (reflected 0x8005, init 0), the Linux kernel's crc16.
fn crc16_arc(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |mut c, &b| {
        c ^= b as u16;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xA001
            } else {
                c >> 1
            };
        }
        c
    })
}

/// CRC-7/MMC (polynomial 0x09, init 0), as the kernel's crc7 computes it.
fn crc7_mmc(data: &[u8]) -> u8 {
    let mut c: u8 = 0;
    for &b in data {
        for i in (0..8).rev() {
            let bit = ((b >> i) & 1) ^ ((c >> 6) & 1);
            c = (c << 1) & 0x7f;
            if bit != 0 {
                c ^= 0x09;
            }
        }
    }
    c
}

impl BadKind {
    pub fn describe(self) -> &'static str {
        match self {
            BadKind::LostWrite => "lost write: no valid block header (never written, or the write did not reach the media)",
            BadKind::TornWrite => "torn write: the header is valid but the data does not match its checksum",
            BadKind::MisplacedWrite => "misplaced write: a valid block that belongs at another offset",
            BadKind::StaleGeneration => "stale generation: an older version of the block; the newer write was lost",
            BadKind::PatternMismatch => "pattern mismatch: the data read is not the verify_pattern written there",
        }
    }
}

/// Parameters shared by writer and checker.
#[derive(Debug, Clone)]
pub struct VerifySpec {
    pub algo: Algo,
    pub interval: u32,
    /// The block the intervals are counted from: `interval` when it
    /// divides every block size, else the job's one block size
    /// (`bs=6k verify_interval=4k`: intervals of 4k and 2k in each block).
    pub unit: u32,
    pub seed: u64,
    pub generation: u64,
    /// `verify_pattern`: the payload (with `verify=pattern`, the whole
    /// interval: no header, as in fio).
    pub pattern: Option<Arc<Pattern>>,
    /// `verify_offset`: the header is swapped with the bytes at this offset
    /// of the interval before writing, and back before checking (0: none).
    pub header_at: u32,
    /// `verify_header_seed`: a header written with another seed is bad.
    pub check_seed: bool,
}

impl VerifySpec {
    pub fn new(algo: Algo, interval: u32, seed: u64, generation: u64) -> VerifySpec {
        VerifySpec {
            algo,
            interval,
            unit: interval,
            seed,
            generation,
            pattern: None,
            header_at: 0,
            check_seed: true,
        }
    }

    /// Blocks are the bare pattern, without a header (`verify=pattern` with
    /// `verify_pattern`).
    fn headerless(&self) -> bool {
        self.algo == Algo::Pattern && self.pattern.is_some()
    }
}

/// The verify intervals of `len` bytes read or written at a block start:
/// (start, length) relative to it. Each block of `unit` bytes is split
/// into intervals of `interval` from its own start; a block's last interval
/// too short for a header joins the one before it, so every byte is
/// covered. A piece shorter than a header (a short read) is not an interval.
#[inline]
fn chunks(unit: usize, interval: usize, len: usize) -> impl Iterator<Item = (usize, usize)> {
    let unit = unit.max(1);
    let iv = interval.clamp(1, unit);
    (0..len.div_ceil(unit)).flat_map(move |b| {
        let start = b * unit;
        let blen = unit.min(len - start);
        let n = blen.div_ceil(iv);
        let tail = blen - (n - 1) * iv;
        let merge = n > 1 && tail < HEADER_LEN;
        let count = if merge { n - 1 } else { n };
        (0..count).filter_map(move |i| {
            let at = i * iv;
            let l = if merge && i == count - 1 {
                blen - at
            } else {
                iv.min(blen - at)
            };
            (l >= HEADER_LEN).then_some((start + at, l))
        })
    })
}

#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fill_payload(buf: &mut [u8], seed: u64, offset: u64, generation: u64) {
    let mut x = mix(seed ^ mix(offset) ^ mix(generation.wrapping_add(0x9e37))) | 1;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let b = x.to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&b[..n]);
}

fn header_crc(h: &[u8]) -> u32 {
    let c = crc32c::crc32c(&h[..36]);
    crc32c::crc32c_append(c, &h[40..HEADER_LEN])
}

/// Write one interval's header and payload into `buf` (its whole length).
fn fill_interval(spec: &VerifySpec, buf: &mut [u8], offset: u64) {
    if let (true, Some(p)) = (spec.headerless(), &spec.pattern) {
        p.fill(buf, offset);
        return;
    }
    let len = buf.len();
    let (h, payload) = buf.split_at_mut(HEADER_LEN);
    match &spec.pattern {
        Some(p) => p.fill(payload, offset),
        None => fill_payload(payload, spec.seed, offset, spec.generation),
    }
    h.fill(0);
    h[0..4].copy_from_slice(MAGIC);
    h[4] = 1;
    h[5] = spec.algo.code();
    h[8..16].copy_from_slice(&offset.to_le_bytes());
    h[16..24].copy_from_slice(&spec.generation.to_le_bytes());
    h[24..32].copy_from_slice(&spec.seed.to_le_bytes());
    h[32..36].copy_from_slice(&(len as u32).to_le_bytes());
    let mut d = [0u8; 32];
    spec.algo.digest(payload, &mut d);
    h[40..72].copy_from_slice(&d);
    let c = header_crc(h);
    h[36..40].copy_from_slice(&c.to_le_bytes());
    swap_header(buf, spec.header_at as usize);
}

/// `verify_offset`: exchange the header with the bytes at `at` (its own inverse).
fn swap_header(buf: &mut [u8], at: usize) {
    if at >= HEADER_LEN && at + HEADER_LEN <= buf.len() {
        let (h, rest) = buf.split_at_mut(at);
        h[..HEADER_LEN].swap_with_slice(&mut rest[..HEADER_LEN]);
    }
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// Check one interval read from `offset`. `generation`: the one expected,
/// or `None` to accept any (verify_only of an earlier run).
/// `scratch` and `swapped` are at least as long as `buf`.
pub fn check_interval(
    spec: &VerifySpec,
    buf: &[u8],
    offset: u64,
    generation: Option<u64>,
    scratch: &mut [u8],
    swapped: &mut [u8],
) -> Option<(BadKind, Option<u64>, Option<u64>)> {
    if let (true, Some(p)) = (spec.headerless(), &spec.pattern) {
        return (!p.matches(buf, offset, scratch)).then_some((
            BadKind::PatternMismatch,
            None,
            None,
        ));
    }
    let buf = if spec.header_at > 0 {
        let s = &mut swapped[..buf.len()];
        s.copy_from_slice(buf);
        swap_header(s, spec.header_at as usize);
        &*s
    } else {
        buf
    };
    let h = &buf[..HEADER_LEN];
    let stored_crc = u32::from_le_bytes(h[36..40].try_into().expect("4 bytes"));
    if &h[0..4] != MAGIC || header_crc(h) != stored_crc {
        return Some((BadKind::LostWrite, None, None));
    }
    let (off, gen, seed) = (u64_at(h, 8), u64_at(h, 16), u64_at(h, 24));
    let len = u32::from_le_bytes(h[32..36].try_into().expect("4 bytes")) as usize;
    if spec.check_seed && seed != spec.seed {
        return Some((BadKind::LostWrite, Some(off), Some(gen)));
    }
    if off != offset {
        return Some((BadKind::MisplacedWrite, Some(off), Some(gen)));
    }
    if let Some(g) = generation {
        if gen < g {
            return Some((BadKind::StaleGeneration, Some(off), Some(gen)));
        }
    }
    if len != buf.len() {
        return Some((BadKind::TornWrite, Some(off), Some(gen)));
    }
    let payload = &buf[HEADER_LEN..];
    let ok = if matches!(spec.algo, Algo::Pattern | Algo::PatternHdr) {
        let s = &mut scratch[..payload.len()];
        match &spec.pattern {
            Some(p) => p.fill(s, off),
            None => fill_payload(s, seed, off, gen),
        }
        s == payload
    } else {
        let mut d = [0u8; 32];
        spec.algo.digest(payload, &mut d);
        d[..] == h[40..72]
    };
    (!ok).then_some((BadKind::TornWrite, Some(off), Some(gen)))
}

/// Which intervals hold what this job last wrote there, per file, and where
/// the read-back's reads start: the record the read-back replays, so that it
/// reads exactly the blocks written (each once: the last write wins, as in
/// fio) and nothing else. Two bitmaps per file over the verify intervals of
/// its region, allocated once from the region's size: recording a write
/// allocates nothing. Serialized, it is the verify state file
/// (verify_state_save).
///
/// A write stamps an interval header every `interval` bytes from its own
/// offset; an interval of the grid is *valid* when a write covered it whole
/// with a header at its start. The contents of a valid interval depend only
/// on its offset, the seed and the generation, so writing it again (norandommap,
/// several loops, numjobs on one file) leaves it valid. A write that covers
/// an interval only in part (an offset off the grid, a block size that is no
/// multiple of the interval) leaves old and new bytes there: that interval is
/// no longer valid and is not checked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Written {
    /// (file start offset of the region, valid bits).
    files: Vec<(u64, Vec<u64>)>,
    interval: u64,
    /// Per file: the intervals where a read of the read-back starts (the
    /// first interval of each write still whole, and the first valid one
    /// after each write), so it reads blocks as they were written.
    #[serde(default)]
    starts: Vec<Vec<u64>>,
}

#[inline]
fn bit(bits: &[u64], i: u64) -> bool {
    bits.get((i / 64) as usize)
        .is_some_and(|w| w & (1 << (i % 64)) != 0)
}

#[inline]
fn put_bit(bits: &mut [u64], i: u64, on: bool) {
    if let Some(w) = bits.get_mut((i / 64) as usize) {
        if on {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }
}

impl Written {
    pub fn new(regions: &[(u64, u64)], interval: u32) -> Written {
        let interval = interval.max(1) as u64;
        let words = |len: u64| vec![0u64; (len / interval).div_ceil(64) as usize + 1];
        Written {
            files: regions
                .iter()
                .map(|&(start, len)| (start, words(len)))
                .collect(),
            starts: regions.iter().map(|&(_, len)| words(len)).collect(),
            interval,
        }
    }
    #[inline]
    fn index(&self, file: u32, offset: u64) -> Option<(usize, usize)> {
        let (start, bits) = self.files.get(file as usize)?;
        let i = offset.checked_sub(*start)? / self.interval;
        let w = (i / 64) as usize;
        (w < bits.len()).then_some((w, (i % 64) as usize))
    }
    /// Mark the interval at `offset` written whole (and a read start).
    #[inline]
    pub fn mark(&mut self, file: u32, offset: u64) {
        let iv = self.interval;
        self.wrote(file, offset - offset % iv.max(1), iv);
    }

    /// File `file`'s two maps and `offset` relative to its region (`None`:
    /// not a file or an offset of the record).
    #[inline]
    fn maps(&mut self, file: u32, offset: u64) -> Option<(u64, &mut [u64], &mut [u64])> {
        let (start, bits) = self.files.get_mut(file as usize)?;
        let starts = self.starts.get_mut(file as usize)?;
        Some((offset.checked_sub(*start)?, bits, starts))
    }

    /// A write of `len` bytes at `offset` of file `file` completed (`len`:
    /// the bytes it wrote). Its whole intervals on the grid become valid and
    /// the read-back reads them as one block; intervals it covers in part
    /// no longer hold one write's data and leave the record.
    #[inline]
    pub fn wrote(&mut self, file: u32, offset: u64, len: u64) {
        let iv = self.interval;
        let Some((rel, bits, starts)) = self.maps(file, offset) else {
            return;
        };
        let n = bits.len() as u64 * 64;
        let first = rel / iv;
        let touched = (rel + len).div_ceil(iv).min(n);
        let whole = if rel % iv == 0 {
            ((rel + len) / iv).min(n)
        } else {
            first
        };
        for i in first..whole {
            put_bit(bits, i, true);
            put_bit(starts, i, i == first);
        }
        for i in whole.max(first)..touched {
            put_bit(bits, i, false);
            put_bit(starts, i, false);
        }
        // What follows, if valid, is read as a block of its own.
        if bit(bits, touched) {
            put_bit(starts, touched, true);
        }
    }

    /// `len` bytes at `offset` were trimmed: no interval they touch holds
    /// what was written.
    pub fn trimmed(&mut self, file: u32, offset: u64, len: u64) {
        let iv = self.interval;
        let Some((rel, bits, starts)) = self.maps(file, offset) else {
            return;
        };
        let n = bits.len() as u64 * 64;
        let touched = (rel + len).div_ceil(iv).min(n);
        for i in rel / iv..touched {
            put_bit(bits, i, false);
            put_bit(starts, i, false);
        }
        if bit(bits, touched) {
            put_bit(starts, touched, true);
        }
    }

    fn is_set(&self, file: u32, offset: u64) -> bool {
        self.index(file, offset)
            .map(|(w, b)| self.files[file as usize].1[w] & (1 << b) != 0)
            .unwrap_or(false)
    }
    pub fn count(&self) -> u64 {
        self.files
            .iter()
            .flat_map(|f| &f.1)
            .map(|w| w.count_ones() as u64)
            .sum()
    }
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// The reads of the read-back, in file and offset order: (file, offset,
    /// length), each the part of one write still valid, at most `max_len`
    /// bytes (at least one interval).
    pub fn pieces(&self, max_len: u64) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        let iv = self.interval;
        let cap = (max_len / iv).max(1);
        self.files
            .iter()
            .enumerate()
            .flat_map(move |(f, (start, bits))| {
                let starts = self.starts.get(f).map(Vec::as_slice).unwrap_or(&[]);
                let mut i = 0u64;
                let n = bits.len() as u64 * 64;
                std::iter::from_fn(move || {
                    // The next valid interval, a word of nothing at a time.
                    loop {
                        if i >= n {
                            return None;
                        }
                        let w = bits[(i / 64) as usize] >> (i % 64);
                        if w == 0 {
                            i = (i / 64 + 1) * 64;
                            continue;
                        }
                        i += w.trailing_zeros() as u64;
                        break;
                    }
                    let first = i;
                    i += 1;
                    while i < n && i - first < cap && bit(bits, i) && !bit(starts, i) {
                        i += 1;
                    }
                    Some((f as u32, start + first * iv, (i - first) * iv))
                })
            })
    }
}

/// The write-side hook: stamps every interval of every write. What was
/// written is recorded when the write completes ([`Written::wrote`]).
pub struct Writer {
    pub spec: VerifySpec,
    pub written: Written,
}

impl Writer {
    pub fn new(spec: VerifySpec, written: Written) -> Writer {
        Writer { spec, written }
    }
}

impl BlockHook for Writer {
    const ACTIVE: bool = true;
    fn before_write(&mut self, buf: &mut [u8], _file: u32, offset: u64) {
        let (unit, iv) = (self.spec.unit as usize, self.spec.interval as usize);
        for (at, len) in chunks(unit, iv, buf.len()) {
            fill_interval(&self.spec, &mut buf[at..at + len], offset + at as u64);
        }
    }
    fn after_write(&mut self, file: u32, offset: u64, len: u32) {
        self.written.wrote(file, offset, len as u64);
    }
    fn after_trim(&mut self, file: u32, offset: u64, len: u64) {
        self.written.trimmed(file, offset, len);
    }
}

/// The read-side hook: checks every interval read that was written (or all,
/// for verify_only) and records what is wrong.
pub struct Checker {
    pub spec: VerifySpec,
    /// `None`: check every interval (verify_only / reads of earlier writes).
    pub written: Option<Written>,
    /// Expected generation, `None` to accept any.
    pub generation: Option<u64>,
    pub checked: u64,
    pub bad_count: u64,
    pub bad: Vec<BadBlock>,
    pub counts: [u64; 5],
    pub fatal: bool,
    scratch: Vec<u8>,
    swapped: Vec<u8>,
    /// `verify_dump`: where to write the dumps of bad blocks, and the file
    /// paths that name them.
    dump: Option<(std::path::PathBuf, Vec<String>)>,
    /// Dumps that could not be written (the first error).
    pub dump_error: Option<String>,
}

impl Checker {
    pub fn new(
        spec: VerifySpec,
        written: Option<Written>,
        generation: Option<u64>,
        fatal: bool,
    ) -> Checker {
        Checker {
            written,
            generation,
            checked: 0,
            bad_count: 0,
            bad: Vec::with_capacity(64),
            counts: [0; 5],
            fatal,
            // An interval is at most `interval` plus a too-short tail.
            scratch: vec![0u8; spec.interval as usize + HEADER_LEN],
            swapped: vec![0u8; spec.interval as usize + HEADER_LEN],
            spec,
            dump: None,
            dump_error: None,
        }
    }

    /// `verify_dump`: write each bad block as read and as expected to
    /// `<file name>.<offset>.received` and `.expected` in `dir` (fio's
    /// names; fio writes them to the current directory), for the files
    /// `paths` of this worker.
    pub fn dump_to(mut self, dir: std::path::PathBuf, paths: Vec<String>) -> Checker {
        self.dump = Some((dir, paths));
        self
    }

    #[cold]
    #[inline(never)]
    fn dump_block(&mut self, got: &[u8], file: u32, off: u64, found_gen: Option<u64>) {
        let Some((dir, paths)) = &self.dump else {
            return;
        };
        if self.bad.len() >= MAX_REPORTED {
            return;
        }
        let base = paths
            .get(file as usize)
            .and_then(|p| std::path::Path::new(p).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("file{file}"));
        let mut spec = self.spec.clone();
        spec.generation = self.generation.or(found_gen).unwrap_or(spec.generation);
        let mut want = vec![0u8; got.len()];
        fill_interval(&spec, &mut want, off);
        for (kind, data) in [("received", got), ("expected", &want[..])] {
            let name = dir.join(format!("{base}.{off}.{kind}"));
            let written = crate::outfile::open(
                &name,
                crate::outfile::Mode::Truncate,
                &crate::outfile::Rules::new("verify_dump"),
            )
            .map_err(|e| std::io::Error::other(e.why))
            .and_then(|mut f| std::io::Write::write_all(&mut f, data));
            if let Err(e) = written {
                self.dump_error.get_or_insert(format!(
                    "verify_dump could not write {}: {e}",
                    name.display()
                ));
            }
        }
    }
}

impl BlockHook for Checker {
    const ACTIVE: bool = true;
    fn after_read(&mut self, buf: &[u8], file: u32, offset: u64) {
        let (unit, iv) = (self.spec.unit as usize, self.spec.interval as usize);
        for (at, len) in chunks(unit, iv, buf.len()) {
            let (chunk, off) = (&buf[at..at + len], offset + at as u64);
            if let Some(w) = &self.written {
                if !w.is_set(file, off) {
                    continue;
                }
            }
            self.checked += 1;
            if let Some((kind, fo, fg)) = check_interval(
                &self.spec,
                chunk,
                off,
                self.generation,
                &mut self.scratch,
                &mut self.swapped,
            ) {
                if self.dump.is_some() {
                    self.dump_block(chunk, file, off, fg);
                }
                self.bad_count += 1;
                self.counts[kind as usize] += 1;
                if self.bad.len() < MAX_REPORTED {
                    self.bad.push(BadBlock {
                        file,
                        offset: off,
                        len: chunk.len() as u32,
                        kind,
                        found_offset: fo,
                        found_generation: fg,
                    });
                }
            }
        }
    }
    fn should_stop(&self) -> bool {
        self.fatal && self.bad_count > 0
    }
}

impl VerifyReport {
    pub fn add(&mut self, c: &Checker, paths: &[String]) {
        self.algo = Some(c.spec.algo);
        self.interval = c.spec.interval;
        self.checked += c.checked;
        self.bad += c.bad_count;
        self.lost_writes += c.counts[BadKind::LostWrite as usize];
        self.torn_writes += c.counts[BadKind::TornWrite as usize];
        self.misplaced_writes += c.counts[BadKind::MisplacedWrite as usize];
        self.stale_generations += c.counts[BadKind::StaleGeneration as usize];
        self.pattern_mismatches += c.counts[BadKind::PatternMismatch as usize];
        if let Some(e) = &c.dump_error {
            self.first_read_error.get_or_insert_with(|| e.clone());
        }
        for b in &c.bad {
            if self.bad_blocks.len() < MAX_REPORTED {
                self.bad_blocks.push((
                    paths.get(b.file as usize).cloned().unwrap_or_default(),
                    b.clone(),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(algo: Algo) -> VerifySpec {
        VerifySpec::new(algo, 4096, 0x89, 2)
    }

    #[test]
    fn round_trip_every_algorithm() {
        for a in Algo::NAMES.iter().map(|n| Algo::parse(n).unwrap()) {
            let s = spec(a);
            let mut b = vec![0u8; 4096];
            fill_interval(&s, &mut b, 8192);
            let mut scratch = vec![0u8; 4096];
            assert_eq!(
                check_interval(&s, &b, 8192, Some(2), &mut scratch, &mut [0u8; 4096]),
                None,
                "{a:?}"
            );
        }
    }

    #[test]
    fn digests_match_known_vectors() {
        let mut out = [0u8; 32];
        Algo::Md5.digest(b"abc", &mut out);
        let hex: String = out[..16].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(crc32_ieee(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc64_xz(b"123456789"), 0x995D_C9BB_DF19_39FA);
        assert_eq!(crc16_arc(b"123456789"), 0xBB3D);
        assert_eq!(crc7_mmc(b"123456789"), 0x75);
        // Every fio name dioscope accepts is its own algorithm.
        let names = Algo::NAMES;
        let algos: Vec<Algo> = names.iter().map(|n| Algo::parse(n).unwrap()).collect();
        for (i, a) in algos.iter().enumerate() {
            assert!(
                !algos[..i].contains(a),
                "{} aliases another method",
                names[i]
            );
        }
    }

    #[test]
    fn classifies_each_kind() {
        let s = spec(Algo::Crc32c);
        let mut scratch = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        fill_interval(&s, &mut b, 8192);
        // Never written: zeros.
        assert_eq!(
            check_interval(
                &s,
                &[0u8; 4096],
                0,
                Some(2),
                &mut scratch,
                &mut vec![0u8; 4096]
            )
            .unwrap()
            .0,
            BadKind::LostWrite
        );
        // Read at another offset: misplaced.
        assert_eq!(
            check_interval(&s, &b, 4096, Some(2), &mut scratch, &mut vec![0u8; 4096])
                .unwrap()
                .0,
            BadKind::MisplacedWrite
        );
        // Expecting a newer generation: stale.
        assert_eq!(
            check_interval(&s, &b, 8192, Some(3), &mut scratch, &mut vec![0u8; 4096])
                .unwrap()
                .0,
            BadKind::StaleGeneration
        );
        // Any generation accepted (verify_only).
        assert_eq!(
            check_interval(&s, &b, 8192, None, &mut scratch, &mut vec![0u8; 4096]),
            None
        );
        // Second half replaced by old data: torn.
        let mut t = b.clone();
        t[2048..].fill(0xee);
        assert_eq!(
            check_interval(&s, &t, 8192, Some(2), &mut scratch, &mut vec![0u8; 4096])
                .unwrap()
                .0,
            BadKind::TornWrite
        );
        // A flipped header byte: the header checksum fails: lost.
        let mut h = b.clone();
        h[9] ^= 1;
        assert_eq!(
            check_interval(&s, &h, 8192, Some(2), &mut scratch, &mut vec![0u8; 4096])
                .unwrap()
                .0,
            BadKind::LostWrite
        );
        // Pattern detects a single flipped payload bit.
        let p = spec(Algo::Pattern);
        let mut pb = vec![0u8; 4096];
        fill_interval(&p, &mut pb, 0);
        pb[3000] ^= 0x10;
        assert_eq!(
            check_interval(&p, &pb, 0, Some(2), &mut scratch, &mut vec![0u8; 4096])
                .unwrap()
                .0,
            BadKind::TornWrite
        );
    }

    /// fio 3.41's `verify=pattern_hdr`: a header, then the pattern; a
    /// flipped payload byte is torn, a block from elsewhere misplaced
    /// (which the bare pattern cannot tell).
    #[test]
    fn pattern_hdr_checks_the_pattern_behind_a_header() {
        let (mut scratch, mut swapped) = (vec![0u8; 4096], vec![0u8; 4096]);
        let mut s = spec(Algo::PatternHdr);
        s.pattern = Some(Arc::new(Pattern::parse("0x5a5a").unwrap()));
        let mut b = vec![0u8; 4096];
        fill_interval(&s, &mut b, 8192);
        assert_eq!(&b[..4], MAGIC);
        assert!(b[HEADER_LEN..].iter().all(|&x| x == 0x5a));
        assert_eq!(
            check_interval(&s, &b, 8192, Some(2), &mut scratch, &mut swapped),
            None
        );
        assert_eq!(
            check_interval(&s, &b, 4096, Some(2), &mut scratch, &mut swapped)
                .unwrap()
                .0,
            BadKind::MisplacedWrite
        );
        b[2000] ^= 1;
        assert_eq!(
            check_interval(&s, &b, 8192, Some(2), &mut scratch, &mut swapped)
                .unwrap()
                .0,
            BadKind::TornWrite
        );
    }

    /// fio 3.41's `verify_pattern_interval`: the pattern starts again every
    /// N bytes, `%o` naming each piece; checked the same way.
    #[test]
    fn verify_pattern_interval_restarts_the_pattern_with_its_offset() {
        let (mut scratch, mut swapped) = (vec![0u8; 4096], vec![0u8; 4096]);
        let mut s = spec(Algo::Pattern);
        s.pattern = Some(Arc::new(Pattern::parse("%o").unwrap().every(512)));
        let mut b = vec![0u8; 4096];
        fill_interval(&s, &mut b, 8192);
        for k in 0..8u64 {
            let at = (k * 512) as usize;
            assert_eq!(&b[at..at + 8], &(8192 + k * 512).to_le_bytes(), "piece {k}");
        }
        assert_eq!(
            check_interval(&s, &b, 8192, Some(2), &mut scratch, &mut swapped),
            None
        );
        // Without it, %o is the interval's offset all through.
        let mut t = spec(Algo::Pattern);
        t.pattern = Some(Arc::new(Pattern::parse("%o").unwrap()));
        fill_interval(&t, &mut b, 8192);
        assert_eq!(&b[512..520], &8192u64.to_le_bytes());
    }

    #[test]
    fn verify_pattern_offset_and_seed_options() {
        let mut scratch = vec![0u8; 4096];
        let mut swapped = vec![0u8; 4096];
        // verify=pattern with verify_pattern: the bare pattern, %o per interval.
        let mut s = spec(Algo::Pattern);
        s.pattern = Some(Arc::new(Pattern::parse("0xab%o").unwrap()));
        let mut b = vec![0u8; 4096];
        fill_interval(&s, &mut b, 8192);
        assert_eq!(&b[..3], &[0xab, 0x00, 0x20]);
        assert_eq!(
            check_interval(&s, &b, 8192, Some(2), &mut scratch, &mut swapped),
            None
        );
        assert_eq!(
            check_interval(&s, &b, 4096, Some(2), &mut scratch, &mut swapped)
                .unwrap()
                .0,
            BadKind::PatternMismatch
        );
        // crc32c with verify_pattern: a header, then the pattern as payload.
        let mut c = spec(Algo::Crc32c);
        c.pattern = Some(Arc::new(Pattern::parse("\"xy\"").unwrap()));
        fill_interval(&c, &mut b, 0);
        assert_eq!(&b[0..4], MAGIC);
        assert_eq!(&b[HEADER_LEN..HEADER_LEN + 4], b"xyxy");
        assert_eq!(
            check_interval(&c, &b, 0, Some(2), &mut scratch, &mut swapped),
            None
        );
        // verify_offset: the header sits at 1024 on disk and still checks.
        c.header_at = 1024;
        fill_interval(&c, &mut b, 0);
        assert_eq!(&b[1024..1028], MAGIC);
        assert_ne!(&b[0..4], MAGIC);
        assert_eq!(
            check_interval(&c, &b, 0, Some(2), &mut scratch, &mut swapped),
            None
        );
        b[1024 + 9] ^= 1;
        assert_eq!(
            check_interval(&c, &b, 0, Some(2), &mut scratch, &mut swapped)
                .unwrap()
                .0,
            BadKind::LostWrite
        );
        // verify_header_seed=0: a block of another seed is accepted.
        let mut other = spec(Algo::Crc32c);
        other.seed = 7;
        fill_interval(&other, &mut b, 0);
        let mut lax = spec(Algo::Crc32c);
        assert!(check_interval(&lax, &b, 0, Some(2), &mut scratch, &mut swapped).is_some());
        lax.check_seed = false;
        assert_eq!(
            check_interval(&lax, &b, 0, Some(2), &mut scratch, &mut swapped),
            None
        );
    }

    #[test]
    fn verify_dump_writes_received_and_expected() {
        let d = tempfile::tempdir().unwrap();
        let s = spec(Algo::Crc32c);
        let mut b = vec![0u8; 4096];
        fill_interval(&s, &mut b, 4096);
        let good = b.clone();
        b[100] ^= 0xff;
        let path = d.path().join("target.dat").display().to_string();
        let mut c =
            Checker::new(s, None, Some(2), false).dump_to(d.path().to_path_buf(), vec![path]);
        c.after_read(&b, 0, 4096);
        assert_eq!(c.bad_count, 1);
        assert_eq!(
            std::fs::read(d.path().join("target.dat.4096.received")).unwrap(),
            b
        );
        assert_eq!(
            std::fs::read(d.path().join("target.dat.4096.expected")).unwrap(),
            good
        );
    }

    #[test]
    fn writer_and_checker_through_hooks() {
        let s = spec(Algo::Xxhash);
        let mut w = Writer::new(s.clone(), Written::new(&[(0, 64 * 4096)], 4096));
        let mut block = vec![0u8; 16384];
        w.before_write(&mut block, 0, 4 * 4096);
        assert_eq!(w.written.count(), 0, "recorded when the write completes");
        w.after_write(0, 4 * 4096, 16384);
        assert_eq!(w.written.count(), 4);
        let mut c = Checker::new(s, Some(w.written.clone()), Some(2), false);
        c.after_read(&block, 0, 4 * 4096);
        assert_eq!((c.checked, c.bad_count), (4, 0));
        // An unwritten interval is skipped, a corrupted one reported with its offset.
        c.after_read(&[0u8; 4096], 0, 0);
        block[4096 + 100] ^= 1;
        c.after_read(&block, 0, 4 * 4096);
        assert_eq!(c.bad_count, 1);
        assert_eq!(c.bad[0].offset, 5 * 4096);
        assert_eq!(c.bad[0].kind, BadKind::TornWrite);
    }

    #[test]
    fn intervals_restart_at_each_block_and_a_short_tail_joins_the_one_before() {
        let v = |u, i, l| chunks(u, i, l).collect::<Vec<_>>();
        // Dividing: one interval after another.
        assert_eq!(v(4096, 4096, 8192), [(0, 4096), (4096, 4096)]);
        // bs=6k, interval 4k: 4k + 2k in each block, from the block's start.
        assert_eq!(
            v(6144, 4096, 12288),
            [(0, 4096), (4096, 2048), (6144, 4096), (10240, 2048)]
        );
        // A tail shorter than a header joins the interval before it.
        assert_eq!(v(4096 + 40, 4096, 4096 + 40), [(0, 4136)]);
        // A short read shorter than a header is no interval.
        assert_eq!(v(4096, 4096, 4096 + 40), [(0, 4096)]);
        // Every byte of a block is in exactly one interval.
        for (u, i) in [(6144, 4096), (5000, 512), (4608, 4096), (65536, 12288)] {
            let c = v(u, i, 3 * u);
            assert_eq!(c.iter().map(|x| x.1).sum::<usize>(), 3 * u, "{u} {i}");
            assert!(c.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0), "{u} {i}");
        }
    }

    /// `bs=6k verify_interval=4k`: each block's 4k and 2k intervals are
    /// written and checked, and damage in the 2k tail is found.
    #[test]
    fn an_interval_that_does_not_divide_the_block_checks_every_byte() {
        let mut s = spec(Algo::Crc32c);
        s.unit = 6144;
        let mut w = Writer::new(s.clone(), Written::new(&[(0, 60 * 1024)], 6144));
        let mut blocks = vec![0u8; 3 * 6144];
        for b in 0..3 {
            let off = (b * 6144) as u64;
            w.before_write(&mut blocks[b * 6144..(b + 1) * 6144], 0, off);
            w.after_write(0, off, 6144);
        }
        assert_eq!(w.written.count(), 3);
        let mut c = Checker::new(s, Some(w.written.clone()), Some(2), false);
        c.after_read(&blocks, 0, 0);
        assert_eq!((c.checked, c.bad_count), (6, 0));
        blocks[6144 + 4096 + 1500] ^= 1;
        c.after_read(&blocks, 0, 0);
        assert_eq!(c.bad_count, 1);
        assert_eq!((c.bad[0].offset, c.bad[0].len), (6144 + 4096, 2048));
    }

    fn pieces(w: &Written, max: u64) -> Vec<(u32, u64, u64)> {
        w.pieces(max).collect()
    }

    #[test]
    fn the_record_is_the_last_write_of_each_block() {
        const K: u64 = 4096;
        // Two files; the second's region starts at 1 MiB.
        let mut w = Written::new(&[(0, 64 * K), (1 << 20, 16 * K)], 4096);
        assert_eq!(pieces(&w, 64 * K), vec![], "nothing written, nothing read");
        // Blocks are read back as written, each once, in offset order.
        w.wrote(0, 8 * K, 4 * K);
        w.wrote(0, 0, 2 * K * 2);
        w.wrote(1, (1 << 20) + 2 * K, K);
        w.wrote(0, 8 * K, 4 * K);
        assert_eq!(
            pieces(&w, 64 * K),
            vec![(0, 0, 4 * K), (0, 8 * K, 4 * K), (1, (1 << 20) + 2 * K, K)]
        );
        // A write over the middle of an earlier one splits it in three reads.
        w.wrote(0, 9 * K, K);
        assert_eq!(
            pieces(&w, 64 * K)[1..4],
            [(0, 8 * K, K), (0, 9 * K, K), (0, 10 * K, 2 * K)]
        );
        // Reads are at most as long as asked.
        assert_eq!(pieces(&w, 2 * K)[0..2], [(0, 0, 2 * K), (0, 2 * K, 2 * K)]);
        // A write off the interval grid leaves no interval it touches whole:
        // none of them is read back (nor wrongly reported).
        w.wrote(0, 2 * K + 512, K);
        assert_eq!(
            pieces(&w, 64 * K)[0..3],
            [(0, 0, 2 * K), (0, 8 * K, K), (0, 9 * K, K)]
        );
        assert!(!w.is_set(0, 2 * K) && !w.is_set(0, 3 * K) && w.is_set(0, K));
        // A block size that is no multiple of the interval: the short tail
        // holds another header length, and is not read back.
        w.wrote(0, 20 * K, K + 1024);
        assert!(w.is_set(0, 20 * K) && !w.is_set(0, 21 * K));
        // Trimmed blocks hold nothing written.
        w.trimmed(0, 8 * K, 2 * K);
        assert!(!w.is_set(0, 8 * K) && !w.is_set(0, 9 * K) && w.is_set(0, 10 * K));
        assert_eq!(pieces(&w, 64 * K)[1], (0, 10 * K, 2 * K));
        // Out of the region: ignored.
        w.wrote(0, 1 << 30, K);
        w.wrote(7, 0, K);
        assert_eq!(w.count(), 2 + 2 + 1 + 1);
    }
}
