//! Experiments: results set against each other. A comparison of two sides
//! with significance ([`compare`]), the facts that must match or be named
//! ([`differ`]), the per-trial samples both read ([`samples`]), and grids
//! of runs ([`sweep`]). Everything here is typed and reads back from JSON
//! (the HTML report renders it).

pub mod compare;
pub mod differ;
pub mod samples;
pub mod sequential;
pub mod sweep;

pub use compare::{compare, CompareSettings, Comparison, Input, Outcome, Verdict};
pub use sweep::{Sweep, SweepCell};

/// A metric's value in its unit, for tables.
pub fn show(unit: &str, v: f64) -> String {
    use crate::results::{human_count, human_ns, human_rate};
    match unit {
        "ops" => human_count(v),
        "bytes" => format!("{}/s", human_rate(v)),
        "ns" => human_ns(v),
        "us" => format!("{v:.2} µs"),
        _ => format!("{v:.2}"),
    }
}
