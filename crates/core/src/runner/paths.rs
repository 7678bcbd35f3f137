//! The names a job's files go by: the paths each clone uses (`filename`
//! lists, `directory`, fio's generated `jobname.clone.file` names), the
//! replayed log's files, and every path a run may create or read, for the
//! checks that run before anything is opened.

use super::iolog;
use super::result::SetupError;
use crate::engines::caps;
use crate::job::{JobSpec, Plan};
use std::path::{Path, PathBuf};

/// The scratch file of the default job, in the current directory.
pub(super) fn default_scratch_path() -> PathBuf {
    PathBuf::from(format!("dioscope-scratch.{}.dat", std::process::id()))
}

pub(super) fn job_err(j: &JobSpec, msg: impl Into<String>) -> SetupError {
    SetupError::Job {
        job: j.name.clone(),
        msg: msg.into(),
    }
}

/// Every path the jobs of `plan` use as a target (for checks that must run
/// before anything is opened, such as `--output`).
pub fn target_paths(plan: &Plan) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for j in &plan.jobs {
        if !caps(j.ioengine).real_io {
            continue;
        }
        for c in 0..j.numjobs {
            out.extend(job_paths(j, c, plan.is_default_job));
        }
    }
    out
}

/// Every file the run may create besides its targets, with the option that
/// makes it: the names of each option the table marks `Creates::Job`, so
/// the run command checks them all before the first I/O.
pub fn created_files(plan: &Plan) -> Vec<(&'static str, PathBuf)> {
    use crate::job::created::{Creates, Shape};
    let mut out: Vec<(&'static str, PathBuf)> = Vec::new();
    let mut first_worker = 1;
    for j in &plan.jobs {
        let trials = match plan.global.trials.unwrap_or(j.trials) {
            0 => plan.global.auto.max_trials,
            n => n,
        };
        let shape = Shape {
            first_worker,
            trials,
        };
        for def in crate::job::options::all() {
            if let Creates::Job(names) = def.creates {
                for p in names(j, &shape) {
                    if !out.iter().any(|(_, q)| *q == p) {
                        out.push((def.name, p));
                    }
                }
            }
        }
        first_worker += j.numjobs.max(1) as usize;
    }
    out
}

/// The files the run reads besides its targets: job files and includes,
/// and `read_iolog`'s logs. No file dioscope creates may replace one.
/// (`verify_state_load`'s states are dioscope's own, rewritten by
/// `verify_state_save` as fio does.)
pub fn input_paths(plan: &Plan) -> Vec<PathBuf> {
    let mut out = plan.inputs.clone();
    for j in &plan.jobs {
        if let Some(l) = &j.read_iolog {
            out.push(crate::osstr::path(l));
        }
    }
    out
}

/// The paths one clone of a job uses.
pub(super) fn job_paths(j: &JobSpec, clone: u32, default_job: bool) -> Vec<PathBuf> {
    if j.read_iolog.is_some() {
        // A replay uses the log's files (prepare reports a bad log).
        return replay_log(j).map(|l| l.files).unwrap_or_default();
    }
    // Names are text that may stand for any bytes (osstr).
    let dir = j.directory.as_deref().map(crate::osstr::path);
    let with_dir = |p: &str| match (&dir, Path::new(p).is_absolute()) {
        (Some(d), false) => d.join(crate::osstr::path(p)),
        _ => crate::osstr::path(p),
    };
    if !j.filenames.is_empty() {
        return j.filenames.iter().map(|f| with_dir(f)).collect();
    }
    if default_job {
        let p = default_scratch_path();
        return vec![with_dir(p.to_str().unwrap_or("dioscope-scratch.dat"))];
    }
    // fio's naming: filename_format, by default jobname.clone.file.
    (0..j.nrfiles.max(1))
        .map(|f| with_dir(&generated_name(j, clone, f)))
        .collect()
}

/// The job's `read_iolog`, loaded, with `replay_scale`, `replay_align`
/// and `replay_redirect` applied.
pub fn replay_log(j: &JobSpec) -> Result<iolog::IoLog, SetupError> {
    let path = j.read_iolog.as_deref().unwrap_or_default();
    let mut log = iolog::IoLog::load(Path::new(path)).map_err(|e| job_err(j, e.to_string()))?;
    log.adjust(
        j.replay_scale,
        j.replay_align,
        j.replay_redirect.as_deref().map(Path::new),
    );
    log.filter_and_pace(&j.replay_skip, j.replay_time_scale);
    Ok(log)
}

/// A generated file name: `filename_format` with `$jobname`, `$jobnum`
/// (the clone), `$filenum` and `$clientuid` (fio's client identity; here
/// the MPI rank, so ranks on one host get their own files) replaced.
pub(super) fn generated_name(j: &JobSpec, clone: u32, file: u32) -> String {
    let fmt = j
        .filename_format
        .as_deref()
        .unwrap_or("$jobname.$jobnum.$filenum");
    let uid = std::env::var("DIOSCOPE_RANK").unwrap_or_else(|_| "0".into());
    fmt.replace("$jobname", &j.name)
        .replace("$jobnum", &clone.to_string())
        .replace("$filenum", &file.to_string())
        .replace("$clientuid", &uid)
}
