//! Preflight: everything about a plan that can be checked before any target
//! is opened or any byte written, against the limits of this machine:
//! iodepth against what io_uring and libaio accept, worker threads against
//! the thread limits, descriptors against `ulimit -n`, I/O buffer memory
//! against what is available, CPU lists against the CPUs online, and
//! offset/size arithmetic against 2^64. Each refusal names the job, the
//! value, the limit and where the limit comes from.

use super::SetupError;
use crate::engines::caps;
use crate::job::units::SizeOrPct;
use crate::job::{JobSpec, Plan};

/// Worker threads one group may start, whatever the system allows: beyond
/// this a run measures the scheduler, not the storage.
const MAX_WORKERS_PER_GROUP: u64 = 4096;

fn err(j: &JobSpec, msg: String) -> SetupError {
    SetupError::Job {
        job: j.name.clone(),
        msg,
    }
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The soft limit of one `/proc/self/limits` line ("Max open files").
fn soft_limit(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    let v = line[name.len()..].split_whitespace().next()?;
    v.parse().ok()
}

/// `MemAvailable` in bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Parse a kernel CPU list ("0-3,8").
fn parse_cpu_set(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    out.extend(a..=b.min(a + 65536));
                }
            }
            None => out.extend(part.parse::<usize>().ok()),
        }
    }
    out
}

/// Check `plan` against this machine. The limits are per run phase (the
/// jobs that run at once, runner/plan.rs).
pub fn check(plan: &Plan) -> Result<(), SetupError> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok();
    let online_set = online.as_deref().map(parse_cpu_set);
    let placed = super::plan::place(&plan.jobs);
    let mut groups: Vec<Vec<&JobSpec>> =
        vec![Vec::new(); super::plan::phase_count(&placed) as usize];
    for (j, p) in plan.jobs.iter().zip(&placed) {
        groups[p.phase as usize].push(j);
        check_job(j, online.as_deref(), online_set.as_deref())?;
    }
    let limits = MachineLimits::read();
    let paths = super::target_paths(plan);
    refuse_control_characters(plan, &paths)?;
    let targets = paths.len() as u64;
    for (g, jobs) in groups.iter().enumerate() {
        check_phase(g, jobs, targets, &limits)?;
    }
    Ok(())
}

/// This machine's limits that bound one run phase (`None` where unreadable).
struct MachineLimits {
    threads_max: Option<u64>,
    nproc: Option<u64>,
    nofile: Option<u64>,
    aio_free: Option<u64>,
    mem: Option<u64>,
}

impl MachineLimits {
    /// Read the limits from /proc.
    fn read() -> MachineLimits {
        MachineLimits {
            threads_max: read_u64("/proc/sys/kernel/threads-max"),
            nproc: soft_limit("Max processes"),
            nofile: soft_limit("Max open files"),
            aio_free: read_u64("/proc/sys/fs/aio-max-nr")
                .map(|max| max.saturating_sub(read_u64("/proc/sys/fs/aio-nr").unwrap_or(0))),
            mem: mem_available(),
        }
    }
}

/// Refuse a target path with a control character in it.
fn refuse_control_characters(plan: &Plan, paths: &[std::path::PathBuf]) -> Result<(), SetupError> {
    // A newline or escape in a path would let a file name write lines of its
    // own into the report (and the terminal): refuse, showing it escaped.
    if let Some(p) = paths
        .iter()
        .find(|p| p.to_string_lossy().chars().any(|c| c.is_control()))
    {
        let j = plan.jobs.first();
        return Err(SetupError::Job {
            job: j.map(|j| j.name.clone()).unwrap_or_default(),
            msg: format!(
                "the target path {:?} contains a control character (newline, tab, escape …),                  which would garble the report; rename the file or use a symlink without one",
                p.to_string_lossy()
            ),
        });
    }
    Ok(())
}

/// Check run phase `g` (its `jobs`, over `targets` targets) against `limits`.
fn check_phase(
    g: usize,
    jobs: &[&JobSpec],
    targets: u64,
    limits: &MachineLimits,
) -> Result<(), SetupError> {
    let Some(first) = jobs.first() else {
        return Ok(());
    };
    let workers: u64 = jobs.iter().map(|j| u64::from(j.numjobs)).sum();
    check_workers(g, first, workers, limits)?;
    check_descriptors(g, first, workers, targets, limits.nofile)?;
    check_aio_events(g, jobs, limits.aio_free)?;
    check_buffer_memory(g, jobs, limits.mem)
}

/// Refuse a phase starting more worker threads than the lowest thread limit.
fn check_workers(
    g: usize,
    first: &JobSpec,
    workers: u64,
    limits: &MachineLimits,
) -> Result<(), SetupError> {
    let (limit, why) = [
        (
            Some(MAX_WORKERS_PER_GROUP),
            "dioscope's limit per run phase",
        ),
        (
            limits.threads_max.map(|t| t / 2),
            "half of /proc/sys/kernel/threads-max",
        ),
        (
            limits.nproc.map(|n| n / 2),
            "half of `ulimit -u` (max user processes)",
        ),
    ]
    .into_iter()
    .filter_map(|(l, w)| l.map(|l| (l, w)))
    .min()
    .unwrap_or((MAX_WORKERS_PER_GROUP, "dioscope's limit per run phase"));
    if workers > limit {
        return Err(err(
            first,
            format!(
                "run phase {g} (the jobs that run at once) would start {workers} worker threads (numjobs summed over its \
                 jobs); the limit here is {limit} ({why}); lower numjobs"
            ),
        ));
    }
    Ok(())
}

/// Refuse a phase needing more open files than `ulimit -n`.
fn check_descriptors(
    g: usize,
    first: &JobSpec,
    workers: u64,
    targets: u64,
    nofile: Option<u64>,
) -> Result<(), SetupError> {
    // Each worker: its engine (an io_uring or an aio context), a
    // descriptor per file at most; plus the shared targets and stdio.
    let fds = targets + workers * 2 + 64;
    if let Some(n) = nofile.filter(|&n| fds > n) {
        return Err(err(
            first,
            format!(
                "run phase {g} (the jobs that run at once) needs about {fds} open files ({workers} workers, {targets} \
                 targets); the limit here is {n} (`ulimit -n`); raise it or lower numjobs"
            ),
        ));
    }
    Ok(())
}

/// Refuse a phase asking for more libaio events than the kernel has left.
fn check_aio_events(g: usize, jobs: &[&JobSpec], aio_free: Option<u64>) -> Result<(), SetupError> {
    let aio_events: u64 = jobs
        .iter()
        .filter(|j| caps(j.ioengine).aio_events)
        .map(|j| u64::from(j.iodepth.max(1)) * u64::from(j.numjobs))
        .sum();
    if let Some(free) = aio_free.filter(|&f| aio_events > f) {
        return Err(err(
            jobs[0],
            format!(
                "run phase {g} (the jobs that run at once) asks the kernel for {aio_events} libaio events (iodepth × \
                 numjobs); /proc/sys/fs/aio-max-nr leaves {free}; lower iodepth or numjobs, \
                 or raise fs.aio-max-nr"
            ),
        ));
    }
    Ok(())
}

/// Refuse a phase whose I/O buffers would take most of the available memory.
fn check_buffer_memory(g: usize, jobs: &[&JobSpec], mem: Option<u64>) -> Result<(), SetupError> {
    let buffers: u64 = jobs
        .iter()
        .map(|j| {
            let depth = if caps(j.ioengine).sync {
                1
            } else {
                u64::from(j.iodepth.max(1))
            };
            depth
                .saturating_mul(j.max_bs())
                .saturating_mul(u64::from(j.numjobs))
        })
        .fold(0u64, u64::saturating_add);
    if let Some(m) = mem.filter(|&m| buffers > m / 10 * 9) {
        return Err(err(
            jobs[0],
            format!(
                "run phase {g} (the jobs that run at once) needs {buffers} bytes of I/O buffers (iodepth × bs × numjobs), \
                 more than the {m} bytes available (MemAvailable in /proc/meminfo); lower \
                 iodepth, bs or numjobs"
            ),
        ));
    }
    Ok(())
}

fn check_job(
    j: &JobSpec,
    online: Option<&str>,
    online_set: Option<&[usize]>,
) -> Result<(), SetupError> {
    crate::job::options::pacing::check(j).map_err(|m| err(j, m))?;
    if let Some((max, why)) = caps(j.ioengine).max_depth {
        if u64::from(j.iodepth) > max {
            return Err(err(
                j,
                format!(
                    "iodepth={} is more than {} accepts ({max} entries, {why}); use \
                     iodepth={max} or less",
                    j.iodepth,
                    j.ioengine.as_str()
                ),
            ));
        }
    }
    if let (Some(cpus), Some(set), Some(text)) = (&j.cpus_allowed, online_set, online) {
        if let Some(c) = cpus.iter().find(|c| !set.contains(c)) {
            return Err(err(
                j,
                format!(
                    "cpus_allowed names CPU {c}, which is not online here (online: {}); use \
                     CPUs from that list",
                    text.trim()
                ),
            ));
        }
    }
    if !caps(j.ioengine).real_io {
        return Ok(());
    }
    // The furthest byte a clone may touch: offset + offset_increment ×
    // (numjobs - 1) + size must fit in 64 bits.
    let off = match j.offset {
        SizeOrPct::Bytes(o) => o,
        SizeOrPct::Percent(_) => 0,
    };
    let size = match (j.size, j.filesize) {
        (Some(SizeOrPct::Bytes(b)), _) => b,
        (_, Some((_, hi))) => hi,
        _ => 0,
    };
    let end = j
        .offset_increment
        .checked_mul(u64::from(j.numjobs.saturating_sub(1)))
        .and_then(|x| x.checked_add(off))
        .and_then(|x| x.checked_add(size));
    if end.is_none() {
        return Err(err(
            j,
            format!(
                "offset={off} + offset_increment={} × (numjobs-1 = {}) + size={size} is beyond \
                 2^64 bytes; lower offset, offset_increment, numjobs or size",
                j.offset_increment,
                j.numjobs.saturating_sub(1)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_sets() {
        assert_eq!(parse_cpu_set("0-3,8\n"), [0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_set("0"), [0]);
        assert!(parse_cpu_set("").is_empty());
    }

    #[test]
    fn absurd_plans_are_refused_with_the_limit() {
        let plan = |args: &[&str]| {
            let mut a = vec!["--name=x", "--filename=/nonexistent/f", "--size=1m"];
            a.extend_from_slice(args);
            crate::job::parse_args(&a).unwrap()
        };
        let e = check(&plan(&["--ioengine=io_uring", "--iodepth=40000"])).unwrap_err();
        assert!(e.to_string().contains("32768"), "{e}");
        let e = check(&plan(&["--numjobs=100000"])).unwrap_err();
        assert!(e.to_string().contains("worker threads"), "{e}");
        let e = check(&plan(&[
            "--offset_increment=4611686018427387904",
            "--numjobs=8",
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("2^64"), "{e}");
        assert!(check(&plan(&["--ioengine=io_uring", "--iodepth=32"])).is_ok());
    }
}
