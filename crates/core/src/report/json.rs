//! fio-compatible JSON (`json`, and `json+` with latency bins). Programs
//! written for fio's JSON read it unchanged; dioscope's own measurements sit
//! under a top-level `"dioscope"` key.

use crate::results::{JobSummary, TrialStats};
use crate::runner::{DirStats, RunResult};
use crate::stats::Histogram;
use serde_json::{json, Map, Value};

fn lat_obj(h: &Histogram, percentiles: Option<&[f64]>, bins: bool) -> Value {
    let mut o = Map::new();
    o.insert("min".into(), json!(h.min()));
    o.insert("max".into(), json!(h.max()));
    o.insert("mean".into(), json!(h.mean()));
    o.insert("stddev".into(), json!(h.stddev()));
    o.insert("N".into(), json!(h.count()));
    if let Some(ps) = percentiles {
        let mut m = Map::new();
        for &p in ps {
            m.insert(format!("{p:.6}"), json!(h.percentile(p)));
        }
        o.insert("percentile".into(), Value::Object(m));
    }
    // fio writes "bins" only for latencies that have samples; consumers
    // such as fio_jsonplus_clat2csv rely on that.
    if bins && h.count() > 0 {
        let mut m = Map::new();
        for (v, c) in h.bins() {
            m.insert(v.to_string(), json!(c));
        }
        o.insert("bins".into(), Value::Object(m));
    }
    Value::Object(o)
}

fn dir_obj(r: &RunResult, s: &JobSummary, d: Option<usize>, plus: bool) -> Value {
    let empty = DirStats::default();
    let st = d.map(|d| &s.dirs[d]).unwrap_or(&empty);
    let spec = &r.jobs[s.jobs[0]].resolved.spec;
    let rt = s.runtime_ms;
    let (bw_bytes, iops) = if rt > 0.0 {
        (st.bytes as f64 * 1000.0 / rt, st.ios as f64 * 1000.0 / rt)
    } else {
        (0.0, 0.0)
    };
    // Per-interval samples (KiB/s and IOPS per second) of the last trial.
    let (mut bws, mut iopss) = (Vec::new(), Vec::new());
    if let Some(d) = d {
        let mut prev = (0u64, 0u64, 0u64);
        for t in &s.ticks {
            let dt = (t.t_ns - prev.2).max(1) as f64 / 1e9;
            bws.push((t.bytes[d] - prev.0) as f64 / 1024.0 / dt);
            iopss.push((t.ios[d] - prev.1) as f64 / dt);
            prev = (t.bytes[d], t.ios[d], t.t_ns);
        }
    }
    let sm = crate::stats::Summary::of(&bws);
    let si = crate::stats::Summary::of(&iopss);
    let pct = spec
        .clat_percentiles
        .then_some(spec.percentile_list.as_slice());
    let lat_pct = spec
        .lat_percentiles
        .then_some(spec.percentile_list.as_slice());
    let total_bw: f64 = s.dirs.iter().map(|x| x.bytes as f64).sum();
    json!({
        "io_bytes": st.bytes,
        "io_kbytes": st.bytes / 1024,
        "bw_bytes": bw_bytes.round() as u64,
        "bw": (bw_bytes / 1024.0).round() as u64,
        "iops": iops,
        "runtime": rt.round() as u64,
        "total_ios": st.ios,
        "short_ios": st.short_ios,
        "drop_ios": 0,
        "slat_ns": lat_obj(&st.slat, None, plus),
        "clat_ns": lat_obj(&st.clat, pct, plus),
        "lat_ns": lat_obj(&st.lat, lat_pct, plus),
        "bw_min": if bws.is_empty() { 0 } else { sm.min.round() as u64 },
        "bw_max": if bws.is_empty() { 0 } else { sm.max.round() as u64 },
        "bw_agg": if total_bw > 0.0 { 100.0 * st.bytes as f64 / total_bw } else { 0.0 },
        "bw_mean": sm.mean,
        "bw_dev": sm.stddev,
        "bw_samples": bws.len(),
        "iops_min": if iopss.is_empty() { 0 } else { si.min.round() as u64 },
        "iops_max": if iopss.is_empty() { 0 } else { si.max.round() as u64 },
        "iops_mean": si.mean,
        "iops_stddev": si.stddev,
        "iops_samples": iopss.len(),
    })
}

fn pct_map(keys: &[&str], counts: &[u64]) -> Value {
    let total: u64 = counts.iter().sum();
    let mut m = Map::new();
    for (k, &c) in keys.iter().zip(counts) {
        m.insert(
            (*k).into(),
            json!(if total > 0 {
                100.0 * c as f64 / total as f64
            } else {
                0.0
            }),
        );
    }
    Value::Object(m)
}

/// fio's latency_ns/us/ms maps: percent of I/Os whose total latency falls
/// in each bucket (a bucket holds values up to its key, above the previous).
fn latency_buckets(h: &Histogram) -> (Value, Value, Value) {
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
    let mk = |keys: &[&str], v: &[u64]| {
        let mut m = Map::new();
        for (k, &c) in keys.iter().zip(v) {
            m.insert((*k).into(), json!(100.0 * c as f64 / total));
        }
        Value::Object(m)
    };
    let k10 = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let k12 = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    (mk(&k10, &ns), mk(&k10, &us), mk(&k12, &ms))
}

fn job_obj(r: &RunResult, s: &JobSummary, plus: bool) -> Value {
    let spec = &r.jobs[s.jobs[0]].resolved.spec;
    let mut opts = Map::new();
    opts.insert("name".into(), json!(spec.name));
    for (k, v) in &spec.given {
        opts.insert(k.clone(), json!(v));
    }
    let rt = s.runtime_ms.max(1e-9);
    let mut all_lat = s.dirs[0].lat.clone();
    all_lat.merge(&s.dirs[1].lat);
    let (lns, lus, lms) = latency_buckets(&all_lat);
    let sync = json!({
        "total_ios": s.sync.ios,
        "lat_ns": lat_obj(&s.sync.lat, None, plus),
    });
    let error = s.first_error.as_ref().map(|(e, _)| e.errno).unwrap_or(0);
    json!({
        "jobname": spec.name,
        "groupid": s.group,
        "error": error,
        "eta": 0,
        "elapsed": ((s.wall_ns as f64) / 1e9).round() as u64,
        "job options": Value::Object(opts),
        "read": dir_obj(r, s, (spec.rw.reads() || s.dirs[0].ios > 0).then_some(0), plus),
        "write": dir_obj(r, s, (spec.rw.writes() && !spec.verify_only || s.dirs[1].ios > 0).then_some(1), plus),
        "trim": dir_obj(r, s, None, plus),
        "sync": sync,
        "job_runtime": s.runtime_ms.round() as u64,
        "usr_cpu": 100.0 * s.thread_cpu.user_us as f64 / 1000.0 / rt,
        "sys_cpu": 100.0 * s.thread_cpu.sys_us as f64 / 1000.0 / rt,
        "ctx": s.thread_cpu.vol_ctx + s.thread_cpu.invol_ctx,
        "majf": s.thread_cpu.majflt,
        "minf": s.thread_cpu.minflt,
        "iodepth_level": pct_map(&["1", "2", "4", "8", "16", "32", ">=64"], &s.queue.depth_level),
        "iodepth_submit": pct_map(&["0", "4", "8", "16", "32", "64", ">=64"], &s.queue.submit_batches),
        "iodepth_complete": pct_map(&["0", "4", "8", "16", "32", "64", ">=64"], &s.queue.complete_batches),
        "latency_ns": lns,
        "latency_us": lus,
        "latency_ms": lms,
        "latency_depth": spec.iodepth,
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    })
}

fn stats_obj(t: &TrialStats) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// dioscope's own measurements for one job.
fn extra_job(r: &RunResult, s: &JobSummary) -> Value {
    let spec = &r.jobs[s.jobs[0]].resolved.spec;
    let first_error = s.first_error.as_ref().map(|(e, path)| {
        json!({
            "path": path, "offset": e.offset, "length": e.len,
            "direction": if e.write { "write" } else { "read" },
            "errno": e.errno, "error": std::io::Error::from_raw_os_error(e.errno).to_string(),
        })
    });
    json!({
        "jobname": spec.name,
        "groupid": s.group,
        "ioengine": spec.ioengine.as_str(),
        "iodepth": spec.iodepth,
        "direct": spec.direct,
        "trials": s.trials,
        "summary": stats_obj(&s.stats),
        "cpu": {
            "process_usr_us": s.process_cpu.user_us,
            "process_sys_us": s.process_cpu.sys_us,
            "process_us_per_io": s.cpu_us_per_io(),
            "system_busy_us": s.system_busy_us,
            "system_us_per_io": s.sys_cpu_us_per_io(),
            "system_percent": s.system_pct,
            "ctx_per_io": (s.process_cpu.vol_ctx + s.process_cpu.invol_ctx) as f64 / s.total_ios().max(1) as f64,
            "workers_thread_us": s.thread_cpu.user_us + s.thread_cpu.sys_us,
            "busiest_worker_cpu_fraction": s.max_worker_cpu,
            "peak_rss_kb": s.process_cpu.maxrss_kb,
        },
        "errors": s.dirs[0].errors + s.dirs[1].errors,
        "first_error": first_error,
    })
}

/// The whole result. `extra` is merged into the `"dioscope"` object
/// (environment, findings, device accounting).
pub fn render(r: &RunResult, plus: bool, extra: Map<String, Value>) -> String {
    render_with_disks(r, plus, extra, Vec::new())
}

/// [`render`] with fio's top-level `disk_util` entries (one object per
/// device: name, read_ios, write_ios, read_merges, write_merges,
/// read_sectors, write_sectors, read_ticks, write_ticks, in_queue, util).
pub fn render_with_disks(
    r: &RunResult,
    plus: bool,
    extra: Map<String, Value>,
    disk_util: Vec<Value>,
) -> String {
    let sums = r.summarize();
    let jobs: Vec<Value> = sums.iter().map(|s| job_obj(r, s, plus)).collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut d = Map::new();
    d.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
    d.insert("interrupted".into(), json!(r.interrupted));
    if r.interrupted {
        d.insert("signal".into(), json!(r.signal));
    }
    d.insert("io_errors".into(), json!(r.io_errors()));
    // Partial: a signal or an I/O error ended the run before its end.
    d.insert(
        "partial".into(),
        json!(r.interrupted || r.stopped_by_error()),
    );
    d.insert("stopped_by_error".into(), json!(r.stopped_by_error()));
    if let Some((job, e, path)) = r.first_error() {
        d.insert(
            "first_error".into(),
            json!({
                "job": job, "path": path, "offset": e.offset, "length": e.len,
                "direction": if e.write { "write" } else { "read" },
                "errno": e.errno,
                "error": std::io::Error::from_raw_os_error(e.errno).to_string(),
                "hint": crate::runner::hint::io_error_hint(e, path, r),
            }),
        );
    }
    d.insert(
        "targets".into(),
        serde_json::to_value(&r.targets).unwrap_or(Value::Null),
    );
    d.insert("notes".into(), json!(r.notes));
    d.insert(
        "jobs".into(),
        Value::Array(sums.iter().map(|s| extra_job(r, s)).collect()),
    );
    let verify: Map<String, Value> = r
        .jobs
        .iter()
        .filter_map(|j| {
            j.verify.as_ref().map(|v| {
                (
                    j.resolved.spec.name.clone(),
                    serde_json::to_value(v).unwrap_or(Value::Null),
                )
            })
        })
        .collect();
    if !verify.is_empty() {
        d.insert("verify".into(), Value::Object(verify));
    }
    for (k, v) in extra {
        d.insert(k, v);
    }
    let out = json!({
        "fio version": format!("dioscope-{}", env!("CARGO_PKG_VERSION")),
        "timestamp": now.as_secs(),
        "timestamp_ms": now.as_millis() as u64,
        "time": crate::results::ctime(now.as_secs() as i64),
        "jobs": jobs,
        "disk_util": Value::Array(disk_util),
        "dioscope": Value::Object(d),
    });
    let mut s = serde_json::to_string_pretty(&out).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
