//! Files in many physically separate pieces.

use std::os::fd::AsRawFd;

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::checklist::Check;
use crate::diag::env::TargetKind;
use crate::diag::findings::Finding;
use crate::diag::sparse::{fragmentation_finding, layout, DEFAULT_FRAGMENT_BS};

pub const CHECK: CheckDef = CheckDef {
    name: "fragmentation",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    if ctx.target.kind != TargetKind::File {
        return None;
    }
    let l = match ctx.report.layout {
        Some(l) => l,
        None => std::fs::File::open(ctx.path)
            .and_then(|f| layout(f.as_raw_fd(), 0, u64::MAX))
            .ok()?,
    };
    Some(match l.fragments {
        Some(fr) => Check::from_findings(
            CHECK.name,
            format!(
                "{fr} piece{} on disk ({} extent{})",
                if fr == 1 { "" } else { "s" },
                l.extents.unwrap_or(0),
                if l.extents == Some(1) { "" } else { "s" }
            ),
            fragmentation_finding(&ctx.name, &l, DEFAULT_FRAGMENT_BS)
                .into_iter()
                .collect(),
        ),
        None => Check::skip(CHECK.name, "the file system does not support FIEMAP"),
    })
}

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    ctx.hooks
        .layout_findings
        .iter()
        .filter(|f| matches!(f, Finding::FragmentedFile(_)))
        .cloned()
        .collect()
}
