//! The resolved description of one job, with fio's defaults. The defaults
//! are written once, in the option table (`OptDef::default`):
//! `JobSpec::default()` is a blank spec with each of them applied.

pub use super::options::buffers::{CmdPrio, CpuPolicy, MemKind, MemPolicy};
pub use super::options::output::UnifiedRw;
use super::options::pacing::{ExitWhat, RateProcess, SteadyCriterion, SteppedDepth, ThinkBlocks};
use super::options::{self, Apply, OptDef};
use super::units::{with_kb_base, SizeOrPct};
use crate::verify::pattern::Pattern;
use std::sync::OnceLock;

/// Data direction pattern (`rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// Sequential mixed reads and writes (`rw`/`readwrite`).
    ReadWrite,
    RandRw,
    /// Trims (discard / punch hole): they destroy data like writes.
    Trim,
    RandTrim,
    /// Each block trimmed, then written.
    TrimWrite,
    RandTrimWrite,
}

impl RwMode {
    pub const NAMES: &'static [&'static str] = &[
        "read",
        "write",
        "randread",
        "randwrite",
        "rw",
        "readwrite",
        "randrw",
        "trim",
        "randtrim",
        "trimwrite",
        "randtrimwrite",
    ];

    pub fn parse(s: &str) -> Option<RwMode> {
        Some(match s {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "rw" | "readwrite" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            "trim" => RwMode::Trim,
            "randtrim" => RwMode::RandTrim,
            "trimwrite" => RwMode::TrimWrite,
            "randtrimwrite" => RwMode::RandTrimWrite,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
        )
    }
    pub fn reads(self) -> bool {
        matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::ReadWrite | RwMode::RandRw
        )
    }
    /// The job changes the target's data: it writes or trims. Everything
    /// that guards data (the destructive-write guard, read-only targets,
    /// ranks sharing a file) asks this, so a trim is refused where a write is.
    pub fn writes(self) -> bool {
        !matches!(self, RwMode::Read | RwMode::RandRead)
    }
    /// The job issues write I/Os (a trim-only job does not).
    pub fn issues_writes(self) -> bool {
        self.writes() && !matches!(self, RwMode::Trim | RwMode::RandTrim)
    }
    /// The job trims (discards) blocks.
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite
        )
    }
}

pub use crate::engines::EngineKind;

/// Block-size distribution for one direction.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockSizes {
    Fixed(u64),
    /// Uniform over multiples of the minimum in `[min, max]`.
    Range(u64, u64),
    /// `bssplit`: (size, percent) pairs.
    Split(Vec<(u64, u32)>),
}

impl BlockSizes {
    pub fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range(_, hi) => *hi,
            BlockSizes::Split(v) => v.iter().map(|x| x.0).max().unwrap_or(0),
        }
    }
    pub fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range(lo, _) => *lo,
            BlockSizes::Split(v) => v.iter().map(|x| x.0).min().unwrap_or(0),
        }
    }
    /// Every size this distribution can produce (for alignment checks).
    pub fn all(&self) -> Vec<u64> {
        match self {
            BlockSizes::Fixed(b) => vec![*b],
            BlockSizes::Range(lo, hi) => vec![*lo, *hi],
            BlockSizes::Split(v) => v.iter().map(|x| x.0).collect(),
        }
    }
}

/// Random offset distribution (`random_distribution=`).
#[derive(Debug, Clone, PartialEq)]
pub enum RandomDist {
    Uniform,
    Zipf(f64),
    Pareto(f64),
    Normal(f64),
    /// `zoned` / `zoned_abs`: per direction (read, write), the share of the
    /// I/Os each consecutive zone of the region gets.
    Zoned([Vec<AccessZone>; 2]),
    /// `sequence:3,1,0,2` (fio 3.42): these block indices in this order,
    /// over and over (`random_sequence_stride`: each round moves on by the
    /// list's length).
    Sequence(Vec<u64>),
}

/// One zone of a `zoned` (size as a percentage of the region) or
/// `zoned_abs` (size in bytes) distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessZone {
    /// Percent of the I/Os that land in this zone.
    pub io_pct: u32,
    pub size: ZoneSize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZoneSize {
    /// Percent of the region.
    Pct(f64),
    Bytes(u64),
}

/// How a job with several files picks the next one (`file_service_type`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileService {
    RoundRobin,
    /// Finish one file's pass before moving to the next.
    Sequential,
    Random,
    Zipf(f64),
    Pareto(f64),
    Normal(f64),
}

/// How files are given their space before the job (`fallocate=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallocate {
    None,
    /// fallocate(2), falling back to writing when unsupported (the default).
    Native,
    /// posix_fallocate: reserve, or fail.
    Posix,
    /// FALLOC_FL_KEEP_SIZE: reserve past the end, size unchanged.
    Keep,
    /// ftruncate to the final size: no blocks reserved.
    Truncate,
}

/// `random_generator=`: fio's generators (runner/randgen.rs), reproducible
/// from `randseed`: `tausworthe` is taus88 (lfsr258 over 2^32 blocks, as
/// fio switches), `tausworthe64` lfsr258, both with the random map unless
/// `norandommap`; `lfsr` never gives a block twice in a pass, map or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomGenerator {
    Tausworthe,
    Lfsr,
    Tausworthe64,
}

/// `zonemode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneMode {
    None,
    /// I/O stays in a zone of `zonerange` bytes until `zonesize` bytes were
    /// transferred, then moves `zonerange + zoneskip` further.
    Strided,
}

/// One job, every option resolved to fio's default where not given.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    /// Targets; empty means "derive from name and directory".
    pub filenames: Vec<String>,
    pub directory: Option<String>,
    pub size: Option<SizeOrPct>,
    pub filesize: Option<(u64, u64)>,
    pub offset: SizeOrPct,
    pub offset_increment: u64,
    /// Per direction: [read, write].
    pub bs: [BlockSizes; 2],
    pub rw: RwMode,
    /// Percentage of reads in mixed workloads.
    pub rwmixread: u32,
    pub ioengine: EngineKind,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    /// `iodepth_batch_complete_min=0` given: poll for completions before
    /// sleeping (fio: "always check for completed events").
    pub poll_reaps: bool,
    pub iodepth_batch_complete_max: u32,
    pub numjobs: u32,
    pub runtime_us: u64,
    pub time_based: bool,
    pub ramp_time_us: u64,
    pub loops: u32,
    /// `startdelay`: a delay, or a range to draw one from per clone and trial.
    pub startdelay_us: (u64, u64),
    pub direct: bool,
    /// `sync=`: the flag targets are opened with besides O_DIRECT
    /// (0, `libc::O_SYNC` or `libc::O_DSYNC`).
    pub open_sync: i32,
    pub invalidate: bool,
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    pub norandommap: bool,
    pub randrepeat: bool,
    /// `allrandrepeat`: every generator from `randseed`, even with
    /// `randrepeat=0` (each worker's generators all derive from its seed).
    pub allrandrepeat: bool,
    pub randseed: u64,
    pub random_distribution: RandomDist,
    pub group_reporting: bool,
    /// `unified_rw_reporting`: the directions apart, summed as fio's
    /// "mixed", or both.
    pub unified_rw: UnifiedRw,
    pub stonewall: bool,
    pub new_group: bool,
    /// `wait_for` resolved (options/workload.rs): the job waits for its
    /// waitee, so it starts a new run phase, but (unlike `stonewall`) stays
    /// in the reporting group of the job before it, as fio numbers groups.
    pub wait_phase: bool,
    pub cpus_allowed: Option<Vec<usize>>,
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    /// fio's slat_percentiles: submission-latency percentiles too.
    pub slat_percentiles: bool,
    /// fio's disable_slat / disable_clat / disable_lat: latencies not measured.
    pub disable_slat: bool,
    pub disable_clat: bool,
    pub disable_lat: bool,
    /// fio's gtod_reduce: the three above, and fewer clock reads.
    pub gtod_reduce: bool,
    pub unlink: bool,
    /// I/Os per second: reads, writes, trims (0: no limit).
    pub rate_iops: [u64; 3],
    // Time and pacing (job/options/pacing.rs; the runner's side is
    // runner/pacing.rs, latency_target.rs, steadystate.rs, watch.rs).
    /// `rate`: bytes per second, reads, writes, trims (0: no cap; trims
    /// are not paced: a trim part is refused for jobs that trim).
    pub rate: [u64; 3],
    /// `rate_min`, `rate_iops_min`: floors judged every `rate_cycle_ms`.
    pub rate_min: [u64; 3],
    pub rate_iops_min: [u64; 3],
    pub rate_cycle_ms: u64,
    pub rate_process: RateProcess,
    pub rate_ignore_thinktime: bool,
    pub thinktime_us: u64,
    pub thinktime_spin_us: u64,
    /// 0: not given (1, unless `thinktime_iotime` is given).
    pub thinktime_blocks: u64,
    pub thinktime_blocks_type: ThinkBlocks,
    pub thinktime_iotime_us: u64,
    /// `flow` weight (0: not in a flow; negative: the other side of a
    /// balanced flow, fio's older form), `flow_id`, `flow_sleep`.
    pub flow: i32,
    pub flow_id: u32,
    pub flow_sleep_us: u64,
    /// `steadystate` criterion; detection is on when `ss_dur_us` > 0.
    pub steadystate: SteadyCriterion,
    pub ss_dur_us: u64,
    pub ss_ramp_us: u64,
    /// `latency_target` (0: off), `latency_window`, `latency_percentile`, `latency_run`.
    pub latency_target_ns: u64,
    pub latency_window_us: u64,
    pub latency_percentile: f64,
    pub latency_run: bool,
    /// `iodepth_mode=stepped:…` (runner/stepped.rs); None: the depth is `iodepth`.
    pub iodepth_mode: Option<SteppedDepth>,
    pub exitall: bool,
    pub exit_what: ExitWhat,
    pub exitall_on_error: bool,
    pub fixedbufs: bool,
    pub registerfiles: bool,
    /// The options of engines that take their own (cpuio, exec, e4defrag).
    pub engine_params: crate::engines::EngineParams,
    pub sqthread_poll: bool,
    pub hipri: bool,
    pub nowait: bool,
    /// `uncached=1`: RWF_DONTCACHE per I/O (buffered I/O that leaves no
    /// pages in the page cache).
    pub uncached: bool,
    /// `atomic=1`: RWF_ATOMIC per write (torn-write protection).
    pub atomic: bool,
    pub create_on_open: bool,
    pub allow_mounted_write: bool,
    pub continue_on_error: bool,
    pub write_bw_log: Option<String>,
    pub write_iops_log: Option<String>,
    pub write_lat_log: Option<String>,
    pub log_avg_msec: u64,
    /// fio's `log_max_value`, `log_offset`, `per_job_logs` (runner/logs.rs).
    pub log_max_value: bool,
    pub log_offset: bool,
    pub per_job_logs: bool,
    /// fio's `write_hist_log`, `log_hist_msec`, `log_hist_coarseness`,
    /// `log_prio`, `log_unix_epoch`, `log_alternate_epoch`,
    /// `log_alternate_epoch_clock_id` (runner/logs.rs).
    pub write_hist_log: Option<String>,
    pub log_hist_msec: u64,
    pub log_hist_coarseness: u32,
    pub log_prio: bool,
    pub log_unix_epoch: bool,
    pub log_alternate_epoch: bool,
    pub log_alternate_epoch_clock_id: i32,
    /// `log_window_value=both`: windowed logs carry the mean and the maximum.
    pub log_window_both: bool,
    /// `log_issue_time`: per-I/O logs end with the issue time in ns.
    pub log_issue_time: bool,
    /// `gtod_cpu`: CPUs no worker may run on. Set by a job, it holds for
    /// every job of the run, as in fio (the runner unites them).
    pub gtod_cpus: Vec<usize>,
    /// `io_submit_mode=offload`: a pool of submitter threads (runner/offload.rs).
    pub submit_offload: bool,
    /// `ignore_error=READ,WRITE,VERIFY`: per type, the errnos a job with
    /// `continue_on_error` for that type ignores (`None`: not given).
    pub ignore_error: [Option<Vec<i32>>; 3],
    /// The types `continue_on_error` covers: read, write, verify.
    pub continue_on: [bool; 3],
    /// Verification: algorithm name (`None` = off).
    pub verify: Option<String>,
    pub do_verify: bool,
    pub verify_fatal: bool,
    pub verify_only: bool,
    pub verify_interval: u64,
    // Buffer contents, the rest of the verify family, priorities, CPU and
    // memory placement: job/options/buffers.rs, used in runner/buffers.rs,
    // verifying.rs and thread_setup.rs.
    pub zero_buffers: bool,
    /// `None`: fio's default (on, unless zero_buffers was given).
    pub scramble_buffers: Option<bool>,
    pub refill_buffers: bool,
    pub buffer_pattern: Option<Pattern>,
    pub buffer_compress_percentage: Option<u32>,
    pub buffer_compress_chunk: u64,
    pub dedupe_percentage: u32,
    /// `dedupe_mode=working_set` (false: repeat the last unique write).
    pub dedupe_working_set: bool,
    pub dedupe_working_set_percentage: u32,
    pub dedupe_global: bool,
    pub verify_pattern: Option<Pattern>,
    /// `verify_pattern_interval` (fio 3.41): the pattern starts again
    /// every this many bytes, `%o` naming each piece (0: once per interval).
    pub verify_pattern_interval: u64,
    pub verify_backlog: u32,
    pub verify_backlog_batch: u32,
    pub verify_state_save: bool,
    pub verify_state_load: bool,
    pub experimental_verify: bool,
    pub verify_dump: bool,
    pub verify_async: u32,
    pub verify_async_cpus: Option<Vec<usize>>,
    /// `verify_write_sequence`: an older write of a block is bad (stale).
    pub verify_write_sequence: bool,
    pub verify_offset: u64,
    pub verify_header_seed: bool,
    /// `prioclass`, `prio` (ioprio_set of each worker thread).
    pub prioclass: Option<u32>,
    pub prio: Option<u32>,
    pub cmdprio: CmdPrio,
    pub nice: i32,
    pub cpus_allowed_policy: CpuPolicy,
    pub numa_cpu_nodes: Option<Vec<usize>>,
    pub numa_mem_policy: Option<MemPolicy>,
    pub iomem: MemKind,
    pub iomem_align: u64,
    pub lockmem: u64,
    pub exec_prerun: Option<String>,
    pub exec_postrun: Option<String>,
    /// Repetitions of the whole job (dioscope's own option); 0 is
    /// `trials=auto` (see `GlobalSettings::auto`).
    pub trials: u32,
    // Files and offsets (issue 15, job/options/workload.rs).
    /// Files per clone when no `filename` is given.
    pub nrfiles: u32,
    /// Files open at once (0: all): dioscope opens each file once per run.
    pub openfiles: u32,
    /// Name of generated files: `$jobname`, `$jobnum`, `$filenum`, `$clientuid`.
    pub filename_format: Option<String>,
    pub file_service: FileService,
    /// I/Os to one file before the next is chosen (`file_service_type=random:8`).
    pub file_service_every: u32,
    pub allow_file_create: bool,
    pub fallocate: Fallocate,
    /// fio's `overwrite`: None (not given: dioscope lays out data, as
    /// `overwrite=1`), `Some(false)`: a job that only writes gets its file
    /// sized and space reserved, not filled with data first.
    pub overwrite: Option<bool>,
    /// fio's `wait_for`: the name of an earlier job this one starts after.
    pub wait_for: Option<String>,
    /// `random_sequence_stride`: `random_distribution=sequence` moves on by
    /// the sequence's length after each round instead of repeating it.
    pub random_sequence_stride: bool,
    /// fio's `fill_device` / `fill_fs`: write until the file system is
    /// full (ENOSPC ends the job, not as an error); on a block device, the
    /// whole device.
    pub fill_device: bool,
    pub unlink_each_loop: bool,
    /// `rw=read:8k` (bytes skipped after each sequential I/O, negative
    /// backwards) or `rw=randread:8` (I/Os per random offset).
    pub rw_offset_mod: i64,
    /// `rw_sequencer=identical`: repeat the same offset instead of continuing.
    pub rw_sequencer_identical: bool,
    /// Block sizes of trims (the third value of `bs=R,W,T`).
    pub bs_trim: BlockSizes,
    /// `offset_align`: a percentage offset is rounded up to this (0: the smallest bs).
    pub offset_align: u64,
    /// `blockalign`: boundary of random offsets per direction (0: the
    /// smallest block size).
    pub blockalign: [u64; 2],
    pub random_generator: RandomGenerator,
    /// `sprandom=1` (runner/sprandom.rs): SanDisk pseudo-random
    /// preconditioning, with `spr_op` (over-provisioning ratio),
    /// `spr_num_regions` and `spr_cs` (the device's write cache, bytes).
    pub sprandom: bool,
    pub spr_op: f64,
    pub spr_num_regions: u32,
    pub spr_cs: u64,
    /// Second `random_distribution` parameter (`zipf:1.2:0.25`): where in
    /// the region (0..1) the most likely offset lies.
    pub random_center: Option<f64>,
    /// Percent of random I/Os in a random workload, per direction.
    pub percentage_random: [u32; 2],
    pub serialize_overlap: bool,
    pub zonemode: ZoneMode,
    pub zonesize: u64,
    pub zonerange: u64,
    pub zoneskip: u64,
    /// Stop after this many I/Os (0: no limit).
    pub number_ios: u64,
    /// Bytes of I/O to do, independent of the region (`io_size`).
    pub io_size: Option<u64>,
    /// `read_iolog` / `write_iolog` and the replay options.
    pub read_iolog: Option<String>,
    pub write_iolog: Option<String>,
    pub replay_no_stall: bool,
    pub replay_redirect: Option<String>,
    pub replay_align: u64,
    pub replay_scale: u64,
    /// `replay_time_scale`: percent of the recorded rate (200: twice as fast).
    pub replay_time_scale: u32,
    /// `replay_skip`: kinds of the log's I/Os not replayed.
    pub replay_skip: Vec<String>,
    /// The options exactly as given, for `"job options"` in the JSON.
    pub given: Vec<(String, String)>,
    /// `description=`: fio's free text about the job (JSON `desc`, terse).
    pub description: Option<String>,
}

impl Default for JobSpec {
    /// fio's defaults (dioscope's where it says so): a blank spec with
    /// every option's `default` applied through the option itself, so the
    /// option table (job/options) is the one place a default is written.
    fn default() -> Self {
        static DEFAULT: OnceLock<JobSpec> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                let (mut j, mut g) = (JobSpec::blank(), GlobalSettings::blank());
                apply_defaults(&mut j, &mut g, |o| o.apply.is_job());
                j
            })
            .clone()
    }
}

/// Apply the `default` of every option `which` picks (in table order) to
/// `job` and `global`, with fio's units (`kb_base=1024`) whatever the
/// caller's job file says.
fn apply_defaults(job: &mut JobSpec, global: &mut GlobalSettings, which: impl Fn(&OptDef) -> bool) {
    super::debug::quietly(|| {
        with_kb_base(1024, || {
            for o in options::all().filter(|o| which(o)) {
                if let Some(d) = o.default {
                    // options::tests::every_default_parses_and_is_what_a_spec_starts_with
                    // holds every default to this.
                    o.set(job, global, d)
                        .unwrap_or_else(|e| panic!("the default of {}, '{d}': {e}", o.name));
                }
            }
        })
    })
}

/// A `JobSpec` with the fields before `;` as given and those after it at
/// their type's `Default` (zero, empty, off, `None`): [`JobSpec::blank`]
/// lists only the neutral values that are not a `Default`.
macro_rules! spec_with_defaults {
    ($($f:ident: $v:expr,)* ; $($d:ident,)*) => {
        JobSpec { $($f: $v,)* $($d: Default::default(),)* }
    };
}

impl JobSpec {
    /// Every field at its neutral value (zero, empty, off, `None`, an
    /// enum's plain variant), before the options' defaults. The structs
    /// other modules own start from their own `Default`.
    fn blank() -> Self {
        spec_with_defaults! {
            offset: SizeOrPct::Bytes(0),
            bs: [BlockSizes::Fixed(0), BlockSizes::Fixed(0)],
            rw: RwMode::Read,
            ioengine: EngineKind::Psync,
            startdelay_us: (0, 0),
            random_distribution: RandomDist::Uniform,
            rate_process: RateProcess::Linear,
            thinktime_blocks_type: ThinkBlocks::Complete,
            exit_what: ExitWhat::Group,
            cpus_allowed_policy: CpuPolicy::Shared,
            iomem: MemKind::Malloc,
            file_service: FileService::RoundRobin,
            fallocate: Fallocate::None,
            bs_trim: BlockSizes::Fixed(0),
            random_generator: RandomGenerator::Tausworthe,
            zonemode: ZoneMode::None,
            ;
            name, filenames, directory, size, filesize, offset_increment, rwmixread, iodepth,
            iodepth_batch_submit, iodepth_batch_complete_min, poll_reaps,
            iodepth_batch_complete_max, numjobs, runtime_us, time_based, ramp_time_us, loops,
            direct, open_sync, invalidate, fsync, fdatasync, end_fsync, norandommap, randrepeat, allrandrepeat, randseed,
            group_reporting, unified_rw, stonewall, new_group, wait_phase, cpus_allowed, percentile_list,
            clat_percentiles, lat_percentiles, slat_percentiles, disable_slat, disable_clat, disable_lat, gtod_reduce,
            unlink, rate_iops, rate, rate_min, rate_iops_min, rate_cycle_ms, rate_ignore_thinktime,
            thinktime_us, thinktime_spin_us, thinktime_blocks, thinktime_iotime_us, flow, flow_id,
            flow_sleep_us, steadystate, ss_dur_us, ss_ramp_us, latency_target_ns, latency_window_us,
            latency_percentile, latency_run, iodepth_mode, exitall, exitall_on_error, fixedbufs,
            registerfiles, engine_params, sqthread_poll, hipri, nowait, uncached, atomic, create_on_open,
            allow_mounted_write, continue_on_error, write_bw_log, write_iops_log, write_lat_log,
            log_avg_msec, log_max_value, log_offset, per_job_logs, write_hist_log, log_hist_msec,
            log_hist_coarseness, log_prio, log_unix_epoch, log_alternate_epoch,
            log_alternate_epoch_clock_id, log_window_both, log_issue_time, gtod_cpus,
            submit_offload, ignore_error, continue_on, verify, do_verify, verify_fatal, verify_only,
            verify_interval, zero_buffers, scramble_buffers, refill_buffers, buffer_pattern,
            buffer_compress_percentage, buffer_compress_chunk, dedupe_percentage,
            dedupe_working_set, dedupe_working_set_percentage, dedupe_global, verify_pattern,
            verify_pattern_interval,
            verify_backlog, verify_backlog_batch, verify_state_save, verify_state_load,
            experimental_verify, verify_dump, verify_async, verify_async_cpus,
            verify_write_sequence, verify_offset, verify_header_seed, prioclass, prio, cmdprio,
            nice, numa_cpu_nodes, numa_mem_policy, iomem_align, lockmem, exec_prerun, exec_postrun,
            trials, nrfiles, openfiles, filename_format, file_service_every, allow_file_create,
            overwrite, wait_for, random_sequence_stride, fill_device, unlink_each_loop,
            rw_offset_mod, rw_sequencer_identical, offset_align, blockalign, sprandom, spr_op,
            spr_num_regions, spr_cs, random_center, percentage_random, serialize_overlap, zonesize,
            zonerange, zoneskip, number_ios, io_size, read_iolog, write_iolog, replay_no_stall,
            replay_redirect, replay_align, replay_scale, replay_time_scale, replay_skip, given,
            description,
        }
    }
}

impl JobSpec {
    /// The verify interval used: `verify_interval` (default: the smallest
    /// block size), but never more than the smallest block, as in fio,
    /// where a block shorter than the interval is one interval of its own
    /// (`bs=512` with `verify_interval=1m` checks each 512-byte block).
    pub fn verify_interval_used(&self) -> u64 {
        let min_bs = self.bs[0].min().min(self.bs[1].min());
        if self.verify_interval > 0 {
            self.verify_interval.min(min_bs)
        } else {
            min_bs
        }
    }
    /// The block the verify intervals are counted from: the interval when
    /// it divides every block size; else the job's one block size, each
    /// block holding whole intervals and a shorter last one (fio requires
    /// the interval to divide the block; dioscope takes any). `None`: block
    /// sizes that vary and that the interval does not divide.
    pub fn verify_unit(&self) -> Option<u64> {
        let iv = self.verify_interval_used().max(1);
        let all: Vec<u64> = self.bs[0]
            .all()
            .into_iter()
            .chain(self.bs[1].all())
            .collect();
        if all.iter().all(|b| b % iv == 0) {
            return Some(iv);
        }
        let b = all.first().copied()?;
        all.iter().all(|&x| x == b).then_some(b)
    }
    /// Largest block size over both directions.
    pub fn max_bs(&self) -> u64 {
        self.bs[0].max().max(self.bs[1].max())
    }
    /// The job's effective fraction of reads, in percent.
    pub fn read_pct(&self) -> u32 {
        match self.rw {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::Write | RwMode::RandWrite => 0,
            RwMode::ReadWrite | RwMode::RandRw => self.rwmixread,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite => 0,
        }
    }
}

/// Settings for the whole invocation rather than a job.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalSettings {
    /// What fio only warns about, and dioscope too (the run prints them;
    /// `--warnings-fatal` makes them errors).
    pub warnings: Vec<String>,
    /// What dioscope does otherwise than a fio option says, told once on
    /// stderr (`dioscope: note: …`): never an error, even with
    /// `--warnings-fatal`.
    pub notes: Vec<String>,
    /// `--eta-newline=TIME`: a new progress line every this many seconds.
    pub eta_newline_s: Option<u64>,
    /// `--status-interval=TIME`: an interim report every this many ms.
    pub status_interval_ms: Option<u64>,
    /// `--bandwidth-log`: write agg-*_bw.log (runner::logs::agg).
    pub bandwidth_log: bool,
    /// The run's output formats as resolved (`--output-format`,
    /// `--minimal`, `--append-terse`; pipeline::check), in the order they
    /// are written: the interim reports use them too.
    pub formats: Vec<&'static str>,
    /// `--output-format` as given (empty: the default). The command
    /// resolves it in its table of renderers (`render::RUN_FORMATS`), which
    /// is the one list of formats.
    pub output_format: String,
    pub output: Option<String>,
    /// `--report=FILE`: the HTML report, written after the run too.
    pub report: Option<String>,
    /// `--trials` from the command line (overrides every job).
    pub trials: Option<u32>,
    /// `--destroy-data-on=DEV`: devices the user allows us to overwrite.
    pub destroy_data_on: Vec<String>,
    /// `--eta=` / `--progress=`: when to show the live progress line.
    pub eta: Eta,
    /// `--profile`: perf over the measured windows (crate::profile).
    pub profile: bool,
    /// `--stages`: latency by stage from kernel tracepoints (crate::stages).
    pub stages: bool,
    /// `--stages_sample`: follow one request in N through the stages (the
    /// option table's default, 8, unless set; 0 in a blank value means that
    /// default too).
    pub stages_sample: u32,
    /// `--precision`, `--max-trials`, `--max-time`, `--precision-metric`
    /// for `trials=auto`.
    pub auto: crate::stats::significance::AutoTrials,
    /// `--rank_stonewall`: under mpirun, what the first rank to finish does to the others.
    pub rank_stonewall: RankStonewall,
    /// `--rank_shared_files`: ranks on one host may write the same file.
    pub rank_shared_files: bool,
    /// `--rank_timeout`: longest wait for another rank in a collective step.
    pub rank_timeout_us: Option<u64>,
}

impl Default for GlobalSettings {
    /// A blank value with the global options' defaults applied, as for
    /// [`JobSpec`].
    fn default() -> Self {
        let (mut j, mut g) = (JobSpec::blank(), GlobalSettings::blank());
        apply_defaults(&mut j, &mut g, |o| matches!(o.apply, Apply::Global(_)));
        g
    }
}

impl GlobalSettings {
    fn blank() -> Self {
        GlobalSettings {
            warnings: Vec::new(),
            notes: Vec::new(),
            eta_newline_s: None,
            status_interval_ms: None,
            bandwidth_log: false,
            formats: Vec::new(),
            output_format: String::new(),
            output: None,
            report: None,
            trials: None,
            destroy_data_on: Vec::new(),
            eta: Eta::Auto,
            profile: false,
            stages: false,
            stages_sample: 0,
            auto: crate::stats::significance::AutoTrials {
                precision: 0.0,
                max_trials: 0,
                max_time_s: 0.0,
                metric: String::new(),
            },
            rank_stonewall: RankStonewall::Off,
            rank_shared_files: false,
            rank_timeout_us: None,
        }
    }
}

/// Stonewalling across ranks (IOR's `-D`/`-O stoneWallingWearOut`), distinct
/// from fio's `stonewall` (wait for the previous jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RankStonewall {
    /// Every rank runs its own job to its end.
    #[default]
    Off,
    /// The first rank done stops every other rank.
    Stop,
    /// The first rank done marks "first done"; every rank still finishes its work.
    Wearout,
}

/// When the live progress line is shown on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Eta {
    /// When stderr is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

impl Eta {
    pub fn shows(self, stderr_is_tty: bool) -> bool {
        match self {
            Eta::Auto => stderr_is_tty,
            Eta::Always => true,
            Eta::Never => false,
        }
    }
}

/// A whole invocation: global settings and the jobs in order, each with its
/// reporting group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub global: GlobalSettings,
    pub jobs: Vec<JobSpec>,
    /// `true` when no job was given and the default job was filled in.
    pub is_default_job: bool,
    /// The options `[global]` set, as given (fio's JSON "global options").
    pub global_options: Vec<(String, String)>,
    /// The job files and includes read (resolved): inputs, which no file
    /// dioscope creates may replace.
    pub inputs: Vec<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written default `JobSpec::default()` was before it was
    /// derived from the option table (kept to prove nothing changed).
    fn hand_written_default() -> JobSpec {
        JobSpec {
            name: String::new(),
            filenames: Vec::new(),
            directory: None,
            size: None,
            filesize: None,
            offset: SizeOrPct::Bytes(0),
            offset_increment: 0,
            bs: [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)],
            rw: RwMode::Read,
            rwmixread: 50,
            ioengine: EngineKind::Psync,
            iodepth: 1,
            // fio defaults to 1 (a syscall per I/O); dioscope submits all
            // that are ready at once: same I/O, lower cost.
            iodepth_batch_submit: 0,
            // 0 = auto: iodepth/2 (at least 1). fio waits for 1; reaping a
            // few at a time halves the system calls at the same depth.
            iodepth_batch_complete_min: 0,
            poll_reaps: false,
            iodepth_batch_complete_max: 0,
            numjobs: 1,
            runtime_us: 0,
            time_based: false,
            ramp_time_us: 0,
            loops: 1,
            startdelay_us: (0, 0),
            direct: false,
            open_sync: 0,
            invalidate: true,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            norandommap: false,
            randrepeat: true,
            allrandrepeat: false,
            randseed: 0x89,
            random_distribution: RandomDist::Uniform,
            group_reporting: false,
            unified_rw: UnifiedRw::None,
            stonewall: false,
            new_group: false,
            wait_phase: false,
            cpus_allowed: None,
            // fio's default clat percentile list.
            percentile_list: vec![
                1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5,
                99.9, 99.95, 99.99,
            ],
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            disable_slat: false,
            disable_clat: false,
            disable_lat: false,
            gtod_reduce: false,
            unlink: false,
            rate_iops: [0; 3],
            rate: [0; 3],
            rate_min: [0; 3],
            rate_iops_min: [0; 3],
            rate_cycle_ms: 1000,
            rate_process: RateProcess::Linear,
            rate_ignore_thinktime: false,
            thinktime_us: 0,
            thinktime_spin_us: 0,
            thinktime_blocks: 0,
            thinktime_blocks_type: ThinkBlocks::Complete,
            thinktime_iotime_us: 0,
            flow: 0,
            flow_id: 0,
            flow_sleep_us: 0,
            steadystate: SteadyCriterion::default(),
            ss_dur_us: 0,
            ss_ramp_us: 0,
            latency_target_ns: 0,
            latency_window_us: 0,
            latency_percentile: 100.0,
            latency_run: false,
            iodepth_mode: None,
            exitall: false,
            exit_what: ExitWhat::Group,
            exitall_on_error: false,
            fixedbufs: true,
            registerfiles: true,
            engine_params: crate::engines::EngineParams::default(),
            sqthread_poll: false,
            hipri: false,
            nowait: false,
            uncached: false,
            atomic: false,
            create_on_open: false,
            allow_mounted_write: false,
            continue_on_error: false,
            write_bw_log: None,
            write_iops_log: None,
            write_lat_log: None,
            log_avg_msec: 0,
            log_max_value: false,
            log_offset: false,
            per_job_logs: true,
            write_hist_log: None,
            log_hist_msec: 0,
            log_hist_coarseness: 0,
            log_prio: false,
            log_unix_epoch: false,
            log_alternate_epoch: false,
            log_alternate_epoch_clock_id: 0,
            log_window_both: false,
            log_issue_time: false,
            gtod_cpus: Vec::new(),
            submit_offload: false,
            ignore_error: [None, None, None],
            continue_on: [false; 3],
            verify: None,
            do_verify: true,
            verify_fatal: false,
            verify_only: false,
            verify_interval: 0,
            zero_buffers: false,
            scramble_buffers: None,
            refill_buffers: false,
            buffer_pattern: None,
            buffer_compress_percentage: None,
            buffer_compress_chunk: 512,
            dedupe_percentage: 0,
            dedupe_working_set: false,
            dedupe_working_set_percentage: 5,
            dedupe_global: false,
            verify_pattern: None,
            verify_pattern_interval: 0,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            verify_state_save: true,
            verify_state_load: false,
            experimental_verify: false,
            verify_dump: false,
            verify_async: 0,
            verify_async_cpus: None,
            verify_write_sequence: true,
            verify_offset: 0,
            verify_header_seed: true,
            prioclass: None,
            prio: None,
            cmdprio: CmdPrio::default(),
            nice: 0,
            cpus_allowed_policy: CpuPolicy::Shared,
            numa_cpu_nodes: None,
            numa_mem_policy: None,
            iomem: MemKind::Malloc,
            iomem_align: 0,
            lockmem: 0,
            exec_prerun: None,
            exec_postrun: None,
            trials: 1,
            nrfiles: 1,
            openfiles: 0,
            filename_format: None,
            file_service: FileService::RoundRobin,
            file_service_every: 1,
            allow_file_create: true,
            fallocate: Fallocate::Native,
            overwrite: None,
            wait_for: None,
            random_sequence_stride: false,
            fill_device: false,
            unlink_each_loop: false,
            rw_offset_mod: 0,
            rw_sequencer_identical: false,
            bs_trim: BlockSizes::Fixed(4096),
            offset_align: 0,
            blockalign: [0; 2],
            random_generator: RandomGenerator::Tausworthe,
            sprandom: false,
            spr_op: 0.15,
            spr_num_regions: 100,
            spr_cs: 0,
            random_center: None,
            percentage_random: [100; 2],
            serialize_overlap: false,
            zonemode: ZoneMode::None,
            zonesize: 0,
            zonerange: 0,
            zoneskip: 0,
            number_ios: 0,
            io_size: None,
            read_iolog: None,
            write_iolog: None,
            replay_no_stall: false,
            replay_redirect: None,
            replay_align: 0,
            replay_scale: 1,
            replay_time_scale: 100,
            replay_skip: Vec::new(),
            given: Vec::new(),
            description: None,
        }
    }

    #[test]
    fn derived_default_is_the_hand_written_one() {
        assert_eq!(JobSpec::default(), hand_written_default());
        // GlobalSettings derived its Default before: every field's own.
        let g = GlobalSettings::default();
        assert_eq!(g.auto, crate::stats::significance::AutoTrials::default());
        assert_eq!(
            g,
            GlobalSettings {
                auto: crate::stats::significance::AutoTrials::default(),
                eta: Eta::default(),
                rank_stonewall: RankStonewall::default(),
                // The option table's default (stages_sample=8).
                stages_sample: 8,
                ..GlobalSettings::blank()
            }
        );
    }
}
