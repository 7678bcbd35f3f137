//! `dioscope doctor TARGET`: every check that needs no workload, as a
//! checklist. Read-only: it opens the target for reading (never for writing,
//! which would make udev re-probe it) and drops nothing.

use std::fmt::Write as _;
use std::path::Path;

pub use super::checklist::{Check, DoctorReport, Status};
use super::checks::{doctor_all, DoctorCtx};
use super::env::Environment;
use super::findings::{Finding, Severity};
use crate::results::doctor::{CheckDoc, DoctorDoc};

/// Run the doctor side of every check in [`super::checks::CHECKS`] on `path`.
pub fn doctor(path: &Path) -> DoctorReport {
    let environment = Environment::read(&[path]);
    let target = environment.targets[0].clone();
    let mut report = DoctorReport {
        target: path.to_path_buf(),
        environment,
        page_cache: None,
        layout: None,
        zram: None,
        checks: Vec::new(),
        peak: Vec::new(),
    };
    let mut ctx = DoctorCtx {
        path,
        name: path.display().to_string(),
        target,
        size: 0,
        report: &mut report,
        stop: false,
    };
    doctor_all(&mut ctx);
    report
}

impl DoctorReport {
    /// The typed document `--output-format=json` writes (and
    /// [`DoctorDoc::from_json`] reads back).
    pub fn doc(&self) -> DoctorDoc {
        DoctorDoc {
            target: self.target.clone(),
            environment: self.environment.clone(),
            page_cache: self.page_cache.clone(),
            layout: self.layout,
            zram: self.zram,
            peak: self.peak.clone(),
            checks: self
                .checks
                .iter()
                .map(|c| CheckDoc {
                    name: c.name.to_string(),
                    status: c.status,
                    detail: c.detail.clone(),
                    findings: c
                        .findings
                        .iter()
                        .map(|f| {
                            serde_json::to_value(f.reported())
                                .and_then(serde_json::from_value)
                                .unwrap_or_default()
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.checks.iter().flat_map(|c| c.findings.iter())
    }

    /// The worst severity among the findings (for the exit code).
    pub fn worst(&self) -> Option<Severity> {
        self.findings().map(Finding::severity).max()
    }

    /// Whether any check failed outright (including those without findings,
    /// like a missing target).
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.status == Status::Fail)
    }

    /// The checklist: environment, then one line per check, each finding's
    /// text indented under it.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "dioscope doctor {}", self.target.display());
        let _ = writeln!(s, "  {}", self.environment.one_line());
        let _ = writeln!(s);
        let width = self.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for c in &self.checks {
            if c.findings.is_empty() {
                let _ = writeln!(s, "{} {:width$}  {}", c.status.mark(), c.name, c.detail);
            } else {
                for (i, f) in c.findings.iter().enumerate() {
                    let label = if i == 0 { c.name } else { "" };
                    let _ = writeln!(
                        s,
                        "{} {:width$}  {}",
                        f.severity().mark(),
                        label,
                        wrap(&f.to_string(), width + 4)
                    );
                }
            }
        }
        let count = |st: Status| self.checks.iter().filter(|c| c.status == st).count();
        let _ = writeln!(
            s,
            "\n{} passed, {} warning{}, {} failed, {} skipped",
            count(Status::Pass) + count(Status::Info),
            count(Status::Warn),
            if count(Status::Warn) == 1 { "" } else { "s" },
            count(Status::Fail),
            count(Status::Skip)
        );
        if !self.peak.is_empty() {
            s.push_str(&render_peak(&self.peak));
        }
        s
    }
}

/// `doctor --peak`'s section: one line per check, its fix below it.
fn render_peak(peak: &[crate::results::doctor::PeakCheck]) -> String {
    let mut s = String::from("\nPeak IOPS: what stands between this device and its peak\n");
    let width = peak.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in peak {
        let _ = writeln!(
            s,
            "  {:width$}  {:13}  {}",
            c.name,
            c.state.words(),
            c.value
        );
        if let Some(fix) = &c.fix {
            let _ = writeln!(s, "  {:width$}  {:13}  fix: {fix}", "", "");
        }
    }
    s
}

pub use crate::results::units::wrap;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_on_a_missing_target_fails_cleanly() {
        let r = doctor(Path::new("/nonexistent/dioscope"));
        assert!(r.failed());
        assert_eq!(r.checks.len(), 1);
        let text = r.render_text();
        assert!(text.contains("✗ target"), "{text}");
        serde_json::to_string(&r).unwrap();
    }

    #[test]
    fn doctor_on_a_sparse_file() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let p = dir.path().join("sparse");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(64 << 20).unwrap();
        drop(f);
        let r = doctor(&p);
        let names: Vec<&str> = r.checks.iter().map(|c| c.name).collect();
        for n in [
            "target",
            "direct I/O",
            "really direct",
            "page cache",
            "written data",
        ] {
            assert!(names.contains(&n), "{names:?}");
        }
        let written = r.checks.iter().find(|c| c.name == "written data").unwrap();
        if r.layout.unwrap().hole_bytes > 0 {
            assert_eq!(written.status, Status::Fail, "a fully sparse file");
            assert_eq!(written.findings[0].code(), "reads_of_unwritten_regions");
        }
        let text = r.render_text();
        assert!(text.contains("page cache"), "{text}");
        let v = serde_json::to_value(&r).unwrap();
        assert!(v["checks"].as_array().unwrap().len() >= 5);
        assert!(v["environment"]["kernel"]["release"].is_string());
    }

    #[test]
    fn wrapping_keeps_every_word() {
        let t = "word ".repeat(60);
        let w = wrap(&t, 10);
        assert!(w.lines().count() > 1);
        assert_eq!(w.split_whitespace().count(), 60);
        assert!(w.lines().all(|l| l.chars().count() <= 100));
    }
}
