//! Other I/O on the devices that hold the targets: during the trials, or
//! (doctor) in a short sample with no workload of ours.

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::checklist::Check;
use crate::diag::device::resolve;
use crate::diag::findings::Finding;
use crate::diag::hooks::TrialRecord;
use crate::diag::sharing::{other_device_io, sample_device_io, OurBytes, DOCTOR_SAMPLE};

pub const CHECK: CheckDef = CheckDef {
    name: "device sharing",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

/// The bytes the group's jobs read and wrote in the trial; `None` when a
/// job does buffered I/O (what reaches the device is then the kernel's
/// choice, not the job's).
pub(super) fn ours(ctx: &RunCtx, rec: &TrialRecord) -> Option<OurBytes> {
    let mut b = (0, 0);
    for j in ctx
        .result
        .jobs
        .iter()
        .filter(|j| j.resolved.phase == rec.group)
    {
        if !j.resolved.spec.direct {
            return None;
        }
        let t = j.trials.get(rec.trial.checked_sub(1)? as usize)?;
        b.0 += t.dirs[0].bytes;
        b.1 += t.dirs[1].bytes;
    }
    Some(b)
}

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    other_device_io(&ctx.hooks.trials, |rec| ours(ctx, rec))
}

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    let devs = resolve(ctx.path);
    if devs.is_empty() {
        return Some(Check::skip(CHECK.name, "no block device under the target"));
    }
    Some(Check::from_findings(
        CHECK.name,
        format!(
            "no other I/O on {} in a {} ms sample",
            devs[0].name,
            DOCTOR_SAMPLE.as_millis()
        ),
        sample_device_io(&devs, DOCTOR_SAMPLE),
    ))
}
