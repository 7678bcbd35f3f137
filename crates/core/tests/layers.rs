//! The layers of dioscope-core, read from the sources: which top-level
//! module imports which (every `crate::X` path, grouped `use crate::{X, Y}`
//! included, test code left out), checked against the layer table of
//! docs/ARCHITECTURE.md. No module imports a module of its own row or of a
//! row below it, so there is no import cycle; and each row's "Imports"
//! column names exactly what its modules import, so the table stays true.

mod common;

use common::{rust_files, without_test_code};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules: directories and files under src/ (lib.rs aside).
fn modules(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if p.is_dir() {
            out.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if stem != "lib" {
                out.insert(stem.to_string());
            }
        }
    }
    out
}

/// Source without `//` comments (doc links are not imports).
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every path that starts with `crate::`: the module
/// itself, or each item of a group `crate::{a::b, c}` (nested groups are
/// inside their first segment, so only the top level of the group counts).
fn crate_paths(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let ident = |from: usize| -> String {
        text[from..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("crate::") {
        let start = at + i;
        at = start + "crate::".len();
        // `dioscope_core::crate::` never occurs; `$crate::` (macros) is the crate too.
        if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            continue;
        }
        if b.get(at) == Some(&b'{') {
            let mut depth = 0;
            let mut item_start = at + 1;
            let mut k = at;
            while k < b.len() {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' if depth == 1 => {
                        let s = text[item_start..k].trim_start();
                        out.push(ident(k - s.len()));
                        item_start = k + 1;
                    }
                    _ => {}
                }
                k += 1;
            }
            let s = text[item_start..k.min(b.len())].trim_start();
            out.push(ident(k.min(b.len()) - s.len()));
        } else {
            out.push(ident(at));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// The files of modules declared `#[cfg(test)] mod name;` (and all files
/// under such a module's folder): test code, which may reach any layer to
/// drive a whole run.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let stem = f.file_stem().unwrap().to_str().unwrap();
        let children = if stem == "mod" || stem == "lib" {
            f.parent().unwrap().to_path_buf()
        } else {
            f.parent().unwrap().join(stem)
        };
        let mut rest = text.as_str();
        while let Some(i) = rest.find("#[cfg(test)]") {
            rest = &rest[i + "#[cfg(test)]".len()..];
            let decl = rest.trim_start();
            let decl = decl
                .strip_prefix("pub(crate) ")
                .or_else(|| decl.strip_prefix("pub "))
                .unwrap_or(decl);
            let Some(d) = decl.strip_prefix("mod ") else {
                continue;
            };
            let name: String = d
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if d[name.len()..].trim_start().starts_with(';') {
                out.insert(children.join(format!("{name}.rs")));
                out.insert(children.join(&name));
            }
        }
    }
    files
        .iter()
        .filter(|f| out.iter().any(|t| f.starts_with(t)))
        .cloned()
        .collect()
}

/// Who imports whom among the top-level modules, in the code that is not
/// test code (a test may drive a whole run from any layer).
fn graph(root: &Path) -> Graph {
    let mods = modules(root);
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let tests = test_only_files(&files);
    let mut g: Graph = mods.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for f in files.iter().filter(|f| !tests.contains(*f)) {
        let rel = f.strip_prefix(root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = first.strip_suffix(".rs").unwrap_or(first).to_string();
        if top == "lib" {
            continue;
        }
        let text = without_comments(&std::fs::read_to_string(f).unwrap());
        for m in crate_paths(&without_test_code(&text)) {
            if m != top && mods.contains(&m) {
                g.get_mut(&top).unwrap().insert(m);
            }
        }
    }
    g
}

/// A cycle of the graph, if there is one (depth-first search).
fn a_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = path.iter().position(|p| p == m).unwrap();
                    let mut c = path[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, g, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// One row of the layer table: its modules and what its Imports column says
/// (`None`: "any layer above").
struct Row {
    modules: Vec<String>,
    imports: Option<BTreeSet<String>>,
}

fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| {
            s.trim_end_matches('/')
                .trim_end_matches(".rs")
                .split('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The rows of the table under "## Layers" in docs/ARCHITECTURE.md, bottom
/// layer first.
fn layer_table(doc: &str, mods: &BTreeSet<String>) -> Vec<Row> {
    let start = doc
        .find("## Layers")
        .expect("docs/ARCHITECTURE.md has a '## Layers' section");
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in doc[start..].lines().skip(1) {
        if line.starts_with('|') {
            in_table = true;
            let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
            if cells.len() < 3
                || cells[0].trim_start().starts_with("Layer")
                || cells[0].contains("---")
            {
                continue;
            }
            let modules: Vec<String> = backticked(cells[0])
                .into_iter()
                .filter(|m| mods.contains(m))
                .collect();
            if modules.is_empty() {
                continue; // the binary's row
            }
            let last = cells[cells.len() - 1];
            let imports = if last.contains("any layer above") {
                None
            } else {
                Some(
                    backticked(last)
                        .into_iter()
                        .filter(|m| mods.contains(m))
                        .collect(),
                )
            };
            rows.push(Row { modules, imports });
        } else if in_table {
            break;
        }
    }
    rows
}

#[test]
fn the_import_reader_sees_grouped_and_nested_paths() {
    let t =
        "use crate::{a::b, c, d::{e, f}};\nuse crate::g;\nlet x = crate::h::y();\nfoo_crate::i;";
    assert_eq!(crate_paths(t), ["a", "c", "d", "g", "h"]);
    assert_eq!(
        crate_paths("use crate::{\n    x,\n    y::z,\n};"),
        ["x", "y"]
    );
    // A comment is not an import.
    assert!(crate_paths(&without_comments("/// see [`crate::z`]\nfn f() {}")).is_empty());
    // Test code is left out, the code after it kept.
    let t = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { g({ 1 }) }\n}\n#[cfg(test)]\nx,\nuse crate::c;";
    assert_eq!(crate_paths(&without_test_code(t)), ["a", "c"]);
}

#[test]
fn the_cycle_finder_finds_a_planted_cycle() {
    let mut g: Graph = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    }
    let c = a_cycle(&g).expect("a → b → c → a");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    g.get_mut("c").unwrap().remove("a");
    assert!(a_cycle(&g).is_none());
}

#[test]
fn the_graph_is_read_from_the_real_sources() {
    // Known edges of the code as it is: if the reader stopped reading, these go.
    let g = graph(&src());
    for (from, to) in [
        ("commands", "pipeline"),
        ("pipeline", "runner"),
        ("render", "svg"),
        ("job", "engines"),
    ] {
        assert!(
            g[from].contains(to),
            "{from} should import {to}: {:?}",
            g[from]
        );
    }
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let g = graph(&src());
    if let Some(c) = a_cycle(&g) {
        panic!(
            "import cycle between top-level modules of crates/core/src: {}; move the shared \
             part below both (docs/ARCHITECTURE.md, Layers)",
            c.join(" → ")
        );
    }
}

#[test]
fn the_layer_table_of_architecture_md_is_the_import_graph() {
    let root = src();
    let mods = modules(&root);
    let g = graph(&root);
    let doc_path = root.join("../../../docs/ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let rows = layer_table(&doc, &mods);
    let mut row_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        for m in &r.modules {
            assert!(
                row_of.insert(m, i).is_none(),
                "docs/ARCHITECTURE.md lists `{m}` in two rows of the layer table"
            );
        }
    }
    let missing: Vec<&String> = mods
        .iter()
        .filter(|m| !row_of.contains_key(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's layer table does not list {missing:?}: add a row (or add them to the row of their layer)"
    );
    let mut wrong = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let mut used = BTreeSet::new();
        for m in &r.modules {
            for to in &g[m] {
                if row_of[to.as_str()] >= i {
                    wrong.push(format!(
                        "`{m}` imports `{to}`, which is not in a row above it (lower layer)"
                    ));
                }
                if !r.modules.contains(to) {
                    used.insert(to.clone());
                }
            }
        }
        if let Some(said) = &r.imports {
            if *said != used {
                wrong.push(format!(
                    "the row of {:?} says it imports {said:?}; the code imports {used:?}",
                    r.modules
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md, Layers:\n{}",
        wrong.join("\n")
    );
}
