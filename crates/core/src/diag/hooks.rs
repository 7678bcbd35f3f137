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
// Plain data in the result layer; the recording is here.
pub use crate::results::pagecache::{PageCacheCause, TargetOpeners, TargetPages};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::device::DevRole;
use super::device::{self, BlockDev, DeviceReport, Snapshot};
use super::env::Environment;
use super::findings::{CpuProcess, Finding, IoProcess, Opener};
use super::fs::silent_buffering;
use super::pagecache::{drop_cache_until_clean, resident_fd, TrialPages};
use super::procs;
use super::sharing::{cpu_share, CpuSample, JudgedCpus};
use super::sparse::{fragmentation_finding, layout, unwritten_finding, zram_finding, ZramStat};
use crate::runner::{ResolvedJob, TrialHooks};
use crate::targets::{TargetKind, TargetTable};

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
    /// Other processes that held a device holding a target (or a file on
    /// its file system) open during the trial and did block I/O meanwhile,
    /// busiest first.
    pub io_procs: Vec<IoProcess>,
    /// The CPUs the workers may run on, over the measured interval.
    pub cpu: Option<CpuShare>,
}

/// How busy the CPUs the workers may run on were, and by whom
/// ([`super::sharing::cpu_share`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuShare {
    pub cpus: usize,
    /// Which CPUs ([`JudgedCpus`]).
    pub cpu_list: Vec<usize>,
    /// They are the ones the workers are pinned to (cpus_allowed, cpumask,
    /// numa_cpu_nodes), not the process's.
    pub pinned: bool,
    /// Busy time of those CPUs in % of their capacity.
    pub busy_pct: f64,
    /// dioscope's CPU time on them in % of one CPU.
    pub ours_pct: f64,
    /// Everyone else's on those CPUs, in % of one CPU.
    pub others_pct: f64,
    /// The other processes that took most of our CPUs over the trial
    /// (`CpuProcess::our_cpus_pct`), busiest first.
    pub top: Vec<CpuProcess>,
}

/// At most this many processes are named per trial.
const TOP_PROCESSES: usize = 3;
/// Processes below this share of one CPU over a trial are not named.
const MIN_NAMED_CPU_PCT: f64 = 5.0;

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
    /// What the target is that explains cached pages (tmpfs, a mounted
    /// device); `Unknown` otherwise.
    cause: PageCacheCause,
    /// This run created or extended the file.
    laid_out: bool,
}

struct Current {
    record: TrialRecord,
    watches: Vec<Watch>,
    devs: Vec<BlockDev>,
    start: Option<(Snapshot, u64)>,
    /// A job of the group has a ramp: the device snapshot waits for its end
    /// (the jobs' bytes count from there); without one it is taken before
    /// the workers start, or the I/O they do while the runner snapshots
    /// would be in the jobs' bytes but not in the device's.
    ramp: bool,
    /// Who else is there (see [`Sharing`]).
    sharing: Sharing,
}

/// What the trial hooks sample of other processes: at the start and end of
/// the trial, the holders of the data devices with their `/proc/PID/io`
/// counters and every process's CPU ticks; at the start and end of the
/// measured interval, the busy ticks of the workers' CPUs and our own.
#[derive(Default)]
struct Sharing {
    /// (major, minor) of the devices that hold the targets' data.
    devs: Vec<(u32, u32)>,
    io: Vec<(i32, u64, u64)>,
    ticks: Vec<(i32, String, u64)>,
    t0_us: u64,
    /// The CPUs the workers may run on.
    judged: JudgedCpus,
    /// The CPU counters at the start of the measured interval.
    cpu0: Option<CpuSample>,
}

impl Sharing {
    fn start(devs: &[BlockDev], judged: JudgedCpus) -> Sharing {
        let devs: Vec<(u32, u32)> = devs
            .iter()
            .filter(|d| matches!(d.role, DevRole::Target | DevRole::Filesystem))
            .map(|d| (d.major, d.minor))
            .collect();
        let io = procs::holders(&devs)
            .into_iter()
            .filter_map(|p| procs::read_io(p).map(|(r, w)| (p, r, w)))
            .collect();
        Sharing {
            devs,
            io,
            ticks: procs::all_ticks(),
            t0_us: now_us(),
            judged,
            cpu0: None,
        }
    }

    fn measure_start(&mut self) {
        self.cpu0 = Some(CpuSample::now());
    }

    /// The workers' CPUs' busy share and ours over the measured interval.
    fn measure_end(&self) -> Option<CpuShare> {
        cpu_share(&self.judged, self.cpu0.as_ref()?, &CpuSample::now())
    }

    /// Holders at either end of the trial that did block I/O in between
    /// (a newcomer counts from zero), busiest first.
    fn io_processes(&self) -> Vec<IoProcess> {
        let mut pids: Vec<i32> = self.io.iter().map(|x| x.0).collect();
        for p in procs::holders(&self.devs) {
            if !pids.contains(&p) {
                pids.push(p);
            }
        }
        let mut out: Vec<IoProcess> = pids
            .into_iter()
            .filter_map(|pid| {
                let (r1, w1) = procs::read_io(pid)?;
                let (r0, w0) = self
                    .io
                    .iter()
                    .find(|x| x.0 == pid)
                    .map(|x| (x.1, x.2))
                    .unwrap_or((0, 0));
                let (read_bytes, write_bytes) = (r1.saturating_sub(r0), w1.saturating_sub(w0));
                (read_bytes + write_bytes > 0).then(|| IoProcess {
                    pid,
                    comm: procs::comm(pid),
                    read_bytes,
                    write_bytes,
                })
            })
            .collect();
        out.sort_by_key(|p| std::cmp::Reverse(p.read_bytes + p.write_bytes));
        out
    }

    /// The other processes that used the most CPU over the trial.
    fn top_cpu(&self) -> Vec<CpuProcess> {
        let wall_s = now_us().saturating_sub(self.t0_us) as f64 / 1e6;
        if wall_s <= 0.0 {
            return Vec::new();
        }
        let hz = crate::stats::cpu::clk_tck() as f64;
        let mut top: Vec<CpuProcess> = procs::all_ticks()
            .into_iter()
            .filter_map(|(pid, comm, t1)| {
                let t0 = self
                    .ticks
                    .iter()
                    .find(|x| x.0 == pid)
                    .map(|x| x.2)
                    .unwrap_or(0);
                let cpu_pct = 100.0 * t1.saturating_sub(t0) as f64 / hz / wall_s;
                if cpu_pct < MIN_NAMED_CPU_PCT {
                    return None;
                }
                // A process spread over CPUs we do not use takes only its
                // share of ours (a parallel build elsewhere outranked a
                // hog pinned on our CPU when ranked by its total).
                let allowed = procs::allowed_cpus_of(pid);
                let ours = &self.judged.cpus;
                let share = if allowed.is_empty() || ours.is_empty() {
                    1.0
                } else {
                    let on_ours = allowed.iter().filter(|c| ours.contains(c)).count();
                    on_ours as f64 / allowed.len() as f64
                };
                let our_cpus_pct = cpu_pct * share;
                (our_cpus_pct >= MIN_NAMED_CPU_PCT).then_some(CpuProcess {
                    pid,
                    comm,
                    cpu_pct,
                    our_cpus_pct,
                })
            })
            .collect();
        top.sort_by(|a, b| b.our_cpus_pct.total_cmp(&a.our_cpus_pct));
        top.truncate(TOP_PROCESSES);
        top
    }
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

/// A file modified at most this long before the first trial counts as
/// just written: its cached pages are the writer's.
const JUST_WRITTEN_S: u64 = 300;

/// What the target is that explains pages in its page cache: a file on a
/// memory file system, or a block device with a mounted file system.
pub(crate) fn target_cause(path: &Path, file: Option<&File>, is_blockdev: bool) -> PageCacheCause {
    use dioscope_sys::fsinfo::{fstatfs, RAMFS_MAGIC, TMPFS_MAGIC};
    if !is_blockdev {
        return match file.and_then(|f| fstatfs(f.as_raw_fd()).ok()) {
            Some(st) if st.fs_type == TMPFS_MAGIC || st.fs_type == RAMFS_MAGIC => {
                PageCacheCause::MemoryFilesystem {
                    fs_type: if st.fs_type == TMPFS_MAGIC {
                        "tmpfs"
                    } else {
                        "ramfs"
                    }
                    .into(),
                }
            }
            _ => PageCacheCause::Unknown,
        };
    }
    use std::os::unix::fs::MetadataExt;
    let Some(rdev) = file
        .and_then(|f| f.metadata().ok())
        .map(|m| crate::safety::DevNum::from_dev_t(m.rdev()))
    else {
        return PageCacheCause::Unknown;
    };
    let canon = std::fs::canonicalize(path).ok();
    crate::diag::mounts::read_mountinfo()
        .into_iter()
        .find(|m| {
            m.dev == (rdev.major, rdev.minor)
                || (canon.is_some() && std::fs::canonicalize(&m.source).ok() == canon)
        })
        .map(|m| PageCacheCause::MountedFilesystem {
            mount_point: m.mount_point.display().to_string(),
            fs_type: m.fs_type,
        })
        .unwrap_or_default()
}

/// [`PageCacheCause::JustWritten`] when the file was modified at most
/// [`JUST_WRITTEN_S`] ago (or this run laid it out).
fn just_written(path: &Path, laid_out: bool) -> Option<PageCacheCause> {
    let age = std::fs::metadata(path)
        .ok()?
        .modified()
        .ok()?
        .elapsed()
        .ok()?;
    (laid_out || age.as_secs() <= JUST_WRITTEN_S).then_some(PageCacheCause::JustWritten {
        seconds_before: age.as_secs(),
        by_dioscope: laid_out,
    })
}

fn now_us() -> u64 {
    dioscope_sys::clock::now_ns() / 1000
}

/// Other processes that have `path` open now.
pub fn openers_of(path: &std::path::Path) -> Vec<Opener> {
    crate::safety::other_openers(path)
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

    fn count(&self, w: &Watch) -> Result<(u64, String), String> {
        let f = w.file.as_ref().ok_or("cannot open it for reading")?;
        resident_fd(f.as_raw_fd(), 0, w.size)
            .map(|r| (r.pages, r.method.into_owned()))
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
                    TargetKind::NullDevice => {}
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

impl DiagHooks {
    /// The group's targets, each once; direct if any job uses it directly,
    /// dropped before the trial if any such job has `invalidate=1`.
    fn watches(jobs: &[&ResolvedJob], table: &TargetTable) -> Vec<(Watch, bool)> {
        let mut watches: Vec<(Watch, bool)> = Vec::new();
        for j in jobs {
            for f in j.clones.iter().flatten() {
                let t = &table.targets[f.target_idx];
                // An engine that goes through the cache by design (mmap)
                // fills it itself: not a sign of another reader.
                let direct = t.direct && j.spec.direct && !j.spec.ioengine.caps().page_cache;
                let inval = direct && j.spec.invalidate;
                match watches.iter_mut().find(|w| w.0.path == t.path) {
                    Some((w, i)) => {
                        w.direct |= direct;
                        *i |= inval;
                    }
                    None => {
                        let file = File::open(&t.path).ok();
                        let is_blockdev = t.kind == TargetKind::BlockDevice;
                        watches.push((
                            Watch {
                                cause: target_cause(&t.path, file.as_ref(), is_blockdev),
                                path: t.path.clone(),
                                file,
                                direct,
                                is_blockdev,
                                size: t.size,
                                pages: None,
                                laid_out: t.created || t.size > t.prior_size,
                            },
                            inval,
                        ))
                    }
                }
            }
        }
        watches
    }

    /// Count a direct target's cached pages and, with `invalidate`, drop them.
    fn clean(&self, w: &Watch, invalidate: bool) -> TargetPages {
        let mut tp = TargetPages {
            target: w.path.display().to_string(),
            invalidate,
            pages: TrialPages::default(),
            samples: 0,
            page_size: self.page_size,
            method: String::new(),
            error: None,
            cause: w.cause.clone(),
        };
        match self.count(w) {
            Ok((n, method)) => {
                tp.method = method;
                tp.pages.found = Some(n);
                tp.pages.before = Some(n);
                if invalidate && n > 0 {
                    let fd = w.file.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
                    match drop_cache_until_clean(fd, w.is_blockdev, 0, w.size) {
                        Ok(left) => tp.pages.before = Some(left),
                        Err(e) => tp.error = Some(format!("dropping the cache: {e}")),
                    }
                }
            }
            Err(e) => tp.error = Some(format!("counting cached pages: {e}")),
        }
        let first = !self
            .trials
            .iter()
            .any(|r| r.page_cache.iter().any(|p| p.target == tp.target));
        if first && tp.cause == PageCacheCause::Unknown && tp.pages.found.unwrap_or(0) > 0 {
            tp.cause = just_written(&w.path, w.laid_out).unwrap_or_default();
        }
        tp
    }
}

impl TrialHooks for DiagHooks {
    fn before_trial(&mut self, group: u32, trial: u32, jobs: &[&ResolvedJob], table: &TargetTable) {
        if trial == 0 {
            self.examine_layout(jobs, table);
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
            io_procs: Vec::new(),
            cpu: None,
        };
        let mut watches = Vec::new();
        let mut devs: Vec<BlockDev> = Vec::new();
        for (mut w, inval) in Self::watches(jobs, table) {
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
            if w.direct {
                w.pages = Some(record.page_cache.len());
                record.page_cache.push(self.clean(&w, inval));
            }
            watches.push(w);
        }
        self.cur = Some(Current {
            record,
            watches,
            sharing: Sharing::start(&devs, JudgedCpus::of(jobs)),
            devs,
            start: None,
            ramp: jobs.iter().any(|j| j.spec.ramp_time_us > 0),
        });
    }

    fn workers_ready(&mut self, _group: u32, _trial: u32) {
        if let Some(c) = self.cur.as_mut().filter(|c| !c.ramp) {
            c.start = Some((device::snapshot(&c.devs), now_us()));
        }
    }

    fn measure_start(&mut self, _group: u32, _trial: u32) {
        if let Some(c) = &mut self.cur {
            c.sharing.measure_start();
            if c.start.is_none() {
                c.start = Some((device::snapshot(&c.devs), now_us()));
            }
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
            c.record.cpu = c.sharing.measure_end();
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
        c.record.io_procs = c.sharing.io_processes();
        if let Some(cpu) = &mut c.record.cpu {
            cpu.top = c.sharing.top_cpu();
        }
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
