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
    /// What was found when there is no finding (or why it was skipped).
    pub detail: String,
    #[serde(serialize_with = "super::findings::serialize_findings")]
    pub findings: Vec<Finding>,
}

impl Check {
    /// A check whose status follows from its findings; `detail` is shown when
    /// there are none.
    pub fn from_findings(
        name: &'static str,
        detail: impl Into<String>,
        findings: Vec<Finding>,
    ) -> Check {
        Check {
            name,
            status: Status::of(&findings),
            detail: detail.into(),
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
}
