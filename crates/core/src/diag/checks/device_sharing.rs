//! Other I/O on the devices that hold the targets: during the trials, or
//! (doctor) in a short sample with no workload of ours.

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::checklist::Check;
use crate::diag::device::resolve;
use crate::diag::findings::Finding;
use crate::diag::hooks::TrialRecord;
use crate::diag::sharing::{job_bytes, other_device_io, sample_device_io, OurBytes, DOCTOR_SAMPLE};

pub const CHECK: CheckDef = CheckDef {
    name: "device sharing",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

/// The bytes the group's jobs read and wrote in the trial; `None` when a
/// job does buffered I/O (see [`crate::diag::sharing::job_bytes`]).
pub(super) fn ours(ctx: &RunCtx, rec: &TrialRecord) -> Option<OurBytes> {
    job_bytes(ctx.result, rec)
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
