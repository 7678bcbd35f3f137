//! Who limits the CPU: other processes on the CPUs dioscope may run on
//! (contention), dioscope's own code (tool bottleneck) or the kernel's I/O
//! path on the worker's CPU.

use super::{CheckDef, RunCtx};
use crate::diag::consistency::cpu_bound;
use crate::diag::findings::Finding;
use crate::diag::sharing::cpu_contention;
use crate::engines::caps;

pub const CHECK: CheckDef = CheckDef {
    name: "CPU",
    doctor: None,
    after_run: Some(after_run),
};

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    let mut out: Vec<Finding> = cpu_contention(&ctx.hooks.trials).into_iter().collect();
    for s in ctx.sums {
        // A null engine does no I/O: its CPU is all dioscope's by design.
        let real_io = s
            .jobs
            .iter()
            .any(|&i| caps(ctx.result.jobs[i].resolved.spec.ioengine).real_io);
        if real_io {
            out.extend(cpu_bound(
                &s.name,
                s.max_worker_cpu,
                s.thread_cpu.user_us,
                s.thread_cpu.sys_us,
            ));
        }
    }
    out
}
