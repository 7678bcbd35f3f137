//! Each job against its targets: direct=0, misaligned sizes and offsets,
//! hipri without poll queues (after a run only: doctor has no job).

use super::{CheckDef, RunCtx};
use crate::diag::findings::Finding;
use crate::diag::job::job_findings;

pub const CHECK: CheckDef = CheckDef {
    name: "job options",
    doctor: None,
    after_run: Some(after_run),
};

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    let env = &ctx.hooks.environment;
    let mut out = Vec::new();
    for j in &ctx.result.jobs {
        let mut seen = Vec::new();
        for f in j.resolved.clones.iter().flatten() {
            if seen.contains(&f.path) {
                continue;
            }
            seen.push(f.path.clone());
            if let Some(t) = env.targets.iter().find(|t| t.path == f.path) {
                out.extend(job_findings(&j.resolved.spec, t));
            }
        }
    }
    out
}
