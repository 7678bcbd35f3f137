//! fio's data patterns (`buffer_pattern=`, `verify_pattern=`): a byte
//! sequence repeated over a buffer, written as a concatenation of
//!
//! - `0x…`: hex bytes of any length, in the order written (`0xdeadbeef` is
//!   de ad be ef; an odd digit count takes the first digit alone);
//! - a decimal integer in the i32 range: its bytes, least significant first,
//!   as few as hold it (`66` is one byte 0x42, `-12` is f4 ff ff ff, `0` one
//!   zero byte);
//! - `"text"`: the bytes of the text (no escapes, as in fio);
//! - `'path'`: the contents of a file (at most [`MAX_PATTERN`] bytes);
//! - `%o`: eight bytes holding the offset of the block (little-endian),
//!   pasted when the buffer is filled.
//!
//! The pattern, with its offsets pasted once, is repeated over the buffer,
//! so every repetition carries the same offset (fio does the same).

/// The longest pattern fio accepts; longer input is refused.
const MAX_PATTERN: usize = 512;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pattern {
    bytes: Vec<u8>,
    /// Where `%o` pastes the 8-byte offset.
    offsets: Vec<usize>,
    /// `verify_pattern_interval`: the pattern starts again every this many
    /// bytes, `%o` holding that piece's offset (0: once per buffer).
    every: usize,
}

/// A `0x…` element of a pattern (`s`, for messages) at the start of
/// `rest`, appended to `bytes`: the characters it used.
fn hex(s: &str, rest: &str, bytes: &mut Vec<u8>) -> Result<usize, String> {
    let digits = &rest[2..];
    let mut n = digits
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(digits.len());
    // `0xff0x14`: the 0 of the next 0x is not a digit of this one.
    if n < digits.len() && n > 0 && matches!(digits.as_bytes()[n], b'x' | b'X') {
        n -= 1;
    }
    if n == 0 {
        return Err(format!("'{s}': 0x without hex digits"));
    }
    let d = &digits[..n];
    let (first, tail) = d.split_at(n % 2);
    if !first.is_empty() {
        bytes.push(u8::from_str_radix(first, 16).expect("hex digit"));
    }
    for i in (0..tail.len()).step_by(2) {
        bytes.push(u8::from_str_radix(&tail[i..i + 2], 16).expect("hex digits"));
    }
    Ok(2 + n)
}

/// A decimal element (a 32-bit value, its bytes little-endian without
/// leading zeros) at the start of `rest`: the characters it used.
fn decimal(s: &str, rest: &str, bytes: &mut Vec<u8>) -> Result<usize, String> {
    // A decimal number, up to the next element.
    let end = rest
        .char_indices()
        .skip(1)
        .find(|&(i, c)| {
            !c.is_ascii_digit() || rest[i..].starts_with("0x") || rest[i..].starts_with("0X")
        })
        .map(|(i, _)| i)
        .unwrap_or(rest.len());
    let v: i64 = rest[..end].parse().map_err(|_| {
        format!(
            "'{s}': '{}' is not a pattern element; use 0x hex, a decimal number, \"text\", 'file' or %o",
            &rest[..end]
        )
    })?;
    if v > i32::MAX as i64 || v < i32::MIN as i64 {
        return Err(format!(
            "'{s}': {v} is outside the 32-bit range of a decimal element; write larger values in hex (0x…)"
        ));
    }
    let mut u = v as i32 as u32;
    if u == 0 {
        bytes.push(0);
    }
    while u != 0 {
        bytes.push(u as u8);
        u >>= 8;
    }
    Ok(end)
}

impl Pattern {
    /// Parse fio's pattern syntax. (fio's buffer_pattern takes no `%o`;
    /// dioscope's does, so a written block can name its own offset.)
    pub fn parse(input: &str) -> Result<Pattern, String> {
        let s = input.trim();
        if s.is_empty() {
            return Err("an empty pattern; give bytes such as 0xdeadbeef, \"text\" or %o".into());
        }
        let mut p = Pattern::default();
        let mut rest = s;
        while !rest.is_empty() {
            let used = if let Some(r) = rest.strip_prefix('"') {
                let end = r
                    .find('"')
                    .ok_or_else(|| format!("'{s}': a string without its closing \""))?;
                p.bytes.extend_from_slice(&r.as_bytes()[..end]);
                end + 2
            } else if let Some(r) = rest.strip_prefix('\'') {
                let end = r
                    .find('\'')
                    .ok_or_else(|| format!("'{s}': a file name without its closing '"))?;
                let path = &r[..end];
                let data = std::fs::read(path).map_err(|e| {
                    format!("pattern file '{path}': {e}; give a readable file or inline bytes")
                })?;
                if data.is_empty() {
                    return Err(format!("pattern file '{path}' is empty"));
                }
                let room = MAX_PATTERN.saturating_sub(p.bytes.len());
                p.bytes.extend_from_slice(&data[..data.len().min(room)]);
                end + 2
            } else if let Some(r) = rest.strip_prefix('%') {
                if !r.starts_with('o') {
                    return Err(format!(
                        "'{s}': %{} is not a pattern format; the one format is %o (the block's offset)",
                        r.chars().next().unwrap_or(' ')
                    ));
                }
                p.offsets.push(p.bytes.len());
                p.bytes.extend_from_slice(&[0; 8]);
                2
            } else if rest.len() > 2 && (rest.starts_with("0x") || rest.starts_with("0X")) {
                hex(s, rest, &mut p.bytes)?
            } else {
                decimal(s, rest, &mut p.bytes)?
            };
            rest = &rest[used.min(rest.len())..];
            if p.bytes.len() > MAX_PATTERN {
                return Err(format!(
                    "'{s}' is {} bytes long; a pattern holds at most {MAX_PATTERN}",
                    p.bytes.len()
                ));
            }
        }
        Ok(p)
    }

    /// The pattern's bytes (offsets as zeros).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the pattern pastes the block offset (`%o`): then each block
    /// must be filled when it is written.
    pub fn has_offset(&self) -> bool {
        !self.offsets.is_empty()
    }

    /// The pattern, started again every `n` bytes (`verify_pattern_interval`).
    pub fn every(mut self, n: u64) -> Pattern {
        self.every = n as usize;
        self
    }

    /// Fill `buf` with the pattern repeated, `%o` holding `offset`; with
    /// `verify_pattern_interval`, one instance per piece of that length,
    /// `%o` holding the piece's offset.
    pub fn fill(&self, buf: &mut [u8], offset: u64) {
        if self.every > 0 && self.every < buf.len() {
            for (k, piece) in buf.chunks_mut(self.every).enumerate() {
                self.fill_one(piece, offset + (k * self.every) as u64);
            }
        } else {
            self.fill_one(buf, offset);
        }
    }

    fn fill_one(&self, buf: &mut [u8], offset: u64) {
        let n = self.bytes.len().min(buf.len());
        if n == 0 {
            return;
        }
        buf[..n].copy_from_slice(&self.bytes[..n]);
        for &o in &self.offsets {
            let b = offset.to_le_bytes();
            let end = (o + 8).min(n);
            if o < end {
                buf[o..end].copy_from_slice(&b[..end - o]);
            }
        }
        // Double the filled part until the buffer is full: log(n) copies.
        let mut done = n;
        while done < buf.len() {
            let k = done.min(buf.len() - done);
            let (head, tail) = buf.split_at_mut(done);
            tail[..k].copy_from_slice(&head[..k]);
            done += k;
        }
    }

    /// Whether `buf` holds the pattern for `offset`. `scratch` is at least
    /// as long as `buf`.
    pub fn matches(&self, buf: &[u8], offset: u64, scratch: &mut [u8]) -> bool {
        let s = &mut scratch[..buf.len()];
        self.fill(s, offset);
        s == buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &str) -> Vec<u8> {
        Pattern::parse(s).unwrap().bytes().to_vec()
    }

    #[test]
    fn fio_pattern_forms() {
        assert_eq!(bytes("\"abcd\""), b"abcd");
        assert_eq!(bytes("-1024"), [0x00, 0xfc, 0xff, 0xff]);
        assert_eq!(bytes("66"), [0x42]);
        assert_eq!(bytes("0"), [0]);
        assert_eq!(bytes("0xFF0X1"), [0xff, 0x01]);
        assert_eq!(bytes("0xdeadbeef"), [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(bytes("0x123"), [0x01, 0x23]);
        assert_eq!(
            bytes("\"123\"0xFFeeCC"),
            [0x31, 0x32, 0x33, 0xff, 0xee, 0xcc]
        );
        assert_eq!(
            bytes("-100xab\"1\"%o\"2\""),
            [0xf6, 0xff, 0xff, 0xff, 0xab, 0x31, 0, 0, 0, 0, 0, 0, 0, 0, 0x32]
        );
        assert_eq!(bytes("0xfefefefefefefefefefe"), [0xfe; 10]);
        for bad in [
            "",
            "\"open",
            "%x",
            "0x",
            "banana",
            "99999999999",
            "'/no/such/file'",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
        let long = format!("0x{}", "ab".repeat(MAX_PATTERN + 1));
        assert!(Pattern::parse(&long).is_err());
    }

    #[test]
    fn file_element_reads_the_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("pat");
        std::fs::write(&f, b"xyz").unwrap();
        assert_eq!(bytes(&format!("0x01'{}'", f.display())), b"\x01xyz");
    }

    #[test]
    fn fill_repeats_and_pastes_the_offset() {
        let p = Pattern::parse("0xaa%o").unwrap();
        assert!(p.has_offset());
        let mut b = vec![0u8; 40];
        p.fill(&mut b, 0x0102_0304_0506_0708);
        let unit = [0xaa, 8, 7, 6, 5, 4, 3, 2, 1];
        for (i, x) in b.iter().enumerate() {
            assert_eq!(*x, unit[i % 9], "byte {i}");
        }
        let mut s = vec![0u8; 40];
        assert!(p.matches(&b, 0x0102_0304_0506_0708, &mut s));
        assert!(!p.matches(&b, 4096, &mut s));
        // A buffer shorter than the pattern gets its head.
        let mut short = [0u8; 3];
        p.fill(&mut short, 1);
        assert_eq!(short, [0xaa, 1, 0]);
    }
}
