//! The run pipeline, below every command that runs jobs (`run`, `compare
//! --run`, `sweep`, `recipe`, an MPI rank): check everything before touching
//! the system ([`check`]), prepare the targets (`runner::prepare`), run the
//! trials with the diagnosis hooks, build the typed result, and write it
//! ([`output`]). The commands decide only what to run and how to show it.

pub mod check;
mod hooks;
pub mod output;

pub use check::{check_created, validate, Formats};
pub use output::{
    add_raw_names, context_line, exit_code, interrupt_summary, report_errors, write_output,
};

use crate::console::eprint_err;
use crate::diag::{self, DiagHooks, RunDiagnosis};
use crate::job::Plan;
use crate::render;
use crate::results::RunDoc;
use crate::runner::{self, RunOptions, RunResult};
use hooks::{EtaNewline, StatusInterval};

/// A run that finished (completely or not): its result, diagnosed.
pub struct Finished {
    pub result: RunResult,
    pub diagnosis: RunDiagnosis,
    pub doc: RunDoc,
    /// Files this run created and would have removed, left to the caller
    /// by [`execute_keeping`] (sweep and compare --run lay out once).
    pub created: Vec<crate::targets::CreatedFile>,
    /// `--status-interval` with `--output=FILE`: the interim reports, to
    /// be written to the file before the final one (as fio). Empty when
    /// they were printed as they came (no `--output`).
    pub interim: String,
}

/// Lay out, run, diagnose and clean up. `Err` is the exit code when
/// nothing ran (bad job/target combination: 2; a stop signal during
/// layout: 128+N), the message already printed.
pub fn execute(plan: &Plan) -> Result<Finished, i32> {
    execute_keeping(plan, false)
}

/// [`execute`], but with `keep` the files the run created and would remove
/// (the default job's scratch file, `unlink=1`) stay for the next run and
/// are handed back in [`Finished::created`].
pub fn execute_keeping(plan: &Plan, keep: bool) -> Result<Finished, i32> {
    let (resolved, table) = prepare(plan).map_err(|(msg, code)| {
        eprint_err(&msg);
        code
    })?;
    run_prepared(plan, resolved, table, keep, &mut runner::NoHooks)
}

/// Stage one (`runner::prepare`); `Err` is the message and the exit code.
pub fn prepare(
    plan: &Plan,
) -> Result<(Vec<runner::ResolvedJob>, crate::targets::TargetTable), (String, i32)> {
    check_created(plan).map_err(|e| (e, 2))?;
    // Laying out files and the profile's post-processing say how far they
    // are as the trials' live line does: per --eta.
    crate::console::set_progress(match plan.global.eta {
        crate::job::spec::Eta::Always => Some(true),
        crate::job::spec::Eta::Never => Some(false),
        crate::job::spec::Eta::Auto => None,
    });
    runner::prepare(plan).map_err(|e| {
        // A stop signal during layout: nothing ran, so there is no result
        // to write; the exit status says which signal ended it.
        let sig = dioscope_sys::signal::last_signal();
        let code = if dioscope_sys::signal::stop_count() > 0 && sig > 0 {
            128 + sig
        } else {
            2
        };
        (e.to_string(), code)
    })
}

/// Run prepared jobs with the diagnosis hooks and `extra` (a distributed
/// run's agreement points), diagnose, clean up (unless `keep`), build the result.
pub fn run_prepared(
    plan: &Plan,
    resolved: Vec<runner::ResolvedJob>,
    table: crate::targets::TargetTable,
    keep: bool,
    extra: &mut dyn runner::TrialHooks,
) -> Result<Finished, i32> {
    let opts = RunOptions {
        progress: plan.global.eta.shows(dioscope_sys::proc::stderr_is_tty()),
        destroy_data_on: plan.global.destroy_data_on.clone(),
        auto: plan.global.auto.clone(),
    };
    let mut hooks = DiagHooks::new(&table);
    let mut newline = EtaNewline {
        every_s: plan.global.eta_newline_s.filter(|_| opts.progress),
        seconds: 0,
    };
    let mut status = StatusInterval::new(plan);
    let extra: &mut dyn runner::TrialHooks = &mut runner::Chain(&mut newline, extra);
    let extra: &mut dyn runner::TrialHooks = &mut runner::Chain(&mut status, extra);
    let mut profiler = plan.global.profile.then(crate::profile::Profiler::new);
    // --stages: bpftrace beside the run, its window marked by the hooks.
    let mut tracer = plan
        .global
        .stages
        .then(|| crate::stages::StageTracer::new(plan.global.stages_sample));
    let mut no_tracer = runner::NoHooks;
    let traced: &mut dyn runner::TrialHooks = match tracer.as_mut() {
        Some(t) => t,
        None => &mut no_tracer,
    };
    let extra: &mut dyn runner::TrialHooks = &mut runner::Chain(traced, extra);
    let result = match profiler.as_mut() {
        Some(p) => runner::execute(
            resolved,
            &table,
            &opts,
            &mut runner::Chain(&mut p.hooks(&mut hooks), extra),
        ),
        None => runner::execute(
            resolved,
            &table,
            &opts,
            &mut runner::Chain(&mut hooks, extra),
        ),
    };
    let interim = std::mem::take(&mut status.kept);
    let profile = profiler.map(|p| p.finish(&result));
    let mut diagnosis = diag::diagnose(&result, &hooks);

    // Remove what this run created when asked (the default job's scratch
    // file always). Files dioscope did not create are never removed.
    // A worker that could not start before anything ran: a setup error like
    // those of `prepare`, and what layout created goes too.
    let setup_failed = result.setup_error.is_some() && result.nothing_ran();
    let remove = plan.is_default_job
        || plan.jobs.iter().any(|j| j.unlink || j.unlink_each_loop)
        || setup_failed;
    let created = table.created_files();
    drop(table);
    let mut left = Vec::new();
    if remove && keep {
        left = created;
    } else if remove {
        for c in &created {
            c.remove();
        }
    }
    if let (true, Some(e)) = (setup_failed, &result.setup_error) {
        eprint_err(&format!("{e}; nothing was run"));
        return Err(2);
    }
    let mut doc = render::build::run_doc(&result, &diagnosis, context_line(plan, &diagnosis));
    if !plan.global_options.is_empty() {
        doc.global_options = Some(plan.global_options.iter().cloned().collect());
    }
    let stages = tracer.map(|t| t.finish(&doc));
    if let Some(d) = doc.dioscope.as_mut() {
        d.profile = profile;
        if let Some(s) = stages {
            attach_stages(d, &mut diagnosis, s);
        }
        d.command_line = std::env::args_os()
            .map(|a| crate::osstr::escape(&a))
            .collect();
    }
    Ok(Finished {
        result,
        diagnosis,
        doc,
        created: left,
        interim,
    })
}

/// `--stages`' result into the document: its findings, its tagged bytes
/// beside the device counters' amplification, its section.
fn attach_stages(
    d: &mut crate::results::model::Dioscope,
    diagnosis: &mut diag::RunDiagnosis,
    s: crate::stages::StagesResult,
) {
    diag::stage_findings::apply(diagnosis, &s);
    diagnosis.fill_findings(d);
    if let Some(a) = d.amplification.as_mut() {
        a.add_tagged(&s.trial_bytes);
    }
    if let Ok(v) = serde_json::to_value(s) {
        let _ = d.set_section(crate::results::stages::KEY, v);
    }
}
