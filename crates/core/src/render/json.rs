//! fio-compatible JSON (`json`, and `json+` with latency bins). Programs
//! written for fio's JSON read it unchanged; dioscope's own measurements sit
//! under a top-level `"dioscope"` key. The text is the typed result
//! serialised: nothing here decides a key.

use super::{Exporter, Format};
use crate::results::RunDoc;

pub const FORMAT: Format<RunDoc> = Format {
    name: "json",
    aliases: &[],
    help: "fio's JSON, with dioscope's measurements and diagnosis under \"dioscope\"",
    exporter: &Json { bins: false },
};

/// `json` (`bins: false`) and `json+` (`bins: true`, see `json_plus.rs`).
pub struct Json {
    pub bins: bool,
}

impl Exporter<RunDoc> for Json {
    fn render(&self, doc: &RunDoc) -> String {
        doc.to_json(self.bins)
    }
}
