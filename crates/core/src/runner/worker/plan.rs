//! What one worker does, computed before it starts: [`WorkerPlan`], built
//! from a resolved job's options and files by one constructor,
//! [`WorkerPlan::new`]. Everything a worker needs that is not its engine is
//! here, so the loop (worker/mod.rs) decides nothing from job options.

use super::super::block_sizes::BsPicker;
use super::super::iolog::IoLog;
use super::super::offsets::{self, OffsetGen};
use super::super::pacing::{self, PacePlan};
use super::super::paths::{job_paths, replay_log};
use super::super::result::FileUse;
use super::super::sprandom;
use crate::engines::{caps, EngineOpts};
use crate::job::JobSpec;
use crate::targets::{TargetKind, TargetTable};
use std::sync::Arc;

/// What one worker does, computed before it starts.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    /// The seed every generator of the worker derives from ([`worker_seed`]).
    pub seed: u64,
    pub depth: u32,
    pub(super) batch_submit: u32,
    pub(super) complete_min: u32,
    /// Completions reaped at most at once (0: all that are ready).
    pub complete_max: u32,
    pub read_pct: u32,
    pub bs: [BsPicker; 2],
    pub offsets: OffsetGen,
    /// Timeline, in ns after the common start.
    pub ramp_ns: u64,
    /// 0: no time limit.
    pub runtime_ns: u64,
    /// Stop after this many measured bytes (0: no limit).
    pub io_limit: u64,
    /// Stop after this many measured I/Os (`number_ios`; 0: no limit).
    pub number_ios: u64,
    pub fsync_every: u32,
    pub fdatasync_every: u32,
    /// Latency per I/O priority (cmdprio_*): Some(true) the total latency
    /// (lat_percentiles, as fio), Some(false) the completion latency.
    pub prio_lat: Option<bool>,
    /// Rate caps and floors, thinktime, flow, latency target (runner/pacing.rs).
    pub pace: PacePlan,
    /// fsync every file at the end (`end_fsync`).
    pub end_fsync: bool,
    /// fio's non-fatal errors: per direction (read, write), the errnos
    /// (bits of 192) a job going on after errors (`continue_on_error`)
    /// counts and goes on after (EIO and EILSEQ unless `ignore_error` lists
    /// that type); any other errno ends the job, with or without
    /// `continue_on_error`, as in fio.
    pub(super) go_on: [[u64; 3]; 2],
    /// `ignore_error`: per direction (read, write), the errnos (bits of
    /// 192) that are ignored rather than errors.
    pub ignore: [[u64; 3]; 2],
    /// `fill_device`: a write that finds the file system full (ENOSPC,
    /// EDQUOT) ends the job; it is not an error.
    pub(super) until_full: bool,
    /// `create_on_open` on an engine that completes asynchronously: a read
    /// past what the job has written yet (end of file) returns 0 bytes and
    /// counts as a read of nothing, not an error (fio's libaio and io_uring
    /// do the same; its sync engines fail it, and so does this worker).
    pub eof_reads: bool,
    pub fds: Vec<i32>,
    pub(super) tick_ns: u64,
    /// fio's logs this worker writes (runner/logs.rs); `None`: no cost.
    pub log: Option<super::super::logs::LogPlan>,
    /// The latencies measured (fio's disable_slat/clat/lat turn them off).
    pub lat: LatStats,
    /// fio's gtod_reduce: read the clock only every few batches.
    pub gtod_reduce: bool,
    /// Trims instead of (`Only`) or before (`ThenWrite`) the writes.
    pub trim: TrimMode,
    /// Per file: a block device (trimmed with BLKDISCARD) or a file
    /// (trimmed by punching a hole).
    pub(super) trim_is_dev: Vec<bool>,
    /// Block sizes of trims.
    pub bs_trim: BsPicker,
    /// `serialize_overlap`: an I/O overlapping one in flight waits for it.
    pub serialize_overlap: bool,
    /// `read_iolog`: the I/Os to issue, in order, instead of generating them.
    pub replay: Option<std::sync::Arc<IoLog>>,
    /// Issue each replayed I/O at its recorded time (not `replay_no_stall`).
    pub replay_timed: bool,
    /// The files' paths, for an engine that works on names (`Caps::by_name`).
    pub names: Vec<std::path::PathBuf>,
    /// `write_iolog`: where to record the issued I/Os, and the files' names.
    pub write_iolog: Option<(std::path::PathBuf, Vec<std::path::PathBuf>)>,
    /// `--stages` on io_uring: the worker's part of the tracer's delivery
    /// board (runner/worker/delivery.rs); `None`: nothing read per reap.
    pub delivery: Option<super::delivery::DeliveryTap>,
}

/// Whether and how a worker trims. A trim is one system call
/// (BLKDISCARD or fallocate PUNCH_HOLE) done on the worker's thread, as
/// fio does for its engines: it is not queued behind the engine's ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimMode {
    None,
    /// `rw=trim` / `randtrim`: every I/O is a trim.
    Only,
    /// `rw=trimwrite` / `randtrimwrite`: each block is trimmed, then written.
    ThenWrite,
}

/// Which latency histograms a worker records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatStats {
    pub slat: bool,
    pub clat: bool,
    pub lat: bool,
}

impl LatStats {
    pub const ALL: LatStats = LatStats {
        slat: true,
        clat: true,
        lat: true,
    };
}

impl WorkerPlan {
    /// The plan of clone `clone` of job `j` in trial `trial`, on `files`
    /// (opened in `table`; none for an engine that does no real I/O, whose
    /// offsets then span a virtual region).
    pub fn new(
        j: &JobSpec,
        files: &[FileUse],
        table: &TargetTable,
        clone: u32,
        trial: u32,
    ) -> WorkerPlan {
        let c = caps(j.ioengine);
        let depth = if c.sync { 1 } else { j.iodepth.max(1) };
        let unit = offset_unit(j, files, table);
        // An engine that works on names (engines/meta.rs) gets each of its
        // files as a region of one block: one operation per file per pass.
        let names = if c.by_name {
            job_paths(j, clone, false)
        } else {
            Vec::new()
        };
        let regions = plan_regions(j, c.by_name, &names, files, clone);
        let seed = worker_seed(j, clone, trial);
        let (offsets, io_limit) = offsets_and_limit(j, &regions, unit, seed);
        WorkerPlan {
            seed,
            depth,
            batch_submit: if c.sync { 1 } else { j.iodepth_batch_submit },
            complete_min: complete_min(j, depth),
            complete_max: j.iodepth_batch_complete_max,
            read_pct: j.read_pct(),
            bs: [BsPicker::new(&j.bs[0], unit), BsPicker::new(&j.bs[1], unit)],
            offsets,
            ramp_ns: j.ramp_time_us * 1000,
            runtime_ns: j.runtime_us * 1000,
            io_limit,
            number_ios: j.number_ios,
            fsync_every: j.fsync,
            fdatasync_every: j.fdatasync,
            prio_lat: j.cmdprio.active().then_some(j.lat_percentiles),
            pace: pacing::PacePlan::for_job(j, [j.bs[0].min(), j.bs[1].min()], depth, seed),
            end_fsync: j.end_fsync && j.rw.writes(),
            go_on: go_on_sets(j),
            ignore: ignore_sets(j),
            until_full: j.fill_device,
            eof_reads: j.create_on_open && !c.sync,
            fds: files
                .iter()
                .map(|f| table.targets[f.target_idx].fd())
                .collect(),
            tick_ns: crate::results::series::INTERVAL_NS,
            log: None,
            lat: LatStats {
                // A synchronous engine submits and completes in one call:
                // no submission latency, as fio records none for them
                // (its slat_ns N is 0 for psync), and one histogram less
                // per I/O.
                slat: !j.disable_slat && !c.sync,
                clat: !j.disable_clat,
                lat: !j.disable_lat,
            },
            gtod_reduce: j.gtod_reduce,
            trim: trim_mode(j),
            trim_is_dev: files
                .iter()
                .map(|f| table.targets[f.target_idx].kind == TargetKind::BlockDevice)
                .collect(),
            bs_trim: BsPicker::new(&j.bs_trim, unit),
            serialize_overlap: j.serialize_overlap,
            // prepare loaded and checked the log; a log changed since then
            // replays nothing.
            replay: j
                .read_iolog
                .as_ref()
                .filter(|_| !files.is_empty())
                .map(|_| Arc::new(replay_log(j).unwrap_or_default())),
            replay_timed: !j.replay_no_stall,
            names,
            write_iolog: write_iolog_target(j, files, clone, trial),
            delivery: None,
        }
    }
}

/// The random-offset granularity: the finest `blockalign` asked for, else
/// the smallest block size; with direct I/O at least the files' alignment.
fn offset_unit(j: &JobSpec, files: &[FileUse], table: &TargetTable) -> u64 {
    // blockalign: offsets on the finest boundary asked for; each
    // direction's are then rounded to its own (offsets/random.rs).
    let unit = match j.blockalign.iter().filter(|&&b| b > 0).min() {
        None => j.bs[0].min().min(j.bs[1].min()).max(1),
        Some(&ba) => ba,
    };
    if j.direct {
        let a = files
            .iter()
            .map(|f| table.targets[f.target_idx].offset_align as u64)
            .max()
            .unwrap_or(1);
        unit.max(a)
    } else {
        unit
    }
}

/// The (start, length) regions a worker's offsets span: one block per name
/// for an engine that works on `names`, the files' regions, or a virtual
/// region when there are no files.
fn plan_regions(
    j: &JobSpec,
    by_name: bool,
    names: &[std::path::PathBuf],
    files: &[FileUse],
    clone: u32,
) -> Vec<(u64, u64)> {
    if by_name {
        names.iter().map(|_| (0, meta_file_bytes(j))).collect()
    } else if files.is_empty() {
        vec![virtual_region(j, clone)]
    } else {
        files.iter().map(|f| f.region).collect()
    }
}

/// The random seed of clone `clone` in trial `trial` (`randseed` when
/// given — it overrides `randrepeat=0`, as in fio — or with `randrepeat` or
/// `allrandrepeat`; else the clock). Every generator of the worker
/// (offsets, block sizes, the mix, buffer contents, pacing) derives from it.
fn worker_seed(j: &JobSpec, clone: u32, trial: u32) -> u64 {
    let given = j.given.iter().any(|(k, _)| k == "randseed");
    let seed = if j.randrepeat || j.allrandrepeat || given {
        j.randseed
    } else {
        dioscope_sys::clock::now_ns()
    };
    seed ^ (clone as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (trial as u64) << 48
}

/// The offset generator over `regions` (with sprandom's when asked for)
/// and the measured bytes after which the worker stops (0: no limit).
fn offsets_and_limit(
    j: &JobSpec,
    regions: &[(u64, u64)],
    unit: u64,
    seed: u64,
) -> (OffsetGen, u64) {
    let mut offsets = OffsetGen::with(regions, offset_cfg(j, unit), seed);
    let mut pass = offsets.pass_bytes();
    let mut io_size = j.io_size;
    if let (true, Some(&(start, len))) = (j.sprandom, regions.first()) {
        // fio: sprandom's io_size is the modelled physical size.
        let s = sprandom::Sprandom::for_job(j, start, len, seed);
        pass = s.physical_bytes();
        io_size = None;
        offsets.set_sprandom(s);
    }
    if io_size.is_none() {
        pass = holed_pass(j, regions).unwrap_or(pass);
    }
    let io_limit = if j.time_based {
        0
    } else {
        io_size.unwrap_or(pass).saturating_mul(j.loops as u64)
    };
    (offsets, io_limit)
}

/// fio's sequential I/O with holes (`rw=read:512k`) over one file, without
/// `io_size`: the pass ends when the next block, a hole further on, would
/// cross the file's end (fio's t0007: bs=1m, read:512k over 128 MiB reads
/// 85 blocks, 87040 KiB); when the next offset is at or past the end, fio
/// wraps to the start instead and the pass is the file's size. `None`:
/// not that case (random, backwards, several files, zones, mixed sizes).
fn holed_pass(j: &JobSpec, regions: &[(u64, u64)]) -> Option<u64> {
    let add = u64::try_from(j.rw_offset_mod).ok().filter(|&a| a > 0)?;
    if regions.len() != 1 || j.zonesize > 0 {
        return None;
    }
    use crate::job::spec::RwMode;
    let dirs = match j.rw {
        RwMode::Read => &j.bs[..1],
        RwMode::Write => &j.bs[1..],
        RwMode::ReadWrite => &j.bs[..],
        _ => return None,
    };
    let bs = dirs[0].min();
    if bs == 0 || dirs.iter().any(|b| b.min() != bs || b.max() != bs) {
        return None;
    }
    let len = regions[0].1;
    if len < bs {
        return None;
    }
    let fit = (len - bs) / (bs + add) + 1;
    (fit * (bs + add) < len).then_some(fit * bs)
}

/// Completions to wait for at least when reaping, at queue depth `depth`.
fn complete_min(j: &JobSpec, depth: u32) -> u32 {
    match j.iodepth_batch_complete_min {
        // Auto: wait for half the queue. Each wait is a system call and a
        // wake-up whose kernel cost does not depend on how many
        // completions it brings. B7 (bench/peak.py, zram QD 32, 2 CPUs,
        // docs/PERFORMANCE.md "Peak"): 16 of 32 gave 1.03x the IOPS of
        // t/io_uring's best grid point (which is also 16 of 32) at its
        // kernel and io-wq time per I/O; 8 of 32 gave 0.96x at 1.17x the
        // CPU per I/O, 4 of 32 fewer still. Half the queue stays at the
        // device during a wait, and the slots are refilled as soon as the
        // wait returns.
        // Asked for 0 (fio: check before queuing more): when the queue
        // is full, wait for one, after polling (engines that can).
        0 if j.poll_reaps => 1,
        0 => (depth / 2).max(1),
        n => n.min(depth),
    }
}

/// Whether and how the job trims.
fn trim_mode(j: &JobSpec) -> TrimMode {
    match j.rw {
        _ if !j.rw.trims() => TrimMode::None,
        crate::job::RwMode::TrimWrite | crate::job::RwMode::RandTrimWrite => TrimMode::ThenWrite,
        _ => TrimMode::Only,
    }
}

/// `write_iolog`: the file to record into, and the files' names. The first
/// trial's I/Os; clone N > 0 writes NAME.N.
fn write_iolog_target(
    j: &JobSpec,
    files: &[FileUse],
    clone: u32,
    trial: u32,
) -> Option<(std::path::PathBuf, Vec<std::path::PathBuf>)> {
    j.write_iolog.as_ref().filter(|_| trial == 0).map(|p| {
        (
            crate::job::created::iolog_file(p, clone),
            files.iter().map(|f| f.path.clone()).collect(),
        )
    })
}

/// Where a job's I/Os go, from its options (runner/offsets.rs).
fn offset_cfg(j: &JobSpec, unit: u64) -> offsets::OffsetCfg {
    use crate::job::spec::{RandomGenerator, ZoneMode};
    let random = j.rw.is_random();
    offsets::OffsetCfg {
        unit,
        random,
        // fio: blockalign turns the random map off; lfsr never repeats a
        // block within a pass, with or without it.
        randommap: (!j.norandommap && j.blockalign == [0; 2])
            || j.random_generator == RandomGenerator::Lfsr,
        dist: j.random_distribution.clone(),
        generator: j.random_generator,
        seq_stride: j.random_sequence_stride,
        center: j.random_center,
        seq_add: if random { 0 } else { j.rw_offset_mod },
        rand_run: if random {
            j.rw_offset_mod.max(1) as u64
        } else {
            1
        },
        run_identical: j.rw_sequencer_identical,
        blockalign: j.blockalign,
        min_len: [j.bs[0].min(), j.bs[1].min()],
        one_unit: j.max_bs() == unit,
        pct_random: j.percentage_random,
        file_service: j.file_service,
        file_every: j.file_service_every,
        open_files: j.openfiles,
        zones: (j.zonemode == ZoneMode::Strided && j.zonesize > 0).then(|| {
            let range = if j.zonerange > 0 {
                j.zonerange
            } else {
                j.zonesize
            };
            (range, j.zonesize, j.zoneskip)
        }),
    }
}

/// The engine options of a job.
pub(crate) fn engine_opts(j: &JobSpec, depth: u32) -> EngineOpts {
    EngineOpts {
        depth,
        direct: j.direct,
        random: j.rw.is_random(),
        hipri: j.hipri,
        nowait: j.nowait,
        uncached: j.uncached,
        atomic: j.atomic,
        sqpoll: j.sqthread_poll,
        fixed_bufs: j.fixedbufs,
        registered_files: j.registerfiles,
        poll_reaps: j.poll_reaps,
        meta: crate::engines::meta::MetaOpts {
            unlink: j.unlink,
            layout_size: meta_layout_size(j),
            per_file: meta_file_bytes(j),
        },
        job: crate::engines::JobContext {
            name: j.name.clone(),
            runtime_us: j.runtime_us,
            directory: j.directory.clone(),
            virtual_size: virtual_size(j),
            params: j.engine_params.clone(),
        },
        ud_tag: 0,
    }
}

/// The bytes of each file of a metadata engine (engines/meta.rs), as fio
/// sizes them: `filesize`, else `size / nrfiles`, else one block.
fn meta_layout_size(j: &JobSpec) -> u64 {
    match (j.filesize, j.size) {
        (Some((_, hi)), _) => hi,
        (None, Some(crate::job::units::SizeOrPct::Bytes(b))) => b / j.nrfiles.max(1) as u64,
        _ => j.max_bs(),
    }
}

/// A metadata engine's file in whole blocks, at least one: the bytes its
/// I/Os go over in a pass (fio's fake I/Os after the operation).
fn meta_file_bytes(j: &JobSpec) -> u64 {
    let bs = j.max_bs().max(1);
    (meta_layout_size(j) / bs).max(1) * bs
}

/// The bytes a diskless engine's offsets span: `size`, else `filesize`
/// (as fio sizes its null files), else 1 GiB.
/// The null engine's region, as fio lays out its null files: from
/// `offset` (+ `offset_increment` per clone), `size` long, cut at the end
/// of a `filesize` file (fio's t/strided.py: offset=32k in a 64 KiB file
/// reads 32k–64k). An offset at or past that end: the whole virtual file.
fn virtual_region(j: &JobSpec, clone: u32) -> (u64, u64) {
    let whole = virtual_size(j);
    let file = j.filesize.map(|f| f.1).unwrap_or(u64::MAX);
    let off = crate::runner::resolve::offset_of(j, file.min(whole))
        .saturating_add(j.offset_increment.saturating_mul(clone as u64));
    let len = whole.min(file.saturating_sub(off));
    if len < j.max_bs() {
        (0, whole)
    } else {
        (off, len)
    }
}

fn virtual_size(j: &JobSpec) -> u64 {
    j.size
        .map(|s| s.resolve(1 << 30))
        .or(j.filesize.map(|f| f.1))
        .unwrap_or(1 << 30)
}

/// `ignore_error` as the worker tests it: per direction the errnos'
/// bits, for the types `continue_on_error` covers (fio ignores nothing
/// of a type the job does not go on after).
fn ignore_sets(j: &JobSpec) -> [[u64; 3]; 2] {
    let mut sets = [[0u64; 3]; 2];
    for (d, set) in sets.iter_mut().enumerate() {
        if !j.continue_on[d] {
            continue;
        }
        for &e in j.ignore_error[d].iter().flatten() {
            let e = e as usize;
            if e < 192 {
                set[e / 64] |= 1 << (e % 64);
            }
        }
    }
    sets
}

/// fio's non-fatal errors as the worker tests them: per direction the
/// errnos' bits a job that goes on after errors of that type counts and
/// goes on after. fio's default list is EIO for reads and writes and
/// EILSEQ (a verify type); an `ignore_error` list of the type replaces it
/// (those errnos are then ignored, see `ignore_sets`), so every other
/// errno, EBUSY or EINVAL say, ends the job even with continue_on_error=all.
fn go_on_sets(j: &JobSpec) -> [[u64; 3]; 2] {
    let mut sets = [[0u64; 3]; 2];
    let bit = |set: &mut [u64; 3], e: i32| set[e as usize / 64] |= 1 << (e as usize % 64);
    for (d, set) in sets.iter_mut().enumerate() {
        if j.continue_on[d] && j.ignore_error[d].is_none() {
            bit(set, libc::EIO);
        }
        if j.continue_on[2] && j.ignore_error[2].is_none() {
            bit(set, libc::EILSEQ);
        }
    }
    sets
}

#[cfg(test)]
impl WorkerPlan {
    /// A plan for tests: job `j` (a fixture such as `JobSpec::default()`
    /// with the options a test is about) on no files, built by [`new`].
    ///
    /// [`new`]: WorkerPlan::new
    pub(super) fn for_test(j: &JobSpec) -> WorkerPlan {
        WorkerPlan::new(j, &[], &TargetTable::default(), 0, 0)
    }
}

#[cfg(test)]
mod seed_tests {
    use super::*;

    #[test]
    fn allrandrepeat_fixes_the_seed_even_without_randrepeat() {
        let mut j = JobSpec {
            randrepeat: false,
            allrandrepeat: true,
            randseed: 1234,
            ..JobSpec::default()
        };
        assert_eq!(worker_seed(&j, 1, 2), worker_seed(&j, 1, 2));
        assert_ne!(
            worker_seed(&j, 0, 0),
            worker_seed(&j, 1, 0),
            "clones differ"
        );
        j.allrandrepeat = false;
        let a = worker_seed(&j, 1, 2);
        std::thread::sleep(std::time::Duration::from_micros(10));
        assert_ne!(a, worker_seed(&j, 1, 2), "randrepeat=0 alone: the clock");
        // A randseed given overrides randrepeat=0 (fio's random_seed.py).
        j.given.push(("randseed".into(), "1234".into()));
        let b = worker_seed(&j, 1, 2);
        std::thread::sleep(std::time::Duration::from_micros(10));
        assert_eq!(b, worker_seed(&j, 1, 2), "randseed given: repeatable");
    }
}
