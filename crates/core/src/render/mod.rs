//! Renderers: one file per output format, each behind [`Exporter`], listed
//! in one table per kind of result ([`RUN_FORMATS`] for a run,
//! [`DOCTOR_FORMATS`] for doctor's checklist, [`COMPARISON_FORMATS`] and
//! [`SWEEP_FORMATS`] for `compare` and `sweep`). The table is the only list: `--output-format`'s
//! choices, its help and the dispatch all come from it.
//!
//! Every renderer reads the typed result ([`crate::results::RunDoc`]), never
//! the runner's raw measurements, so a result read back from a file (ours
//! or fio's) renders like a fresh one.
//!
//! To add a run format: write `render/NAME.rs` with a type implementing
//! [`Exporter`] and `pub const FORMAT: Format<RunDoc>`, then add `NAME` to
//! the `run_formats!` list below.

pub mod benchmark;
pub mod build;
pub mod compare_markdown;
pub mod compare_text;
pub mod doctor;
pub mod fio_text;
pub mod html_experiments;
pub mod html_stages;
pub mod sweep_csv;
pub mod sweep_text;
pub mod typed_json;

use crate::diag::DoctorReport;
use crate::experiment::{Comparison, Sweep};
use crate::results::RunDoc;

/// One output format of one kind of result (`R`: the result it renders).
pub trait Exporter<R: ?Sized>: Sync {
    /// The whole output (with its final newline).
    fn render(&self, result: &R) -> String;
}

/// A format in a table: the name `--output-format` takes, other names it
/// accepts, one line of help, and the renderer.
pub struct Format<R: ?Sized + 'static> {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub help: &'static str,
    pub exporter: &'static dyn Exporter<R>,
}

impl<R: ?Sized> std::fmt::Debug for Format<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Declares the run formats' modules and [`RUN_FORMATS`] from one list:
/// each module has a `pub const FORMAT: Format<RunDoc>`.
macro_rules! run_formats {
    ($($(#[$a:meta])* $m:ident),* $(,)?) => {
        $($(#[$a])* pub mod $m;)*
        /// The formats of a run's result, in `--help`'s order; the first is
        /// the default.
        pub static RUN_FORMATS: &[Format<RunDoc>] = &[$($(#[$a])* $m::FORMAT),*];
    };
}

run_formats!(
    text,
    json,
    json_plus,
    html,
    terse,
    benchmark_bigger,
    benchmark_smaller,
    // docs/ARCHITECTURE.md's "Add a format" followed by a test-only format
    // (the test `adding_a_format_is_one_file_and_one_line`).
    #[cfg(test)]
    example_format,
);

/// The formats of a comparison (`dioscope compare`); the first is the default.
pub static COMPARISON_FORMATS: &[Format<Comparison>] = &[
    Format {
        name: "normal",
        aliases: &["text"],
        help: "the differences, then per job and metric A, B, change with 95 % CI, p, verdict",
        exporter: &compare_text::CompareText,
    },
    Format {
        name: "json",
        aliases: &[],
        help: "the comparison as JSON (reads back; the HTML report renders it)",
        exporter: &typed_json::TypedJson,
    },
    Format {
        name: "markdown",
        aliases: &["md"],
        help: "the same tables in Markdown, for a pull request or a mailing-list post",
        exporter: &compare_markdown::CompareMarkdown,
    },
    benchmark::COMPARE_BIGGER,
    benchmark::COMPARE_SMALLER,
];

/// The formats of a sweep (`dioscope sweep`); the first is the default.
pub static SWEEP_FORMATS: &[Format<Sweep>] = &[
    Format {
        name: "normal",
        aliases: &["text"],
        help:
            "tables (--pivot ROW,COL), each cell mean ± σ [95 % CI] (trials) and its findings count",
        exporter: &sweep_text::SweepText,
    },
    Format {
        name: "json",
        aliases: &[],
        help: "every cell with its full result (reads back; compare FILE@OPT=V takes a cell)",
        exporter: &typed_json::TypedJson,
    },
    Format {
        name: "csv",
        aliases: &[],
        help: "one row per cell and job: options, per metric mean, CI bounds, trials; findings",
        exporter: &sweep_csv::SweepCsv,
    },
];

/// The formats of `dioscope doctor`'s checklist; the first is the default.
pub static DOCTOR_FORMATS: &[Format<DoctorReport>] = &[
    Format {
        name: "normal",
        aliases: &[],
        help: "the checklist: one line per check, findings below",
        exporter: &doctor::Checklist,
    },
    Format {
        name: "json",
        aliases: &["json+"],
        help: "the checklist, findings and environment as JSON",
        exporter: &doctor::Json,
    },
];

/// Look a format up by name or alias; `None` means "not a format of this
/// kind" (the caller says which exist with [`names`]).
pub fn find<R: ?Sized>(table: &'static [Format<R>], name: &str) -> Option<&'static Format<R>> {
    let name = name.trim();
    table
        .iter()
        .find(|f| f.name == name || f.aliases.contains(&name))
}

/// `normal, json, json+`: the choices, for errors and help.
pub fn names<R: ?Sized>(table: &[Format<R>]) -> String {
    table.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
}

/// One line per format for `--help`.
pub fn help<R: ?Sized>(table: &[Format<R>]) -> String {
    let w = table.iter().map(|f| f.name.len()).max().unwrap_or(0);
    table
        .iter()
        .map(|f| format!("  {:w$}  {}\n", f.name, f.help))
        .collect()
}

/// The error for an unknown format: which exist and an example.
pub fn unknown<R: ?Sized>(table: &[Format<R>], given: &str) -> String {
    format!(
        "--output-format={given}: '{given}' is not an output format; choose one of {} \
         (e.g. --output-format=json)",
        names(table)
    )
}
