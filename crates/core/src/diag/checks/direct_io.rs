//! O_DIRECT opens, and with which alignment (doctor only: a run fails
//! loudly when it cannot open its targets).

use std::os::unix::fs::OpenOptionsExt;

use super::{CheckDef, DoctorCtx};
use crate::diag::checklist::{Check, Status};

pub const CHECK: CheckDef = CheckDef {
    name: "direct I/O",
    doctor: Some(doctor),
    after_run: None,
};

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    let open = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(ctx.path);
    let t = &ctx.target;
    Some(match (open, t.dio_align) {
        // Not allowed to open it: nothing is known about direct I/O here.
        (Err(e), _) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            Check::skip(
                CHECK.name,
                format!(
                    "could not open {} to try O_DIRECT ({e}); run doctor as a user who may \
                     read it (or as root) to check",
                    ctx.name
                ),
            )
        }
        // EINVAL is how open(2) says the file system refuses O_DIRECT.
        (Err(e), _) if e.raw_os_error() == Some(libc::EINVAL) => Check {
            name: CHECK.name,
            status: Status::Fail,
            detail: format!(
                "opening {} with O_DIRECT failed ({e}): this file system does not \
                 support direct I/O; put the test file elsewhere",
                ctx.name
            ),
            findings: Vec::new(),
        },
        (Err(e), _) => Check {
            name: CHECK.name,
            status: Status::Fail,
            detail: format!("opening {} with O_DIRECT failed: {e}", ctx.name),
            findings: Vec::new(),
        },
        (Ok(_), Some((m, o))) if m > 0 => Check::from_findings(
            CHECK.name,
            format!("O_DIRECT works; alignment: memory {m} B, offsets and sizes {o} B (statx)"),
            Vec::new(),
        ),
        (Ok(_), _) => {
            let lbs = t.device.as_ref().and_then(|d| d.queue.logical_block_size);
            Check::from_findings(
                CHECK.name,
                match lbs {
                    Some(l) => format!(
                        "O_DIRECT works; the kernel does not report alignment, logical block \
                         size is {l} B"
                    ),
                    None => "O_DIRECT works; alignment unknown".to_string(),
                },
                Vec::new(),
            )
        }
    })
}
