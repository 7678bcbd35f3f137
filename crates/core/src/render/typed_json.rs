//! JSON of any typed result (comparisons, sweeps): pretty, with a final
//! newline, and reading back into the same type.

use super::Exporter;
use serde::Serialize;

pub struct TypedJson;

impl<R: Serialize> Exporter<R> for TypedJson {
    fn render(&self, result: &R) -> String {
        let mut s = serde_json::to_string_pretty(result).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        s
    }
}
