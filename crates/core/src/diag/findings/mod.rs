//! Findings: what dioscope noticed about a target or a run, each with a
//! severity, a stable code and a text that says what happened and what to do.
//!
//! One file per finding: the file `foo_bar.rs` holds the struct `FooBar`
//! with its fields, its severity and its text (the [`Describe`] trait), and
//! `foo_bar` is the finding's code and JSON `kind`. The one line in the
//! [`findings!`] list below adds it to [`Finding`]. The check that produces it
//! lives in the module of its source and is listed in [`super::checks`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// How much a finding matters for the validity of the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Context; the numbers are fine.
    Info,
    /// The numbers may be distorted; read them with the finding in mind.
    Warning,
    /// The numbers do not measure what the job says, or the job cannot run.
    Critical,
}

impl Severity {
    /// The checklist mark: ✓ is for passed checks, so findings get ! or ✗.
    pub fn mark(self) -> &'static str {
        match self {
            Severity::Info => "i",
            Severity::Warning => "!",
            Severity::Critical => "✗",
        }
    }
}

/// When, relative to a trial, page-cache pages were seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Before,
    During,
    After,
}

/// A process other than dioscope that has the target open: the safety
/// module's type (its /proc scan fills it in), the one `Opener` of dioscope.
pub use crate::safety::Opener;

/// Why O_DIRECT is not direct on a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum BufferedReason {
    /// btrfs file with data checksums (not NOCOW/nodatasum): since Linux 6.14
    /// btrfs turns direct writes into buffered ones for such files.
    BtrfsDataChecksums,
    /// tmpfs/ramfs: accepts O_DIRECT, has no device.
    MemoryFilesystem,
    /// A loop device that reads and writes its backing file through the page
    /// cache (`loop/dio` = 0).
    LoopWithoutDirectIo { backing_file: String },
}

/// One trial's value of a metric, as flagged by the trial statistics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrialValue {
    /// 1-based trial number.
    pub trial: usize,
    pub value: f64,
    /// Modified Z-score.
    pub score: f64,
}

/// A condition dioscope measured during a trial that changes what the trial
/// measures besides the device: the per-trial facts of the environment
/// findings (`cpu_contention`, `other_device_io`, the page-cache findings).
/// The findings about trials that disagree (outliers, two groups, drift,
/// high variance, trials=auto not converging) carry them and name them before
/// any device cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// Other processes kept the CPUs dioscope may run on saturated.
    CpuContention,
    /// The device moved more data than the benchmark did.
    OtherDeviceIo,
    /// Page-cache pages of a direct-I/O target were resident when the trial
    /// started or while it ran.
    PageCache,
}

impl Condition {
    /// What it is, for the texts.
    pub fn what(self) -> &'static str {
        match self {
            Condition::CpuContention => "CPU contention (cpu_contention)",
            Condition::OtherDeviceIo => "other I/O on the device (other_device_io)",
            Condition::PageCache => "page-cache pages on the target (page_cache_on_target)",
        }
    }

    /// What to do about it: an imperative.
    pub fn remedy(self) -> &'static str {
        match self {
            Condition::CpuContention => {
                "Stop the other processes on dioscope's CPUs or pin them apart (cpus_allowed=, taskset)"
            }
            Condition::OtherDeviceIo => "Stop the other I/O on the device (find it with `iotop -o`)",
            Condition::PageCache => {
                "Stop whoever reads the target without O_DIRECT (find it with `fuser -v`)"
            }
        }
    }
}

/// One measured condition and the 1-based trials it touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialCondition {
    pub condition: Condition,
    pub trials: Vec<usize>,
}

/// The conditions that touched any of `about` (1-based trials), each with
/// the trials of `about` it touched: "CPU contention (cpu_contention) in
/// trials 2, 5". `None` when none did.
fn touched(conds: &[TrialCondition], about: &[usize]) -> Option<String> {
    let parts: Vec<String> = conds
        .iter()
        .filter_map(|c| {
            let hit: Vec<usize> = c
                .trials
                .iter()
                .copied()
                .filter(|t| about.contains(t))
                .collect();
            (!hit.is_empty()).then(|| {
                let s = if hit.len() == 1 { "" } else { "s" };
                format!("{} in trial{s} {}", c.condition.what(), list(&hit))
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// The remedies of the conditions that touched any of `about`, as
/// sentences.
fn remedies(conds: &[TrialCondition], about: &[usize]) -> String {
    let mut out = String::new();
    for c in conds {
        if c.trials.iter().any(|t| about.contains(t)) && !out.contains(c.condition.remedy()) {
            out.push_str(c.condition.remedy());
            out.push_str(". ");
        }
    }
    out
}

/// What every finding says about itself.
pub trait Describe {
    /// How much it matters; may depend on the facts (a writable opener is
    /// worse than a read-only one).
    fn severity(&self) -> Severity;
    /// What happened, why it distorts the numbers, and what to do (an
    /// imperative or a command: the `every_text_says_what_to_do` test checks).
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

/// Declares the finding modules and generates [`Finding`] with one variant
/// per module (`code::Type`), its `severity`, `code`, `Display` and `From`.
macro_rules! findings {
    ($($(#[$a:meta])* $code:ident :: $T:ident,)*) => {
        $($(#[$a])* mod $code; $(#[$a])* pub use $code::$T;)*

        /// Everything dioscope can tell the user about a target or a run.
        /// The JSON form is `{"kind": code, ...fields}` ([`Finding::reported`]
        /// adds `severity` and `message`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum Finding {
            $($(#[$a])* $T($T),)*
        }

        impl Finding {
            pub fn severity(&self) -> Severity {
                match self {
                    $($(#[$a])* Finding::$T(x) => x.severity(),)*
                }
            }

            /// Stable snake-case identifier; also the `kind` of the JSON form.
            pub fn code(&self) -> &'static str {
                match self {
                    $($(#[$a])* Finding::$T(_) => stringify!($code),)*
                }
            }
        }

        impl fmt::Display for Finding {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($(#[$a])* Finding::$T(x) => x.describe(f),)*
                }
            }
        }

        /// Every finding's code, in the order listed.
        pub const CODES: &[&str] = &[$($(#[$a])* stringify!($code),)*];

        /// One example of every finding (each file's `example()`), for the
        /// tests that check every text.
        #[cfg(test)]
        pub(crate) fn examples() -> Vec<Finding> {
            [$($(#[$a])* $code::example(),)*].into()
        }

        $($(#[$a])* impl From<$T> for Finding {
            fn from(x: $T) -> Finding {
                Finding::$T(x)
            }
        })*
    };
}

pub use cpu_contention::{CpuProcess, DeliveryCost};
pub use other_device_io::IoProcess;
pub use page_cache_on_target::{merge as merge_page_cache, PageCacheCause};

impl Finding {
    /// The form that goes into the JSON: severity, code and text next to the
    /// finding's own fields.
    pub fn reported(&self) -> Reported<'_> {
        Reported {
            severity: self.severity(),
            message: self.to_string(),
            finding: self,
        }
    }
}

/// A finding with its severity and message, for serialisation.
#[derive(Debug, Serialize)]
pub struct Reported<'a> {
    pub severity: Severity,
    pub message: String,
    #[serde(flatten)]
    pub finding: &'a Finding,
}

/// `serialize_with` helper: a list of findings in their reported form
/// (severity, message, kind and fields), the shape the JSON uses everywhere.
pub fn serialize_findings<S: serde::Serializer>(v: &[Finding], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(Finding::reported))
}

pub use crate::results::human_bytes;

/// A metric value with about four significant digits.
fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// 1-based trial numbers, ascending and each once (two groups both have
/// a trial 1: "trial 1", not "trials 1, 1").
fn list(v: &[usize]) -> String {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.dedup();
    v.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// "trial 3" or "trials 1, 2" for a list of 1-based trials ([`list`]).
fn trials_word(v: &[usize]) -> String {
    let l = list(v);
    if l.contains(',') {
        format!("trials {l}")
    } else {
        format!("trial {l}")
    }
}

/// How many processes a finding's text names; the JSON keeps all.
pub const NAMED_PROCESSES: usize = 5;

/// The first [`NAMED_PROCESSES`] of `items` (the caller orders them, most
/// active first) joined with ", ", then "and N more (in the JSON)" when
/// there are more: a finding names the few that matter and leaves the long
/// tail to the JSON.
fn top_few<T>(items: &[T], name: impl Fn(&T) -> String) -> String {
    let mut s: Vec<String> = items.iter().take(NAMED_PROCESSES).map(name).collect();
    let more = items.len().saturating_sub(NAMED_PROCESSES);
    if more > 0 {
        s.push(format!("and {more} more (in the JSON)"));
    }
    s.join(", ")
}

fn pct(share: f64) -> String {
    format!("{:+.1} %", share * 100.0)
}

findings! {
    page_cache_on_target::PageCacheOnTarget,
    page_cache_kept::PageCacheKept,
    other_openers::OtherOpeners,
    other_device_io::OtherDeviceIo,
    silently_buffered::SilentlyBuffered,
    reads_of_unwritten_regions::ReadsOfUnwrittenRegions,
    zram_never_written::ZramNeverWritten,
    buffered_io::BufferedIo,
    misaligned::Misaligned,
    outlier_trials::OutlierTrials,
    bimodal_trials::BimodalTrials,
    drift_across_trials::DriftAcrossTrials,
    trials_not_converged::TrialsNotConverged,
    drift_within_trial::DriftWithinTrial,
    high_variance::HighVariance,
    tool_bottleneck::ToolBottleneck,
    kernel_cpu_bound::KernelCpuBound,
    cpu_contention::CpuContention,
    io_wq_punts::IoWqPunts,
    fragmented_file::FragmentedFile,
    governor_not_performance::GovernorNotPerformance,
    hipri_without_poll::HipriWithoutPoll,
    write_amplification::WriteAmplification,
    // docs/ARCHITECTURE.md's "Add a finding" followed to the letter by a
    // test-only finding (its test `adding_a_finding_is_one_file_and_one_line`).
    #[cfg(test)]
    example_finding::ExampleFinding,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_snake_case_and_match_json_kind() {
        let all = examples();
        let codes: HashSet<&str> = all.iter().map(|f| f.code()).collect();
        assert_eq!(codes.len(), all.len());
        for f in &all {
            assert!(f.code().chars().all(|c| c.is_ascii_lowercase() || c == '_'));
            let v = serde_json::to_value(f.reported()).unwrap();
            assert_eq!(v["kind"], f.code(), "{v}");
            assert_eq!(v["message"], f.to_string());
            assert!(v["severity"].is_string());
            // The reported form reads back into the same finding.
            let back: Finding = serde_json::from_value(v).unwrap();
            assert_eq!(&back, f);
        }
    }

    #[test]
    fn every_finding_has_an_example() {
        let codes: Vec<&str> = examples().iter().map(|f| f.code()).collect();
        assert_eq!(codes, CODES);
    }

    #[test]
    fn every_text_says_what_to_do() {
        // Each message names an action: an imperative or a concrete command.
        let verbs = [
            "Use ",
            "Keep ",
            "Stop ",
            "Write ",
            "Look ",
            "Compare ",
            "Precondition ",
            "Lengthen ",
            "Add ",
            "Recreate ",
            "Put ",
            "Drop ",
            "For ",
            "find ",
            "Run ",
            "Pin ",
        ];
        for f in examples() {
            let t = f.to_string();
            assert!(verbs.iter().any(|v| t.contains(v)), "{}: {t}", f.code());
            assert!(t.len() > 80, "{t}");
        }
    }

    #[test]
    fn severity_depends_on_the_facts() {
        let mut f = other_openers::example();
        assert_eq!(f.severity(), Severity::Warning);
        if let Finding::OtherOpeners(o) = &mut f {
            o.openers[0].writable = true;
        }
        assert_eq!(f.severity(), Severity::Critical);
        let hipri = Finding::from(HipriWithoutPoll {
            device: "vda".into(),
            requested: false,
        });
        assert_eq!(hipri.severity(), Severity::Info);
        assert!(Severity::Critical > Severity::Warning);
    }
}
