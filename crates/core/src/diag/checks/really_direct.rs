//! O_DIRECT that is silently buffered (btrfs with checksums, tmpfs, a loop
//! device without direct I/O).

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::checklist::Check;
use crate::diag::findings::Finding;
use crate::diag::fs::silent_buffering_checked;

pub const CHECK: CheckDef = CheckDef {
    name: "really direct",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    let kernel = ctx.report.environment.kernel.version_tuple();
    Some(match silent_buffering_checked(ctx.path, kernel) {
        Ok(f) => Check::from_findings(
            CHECK.name,
            "no page cache between O_DIRECT and the device",
            f.into_iter().collect(),
        ),
        Err(why) => Check::skip(
            CHECK.name,
            format!("{why}; run doctor as a user who may read it (or as root) to check"),
        ),
    })
}

/// The hooks examined the direct-I/O targets before the run, while they
/// all existed.
fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    ctx.hooks.target_findings.clone()
}
