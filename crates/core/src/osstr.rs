//! Any bytes in a file name (issue 23, principle 6).
//!
//! A Linux file name is bytes, not UTF-8. dioscope's parser and job model
//! hold text, so arguments and job files are taken in losslessly: each byte
//! that is not part of valid UTF-8 becomes one private-use character,
//! U+10FF00 + the byte ([`escape`]), and back ([`unescape`], [`path`]) when
//! the text names a file. A real name that itself holds a character of that
//! range has its bytes escaped the same way, so the mapping is exact both
//! ways for every byte string.
//!
//! For people and programs reading output, [`shown`] writes each escaped
//! byte as the four characters `\xHH`: the text and JSON outputs carry that
//! form (valid UTF-8), and the JSON adds the exact bytes in hex under
//! `dioscope.raw_names` (docs/RELIABILITY.md).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// The first of the 256 characters that stand for raw bytes.
const BASE: u32 = 0x10FF00;

fn is_escape(c: char) -> bool {
    (BASE..=BASE + 0xFF).contains(&(c as u32))
}

fn push_byte(out: &mut String, b: u8) {
    out.push(char::from_u32(BASE + b as u32).expect("a valid code point"));
}

/// Bytes → text, losslessly.
pub fn escape_bytes(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                push_valid(&mut out, s);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                push_valid(&mut out, std::str::from_utf8(good).expect("checked"));
                let bad = e.error_len().unwrap_or(rest.len());
                for &b in &rest[..bad] {
                    push_byte(&mut out, b);
                }
                bytes = &rest[bad..];
            }
        }
    }
}

/// Valid text, with characters of the escape range themselves escaped.
fn push_valid(out: &mut String, s: &str) {
    for c in s.chars() {
        if is_escape(c) {
            let mut buf = [0u8; 4];
            for &b in c.encode_utf8(&mut buf).as_bytes() {
                push_byte(out, b);
            }
        } else {
            out.push(c);
        }
    }
}

/// An argument or a name → text, losslessly.
pub fn escape(s: &OsStr) -> String {
    escape_bytes(s.as_bytes())
}

/// Text → the bytes it stands for.
fn unescape_bytes(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        if is_escape(c) {
            out.push((c as u32 - BASE) as u8);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    out
}

pub fn unescape(s: &str) -> OsString {
    OsString::from_vec(unescape_bytes(s))
}

/// The file `s` names.
pub fn path(s: &str) -> PathBuf {
    if s.chars().any(is_escape) {
        PathBuf::from(unescape(s))
    } else {
        PathBuf::from(s)
    }
}

/// Whether `s` stands for bytes that are not UTF-8.
pub fn has_raw(s: &str) -> bool {
    s.chars().any(is_escape)
}

/// For people: each raw byte as `\xHH`.
pub fn shown(s: &str) -> String {
    show_with(s, "\\x")
}

/// [`shown`] inside JSON text: the backslash escaped as JSON wants, so the
/// string's value reads `\xHH`.
pub fn shown_json(s: &str) -> String {
    show_with(s, "\\\\x")
}

/// Each raw byte as `prefix` and two hex digits.
fn show_with(s: &str, prefix: &str) -> String {
    if !has_raw(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_escape(c) {
            out.push_str(&format!("{prefix}{:02x}", c as u32 - BASE));
        } else {
            out.push(c);
        }
    }
    out
}

/// The exact bytes of `s`, in hex (the lossless form in JSON).
pub fn hex(s: &str) -> String {
    unescape_bytes(s)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Serde for a path that may hold any bytes: written as [`escape`]d text
/// (shown as `\xHH` in the output), read back exactly. For
/// `#[serde(with = "crate::osstr::serde_path")]`.
pub mod serde_path {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::path::{Path, PathBuf};

    pub fn serialize<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::escape(p.as_os_str()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Ok(super::path(&String::deserialize(d)?))
    }
}

/// [`serde_path`] for an `Option<PathBuf>`.
pub mod serde_opt_path {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::path::PathBuf;

    pub fn serialize<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        match p {
            Some(p) => s.serialize_some(&super::escape(p.as_os_str())),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(|s| super::path(&s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn invalid_bytes_round_trip_and_show_as_hex_escapes() {
        let raw = b"g\xff\xfe.dat";
        let s = escape_bytes(raw);
        assert_eq!(unescape_bytes(&s), raw);
        assert_eq!(shown(&s), "g\\xff\\xfe.dat");
        assert_eq!(hex(&s), "67fffe2e646174");
        assert_eq!(path(&s).as_os_str().as_bytes(), raw);
        // Valid text is untouched.
        assert_eq!(escape_bytes("naïve ✓".as_bytes()), "naïve ✓");
        assert_eq!(path("a/b"), PathBuf::from("a/b"));
        // In JSON text the backslash is escaped: the value reads \xff.
        let j = shown_json(&format!("\"{s}\""));
        let v: String = serde_json::from_str(&j).unwrap();
        assert_eq!(v, "g\\xff\\xfe.dat");
    }

    proptest! {
        #[test]
        fn every_byte_string_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let s = escape_bytes(&bytes);
            prop_assert_eq!(unescape_bytes(&s), bytes);
        }

        #[test]
        fn names_holding_escape_characters_round_trip(prefix in "[a-z]{0,4}", b in 0u32..256) {
            let c = char::from_u32(BASE + b).unwrap();
            let name = format!("{prefix}{c}");
            let s = escape_bytes(name.as_bytes());
            prop_assert_eq!(unescape_bytes(&s), name.as_bytes().to_vec());
        }
    }
}
