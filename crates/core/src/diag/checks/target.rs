//! The target exists and is a file or a block device (doctor only: a run
//! refuses a missing target before it starts).

use std::os::fd::AsRawFd;

use super::{CheckDef, DoctorCtx};
use crate::diag::checklist::{Check, Status};
use crate::diag::env::TargetKind;
use crate::diag::findings::human_bytes;

pub const CHECK: CheckDef = CheckDef {
    name: "target",
    doctor: Some(doctor),
    after_run: None,
};

fn fail(ctx: &mut DoctorCtx, detail: String) -> Option<Check> {
    ctx.stop = true;
    Some(Check {
        name: CHECK.name,
        status: Status::Fail,
        detail,
        findings: Vec::new(),
    })
}

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    let name = ctx.name.clone();
    let kind = match ctx.target.kind {
        TargetKind::Missing => {
            return fail(
                ctx,
                format!("{name} does not exist; give an existing file or block device"),
            )
        }
        TargetKind::Other => {
            return fail(
                ctx,
                format!("{name} is neither a regular file nor a block device"),
            )
        }
        TargetKind::File => "regular file",
        TargetKind::BlockDevice => "block device",
    };
    let size = std::fs::File::open(ctx.path)
        .ok()
        .and_then(|f| crate::diag::pagecache::target_size(f.as_raw_fd()).ok());
    ctx.size = size.unwrap_or(0);
    let devs: Vec<&str> = ctx.target.devices.iter().map(|d| d.name.as_str()).collect();
    Some(Check::from_findings(
        CHECK.name,
        format!(
            "{kind}, {}{}",
            size.map(human_bytes)
                .unwrap_or_else(|| "size unknown".into()),
            if devs.is_empty() {
                ", no block device under it".to_string()
            } else {
                format!(", devices: {}", devs.join(" → "))
            }
        ),
        Vec::new(),
    ))
}
