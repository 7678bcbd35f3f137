//! Findings: what dioscope noticed about a target or a run, each with a
//! severity, a stable code and a text that says what happened and what to do.
//!
//! Adding a finding means one variant here (with its arm in `severity`, `code`
//! and `Display`) and the check that produces it in the module of its source.

use serde::Serialize;
use std::fmt;

/// How much a finding matters for the validity of the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Before,
    During,
    After,
}

/// A process other than dioscope that has the target open
/// (filled in by the safety module's /proc scan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Opener {
    pub pid: i32,
    pub comm: String,
    pub writable: bool,
}

/// Why O_DIRECT is not direct on a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrialValue {
    /// 1-based trial number.
    pub trial: usize,
    pub value: f64,
    /// Modified Z-score.
    pub score: f64,
}

/// Everything dioscope can tell the user about a target or a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// Page-cache pages of the target while doing direct I/O.
    PageCacheOnTarget {
        target: String,
        phase: Phase,
        /// 1-based trial; `None` outside a run (doctor).
        trial: Option<usize>,
        pages: u64,
        page_size: u64,
        /// dioscope dropped them before the trial started (`invalidate=1`):
        /// the trial itself ran without them.
        dropped: bool,
    },
    /// `invalidate=0` kept page-cache pages on the target during direct I/O.
    PageCacheKept {
        target: String,
        pages: u64,
        page_size: u64,
        /// How much slower trials with pages were than trials without, in %,
        /// when the run had both.
        slowdown_pct: Option<f64>,
    },
    /// Other processes hold the target open.
    OtherOpeners {
        target: String,
        openers: Vec<Opener>,
    },
    /// O_DIRECT is accepted but the I/O goes through the page cache.
    SilentlyBuffered {
        target: String,
        fs_type: String,
        #[serde(flatten)]
        reason: BufferedReason,
    },
    /// The read range includes holes or unwritten extents of a file.
    ReadsOfUnwrittenRegions {
        target: String,
        hole_bytes: u64,
        unwritten_bytes: u64,
        range_bytes: u64,
    },
    /// A zram device holds less data than the reads cover.
    ZramNeverWritten {
        device: String,
        stored_bytes: u64,
        range_bytes: u64,
    },
    /// `direct=0`: the results measure the page cache.
    BufferedIo { job: String },
    /// A size or offset the target cannot do direct I/O with.
    Misaligned {
        /// The option, e.g. `bs` or `offset`.
        option: String,
        value: u64,
        alignment: u64,
        /// Where the alignment comes from (statx or the logical block size).
        source: String,
        /// The nearest valid values below and above (below is `None` when
        /// there is no positive one).
        lower: Option<u64>,
        upper: u64,
    },
    OutlierTrials {
        metric: String,
        median: f64,
        outliers: Vec<TrialValue>,
    },
    BimodalTrials {
        metric: String,
        /// 1-based trial numbers of each group.
        low_trials: Vec<usize>,
        high_trials: Vec<usize>,
        low_mean: f64,
        high_mean: f64,
    },
    DriftAcrossTrials {
        metric: String,
        trials: usize,
        /// Change over the series relative to its median (Sen's slope × (n−1)).
        rel_change: f64,
        p_value: f64,
    },
    DriftWithinTrial {
        metric: String,
        /// 1-based trial.
        trial: usize,
        intervals: usize,
        rel_change: f64,
        p_value: f64,
    },
    /// A worker thread used (nearly) a whole CPU: the tool limits the result.
    ToolBottleneck {
        job: String,
        /// The busiest worker's CPU time over its wall time, in %.
        cpu_pct: f64,
    },
    FragmentedFile {
        target: String,
        size: u64,
        /// Extents as the file system reports them.
        extents: u64,
        /// Physically discontiguous runs of extents.
        fragments: u64,
        /// Share of I/Os of `block_size` that would cross a fragment boundary
        /// in a sequential pass, in %.
        split_pct: f64,
        block_size: u64,
    },
    GovernorNotPerformance {
        /// Distinct governors in use, with how many CPUs use each.
        governors: Vec<(String, usize)>,
    },
    HipriWithoutPoll {
        device: String,
        /// Whether the job asked for hipri (otherwise this is a doctor note).
        requested: bool,
    },
}

impl Finding {
    pub fn severity(&self) -> Severity {
        use Finding::*;
        match self {
            PageCacheOnTarget { phase, .. } => match phase {
                Phase::During => Severity::Critical,
                _ => Severity::Warning,
            },
            PageCacheKept { .. } => Severity::Warning,
            OtherOpeners { openers, .. } => {
                if openers.iter().any(|o| o.writable) {
                    Severity::Critical
                } else {
                    Severity::Warning
                }
            }
            SilentlyBuffered { .. } => Severity::Critical,
            ReadsOfUnwrittenRegions {
                hole_bytes,
                unwritten_bytes,
                range_bytes,
                ..
            } => {
                if (hole_bytes + unwritten_bytes) * 2 >= *range_bytes {
                    Severity::Critical
                } else {
                    Severity::Warning
                }
            }
            ZramNeverWritten {
                stored_bytes,
                range_bytes,
                ..
            } => {
                if stored_bytes * 2 <= *range_bytes {
                    Severity::Critical
                } else {
                    Severity::Warning
                }
            }
            BufferedIo { .. } => Severity::Warning,
            Misaligned { .. } => Severity::Critical,
            OutlierTrials { .. } | BimodalTrials { .. } => Severity::Warning,
            DriftAcrossTrials { .. } | DriftWithinTrial { .. } => Severity::Warning,
            ToolBottleneck { .. } => Severity::Warning,
            FragmentedFile { .. } => Severity::Warning,
            GovernorNotPerformance { .. } => Severity::Info,
            HipriWithoutPoll { requested, .. } => {
                if *requested {
                    Severity::Critical
                } else {
                    Severity::Info
                }
            }
        }
    }

    /// Stable snake-case identifier; also the `kind` of the JSON form.
    pub fn code(&self) -> &'static str {
        use Finding::*;
        match self {
            PageCacheOnTarget { .. } => "page_cache_on_target",
            PageCacheKept { .. } => "page_cache_kept",
            OtherOpeners { .. } => "other_openers",
            SilentlyBuffered { .. } => "silently_buffered",
            ReadsOfUnwrittenRegions { .. } => "reads_of_unwritten_regions",
            ZramNeverWritten { .. } => "zram_never_written",
            BufferedIo { .. } => "buffered_io",
            Misaligned { .. } => "misaligned",
            OutlierTrials { .. } => "outlier_trials",
            BimodalTrials { .. } => "bimodal_trials",
            DriftAcrossTrials { .. } => "drift_across_trials",
            DriftWithinTrial { .. } => "drift_within_trial",
            ToolBottleneck { .. } => "tool_bottleneck",
            FragmentedFile { .. } => "fragmented_file",
            GovernorNotPerformance { .. } => "governor_not_performance",
            HipriWithoutPoll { .. } => "hipri_without_poll",
        }
    }

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

fn list(v: &[usize]) -> String {
    v.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn pct(share: f64) -> String {
    format!("{:+.1} %", share * 100.0)
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Finding::*;
        match self {
            PageCacheOnTarget {
                target,
                phase,
                trial,
                pages,
                page_size,
                dropped,
            } => {
                let when = match (phase, trial) {
                    (Phase::Before, Some(t)) => format!("before trial {t}"),
                    (Phase::During, Some(t)) => format!("during trial {t}"),
                    (Phase::After, Some(t)) => format!("after trial {t}"),
                    (_, None) => "now".to_string(),
                };
                write!(
                    f,
                    "{pages} page-cache page{} ({}) of {target} {} resident {when}. Some \
                     process read or wrote it without O_DIRECT (udev's blkid, a backup, \
                     another benchmark). Every direct write over a cached range makes the \
                     kernel invalidate it, which cost 35 % of write throughput in fio's \
                     seed-004 report with only ~25 pages. ",
                    if *pages == 1 { "" } else { "s" },
                    human_bytes(pages * page_size),
                    if *pages == 1 { "is" } else { "are" },
                )?;
                if *dropped {
                    write!(
                        f,
                        "dioscope dropped them before measuring (invalidate=1), so this trial \
                         started clean; but whoever put them there can do it again mid-run. \
                         Find the reader (`fuser -v {target}`) and stop it."
                    )
                } else if *phase == Phase::During {
                    write!(
                        f,
                        "They appeared while the trial ran: find the reader (`fuser -v \
                         {target}`), stop it, and repeat the trial."
                    )
                } else {
                    write!(
                        f,
                        "Keep invalidate=1 (the default) so dioscope drops them before \
                         each trial, and find who reads the target (`fuser -v {target}`)."
                    )
                }
            }
            PageCacheKept {
                target,
                pages,
                page_size,
                slowdown_pct,
            } => {
                write!(
                    f,
                    "invalidate=0 kept {pages} page-cache pages ({}) of {target} during \
                     direct I/O. Each direct write over a cached range invalidates it in the \
                     kernel, which cost 35 % of write throughput in fio's seed-004 report",
                    human_bytes(pages * page_size)
                )?;
                if let Some(s) = slowdown_pct {
                    write!(f, "; here trials with cached pages were {s:.1} % slower")?;
                }
                write!(
                    f,
                    ". Use invalidate=1 unless measuring exactly this effect."
                )
            }
            OtherOpeners { target, openers } => {
                let who: Vec<String> = openers
                    .iter()
                    .map(|o| {
                        format!(
                            "pid {} ({}, {})",
                            o.pid,
                            o.comm,
                            if o.writable {
                                "read-write"
                            } else {
                                "read-only"
                            }
                        )
                    })
                    .collect();
                write!(
                    f,
                    "{target} is open in {} other process{}: {}. Their I/O competes with \
                     the benchmark, and buffered readers put pages of it in the page cache \
                     that slow direct writes. Stop them, or wait for udev (`udevadm settle`), \
                     before measuring.",
                    openers.len(),
                    if openers.len() == 1 { "" } else { "es" },
                    who.join(", ")
                )
            }
            SilentlyBuffered {
                target,
                fs_type,
                reason,
            } => match reason {
                BufferedReason::BtrfsDataChecksums => write!(
                    f,
                    "{target} is a btrfs file with data checksums: since Linux 6.14 btrfs \
                     turns direct writes to such files into buffered writes (so that a \
                     buffer changed during the write cannot break its checksum). Write \
                     results measure the page cache and writeback, not direct I/O. Use a \
                     NOCOW file (`chattr +C` on the empty file or its directory before \
                     writing) or a file system mounted with nodatasum."
                ),
                BufferedReason::MemoryFilesystem => write!(
                    f,
                    "{target} is on {fs_type}, which keeps files in memory: it accepts \
                     O_DIRECT but there is no device behind it, so the results measure \
                     memory copies. Put the test file on a disk-backed file system or use \
                     a block device."
                ),
                BufferedReason::LoopWithoutDirectIo { backing_file } => write!(
                    f,
                    "{target} is a loop device that reads and writes its backing file \
                     {backing_file} through the page cache (loop direct I/O is off), so \
                     direct I/O to the loop device measures the backing file's page cache. \
                     Recreate it with `losetup --direct-io=on` (the backing file system \
                     must support O_DIRECT and the sector sizes must match)."
                ),
            },
            ReadsOfUnwrittenRegions {
                target,
                hole_bytes,
                unwritten_bytes,
                range_bytes,
            } => {
                let bad = hole_bytes + unwritten_bytes;
                write!(
                    f,
                    "{} of the {} range of {target} ({:.0} %) has never been written \
                     ({} in holes, {} more in unwritten extents): the file system returns zeros \
                     there without any device I/O, so reads of it measure nothing. Write \
                     the whole range first (a sequential write job, or let dioscope lay \
                     out the file).",
                    human_bytes(bad),
                    human_bytes(*range_bytes),
                    100.0 * bad as f64 / (*range_bytes).max(1) as f64,
                    human_bytes(*hole_bytes),
                    human_bytes(*unwritten_bytes),
                )
            }
            ZramNeverWritten {
                device,
                stored_bytes,
                range_bytes,
            } => write!(
                f,
                "{device} stores {} of data but the reads cover {}: zram answers reads of \
                 pages never written with zeros, without decompressing anything, so those \
                 reads measure nothing. Write the whole range first (a sequential write \
                 job with incompressible data).",
                human_bytes(*stored_bytes),
                human_bytes(*range_bytes)
            ),
            BufferedIo { job } => write!(
                f,
                "job {job} uses direct=0: its I/O goes through the page cache, so the \
                 results measure memory and the kernel's caching rather than the device. \
                 Use direct=1 to measure the device."
            ),
            Misaligned {
                option,
                value,
                alignment,
                source,
                lower,
                upper,
            } => {
                write!(
                    f,
                    "{option}={value} is not a multiple of {alignment} ({source}): direct \
                     I/O fails with EINVAL. Use "
                )?;
                match lower {
                    Some(l) => write!(
                        f,
                        "{option}={l} or {option}={upper}, the nearest valid values."
                    ),
                    None => write!(f, "{option}={upper}, the nearest valid value."),
                }
            }
            OutlierTrials {
                metric,
                median,
                outliers,
            } => {
                let each: Vec<String> = outliers
                    .iter()
                    .map(|o| {
                        format!(
                            "trial {} ({metric} {}, modified Z {:.1})",
                            o.trial,
                            num(o.value),
                            o.score
                        )
                    })
                    .collect();
                write!(
                    f,
                    "{} far from the median {metric} of {}: something else ran during it, or \
                     the device changed state (garbage collection, thermal throttling). Look \
                     at its time series and the page-cache counts, and run more trials to \
                     see whether it repeats.",
                    each.join(", "),
                    num(*median)
                )
            }
            BimodalTrials {
                metric,
                low_trials,
                high_trials,
                low_mean,
                high_mean,
            } => write!(
                f,
                "trials fall into two groups: {} at {metric} ≈ {} and {} at ≈ {} ({:.0} % \
                 apart). A condition that differs between runs is at work, such as page-cache \
                 pages left on the target by a buffered reader in some runs only (fio's \
                 seed-004 race). Compare the groups' page-cache counts and device counters; \
                 report the groups separately rather than their mean.",
                list(low_trials),
                num(*low_mean),
                list(high_trials),
                num(*high_mean),
                100.0 * (high_mean - low_mean) / low_mean.abs().max(f64::MIN_POSITIVE)
            ),
            DriftAcrossTrials {
                metric,
                trials,
                rel_change,
                p_value,
            } => write!(
                f,
                "{metric} changed by {} over {trials} trials (Mann-Kendall p = {p_value:.3}): \
                 the system is not in a steady state (SSD garbage collection, a filling \
                 write cache, thermal throttling). Precondition the device (write it fully \
                 first), lengthen ramp_time, or run until the trend stops.",
                pct(*rel_change)
            ),
            DriftWithinTrial {
                metric,
                trial,
                intervals,
                rel_change,
                p_value,
            } => write!(
                f,
                "{metric} changed by {} during trial {trial} ({intervals} intervals, \
                 Mann-Kendall p = {p_value:.3}): the trial did not reach a steady state. \
                 Lengthen ramp_time so the trend ends before measuring, or precondition the \
                 device.",
                pct(*rel_change)
            ),
            ToolBottleneck { job, cpu_pct } => write!(
                f,
                "the busiest worker of job {job} used {cpu_pct:.0} % of a CPU: the benchmark itself is the \
                 bottleneck and the results are a lower bound for the device. Add workers \
                 (numjobs), batch submissions (iodepth_batch_submit), or use io_uring with \
                 fixed buffers and registered files."
            ),
            FragmentedFile {
                target,
                size,
                extents,
                fragments,
                split_pct,
                block_size,
            } => write!(
                f,
                "{target} ({}) lies in {fragments} separate pieces on disk ({extents} \
                 extents): about {split_pct:.1} % of sequential {} I/Os cross a piece \
                 boundary and become two device requests, and on rotating disks each \
                 boundary is a seek. Recreate the file on a file system with free \
                 contiguous space (fallocate the whole size before writing), or defragment \
                 it (`e4defrag`, `xfs_fsr`).",
                human_bytes(*size),
                human_bytes(*block_size)
            ),
            GovernorNotPerformance { governors } => {
                let g: Vec<String> = governors
                    .iter()
                    .map(|(g, n)| format!("{g} on {n} CPU{}", if *n == 1 { "" } else { "s" }))
                    .collect();
                write!(
                    f,
                    "CPU frequency governor is {} rather than performance: clock speed \
                     follows load, so latency and CPU time per I/O change with it and \
                     between runs. For stable numbers: `cpupower frequency-set -g \
                     performance`.",
                    g.join(", ")
                )
            }
            HipriWithoutPoll { device, requested } => {
                if *requested {
                    write!(
                        f,
                        "hipri=1 needs polled completion queues but {device} has none \
                         (queue/io_poll = 0), so polling cannot work. Drop hipri, or for \
                         NVMe load the driver with poll queues (`nvme.poll_queues=N`)."
                    )
                } else {
                    write!(
                        f,
                        "{device} has no polled queues (queue/io_poll = 0): hipri=1 would \
                         be refused. For NVMe, load the driver with `nvme.poll_queues=N`."
                    )
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) fn examples() -> Vec<Finding> {
    use Finding::*;
    vec![
        PageCacheOnTarget {
            target: "/dev/loop0".into(),
            phase: Phase::During,
            trial: Some(2),
            pages: 25,
            page_size: 4096,
            dropped: false,
        },
        PageCacheKept {
            target: "/dev/loop0".into(),
            pages: 25,
            page_size: 4096,
            slowdown_pct: Some(35.0),
        },
        OtherOpeners {
            target: "/dev/loop0".into(),
            openers: vec![Opener {
                pid: 42,
                comm: "blkid".into(),
                writable: false,
            }],
        },
        SilentlyBuffered {
            target: "/mnt/f".into(),
            fs_type: "btrfs".into(),
            reason: BufferedReason::BtrfsDataChecksums,
        },
        ReadsOfUnwrittenRegions {
            target: "/mnt/f".into(),
            hole_bytes: 1 << 20,
            unwritten_bytes: 0,
            range_bytes: 4 << 20,
        },
        ZramNeverWritten {
            device: "zram0".into(),
            stored_bytes: 0,
            range_bytes: 1 << 30,
        },
        BufferedIo { job: "j".into() },
        Misaligned {
            option: "bs".into(),
            value: 1000,
            alignment: 512,
            source: "statx".into(),
            lower: Some(512),
            upper: 1024,
        },
        OutlierTrials {
            metric: "IOPS".into(),
            median: 1000.0,
            outliers: vec![TrialValue {
                trial: 3,
                value: 600.0,
                score: -9.0,
            }],
        },
        BimodalTrials {
            metric: "MB/s".into(),
            low_trials: vec![2, 5],
            high_trials: vec![1, 3, 4],
            low_mean: 2400.0,
            high_mean: 3800.0,
        },
        DriftAcrossTrials {
            metric: "IOPS".into(),
            trials: 6,
            rel_change: -0.2,
            p_value: 0.01,
        },
        DriftWithinTrial {
            metric: "IOPS".into(),
            trial: 1,
            intervals: 30,
            rel_change: 0.1,
            p_value: 0.001,
        },
        ToolBottleneck {
            job: "j".into(),
            cpu_pct: 99.0,
        },
        FragmentedFile {
            target: "/mnt/f".into(),
            size: 1 << 30,
            extents: 400,
            fragments: 300,
            split_pct: 29.0,
            block_size: 1 << 20,
        },
        GovernorNotPerformance {
            governors: vec![("powersave".into(), 2)],
        },
        HipriWithoutPoll {
            device: "vda".into(),
            requested: true,
        },
    ]
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
        }
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
        ];
        for f in examples() {
            let t = f.to_string();
            assert!(verbs.iter().any(|v| t.contains(v)), "{}: {t}", f.code());
            assert!(t.len() > 80, "{t}");
        }
    }

    #[test]
    fn severity_depends_on_the_facts() {
        let mut f = examples().remove(2);
        assert_eq!(f.severity(), Severity::Warning);
        if let Finding::OtherOpeners { openers, .. } = &mut f {
            openers[0].writable = true;
        }
        assert_eq!(f.severity(), Severity::Critical);
        let hipri = Finding::HipriWithoutPoll {
            device: "vda".into(),
            requested: false,
        };
        assert_eq!(hipri.severity(), Severity::Info);
        assert!(Severity::Critical > Severity::Warning);
    }

    #[test]
    fn misaligned_names_nearest_values() {
        let t = examples()[7].to_string();
        assert!(t.contains("bs=512 or bs=1024"), "{t}");
    }

    #[test]
    fn human_bytes_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(4096), "4.00 KiB");
        assert_eq!(human_bytes(100 << 20), "100 MiB");
        assert_eq!(human_bytes(25 * 4096), "100 KiB");
    }
}
