//! `--stages`: where the latency of the run's I/Os goes, stage by stage,
//! from the kernel's `io_uring:` and `block:` tracepoints.
//!
//! Two backends run the same program: [`raw`] (a BPF program on raw
//! tracepoints, loaded through libbpf: the default wherever it loads and
//! attaches) and bpftrace (the program of [`script`] on the classic
//! tracepoints: the fallback). `DIOSCOPE_STAGES_BACKEND=raw|bpftrace`
//! forces one. The result says which ran (`backend`).
//!
//! How the pieces fit (the bpftrace backend; the raw one loads its
//! program at the same point, marks the window by writing its `on` map,
//! and reads its maps at the end):
//! - [`StageTracer::new`] checks what tracing needs (bpftrace on PATH,
//!   root, tracefs with the tracepoints); a missing piece is a message
//!   with the fix, and the run goes on without stages;
//! - at the first trial, [`script`] writes a bpftrace program for this
//!   process and the jobs' devices, and the tracer starts bpftrace once for
//!   the run and waits until its probes are attached;
//! - the measured window of each trial is marked by the run's own thread
//!   with `prctl(MARK, 1|0)` (`dioscope_sys::proc::trace_mark`): the
//!   program tags only requests submitted inside it. With no ramp the
//!   window opens before the workers start (`workers_ready`), so the first
//!   I/Os are not missed; with a ramp it opens when the runner ends the
//!   ramp (within a few I/Os of the workers' own boundary);
//! - [`StageTracer::finish`] stops bpftrace (SIGINT: it prints its maps
//!   once, as JSON) and [`parse`] turns the maps into a
//!   [`StagesResult`]. Aggregation is in the kernel's maps; nothing is
//!   read per event, and the workers' hot path is not touched.

pub mod parse;
pub mod raw;
pub mod script;

pub use crate::results::stages::StagesResult;
use crate::results::stages::TrialBios;

use crate::engines::Traced;
use crate::results::model::RunDoc;
use crate::runner::worker::delivery::DeliveryBoard;
use crate::runner::{ResolvedJob, TrialHooks};
use crate::stats::Histogram;
use crate::targets::TargetTable;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A missing capability: what is missing and how to get it.
#[derive(Debug, Clone)]
pub struct Unavailable {
    pub message: String,
    pub fix: String,
}

/// The tracepoints the program attaches to.
const TRACEPOINTS: &[&str] = &[
    "syscalls/sys_enter_prctl",
    "io_uring/io_uring_submit_req",
    "io_uring/io_uring_complete",
    "io_uring/io_uring_queue_async_work",
    "block/block_bio_queue",
    "block/block_rq_issue",
    "block/block_rq_complete",
    "block/block_bio_complete",
];

/// How long bpftrace may take to compile and attach.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(90);

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let p = std::env::var_os("PATH")?;
    std::env::split_paths(&p).map(|d| d.join(name)).find(|c| {
        std::fs::metadata(c).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// bpftrace, root and the tracepoints: what `--stages` needs before a run.
pub fn check() -> Result<PathBuf, Unavailable> {
    let Some(bpftrace) = on_path("bpftrace") else {
        return Err(Unavailable {
            message: "bpftrace is not installed (no `bpftrace` on PATH)".into(),
            fix: "install it: `apt-get install bpftrace` (Debian, Ubuntu), `dnf install bpftrace` \
                  (Fedora)"
                .into(),
        });
    };
    if !crate::profile::perf::privileged() {
        return Err(Unavailable {
            message: "tracing the kernel's tracepoints needs root (CAP_BPF and CAP_PERFMON)".into(),
            fix: "run dioscope as root (sudo)".into(),
        });
    }
    let events = Path::new("/sys/kernel/tracing/events");
    if !events.is_dir() {
        return Err(Unavailable {
            message: "tracefs is not mounted at /sys/kernel/tracing (bpftrace reads the \
                      tracepoints' formats there)"
                .into(),
            fix: "mount it: `mount -t tracefs nodev /sys/kernel/tracing`".into(),
        });
    }
    if let Some(t) = TRACEPOINTS.iter().find(|t| !events.join(t).is_dir()) {
        return Err(Unavailable {
            message: format!("this kernel has no tracepoint {t}"),
            fix: "use a kernel with io_uring, the block tracepoints and syscall tracepoints \
                  (CONFIG_IO_URING, CONFIG_BLK_DEV_IO_TRACE or CONFIG_TRACEPOINTS, \
                  CONFIG_FTRACE_SYSCALLS)"
                .into(),
        });
    }
    Ok(bpftrace)
}

/// Whether the tracer can count an io_uring run's requests and hand-offs
/// here: the raw-tracepoint program where it can load (no bpftrace or
/// tracefs needed), else bpftrace; why not, when neither can.
pub fn io_uring_tracing() -> Result<(), Unavailable> {
    match backends() {
        (true, _) => Ok(()),
        (false, state) => state.map(|_| ()),
    }
}

/// Which backends this process may use: whether the raw-tracepoint
/// program is wanted and can load, and bpftrace (its path) or why not.
fn backends() -> (bool, Result<PathBuf, Unavailable>) {
    let want = wanted();
    let usable = raw_check();
    let raw = want != Want::Bpftrace && usable.is_ok();
    let state = match (want, usable) {
        (Want::Raw, Err(u)) => Err(u),
        (Want::Raw, Ok(())) => Err(Unavailable {
            message: format!("{BACKEND_ENV}=raw: bpftrace is not used"),
            fix: format!("unset {BACKEND_ENV}"),
        }),
        _ => check(),
    };
    (raw, state)
}

/// A block device of the jobs: its name, the dev_t bios carry, the dev_t of
/// the disk requests go to, and whether it has a request queue.
#[derive(Debug, Clone, PartialEq)]
struct Device {
    name: String,
    bio_dev: (u32, u32),
    rq_dev: (u32, u32),
    request_based: bool,
}

fn split_dev(d: u64) -> (u32, u32) {
    let major = ((d >> 8) & 0xfff) | ((d >> 32) & !0xfff);
    let minor = (d & 0xff) | ((d >> 12) & !0xff);
    (major as u32, minor as u32)
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The block device under `path` (the device itself, or the one its file
/// system is on).
fn device_of(path: &Path) -> Option<Device> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path).ok()?;
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let (ma, mi) = split_dev(dev);
    let sys = PathBuf::from(format!("/sys/dev/block/{ma}:{mi}"));
    let name = std::fs::canonicalize(&sys)
        .ok()?
        .file_name()?
        .to_string_lossy()
        .into_owned();
    let disk = if sys.join("partition").exists() {
        sys.join("..")
    } else {
        sys.clone()
    };
    let rq_dev = std::fs::read_to_string(disk.join("dev"))
        .ok()
        .and_then(|s| parse_dev(&s))
        .unwrap_or((ma, mi));
    Some(Device {
        name,
        bio_dev: (ma, mi),
        rq_dev,
        request_based: disk.join("mq").is_dir(),
    })
}

/// The running bpftrace.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    devices: Vec<Device>,
    kind: Traced,
}

/// The running tracer: bpftrace, or the raw-tracepoint program.
enum Tracing {
    Bpftrace(Running),
    Raw(raw::Raw, Vec<Device>),
}

/// Which backend `DIOSCOPE_STAGES_BACKEND` asks for (unset or `auto`:
/// the raw one where it loads, else bpftrace).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Auto,
    Raw,
    Bpftrace,
}

/// The environment variable that forces a backend.
pub const BACKEND_ENV: &str = "DIOSCOPE_STAGES_BACKEND";

fn wanted() -> Want {
    match std::env::var(BACKEND_ENV).as_deref() {
        Ok("raw") | Ok("raw_tracepoint") => Want::Raw,
        Ok("bpftrace") => Want::Bpftrace,
        _ => Want::Auto,
    }
}

/// Whether the raw backend can be tried: built with its program, as root.
fn raw_check() -> Result<(), Unavailable> {
    if !raw::built() {
        return Err(Unavailable {
            message: "this dioscope was built without clang, so without the raw-tracepoint \
                      program"
                .into(),
            fix: "install clang and libbpf-dev (scripts/install-deps.sh) and rebuild, or \
                  install bpftrace"
                .into(),
        });
    }
    if !crate::profile::perf::privileged() {
        return Err(Unavailable {
            message: "tracing the kernel's tracepoints needs root (CAP_BPF and CAP_PERFMON)".into(),
            fix: "run dioscope as root (sudo)".into(),
        });
    }
    Ok(())
}

/// Runs bpftrace around the measured windows. Create with
/// [`StageTracer::new`], chain it into the run's hooks, then
/// [`StageTracer::finish`].
pub struct StageTracer {
    /// bpftrace, if that backend may run.
    state: Result<PathBuf, Unavailable>,
    /// Whether the raw backend is tried first.
    raw: bool,
    running: Option<Tracing>,
    /// Whether the current trial's window opened before the workers.
    early: bool,
    pcts: Vec<f64>,
    /// Whether the measured window of any trial was marked.
    marked: bool,
    /// One request in this many is followed through the stages.
    sample: u32,
    /// Raw backend: the byte counters as the current window opened, and
    /// each closed window's bytes.
    window_bytes: Option<(u32, u32, [u64; 4])>,
    trial_bytes: Vec<TrialBios>,
}

impl Default for StageTracer {
    fn default() -> Self {
        Self::new(DEFAULT_SAMPLE)
    }
}

/// One request in this many is followed through the stages unless
/// `--stages_sample` says otherwise: what a followed I/O costs (about 20
/// map operations) falls on an eighth of the I/Os, and a run of a few
/// seconds still follows thousands.
pub const DEFAULT_SAMPLE: u32 = 8;

impl StageTracer {
    /// Check the capabilities; a tracer without them traces nothing and
    /// says why once, on stderr, now. It follows one request in `sample`
    /// (0: [`DEFAULT_SAMPLE`]).
    pub fn new(sample: u32) -> StageTracer {
        let (raw, state) = backends();
        if let (false, Err(u)) = (raw, &state) {
            eprintln!(
                "dioscope: --stages: {}; {}. The run goes on without stages.",
                u.message, u.fix
            );
        }
        StageTracer {
            state,
            raw,
            running: None,
            early: false,
            pcts: Vec::new(),
            marked: false,
            sample: if sample == 0 { DEFAULT_SAMPLE } else { sample },
            window_bytes: None,
            trial_bytes: Vec::new(),
        }
    }

    /// Start the tracer for these jobs, once: the raw backend if it loads
    /// and attaches, else bpftrace; an error disables the tracer.
    fn start(&mut self, jobs: &[&ResolvedJob]) {
        if self.running.is_some() || (!self.raw && self.state.is_err()) {
            return;
        }
        match start(&self.state, self.raw, jobs, self.sample) {
            Ok(r) => {
                self.pcts = jobs
                    .first()
                    .map(|j| j.spec.percentile_list.clone())
                    .unwrap_or_default();
                self.running = Some(r);
            }
            Err(u) => {
                eprintln!(
                    "dioscope: --stages: {}; {}. The run goes on without stages.",
                    u.message, u.fix
                );
                self.state = Err(u);
            }
        }
    }

    /// Raw backend: the byte counters as trial (`g`, `t`)'s window opens
    /// (once: an early window is marked again at the measured start) or
    /// closes (that window's bytes, kept per trial).
    fn window_bytes(&mut self, g: u32, t: u32, open: bool) {
        let Some(Tracing::Raw(r, _)) = &self.running else {
            return;
        };
        if open && self.window_bytes.is_some() {
            return;
        }
        let Ok(now) = r.bytes() else {
            return;
        };
        if open {
            self.window_bytes = Some((g, t, now));
            return;
        }
        if let Some((g0, t0, b)) = self.window_bytes.take().filter(|w| (w.0, w.1) == (g, t)) {
            let d = |i: usize| now[i].wrapping_sub(b[i]);
            self.trial_bytes.push(TrialBios {
                group: g0,
                // Numbered from 1, as the result's trials.
                trial: t0 + 1,
                read_bytes: d(0),
                write_bytes: d(1),
                other_read_bytes: d(2),
                other_write_bytes: d(3),
            });
        }
    }

    fn mark(&mut self, on: bool) {
        match &self.running {
            Some(Tracing::Bpftrace(_)) => {
                dioscope_sys::proc::trace_mark(script::MARK, u64::from(on));
            }
            Some(Tracing::Raw(r, _)) => {
                if let Err(e) = r.mark(on) {
                    eprintln!("dioscope: --stages: marking the measured window failed: {e}");
                    return;
                }
            }
            None => return,
        }
        self.marked |= on;
    }

    /// Stop bpftrace and read its maps against the run's result.
    pub fn finish(mut self, doc: &RunDoc) -> StagesResult {
        let r = match self.running.take() {
            Some(Tracing::Raw(r, devices)) => {
                let maps = r.read();
                let delivered = r.board().histograms();
                drop(r);
                return match maps {
                    Ok(m) => {
                        let mut s =
                            build(&m, &devices, Traced::Uring, doc, &self, Some(&delivered));
                        s.backend = "raw_tracepoint".into();
                        s.trial_bytes = std::mem::take(&mut self.trial_bytes);
                        s
                    }
                    Err(e) => StagesResult {
                        status: "failed".into(),
                        backend: "raw_tracepoint".into(),
                        message: Some(format!("reading the BPF maps failed: {e}")),
                        fix: Some(format!("run with {BACKEND_ENV}=bpftrace")),
                        ..StagesResult::default()
                    },
                };
            }
            Some(Tracing::Bpftrace(r)) => Some(r),
            None => None,
        };
        let Some(mut r) = r else {
            let u = self.state.clone().err().unwrap_or(Unavailable {
                message: "no trial ran".into(),
                fix: "run at least one trial".into(),
            });
            return StagesResult {
                status: "unavailable".into(),
                message: Some(u.message),
                fix: Some(u.fix),
                ..StagesResult::default()
            };
        };
        let status = stop(&mut r.child);
        // Every line up to bpftrace's end of output (the reader ends there).
        let lines: Vec<String> =
            std::iter::from_fn(|| r.lines.recv_timeout(LINES_TIMEOUT).ok()).collect();
        let err = r
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let maps = parse::Maps::read(&lines);
        if !status.is_ok_and(|s| s.success()) && maps.get("@merge", "") == 0 && lines.len() < 3 {
            return failed(&err);
        }
        let mut s = build(&maps, &r.devices, r.kind, doc, &self, None);
        s.backend = "bpftrace".into();
        s
    }
}

impl Drop for StageTracer {
    fn drop(&mut self) {
        if let Some(Tracing::Bpftrace(r)) = self.running.as_mut() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

/// How long bpftrace may take to print its maps after SIGINT before it is
/// asked again, and how many times it is asked before it is killed.
const STOP_WAIT: Duration = Duration::from_secs(10);
const STOP_TRIES: u32 = 3;
/// How long the output reader may take to hand over a line.
const LINES_TIMEOUT: Duration = Duration::from_secs(5);

/// Stop bpftrace: SIGINT makes it print its maps and exit. bpftrace 0.17
/// sometimes misses a SIGINT and waits on (a run of `--stages` then hung
/// until a second one came), so it is asked again after [`STOP_WAIT`],
/// and killed after [`STOP_TRIES`] (its maps are then lost, and the result
/// says so).
fn stop(child: &mut Child) -> std::io::Result<std::process::ExitStatus> {
    for _ in 0..STOP_TRIES {
        let _ = dioscope_sys::proc::signal_process(child.id(), libc::SIGINT);
        let asked = std::time::Instant::now();
        while asked.elapsed() < STOP_WAIT {
            if let Some(st) = child.try_wait()? {
                return Ok(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    child.wait()
}

fn failed(stderr: &str) -> StagesResult {
    let why: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("ERROR") && !l.contains("RLIMIT_MEMLOCK"))
        .take(3)
        .collect();
    StagesResult {
        status: "failed".into(),
        message: Some(format!("bpftrace gave no maps: {}", why.join(" | "))),
        fix: Some(
            "check that bpftrace attaches here (`bpftrace -e 'tracepoint:io_uring:io_uring_complete { exit(); }'`) and that tracefs is mounted at /sys/kernel/tracing".into(),
        ),
        ..StagesResult::default()
    }
}

/// The one kind of I/O the jobs' engines make (the program follows one).
fn traced_kind(jobs: &[&ResolvedJob]) -> Result<Traced, Unavailable> {
    let mut kind = None;
    for j in jobs {
        let k = crate::engines::caps(j.spec.ioengine).traced;
        if k == Traced::No {
            return Err(Unavailable {
                message: format!(
                    "stages are measured for io_uring, libaio, psync, pvsync and pvsync2 I/O, \
                     not for ioengine={} (job {})",
                    j.spec.ioengine.as_str(),
                    j.spec.name
                ),
                fix: "run with --ioengine=io_uring (or libaio, psync)".into(),
            });
        }
        if kind.is_some_and(|o| o != k) {
            return Err(Unavailable {
                message: "the jobs use engines the tracer follows by different tracepoints".into(),
                fix: "trace one engine kind per run (io_uring, libaio, or one blocking call)"
                    .into(),
            });
        }
        kind = Some(k);
    }
    kind.ok_or_else(|| Unavailable {
        message: "no job to trace".into(),
        fix: "run at least one job".into(),
    })
}

/// The jobs' block devices and the program for them, started: the raw
/// backend first when `raw` and the I/O is io_uring's (the raw program
/// follows io_uring requests; libaio and the blocking calls go through
/// bpftrace), bpftrace (when `bpftrace` is usable) if it fails.
fn start(
    bpftrace: &Result<PathBuf, Unavailable>,
    raw: bool,
    jobs: &[&ResolvedJob],
    sample: u32,
) -> Result<Tracing, Unavailable> {
    let (target, devices) = target_of(jobs, sample)?;
    let kind = target.kind;
    let mut raw_err = None;
    if raw && kind == Traced::Uring {
        match raw::start(&target) {
            Ok(r) => return Ok(Tracing::Raw(r, devices)),
            Err(e) => raw_err = Some(e),
        }
    }
    let go = |b: &PathBuf| spawn(b, &script::generate(&target), devices, kind);
    match (bpftrace, raw_err) {
        (Ok(b), None) => go(b).map(Tracing::Bpftrace),
        (Ok(b), Some(e)) => {
            eprintln!("dioscope: --stages: the raw tracepoints did not load ({e}); using bpftrace");
            go(b).map(Tracing::Bpftrace)
        }
        (Err(u), None) if raw => Err(Unavailable {
            message: format!(
                "the raw-tracepoint program follows io_uring I/O only, and {}",
                u.message
            ),
            fix: format!("run with --ioengine=io_uring, or {}", u.fix),
        }),
        (Err(u), None) => Err(u.clone()),
        (Err(u), Some(e)) => Err(Unavailable {
            message: format!("the raw tracepoints did not load ({e}), and {}", u.message),
            fix: u.fix.clone(),
        }),
    }
}

/// What the program traces for these jobs, and their devices.
fn target_of(
    jobs: &[&ResolvedJob],
    sample: u32,
) -> Result<(script::Target, Vec<Device>), Unavailable> {
    let kind = traced_kind(jobs)?;
    let mut devices: Vec<Device> = Vec::new();
    for f in jobs.iter().flat_map(|j| j.clones.iter().flatten()) {
        if let Some(d) = device_of(&f.path).filter(|d| !devices.contains(d)) {
            devices.push(d);
        }
    }
    if devices.is_empty() {
        return Err(Unavailable {
            message: "no block device under the jobs' targets".into(),
            fix: "run on a block device or a file on one".into(),
        });
    }
    if devices.iter().any(|d| d.request_based) && devices.iter().any(|d| !d.request_based) {
        return Err(Unavailable {
            message: "the jobs use request-based and bio-based devices together".into(),
            fix: "trace one kind of device per run".into(),
        });
    }
    let k = |d: (u32, u32)| script::kdev(d.0, d.1);
    let pos_is_sector = jobs
        .iter()
        .flat_map(|j| j.clones.iter().flatten())
        .all(|f| {
            use std::os::unix::fs::FileTypeExt;
            let blk = std::fs::metadata(&f.path).is_ok_and(|m| m.file_type().is_block_device());
            blk && device_of(&f.path).is_some_and(|d| d.bio_dev == d.rq_dev)
        });
    let target = script::Target {
        tgid: std::process::id(),
        bio_devs: devices.iter().map(|d| k(d.bio_dev)).collect(),
        rq_devs: devices.iter().map(|d| k(d.rq_dev)).collect(),
        request_based: devices[0].request_based,
        sample,
        kind,
        pos_is_sector,
    };
    Ok((target, devices))
}

fn spawn(
    bpftrace: &Path,
    program: &str,
    devices: Vec<Device>,
    kind: Traced,
) -> Result<Running, Unavailable> {
    let failed = |m: String| Unavailable {
        message: m,
        fix: "check that bpftrace runs here: `bpftrace -e 'BEGIN { exit(); }'`".into(),
    };
    let mut child = Command::new(bpftrace)
        .args(["-f", "json", "-e", program])
        // Room for every histogram bucket (2 directions × 5 stages × up to
        // 16 per octave over the whole range) and the I/Os in flight; the
        // default, 4096, is near what a wide latency range fills.
        .env("BPFTRACE_MAP_KEYS_MAX", "16384")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("starting {} failed: {e}", bpftrace.display())))?;
    let (tx, lines) = mpsc::channel();
    let (ready_tx, ready) = mpsc::channel();
    let out = child.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if l.contains(script::READY) {
                let _ = ready_tx.send(());
            }
            let _ = tx.send(l);
        }
    });
    let mut err = child.stderr.take().expect("piped");
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut r = Running {
        child,
        lines,
        stderr: Some(stderr),
        devices,
        kind,
    };
    if ready.recv_timeout(ATTACH_TIMEOUT).is_err() {
        let _ = r.child.kill();
        let _ = r.child.wait();
        let e = r
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let f = failed(String::new());
        let why = failed_reason(&e);
        return Err(Unavailable {
            message: format!("bpftrace did not attach its probes: {why}"),
            fix: f.fix,
        });
    }
    Ok(r)
}

fn failed_reason(stderr: &str) -> String {
    match failed(stderr).message {
        Some(m) => m.trim_start_matches("bpftrace gave no maps: ").to_string(),
        None => String::new(),
    }
}

/// dioscope's I/Os, mean latency and bytes per direction (0 read, 1
/// write), over every job of the run (the mean weighted by I/Os).
fn dioscope_dir(doc: &RunDoc, dir: u8) -> (u64, f64, u64) {
    let mut n = 0u64;
    let mut sum = 0f64;
    let mut bytes = 0u64;
    for j in &doc.jobs {
        let d = if dir == 0 { &j.read } else { &j.write };
        n += d.total_ios;
        sum += d.lat_ns.mean * d.total_ios as f64;
        bytes += d.io_bytes;
    }
    (n, if n > 0 { sum / n as f64 } else { 0.0 }, bytes)
}

fn build(
    maps: &parse::Maps,
    devices: &[Device],
    kind: Traced,
    doc: &RunDoc,
    tr: &StageTracer,
    delivered: Option<&[Histogram; 2]>,
) -> StagesResult {
    let (pcts, marked, sample) = (&tr.pcts[..], tr.marked, tr.sample);
    let request_based = devices.first().is_some_and(|d| d.request_based);
    let directions = (0..2u8)
        .filter_map(|dir| {
            let (ios, mean, bytes) = dioscope_dir(doc, dir);
            let tagged = maps.tagged(dir);
            (ios > 0 || tagged > 0).then(|| {
                parse::direction(
                    maps,
                    &parse::DirInput {
                        dir,
                        request_based,
                        kind,
                        dioscope_ios: ios,
                        dioscope_lat_mean_ns: mean,
                        job_bytes: bytes,
                        pcts,
                        delivered: delivered.map(|h| &h[dir as usize]),
                    },
                )
            })
        })
        .collect();
    StagesResult {
        status: "measured".into(),
        backend: String::new(),
        message: (!marked).then(|| "no measured window was marked".to_string()),
        fix: None,
        window: "I/Os submitted in the measured part of each trial (after the ramp), every \
                 trial together; other I/O is bios other processes queued on the devices"
            .into(),
        devices: devices
            .iter()
            .map(|d| {
                format!(
                    "/dev/{} ({})",
                    d.name,
                    if d.request_based {
                        "request-based"
                    } else {
                        "bio-based"
                    }
                )
            })
            .collect(),
        sample_every: sample,
        merges: maps.get("@merge", ""),
        splits: maps.get("@split", ""),
        directions,
        trial_bytes: Vec::new(),
    }
}

impl TrialHooks for StageTracer {
    fn delivery_board(&self) -> Option<DeliveryBoard> {
        match &self.running {
            Some(Tracing::Raw(r, _)) => Some(r.board().clone()),
            _ => None,
        }
    }
    fn before_trial(&mut self, _g: u32, _t: u32, jobs: &[&ResolvedJob], _table: &TargetTable) {
        self.start(jobs);
        self.early = jobs.iter().all(|j| j.spec.ramp_time_us == 0);
    }
    fn workers_ready(&mut self, g: u32, t: u32) {
        if self.early {
            self.mark(true);
            self.window_bytes(g, t, true);
        }
    }
    fn measure_start(&mut self, g: u32, t: u32) {
        self.mark(true);
        self.window_bytes(g, t, true);
    }
    fn measure_end(&mut self, g: u32, t: u32, _ios: u64) {
        self.mark(false);
        self.window_bytes(g, t, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_numbers_split_as_the_kernel_encodes_them() {
        assert_eq!(split_dev(0x0700), (7, 0));
        assert_eq!(split_dev(0xfd02), (253, 2));
        assert_eq!(split_dev((259 << 8) | 5 | (1 << 20)), (259, 5 | (1 << 8)));
        assert_eq!(parse_dev("7:3\n"), Some((7, 3)));
    }

    #[test]
    fn the_default_sample_rate_is_the_one_the_option_documents() {
        let o = crate::job::options::lookup("stages_sample").expect("the option");
        assert_eq!(o.default, Some(DEFAULT_SAMPLE.to_string().as_str()));
    }

    #[test]
    fn a_missing_bpftrace_is_named_with_its_fix() {
        let f = failed("ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK\nERROR: x");
        assert_eq!(f.status, "failed");
        assert!(f.message.unwrap().ends_with("ERROR: x"));
    }
}
