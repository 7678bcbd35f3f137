//! [`DiagHooks`]: the runner's trial hooks that keep direct I/O clean and
//! record what they saw, for [`super::run::diagnose`] to turn into findings.
//!
//! Per trial of a group, for every target its jobs use:
//! - before: other openers (/proc scan); for direct-I/O targets the page-cache
//!   pages found, then (with `invalidate=1`, the default) dropped and counted
//!   again, so the trial starts with an empty cache; the first trial of a
//!   group also examines what the jobs will read (holes, zram contents) and
//!   the file layout (fragments);
//! - at the start and end of the measured interval: `/sys/block/*/stat` of
//!   every device under the group's targets (requests per I/O and the rest);
//! - during: the page-cache count, about once a second;
//! - after: the page-cache count and other openers again, so that a process
//!   that opened the target mid-run is caught.
//!
//! All of it runs on the runner's thread, never in a worker's hot path.

use serde::Serialize;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::device::{self, BlockDev, DeviceReport, Snapshot};
use super::env::Environment;
use super::findings::{Finding, Opener};
use super::fs::silent_buffering;
use super::pagecache::{drop_cache_until_clean, resident_fd, TrialPages};
use super::sparse::{fragmentation_finding, layout, unwritten_finding, zram_finding, ZramStat};
use crate::runner::{ResolvedJob, TrialHooks};
use crate::targets::{TargetKind, TargetTable};

/// Page-cache counts of one direct-I/O target in one trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub method: &'static str,
    /// Why counting or dropping failed, if it did.
    pub error: Option<String>,
}

/// Other processes that held a target open before or after a trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetOpeners {
    pub target: String,
    pub before: Vec<Opener>,
    pub after: Vec<Opener>,
}

/// What the hooks recorded for one trial of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialRecord {
    pub group: u32,
    /// 1-based, as the findings and the JSON count.
    pub trial: u32,
    pub jobs: Vec<String>,
    /// I/Os the group's jobs completed in the measured interval.
    pub app_ios: u64,
    /// The measured interval in µs (between the device snapshots).
    pub wall_us: u64,
    pub page_cache: Vec<TargetPages>,
    pub openers: Vec<TargetOpeners>,
    pub devices: Vec<DeviceReport>,
}

/// A target being watched during the current trial.
struct Watch {
    path: PathBuf,
    /// Our own read-only descriptor: counting needs read access (mincore),
    /// and closing a read-only descriptor does not make udev re-probe.
    file: Option<File>,
    /// Direct I/O to it: the page cache is checked and dropped.
    direct: bool,
    is_blockdev: bool,
    size: u64,
    /// Its entry in the record's `page_cache` (direct targets only).
    pages: Option<usize>,
}

struct Current {
    record: TrialRecord,
    watches: Vec<Watch>,
    devs: Vec<BlockDev>,
    start: Option<(Snapshot, u64)>,
}

/// The runner hooks of a normal run. Create with [`DiagHooks::new`] after the
/// targets are open, pass to `runner::execute`, then hand to
/// [`super::run::diagnose`].
pub struct DiagHooks {
    /// Read before the run, while every target (scratch files too) exists.
    pub environment: Environment,
    pub trials: Vec<TrialRecord>,
    /// Findings about the targets themselves (O_DIRECT silently buffered),
    /// from before the run.
    pub target_findings: Vec<Finding>,
    /// Findings about what the jobs will read and the files' layout, from the
    /// first trial of each group.
    pub layout_findings: Vec<Finding>,
    page_size: u64,
    cur: Option<Current>,
}

fn now_us() -> u64 {
    dioscope_sys::clock::now_ns() / 1000
}

/// Other processes that have `path` open now.
pub fn openers_of(path: &std::path::Path) -> Vec<Opener> {
    crate::safety::other_openers(path)
        .into_iter()
        .map(|o| Opener {
            pid: o.pid,
            comm: o.comm,
            writable: o.writable,
        })
        .collect()
}

impl DiagHooks {
    pub fn new(table: &TargetTable) -> DiagHooks {
        let paths: Vec<&Path> = table.targets.iter().map(|t| t.path.as_path()).collect();
        let mut uniq: Vec<&Path> = Vec::new();
        for p in paths {
            if !uniq.contains(&p) {
                uniq.push(p);
            }
        }
        let environment = Environment::read(&uniq);
        let kernel = environment.kernel.version_tuple();
        let mut target_findings = Vec::new();
        for t in table.targets.iter().filter(|t| t.direct) {
            if let Some(f) = silent_buffering(&t.path, kernel) {
                if !target_findings.contains(&f) {
                    target_findings.push(f);
                }
            }
        }
        DiagHooks {
            environment,
            trials: Vec::new(),
            target_findings,
            layout_findings: Vec::new(),
            page_size: dioscope_sys::buf::page_size() as u64,
            cur: None,
        }
    }

    /// Hooks that have seen nothing (for a run without targets, and tests).
    pub fn empty() -> DiagHooks {
        DiagHooks {
            environment: Environment::read(&[]),
            trials: Vec::new(),
            target_findings: Vec::new(),
            layout_findings: Vec::new(),
            page_size: dioscope_sys::buf::page_size() as u64,
            cur: None,
        }
    }

    /// The record of trial `trial` (1-based) of group `group`.
    pub fn record(&self, group: u32, trial: u32) -> Option<&TrialRecord> {
        self.trials
            .iter()
            .find(|r| r.group == group && r.trial == trial)
    }

    fn count(&self, w: &Watch) -> Result<(u64, &'static str), String> {
        let f = w.file.as_ref().ok_or("cannot open it for reading")?;
        resident_fd(f.as_raw_fd(), 0, w.size)
            .map(|r| (r.pages, r.method))
            .map_err(|e| e.to_string())
    }

    /// Holes, unwritten extents and zram contents under what the jobs read,
    /// and fragmentation of the files they use.
    fn examine_layout(&mut self, jobs: &[&ResolvedJob], table: &TargetTable) {
        for j in jobs {
            // The whole range each target is used over, across clones.
            let mut ranges: Vec<(usize, u64, u64)> = Vec::new();
            for f in j.clones.iter().flatten() {
                let (off, len) = f.region;
                match ranges.iter_mut().find(|r| r.0 == f.target_idx) {
                    Some(r) => {
                        let end = (r.1 + r.2).max(off + len);
                        r.1 = r.1.min(off);
                        r.2 = end - r.1;
                    }
                    None => ranges.push((f.target_idx, off, len)),
                }
            }
            for (idx, off, len) in ranges {
                let t = &table.targets[idx];
                let name = t.path.display().to_string();
                let mut found = Vec::new();
                match t.kind {
                    TargetKind::File => {
                        if let Ok(l) = layout(t.fd(), off, len) {
                            if j.spec.rw.reads() {
                                found.extend(unwritten_finding(&name, &l));
                            }
                            found.extend(fragmentation_finding(&name, &l, j.spec.max_bs()));
                        }
                    }
                    TargetKind::BlockDevice => {
                        if j.spec.rw.reads() {
                            let dev = device::resolve(&t.path);
                            if let Some(d) = dev.first() {
                                if let Some(z) = ZramStat::read(&d.name) {
                                    found.extend(zram_finding(&d.name, &z, len));
                                }
                            }
                        }
                    }
                }
                for f in found {
                    if !self.layout_findings.contains(&f) {
                        self.layout_findings.push(f);
                    }
                }
            }
        }
    }
}

impl TrialHooks for DiagHooks {
    fn before_trial(&mut self, group: u32, trial: u32, jobs: &[&ResolvedJob], table: &TargetTable) {
        if trial == 0 {
            self.examine_layout(jobs, table);
        }
        // The group's targets, each once; direct if any job uses it directly.
        let mut watches: Vec<Watch> = Vec::new();
        let mut invalidate: Vec<bool> = Vec::new();
        for j in jobs {
            for f in j.clones.iter().flatten() {
                let t = &table.targets[f.target_idx];
                let direct = t.direct && j.spec.direct;
                match watches.iter().position(|w| w.path == t.path) {
                    Some(i) => {
                        watches[i].direct |= direct;
                        invalidate[i] |= direct && j.spec.invalidate;
                    }
                    None => {
                        watches.push(Watch {
                            path: t.path.clone(),
                            file: File::open(&t.path).ok(),
                            direct,
                            is_blockdev: t.kind == TargetKind::BlockDevice,
                            size: t.size,
                            pages: None,
                        });
                        invalidate.push(direct && j.spec.invalidate);
                    }
                }
            }
        }
        let mut record = TrialRecord {
            group,
            trial: trial + 1,
            jobs: jobs.iter().map(|j| j.spec.name.clone()).collect(),
            app_ios: 0,
            wall_us: 0,
            page_cache: Vec::new(),
            openers: Vec::new(),
            devices: Vec::new(),
        };
        let mut devs: Vec<BlockDev> = Vec::new();
        for (w, &inval) in watches.iter_mut().zip(&invalidate) {
            record.openers.push(TargetOpeners {
                target: w.path.display().to_string(),
                before: openers_of(&w.path),
                after: Vec::new(),
            });
            for d in device::resolve(&w.path) {
                if !devs.iter().any(|x| x.name == d.name) {
                    devs.push(d);
                }
            }
            if !w.direct {
                continue;
            }
            let mut tp = TargetPages {
                target: w.path.display().to_string(),
                invalidate: inval,
                pages: TrialPages::default(),
                samples: 0,
                page_size: self.page_size,
                method: "",
                error: None,
            };
            match self.count(w) {
                Ok((n, method)) => {
                    tp.method = method;
                    tp.pages.found = Some(n);
                    tp.pages.before = Some(n);
                    if inval && n > 0 {
                        let fd = w.file.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
                        match drop_cache_until_clean(fd, w.is_blockdev, 0, w.size) {
                            Ok(left) => tp.pages.before = Some(left),
                            Err(e) => tp.error = Some(format!("dropping the cache: {e}")),
                        }
                    }
                }
                Err(e) => tp.error = Some(format!("counting cached pages: {e}")),
            }
            w.pages = Some(record.page_cache.len());
            record.page_cache.push(tp);
        }
        self.cur = Some(Current {
            record,
            watches,
            devs,
            start: None,
        });
    }

    fn measure_start(&mut self, _group: u32, _trial: u32) {
        if let Some(c) = &mut self.cur {
            c.start = Some((device::snapshot(&c.devs), now_us()));
        }
    }

    fn during_trial(&mut self, _group: u32, _trial: u32) {
        let Some(mut c) = self.cur.take() else {
            return;
        };
        for w in &c.watches {
            let Some(k) = w.pages else { continue };
            if let Ok((n, _)) = self.count(w) {
                let tp = &mut c.record.page_cache[k];
                tp.samples += 1;
                tp.pages.during_max = Some(tp.pages.during_max.unwrap_or(0).max(n));
            }
        }
        self.cur = Some(c);
    }

    fn measure_end(&mut self, _group: u32, _trial: u32, ios: u64) {
        if let Some(c) = &mut self.cur {
            let end = (device::snapshot(&c.devs), now_us());
            if let Some((snap, t0)) = &c.start {
                let wall = end.1.saturating_sub(*t0);
                c.record.app_ios = ios;
                c.record.wall_us = wall;
                c.record.devices = device::report(&c.devs, snap, &end.0, ios, wall);
            }
        }
    }

    fn after_trial(
        &mut self,
        _group: u32,
        _trial: u32,
        _jobs: &[&ResolvedJob],
        _table: &TargetTable,
    ) {
        let Some(mut c) = self.cur.take() else {
            return;
        };
        for (i, w) in c.watches.iter().enumerate() {
            c.record.openers[i].after = openers_of(&w.path);
            if let Some(k) = w.pages {
                if let Ok((n, _)) = self.count(w) {
                    c.record.page_cache[k].pages.after = Some(n);
                }
            }
        }
        self.trials.push(c.record);
    }
}
