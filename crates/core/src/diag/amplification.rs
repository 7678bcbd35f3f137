//! Write and read amplification of a finished run: each trial's device
//! counters (the ones the trial hooks already snapshot for the device
//! accounting, [`super::hooks::TrialRecord`]'s `devices`) against the bytes
//! the jobs transferred in that trial. The arithmetic and the JSON shape are
//! `results::amplification`'s; the finding is `write_amplification`.

use super::device::DeviceReport;
use super::findings::{human_bytes, Finding, WriteAmplification};
use super::hooks::TrialRecord;
use super::sharing::{beyond_ours, data_device, job_bytes, other_io};
use crate::results::amplification::{Amplification, DeviceBytes, TrialBytes};
use crate::runner::RunResult;

/// A write ratio above this is reported (`write_amplification`).
pub const WRITE_AMP_LIMIT: f64 = 1.1;

/// Why a trial's device bytes include other I/O, when `other_device_io`'s
/// rule holds for it.
fn other_reason(rec: &TrialRecord, ours: Option<(u64, u64)>) -> Option<String> {
    if !other_io(rec, ours) {
        return None;
    }
    let who: Vec<String> = rec
        .io_procs
        .iter()
        .take(3)
        .map(|p| {
            format!(
                "pid {} ({}, wrote {})",
                p.pid,
                p.comm,
                human_bytes(p.write_bytes)
            )
        })
        .collect();
    Some(if who.is_empty() {
        "includes other processes' I/O (other_device_io; no process holding the device open \
         did I/O: the kernel's writeback or the file system's own journal)"
            .to_string()
    } else {
        format!(
            "includes other processes' I/O (other_device_io: {})",
            who.join(", ")
        )
    })
}

/// A device the `other_device_io` rule does not watch (under a loop's
/// backing file, a parent disk, a component) that moved more than the jobs
/// beyond the same slack: shared with the rest of the system.
fn shared_device(d: &DeviceReport, ours: Option<(u64, u64)>) -> Option<String> {
    let (r, w) = ours?;
    if data_device(d)
        || !(beyond_ours(d.delta.read_sectors * 512, r)
            || beyond_ours(d.delta.write_sectors * 512, w))
    {
        return None;
    }
    Some(format!(
        "includes other processes' I/O ({} is shared with the rest of the system and moved \
         more than the jobs beyond the other_device_io slack)",
        d.device
    ))
}

/// The run's amplification from the trial records.
pub fn amplification(r: &RunResult, trials: &[TrialRecord]) -> Amplification {
    let input: Vec<TrialBytes> = trials
        .iter()
        .map(|rec| {
            let jobs = job_bytes(r, rec);
            TrialBytes {
                group: rec.group,
                trial: rec.trial,
                devices: rec
                    .devices
                    .iter()
                    .map(|d| DeviceBytes {
                        device: d.device.clone(),
                        role: d.role,
                        read: d.delta.read_sectors * 512,
                        write: d.delta.write_sectors * 512,
                        other_io: shared_device(d, jobs),
                    })
                    .collect(),
                jobs,
                other_io: other_reason(rec, jobs),
            }
        })
        .collect();
    Amplification::build(&input)
}

/// One `write_amplification` per device whose run write ratio exceeds
/// [`WRITE_AMP_LIMIT`].
pub fn findings(a: &Amplification, fs_type: Option<&str>, syncs: bool) -> Vec<Finding> {
    a.run
        .iter()
        .filter_map(|d| {
            let ratio = d.write.ratio.filter(|&x| x > WRITE_AMP_LIMIT)?;
            Some(
                WriteAmplification {
                    device: d.device.clone(),
                    role: d.role.as_str().to_string(),
                    ratio,
                    device_bytes: d.write.device_bytes,
                    job_bytes: d.write.job_bytes.unwrap_or(0),
                    fs_type: fs_type.map(str::to_string),
                    syncs,
                    qualified: d.qualified,
                }
                .into(),
            )
        })
        .collect()
}
