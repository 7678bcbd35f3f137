//! Sharing the machine during a run: other I/O on the devices that hold the
//! targets, and other processes on the CPUs dioscope may run on. The trial
//! hooks record the counters ([`super::hooks::TrialRecord`]'s `devices`,
//! `io_procs` and `cpu`); these rules turn them into findings.

use super::device::{self, BlockDev, DevRole, DeviceReport};
use super::findings::{CpuContention, CpuProcess, Finding, IoProcess, OtherDeviceIo};
use super::hooks::TrialRecord;
use super::procs;
use crate::runner::RunResult;

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

/// Others' share of our CPUs, in % of one CPU, from which contention is
/// reported (a quarter of a CPU: less is housekeeping noise)…
const CONTENTION_MIN_OTHERS_PCT: f64 = 25.0;
/// …when our CPUs were also this busy, in % of their capacity: with an idle
/// CPU left, the scheduler runs our threads there and nobody waits.
const CONTENTION_MIN_BUSY_PCT: f64 = 90.0;

/// [`CpuContention`] when, in some trials, other processes used at least a
/// quarter of a CPU on the CPUs dioscope may run on and those CPUs were
/// saturated. The figures are the worst trial's; the processes named are
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
    use crate::diag::hooks::CpuShare;

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
}
