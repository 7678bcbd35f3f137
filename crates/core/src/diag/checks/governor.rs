//! The CPU frequency governor.

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::consistency::governor_finding;
use crate::diag::checklist::Check;
use crate::diag::findings::Finding;

pub const CHECK: CheckDef = CheckDef {
    name: "CPU governor",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    let cpu = &ctx.report.environment.cpu;
    Some(if cpu.governors.is_empty() {
        Check::skip(
            CHECK.name,
            "no cpufreq in this kernel (VM or fixed clock): nothing to set",
        )
    } else {
        Check::from_findings(
            CHECK.name,
            "performance on every CPU",
            governor_finding(cpu).into_iter().collect(),
        )
    })
}

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    governor_finding(&ctx.hooks.environment.cpu)
        .into_iter()
        .collect()
}
