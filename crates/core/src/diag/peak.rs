//! `doctor --peak`: what stands between a block device and its peak IOPS
//! (I/O scheduler, merges, iostats, completion affinity, write cache, poll
//! queues, CPU governor, SMT siblings, IRQ placement), each with the shell
//! command that fixes it. Every check reads through [`Roots`], so a test can
//! replace `/sys` and `/proc` with a recorded tree.

use crate::results::doctor::{PeakCheck, PeakState};
use std::fs;
use std::path::{Path, PathBuf};

/// Where sysfs and procfs are read from (`/sys`, `/proc` on a live host).
#[derive(Debug, Clone)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sys: PathBuf::from("/sys"),
            proc: PathBuf::from("/proc"),
        }
    }
}

use super::device::read_trimmed as read;

fn check(name: &str, state: PeakState, value: String, fix: Option<String>) -> PeakCheck {
    PeakCheck {
        name: name.to_string(),
        state,
        value,
        fix,
    }
}

/// The whole disk whose queue serves `target` (a block device, a partition
/// of one, or a file on a file system on one), by its name under
/// `sys/block`.
pub fn disk_of(roots: &Roots, target: &Path) -> Option<String> {
    let name = target.file_name()?.to_string_lossy().to_string();
    if target.starts_with("/dev") && roots.sys.join("block").join(&name).is_dir() {
        return Some(name);
    }
    let class = if target.starts_with("/dev") {
        roots.sys.join("class/block").join(&name)
    } else {
        use std::os::unix::fs::MetadataExt;
        let dev = fs::metadata(target).ok()?.dev();
        let (maj, min) = (libc::major(dev), libc::minor(dev));
        roots.sys.join(format!("dev/block/{maj}:{min}"))
    };
    let real = fs::canonicalize(&class).ok()?;
    let own = real.file_name()?.to_string_lossy().to_string();
    if roots.sys.join("block").join(&own).is_dir() {
        return Some(own);
    }
    let parent = real.parent()?.file_name()?.to_string_lossy().to_string();
    roots
        .sys
        .join("block")
        .join(&parent)
        .is_dir()
        .then_some(parent)
}

/// A queue attribute that should hold `want`: its check and fix.
fn queue_value(roots: &Roots, dev: &str, attr: &str, want: &str) -> PeakCheck {
    let name = format!("queue/{attr}");
    match read(&roots.sys.join(format!("block/{dev}/queue/{attr}"))) {
        None => check(
            &name,
            PeakState::NotAvailable,
            format!("no queue/{attr} here (a bio-based device, or an older kernel)"),
            None,
        ),
        Some(v) if v == want => check(&name, PeakState::Ok, v, None),
        Some(v) => check(
            &name,
            PeakState::NotOptimal,
            v,
            Some(format!("echo {want} > /sys/block/{dev}/queue/{attr}")),
        ),
    }
}

/// The active scheduler is the bracketed one; peak wants `none`.
fn scheduler(roots: &Roots, dev: &str) -> PeakCheck {
    let Some(all) = read(&roots.sys.join(format!("block/{dev}/queue/scheduler"))) else {
        return check(
            "scheduler",
            PeakState::NotAvailable,
            "no I/O scheduler (a bio-based device: bios go straight to its driver)".into(),
            None,
        );
    };
    let active = all
        .split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| all.clone());
    if active == "none" {
        check("scheduler", PeakState::Ok, active, None)
    } else {
        let fix = format!("echo none > /sys/block/{dev}/queue/scheduler");
        check("scheduler", PeakState::NotOptimal, active, Some(fix))
    }
}

fn write_cache(roots: &Roots, dev: &str) -> PeakCheck {
    match read(&roots.sys.join(format!("block/{dev}/queue/write_cache"))) {
        Some(v) => check("write_cache", PeakState::Ok, v, None),
        None => check(
            "write_cache",
            PeakState::NotAvailable,
            "absent".into(),
            None,
        ),
    }
}

/// Polled I/O: the queue's io_poll and, for NVMe, the driver's poll queues.
fn poll_queues(roots: &Roots, dev: &str) -> PeakCheck {
    let io_poll = read(&roots.sys.join(format!("block/{dev}/queue/io_poll")));
    let nvme = dev.starts_with("nvme");
    let queues = if nvme {
        read(&roots.sys.join("module/nvme/parameters/poll_queues"))
    } else {
        None
    };
    let value = format!(
        "io_poll {}, poll_queues {}",
        io_poll.as_deref().unwrap_or("absent"),
        queues.as_deref().unwrap_or("absent")
    );
    let polls = io_poll.as_deref() == Some("1") && (!nvme || queues.as_deref() > Some("0"));
    if polls && queues.as_deref() != Some("0") {
        return check("poll queues", PeakState::Ok, value, None);
    }
    let fix = nvme.then(|| {
        "modprobe -r nvme && modprobe nvme poll_queues=$(nproc) (or nvme.poll_queues=N on the kernel command line)"
            .to_string()
    });
    let value = format!("{value}: polled I/O not available");
    check("poll queues", PeakState::NotAvailable, value, fix)
}

/// The CPUs under `sys/devices/system/cpu`, in order.
fn cpus(roots: &Roots) -> Vec<u32> {
    let mut v: Vec<u32> = fs::read_dir(roots.sys.join("devices/system/cpu"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.strip_prefix("cpu")?.parse().ok()
        })
        .collect();
    v.sort_unstable();
    v
}

fn governor(roots: &Roots) -> PeakCheck {
    // The same reading as the environment's (distinct governors, counted).
    let govs = super::env::read_governors(&roots.sys.join("devices/system/cpu"));
    if govs.is_empty() {
        let v = "not available (no cpufreq: VM or fixed clock)".to_string();
        return check("cpu governor", PeakState::NotAvailable, v, None);
    }
    let names: Vec<&str> = govs.iter().map(|(g, _)| g.as_str()).collect();
    let value = names.join(", ");
    if names == ["performance"] {
        check("cpu governor", PeakState::Ok, value, None)
    } else {
        let fix = "for g in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do echo performance > $g; done";
        check(
            "cpu governor",
            PeakState::NotOptimal,
            value,
            Some(fix.into()),
        )
    }
}

fn smt(roots: &Roots) -> PeakCheck {
    let cpu = roots.sys.join("devices/system/cpu");
    let active = read(&cpu.join("smt/active"));
    let mut firsts: Vec<String> = cpus(roots)
        .iter()
        .filter_map(|c| read(&cpu.join(format!("cpu{c}/topology/thread_siblings_list"))))
        .map(|l| l.split([',', '-']).next().unwrap_or("").to_string())
        .collect();
    firsts.sort_by_key(|s| s.parse::<u32>().unwrap_or(0));
    firsts.dedup();
    match active.as_deref() {
        None => check(
            "SMT siblings",
            PeakState::NotAvailable,
            "absent".into(),
            None,
        ),
        Some("0") => check("SMT siblings", PeakState::Ok, "SMT off".into(), None),
        Some(_) => check(
            "SMT siblings",
            PeakState::NotOptimal,
            "SMT active".into(),
            Some(format!(
                "pin the job to one thread per core: cpus_allowed={}",
                firsts.join(",")
            )),
        ),
    }
}

/// The device's interrupt lines (`nvme0q1` for `nvme0n1`) and their CPUs.
fn irqs(roots: &Roots, dev: &str) -> PeakCheck {
    let stem = match dev.strip_prefix("nvme") {
        Some(rest) => {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            format!("nvme{digits}q")
        }
        None => dev.to_string(),
    };
    let text = read(&roots.proc.join("interrupts")).unwrap_or_default();
    let mut lines = Vec::new();
    for l in text.lines() {
        let Some(irq) = l.split(':').next().map(str::trim) else {
            continue;
        };
        if irq.parse::<u32>().is_err() || !l.split_whitespace().any(|w| w.starts_with(&stem)) {
            continue;
        }
        let cpus = read(&roots.proc.join(format!("irq/{irq}/smp_affinity_list")));
        lines.push(format!("{irq}→{}", cpus.as_deref().unwrap_or("?")));
    }
    let irqbalance = irqbalance_running(roots);
    if lines.is_empty() {
        let v = format!("no interrupt lines named {stem}* (no device interrupts)");
        return check("IRQ placement", PeakState::NotAvailable, v, None);
    }
    let value = format!("{}; irqbalance {}", lines.join(" "), running(irqbalance));
    if irqbalance {
        let fix = "systemctl stop irqbalance".to_string();
        check("IRQ placement", PeakState::NotOptimal, value, Some(fix))
    } else {
        check("IRQ placement", PeakState::Ok, value, None)
    }
}

fn running(b: bool) -> &'static str {
    if b {
        "running"
    } else {
        "not running"
    }
}

fn irqbalance_running(roots: &Roots) -> bool {
    fs::read_dir(&roots.proc)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .any(|e| read(&e.path().join("comm")).as_deref() == Some("irqbalance"))
}

/// Every file-reading check of `doctor --peak` for disk `dev`.
pub fn checks(roots: &Roots, dev: &str) -> Vec<PeakCheck> {
    vec![
        scheduler(roots, dev),
        queue_value(roots, dev, "nomerges", "2"),
        queue_value(roots, dev, "iostats", "0"),
        queue_value(roots, dev, "rq_affinity", "2"),
        write_cache(roots, dev),
        poll_queues(roots, dev),
        governor(roots),
        smt(roots),
        irqs(roots, dev),
    ]
}

/// `doctor --peak` on `target`: the checks of its disk, or one line saying
/// no block device serves it.
pub fn peak(roots: &Roots, target: &Path) -> Vec<PeakCheck> {
    match disk_of(roots, target) {
        Some(dev) => checks(roots, &dev),
        None => vec![check(
            "device",
            PeakState::NotAvailable,
            format!("no block device found under {}", target.display()),
            None,
        )],
    }
}

/// CPU ticks (user + system) of one `/proc/.../stat` line, and its comm.
fn stat_ticks(text: &str) -> Option<(String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_string();
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // After the comm: state is field 3, utime field 14, stime field 15.
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((comm, ticks))
}

/// The highest CPU ticks seen per `iou-wrk` thread of this process.
fn sample_iou_wrk(seen: &mut std::collections::HashMap<String, u64>) {
    let tasks = fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten();
    for t in tasks {
        let Some((comm, ticks)) = read(&t.path().join("stat")).and_then(|s| stat_ticks(&s)) else {
            continue;
        };
        if comm.starts_with("iou-wrk") {
            let e = seen
                .entry(t.file_name().to_string_lossy().to_string())
                .or_default();
            *e = (*e).max(ticks);
        }
    }
}

fn process_ticks() -> u64 {
    read(Path::new("/proc/self/stat"))
        .and_then(|s| stat_ticks(&s))
        .map_or(0, |(_, t)| t)
}

/// What the probe run found: the process's CPU ticks and those of its
/// `iou-wrk` threads, how many of them there were, and where BPF works
/// (root; the raw-tracepoint program or bpftrace), io_uring's hand-offs to
/// io-wq counted exactly by the `--stages` tracer
/// (`io_uring_queue_async_work`): (punted, requests), or why they were not.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub process_ticks: u64,
    pub iou_wrk_ticks: u64,
    pub iou_wrk_threads: usize,
    pub punts: Result<(u64, u64), String>,
}

/// Runs the probe's trial with the stages tracer when tracing works here
/// (its punt count is exact), else with no hooks.
fn execute_probe(
    resolved: Vec<crate::runner::ResolvedJob>,
    table: &crate::targets::TargetTable,
    opts: &crate::runner::RunOptions,
) -> (crate::runner::RunResult, Result<(u64, u64), String>) {
    if let Err(u) = crate::stages::io_uring_tracing() {
        let r = crate::runner::execute(resolved, table, opts, &mut crate::runner::NoHooks);
        return (r, Err(format!("{} ({})", u.message, u.fix)));
    }
    let mut tracer = crate::stages::StageTracer::new(0);
    let r = crate::runner::execute(resolved, table, opts, &mut tracer);
    let st = tracer.finish(&crate::results::model::RunDoc::default());
    if st.status != "measured" {
        let why = st
            .message
            .unwrap_or_else(|| format!("the tracer {}", st.status));
        return (r, Err(why));
    }
    let punts = st
        .directions
        .iter()
        .fold((0, 0), |(p, n), d| (p + d.punted_io_wq, n + d.tagged_ios));
    if punts.1 == 0 {
        return (
            r,
            Err("the tracer counted none of the probe's requests".into()),
        );
    }
    (r, Ok(punts))
}

/// A short read-only io_uring run (4 KiB random reads, QD 32, direct) on
/// `target` through the runner, sampling the `iou-wrk` threads' CPU time
/// while it runs.
pub fn probe(target: &Path) -> Result<Probe, String> {
    let args = [
        "--name=peak-probe".to_string(),
        format!("--filename={}", target.display()),
        "--rw=randread".into(),
        "--direct=1".into(),
        "--ioengine=io_uring".into(),
        "--iodepth=32".into(),
        "--bs=4k".into(),
        "--runtime=1".into(),
        "--time_based".into(),
        "--trials=1".into(),
        "--eta=never".into(),
    ];
    let plan = crate::job::parse_args(&args).map_err(|e| e.to_string())?;
    let (resolved, table) = crate::runner::prepare(&plan).map_err(|e| e.to_string())?;
    let opts = crate::runner::RunOptions {
        progress: false,
        destroy_data_on: plan.global.destroy_data_on.clone(),
        auto: plan.global.auto.clone(),
    };
    let before = process_ticks();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut seen = std::collections::HashMap::new();
    let (result, punts) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut seen = std::collections::HashMap::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                sample_iou_wrk(&mut seen);
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            seen
        });
        let r = execute_probe(resolved, &table, &opts);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        seen = sampler.join().unwrap_or_default();
        r
    });
    if let Some(e) = result.setup_error.as_ref() {
        return Err(format!("{e:?}"));
    }
    Ok(Probe {
        process_ticks: process_ticks().saturating_sub(before),
        iou_wrk_ticks: seen.values().sum(),
        iou_wrk_threads: seen.len(),
        punts,
    })
}

/// The io-wq check from a probe: punting when io_uring handed at least
/// 10 % of the probe's requests to io-wq (the tracer's exact count, where
/// BPF works), else when the `iou-wrk` threads did a share of the work
/// (≥ 10 % of the probe's CPU).
pub fn io_wq_check(p: Result<Probe, String>) -> PeakCheck {
    let name = "io_uring io-wq punting";
    let p = match p {
        Ok(p) => p,
        Err(e) => {
            let v = format!("probe run failed: {e}");
            return check(name, PeakState::NotAvailable, v, None);
        }
    };
    let cpu_pct = 100.0 * p.iou_wrk_ticks as f64 / p.process_ticks.max(1) as f64;
    let threads = p.iou_wrk_threads;
    let (punting, how) = match p.punts {
        Ok((punted, ios)) => {
            let pct = 100.0 * punted as f64 / ios as f64;
            (
                pct >= 10.0,
                format!(
                    "{punted} of the probe's {ios} requests ({pct:.0} %) handed to io-wq, \
                     counted by the --stages tracer at io_uring_queue_async_work; \
                     {cpu_pct:.0} % of its CPU in {threads} iou-wrk thread(s)"
                ),
            )
        }
        Err(why) => (
            threads > 0 && cpu_pct >= 10.0,
            format!(
                "{cpu_pct:.0} % of the probe's CPU in {threads} iou-wrk thread(s); requests \
                 not counted: {why}"
            ),
        ),
    };
    if punting {
        let v = format!(
            "io_uring hands I/O to io-wq workers on this device: {how}. The device takes \
             no non-blocking (RWF_NOWAIT) I/O; libaio or a device with nowait support avoids \
             it"
        );
        check(
            name,
            PeakState::NotOptimal,
            v,
            Some(
                "--ioengine=libaio (aio's reads run inside io_submit), or a device that takes \
                 RWF_NOWAIT"
                    .into(),
            ),
        )
    } else {
        let v = format!("I/O is issued inline ({how})");
        check(name, PeakState::Ok, v, None)
    }
}

/// `doctor --peak` on a live host: the file checks and the probe run.
pub fn peak_with_probe(target: &Path) -> Vec<PeakCheck> {
    let roots = Roots::default();
    let mut v = peak(&roots, target);
    if disk_of(&roots, target).is_some() {
        v.push(io_wq_check(probe(target)));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(tree: &str) -> Roots {
        let base = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/peak")
            .join(tree);
        Roots {
            sys: base.join("sys"),
            proc: base.join("proc"),
        }
    }

    fn find<'a>(v: &'a [PeakCheck], name: &str) -> &'a PeakCheck {
        v.iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name}: {v:?}"))
    }

    #[test]
    fn recorded_nvme_host_every_check_fires_with_its_fix() {
        let r = roots("nvme-host");
        assert_eq!(
            disk_of(&r, Path::new("/dev/nvme0n1")).as_deref(),
            Some("nvme0n1")
        );
        let v = checks(&r, "nvme0n1");
        let fix = |n: &str| find(&v, n).fix.clone().unwrap_or_default();
        let s = find(&v, "scheduler");
        assert_eq!(
            (s.state, s.value.as_str()),
            (PeakState::NotOptimal, "mq-deadline")
        );
        assert_eq!(
            fix("scheduler"),
            "echo none > /sys/block/nvme0n1/queue/scheduler"
        );
        assert_eq!(
            fix("queue/nomerges"),
            "echo 2 > /sys/block/nvme0n1/queue/nomerges"
        );
        assert_eq!(
            fix("queue/iostats"),
            "echo 0 > /sys/block/nvme0n1/queue/iostats"
        );
        assert_eq!(
            fix("queue/rq_affinity"),
            "echo 2 > /sys/block/nvme0n1/queue/rq_affinity"
        );
        assert_eq!(find(&v, "write_cache").value, "write back");
        let p = find(&v, "poll queues");
        assert_eq!(p.state, PeakState::NotAvailable);
        assert!(p.value.contains("poll_queues 0"), "{p:?}");
        assert!(fix("poll queues").contains("modprobe nvme poll_queues="));
        let g = find(&v, "cpu governor");
        assert_eq!(
            (g.state, g.value.as_str()),
            (PeakState::NotOptimal, "powersave")
        );
        assert!(fix("cpu governor").contains("echo performance >"));
        assert_eq!(
            fix("SMT siblings"),
            "pin the job to one thread per core: cpus_allowed=0,1"
        );
        let i = find(&v, "IRQ placement");
        assert_eq!(i.value, "33→0-3 34→0-3; irqbalance running");
        assert_eq!(fix("IRQ placement"), "systemctl stop irqbalance");
        for c in v.iter().filter(|c| c.name != "write_cache") {
            assert_ne!(c.state, PeakState::Ok, "{c:?}");
        }
    }

    #[test]
    fn recorded_optimal_host_has_no_findings() {
        let v = checks(&roots("nvme-optimal"), "nvme0n1");
        for c in &v {
            assert_eq!((c.state, &c.fix), (PeakState::Ok, &None), "{c:?}");
        }
        assert_eq!(v.len(), 9);
    }

    #[test]
    fn no_cpufreq_is_not_available() {
        let r = Roots {
            sys: PathBuf::from("/nonexistent/sys"),
            proc: PathBuf::from("/nonexistent/proc"),
        };
        let g = governor(&r);
        assert_eq!(g.state, PeakState::NotAvailable);
        assert!(g.value.contains("no cpufreq"));
    }

    fn probe_of(punts: Option<(u64, u64)>, iou_wrk_ticks: u64) -> Probe {
        let punts = punts.ok_or_else(|| "no BPF here (a test's reason)".to_string());
        Probe {
            process_ticks: 100,
            iou_wrk_ticks,
            iou_wrk_threads: usize::from(iou_wrk_ticks > 0),
            punts,
        }
    }

    #[test]
    fn the_io_wq_check_reads_the_exact_punt_count_where_there_is_one() {
        // Counted: 970 of 1000 requests punted is punting, whatever the
        // threads' CPU says.
        let c = io_wq_check(Ok(probe_of(Some((970, 1000)), 5)));
        assert_eq!(c.state, PeakState::NotOptimal, "{c:?}");
        assert!(
            c.value.contains("970 of the probe's 1000 requests (97 %)"),
            "{c:?}"
        );
        assert!(c.value.contains("io-wq workers on this device"), "{c:?}");
        assert!(c.fix.as_deref().unwrap().contains("--ioengine=libaio"));
        // Counted, none punted: inline, even with an idle iou-wrk thread.
        let c = io_wq_check(Ok(probe_of(Some((0, 1000)), 1)));
        assert_eq!(c.state, PeakState::Ok, "{c:?}");
        assert!(c.value.contains("0 of the probe's 1000"), "{c:?}");
        // Not counted (no BPF): the threads' CPU decides, and the value says so.
        let c = io_wq_check(Ok(probe_of(None, 69)));
        assert_eq!(c.state, PeakState::NotOptimal, "{c:?}");
        // The reason the tracer gave, not a guess at it.
        assert!(
            c.value
                .contains("requests not counted: no BPF here (a test's reason)"),
            "{c:?}"
        );
        let c = io_wq_check(Ok(probe_of(None, 0)));
        assert_eq!(c.state, PeakState::Ok, "{c:?}");
    }
}
