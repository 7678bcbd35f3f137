//! No function of the crates' non-test code is over 100 lines: a function
//! that long does several things, and each deserves a name (the issue
//! "Structure, round two (b)"). Every function is within the limit now, and
//! `OVER` is empty: the test fails when any function grows past it. (`OVER`
//! is where a function would be listed while a branch splits it; the test
//! also fails when a listed one no longer needs its entry.)

mod common;

use common::{rust_files, without_test_code};
use std::path::Path;

const LIMIT: usize = 100;

/// (file under crates/, function) still over [`LIMIT`] lines.
const OVER: &[(&str, &str)] = &[];

/// The source with comments, string and character literals blanked (their
/// braces are not code), line breaks kept.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                if b[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_ident(&b, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                if b[j] == '\n' {
                    out.push('\n');
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('{', '\'', '\u{7b}') or a lifetime ('a).
            let close = if next == Some('\\') {
                (i + 2..b.len().min(i + 12)).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(k) => {
                    out.push_str("' '");
                    i = k + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// Every function of `code` with its length in lines: (name, first line, lines).
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        let t = t.strip_prefix("const ").unwrap_or(t);
        let t = t.strip_prefix("unsafe ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let mut depth = 0i64;
        let mut started = false;
        for (k, line) in lines.iter().enumerate().skip(n) {
            for ch in line.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if !started && line.trim_end().ends_with(';') {
                break; // a declaration without a body
            }
            if started && depth == 0 {
                out.push((name.clone(), n + 1, k - n + 1));
                break;
            }
        }
    }
    out
}

/// Every non-test function over the limit: (file under crates/, name, first line, lines).
fn long_functions() -> Vec<(String, String, usize, usize)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in ["core/src", "sys/src"] {
        rust_files(&crates.join(c), &mut files);
    }
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&crates)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with("_tests.rs") || rel.ends_with("/tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Tests make their own fixtures and may be long.
        let text = without_test_code(&text);
        for (name, line, len) in functions(&code_only(&text)) {
            if len > LIMIT {
                out.push((rel.clone(), name, line, len));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_reader_measures_functions_and_ignores_braces_in_text() {
    let src = "fn a() {\n    let s = \"{{ {\";\n    let c = '{';\n    // {\n    x(|y| { y });\n}\nfn b();\npub(crate) fn c<'a>(x: &'a str) -> &'a str {\n    x\n}\n";
    let f = functions(&code_only(src));
    assert_eq!(f, [("a".to_string(), 1, 6), ("c".to_string(), 8, 3)]);
    let raw = "fn r() {\n    let s = r#\"}\"#;\n}\n";
    assert_eq!(functions(&code_only(raw)), [("r".to_string(), 1, 3)]);
}

#[test]
fn no_function_is_over_100_lines() {
    let found = long_functions();
    let new: Vec<String> = found
        .iter()
        .filter(|(f, n, _, _)| !OVER.contains(&(f.as_str(), n.as_str())))
        .map(|(f, n, l, len)| format!("{f}:{l}: fn {n} is {len} lines"))
        .collect();
    assert!(
        new.is_empty(),
        "functions over {LIMIT} lines: give each of their parts a name of its own\n{}",
        new.join("\n")
    );
    let stale: Vec<String> = OVER
        .iter()
        .filter(|(f, n)| !found.iter().any(|(g, m, _, _)| g == f && m == n))
        .map(|(f, n)| format!("{f}: fn {n}"))
        .collect();
    assert!(
        stale.is_empty(),
        "these are no longer over {LIMIT} lines: remove them from OVER\n{}",
        stale.join("\n")
    );
}
