//! Page-cache pages of a direct-I/O target: before, during and after each
//! trial, and those `invalidate=0` kept.

use super::{CheckDef, DoctorCtx, RunCtx};
use crate::diag::checklist::Check;
use crate::diag::env::TargetKind;
use crate::diag::findings::{
    merge_page_cache, BufferedReason, Finding, PageCacheKept, PageCacheOnTarget, Phase,
};
use crate::diag::fs::silent_buffering;
use crate::diag::pagecache::{self, resident, TrialPages};

pub const CHECK: CheckDef = CheckDef {
    name: "page cache",
    doctor: Some(doctor),
    after_run: Some(after_run),
};

fn in_memory(ctx: &DoctorCtx) -> bool {
    let kernel = ctx.report.environment.kernel.version_tuple();
    matches!(
        silent_buffering(ctx.path, kernel),
        Some(Finding::SilentlyBuffered(s)) if s.reason == BufferedReason::MemoryFilesystem
    )
}

fn doctor(ctx: &mut DoctorCtx) -> Option<Check> {
    Some(match resident(ctx.path, 0, None) {
        // On tmpfs the file *is* page cache; "really direct" already says so.
        Ok(_) if in_memory(ctx) => Check::skip(CHECK.name, "the file lives in the page cache"),
        Ok(res) => {
            ctx.report.page_cache = Some(res.clone());
            let f = (res.pages > 0).then(|| {
                Finding::from(PageCacheOnTarget {
                    target: ctx.name.clone(),
                    phase: Phase::Before,
                    trial: None,
                    pages: res.pages,
                    page_size: res.page_size,
                    dropped: false,
                    also_phases: Vec::new(),
                    trials: Vec::new(),
                    cause: crate::diag::hooks::target_cause(
                        ctx.path,
                        std::fs::File::open(ctx.path).ok().as_ref(),
                        ctx.target.kind == TargetKind::BlockDevice,
                    ),
                })
            });
            let detail = if ctx.target.kind == TargetKind::BlockDevice {
                // The kernel drops a block device's cache when its last
                // opener closes it, so pages here mean someone holds it open.
                format!(
                    "no pages of the target are cached ({}; a block device's cache only \
                     survives while someone holds it open)",
                    res.method
                )
            } else {
                format!("no pages of the target are cached ({})", res.method)
            };
            Check::from_findings(CHECK.name, detail, f.into_iter().collect())
        }
        Err(e) => Check::skip(CHECK.name, format!("could not count cached pages: {e}")),
    })
}

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    let mut each: Vec<PageCacheOnTarget> = Vec::new();
    // (target, most pages seen, page size) of targets run with invalidate=0.
    let mut kept: Vec<(String, u64, u64)> = Vec::new();
    for rec in &ctx.hooks.trials {
        for tp in &rec.page_cache {
            if tp.invalidate {
                each.extend(
                    pagecache::trial_findings(
                        &tp.target,
                        rec.trial as usize,
                        &tp.pages,
                        true,
                        tp.page_size,
                        &tp.cause,
                    )
                    .into_iter()
                    .filter_map(|f| match f {
                        Finding::PageCacheOnTarget(p) => Some(p),
                        _ => None,
                    }),
                );
            } else if tp.pages.max() > 0 {
                match kept.iter_mut().find(|k| k.0 == tp.target) {
                    Some(k) => k.1 = k.1.max(tp.pages.max()),
                    None => kept.push((tp.target.clone(), tp.pages.max(), tp.page_size)),
                }
            }
        }
    }
    // The same pages in several trials: one finding naming them all.
    let mut out: Vec<Finding> = merge_page_cache(each)
        .into_iter()
        .map(Finding::from)
        .collect();
    for (target, pages, page_size) in kept {
        let slowdown_pct = slowdown(ctx, &target);
        out.push(
            PageCacheKept {
                target,
                pages,
                page_size,
                slowdown_pct,
            }
            .into(),
        );
    }
    out
}

/// What the pages cost here, when some trials had them and some not.
fn slowdown(ctx: &RunCtx, target: &str) -> Option<f64> {
    ctx.sums.iter().find_map(|s| {
        let per: Vec<TrialPages> = s
            .trials
            .iter()
            .map(|t| {
                ctx.hooks
                    .record(s.phase, t.trial)
                    .and_then(|rec| rec.page_cache.iter().find(|p| p.target == target))
                    .map(|p| p.pages)
                    .unwrap_or_default()
            })
            .collect();
        let iops: Vec<f64> = s.trials.iter().map(|t| t.iops).collect();
        pagecache::slowdown_pct(&iops, &per)
    })
}
