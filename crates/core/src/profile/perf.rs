//! Finding `perf`, deciding what it may record, and driving one
//! `perf record` per trial through its control pipe.
//!
//! perf starts before the trial's workers exist, with its events disabled
//! (`-D -1`), and listens for commands on its standard input
//! (`--control=fd:0,1`; it answers `ack` on its standard output). The runner's
//! thread sends `enable` when the measured window opens and `disable` when it
//! closes, then `stop`. Nothing of this touches a worker: the workers never
//! know perf is there.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The sampling period of the `cpu-clock` event: one sample per 250 µs of
/// CPU time (4 kHz per CPU). At a few hundred thousand I/Os a second that is
/// one sample per ~100 I/Os; a 3 s trial gives ~10⁴ samples per busy CPU,
/// so a function worth 1 % of the time is known to about ±10 %.
pub const PERIOD_NS: u64 = 250_000;

/// What perf may see, from who we are and `kernel.perf_event_paranoid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every CPU (`-a`): our threads and the kernel threads (kworkers,
    /// ksoftirqd, irq threads) that do work for them. Root, CAP_PERFMON or
    /// paranoid ≤ 0.
    SystemWide,
    /// Our process only (`-p`), kernel code included: paranoid = 1.
    Process,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::SystemWide => "system-wide",
            Scope::Process => "process",
        }
    }
}

/// Why there is no profile, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub message: String,
    pub fix: String,
}

/// The perf binary that will be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfTool {
    pub path: PathBuf,
    pub version: String,
}

/// `perf` on `PATH`, and its version. perf's version need not match the
/// kernel's (Debian ships one perf for all kernels): the events and options
/// used here exist in every perf since 5.10.
pub fn find() -> Result<PerfTool, Unavailable> {
    let path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("perf"))
                .find(|c| is_executable(c))
        })
        .unwrap_or(None);
    let Some(path) = path else {
        return Err(Unavailable {
            message: "perf is not installed (no `perf` on PATH)".into(),
            fix: "install it: `apt-get install linux-perf` (Debian), `dnf install perf` (Fedora), `apt-get install linux-tools-generic` (Ubuntu)".into(),
        });
    };
    let out = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let v = String::from_utf8_lossy(&o.stdout);
            let version = v
                .trim()
                .strip_prefix("perf version ")
                .unwrap_or(v.trim())
                .to_string();
            Ok(PerfTool { path, version })
        }
        Ok(o) => Err(Unavailable {
            message: format!(
                "{} --version failed: {}",
                path.display(),
                last_lines(&String::from_utf8_lossy(&o.stderr), 2)
            ),
            fix: "install a working perf: `apt-get install linux-perf` (Debian); a wrapper that wants a perf for this exact kernel needs that package or the real binary on PATH".into(),
        }),
        Err(e) => Err(Unavailable {
            message: format!("cannot run {}: {e}", path.display()),
            fix: "install a working perf: `apt-get install linux-perf` (Debian)".into(),
        }),
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Whether this process may profile the kernel, and how widely.
/// `privileged`: root, or CAP_PERFMON / CAP_SYS_ADMIN in effect.
pub fn scope(privileged: bool, paranoid: Option<i32>) -> Result<Scope, Unavailable> {
    if privileged {
        return Ok(Scope::SystemWide);
    }
    match paranoid {
        Some(p) if p <= 0 => Ok(Scope::SystemWide),
        Some(1) => Ok(Scope::Process),
        Some(p) => Err(Unavailable {
            message: format!(
                "not permitted: kernel.perf_event_paranoid is {p}, which keeps users other than root from profiling kernel code"
            ),
            fix: "run as root, or allow it: `sudo sysctl kernel.perf_event_paranoid=1` (your own processes, kernel included) or `=0` (system-wide, kernel threads too)".into(),
        }),
        None => Err(Unavailable {
            message: "not permitted: /proc/sys/kernel/perf_event_paranoid is missing (a kernel without perf events?)".into(),
            fix: "use a kernel built with CONFIG_PERF_EVENTS, or run as root".into(),
        }),
    }
}

/// Whether we run as root or hold CAP_PERFMON (38) or CAP_SYS_ADMIN (21).
pub fn privileged() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim().to_string())
    };
    let euid_root = field("Uid:")
        .and_then(|v| v.split_whitespace().nth(1).map(|u| u == "0"))
        .unwrap_or(false);
    let caps = field("CapEff:")
        .and_then(|v| u64::from_str_radix(&v, 16).ok())
        .unwrap_or(0);
    euid_root || caps & (1 << 38) != 0 || caps & (1 << 21) != 0
}

pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// The last `n` non-empty lines of perf's messages, for an error.
pub fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Events ") && !l.starts_with("[ perf record"))
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// One `perf record` for one trial.
pub struct Recorder {
    child: Child,
    ctl: Option<ChildStdin>,
    acks: Receiver<String>,
    pub data: PathBuf,
    err: PathBuf,
}

/// How long perf may take to start (it reads every process's maps when
/// recording system-wide) and to answer a command.
const START_TIMEOUT: Duration = Duration::from_secs(20);
const ACK_TIMEOUT: Duration = Duration::from_secs(5);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// After a stop signal: how long perf may take to answer or to end.
const STOP_GRACE: Duration = Duration::from_millis(300);
/// How often a wait looks for a stop signal.
const POLL: Duration = Duration::from_millis(20);
/// How long perf has after SIGTERM, then after SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(200);
const KILL_GRACE: Duration = Duration::from_millis(500);

impl Recorder {
    /// Start perf with its events disabled, and wait until it answers.
    /// perf's messages go to a new file of the private folder `dir` (never
    /// through a link planted there); perf writes its recording beside it.
    pub fn start(
        tool: &PerfTool,
        scope: Scope,
        dir: &mut crate::outfile::private::PrivateDir,
        tag: &str,
    ) -> Result<Self, String> {
        let data = dir.path().join(format!("{tag}.data"));
        let err = dir.path().join(format!("{tag}.err"));
        let errf = dir
            .create_file(&format!("{tag}.err"))
            .map_err(|e| format!("{}: {e}", err.display()))?;
        let mut c = Command::new(&tool.path);
        c.arg("record")
            .args(["-e", &format!("cpu-clock/period={PERIOD_NS}/")])
            // cpu-clock alone: with a cpu-migrations event beside it, perf
            // 6.1 on kernel 6.18 recorded samples of event ids it never
            // opened while another perf session ran, and `perf script` gave
            // up on them ("failed to process type: 9 [Bad address]").
            .arg("-g")
            .args(["-D", "-1", "--control=fd:0,1"])
            // No build-id post-processing: perf stops at once.
            .args(["-B", "-N"])
            .arg("-o")
            .arg(&data);
        match scope {
            Scope::SystemWide => c.arg("-a"),
            Scope::Process => c.args(["-p", &std::process::id().to_string()]),
        };
        // A group of its own: a Ctrl-C reaches dioscope, which ends the
        // trial and stops perf in order. If dioscope dies, perf's control
        // pipe closes and perf exits.
        let mut child = c
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(errf)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", tool.path.display()))?;
        let out = child.stdout.take().expect("piped stdout");
        let (tx, acks) = std::sync::mpsc::channel();
        // perf answers on its stdout; a thread turns the answers into
        // messages so that every wait can time out.
        std::thread::Builder::new()
            .name("perf-ack".into())
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(l) = line else { break };
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let ctl = child.stdin.take();
        let mut r = Recorder {
            child,
            ctl,
            acks,
            data,
            err,
        };
        if let Err(e) = r.command("ping", START_TIMEOUT) {
            r.kill();
            return Err(e);
        }
        Ok(r)
    }

    /// Send a control command and wait for perf's `ack`.
    pub fn command(&mut self, cmd: &str, timeout: Duration) -> Result<(), String> {
        let sent = self.ctl.as_mut().map(|c| {
            c.write_all(format!("{cmd}\n").as_bytes())
                .and_then(|_| c.flush())
        });
        if !matches!(sent, Some(Ok(()))) {
            return Err(self.failure(&format!("perf stopped before '{cmd}'")));
        }
        let deadline = Instant::now() + timeout;
        let mut stopping: Option<Instant> = None;
        loop {
            // After a stop signal a healthy perf still answers at once; one
            // that does not gets STOP_GRACE, not the full timeout.
            if stopping.is_none() && dioscope_sys::signal::stop_count() > 0 {
                stopping = Some(Instant::now());
            }
            if stopping.is_some_and(|t| t.elapsed() >= STOP_GRACE) {
                return Err(self.failure(&format!(
                    "stopped by a signal while perf had not answered '{cmd}'"
                )));
            }
            let left = deadline.saturating_duration_since(Instant::now()).min(POLL);
            match self.acks.recv_timeout(left) {
                // perf writes "ack\n\0": the NUL starts the next line.
                Ok(l) if l.trim_matches(|c: char| c == '\0' || c.is_whitespace()) == "ack" => {
                    return Ok(())
                }
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => continue,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.failure(&format!(
                        "perf did not answer '{cmd}' within {} s",
                        timeout.as_secs()
                    )))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.failure(&format!("perf exited before answering '{cmd}'")))
                }
            }
        }
    }

    pub fn enable(&mut self) -> Result<(), String> {
        self.command("enable", ACK_TIMEOUT)
    }

    pub fn disable(&mut self) -> Result<(), String> {
        self.command("disable", ACK_TIMEOUT)
    }

    /// Stop perf and wait until it has written its data.
    pub fn stop(mut self) -> Result<PathBuf, String> {
        let stopped = self.command("stop", ACK_TIMEOUT).is_ok();
        if !stopped {
            // A perf without `stop` ends when its control pipe closes.
            self.ctl = None;
        }
        let mut deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if dioscope_sys::signal::stop_count() > 0 {
                deadline = deadline.min(Instant::now() + STOP_GRACE);
            }
            match self.child.try_wait() {
                Ok(Some(st)) if st.success() => return Ok(self.data.clone()),
                Ok(Some(st)) => return Err(self.failure(&format!("perf record failed ({st})"))),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    self.kill();
                    return Err(self.failure("perf record did not stop; killed it"));
                }
            }
        }
    }

    /// perf's own CPU time so far (its thread's run time), in µs.
    pub fn cpu_us(&self) -> Option<u64> {
        std::fs::read_to_string(format!("/proc/{}/schedstat", self.child.id()))
            .ok()?
            .split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
            .map(|ns| ns / 1000)
    }

    /// End perf and its process group: SIGTERM, then SIGKILL if it
    /// ignores that; a perf that outlives SIGKILL too is named and left.
    fn kill(&mut self) {
        let pid = self.child.id();
        let hint = self.path_hint();
        self.ctl = None;
        let gone = |c: &mut Child, within: Duration| {
            let t = Instant::now();
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => return true,
                    Ok(None) if t.elapsed() < within => std::thread::sleep(POLL / 4),
                    Ok(None) => return false,
                }
            }
        };
        let _ = dioscope_sys::dirfd::signal_group(pid, libc::SIGTERM);
        if gone(&mut self.child, TERM_GRACE) {
            let _ = dioscope_sys::dirfd::signal_group(pid, libc::SIGKILL);
            return;
        }
        let _ = dioscope_sys::dirfd::signal_group(pid, libc::SIGKILL);
        let _ = self.child.kill();
        if gone(&mut self.child, KILL_GRACE) {
            eprintln!("dioscope: warning: perf (pid {pid}, {hint}) ignored SIGTERM: killed");
        } else {
            eprintln!(
                "dioscope: warning: perf (pid {pid}, {hint}) is still there after SIGKILL \
                 (stuck in the kernel?): left running"
            );
        }
    }

    fn path_hint(&self) -> String {
        std::fs::read_link(format!("/proc/{}/exe", self.child.id()))
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "perf".into())
    }

    /// `what`, with the last of perf's own messages.
    fn failure(&self, what: &str) -> String {
        let msg = std::fs::read_to_string(&self.err).unwrap_or_default();
        let tail = last_lines(&msg, 3);
        if tail.is_empty() {
            what.to_string()
        } else {
            format!("{what}: {tail}")
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_follows_privilege_and_paranoia() {
        assert_eq!(scope(true, Some(3)), Ok(Scope::SystemWide));
        assert_eq!(scope(false, Some(-1)), Ok(Scope::SystemWide));
        assert_eq!(scope(false, Some(0)), Ok(Scope::SystemWide));
        assert_eq!(scope(false, Some(1)), Ok(Scope::Process));
        let e = scope(false, Some(2)).unwrap_err();
        assert!(e.message.contains("perf_event_paranoid is 2"), "{e:?}");
        assert!(
            e.fix.contains("sysctl kernel.perf_event_paranoid=1"),
            "{e:?}"
        );
        assert!(scope(false, Some(4)).is_err());
        assert!(scope(false, None).is_err());
    }

    #[test]
    fn last_lines_skip_perf_chatter() {
        let s = "Events disabled\n\nfoo\n[ perf record: Woken up 1 times ]\nbar\nbaz\n";
        assert_eq!(last_lines(s, 2), "bar / baz");
    }
}
