//! Other I/O on the devices that hold the targets, during the trials.

use super::{CheckDef, RunCtx};
use crate::diag::findings::Finding;
use crate::diag::hooks::TrialRecord;
use crate::diag::sharing::{other_device_io, OurBytes};

pub const CHECK: CheckDef = CheckDef {
    name: "device sharing",
    doctor: None,
    after_run: Some(after_run),
};

/// The bytes the group's jobs read and wrote in the trial; `None` when a
/// job does buffered I/O (what reaches the device is then the kernel's
/// choice, not the job's).
fn ours(ctx: &RunCtx, rec: &TrialRecord) -> Option<OurBytes> {
    let mut b = (0, 0);
    for j in ctx
        .result
        .jobs
        .iter()
        .filter(|j| j.resolved.group == rec.group)
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
