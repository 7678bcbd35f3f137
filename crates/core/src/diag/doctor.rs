//! `dioscope doctor TARGET`: every check that needs no workload, as a
//! checklist. Read-only: it opens the target for reading (never for writing,
//! which would make udev re-probe it) and drops nothing.

use serde::Serialize;
use std::fmt::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::consistency::governor_finding;
use super::env::{Environment, TargetKind};
use super::findings::{human_bytes, BufferedReason, Finding, Phase, Severity};
use super::fs::silent_buffering;
use super::pagecache::{resident, Residency};
use super::sparse::{
    fragmentation_finding, layout, unwritten_finding, zram_finding, FileLayout, ZramStat,
    DEFAULT_FRAGMENT_BS,
};

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Info,
    Warn,
    Fail,
    /// Not applicable or could not be checked; the detail says why.
    Skip,
}

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

/// Run every workload-free check on `path`.
pub fn doctor(path: &Path) -> DoctorReport {
    let environment = Environment::read(&[path]);
    let t = environment.targets[0].clone();
    let name = path.display().to_string();
    let mut r = DoctorReport {
        target: path.to_path_buf(),
        environment,
        page_cache: None,
        layout: None,
        zram: None,
        checks: Vec::new(),
    };
    let size = match t.kind {
        TargetKind::Missing => {
            r.checks.push(Check {
                name: "target",
                status: Status::Fail,
                detail: format!("{name} does not exist; give an existing file or block device"),
                findings: Vec::new(),
            });
            return r;
        }
        TargetKind::Other => {
            r.checks.push(Check {
                name: "target",
                status: Status::Fail,
                detail: format!("{name} is neither a regular file nor a block device"),
                findings: Vec::new(),
            });
            return r;
        }
        TargetKind::File | TargetKind::BlockDevice => {
            let size = std::fs::File::open(path)
                .ok()
                .and_then(|f| super::pagecache::target_size(f.as_raw_fd()).ok());
            let kind = if t.kind == TargetKind::File {
                "regular file"
            } else {
                "block device"
            };
            let devs: Vec<&str> = t.devices.iter().map(|d| d.name.as_str()).collect();
            r.checks.push(Check::from_findings(
                "target",
                format!(
                    "{kind}, {}{}",
                    size.map(human_bytes)
                        .unwrap_or_else(|| "size unknown".into()),
                    if devs.is_empty() {
                        ", no block device under it".to_string()
                    } else {
                        format!(", devices: {}", devs.join(" → "))
                    }
                ),
                Vec::new(),
            ));
            size.unwrap_or(0)
        }
    };

    // Can it be opened with O_DIRECT at all, and with which alignment?
    let open = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path);
    r.checks.push(match (open, t.dio_align) {
        (Err(e), _) => Check {
            name: "direct I/O",
            status: Status::Fail,
            detail: format!(
                "opening {name} with O_DIRECT failed ({e}): this file system does not \
                 support direct I/O; put the test file elsewhere"
            ),
            findings: Vec::new(),
        },
        (Ok(_), Some((m, o))) if m > 0 => Check::from_findings(
            "direct I/O",
            format!("O_DIRECT works; alignment: memory {m} B, offsets and sizes {o} B (statx)"),
            Vec::new(),
        ),
        (Ok(_), _) => {
            let lbs = t.device.as_ref().and_then(|d| d.queue.logical_block_size);
            Check::from_findings(
                "direct I/O",
                match lbs {
                    Some(l) => format!(
                        "O_DIRECT works; the kernel does not report alignment, logical block \
                         size is {l} B"
                    ),
                    None => "O_DIRECT works; alignment unknown".to_string(),
                },
                Vec::new(),
            )
        }
    });

    let kernel = r.environment.kernel.version_tuple();
    let buffered = silent_buffering(path, kernel);
    let in_memory = matches!(
        buffered,
        Some(Finding::SilentlyBuffered {
            reason: BufferedReason::MemoryFilesystem,
            ..
        })
    );
    r.checks.push(Check::from_findings(
        "really direct",
        "no page cache between O_DIRECT and the device",
        buffered.into_iter().collect(),
    ));

    r.checks.push(match resident(path, 0, None) {
        // On tmpfs the file *is* page cache; "really direct" already says so.
        Ok(_) if in_memory => Check::skip("page cache", "the file lives in the page cache"),
        Ok(res) => {
            r.page_cache = Some(res);
            let f = (res.pages > 0).then(|| Finding::PageCacheOnTarget {
                target: name.clone(),
                phase: Phase::Before,
                trial: None,
                pages: res.pages,
                page_size: res.page_size,
                dropped: false,
            });
            let detail = if t.kind == TargetKind::BlockDevice {
                // The kernel drops a block device's cache when its last
                // opener closes it, so pages here mean someone holds it open.
                format!(
                    "no pages of the target are cached ({}; a block device's cache only \
                     survives while someone holds it open)",
                    res.method
                )
            } else {
                format!("no pages of the target are cached ({})", res.method)
            };
            Check::from_findings("page cache", detail, f.into_iter().collect())
        }
        Err(e) => Check::skip("page cache", format!("could not count cached pages: {e}")),
    });

    if t.kind == TargetKind::File {
        match std::fs::File::open(path).and_then(|f| layout(f.as_raw_fd(), 0, u64::MAX)) {
            Ok(l) => {
                r.layout = Some(l);
                r.checks.push(Check::from_findings(
                    "written data",
                    "no holes or unwritten extents",
                    unwritten_finding(&name, &l).into_iter().collect(),
                ));
                r.checks.push(match l.fragments {
                    Some(fr) => Check::from_findings(
                        "fragmentation",
                        format!(
                            "{fr} piece{} on disk ({} extent{})",
                            if fr == 1 { "" } else { "s" },
                            l.extents.unwrap_or(0),
                            if l.extents == Some(1) { "" } else { "s" }
                        ),
                        fragmentation_finding(&name, &l, DEFAULT_FRAGMENT_BS)
                            .into_iter()
                            .collect(),
                    ),
                    None => Check::skip("fragmentation", "the file system does not support FIEMAP"),
                });
            }
            Err(e) => r.checks.push(Check::skip(
                "written data",
                format!("could not read the layout: {e}"),
            )),
        }
    } else if let Some(z) = t.devices.first().and_then(|d| ZramStat::read(&d.name)) {
        r.zram = Some(z);
        r.checks.push(Check::from_findings(
            "written data",
            format!("zram holds {} of data", human_bytes(z.orig_data_size)),
            zram_finding(&t.devices[0].name, &z, size)
                .into_iter()
                .collect(),
        ));
    }

    let cpu = &r.environment.cpu;
    r.checks.push(if cpu.governors.is_empty() {
        Check::skip(
            "CPU governor",
            "no cpufreq in this kernel (VM or fixed clock): nothing to set",
        )
    } else {
        Check::from_findings(
            "CPU governor",
            "performance on every CPU",
            governor_finding(cpu).into_iter().collect(),
        )
    });

    r.checks.push(match &t.device {
        Some(d) => match d.queue.io_poll {
            Some(true) => Check::from_findings(
                "polled I/O",
                format!("{} has poll queues: hipri=1 works", d.name),
                Vec::new(),
            ),
            Some(false) => Check::from_findings(
                "polled I/O",
                "",
                vec![Finding::HipriWithoutPoll {
                    device: d.name.clone(),
                    requested: false,
                }],
            ),
            None => Check::skip(
                "polled I/O",
                format!("{} does not say (no queue/io_poll)", d.name),
            ),
        },
        None => Check::skip("polled I/O", "no block device"),
    });
    r
}

impl DoctorReport {
    /// Add a check computed elsewhere (e.g. other openers, from the safety
    /// module's /proc scan).
    pub fn add_check(&mut self, c: Check) {
        self.checks.push(c);
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
        s
    }
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
