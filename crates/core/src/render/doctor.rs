//! The formats of `dioscope doctor`'s checklist (a [`DoctorReport`]).

use super::Exporter;
use crate::diag::DoctorReport;

/// The checklist as text: one line per check, findings wrapped below.
pub struct Checklist;

impl Exporter<DoctorReport> for Checklist {
    fn render(&self, r: &DoctorReport) -> String {
        r.render_text()
    }
}

/// The checklist as JSON (checks, findings with severity, environment).
pub struct Json;

impl Exporter<DoctorReport> for Json {
    fn render(&self, r: &DoctorReport) -> String {
        r.doc().to_json()
    }
}
