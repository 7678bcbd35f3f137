use serde::{Deserialize, Serialize};
use std::fmt;

use super::{human_bytes, Describe, Severity};

/// `invalidate=0` kept page-cache pages on the target during direct I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCacheKept {
    pub target: String,
    pub pages: u64,
    pub page_size: u64,
    /// How much slower trials with pages were than trials without, in %,
    /// when the run had both.
    pub slowdown_pct: Option<f64>,
}

impl Describe for PageCacheKept {
    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            target,
            pages,
            page_size,
            slowdown_pct,
        } = self;
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
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    PageCacheKept {
        target: "/dev/loop0".into(),
        pages: 25,
        page_size: 4096,
        slowdown_pct: Some(35.0),
    }
    .into()
}
