//! The typed result of a finished run: the runner's raw measurements, their
//! summaries and the diagnosis turned into one [`RunDoc`], which every
//! renderer reads. fio's fields follow fio's formulas (see FIO-COMPAT.md).

use crate::diag::RunDiagnosis;
use crate::job::spec::UnifiedRw;
use crate::job::JobSpec;
use crate::results::measure::VerifyIo;
use crate::results::model::{
    Cpu, Dioscope, DioscopeJob, Dir, IoError, Job, Lat, Prio, RunError, Sync, SCHEMA,
};
use crate::results::series::{TrialSeries, INTERVAL_NS};
use crate::results::{human_bytes, JobSummary, OrderedMap, RunDoc};
use crate::runner::{DirStats, IoErrorInfo, RunResult};
use crate::stats::{Histogram, Summary};

/// The whole result of a run. `context` is the engines-and-environment line.
pub fn run_doc(r: &RunResult, diagnosis: &RunDiagnosis, context: String) -> RunDoc {
    let sums = r.summarize();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut d = status(r);
    d.jobs = sums.iter().map(|s| dioscope_job(r, s)).collect();
    d.context = context;
    diagnosis.fill(&mut d);
    if !r.auto_trials.is_empty() {
        // Not a built-in key, so this cannot fail.
        let _ = d.set_section(
            "trials_auto",
            serde_json::to_value(&r.auto_trials).unwrap_or_default(),
        );
    }
    if let Some(v) = crate::runner::pacing::trials_section(r) {
        let _ = d.set_section("pacing", v);
    }
    let mut jobs: Vec<Job> = sums.iter().map(|s| job(r, s)).collect();
    share_of_group(&mut jobs);
    RunDoc {
        fio_version: crate::results::model::version_string(),
        timestamp: now.as_secs(),
        timestamp_ms: now.as_millis() as u64,
        time: crate::results::ctime(now.as_secs() as i64),
        global_options: None,
        jobs,
        disk_util: diagnosis.disk_util(),
        dioscope: Some(d),
        other: OrderedMap::new(),
    }
}

/// fio's `bw_agg` (`per=` of the text): a direction's mean sampled
/// bandwidth as a percentage of its group's aggregate (at most 100).
fn share_of_group(jobs: &mut [Job]) {
    let aggs: Vec<[Option<u64>; 4]> = jobs
        .iter()
        .map(|j| [0, 1, 2, 3].map(|d| super::fio_text::group_agg(jobs, j.groupid, d)))
        .collect();
    for (j, agg) in jobs.iter_mut().zip(aggs) {
        for (dir, agg) in [&mut j.read, &mut j.write, &mut j.trim]
            .into_iter()
            .chain(j.mixed.as_mut())
            .zip(agg)
        {
            dir.bw_agg = match agg {
                Some(a) if a > 0 && dir.bw_samples > 0 => {
                    (dir.bw_mean * 100.0 / (a as f64 / 1024.0)).min(100.0)
                }
                _ => 0.0,
            };
        }
    }
}

fn spec<'a>(r: &'a RunResult, s: &JobSummary) -> &'a JobSpec {
    &r.jobs[s.jobs[0]].resolved.spec
}

fn lat(h: &Histogram, percentiles: Option<&[f64]>) -> Lat {
    Lat {
        min: h.min(),
        max: h.max(),
        mean: h.mean(),
        stddev: h.stddev(),
        n: h.count(),
        percentile: percentiles.map(|ps| {
            ps.iter()
                .map(|&p| (format!("{p:.6}"), h.percentile(p)))
                .collect()
        }),
        // fio writes "bins" only for latencies that have samples; consumers
        // such as fio_jsonplus_clat2csv rely on that. json (not json+)
        // leaves them out when rendering.
        bins: (h.count() > 0).then(|| h.bins().map(|(v, c)| (v.to_string(), c)).collect()),
    }
}

/// Per-interval samples of every trial's measured time for directions
/// `ds` summed: (KiB/s, IOPS), as fio's bw/iops sample statistics.
fn interval_samples(s: &JobSummary, ds: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let (mut bws, mut iopss) = (Vec::new(), Vec::new());
    for t in s.ticks.iter().flatten().filter(|t| !t.ramp) {
        let dt = t.dur_ns.max(1) as f64 / 1e9;
        let bytes: u64 = ds.iter().map(|&d| t.bytes[d]).sum();
        let ios: u64 = ds.iter().map(|&d| t.ios[d]).sum();
        bws.push(bytes as f64 / 1024.0 / dt);
        iopss.push(ios as f64 / dt);
    }
    (bws, iopss)
}

/// fio's `mixed` direction (unified_rw_reporting): reads (with the verify
/// read-back's, as the read direction counts them), writes and trims
/// summed, over the job's runtime; its bandwidth and IOPS samples are the
/// reads' and writes' of each interval together.
fn mixed(r: &RunResult, s: &JobSummary) -> Dir {
    let v = verify_io(r, s);
    let mut st = s.dirs[0].clone();
    st.merge(&v.reads);
    st.merge(&s.dirs[1]);
    st.merge(&s.trim);
    let rt = s.runtime_ms + v.runtime_ns as f64 / 1e6;
    let (bws, iopss) = interval_samples(s, &[0, 1]);
    dir_of(spec(r, s), &st, rt, &bws, &iopss)
}

fn dir(r: &RunResult, s: &JobSummary, d: Option<usize>) -> Dir {
    let empty = DirStats::default();
    // 2: trims, kept beside the read and write directions.
    let st = d
        .map(|d| if d == 2 { &s.trim } else { &s.dirs[d] })
        .unwrap_or(&empty);
    let spec = spec(r, s);
    // fio counts the verify read-back's reads as reads, and its time in
    // the read runtime (bandwidth and IOPS over both).
    let with_verify;
    let (st, rt) = match (d, verify_io(r, s)) {
        (Some(0), v) if v.reads.ios > 0 => {
            let mut m = st.clone();
            m.merge(&v.reads);
            with_verify = m;
            let run_ms = if st.bytes > 0 { s.runtime_ms } else { 0.0 };
            (&with_verify, run_ms + v.runtime_ns as f64 / 1e6)
        }
        _ => (st, s.runtime_ms),
    };
    let (bws, iopss) = d
        .filter(|&d| d < 2)
        .map(|d| interval_samples(s, &[d]))
        .unwrap_or_default();
    dir_of(spec, st, rt, &bws, &iopss)
}

/// One direction's fio fields from its counters, runtime (ms) and
/// interval samples (KiB/s, IOPS).
fn dir_of(spec: &JobSpec, st: &DirStats, rt: f64, bws: &[f64], iopss: &[f64]) -> Dir {
    let bw_bytes = crate::results::summary::per_second(st.bytes, rt);
    let (sm, si) = (Summary::of(bws), Summary::of(iopss));
    // A latency not measured (disable_clat, disable_lat, gtod_reduce) has
    // no percentiles in fio's JSON.
    let pct =
        (spec.clat_percentiles && !spec.disable_clat).then_some(spec.percentile_list.as_slice());
    let lat_pct =
        (spec.lat_percentiles && !spec.disable_lat).then_some(spec.percentile_list.as_slice());
    let slat_pct =
        (spec.slat_percentiles && !spec.disable_slat).then_some(spec.percentile_list.as_slice());
    let min_max = |v: &[f64], x: f64| if v.is_empty() { 0 } else { x.round() as u64 };
    Dir {
        io_bytes: st.bytes,
        io_kbytes: st.bytes / 1024,
        bw_bytes: bw_bytes.round() as u64,
        bw: (bw_bytes / 1024.0).round() as u64,
        iops: crate::results::summary::per_second(st.ios, rt),
        // fio counts a direction's runtime only when it moved bytes: a
        // read-only job's write runtime is 0 (and so are cpuio's).
        runtime: if st.bytes == 0 { 0 } else { rt.round() as u64 },
        total_ios: st.ios,
        short_ios: st.short_ios,
        drop_ios: 0,
        slat_ns: lat(&st.slat, slat_pct),
        clat_ns: lat(&st.clat, pct),
        lat_ns: lat(&st.lat, lat_pct),
        prios: prios(spec, st, if spec.lat_percentiles { lat_pct } else { pct }),
        bw_min: min_max(bws, sm.min),
        bw_max: min_max(bws, sm.max),
        // Set once the group is known: share_of_group.
        bw_agg: 0.0,
        bw_mean: sm.mean,
        bw_dev: sm.stddev,
        bw_samples: bws.len() as u64,
        iops_min: min_max(iopss, si.min),
        iops_max: min_max(iopss, si.max),
        iops_mean: si.mean,
        iops_stddev: si.stddev,
        iops_samples: iopss.len() as u64,
        folded: spec.unified_rw == UnifiedRw::Mixed,
    }
}

/// fio's `prios`: per I/O priority, the latency the worker kept for it
/// (total with lat_percentiles, else completion), when the direction's
/// I/Os had more than one priority. The job's own priority (prioclass,
/// prio; the thread's, 0/0, without them) comes first, then the others
/// by value.
fn prios(spec: &JobSpec, st: &DirStats, pct: Option<&[f64]>) -> Option<Vec<Prio>> {
    let seen: Vec<&(u16, Histogram)> = st.prios.iter().filter(|(_, h)| h.count() > 0).collect();
    if seen.len() < 2 {
        return None;
    }
    let own = (
        spec.prioclass
            .unwrap_or(if spec.prio.is_some() { 2 } else { 0 }),
        spec.prio.unwrap_or(0),
    );
    let split = |v: u16| {
        if v == 0 {
            own
        } else {
            ((v >> 13) as u32, (v & 0x7) as u32)
        }
    };
    let mut seen = seen;
    seen.sort_by_key(|(v, _)| (*v != 0, *v));
    Some(
        seen.into_iter()
            .map(|(v, h)| {
                let (prioclass, prio) = split(*v);
                let l = lat(h, pct);
                Prio {
                    prioclass,
                    prio,
                    clat_ns: (!spec.lat_percentiles).then(|| l.clone()),
                    lat_ns: spec.lat_percentiles.then_some(l),
                }
            })
            .collect(),
    )
}

/// fio's iodepth maps: percent per bucket, a bucket that holds anything
/// at least 0.1 % (as fio's JSON and text show it).
fn pct_map(keys: &[&str], counts: &[u64]) -> OrderedMap<f64> {
    let total: u64 = counts.iter().sum();
    keys.iter()
        .zip(counts)
        .map(|(k, &c)| {
            let v = if total > 0 {
                (100.0 * c as f64 / total as f64).max(0.1 * c.min(1) as f64)
            } else {
                0.0
            };
            (k.to_string(), v)
        })
        .collect()
}

/// fio's latency_ns/us/ms maps: percent of I/Os whose total latency falls
/// in each bucket (a bucket holds values up to its key, above the previous).
fn latency_buckets(h: &Histogram) -> [OrderedMap<f64>; 3] {
    let ns_keys = [2u64, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let ms_keys = [2u64, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];
    let mut ns = [0u64; 10];
    let mut us = [0u64; 10];
    let mut ms = [0u64; 12];
    for (v, c) in h.bins() {
        if v < 1000 {
            let i = ns_keys.iter().position(|&k| v <= k).unwrap_or(9);
            ns[i] += c;
        } else if v < 1_000_000 {
            let u = v / 1000;
            let i = ns_keys.iter().position(|&k| u <= k).unwrap_or(9);
            us[i] += c;
        } else {
            let m = v / 1_000_000;
            let i = ms_keys.iter().position(|&k| m <= k).unwrap_or(11);
            ms[i] += c;
        }
    }
    let total = h.count().max(1) as f64;
    let mk = |keys: &[&str], v: &[u64]| -> OrderedMap<f64> {
        keys.iter()
            .zip(v)
            // fio shows a bucket that holds any I/O as at least 0.01 %.
            .map(|(k, &c)| {
                (
                    k.to_string(),
                    (100.0 * c as f64 / total).max(0.01 * c.min(1) as f64),
                )
            })
            .collect()
    };
    let k10 = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let k12 = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    [mk(&k10, &ns), mk(&k10, &us), mk(&k12, &ms)]
}

/// Which directions a job shows: verify_only turns a write job into a
/// read-back, so what ran is shown; a verify read-back shows its reads.
fn shows(r: &RunResult, spec: &JobSpec, s: &JobSummary) -> [bool; 2] {
    [
        spec.rw.reads() || s.dirs[0].ios > 0 || verify_io(r, s).reads.ios > 0,
        spec.rw.issues_writes() && !spec.verify_only || s.dirs[1].ios > 0,
    ]
}

/// The verify read-back's reads of a unit: its clone's, or those of every
/// clone of its jobs (the longest read-back is the runtime, as fio's
/// threads read back side by side).
fn verify_io(r: &RunResult, s: &JobSummary) -> VerifyIo {
    let mut v = VerifyIo::default();
    for &i in &s.jobs {
        for (c, io) in r.jobs[i].verify_io.iter().enumerate() {
            if s.clone_of.is_some_and(|k| k as usize != c) {
                continue;
            }
            v.reads.merge(&io.reads);
            v.runtime_ns = v.runtime_ns.max(io.runtime_ns);
        }
    }
    v
}

/// The bad blocks of a unit's jobs.
fn verify_bad(r: &RunResult, s: &JobSummary) -> u64 {
    s.jobs
        .iter()
        .filter_map(|&i| r.jobs[i].verify.as_ref())
        .map(|v| v.bad)
        .sum()
}

fn job(r: &RunResult, s: &JobSummary) -> Job {
    let spec = spec(r, s);
    let mut opts = OrderedMap::new();
    opts.insert("name", spec.name.clone());
    for (k, v) in &spec.given {
        opts.insert(k.clone(), v.clone());
    }
    let rt = s.runtime_ms.max(1e-9);
    let [lns, lus, lms] = latency_buckets(&all_latencies(r, s, spec));
    let show = shows(r, spec, s);
    let batches = ["0", "4", "8", "16", "32", "64", ">=64"];
    Job {
        jobname: spec.name.clone(),
        groupid: s.groupid,
        // The start of its run phase: jobs of several reporting groups
        // that run at once (new_group without stonewall) share it.
        job_start: r
            .phases
            .iter()
            .find(|g| g.phase == s.phase)
            // A startdelay range: its low end (each clone draws its own).
            .map(|g| g.start_ms + spec.startdelay_us.0 / 1000),
        error: job_error(r, s),
        // fio writes these two only for a job with continue_on_error; its
        // count has the errors ignore_error lists too.
        total_err: spec
            .continue_on_error
            .then(|| s.dirs[0].errors + s.dirs[1].errors + s.trim.errors + s.ignored_errors),
        first_error: spec.continue_on_error.then(|| {
            s.first_error
                .as_ref()
                .map_or(s.first_ignored, |(e, _)| e.errno)
        }),
        eta: 0,
        elapsed: ((s.wall_ns as f64) / 1e9).round() as u64,
        job_options: opts,
        read: dir(r, s, show[0].then_some(0)),
        write: dir(r, s, show[1].then_some(1)),
        trim: dir(r, s, (s.trim.ios > 0 || spec.rw.trims()).then_some(2)),
        mixed: (spec.unified_rw != UnifiedRw::None).then(|| Dir {
            folded: false,
            ..mixed(r, s)
        }),
        sync: Sync {
            folded: spec.unified_rw == UnifiedRw::Mixed,
            total_ios: s.sync.ios,
            // fio's sync latency has percentiles once there were syncs.
            lat_ns: lat(
                &s.sync.lat,
                (s.sync.ios > 0 && spec.clat_percentiles)
                    .then_some(spec.percentile_list.as_slice()),
            ),
        },
        job_runtime: s.runtime_ms.round() as u64,
        usr_cpu: 100.0 * s.thread_cpu.user_us as f64 / 1000.0 / rt,
        sys_cpu: 100.0 * s.thread_cpu.sys_us as f64 / 1000.0 / rt,
        ctx: s.thread_cpu.ctx_switches(),
        majf: s.thread_cpu.majflt,
        minf: s.thread_cpu.minflt,
        iodepth_level: pct_map(
            &["1", "2", "4", "8", "16", "32", ">=64"],
            &s.queue.depth_level,
        ),
        iodepth_submit: pct_map(&batches, &s.queue.submit_batches),
        iodepth_complete: pct_map(&batches, &s.queue.complete_batches),
        latency_ns: lns,
        latency_us: lus,
        latency_ms: lms,
        latency_depth: latency_depth(r, s, spec),
        latency_target: spec.latency_target_ns,
        latency_target_ns: Some(spec.latency_target_ns),
        latency_percentile: spec.latency_percentile,
        latency_window: spec.latency_window_us,
        latency_window_us: Some(spec.latency_window_us),
        desc: spec.description.clone(),
        other: {
            let mut o = steadystate(r, s, spec);
            if let Some(v) = iodepth_steps(r, s, spec) {
                o.insert("iodepth_steps", v);
            }
            o
        },
    }
}

/// Every latency of the job, for fio's `latency_ns/us/ms` maps. fio fills
/// these on the completion path: disable_clat leaves them at zero; without
/// the total latency (disable_lat) they come from clat.
fn all_latencies(r: &RunResult, s: &JobSummary, spec: &JobSpec) -> Histogram {
    let mut all_lat = Histogram::new();
    if !spec.disable_clat {
        let v = verify_io(r, s);
        for d in s.dirs.iter().chain([&v.reads]) {
            all_lat.merge(if spec.disable_lat { &d.clat } else { &d.lat });
        }
    }
    all_lat
}

/// fio's `error`: the first error's errno, also when the job went on after
/// it, or ignored it; a block that read back wrong is EILSEQ.
fn job_error(r: &RunResult, s: &JobSummary) -> i32 {
    match s
        .first_error
        .as_ref()
        .map_or(s.first_ignored, |(e, _)| e.errno)
    {
        0 if verify_bad(r, s) > 0 => libc::EILSEQ,
        e => e,
    }
}

/// dioscope's `iodepth_steps` under the job (iodepth_mode=stepped): the
/// steps of the job's last trial, its clones merged (or the one clone the
/// entry is).
fn iodepth_steps(r: &RunResult, s: &JobSummary, spec: &JobSpec) -> Option<serde_json::Value> {
    let mode = spec.iodepth_mode.as_ref()?;
    let clones: Vec<&crate::runner::stepped::StepReport> = s
        .jobs
        .iter()
        .filter_map(|&i| r.jobs[i].pace.last())
        .flat_map(|t| t.clones.iter().enumerate())
        .filter(|(c, _)| s.clone_of.is_none_or(|x| x as usize == *c))
        .filter_map(|(_, c)| c.steps.as_ref())
        .collect();
    Some(crate::runner::stepped::to_json(mode, &clones))
}

/// The depth `latency_target` settled on in the job's last trial (the
/// shallowest over its clones), else the job's iodepth, as fio reports it.
fn latency_depth(r: &RunResult, s: &JobSummary, spec: &JobSpec) -> u32 {
    let found = r.jobs[s.jobs[0]]
        .pace
        .last()
        .and_then(|t| t.clones.iter().filter_map(|c| c.latency_depth).min());
    match found {
        Some(d) if spec.latency_target_ns > 0 => d,
        _ => spec.iodepth,
    }
}

/// fio's `steadystate` object when the job judged steady state: its last
/// trial's window (its first clone's, or the group's with group_reporting).
fn steadystate(r: &RunResult, s: &JobSummary, spec: &JobSpec) -> OrderedMap<serde_json::Value> {
    let mut out = OrderedMap::new();
    if spec.ss_dur_us == 0 {
        return out;
    }
    let report = r.jobs[s.jobs[0]]
        .pace
        .last()
        .and_then(|t| t.clones.iter().find_map(|c| c.steady.as_ref()));
    let det = match report {
        Some(rep) => rep.detector.clone(),
        None => crate::runner::steadystate::Detector::new(
            spec.steadystate,
            (spec.ss_dur_us / 1_000_000) as usize,
        ),
    };
    out.insert("steadystate", det.to_fio_json());
    out
}

fn io_error(e: &IoErrorInfo, path: &str) -> IoError {
    IoError {
        path: path.to_string(),
        offset: e.offset,
        length: e.len,
        direction: if e.write { "write" } else { "read" }.into(),
        errno: e.errno,
        error: std::io::Error::from_raw_os_error(e.errno).to_string(),
    }
}

/// The block sizes as given: `4.00 KiB`, `4.00 KiB-64.0 KiB`,
/// `4.00 KiB/60:64.0 KiB/40`, and `R,W` when reads and writes differ.
fn bs_text(spec: &JobSpec) -> String {
    use crate::job::BlockSizes;
    let one = |b: &BlockSizes| match b {
        BlockSizes::Fixed(x) => human_bytes(*x),
        BlockSizes::Range(lo, hi) => format!("{}-{}", human_bytes(*lo), human_bytes(*hi)),
        BlockSizes::Split(v) => v
            .iter()
            .map(|(sz, pct)| format!("{}/{pct}", human_bytes(*sz)))
            .collect::<Vec<_>>()
            .join(":"),
    };
    let (r, w) = (one(&spec.bs[0]), one(&spec.bs[1]));
    if r == w || !spec.rw.writes() {
        r
    } else if !spec.rw.reads() {
        w
    } else {
        format!("{r},{w}")
    }
}

/// dioscope's measurements for one job.
fn dioscope_job(r: &RunResult, s: &JobSummary) -> DioscopeJob {
    let spec = spec(r, s);
    let show = shows(r, spec, s);
    DioscopeJob {
        jobname: spec.name.clone(),
        groupid: s.groupid,
        ioengine: spec.ioengine.as_str().into(),
        iodepth: spec.iodepth,
        direct: spec.direct,
        rw: spec.rw.as_str().into(),
        bs: bs_text(spec),
        // One clone's own entry counts that clone.
        numjobs: if s.clone_of.is_some() {
            1
        } else {
            s.jobs
                .iter()
                .map(|&i| r.jobs[i].resolved.spec.numjobs)
                .sum()
        },
        directions: ["read", "write", "trim"]
            .iter()
            .zip([show[0], show[1], spec.rw.trims() || s.trim.ios > 0])
            .filter(|(_, on)| *on)
            .map(|(d, _)| d.to_string())
            .collect(),
        trials: s.trials.clone(),
        series: s
            .ticks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                TrialSeries::from_ticks(i as u32 + 1, INTERVAL_NS, spec.ramp_time_us * 1000, t)
            })
            .collect(),
        summary: s.stats.clone(),
        cpu: Cpu {
            process_usr_us: s.process_cpu.user_us,
            process_sys_us: s.process_cpu.sys_us,
            process_us_per_io: s.cpu_us_per_io(),
            system_busy_us: s.system_busy_us,
            system_us_per_io: s.sys_cpu_us_per_io(),
            system_percent: s.system_pct,
            ctx_per_io: s.ctx_per_io(),
            workers_thread_us: s.thread_cpu.cpu_us(),
            busiest_worker_cpu_fraction: s.max_worker_cpu,
            peak_rss_kb: s.process_cpu.maxrss_kb,
        },
        errors: s.dirs[0].errors + s.dirs[1].errors,
        errors_by_direction: [s.dirs[0].errors, s.dirs[1].errors],
        first_error: s.first_error.as_ref().map(|(e, p)| io_error(e, p)),
    }
}

/// The run's status: version, interruption, errors, targets, notes, verify.
fn status(r: &RunResult) -> Dioscope {
    // One entry per job name (a JSON object's keys are unique): a later
    // job of the same name replaces the earlier one's report.
    let mut verify = OrderedMap::new();
    for j in &r.jobs {
        if let Some(v) = &j.verify {
            verify.set(&j.resolved.spec.name, v.clone());
        }
    }
    Dioscope {
        schema: SCHEMA,
        version: env!("CARGO_PKG_VERSION").into(),
        interrupted: r.interrupted,
        signal: r.interrupted.then_some(r.signal),
        io_errors: r.io_errors(),
        // Partial: a signal or an I/O error ended the run before its end.
        partial: r.interrupted || r.stopped_by_error(),
        stopped_by_error: r.stopped_by_error(),
        first_error: r.first_error().map(|(job, e, path)| RunError {
            job: job.to_string(),
            error: io_error(e, path),
            hint: crate::runner::hint::io_error_hint(e, path, r),
        }),
        setup_error: r
            .setup_error
            .as_ref()
            .map(|e| crate::results::model::SetupErrorDoc {
                group: e.group,
                job: e.job.clone(),
                clone: e.clone,
                trial: e.trial + 1,
                errno: e.errno,
                message: e.msg.clone(),
            }),
        groups_completed: r.completed_groups.clone(),
        targets: r.targets.clone(),
        notes: r.notes.clone(),
        verify: (!verify.is_empty()).then_some(verify),
        ..Default::default()
    }
}
