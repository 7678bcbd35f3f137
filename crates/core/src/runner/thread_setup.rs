//! How a worker's thread runs: the set-up checks that need the system
//! (NUMA nodes, saved verify states), the thread's CPU placement
//! (cpus_allowed_policy, numa_cpu_nodes, gtod_cpu), its priority (prio,
//! prioclass, nice), its memory (numa_mem_policy, lockmem, mem/iomem
//! buffers) and exec_prerun/postrun.

use super::buffers::Fill;
use super::paths::job_err;
use super::result::SetupError;
use super::verifying::load_state;
use crate::engines::EngineSetupError;
use crate::job::spec::{CpuPolicy, MemKind};
use crate::job::{JobSpec, Plan};
use dioscope_sys::buf::{AlignedBuf, BufKind, BufOptions};
use dioscope_sys::queue::SlotArena;
use dioscope_sys::sched;
use std::path::PathBuf;

/// Set-up checks that need the system: NUMA nodes, saved verify states.
pub(super) fn preflight(plan: &Plan) -> Result<(), SetupError> {
    for j in &plan.jobs {
        let wanted = j.numa_cpu_nodes.iter().flatten().chain(
            j.numa_mem_policy
                .iter()
                .flat_map(|m| m.nodes.iter().flatten()),
        );
        let online = online_nodes();
        for &n in wanted {
            if !online.contains(&n) {
                return Err(job_err(
                    j,
                    format!(
                        "NUMA node {n} does not exist here (online nodes: {}); use one of those",
                        online
                            .iter()
                            .map(|n| n.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                ));
            }
        }
        if j.verify_only && j.verify_state_load {
            for c in 0..j.numjobs as usize {
                load_state(j, c).map_err(|e| job_err(j, e))?;
            }
        }
    }
    Ok(())
}

fn online_nodes() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|s| crate::job::units::parse_cpu_list(&s).ok())
        .unwrap_or_else(|| vec![0])
}

fn node_cpus(nodes: &[usize]) -> Vec<usize> {
    let nodes = if nodes.is_empty() {
        online_nodes()
    } else {
        nodes.to_vec()
    };
    let mut cpus: Vec<usize> = nodes
        .iter()
        .filter_map(|n| {
            std::fs::read_to_string(format!("/sys/devices/system/node/node{n}/cpulist")).ok()
        })
        .filter_map(|s| crate::job::units::parse_cpu_list(s.trim()).ok())
        .flatten()
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The job as worker number `index` (over every job's clones) runs it: its
/// CPU set resolved (numa_cpu_nodes, cpus_allowed_policy=split).
pub(super) fn placed(j: &JobSpec, index: usize) -> JobSpec {
    let mut j = j.clone();
    if !j.gtod_cpus.is_empty() {
        // fio's gtod_cpu: that CPU leaves every job's set.
        let base = j.cpus_allowed.take().unwrap_or_else(allowed_cpus);
        j.cpus_allowed = Some(
            base.into_iter()
                .filter(|c| !j.gtod_cpus.contains(c))
                .collect(),
        );
    }
    if let Some(nodes) = &j.numa_cpu_nodes {
        let cpus = node_cpus(nodes);
        j.cpus_allowed = Some(match j.cpus_allowed.take() {
            Some(a) => a.into_iter().filter(|c| cpus.contains(c)).collect(),
            None => cpus,
        });
    }
    if j.cpus_allowed_policy == CpuPolicy::Split {
        if let Some(cpus) = &j.cpus_allowed {
            if !cpus.is_empty() {
                j.cpus_allowed = Some(vec![cpus[index % cpus.len()]]);
            }
        }
    }
    j
}

/// The CPUs this process may run on (`taskset`), from /proc/self/status.
fn allowed_cpus() -> Vec<usize> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(|v| crate::job::units::parse_cpu_list(v.trim()).ok())
        })
        .unwrap_or_else(|| (0..dioscope_sys::proc::ncpus()).collect())
}

/// What a worker thread holds while it runs: pinned memory (lockmem).
pub(super) struct ThreadSetup {
    _locked: Option<AlignedBuf>,
}

/// Apply the job's thread settings on the calling (worker) thread, before
/// its buffers are allocated (the memory policy applies to them).
pub(super) fn setup_thread(j: &JobSpec) -> Result<ThreadSetup, EngineSetupError> {
    if j.cpus_allowed.as_ref().is_some_and(|c| c.is_empty()) && !j.gtod_cpus.is_empty() {
        return Err(EngineSetupError::new(
            &format!("pinning away from gtod_cpu={:?}", j.gtod_cpus),
            &std::io::Error::from_raw_os_error(libc::EINVAL),
            "gtod_cpu takes the only CPU this job may use: choose another gtod_cpu or widen cpus_allowed",
        ));
    }
    if let Some(cpus) = &j.cpus_allowed {
        dioscope_sys::proc::set_affinity(cpus).map_err(|e| {
            EngineSetupError::new(
                &format!("pinning to CPUs {cpus:?} (cpus_allowed/cpumask/numa_cpu_nodes)"),
                &e,
                "choose CPUs this process may use (see `taskset -p $$`)",
            )
        })?;
    }
    if let Some(m) = &j.numa_mem_policy {
        let nodes = match &m.nodes {
            Some(n) => n.clone(),
            None => online_nodes(),
        };
        sched::set_mempolicy(m.mode, &nodes).map_err(|e| {
            EngineSetupError::new(
                "set_mempolicy (numa_mem_policy)",
                &e,
                "use nodes listed in /sys/devices/system/node/online, or a kernel with NUMA support",
            )
        })?;
    }
    if j.prio.is_some() || j.prioclass.is_some() {
        let class = j.prioclass.unwrap_or(sched::IOPRIO_CLASS_BE);
        // A level given alone is best-effort; a class alone takes the
        // middle level (idle has none).
        let level = j.prio.unwrap_or(if class == sched::IOPRIO_CLASS_IDLE {
            0
        } else {
            4
        });
        sched::set_thread_ioprio(sched::ioprio_value(class, level)).map_err(|e| {
            EngineSetupError::new(
                &format!("ioprio_set(class {class}, level {level}) (prio/prioclass)"),
                &e,
                "the real-time class needs root (CAP_SYS_ADMIN); use prioclass=2 (best-effort)",
            )
        })?;
    }
    if j.nice != 0 {
        sched::set_thread_nice(j.nice).map_err(|e| {
            EngineSetupError::new(
                &format!("setpriority(nice {})", j.nice),
                &e,
                "a negative nice value needs root (CAP_SYS_NICE); use 0..19",
            )
        })?;
    }
    let locked = if j.lockmem > 0 {
        let limit = sched::memlock_limit();
        let b = AlignedBuf::new(j.lockmem as usize)
            .and_then(|b| b.lock().map(|()| b))
            .map_err(|e| {
                EngineSetupError::new(
                    &format!("mlock of lockmem={} bytes", j.lockmem),
                    &e,
                    &format!(
                        "the locked-memory limit (`ulimit -l`) is {}; raise it (ulimit -l unlimited, or LimitMEMLOCK= in a service) or lower lockmem",
                        if limit == u64::MAX { "unlimited".to_string() } else { format!("{limit} bytes") }
                    ),
                )
            })?;
        Some(b)
    } else {
        None
    };
    Ok(ThreadSetup { _locked: locked })
}

/// The worker's slot buffers in the memory `mem=`/`iomem=` asks for, filled
/// as the job's first writes expect.
pub(super) fn arena(j: &JobSpec, depth: u32, slot_len: u64) -> Result<SlotArena, EngineSetupError> {
    let kind = match &j.iomem {
        MemKind::Malloc | MemKind::Mmap(None) => BufKind::Anonymous,
        MemKind::Mmap(Some(p)) | MemKind::MmapHuge(Some(p)) => BufKind::File(PathBuf::from(p)),
        MemKind::MmapHuge(None) => BufKind::Huge,
        MemKind::MmapShared => BufKind::Shared,
        MemKind::Shm => BufKind::Shm { huge: false },
        MemKind::ShmHuge => BufKind::Shm { huge: true },
    };
    let huge = matches!(j.iomem, MemKind::ShmHuge | MemKind::MmapHuge(_));
    let opts = BufOptions {
        kind,
        align: j.iomem_align as usize,
    };
    let mut arena = SlotArena::new_in(depth, slot_len as usize, &opts).map_err(|e| {
        EngineSetupError::new(
            &format!("allocating {depth} buffers of {slot_len} bytes ({:?})", j.iomem),
            &e,
            if huge {
                "huge pages must be reserved first: echo N > /proc/sys/vm/nr_hugepages (and mount hugetlbfs for mmaphuge:FILE)"
            } else {
                "lower iodepth, bs or numjobs, or raise the memory limit (`ulimit -v`)"
            },
        )
    })?;
    Fill::initial(j, &mut arena);
    Ok(arena)
}

/// exec_prerun / exec_postrun: the command through `sh -c`, its output in
/// `JOB.prerun.txt` / `JOB.postrun.txt` (fio's names).
pub(super) fn exec_hook(j: &JobSpec, what: &str) -> Result<(), EngineSetupError> {
    let cmd = match what {
        "prerun" => &j.exec_prerun,
        _ => &j.exec_postrun,
    };
    let Some(cmd) = cmd else { return Ok(()) };
    let out = crate::job::created::exec_output(j, what);
    let fail = |msg: String| EngineSetupError {
        errno: libc::EIO,
        msg,
    };
    let opt = if what == "prerun" {
        "exec_prerun"
    } else {
        "exec_postrun"
    };
    let file = crate::outfile::open(
        &out,
        crate::outfile::Mode::Truncate,
        &crate::outfile::Rules::new(opt),
    )
    .map_err(|e| {
        fail(format!(
            "exec_{what}: creating {} failed: {}",
            out.display(),
            e.why
        ))
    })?;
    let err = file
        .try_clone()
        .map_err(|e| fail(format!("exec_{what}: {e}")))?;
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdout(file)
        .stderr(err)
        .status()
        .map_err(|e| fail(format!("exec_{what}: running /bin/sh failed: {e}")))?;
    if !status.success() {
        return Err(fail(format!(
            "exec_{what} '{cmd}' failed ({status}); its output is in {}",
            out.display()
        )));
    }
    Ok(())
}
