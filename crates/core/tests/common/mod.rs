//! What the tests that read dioscope's own sources share: the `.rs` files
//! of a tree, and a file's text without its test code. Used by the test
//! binaries of crates/core/tests (`mod common;`), by the crate's own
//! audits (`crate::source_scan`, lib.rs) and by tests/integration
//! (`source_scan`), each through `#[path]`: one definition.
//!
//! Test code is left out item by item, not by cutting the file at its
//! first `#[cfg(test)]`: a test-only entry in the middle of a file (an
//! example engine in `engine_list!`, a test-only helper) leaves the code
//! after it in the scan.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively, appended to `out`.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Which bytes of `text` are code: not in a comment, a string or a
/// character literal.
fn code_mask(text: &str) -> Vec<bool> {
    let b = text.as_bytes();
    let mut code = vec![true; b.len()];
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'r'
            && (!ident(i) || (b[i - 1] == b'b' && !ident(i - 1)))
            && b[i + 1..]
                .iter()
                .position(|&c| c != b'#')
                .is_some_and(|k| b[i + 1 + k] == b'"')
        {
            // A raw string: r"…", r#"…"#, br#"…"#.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            i += 2 + hashes;
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i = (i + close.len()).min(b.len());
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\''), not a lifetime ('a).
            let len = text[i + 1..].chars().next().map_or(0, char::len_utf8);
            if b.get(i + 1) == Some(&b'\\') {
                i += 3;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i = (i + 1).min(b.len());
            } else if b.get(i + 1 + len) == Some(&b'\'') {
                i += 2 + len;
            } else {
                i += 1;
                continue;
            }
        } else {
            i += 1;
            continue;
        }
        code[start..i].iter_mut().for_each(|c| *c = false);
    }
    code
}

/// The bracket that closes the one at `open`.
fn closing(b: &[u8], code: &[bool], open: usize) -> usize {
    let mut depth = 0usize;
    for i in open..b.len() {
        if !code[i] {
            continue;
        }
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// Where the item that starts at `at` ends: after its `;` or `,` (a
/// declaration, a list entry), after the `}` of its block (a `mod`, `fn`,
/// `impl` …), or before the bracket that closes the list it is in.
fn item_end(b: &[u8], code: &[bool], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    // Whether an `=` came first at depth 0: the item is an expression
    // (`const X: T = S { … };`), which a block does not end.
    let mut assigned = false;
    while i < b.len() {
        if !code[i] {
            i += 1;
            continue;
        }
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => return i,
            b')' | b']' => depth -= 1,
            b'}' => {
                depth -= 1;
                if depth == 0 && !assigned {
                    let next = (i + 1..b.len()).find(|&k| !b[k].is_ascii_whitespace());
                    return match next {
                        Some(k) if b[k] == b',' || b[k] == b';' => k + 1,
                        _ => i + 1,
                    };
                }
            }
            b';' | b',' if depth == 0 => return i + 1,
            b'=' if depth == 0 => {
                let prev = if i > 0 { b[i - 1] } else { b' ' };
                let next = b.get(i + 1).copied().unwrap_or(b' ');
                if !matches!(next, b'>' | b'=') && !matches!(prev, b'=' | b'!' | b'<' | b'>') {
                    assigned = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// `text` without its test code: each `#[cfg(test)]` item (a `mod tests
/// { … }` matched brace for brace, a `mod x;`, a test-only helper, an
/// entry of a registration list), with the attributes after it. What is
/// left out is replaced by its line breaks, so line numbers still hold.
pub fn without_test_code(text: &str) -> String {
    const ATTR: &str = "#[cfg(test)]";
    let b = text.as_bytes();
    let code = code_mask(text);
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut i = 0;
    while let Some(k) = text[i..].find(ATTR) {
        let at = i + k;
        if !code[at] {
            i = at + ATTR.len();
            continue;
        }
        // Skip the attributes after it, and comments, to the item.
        let mut j = at + ATTR.len();
        loop {
            while j < b.len() && (b[j].is_ascii_whitespace() || !code[j]) {
                j += 1;
            }
            if b[j..].starts_with(b"#[") {
                j = closing(b, &code, j + 1) + 1;
            } else {
                break;
            }
        }
        let end = item_end(b, &code, j);
        out.push_str(&text[from..at]);
        out.extend(text[at..end].chars().filter(|&c| c == '\n'));
        from = end;
        i = end;
    }
    out.push_str(&text[from..]);
    out
}

#[test]
fn test_code_is_left_out_item_by_item_and_the_code_after_it_kept() {
    let t = "use crate::a;\n#[cfg(test)]\nmod tests {\n    fn f() { g(\"}\", '}') }\n}\n\
             list!(\n    one,\n    #[cfg(test)]\n    example,\n    two,\n);\n\
             #[cfg(test)]\n#[path = \"x.rs\"]\nmod x;\n\
             #[cfg(test)]\nconst L: &[u8] = &[1, 2];\n\
             #[cfg(test)]\nfn helper() -> S { S { a: 1 } }\n\
             let s = \"#[cfg(test)] not code\";\n\
             m! { a => A,\n    #[cfg(test)]\n    b => B,\n    ;\n    c }\n\
             #[cfg(test)]\nlast\n)\nafter();\n";
    let out = without_test_code(t);
    assert_eq!(out.lines().count(), t.lines().count(), "{out}");
    for kept in [
        "use crate::a;",
        "one,",
        "two,",
        "let s = \"#[cfg(test)] not code\";",
        "m! { a => A,",
        ";",
        "c }",
        ")",
        "after();",
    ] {
        assert!(
            out.lines().any(|l| l.trim() == kept),
            "{kept} left out of\n{out}"
        );
    }
    for gone in [
        "fn f", "example", "mod x", "const L", "helper", "b => B", "last",
    ] {
        assert!(!out.contains(gone), "{gone} kept in\n{out}");
    }
    // A raw string, a lifetime or an escaped quote does not confuse it.
    let t = "fn a<'x>(s: &'x str) { r#\"}\"#; '\\''; }\n#[cfg(test)]\nfn b() {}\nfn c() {}\n";
    assert_eq!(
        without_test_code(t),
        "fn a<'x>(s: &'x str) { r#\"}\"#; '\\''; }\n\n\nfn c() {}\n"
    );
}
