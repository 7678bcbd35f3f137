use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, list, Describe, Phase, Severity};
pub use crate::results::pagecache::PageCacheCause;

/// Page-cache pages of the target while doing direct I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCacheOnTarget {
    pub target: String,
    /// The first phase the pages were seen in.
    pub phase: Phase,
    /// 1-based trial (the first, when `trials` lists several); `None`
    /// outside a run (doctor).
    pub trial: Option<usize>,
    pub pages: u64,
    pub page_size: u64,
    /// dioscope dropped them before the trial started (`invalidate=1`):
    /// the trial itself ran without them.
    pub dropped: bool,
    /// The later phases of the same trial with the same count: one finding
    /// says "before and after trial 2", not two.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_phases: Vec<Phase>,
    /// Every trial with the same count in the same phases, when more than
    /// one: one finding for them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<usize>,
    /// What the target is that explains the pages (tmpfs, a mounted file
    /// system, a file just written), or `unknown`.
    #[serde(default)]
    pub cause: PageCacheCause,
}

impl PageCacheOnTarget {
    /// Every phase it was seen in, in order.
    pub fn phases(&self) -> Vec<Phase> {
        let mut v = vec![self.phase];
        v.extend(self.also_phases.iter().copied());
        v
    }

    /// Every trial it names (empty outside a run).
    pub fn all_trials(&self) -> Vec<usize> {
        if self.trials.is_empty() {
            self.trial.into_iter().collect()
        } else {
            self.trials.clone()
        }
    }
}

fn phase_word(p: Phase) -> &'static str {
    match p {
        Phase::Before => "before",
        Phase::During => "during",
        Phase::After => "after",
    }
}

impl Describe for PageCacheOnTarget {
    fn severity(&self) -> Severity {
        // tmpfs pages are the file itself, not a reader racing the trial
        // (silently_buffered says what that means for the numbers).
        if matches!(self.cause, PageCacheCause::MemoryFilesystem { .. }) {
            return Severity::Warning;
        }
        if self.phases().contains(&Phase::During) {
            Severity::Critical
        } else {
            Severity::Warning
        }
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            target,
            pages,
            page_size,
            cause,
            ..
        } = self;
        let trials = self.all_trials();
        let when = if trials.is_empty() {
            "now".to_string()
        } else {
            let ph: Vec<&str> = self.phases().into_iter().map(phase_word).collect();
            let ph = match ph.as_slice() {
                [one] => one.to_string(),
                [a, b] => format!("{a} and {b}"),
                [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
                [] => String::new(),
            };
            let s = if trials.len() == 1 { "" } else { "s" };
            format!("{ph} trial{s} {}", list(&trials))
        };
        write!(
            f,
            "{pages} page-cache page{} ({}) of {target} {} resident {when}. ",
            if *pages == 1 { "" } else { "s" },
            human_bytes(pages * page_size),
            if *pages == 1 { "is" } else { "are" },
        )?;
        match cause {
            PageCacheCause::MemoryFilesystem { fs_type } => {
                return write!(
                    f,
                    "{target} is on {fs_type}, whose files live only in the page cache: these \
                     pages are the file's data, not another reader's, and nothing can drop \
                     them. Direct I/O has no device to go to there, so the numbers measure \
                     memory copies, not storage. Put the target on a file system backed by a \
                     device (or use a block device) to measure storage."
                );
            }
            PageCacheCause::MountedFilesystem {
                mount_point,
                fs_type,
            } => write!(
                f,
                "{target} holds the {fs_type} file system mounted on {mount_point}: the file \
                 system reads and writes its metadata (superblock, journal, inodes) through \
                 the device's page cache and keeps it there, so the pages come back as long \
                 as it is mounted. "
            )?,
            PageCacheCause::JustWritten {
                seconds_before,
                by_dioscope: true,
            } => write!(
                f,
                "dioscope wrote {target} {seconds_before} s before the first trial (its \
                 layout): these are pages of that write. "
            )?,
            PageCacheCause::JustWritten {
                seconds_before,
                by_dioscope: false,
            } => write!(
                f,
                "{target} was modified {seconds_before} s before the first trial: these are \
                 most likely pages of that write (cp, dd, an editor: whatever wrote it did so \
                 through the page cache). "
            )?,
            PageCacheCause::Unknown => write!(
                f,
                "Some process read or wrote it without O_DIRECT (udev's blkid, a backup, \
                 another benchmark). "
            )?,
        }
        write!(
            f,
            "Every direct write over a cached range makes the kernel invalidate it, which \
             cost 35 % of write throughput in fio's seed-004 report with only ~25 pages. "
        )?;
        if let PageCacheCause::MountedFilesystem { mount_point, .. } = cause {
            return write!(
                f,
                "Benchmark a file on {mount_point} instead of the device under it, or unmount \
                 it (`umount {mount_point}`) before measuring the device."
            );
        }
        self.what_to_do(f, trials.len())
    }
}

impl PageCacheOnTarget {
    /// The finding's last sentence: what the reader can do, by whether the
    /// pages were dropped before measuring and when they were there.
    fn what_to_do(&self, f: &mut fmt::Formatter<'_>, n_trials: usize) -> fmt::Result {
        let (target, dropped, cause) = (&self.target, &self.dropped, &self.cause);
        if *dropped {
            write!(f, "dioscope dropped them before measuring (invalidate=1), so ")?;
            if n_trials > 1 {
                write!(f, "these trials")?;
            } else {
                write!(f, "this trial")?;
            }
            if matches!(cause, PageCacheCause::JustWritten { .. }) {
                write!(
                    f,
                    " started clean. Keep invalidate=1 (the default), or drop the cache after \
                     writing a file you are about to measure."
                )
            } else {
                write!(
                    f,
                    " started clean; but whoever put them there can do it again mid-run. \
                     Find the reader (`fuser -v {target}`) and stop it."
                )
            }
        } else if self.phases().contains(&Phase::During) {
            write!(
                f,
                "They were there while the trial ran: find the reader (`fuser -v \
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
}

/// Merge the findings of one trial's phases and of several trials that
/// say the same: equal counts in consecutive phases of a trial become one
/// finding ("before and after trial 2"), and findings that differ only in
/// the trial become one naming every trial.
pub fn merge(found: Vec<PageCacheOnTarget>) -> Vec<PageCacheOnTarget> {
    // Within a trial: same target, count and cause, not dropped.
    let mut by_phase: Vec<PageCacheOnTarget> = Vec::new();
    for x in found {
        match by_phase.iter_mut().find(|m| {
            m.target == x.target
                && m.trial == x.trial
                && m.pages == x.pages
                && m.cause == x.cause
                && !m.dropped
                && !x.dropped
                && m.trials.is_empty()
        }) {
            Some(m) => {
                if !m.phases().contains(&x.phase) {
                    m.also_phases.push(x.phase);
                }
            }
            None => by_phase.push(x),
        }
    }
    // Across trials: everything but the trial equal.
    let mut out: Vec<PageCacheOnTarget> = Vec::new();
    for x in by_phase {
        let same = |m: &PageCacheOnTarget| {
            m.target == x.target
                && m.phase == x.phase
                && m.also_phases == x.also_phases
                && m.pages == x.pages
                && m.dropped == x.dropped
                && m.cause == x.cause
                && m.trial.is_some()
                && x.trial.is_some()
        };
        match out.iter_mut().find(|m| same(m)) {
            Some(m) => {
                if m.trials.is_empty() {
                    m.trials.extend(m.trial);
                }
                for t in x.all_trials() {
                    if !m.trials.contains(&t) {
                        m.trials.push(t);
                    }
                }
            }
            None => out.push(x),
        }
    }
    out
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    PageCacheOnTarget {
        target: "/dev/loop0".into(),
        phase: Phase::During,
        trial: Some(2),
        pages: 25,
        page_size: 4096,
        dropped: false,
        also_phases: Vec::new(),
        trials: Vec::new(),
        cause: PageCacheCause::Unknown,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(trial: usize, phase: Phase, pages: u64, cause: PageCacheCause) -> PageCacheOnTarget {
        PageCacheOnTarget {
            target: "/t".into(),
            phase,
            trial: Some(trial),
            pages,
            page_size: 4096,
            dropped: false,
            also_phases: Vec::new(),
            trials: Vec::new(),
            cause,
        }
    }

    #[test]
    fn same_pages_before_and_after_are_said_once() {
        let u = PageCacheCause::Unknown;
        let m = merge(vec![
            at(1, Phase::Before, 25, u.clone()),
            at(1, Phase::After, 25, u.clone()),
            at(2, Phase::Before, 25, u.clone()),
            at(2, Phase::After, 25, u.clone()),
            at(3, Phase::Before, 7, u.clone()),
        ]);
        assert_eq!(m.len(), 2, "{m:?}");
        let t = super::super::Finding::from(m[0].clone()).to_string();
        assert!(t.contains("resident before and after trials 1, 2."), "{t}");
        assert!(t.contains("udev's blkid"), "{t}");
        let t = super::super::Finding::from(m[1].clone()).to_string();
        assert!(t.contains("resident before trial 3."), "{t}");
    }

    #[test]
    fn causes_that_fit_the_target_replace_the_generic_guess() {
        let tmpfs = PageCacheCause::MemoryFilesystem {
            fs_type: "tmpfs".into(),
        };
        let m = merge(
            [Phase::Before, Phase::During, Phase::After]
                .into_iter()
                .map(|p| at(1, p, 256, tmpfs.clone()))
                .collect(),
        );
        assert_eq!(m.len(), 1);
        let f = super::super::Finding::from(m[0].clone());
        let t = f.to_string();
        assert!(t.contains("before, during and after trial 1"), "{t}");
        assert!(t.contains("on tmpfs") && t.contains("memory copies"), "{t}");
        assert!(!t.contains("udev's blkid"), "{t}");
        assert_eq!(f.severity(), Severity::Warning);

        let mounted = at(
            1,
            Phase::Before,
            3,
            PageCacheCause::MountedFilesystem {
                mount_point: "/mnt/x".into(),
                fs_type: "ext4".into(),
            },
        );
        let t = super::super::Finding::from(mounted).to_string();
        assert!(t.contains("ext4 file system mounted on /mnt/x") && t.contains("metadata"), "{t}");
        assert!(t.contains("umount /mnt/x") && !t.contains("udev's blkid"), "{t}");

        let mut written = at(
            1,
            Phase::Before,
            3,
            PageCacheCause::JustWritten {
                seconds_before: 4,
                by_dioscope: false,
            },
        );
        written.dropped = true;
        let t = super::super::Finding::from(written).to_string();
        assert!(t.contains("modified 4 s before the first trial"), "{t}");
        assert!(!t.contains("udev's blkid"), "{t}");
    }
}
