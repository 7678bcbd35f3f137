//! Page-cache and opener samples as plain data: per trial of a direct-I/O
//! target, the cached pages found, left and seen while it ran, and the other
//! processes holding it open (`"dioscope": {"page_cache": …, "openers": …}`).
//! The diagnosis (`diag::hooks`, `diag::pagecache`) and the write guard
//! (`safety::openers`) fill them.

use serde::{Deserialize, Serialize};

/// Page counts of one trial of a direct-I/O job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialPages {
    /// Before the trial and before any drop: what others left there.
    pub found: Option<u64>,
    /// Just before the trial, after the drop when `invalidate=1`.
    pub before: Option<u64>,
    /// Largest count sampled while the trial ran.
    pub during_max: Option<u64>,
    pub after: Option<u64>,
}

/// What most likely put a direct-I/O target's pages in the page cache,
/// from what the target is: the page-cache finding names it instead of
/// guessing at another reader.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum PageCacheCause {
    /// Nothing about the target explains them: some other process read or
    /// wrote it without O_DIRECT.
    #[default]
    Unknown,
    /// A file on tmpfs or ramfs: its data lives in the page cache.
    MemoryFilesystem { fs_type: String },
    /// A block device with a mounted file system: its metadata and its own
    /// caching go through the device's page cache.
    MountedFilesystem {
        mount_point: String,
        fs_type: String,
    },
    /// A file written (modified) shortly before the first trial: the
    /// writer's pages. `by_dioscope`: this run created or extended it.
    JustWritten {
        seconds_before: u64,
        by_dioscope: bool,
    },
}

/// Page-cache counts of one direct-I/O target in one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetPages {
    pub target: String,
    /// Whether the cache was dropped before the trial (`invalidate=1`).
    pub invalidate: bool,
    #[serde(flatten)]
    pub pages: TrialPages,
    /// How many times the count was sampled while the trial ran.
    pub samples: u32,
    pub page_size: u64,
    /// `cachestat` or `mincore`.
    pub method: String,
    /// Why counting or dropping failed, if it did.
    pub error: Option<String>,
    /// What most likely put the pages there.
    #[serde(default)]
    pub cause: PageCacheCause,
}

/// Other processes that held a target open before or after a trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetOpeners {
    pub target: String,
    pub before: Vec<Opener>,
    pub after: Vec<Opener>,
}

/// A process other than ourselves that has the target open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opener {
    pub pid: i32,
    /// `/proc/PID/comm` (the kernel's 15-character process name).
    pub comm: String,
    /// Whether any of its descriptors on the target was opened for writing.
    pub writable: bool,
}

/// One target's page-cache counts in one trial of one group, as the result
/// carries them (`"dioscope": {"page_cache": [...]}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCacheSample {
    #[serde(flatten)]
    pub pages: TargetPages,
    pub group: u32,
    /// 1-based.
    pub trial: u32,
}

/// The other openers of one target around one trial of one group
/// (`"dioscope": {"openers": [...]}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenerSample {
    pub group: u32,
    /// 1-based.
    pub trial: u32,
    pub target: String,
    pub before: Vec<Opener>,
    pub after: Vec<Opener>,
}
