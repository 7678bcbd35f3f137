//! Write amplification: the device wrote more than the jobs did (after a
//! run; the computation is `diag::amplification`'s).

use super::{CheckDef, RunCtx};
use crate::diag::amplification::{amplification, findings};
use crate::diag::findings::Finding;

pub const CHECK: CheckDef = CheckDef {
    name: "write amplification",
    doctor: None,
    after_run: Some(after_run),
};

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    let a = amplification(ctx.result, &ctx.hooks.trials);
    let fs = ctx
        .hooks
        .environment
        .targets
        .iter()
        .find_map(|t| t.fs.as_ref().map(|f| f.fs_type.as_str()));
    let syncs = ctx.result.jobs.iter().any(|j| {
        let s = &j.resolved.spec;
        s.fsync > 0 || s.fdatasync > 0 || s.open_sync != 0
    });
    findings(&a, fs, syncs)
}
