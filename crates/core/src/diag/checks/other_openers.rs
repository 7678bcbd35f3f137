//! Other processes holding the target open (the safety module's /proc scan).

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::checklist::Check;
use crate::diag::findings::{Finding, Opener, OtherOpeners};
use crate::diag::hooks::openers_of;
use crate::safety::openers::{scan_strict, Identity};

pub const CHECK: CheckDef = CheckDef {
    name: "other openers",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    let Some(id) = Identity::of(ctx.path) else {
        return Some(Check::skip(
            CHECK.name,
            format!("could not examine {} to recognise its openers", ctx.name),
        ));
    };
    let self_pid = std::process::id() as i32;
    let openers = match scan_strict(std::path::Path::new("/proc"), &id, self_pid) {
        Ok(o) => o,
        Err(u) => {
            // Some processes' descriptors are closed to us (another user's,
            // without root): those we could read may still name openers, but
            // "no other process has it open" cannot be said.
            let seen = openers_of(ctx.path);
            if seen.is_empty() {
                return Some(Check::skip(
                    CHECK.name,
                    format!(
                        "could not read every process's open files ({}: {}); run doctor \
                         as root to check",
                        u.what, u.error
                    ),
                ));
            }
            seen
        }
    };
    let findings = if openers.is_empty() {
        Vec::new()
    } else {
        vec![OtherOpeners {
            target: ctx.name.clone(),
            openers,
        }
        .into()]
    };
    Some(Check::from_findings(
        CHECK.name,
        "no other process has it open",
        findings,
    ))
}

/// Everyone seen before or after any trial, per target, each pid once
/// (writable if it ever was).
fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    let mut per_target: Vec<(String, Vec<Opener>)> = Vec::new();
    for rec in &ctx.hooks.trials {
        for o in &rec.openers {
            let i = match per_target.iter().position(|x| x.0 == o.target) {
                Some(i) => i,
                None => {
                    per_target.push((o.target.clone(), Vec::new()));
                    per_target.len() - 1
                }
            };
            let entry = &mut per_target[i].1;
            for p in o.before.iter().chain(&o.after) {
                match entry.iter_mut().find(|x| x.pid == p.pid) {
                    Some(x) => x.writable |= p.writable,
                    None => entry.push(p.clone()),
                }
            }
        }
    }
    per_target
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(target, mut openers)| {
            openers.sort_by_key(|o| o.pid);
            OtherOpeners { target, openers }.into()
        })
        .collect()
}
