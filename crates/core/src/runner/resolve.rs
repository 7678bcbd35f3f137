//! Stage one: from job specs to resolved jobs, in one pass per run. The
//! names of every job's files come first (runner/paths.rs, and a replayed
//! log), then the sizes files have now, then what each target needs
//! (`target_needs`, pure), then the guard and layout open every target once
//! (`TargetTable::open_all`), then the facts only the open targets give
//! (`Facts`: size, kind, alignment, free space, polling queues), and last
//! the regions (`resolve`, pure: sizes, offsets, alignment). Everything
//! that reads the system is in `JobFiles::of`, `existing_size`,
//! `open_all` and `Facts::read`; the two pure steps are unit-tested with
//! table-driven cases (resolve/tests.rs).

use super::iolog::IoLog;
use super::paths::{job_err, job_paths, replay_log};
use super::result::{FileUse, ResolvedJob, SetupError};
use super::{kernflags, plan, preflight, sprandom, thread_setup};
use crate::engines::caps;
use crate::job::{JobSpec, Plan};
use crate::targets::{check_aligned, TargetInfo, TargetKind, TargetNeed, TargetTable};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Stage one: resolve and open everything, check alignment. No I/O yet.
/// The destructive-write guard runs on every target a job writes, with the
/// overrides of the jobs that write it (`targets::TargetNeed`).
pub fn prepare(plan: &Plan) -> Result<(Vec<ResolvedJob>, TargetTable), SetupError> {
    preflight::check(plan)?;
    thread_setup::preflight(plan)?;
    let files = JobFiles::of(plan)?;
    let needs = target_needs(plan, &files, existing_size);
    let table = TargetTable::open_all(&needs, &plan.global.destroy_data_on)?;
    let facts = Facts::read(plan, &files, &table);
    match resolve(plan, &files, &facts) {
        Ok(out) => Ok((out, table)),
        Err(e) => {
            // Bad input found after layout: nothing this run created may stay.
            table.discard();
            Err(e)
        }
    }
}

/// The files of one job: per clone its paths (none for an engine without
/// real I/O), and its replayed log, loaded.
#[derive(Debug, Clone, Default)]
pub struct JobFiles {
    pub paths: Vec<Vec<PathBuf>>,
    pub replay: Option<IoLog>,
}

impl JobFiles {
    /// Every job's files, in job order (a bad `read_iolog` is an error).
    pub fn of(plan: &Plan) -> Result<Vec<JobFiles>, SetupError> {
        plan.jobs
            .iter()
            .map(|j| {
                if !caps(j.ioengine).real_io {
                    return Ok(JobFiles {
                        paths: vec![Vec::new(); j.numjobs as usize],
                        replay: None,
                    });
                }
                let replay = match j.read_iolog {
                    Some(_) => Some(replay_log(j)?),
                    None => None,
                };
                let paths = (0..j.numjobs)
                    .map(|c| match &replay {
                        Some(l) => l.files.clone(),
                        None => job_paths(j, c, plan.is_default_job),
                    })
                    .collect();
                Ok(JobFiles { paths, replay })
            })
            .collect()
    }
}

/// The size of a regular file at `p` now (0: missing or not a file).
fn existing_size(p: &Path) -> u64 {
    std::fs::metadata(p)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len())
}

/// What each file of each job needs of its target (one entry per job,
/// clone and file; `TargetTable::open_all` merges them per path), given
/// the size each file has before the run (`existing`).
pub(super) fn target_needs(
    plan: &Plan,
    files: &[JobFiles],
    existing: impl Fn(&Path) -> u64,
) -> Vec<TargetNeed> {
    let mut needs = Vec::new();
    for (j, jf) in plan.jobs.iter().zip(files) {
        let replay = jf.replay.as_ref();
        for (c, paths) in jf.paths.iter().enumerate() {
            let n = paths.len() as u64;
            for (fi, p) in paths.iter().enumerate() {
                let prior = existing(p);
                needs.push(TargetNeed {
                    path: p.clone(),
                    direct: j.direct,
                    open_sync: j.open_sync,
                    write: match replay {
                        Some(l) => l.modifies(),
                        None => j.rw.writes() && !j.verify_only,
                    },
                    min_size: match replay {
                        Some(l) => l.extent(fi as u32),
                        // fill_device: the job's own writes size the file.
                        None if j.fill_device => 1,
                        None => min_size(j, n, c as u32, prior),
                    },
                    no_layout: j.create_on_open || j.fill_device,
                    // fio writes data at layout for a job that reads, or
                    // writes with overwrite=1.
                    fill: j.overwrite != Some(false) || j.rw.reads() || j.verify.is_some(),
                    allow_mounted_write: j.allow_mounted_write,
                    may_create: j.allow_file_create,
                    fallocate: j.fallocate,
                    make_dirs: j.filenames.is_empty()
                        && j.filename_format
                            .as_deref()
                            .is_some_and(|f| f.contains('/')),
                });
            }
        }
    }
    needs
}

/// What the system says about the open targets, read once after they are
/// opened and laid out: all that [`resolve`] needs besides the job specs.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The open targets (`TargetTable::targets`' descriptions, same order).
    pub targets: Vec<TargetInfo>,
    /// Bytes free for each file a `fill_device` job writes.
    pub free: HashMap<PathBuf, u64>,
    /// Block devices a `hipri` job uses whose queue does not poll
    /// (`queue/io_poll` = 0).
    pub(super) no_poll: HashSet<PathBuf>,
    /// Files of `uncached` jobs whose file system refused RWF_DONTCACHE
    /// on the probe read: why (runner/kernflags.rs).
    pub(super) no_dontcache: HashMap<(PathBuf, bool), String>,
    /// The atomic-write limits of the files `atomic` jobs write, or why
    /// they have none.
    pub(super) atomic: HashMap<PathBuf, Result<dioscope_sys::fs::AtomicWrite, String>>,
}

impl Facts {
    pub fn read(plan: &Plan, files: &[JobFiles], table: &TargetTable) -> Facts {
        let targets: Vec<TargetInfo> = table.targets.iter().map(|t| t.info.clone()).collect();
        let mut facts = Facts {
            targets,
            ..Default::default()
        };
        for (j, jf) in plan.jobs.iter().zip(files) {
            for p in jf.paths.iter().flatten() {
                let Some(t) = table.get(p, j.direct, j.open_sync) else {
                    continue;
                };
                if j.fill_device && t.kind == TargetKind::File && !facts.free.contains_key(p) {
                    facts.free.insert(p.clone(), crate::targets::free_bytes(p));
                }
                if j.uncached && !facts.no_dontcache.contains_key(&(p.clone(), j.direct)) {
                    if let Some(why) = kernflags::probe_dontcache(t) {
                        facts.no_dontcache.insert((p.clone(), j.direct), why);
                    }
                }
                if j.atomic && j.rw.writes() && !facts.atomic.contains_key(p) {
                    facts.atomic.insert(p.clone(), kernflags::atomic_limits(t));
                }
                if j.hipri && t.kind == TargetKind::BlockDevice {
                    let rdev = dioscope_sys::fs::statx_path(p)
                        .map(|s| s.rdev)
                        .unwrap_or((0, 0));
                    let attr = crate::targets::sysfs_block_attr(rdev, "queue/io_poll");
                    if attr.as_deref() == Some("0") {
                        facts.no_poll.insert(p.clone());
                    }
                }
            }
        }
        facts
    }

    fn free_bytes(&self, p: &Path) -> u64 {
        self.free.get(p).copied().unwrap_or(0)
    }
}

/// Bytes one of the `n` files of clone `c` must hold for the job's region
/// (0 when the job takes whatever the file has); `prior` is the file's
/// size before the run, which a percentage offset is of (as in fio, a file
/// too short for offset + size is extended).
pub(super) fn min_size(j: &JobSpec, n: u64, c: u32, prior: u64) -> u64 {
    match (j.filesize, j.size) {
        (Some((_, hi)), _) => hi,
        (None, Some(crate::job::units::SizeOrPct::Bytes(b))) => {
            b / n + offset_of(j, prior) + j.offset_increment * c as u64
        }
        _ => 0,
    }
}

/// The job's start offset in a target of `size` bytes: a percentage is
/// rounded up to `offset_align`, else to the smallest block size (fio), so
/// `offset=33%` with direct=1 lands on a block boundary.
pub(super) fn offset_of(j: &JobSpec, size: u64) -> u64 {
    match j.offset {
        crate::job::units::SizeOrPct::Bytes(b) => b,
        p => {
            let raw = p.resolve(size);
            let align = match j.offset_align {
                0 => j.bs[0].min().min(j.bs[1].min()).max(1),
                a => a,
            };
            raw.div_ceil(align) * align
        }
    }
}

/// A replayed log fits its target: every I/O inside it, and aligned for
/// direct I/O (each refusal names the line's offset and a fix).
fn check_replay(j: &JobSpec, log: &IoLog, f: u32, t: &TargetInfo) -> Result<(), SetupError> {
    let need = log.extent(f);
    if need > t.size {
        return Err(job_err(
            j,
            format!(
                "read_iolog: the log's I/Os reach byte {need} of {}, which holds {} bytes;                  replay onto a larger target (replay_redirect=) or scale the offsets (replay_scale=)",
                t.path.display(),
                t.size
            ),
        ));
    }
    if j.direct {
        let a = t.offset_align.max(1) as u64;
        let bad = log.ops.iter().find(|o| {
            o.file == f && o.len > 0 && (!o.offset.is_multiple_of(a) || !o.len.is_multiple_of(a))
        });
        if let Some(o) = bad {
            return Err(job_err(
                j,
                format!(
                    "read_iolog: the {} at offset {} length {} of {} is not aligned to {a} bytes                      for direct I/O; add replay_align={a} (offsets) or use direct=0",
                    o.kind.as_str(),
                    o.offset,
                    o.len,
                    t.path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Each job's regions on its open targets, checked (size, alignment,
/// hipri). Pure: the system was read into `files` and `facts`.
pub fn resolve(
    plan: &Plan,
    files: &[JobFiles],
    facts: &Facts,
) -> Result<Vec<ResolvedJob>, SetupError> {
    let placed = plan::place(&plan.jobs);
    let filled = filled_files(plan, files, &placed);
    let mut out = Vec::new();
    for (i, j) in plan.jobs.iter().enumerate() {
        let mut clones = Vec::new();
        let jf = &files[i];
        let replay = jf.replay.as_ref();
        for (c, paths) in jf.paths.iter().enumerate() {
            let c = c as u32;
            let mut uses = Vec::new();
            let n = paths.len() as u64;
            for (fi, p) in paths.iter().cloned().enumerate() {
                let (ti, t) = facts
                    .targets
                    .iter()
                    .enumerate()
                    .find(|(_, t)| {
                        t.path == p && t.direct == j.direct && t.open_sync == j.open_sync
                    })
                    .expect("every path was opened");
                if let Some(log) = replay {
                    check_replay(j, log, fi as u32, t)?;
                    uses.push(FileUse {
                        path: p,
                        target_idx: ti,
                        region: (0, t.size),
                    });
                    continue;
                }
                if sized_at_start(j, t, &filled, placed[i].phase) {
                    uses.push(FileUse {
                        path: p,
                        target_idx: ti,
                        region: (offset_of(j, 0) + j.offset_increment * c as u64, 0),
                    });
                    continue;
                }
                let (off, len) = region(j, t, facts, n, c)?;
                check_region(j, t, facts, off, len)?;
                uses.push(FileUse {
                    path: p,
                    target_idx: ti,
                    region: (off, len),
                });
            }
            clones.push(uses);
        }
        out.push(ResolvedJob {
            spec: j.clone(),
            phase: placed[i].phase,
            groupid: placed[i].groupid,
            first_worker: out.iter().map(|r: &ResolvedJob| r.clones.len()).sum(),
            clones,
        });
    }
    Ok(out)
}

/// The files fill_device jobs write, with their jobs' run phases.
fn filled_files<'a>(
    plan: &Plan,
    files: &'a [JobFiles],
    placed: &[plan::Placement],
) -> Vec<(&'a PathBuf, u32)> {
    // A later job on one of them, with no size of its own, takes what the
    // file holds when its phase starts (`Execution::size_at_start`), as fio
    // sizes a job's files when it starts (create_serialize=0; fio's default
    // fails it).
    plan.jobs
        .iter()
        .zip(files)
        .zip(placed)
        .filter(|((j, _), _)| j.fill_device)
        .flat_map(|((_, jf), pl)| jf.paths.iter().flatten().map(move |p| (p, pl.phase)))
        .collect()
}

/// Whether job `j`, in run phase `phase`, sizes file `t` when its phase
/// starts: it has no size of its own and an earlier phase fills the file.
fn sized_at_start(j: &JobSpec, t: &TargetInfo, filled: &[(&PathBuf, u32)], phase: u32) -> bool {
    t.kind == TargetKind::File
        && !j.fill_device
        && j.size.is_none()
        && j.filesize.is_none()
        && filled.iter().any(|(fp, g)| **fp == t.path && *g < phase)
}

/// The region (offset, length) clone `c` of job `j` uses on `t`, one of
/// its `n` files; an error if it does not fit.
fn region(
    j: &JobSpec,
    t: &TargetInfo,
    facts: &Facts,
    n: u64,
    c: u32,
) -> Result<(u64, u64), SetupError> {
    let p = &t.path;
    // create_on_open: the file was not laid out; the job's
    // writes give it the size its region needs.
    let size = if j.fill_device && t.kind == TargetKind::File {
        // What the file has plus what the file system has
        // free: the writes stop at ENOSPC before its end.
        let unit = j.bs[1].max().max(1);
        (t.size + facts.free_bytes(p)) / unit * unit
    } else if j.create_on_open && t.kind == TargetKind::File {
        t.size.max(min_size(j, n, c, t.prior_size))
    } else {
        t.size
    };
    let off = offset_of(j, t.prior_size) + j.offset_increment * c as u64;
    let len = match j.size {
        Some(s) if !j.fill_device => s.resolve(size) / n,
        _ => size.saturating_sub(off),
    };
    let len = match j.filesize {
        Some((_, hi)) if j.size.is_none() && !j.fill_device => hi.min(size).saturating_sub(off),
        _ => len,
    };
    if off + len > size || len == 0 {
        return Err(crate::targets::TargetError::TooSmall {
            path: p.display().to_string(),
            have: size,
            need: off + len.max(1),
            offset: off,
            size: len,
        }
        .into());
    }
    Ok((off, len))
}

/// Check job `j`'s region (`off`, `len`) on `t`: alignment for direct
/// I/O, sprandom's limits, room for one block, polling for hipri.
fn check_region(
    j: &JobSpec,
    t: &TargetInfo,
    facts: &Facts,
    off: u64,
    len: u64,
) -> Result<(), SetupError> {
    let p = &t.path;
    if j.direct {
        let trim = if j.rw.trims() {
            j.bs_trim.all()
        } else {
            Vec::new()
        };
        for bs in j.bs[0].all().into_iter().chain(j.bs[1].all()).chain(trim) {
            check_aligned(t, "bs", bs)?;
        }
        check_aligned(t, "offset", off)?;
        check_aligned(t, "offset_increment", j.offset_increment)?;
    }
    if j.sprandom {
        sprandom::check(j, len).map_err(|m| job_err(j, m))?;
    }
    if len < j.max_bs() {
        return Err(job_err(
            j,
            format!(
                "the region of {} is {len} bytes, smaller than bs={}; raise size= or lower bs=",
                p.display(),
                j.max_bs()
            ),
        ));
    }
    if let Some(why) = j
        .uncached
        .then(|| facts.no_dontcache.get(&(p.clone(), j.direct)))
        .flatten()
    {
        return Err(job_err(j, why.clone()));
    }
    if let Some(lim) = j.atomic.then(|| facts.atomic.get(p)).flatten() {
        kernflags::check_atomic(j, t, lim, off).map_err(|m| job_err(j, m))?;
    }
    if j.hipri && t.kind == TargetKind::BlockDevice && facts.no_poll.contains(p) {
        return Err(job_err(j, format!("hipri needs polling queues, but {} has queue/io_poll = 0; drop hipri, or load the driver with poll queues (e.g. nvme.poll_queues=N)", p.display())));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
