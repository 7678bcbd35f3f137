//! The files a job makes besides its targets, and their names.
//!
//! Every option that makes a file (logs, iologs, verify states, a program's
//! output) carries [`Creates`] in the option table, and its names come from
//! the functions here, which the runner also uses to open them: so the run
//! checks each name (`outfile::check`) before the first I/O, and an option
//! added with the mark is covered by construction.

use super::spec::JobSpec;
use std::path::PathBuf;

/// Where a job sits in the run, which some names depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// fio's 1-based worker number of the job's first clone (logs are
    /// numbered 1..N over every job's clones).
    pub first_worker: usize,
    /// How many trials the run may make (trial 2 onwards adds `.tN`).
    pub trials: u32,
}

/// What an option makes besides the run's targets.
#[derive(Clone, Copy)]
pub enum Creates {
    /// Nothing.
    Nothing,
    /// Files named from the job: every name the run may create.
    Job(fn(&JobSpec, &Shape) -> Vec<PathBuf>),
    /// A file named by the option's value for the whole run (`--output`,
    /// `--report`, `--profile`'s working folder), checked by the run
    /// command itself.
    Run,
    /// Names known only when made (`verify_dump`'s `FILE.OFFSET.received`):
    /// each is checked as it is opened, by `outfile::open`.
    Dynamic,
}

impl Creates {
    pub fn is_nothing(&self) -> bool {
        matches!(self, Creates::Nothing)
    }
}

/// fio's name of a log: `PREFIX_KIND.N.log` per job (`per_job_logs=1`), or
/// `PREFIX_KIND.log` shared; dioscope's later trials add `.tT` before
/// `.log` (`trial` is 0-based).
pub fn log_file(j: &JobSpec, prefix: &str, kind: &str, worker: usize, trial: u32) -> String {
    let t = if trial > 0 {
        format!(".t{}", trial + 1)
    } else {
        String::new()
    };
    if j.per_job_logs {
        format!("{prefix}_{kind}.{worker}{t}.log")
    } else {
        format!("{prefix}_{kind}{t}.log")
    }
}

/// Every name of the logs of `kinds` under `prefix` for the job.
fn logs(j: &JobSpec, s: &Shape, prefix: Option<&String>, kinds: &[&str]) -> Vec<PathBuf> {
    let Some(prefix) = prefix else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for trial in 0..s.trials.max(1) {
        for c in 0..j.numjobs.max(1) as usize {
            for k in kinds {
                out.push(PathBuf::from(log_file(
                    j,
                    prefix,
                    k,
                    s.first_worker + c,
                    trial,
                )));
            }
        }
    }
    out.dedup();
    out
}

pub fn bw_logs(j: &JobSpec, s: &Shape) -> Vec<PathBuf> {
    logs(j, s, j.write_bw_log.as_ref(), &["bw"])
}

pub fn iops_logs(j: &JobSpec, s: &Shape) -> Vec<PathBuf> {
    logs(j, s, j.write_iops_log.as_ref(), &["iops"])
}

pub fn lat_logs(j: &JobSpec, s: &Shape) -> Vec<PathBuf> {
    logs(j, s, j.write_lat_log.as_ref(), &["slat", "clat", "lat"])
}

pub fn hist_logs(j: &JobSpec, s: &Shape) -> Vec<PathBuf> {
    logs(j, s, j.write_hist_log.as_ref(), &["clat_hist"])
}

/// `write_iolog=P`: clone 0 records to `P`, clone N to `P.N`.
pub fn iolog_file(p: &str, clone: u32) -> PathBuf {
    if clone == 0 {
        PathBuf::from(p)
    } else {
        PathBuf::from(format!("{p}.{clone}"))
    }
}

pub fn iologs(j: &JobSpec, _: &Shape) -> Vec<PathBuf> {
    match &j.write_iolog {
        Some(p) => (0..j.numjobs.max(1)).map(|c| iolog_file(p, c)).collect(),
        None => Vec::new(),
    }
}

/// `verify_state_save`: where clone `clone`'s written blocks are recorded
/// when the run stops before its read-back.
pub fn state_file(j: &JobSpec, clone: usize) -> PathBuf {
    PathBuf::from(format!("local-{}-{clone}-verify.state", j.name))
}

pub fn state_files(j: &JobSpec, _: &Shape) -> Vec<PathBuf> {
    if !j.verify_state_save || j.verify.is_none() {
        return Vec::new();
    }
    (0..j.numjobs.max(1) as usize)
        .map(|c| state_file(j, c))
        .collect()
}

/// `exec_prerun` / `exec_postrun`: the command's output, `JOB.prerun.txt`
/// and `JOB.postrun.txt` (fio's names).
pub fn exec_output(j: &JobSpec, what: &str) -> PathBuf {
    PathBuf::from(format!("{}.{what}.txt", j.name))
}

pub fn prerun_output(j: &JobSpec, _: &Shape) -> Vec<PathBuf> {
    j.exec_prerun
        .as_ref()
        .map(|_| vec![exec_output(j, "prerun")])
        .unwrap_or_default()
}

pub fn postrun_output(j: &JobSpec, _: &Shape) -> Vec<PathBuf> {
    j.exec_postrun
        .as_ref()
        .map(|_| vec![exec_output(j, "postrun")])
        .unwrap_or_default()
}

/// The exec engine's `std_redirect`: the program's output in
/// `JOB.stdout` and `JOB.stderr`.
pub fn redirects(j: &JobSpec, _: &Shape) -> Vec<PathBuf> {
    // An engine that takes std_redirect (exec) runs a program.
    if !j.ioengine.options().contains(&"std_redirect") || !j.engine_params.std_redirect {
        return Vec::new();
    }
    let (o, e) = crate::engines::exec::redirect_files(&j.name);
    vec![o, e]
}

/// e4defrag's `donorname`: the donor file (in `directory=` when relative).
pub fn donor_file(j: &JobSpec) -> Option<PathBuf> {
    if !j.ioengine.options().contains(&"donorname") {
        return None;
    }
    let name = PathBuf::from(j.engine_params.donorname.as_deref()?);
    Some(match &j.directory {
        Some(d) if name.is_relative() => PathBuf::from(d).join(name),
        _ => name,
    })
}

pub fn donor(j: &JobSpec, _: &Shape) -> Vec<PathBuf> {
    donor_file(j).into_iter().collect()
}
