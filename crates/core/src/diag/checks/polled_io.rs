//! Poll queues for hipri=1 (after a run, a job that asked for hipri is
//! checked by "job options").

use super::{CheckDef, DoctorCtx};
use crate::diag::checklist::Check;
use crate::diag::findings::HipriWithoutPoll;

pub const CHECK: CheckDef = CheckDef {
    name: "polled I/O",
    doctor: Some(doctor),
    after_run: None,
};

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    let Some(d) = &ctx.target.device else {
        return Some(Check::skip(CHECK.name, "no block device"));
    };
    Some(match d.queue.io_poll {
        Some(true) => Check::from_findings(
            CHECK.name,
            format!("{} has poll queues: hipri=1 works", d.name),
            Vec::new(),
        ),
        Some(false) => Check::from_findings(
            CHECK.name,
            "",
            vec![HipriWithoutPoll {
                device: d.name.clone(),
                requested: false,
            }
            .into()],
        ),
        None => Check::skip(
            CHECK.name,
            format!("{} does not say (no queue/io_poll)", d.name),
        ),
    })
}
