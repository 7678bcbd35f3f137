//! dioscope-core: everything dioscope does, as a library the binary drives.
//!
//! - [`commands`]: run, doctor, options: one file each, one table, the usage.
//! - [`job`]: the option table, units, job files and command lines → a [`job::Plan`].
//! - [`targets`]: opening targets once, laying out files, alignment checks.
//! - [`engines`]: one file per I/O engine behind the [`engines::Engine`] trait.
//! - [`runner`]: workers, offsets, trials, progress and signals.
//! - [`results`]: the result layer (raw measurements, aggregation, units).
//! - [`stats`]: latency histograms and summaries.
//! - [`render`]: one renderer per output format, over the typed result.
//! - [`experiment`]: comparisons with significance and sweeps over option grids.
//! - [`safety`]: the guard that refuses to overwrite devices in use or holding data.

// Errors carry the option, value, origin and an example: large, but built only
// on the cold path before any I/O.
#![allow(clippy::result_large_err)]
// All unsafe code lives in dioscope-sys, behind safe types.
#![forbid(unsafe_code)]

pub mod commands;
pub mod console;
pub mod diag;
#[cfg(feature = "mpi")]
pub mod dist;
pub mod engines;
pub mod experiment;
pub mod infile;
pub mod job;
pub mod osstr;
pub mod outfile;
pub mod pipeline;
pub mod profile;
pub mod recipes;
pub mod render;
pub mod results;
pub mod runner;
pub mod safety;
pub mod scratch;
pub mod stages;
pub mod stats;
pub mod svg;
pub mod targets;
pub mod verify;

/// The `.rs` files of a tree and a file's text without its test code, for
/// the tests that read the sources (one definition, shared with the test
/// binaries of crates/core/tests and tests/integration).
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
pub(crate) mod source_scan;

/// The tests of docs/ARCHITECTURE.md's extension recipes that name files:
/// a recipe's steps list exactly what its test-only example took.
#[cfg(test)]
mod recipe_check {
    use crate::source_scan::rust_files;
    use std::path::{Path, PathBuf};

    fn root() -> PathBuf {
        std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).unwrap()
    }

    /// The first `….rs` path of each numbered step of the recipe under
    /// the bold heading `**{title}**` in docs/ARCHITECTURE.md.
    fn step_files(title: &str) -> Vec<String> {
        let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
        let start = doc
            .find(&format!("**{title}**"))
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no recipe **{title}**"));
        let mut steps: Vec<String> = Vec::new();
        for line in doc[start..].lines().skip(1) {
            let numbered = line
                .split_once(". ")
                .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            if let Some((_, rest)) = numbered {
                steps.push(rest.to_string());
            } else if line.starts_with(' ') || line.is_empty() {
                if let Some(s) = steps.last_mut() {
                    s.push(' ');
                    s.push_str(line.trim());
                }
            } else if !steps.is_empty() {
                break;
            }
        }
        steps
            .iter()
            .map(|s| {
                s.split('`')
                    .skip(1)
                    .step_by(2)
                    .find(|t| t.ends_with(".rs"))
                    .unwrap_or_else(|| panic!("a step of {title} names no file: {s}"))
                    .trim_start_matches("crates/core/src/")
                    .to_string()
            })
            .collect()
    }

    /// The recipe `title`'s steps, with `placeholder` (its example name,
    /// `my_engine`) read as `example`, are exactly the files of the tree
    /// that name `example`: its own file, and one line of code in each
    /// other file. A recipe that needs one more file, or an example that
    /// needs one more registration, fails here.
    pub(crate) fn recipe_took(title: &str, placeholder: &str, example: &str) {
        let src = root().join("crates/core/src");
        let mut all = Vec::new();
        for d in ["crates", "src", "tests"] {
            rust_files(&root().join(d), &mut all);
        }
        let rel = |p: &Path| {
            p.strip_prefix(&src)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_else(|_| p.display().to_string())
        };
        let mut wanted: Vec<String> = Vec::new();
        for step in step_files(title) {
            let step = step.replace(placeholder, example);
            let found: Vec<String> = all
                .iter()
                .map(|p| rel(p))
                .filter(|r| r == &step || r.ends_with(&format!("/{step}")))
                .collect();
            assert_eq!(found.len(), 1, "{title}: step file {step} is {found:?}");
            wanted.push(found[0].clone());
        }
        let own = wanted[0].clone();
        assert!(own.ends_with(&format!("{example}.rs")), "{title}: {own}");
        let mut naming: Vec<String> = Vec::new();
        for p in &all {
            let r = rel(p);
            if r == own {
                continue;
            }
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let lines = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//") && l.contains(example))
                .count();
            if lines > 0 {
                assert_eq!(lines, 1, "{title}: {r} names {example} on {lines} lines");
                naming.push(r);
            }
        }
        naming.sort();
        let mut others = wanted[1..].to_vec();
        others.sort();
        assert_eq!(
            naming, others,
            "{title}: the files that name {example} vs the recipe's steps"
        );
    }
}
