//! fio-compatible JSON (`json`, and `json+` with latency bins). Programs
//! written for fio's JSON read it unchanged; dioscope's own measurements sit
//! under a top-level `"dioscope"` key. The text is the typed result
//! serialised: nothing here decides a key.

use super::Exporter;
use crate::results::RunDoc;

/// `json` (`bins: false`) and `json+` (`bins: true`).
pub struct Json {
    pub bins: bool,
}

impl Exporter<RunDoc> for Json {
    fn render(&self, doc: &RunDoc) -> String {
        doc.to_json(self.bins)
    }
}
