//! exec: fio's engine that runs a program for the job's runtime (a
//! monitoring tool beside I/O jobs, or a load of its own). The first "I/O"
//! starts the program; each later one checks on it, 50 ms apart (the job's
//! thinktime, as fio sets it). When the job ends the program gets SIGTERM,
//! then SIGKILL after `grace_time` seconds. A program that cannot start, or
//! that exits with a failure status before the end, is the job's error.

use super::one_call::{OneAtATime, OneCall};
use super::{Caps, EngineDef, EngineOpts, EngineParams, IoDesc, SlotArena, WithEngine};
use dioscope_sys::clock::now_ns;
use std::io;
use std::os::fd::RawFd;
use std::process::{Child, Command, ExitStatus, Stdio};

pub struct Def;

impl EngineDef for Def {
    const NAMES: &'static [&'static str] = &["exec"];
    const HELP: &'static str = "no I/O: runs program= with arguments= (%r: runtime in seconds, %n: \
         job name) for the job's runtime, checking on it every 50 ms; SIGTERM at the end, SIGKILL \
         grace_time seconds later; its output goes to JOBNAME.stdout/.stderr (std_redirect=1); \
         a program that cannot start or exits non-zero fails the job";
    const OPTIONS: &'static [&'static str] = &["program", "arguments", "grace_time", "std_redirect"];
    const CAPS: Caps = Caps {
        sync: true,
        real_io: false,
        moves_data: false,
        work_only: true,
        ..Caps::BASE
    };

    fn check(p: &EngineParams) -> Result<(), String> {
        if p.program.is_none() {
            return Err("ioengine=exec needs program= (the program to run), for example \
                        program=/usr/bin/vmstat"
                .into());
        }
        Ok(())
    }

    fn pause_us(_: &EngineParams) -> Option<u64> {
        Some(50_000)
    }

    fn with<W: WithEngine>(
        arena: SlotArena,
        _: &[RawFd],
        opts: &EngineOpts,
        f: W,
    ) -> Result<(W::Out, Option<String>), super::EngineSetupError> {
        let mut e = OneAtATime::new(arena, Exec::new(opts));
        let out = f.run(&mut e);
        let note = e.inner_mut().finish();
        Ok((out, Some(note)))
    }
}

/// `arguments` with fio's `%r` (runtime, whole seconds) and `%n` (job
/// name), split at spaces as fio splits them (no quoting).
pub fn expand_arguments(args: &str, runtime_us: u64, name: &str) -> Vec<String> {
    args.replace("%r", &(runtime_us / 1_000_000).to_string())
        .replace("%n", name)
        .split(' ')
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where `std_redirect` sends the program's output: `JOB.stdout` and
/// `JOB.stderr` (job/created.rs checks these names before the run).
pub fn redirect_files(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    (
        format!("{name}.stdout").into(),
        format!("{name}.stderr").into(),
    )
}

/// One worker's program.
pub struct Exec {
    program: String,
    args: Vec<String>,
    /// JOBNAME.stdout / JOBNAME.stderr, or the program shares ours.
    redirect: Option<(String, String)>,
    grace_ns: u64,
    child: Option<Child>,
    started_ns: u64,
    /// How the program ended before the job did, if it did.
    exited: Option<ExitStatus>,
    /// Why it could not start.
    spawn_error: Option<String>,
}

impl Exec {
    pub fn new(opts: &EngineOpts) -> Exec {
        let p = &opts.job.params;
        let name = &opts.job.name;
        Exec {
            program: p.program.clone().unwrap_or_default(),
            args: p
                .arguments
                .as_deref()
                .map(|a| expand_arguments(a, opts.job.runtime_us, name))
                .unwrap_or_default(),
            redirect: p.std_redirect.then(|| {
                let (o, e) = redirect_files(name);
                (o.display().to_string(), e.display().to_string())
            }),
            grace_ns: p.grace_time_s as u64 * 1_000_000_000,
            child: None,
            started_ns: 0,
            exited: None,
            spawn_error: None,
        }
    }

    fn command_line(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn spawn(&mut self) -> Result<(), i32> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).stdin(Stdio::null());
        if let Some((out, err)) = &self.redirect {
            let open = |p: &str| {
                crate::outfile::open(
                    std::path::Path::new(p),
                    crate::outfile::Mode::Truncate,
                    &crate::outfile::Rules::new("std_redirect"),
                )
                .map_err(|e| std::io::Error::other(e.to_string()))
            };
            match (open(out), open(err)) {
                (Ok(o), Ok(e)) => {
                    cmd.stdout(o).stderr(e);
                }
                (Err(e), _) | (_, Err(e)) => {
                    self.spawn_error = Some(format!(
                        "exec: cannot create {out} or {err} for the program's output: {e}; \
                         run in a writable directory or set std_redirect=0"
                    ));
                    return Err(e.raw_os_error().unwrap_or(libc::EIO));
                }
            }
        }
        match cmd.spawn() {
            Ok(c) => {
                self.child = Some(c);
                self.started_ns = now_ns();
                Ok(())
            }
            Err(e) => {
                self.spawn_error = Some(format!(
                    "exec: cannot run '{}': {e}; check program= (a path, or a name on PATH)",
                    self.command_line()
                ));
                Err(e.raw_os_error().unwrap_or(libc::ENOENT))
            }
        }
    }

    /// One check on the program: 0 while it runs (or ran and succeeded),
    /// an errno once it could not start or failed.
    fn poll(&mut self) -> i32 {
        if self.spawn_error.is_some() {
            return libc::ECHILD;
        }
        if self.child.is_none() {
            return self.spawn().err().unwrap_or(0);
        }
        if self.exited.is_none() {
            if let Some(c) = &mut self.child {
                if let Ok(Some(st)) = c.try_wait() {
                    self.exited = Some(st);
                    if !st.success() {
                        // Reported once: the job stops here (unless
                        // continue_on_error), as after any failed I/O.
                        return libc::ECHILD;
                    }
                }
            }
        }
        0
    }

    /// End the program (SIGTERM, SIGKILL after the grace time) and say how
    /// it ended.
    fn finish(&mut self) -> String {
        let cmd = self.command_line();
        if let Some(e) = &self.spawn_error {
            return e.clone();
        }
        let Some(mut c) = self.child.take() else {
            return format!("exec: '{cmd}' did not start (the job ended first)");
        };
        if let Some(st) = self.exited {
            let _ = c.wait();
            return match st.code() {
                Some(0) => format!("exec: '{cmd}' exited with status 0 before the job ended"),
                Some(n) => format!("exec: '{cmd}' failed: it exited with status {n}"),
                None => format!("exec: '{cmd}' was killed by a signal ({st})"),
            };
        }
        let ran_s = (now_ns() - self.started_ns) as f64 / 1e9;
        let _ = dioscope_sys::proc::signal_process(c.id(), libc::SIGTERM);
        let deadline = now_ns() + self.grace_ns;
        loop {
            match c.try_wait() {
                Ok(Some(st)) => {
                    return format!(
                        "exec: '{cmd}' ran {ran_s:.1} s and ended at the job's end ({st})"
                    )
                }
                Ok(None) if now_ns() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => break,
            }
        }
        let _ = c.kill();
        let _ = c.wait();
        format!(
            "exec: '{cmd}' ran {ran_s:.1} s; it ignored SIGTERM for grace_time and was killed"
        )
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // A worker that panicked leaves no program behind.
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl OneCall for Exec {
    const MOVES_BYTES: bool = false;

    fn call(&mut self, _: &mut SlotArena, d: &IoDesc) -> io::Result<usize> {
        match self.poll() {
            0 => Ok(d.len as usize),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_expand_runtime_and_name() {
        assert_eq!(
            expand_arguments("-w  %r x%n", 5_500_000, "job1"),
            ["-w", "5", "xjob1"]
        );
    }
}
