//! Sharing the machine during a run: other I/O on the devices that hold the
//! targets, and other processes on the CPUs dioscope may run on. The trial
//! hooks record the counters ([`super::hooks::TrialRecord`]'s `devices`,
//! `io_procs` and `cpu`); these rules turn them into findings.

use super::device::{self, BlockDev, DevRole, DeviceReport};
use super::findings::{CpuContention, CpuProcess, Finding, IoProcess, OtherDeviceIo};
use super::hooks::{CpuShare, TrialRecord};
use super::procs;
use crate::runner::{ResolvedJob, RunResult};

/// Extra device traffic beyond the benchmark's own that is not reported:
/// this share of ours…
const OTHER_IO_MIN_SHARE: f64 = 0.10;
/// …or this many bytes, whichever is larger. Journal commits and mtime
/// updates of a file system under a direct-I/O job are far below it; the
/// device snapshots bracket the measured interval, so an I/O in flight at
/// either end may also land on one side only.
const OTHER_IO_MIN_BYTES: u64 = 4 << 20;

/// The benchmark's bytes (read, write) of one trial, from the run result.
pub type OurBytes = (u64, u64);

/// The bytes the group's jobs read and wrote in the trial; `None` when a
/// job does buffered I/O (what reaches the device is then the kernel's
/// choice, not the job's).
pub fn job_bytes(r: &RunResult, rec: &TrialRecord) -> Option<OurBytes> {
    let mut b = (0, 0);
    for j in r.jobs.iter().filter(|j| j.resolved.phase == rec.group) {
        if !j.resolved.spec.direct {
            return None;
        }
        let t = j.trials.get(rec.trial.checked_sub(1)? as usize)?;
        b.0 += t.dirs[0].bytes;
        b.1 += t.dirs[1].bytes;
    }
    Some(b)
}

/// Whether a device moved more than the benchmark in one direction.
pub fn beyond_ours(device: u64, ours: u64) -> bool {
    let slack = ((ours as f64 * OTHER_IO_MIN_SHARE) as u64).max(OTHER_IO_MIN_BYTES);
    device > ours + slack
}

pub fn data_device(d: &DeviceReport) -> bool {
    matches!(d.role, DevRole::Target | DevRole::Filesystem)
}

/// Whether a data device under the targets moved more than the benchmark
/// in this trial (the rule of [`other_device_io`]); `ours` as there.
pub fn other_io(rec: &TrialRecord, ours: Option<OurBytes>) -> bool {
    let Some((our_r, our_w)) = ours else {
        return false;
    };
    rec.devices.iter().filter(|d| data_device(d)).any(|d| {
        beyond_ours(d.delta.read_sectors * 512, our_r)
            || beyond_ours(d.delta.write_sectors * 512, our_w)
    })
}

/// [`OtherDeviceIo`] per device that, in some trial, read or wrote more than
/// the benchmark did (beyond the slack above). `ours(rec)` gives the
/// benchmark's bytes of that trial, `None` when they cannot be compared
/// (buffered I/O: the page cache decouples the two).
pub fn other_device_io(
    trials: &[TrialRecord],
    ours: impl Fn(&TrialRecord) -> Option<OurBytes>,
) -> Vec<Finding> {
    let mut out: Vec<OtherDeviceIo> = Vec::new();
    for rec in trials {
        let Some((our_r, our_w)) = ours(rec) else {
            continue;
        };
        for d in rec.devices.iter().filter(|d| data_device(d)) {
            let (dev_r, dev_w) = (d.delta.read_sectors * 512, d.delta.write_sectors * 512);
            if !beyond_ours(dev_r, our_r) && !beyond_ours(dev_w, our_w) {
                continue;
            }
            let i = match out.iter().position(|f| f.device == d.device) {
                Some(i) => i,
                None => {
                    out.push(OtherDeviceIo {
                        device: d.device.clone(),
                        trials: Vec::new(),
                        our_bytes: 0,
                        device_bytes: 0,
                        processes: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let f = &mut out[i];
            // Each group counts its trials from 1: name trial 1 once.
            if !f.trials.contains(&(rec.trial as usize)) {
                f.trials.push(rec.trial as usize);
            }
            f.our_bytes += our_r + our_w;
            f.device_bytes += dev_r + dev_w;
            merge_io(&mut f.processes, &rec.io_procs);
        }
    }
    out.into_iter().map(Finding::from).collect()
}

fn merge_io(into: &mut Vec<IoProcess>, from: &[IoProcess]) {
    for p in from {
        match into.iter_mut().find(|x| x.pid == p.pid) {
            Some(x) => {
                x.read_bytes += p.read_bytes;
                x.write_bytes += p.write_bytes;
            }
            None => into.push(p.clone()),
        }
    }
    into.sort_by_key(|p| std::cmp::Reverse(p.read_bytes + p.write_bytes));
}

/// How long `doctor` watches the devices for other I/O.
pub const DOCTOR_SAMPLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Watch the data devices among `devs` for `dur` with no workload of ours:
/// [`OtherDeviceIo`] (with no trials) per device that moved more than
/// [`OTHER_IO_MIN_BYTES`], naming the holders that did I/O meanwhile.
pub fn sample_device_io(devs: &[BlockDev], dur: std::time::Duration) -> Vec<Finding> {
    let devs: Vec<BlockDev> = devs
        .iter()
        .filter(|d| matches!(d.role, DevRole::Target | DevRole::Filesystem))
        .cloned()
        .collect();
    if devs.is_empty() {
        return Vec::new();
    }
    let ids: Vec<(u32, u32)> = devs.iter().map(|d| (d.major, d.minor)).collect();
    let io0: Vec<(i32, u64, u64)> = procs::holders(&ids)
        .into_iter()
        .filter_map(|p| procs::read_io(p).map(|(r, w)| (p, r, w)))
        .collect();
    let before = device::snapshot(&devs);
    std::thread::sleep(dur);
    let after = device::snapshot(&devs);
    let mut who: Vec<IoProcess> = Vec::new();
    for (pid, r0, w0) in io0 {
        if let Some((r1, w1)) = procs::read_io(pid) {
            let (read_bytes, write_bytes) = (r1.saturating_sub(r0), w1.saturating_sub(w0));
            if read_bytes + write_bytes > 0 {
                who.push(IoProcess {
                    pid,
                    comm: procs::comm(pid),
                    read_bytes,
                    write_bytes,
                });
            }
        }
    }
    who.sort_by_key(|p| std::cmp::Reverse(p.read_bytes + p.write_bytes));
    devs.iter()
        .zip(before.0.iter().zip(after.0.iter()))
        .filter_map(|(d, (b, a))| {
            let delta = a.as_ref()?.since(b.as_ref()?);
            let bytes = (delta.read_sectors + delta.write_sectors) * 512;
            (bytes > OTHER_IO_MIN_BYTES).then(|| {
                OtherDeviceIo {
                    device: d.name.clone(),
                    trials: Vec::new(),
                    our_bytes: 0,
                    device_bytes: bytes,
                    processes: who.clone(),
                }
                .into()
            })
        })
        .collect()
}

/// The CPUs the contention rule judges: those the workers are pinned to
/// (cpus_allowed, cpumask, numa_cpu_nodes, as the runner places them), or
/// the process's when a worker is not pinned. A CPU no worker may run on
/// cannot delay one, and a hog on the one CPU they are pinned to can,
/// whatever the other CPUs do.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JudgedCpus {
    pub cpus: Vec<usize>,
    /// The workers' pinning, not the process's affinity.
    pub pinned: bool,
}

impl JudgedCpus {
    /// The CPUs of the group's workers.
    pub fn of(jobs: &[&ResolvedJob]) -> JudgedCpus {
        Self::from_sets(jobs.iter().map(|j| j.worker_cpus()), procs::allowed_cpus())
    }

    /// The union of the workers' sets when every one is pinned (`Some`),
    /// the process's CPUs otherwise.
    fn from_sets(sets: impl Iterator<Item = Option<Vec<usize>>>, process: Vec<usize>) -> Self {
        let mut cpus = Vec::new();
        for s in sets {
            match s {
                Some(s) => cpus.extend(s),
                None => {
                    return JudgedCpus {
                        cpus: process,
                        pinned: false,
                    }
                }
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return JudgedCpus {
                cpus: process,
                pinned: false,
            };
        }
        JudgedCpus { cpus, pinned: true }
    }
}

/// One reading of the CPU counters, at the start or the end of the
/// measured interval.
#[derive(Debug, Clone, Default)]
pub struct CpuSample {
    /// `(cpu, busy, total)` ticks of every CPU (/proc/stat).
    pub per_cpu: Vec<(usize, u64, u64)>,
    /// The whole process's utime + stime ticks (exited threads included).
    pub own: u64,
    /// `(tid, ticks, CPUs it may run on)` of our threads.
    pub threads: Vec<(i32, u64, Vec<usize>)>,
}

impl CpuSample {
    pub fn now() -> CpuSample {
        CpuSample {
            per_cpu: procs::per_cpu_ticks(),
            own: procs::own_ticks(),
            threads: procs::own_threads(),
        }
    }
}

/// How busy the judged CPUs were between `a` and `b`, and by whom. Our
/// time on them is the process's minus the part of each thread's that it
/// may have spent elsewhere (its time × the share of its CPUs that are not
/// judged: nothing for a worker pinned there, half for the runner's
/// thread on 2 CPUs when one is judged); a thread gone by `b` counts as
/// ours in full, which can only make others' share smaller.
pub fn cpu_share(judged: &JudgedCpus, a: &CpuSample, b: &CpuSample) -> Option<CpuShare> {
    let ticks = |s: &CpuSample| {
        s.per_cpu
            .iter()
            .filter(|c| judged.cpus.contains(&c.0))
            .fold((0u64, 0u64), |acc, c| (acc.0 + c.1, acc.1 + c.2))
    };
    let ((b0, t0), (b1, t1)) = (ticks(a), ticks(b));
    let (busy, total) = (b1.saturating_sub(b0) as f64, t1.saturating_sub(t0) as f64);
    let n = judged.cpus.len();
    if total <= 0.0 || n == 0 {
        return None;
    }
    let elsewhere: f64 = b
        .threads
        .iter()
        .map(|(tid, t, allowed)| {
            let before = a.threads.iter().find(|x| x.0 == *tid).map_or(0, |x| x.1);
            let on = allowed.iter().filter(|c| judged.cpus.contains(c)).count();
            let away = if allowed.is_empty() {
                0.0
            } else {
                1.0 - on as f64 / allowed.len() as f64
            };
            t.saturating_sub(before) as f64 * away
        })
        .sum();
    let own = (b.own.saturating_sub(a.own) as f64 - elsewhere).max(0.0);
    // Ticks of n CPUs over the interval: one CPU's worth is total / n.
    let one_cpu = total / n as f64;
    Some(CpuShare {
        cpus: n,
        cpu_list: judged.cpus.clone(),
        pinned: judged.pinned,
        busy_pct: 100.0 * busy / total,
        ours_pct: 100.0 * own / one_cpu,
        others_pct: 100.0 * (busy - own).max(0.0) / one_cpu,
        top: Vec::new(),
    })
}

/// Others' share of our CPUs, in % of one CPU, from which contention is
/// reported (a quarter of a CPU: less is housekeeping noise)…
const CONTENTION_MIN_OTHERS_PCT: f64 = 25.0;
/// …when our CPUs were also this busy, in % of their capacity: with an idle
/// CPU left, the scheduler runs our threads there and nobody waits.
const CONTENTION_MIN_BUSY_PCT: f64 = 90.0;

/// [`CpuContention`] when, in some trials, other processes used at least a
/// quarter of a CPU on the CPUs the workers may run on ([`JudgedCpus`]) and
/// those CPUs were saturated. The figures are the worst trial's; the processes named are
/// the busiest over the flagged trials.
pub fn cpu_contention(trials: &[TrialRecord]) -> Option<Finding> {
    let mut f: Option<CpuContention> = None;
    for rec in trials {
        let Some(c) = rec.cpu.as_ref().filter(|_| contended(rec)) else {
            continue;
        };
        let f = f.get_or_insert_with(|| CpuContention {
            trials: Vec::new(),
            cpus: c.cpus,
            cpu_list: c.cpu_list.clone(),
            pinned: c.pinned,
            busy_pct: 0.0,
            ours_pct: 0.0,
            others_pct: 0.0,
            top: Vec::new(),
            delivery: None,
        });
        if !f.trials.contains(&(rec.trial as usize)) {
            f.trials.push(rec.trial as usize);
        }
        if c.others_pct > f.others_pct {
            f.cpus = c.cpus;
            f.cpu_list.clone_from(&c.cpu_list);
            f.pinned = c.pinned;
            f.busy_pct = c.busy_pct;
            f.ours_pct = c.ours_pct;
            f.others_pct = c.others_pct;
        }
        merge_cpu(&mut f.top, &c.top);
    }
    f.map(Finding::from)
}

/// Whether other processes contended for the CPUs dioscope may run on in
/// this trial (the rule of [`cpu_contention`]).
pub fn contended(rec: &TrialRecord) -> bool {
    rec.cpu.as_ref().is_some_and(|c| {
        c.others_pct >= CONTENTION_MIN_OTHERS_PCT && c.busy_pct >= CONTENTION_MIN_BUSY_PCT
    })
}

fn merge_cpu(into: &mut Vec<CpuProcess>, from: &[CpuProcess]) {
    for p in from {
        match into.iter_mut().find(|x| x.pid == p.pid) {
            Some(x) => {
                x.cpu_pct = x.cpu_pct.max(p.cpu_pct);
                x.our_cpus_pct = x.our_cpus_pct.max(p.our_cpus_pct);
            }
            None => into.push(p.clone()),
        }
    }
    into.sort_by(|a, b| b.our_cpus_pct.total_cmp(&a.our_cpus_pct));
    into.truncate(5);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::device::{DeviceMetrics, DiskStat};

    fn rec(trial: u32, role: DevRole, read_mib: u64, write_mib: u64) -> TrialRecord {
        TrialRecord {
            group: 0,
            trial,
            jobs: vec!["j".into()],
            app_ios: 100,
            wall_us: 1_000_000,
            page_cache: Vec::new(),
            openers: Vec::new(),
            devices: vec![DeviceReport {
                device: "loop9".into(),
                role,
                delta: DiskStat {
                    read_sectors: read_mib * 2048,
                    write_sectors: write_mib * 2048,
                    ..Default::default()
                },
                metrics: DeviceMetrics::default(),
            }],
            io_procs: vec![IoProcess {
                pid: 77,
                comm: "dd".into(),
                read_bytes: 0,
                write_bytes: 300 << 20,
            }],
            cpu: None,
        }
    }

    #[test]
    fn device_traffic_beyond_ours_names_the_process() {
        // We wrote 100 MiB; the device saw 400 MiB of writes.
        let f = other_device_io(&[rec(1, DevRole::Filesystem, 0, 400)], |_| {
            Some((0, 100 << 20))
        });
        match &f[..] {
            [Finding::OtherDeviceIo(o)] => {
                assert_eq!(o.device, "loop9");
                assert_eq!(o.trials, vec![1]);
                assert_eq!(o.processes[0].pid, 77);
                assert_eq!(o.device_bytes, 400 << 20);
            }
            f => panic!("{f:?}"),
        }
        let t = f[0].to_string();
        assert!(t.contains("pid 77 (`dd`"), "{t}");
    }

    #[test]
    fn own_traffic_and_small_extras_are_not_reported() {
        // Ours plus 2 MiB of journal: below the floor.
        let recs = [rec(1, DevRole::Target, 0, 102)];
        assert!(other_device_io(&recs, |_| Some((0, 100 << 20))).is_empty());
        // 8 % more on 1 GiB: below the share.
        let recs = [rec(1, DevRole::Target, 1106, 0)];
        assert!(other_device_io(&recs, |_| Some((1 << 30, 0))).is_empty());
        // Buffered trials are not compared at all.
        let recs = [rec(1, DevRole::Target, 0, 900)];
        assert!(other_device_io(&recs, |_| None).is_empty());
        // The parent disk of a partition also carries its siblings' I/O.
        let recs = [rec(1, DevRole::ParentDisk, 0, 900)];
        assert!(other_device_io(&recs, |_| Some((0, 1 << 20))).is_empty());
        // Reads beyond ours count too.
        let recs = [rec(1, DevRole::Target, 500, 10)];
        assert_eq!(other_device_io(&recs, |_| Some((0, 10 << 20))).len(), 1);
    }

    fn cpu(others: f64, busy: f64) -> TrialRecord {
        let mut r = rec(1, DevRole::Target, 0, 0);
        r.cpu = Some(CpuShare {
            cpus: 1,
            cpu_list: vec![0],
            pinned: false,
            busy_pct: busy,
            ours_pct: 100.0 - others,
            others_pct: others,
            top: vec![CpuProcess {
                pid: 99,
                comm: "hog".into(),
                cpu_pct: others,
                our_cpus_pct: others,
            }],
        });
        r
    }

    #[test]
    fn contention_needs_both_others_and_saturation() {
        let f = cpu_contention(&[cpu(50.0, 99.0)]).expect("hog on a saturated CPU");
        assert!(f.to_string().contains("pid 99 (`hog`"), "{f}");
        // Others busy but a CPU to spare: our threads ran elsewhere.
        assert!(cpu_contention(&[cpu(50.0, 60.0)]).is_none());
        // Saturated by us alone (others are housekeeping).
        assert!(cpu_contention(&[cpu(3.0, 100.0)]).is_none());
        assert!(cpu_contention(&[rec(1, DevRole::Target, 0, 0)]).is_none());
    }

    /// Counters of a 2-CPU machine over 1 s at 100 ticks a second: `busy`
    /// ticks of each CPU, `ours` of the process, and its threads: a worker
    /// with `worker` ticks on `worker_cpus`, the runner thread (both CPUs)
    /// with the rest.
    fn samples(busy: [u64; 2], worker: u64, worker_cpus: &[usize], ours: u64) -> [CpuSample; 2] {
        let threads = |w: u64, r: u64| vec![(1, r, vec![0, 1]), (2, w, worker_cpus.to_vec())];
        let a = CpuSample {
            per_cpu: vec![(0, 1000, 5000), (1, 1000, 5000)],
            own: 50,
            threads: threads(20, 30),
        };
        let b = CpuSample {
            per_cpu: vec![(0, 1000 + busy[0], 5100), (1, 1000 + busy[1], 5100)],
            own: 50 + ours,
            threads: threads(20 + worker, 30 + ours - worker),
        };
        [a, b]
    }

    fn judged(cpus: &[usize], pinned: bool) -> JudgedCpus {
        JudgedCpus {
            cpus: cpus.to_vec(),
            pinned,
        }
    }

    /// The rule on one trial's counters.
    fn finding(j: &JudgedCpus, [a, b]: &[CpuSample; 2]) -> Option<Finding> {
        let mut r = rec(1, DevRole::Target, 0, 0);
        r.cpu = cpu_share(j, a, b);
        cpu_contention(&[r])
    }

    #[test]
    fn workers_pinned_to_a_busy_cpu_are_contended() {
        let pinned = judged(&[0], true);
        // CPU 0 full: the worker pinned there had 10 ticks, others 90;
        // CPU 1 idle but for the runner's 4 ticks.
        let s = samples([100, 4], 10, &[0], 14);
        let c = cpu_share(&pinned, &s[0], &s[1]).unwrap();
        assert_eq!((c.cpus, c.busy_pct), (1, 100.0));
        // Ours on CPU 0: the worker's 10 and half of the runner's 4.
        assert!((c.ours_pct - 12.0).abs() < 1e-9, "{c:?}");
        assert!((c.others_pct - 88.0).abs() < 1e-9, "{c:?}");
        let f = finding(&pinned, &s).expect("a hog on the workers' CPU");
        let t = f.to_string();
        assert!(
            t.contains("leaving CPU 0, the one its workers are pinned to"),
            "{t}"
        );
        // Judged as the process's CPUs, the same counters are 52 % busy:
        // the idle CPU 1 hid the hog (the rule before it judged the
        // workers' CPUs).
        assert!(finding(&judged(&[0, 1], false), &s).is_none());
    }

    #[test]
    fn a_busy_cpu_the_workers_cannot_use_does_not_count() {
        let pinned = judged(&[0], true);
        // CPU 1 full with others, CPU 0 (the workers') 30 % busy, ours.
        let s = samples([30, 100], 28, &[0], 30);
        let c = cpu_share(&pinned, &s[0], &s[1]).unwrap();
        assert_eq!(c.busy_pct, 30.0);
        assert!(finding(&pinned, &s).is_none());
        // CPU 0 saturated by the worker itself: not contention either.
        let s = samples([100, 100], 97, &[0], 99);
        assert!(finding(&pinned, &s).is_none());
    }

    #[test]
    fn unpinned_workers_are_judged_on_the_process_cpus_as_before() {
        let all = judged(&[0, 1], false);
        // Both CPUs full, ours 60 ticks of 200: others 140 % of a CPU.
        let s = samples([100, 100], 50, &[0, 1], 60);
        let c = cpu_share(&all, &s[0], &s[1]).unwrap();
        assert_eq!(
            (c.cpus, c.busy_pct, c.ours_pct, c.others_pct),
            (2, 100.0, 60.0, 140.0)
        );
        let t = finding(&all, &s).expect("both CPUs taken").to_string();
        assert!(
            t.contains("leaving the 2 CPUs it may run on (0-1) 100 % busy"),
            "{t}"
        );
        // One CPU to spare: our threads ran there.
        let s = samples([100, 40], 50, &[0, 1], 60);
        assert!(finding(&all, &s).is_none());
    }

    #[test]
    fn judged_cpus_are_the_workers_when_all_are_pinned() {
        let j = JudgedCpus::from_sets([Some(vec![1]), Some(vec![0, 1])].into_iter(), vec![0, 1, 2]);
        assert_eq!(j, judged(&[0, 1], true));
        let j = JudgedCpus::from_sets([Some(vec![1]), None].into_iter(), vec![0, 1, 2]);
        assert_eq!(j, judged(&[0, 1, 2], false));
        let j = JudgedCpus::from_sets(std::iter::empty(), vec![0, 1]);
        assert_eq!(j, judged(&[0, 1], false));
    }
}
