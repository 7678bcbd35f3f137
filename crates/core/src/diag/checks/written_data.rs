//! Reads of ranges never written: holes and unwritten extents of a file,
//! zram pages never stored.

use std::os::fd::AsRawFd;

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::checklist::Check;
use crate::diag::env::TargetKind;
use crate::diag::findings::{human_bytes, Finding};
use crate::diag::sparse::{layout, unwritten_finding, zram_finding, ZramStat};

pub const CHECK: CheckDef = CheckDef {
    name: "written data",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    if ctx.target.kind == TargetKind::File {
        return Some(
            match std::fs::File::open(ctx.path).and_then(|f| layout(f.as_raw_fd(), 0, u64::MAX)) {
                Ok(l) => {
                    ctx.report.layout = Some(l);
                    Check::from_findings(
                        CHECK.name,
                        "no holes or unwritten extents",
                        unwritten_finding(&ctx.name, &l).into_iter().collect(),
                    )
                }
                Err(e) => Check::skip(CHECK.name, format!("could not read the layout: {e}")),
            },
        );
    }
    let dev = ctx.target.devices.first()?.name.clone();
    let z = ZramStat::read(&dev)?;
    ctx.report.zram = Some(z);
    Some(Check::from_findings(
        CHECK.name,
        format!("zram holds {} of data", human_bytes(z.orig_data_size)),
        zram_finding(&dev, &z, ctx.size).into_iter().collect(),
    ))
}

/// The hooks examined what each group's jobs read before its first trial.
fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    ctx.hooks
        .layout_findings
        .iter()
        .filter(|f| {
            matches!(
                f,
                Finding::ReadsOfUnwrittenRegions(_) | Finding::ZramNeverWritten(_)
            )
        })
        .cloned()
        .collect()
}
