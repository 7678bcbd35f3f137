//! `dioscope doctor`'s result as plain data: the checklist, the
//! environment and what the checks measured (page-cache residency, the
//! file's layout, a zram device's contents). `--output-format=json` writes
//! a [`DoctorDoc`]; [`DoctorDoc::from_json`] reads it back and
//! [`DoctorDoc::to_json`] renders it again byte for byte. The checks
//! (`diag::checks`) fill it through `diag::doctor`.

use super::environment::Environment;
use super::model::FindingDoc;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::PathBuf;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Info,
    Warn,
    Fail,
    /// Not applicable or could not be checked; the detail says why.
    Skip,
}

/// Page-cache residency of a byte range of a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Residency {
    pub pages: u64,
    pub page_size: u64,
    pub dirty: Option<u64>,
    pub writeback: Option<u64>,
    /// `cachestat` or `mincore`.
    pub method: Cow<'static, str>,
    pub offset: u64,
    pub len: u64,
}

/// Layout of a file over a range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLayout {
    pub file_size: u64,
    pub offset: u64,
    /// The range examined, clamped to the file size.
    pub len: u64,
    pub hole_bytes: u64,
    /// Allocated but never written (fallocate) and not already counted as a
    /// hole: reads return zeros. (Where SEEK_HOLE reports unwritten extents as
    /// holes, as on ext4 and XFS, they are in `hole_bytes` instead.)
    pub unwritten_bytes: u64,
    /// Extents overlapping the range; `None` when FIEMAP is not supported.
    pub extents: Option<u64>,
    /// Physically discontiguous runs of extents (file systems split long
    /// contiguous runs into several extents: ext4 at 128 MiB, btrfs at
    /// 128 MiB, so extents alone overstate fragmentation).
    pub fragments: Option<u64>,
}

/// What a zram device holds (`/sys/block/zramN/mm_stat` and `disksize`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZramStat {
    pub disksize: u64,
    /// Uncompressed bytes stored, zero-filled ("same") pages included.
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub same_pages: u64,
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckDoc {
    pub name: String,
    pub status: Status,
    /// What was found when there is no finding (or why it was skipped).
    pub detail: String,
    /// Each with its severity, message, `kind` and facts.
    pub findings: Vec<FindingDoc>,
}

/// Everything `doctor` found about one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorDoc {
    #[serde(with = "crate::osstr::serde_path")]
    pub target: PathBuf,
    pub environment: Environment,
    pub page_cache: Option<Residency>,
    pub layout: Option<FileLayout>,
    pub zram: Option<ZramStat>,
    pub checks: Vec<CheckDoc>,
    /// `doctor --peak`: what stands between the device and its peak IOPS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peak: Vec<PeakCheck>,
}

/// The state of one `doctor --peak` check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakState {
    Ok,
    NotOptimal,
    NotAvailable,
}

impl PeakState {
    /// The words the text checklist prints.
    pub fn words(self) -> &'static str {
        match self {
            PeakState::Ok => "ok",
            PeakState::NotOptimal => "not optimal",
            PeakState::NotAvailable => "not available",
        }
    }
}

/// One check of `doctor --peak`: its name, state, the value read and the
/// shell command that fixes it (where there is one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeakCheck {
    pub name: String,
    pub state: PeakState,
    pub value: String,
    pub fix: Option<String>,
}

impl DoctorDoc {
    /// Read `doctor --output-format=json`'s output.
    pub fn from_json(text: &str) -> Result<DoctorDoc, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The JSON text: pretty, with a final newline, as doctor writes it.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        s
    }
}
