//! The doctor's checklist: one line per check with its status and findings.
//! Data only; [`super::checks`] fills it and [`super::doctor`] renders it.

use serde::Serialize;
use std::path::PathBuf;

use super::env::Environment;
use super::findings::{Finding, Severity};
use super::pagecache::Residency;
use super::sparse::{FileLayout, ZramStat};
// Plain data in the result layer (the doctor document); the checks set it.
pub use crate::results::doctor::Status;

impl Status {
    pub fn mark(self) -> &'static str {
        match self {
            Status::Pass => "✓",
            Status::Info => "i",
            Status::Warn => "!",
            Status::Fail => "✗",
            Status::Skip => "-",
        }
    }

    fn of(findings: &[Finding]) -> Status {
        match findings.iter().map(Finding::severity).max() {
            None => Status::Pass,
            Some(Severity::Info) => Status::Info,
            Some(Severity::Warning) => Status::Warn,
            Some(Severity::Critical) => Status::Fail,
        }
    }
}

/// One line of the checklist.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    /// What the checklist line says: what was found when there is no
    /// finding, why it was skipped, or — with findings — their texts, so that
    /// the JSON says what the text says (never the pass text next to
    /// findings that contradict it).
    pub detail: String,
    #[serde(serialize_with = "super::findings::serialize_findings")]
    pub findings: Vec<Finding>,
}

impl Check {
    /// A check whose status follows from its findings; `pass` is its detail
    /// when there are none, else the detail is the findings' texts (what the
    /// checklist shows).
    pub fn from_findings(
        name: &'static str,
        pass: impl Into<String>,
        findings: Vec<Finding>,
    ) -> Check {
        let detail = if findings.is_empty() {
            pass.into()
        } else {
            findings
                .iter()
                .map(Finding::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        };
        Check {
            name,
            status: Status::of(&findings),
            detail,
            findings,
        }
    }

    pub fn skip(name: &'static str, why: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Skip,
            detail: why.into(),
            findings: Vec::new(),
        }
    }
}

/// Everything `doctor` found about one target.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub target: PathBuf,
    pub environment: Environment,
    pub page_cache: Option<Residency>,
    pub layout: Option<FileLayout>,
    pub zram: Option<ZramStat>,
    pub checks: Vec<Check>,
    /// `doctor --peak`'s checks (empty without `--peak`).
    pub peak: Vec<crate::results::doctor::PeakCheck>,
}
