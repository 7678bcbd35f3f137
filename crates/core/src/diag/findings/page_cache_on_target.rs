use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, Describe, Phase, Severity};

/// Page-cache pages of the target while doing direct I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCacheOnTarget {
    pub target: String,
    pub phase: Phase,
    /// 1-based trial; `None` outside a run (doctor).
    pub trial: Option<usize>,
    pub pages: u64,
    pub page_size: u64,
    /// dioscope dropped them before the trial started (`invalidate=1`):
    /// the trial itself ran without them.
    pub dropped: bool,
}

impl Describe for PageCacheOnTarget {
    fn severity(&self) -> Severity {
        match self.phase {
            Phase::During => Severity::Critical,
            _ => Severity::Warning,
        }
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            target,
            phase,
            trial,
            pages,
            page_size,
            dropped,
        } = self;
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
    }
    .into()
}
