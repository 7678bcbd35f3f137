//! `--profile`: where the CPU time of an I/O goes, by function and
//! subsystem, from `perf` over the measured window of every trial.
//!
//! How the pieces fit:
//! - [`perf`] finds perf, decides what it may record (system-wide as root or
//!   with `perf_event_paranoid` ≤ 0, our process only at 1, nothing above)
//!   and drives one `perf record` per trial through its control pipe;
//! - [`Profiler`] is the runner's view: wrapped around the other trial
//!   hooks by [`Profiler::hooks`], it starts perf before a trial's workers
//!   exist, enables it when the measured window opens and disables it when
//!   the window closes (after the ramp, never inside a worker), and stops
//!   it after the trial;
//! - [`script`] reads each recording (`perf script`) into sums by owner,
//!   thread, subsystem ([`subsys`]) and function, plus folded stacks;
//! - [`Profiler::finish`] divides by the I/Os of the measured windows and
//!   sets the figures beside the CPU time the run measured itself
//!   (`getrusage`), into a [`ProfileResult`]; [`render_text`] and
//!   [`render_html`] show it in the text summary and the HTML report.
//!
//! When perf is missing, not permitted or fails, the run goes on and the
//! result says why and what to do ([`ProfileStatus`]).

pub mod compare;
mod html;
pub mod perf;
pub mod result;
pub mod script;
pub mod subsys;
mod text;

pub use html::render_html;
pub use result::*;
pub use text::render_text;

use crate::outfile::private::{sweep_leftovers, PrivateDir};
use crate::runner::{ResolvedJob, RunResult, TrialHooks};
use crate::targets::TargetTable;
use perf::{PerfTool, Recorder, Scope, Unavailable};
use script::{Context, Owner, Tally};
use std::path::PathBuf;

/// The prefix of `--profile`'s working folders (`$TMPDIR/PREFIX.XXXXXXXXXXXX`).
const DIR_PREFIX: &str = "dioscope-profile";

/// Whether `--profile` can make its working folder in `$TMPDIR`: checked
/// before the run, so that an unusable TMPDIR is blamed (exit 2), not perf.
pub fn check_tmpdir() -> Result<(), String> {
    let t = std::env::temp_dir();
    let named = if std::env::var_os("TMPDIR").is_some() {
        format!("TMPDIR={}", t.display())
    } else {
        format!(
            "the temporary directory {} (TMPDIR is not set)",
            t.display()
        )
    };
    let why = match std::fs::metadata(&t) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("does not exist".to_string()),
        Err(e) => Some(e.to_string()),
        Ok(m) if !m.is_dir() => Some("is not a directory".to_string()),
        Ok(_) => PrivateDir::new(&t, DIR_PREFIX)
            .and_then(|d| d.remove().map(|_| ()))
            .err()
            .map(|e| format!("cannot make a folder in it: {e}")),
    };
    match why {
        None => Ok(()),
        Some(w) => Err(format!(
            "--profile: {named} {w}; perf's recordings go to a new private folder there: set \
             TMPDIR to a writable directory"
        )),
    }
}

/// How many functions a profile lists by name (the rest are summed).
const TOP_FUNCTIONS: usize = 25;
/// How many for the kernel threads outside the process.
const TOP_OUTSIDE: usize = 8;

impl ProfileResult {
    pub(crate) fn without(status: ProfileStatus, why: Unavailable) -> ProfileResult {
        ProfileResult {
            status,
            message: Some(why.message),
            fix: Some(why.fix),
            perf: None,
            notes: Vec::new(),
            groups: Vec::new(),
        }
    }
}

/// One trial's recording, waiting for [`Profiler::finish`].
struct TrialRec {
    group: u32,
    trial: u32,
    ios: u64,
    data: Result<PathBuf, String>,
    ctx: Context,
    enable_latency_us: u64,
    perf_cpu_us: Option<u64>,
    window_us: u64,
    window_cpu_us: u64,
    migrations: u64,
}

/// The recording in progress.
struct Current {
    group: u32,
    trial: u32,
    rec: Recorder,
    enable_latency_us: u64,
    enabled_at: u64,
    window_us: u64,
    ios: u64,
    /// The process's CPU time while perf recorded (getrusage, µs).
    window_cpu_us: u64,
    usage0: Option<dioscope_sys::proc::Usage>,
    /// Migrations per thread when the window opened, and as last read.
    mig0: std::collections::HashMap<u32, u64>,
    mig: std::collections::HashMap<u32, u64>,
    comms: std::collections::HashMap<u32, String>,
    error: Option<String>,
}

/// Runs perf around the measured windows. Create with [`Profiler::new`],
/// run with [`Profiler::hooks`] wrapped around the other hooks, then
/// [`Profiler::finish`].
pub struct Profiler {
    tool: Result<(PerfTool, Scope), (ProfileStatus, Unavailable)>,
    dir: Option<PrivateDir>,
    /// The recordings perf was asked to write (adopted by the folder, to go
    /// with it).
    perf_files: Vec<String>,
    current: Option<Current>,
    done: Vec<TrialRec>,
    jobs: Vec<(u32, String)>,
}

fn now_us() -> u64 {
    dioscope_sys::clock::now_ns() / 1000
}

impl Profiler {
    /// Find perf and decide what it may record. Never fails: a profiler
    /// without perf records nothing and says why.
    pub fn new() -> Profiler {
        let tool = perf::find()
            .and_then(|t| perf::scope(perf::privileged(), perf::paranoid()).map(|s| (t, s)))
            .map_err(|u| (ProfileStatus::Unavailable, u));
        Profiler {
            tool,
            dir: None,
            perf_files: Vec::new(),
            current: None,
            done: Vec::new(),
            jobs: Vec::new(),
        }
    }

    /// These hooks with the profiler's around them.
    pub fn hooks<'a>(&'a mut self, inner: &'a mut dyn TrialHooks) -> impl TrialHooks + 'a {
        WithProfile {
            inner,
            profiler: self,
        }
    }

    /// The working folder: new, private, made at the first trial. Folders
    /// of killed runs that are provably ours go first.
    fn dir(&mut self) -> Result<&mut PrivateDir, String> {
        if self.dir.is_none() {
            let t = std::env::temp_dir();
            sweep_leftovers(&t, DIR_PREFIX);
            let d = PrivateDir::new(&t, DIR_PREFIX).map_err(|e| {
                format!(
                    "cannot make a working folder in TMPDIR={}: {e}",
                    t.display()
                )
            })?;
            self.dir = Some(d);
        }
        self.dir
            .as_mut()
            .ok_or_else(|| "no working folder".to_string())
    }

    /// Remove the working folder (only what was made in it), or keep it
    /// with DIOSCOPE_PROFILE_KEEP.
    fn close_dir(&mut self) {
        let Some(mut d) = self.dir.take() else {
            return;
        };
        for f in &self.perf_files {
            let _ = d.adopt(f);
        }
        if std::env::var_os("DIOSCOPE_PROFILE_KEEP").is_some() {
            d.keep();
            return;
        }
        match d.remove() {
            Ok(None) => {}
            Ok(Some(note)) => eprintln!("dioscope: note: {note}"),
            Err(e) => eprintln!("dioscope: warning: --profile's working folder: {e}"),
        }
    }

    fn before_trial(&mut self, group: u32, trial: u32, jobs: &[&ResolvedJob]) {
        for j in jobs {
            if !self
                .jobs
                .iter()
                .any(|(g, n)| *g == group && *n == j.spec.name)
            {
                self.jobs.push((group, j.spec.name.clone()));
            }
        }
        let Ok((tool, scope)) = &self.tool else {
            return;
        };
        let (tool, scope) = (tool.clone(), *scope);
        let tag = format!("g{group}t{trial}");
        self.perf_files.push(format!("{tag}.data"));
        let started = self
            .dir()
            .and_then(|d| Recorder::start(&tool, scope, d, &tag));
        match started {
            Ok(rec) => {
                self.current = Some(Current {
                    group,
                    trial,
                    rec,
                    enable_latency_us: 0,
                    enabled_at: 0,
                    window_us: 0,
                    ios: 0,
                    window_cpu_us: 0,
                    usage0: None,
                    mig0: Default::default(),
                    mig: Default::default(),
                    comms: Default::default(),
                    error: None,
                })
            }
            Err(e) => self.fail(group, trial, e),
        }
    }

    /// A trial perf could not record. perf that cannot start once will not
    /// start again: later trials are not tried.
    fn fail(&mut self, group: u32, trial: u32, e: String) {
        let fix = "check perf by hand: `perf record -a -g -e cpu-clock -- sleep 1`; install linux-perf if it is missing".to_string();
        self.done.push(TrialRec {
            group,
            trial,
            ios: 0,
            data: Err(e.clone()),
            ctx: Context::default(),
            enable_latency_us: 0,
            perf_cpu_us: None,
            window_us: 0,
            window_cpu_us: 0,
            migrations: 0,
        });
        if self.done.iter().all(|t| t.data.is_err()) {
            self.tool = Err((
                ProfileStatus::Failed,
                Unavailable {
                    message: format!("perf failed: {e}"),
                    fix,
                },
            ));
        }
    }

    fn measure_start(&mut self) {
        if let Some(c) = self.current.as_mut() {
            let t0 = now_us();
            if let Err(e) = c.rec.enable() {
                c.error = Some(e);
            }
            c.enabled_at = now_us();
            c.enable_latency_us = c.enabled_at - t0;
            c.usage0 = Some(dioscope_sys::proc::usage_self());
            c.mig0 = script::our_migrations();
        }
    }

    /// Threads end with the trial and take their counts with them: read
    /// them while they run (about once a second).
    fn during_trial(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.mig.extend(script::our_migrations());
        }
    }

    fn measure_end(&mut self, ios: u64) {
        if let Some(c) = self.current.as_mut() {
            if let Some(u0) = &c.usage0 {
                let u = dioscope_sys::proc::usage_self().since(u0);
                c.window_cpu_us = u.user_us + u.sys_us;
            }
            if let Err(e) = c.rec.disable() {
                c.error.get_or_insert(e);
            }
            c.window_us = now_us().saturating_sub(c.enabled_at);
            // io-wq workers linger a few seconds after their last work:
            // their names are still there to read.
            c.comms = script::our_threads();
            c.mig.extend(script::our_migrations());
            c.ios = ios;
        }
    }

    fn after_trial(&mut self) {
        let Some(c) = self.current.take() else {
            return;
        };
        let perf_cpu_us = c.rec.cpu_us();
        let migrations = c
            .mig
            .iter()
            .map(|(tid, n)| n.saturating_sub(c.mig0.get(tid).copied().unwrap_or(0)))
            .sum();
        let stopped = c.rec.stop();
        let data = match (c.error, stopped) {
            (Some(e), _) | (None, Err(e)) => Err(e),
            (None, Ok(p)) => Ok(p),
        };
        let kthreads = match &self.tool {
            Ok((_, Scope::SystemWide)) => script::kernel_threads(),
            _ => Default::default(),
        };
        let jobs = self
            .jobs
            .iter()
            .filter(|(g, _)| *g == c.group)
            .map(|(_, n)| n.clone())
            .collect();
        self.done.push(TrialRec {
            group: c.group,
            trial: c.trial,
            ios: c.ios,
            data,
            ctx: Context {
                pid: std::process::id(),
                exe: std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                jobs,
                comms: c.comms,
                kthreads,
            },
            enable_latency_us: c.enable_latency_us,
            perf_cpu_us,
            window_us: c.window_us,
            window_cpu_us: c.window_cpu_us,
            migrations,
        });
    }

    /// Read every recording and set it beside the run's own measurements.
    pub fn finish(mut self, run: &RunResult) -> ProfileResult {
        let out = self.build(run);
        self.close_dir();
        out
    }

    fn build(&mut self, run: &RunResult) -> ProfileResult {
        let (tool, scope) = match &self.tool {
            Ok(x) => x.clone(),
            Err((status, why)) => return ProfileResult::without(*status, why.clone()),
        };
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let mut res = ProfileResult {
            status: ProfileStatus::Recorded,
            message: None,
            fix: None,
            perf: Some(PerfInfo {
                path: tool.path.display().to_string(),
                version: tool.version.clone(),
                kernel,
                scope: scope.as_str().into(),
                event: "cpu-clock".into(),
                period_us: perf::PERIOD_NS as f64 / 1000.0,
            }),
            notes: notes(scope),
            groups: Vec::new(),
        };
        let mut errors = Vec::new();
        let mut groups: Vec<u32> = self.done.iter().map(|t| t.group).collect();
        groups.dedup();
        for g in groups {
            if let Some(gp) = self.group(g, run, &tool.path, scope, &mut errors) {
                res.groups.push(gp);
            }
        }
        mark_thin(&mut res);
        if !errors.is_empty() {
            res.status = if res.groups.is_empty() {
                ProfileStatus::Failed
            } else {
                ProfileStatus::Partial
            };
            res.message = Some(errors.join("; "));
            res.fix = Some("check perf by hand: `perf record -a -g -e cpu-clock -- sleep 1`; the other trials' figures stand".into());
        }
        res
    }

    /// One run phase's profile over its trials (`None` when no trial of it
    /// could be read).
    fn group(
        &self,
        g: u32,
        run: &RunResult,
        perf: &std::path::Path,
        scope: Scope,
        errors: &mut Vec<String>,
    ) -> Option<GroupProfile> {
        let mut sums = GroupSums::default();
        let trials: Vec<TrialProfile> = self
            .done
            .iter()
            .filter(|t| t.group == g)
            .map(|t| trial_profile(t, run, perf, &mut sums, errors))
            .collect();
        if sums.ios == 0 && trials.iter().all(|t| t.error.is_some()) {
            return None;
        }
        let (tally, ios) = (&sums.tally, sums.ios);
        let process = breakdown(tally, Owner::Process, ios, TOP_FUNCTIONS);
        let measured = per_io(sums.measured_us as f64, sums.measured_ios);
        Some(GroupProfile {
            group: g,
            jobs: self
                .jobs
                .iter()
                .filter(|(x, _)| *x == g)
                .map(|(_, n)| n.clone())
                .collect(),
            ios,
            measured_us_per_io: measured,
            coverage: if measured > 0.0 {
                process.us_per_io / measured
            } else {
                0.0
            },
            process,
            kernel_threads: (scope == Scope::SystemWide)
                .then(|| breakdown(tally, Owner::KernelThread, ios, TOP_OUTSIDE)),
            idle_interrupts_us_per_io: (scope == Scope::SystemWide)
                .then(|| per_io(tally.ns_of(Owner::IdleIrq) as f64 / 1000.0, ios)),
            counters: Counters {
                context_switches_per_io: per_io((sums.vol + sums.invol) as f64, ios),
                voluntary_switches_per_io: per_io(sums.vol as f64, ios),
                page_faults_per_io: per_io((sums.minflt + sums.majflt) as f64, ios),
                major_faults_per_io: per_io(sums.majflt as f64, ios),
                migrations_per_io: per_io(tally.migrations as f64, ios),
                migrations: tally.migrations,
            },
            trials,
            folded: folded(tally),
            warning: None,
        })
    }
}

/// A group's profile ranks its functions only from this many samples of our
/// process on: a function with 10 % of them is then known to about ±4
/// points (95 %, binomial), and the top ones have tens of samples each.
/// Below it, 1–2 samples per function decide the order.
pub const MIN_SAMPLES_TO_RANK: u64 = 200;

/// The warning of a group with `samples` samples of our process, `None`
/// from [`MIN_SAMPLES_TO_RANK`] on.
pub fn few_samples_warning(samples: u64, period_us: f64) -> Option<String> {
    (samples < MIN_SAMPLES_TO_RANK).then(|| {
        format!(
            "only {samples} sample{} of the process ({} µs of CPU each): too few to rank \
             functions (that needs at least {MIN_SAMPLES_TO_RANK}); a function's share here \
             is a handful of samples, not a measurement. Lengthen the run (runtime=, or more \
             trials) for a profile to read",
            if samples == 1 { "" } else { "s" },
            crate::svg::num(period_us),
        )
    })
}

/// Set every group's [`GroupProfile::warning`] from its sample count.
pub fn mark_thin(res: &mut ProfileResult) {
    let period = res.perf.as_ref().map_or(0.0, |p| p.period_us);
    for g in &mut res.groups {
        g.warning = few_samples_warning(g.process_samples(), period);
    }
}

/// Sums over the trials of a run phase whose recordings could be read.
#[derive(Default)]
struct GroupSums {
    tally: Tally,
    /// I/Os of the recorded part of the trials.
    ios: u64,
    /// The process's own CPU time and I/Os, as the run measured them.
    measured_us: u64,
    measured_ios: u64,
    vol: u64,
    invol: u64,
    minflt: u64,
    majflt: u64,
}

/// One trial's profile beside the run's own measurement of it; what parsed
/// is added to `sums`, what did not to `errors`.
fn trial_profile(
    t: &TrialRec,
    run: &RunResult,
    perf: &std::path::Path,
    sums: &mut GroupSums,
    errors: &mut Vec<String>,
) -> TrialProfile {
    let g = t.group;
    let env = run
        .phases
        .iter()
        .find(|x| x.phase == g)
        .and_then(|x| x.trials.get(t.trial as usize));
    let m_us = env
        .map(|e| e.process.user_us + e.process.sys_us)
        .unwrap_or(0);
    let t_ios = env.map(|e| e.ios).unwrap_or(t.ios);
    // perf's window opens when perf answers `enable`: under load that can
    // be a good part of a short window late. The I/Os of the part it
    // recorded, at the trial's mean rate.
    let wall_us = env.map(|e| e.wall_ns / 1000).unwrap_or(0);
    let rec_ios = if wall_us > 0 {
        (t_ios as f64 * wall_us.saturating_sub(t.enable_latency_us) as f64 / wall_us as f64).round()
            as u64
    } else {
        t_ios
    };
    let parsed = match &t.data {
        Ok(p) => t.ctx.read(perf, p),
        Err(e) => Err(e.clone()),
    };
    let mut tp = TrialProfile {
        trial: t.trial + 1,
        ios: t_ios,
        recorded_ios: rec_ios,
        samples: 0,
        sampled_us_per_io: 0.0,
        measured_us_per_io: per_io(m_us as f64, t_ios),
        enable_latency_us: t.enable_latency_us,
        window_us: t.window_us,
        window_cpu_us: t.window_cpu_us,
        perf_cpu_share: t
            .perf_cpu_us
            .filter(|_| t.window_us > 0)
            .map(|c| c as f64 / t.window_us as f64),
        window_coverage: None,
        error: None,
    };
    match parsed {
        Ok(tt) => {
            tp.samples = tt.samples.get(&Owner::Process).copied().unwrap_or(0);
            tp.window_coverage = (t.window_cpu_us > 0)
                .then(|| tt.ns_of(Owner::Process) as f64 / 1000.0 / t.window_cpu_us as f64);
            tp.sampled_us_per_io = per_io(tt.ns_of(Owner::Process) as f64 / 1000.0, rec_ios);
            sums.tally.add(&tt);
            sums.tally.migrations += t.migrations;
            sums.ios += rec_ios;
            sums.measured_ios += t_ios;
            sums.measured_us += m_us;
            if let Some(e) = env {
                sums.vol += e.process.vol_ctx;
                sums.invol += e.process.invol_ctx;
                sums.minflt += e.process.minflt;
                sums.majflt += e.process.majflt;
            }
        }
        Err(e) => {
            errors.push(format!("group {g} trial {}: {e}", t.trial + 1));
            tp.error = Some(e);
        }
    }
    tp
}

impl Default for Profiler {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        self.current = None;
        self.close_dir();
    }
}

/// What every profile says about itself.
fn notes(scope: Scope) -> Vec<String> {
    let mut n = vec![
        "cpu-clock samples of the measured windows only (not the ramp, not the layout); µs per I/O = samples × period ÷ I/Os".to_string(),
        "the process's figures cover all its threads, io_uring's io-wq workers included; they may differ from the measured CPU (getrusage) by up to ~25 % on a loaded machine: cpu-clock charges a sample to whatever runs when its timer interrupt is taken, late where interrupts are off (the context-switch path) (docs/PERFORMANCE.md)".to_string(),
        "context switches and page faults per I/O are the process's (getrusage); migrations are its threads' se.nr_migrations (/proc), read about once a second, so a thread's last second before it ends may be missed".to_string(),
        "perf itself runs during the window: IOPS of a profiled run are a little lower".to_string(),
    ];
    match scope {
        Scope::SystemWide => n.push("kernel threads (kworker, ksoftirqd, irq/N) are recorded system-wide: they may include work for other processes".into()),
        Scope::Process => n.push("only this process was recorded (perf_event_paranoid = 1): kernel threads that complete I/O for it are not; `sysctl kernel.perf_event_paranoid=0` or root records them too".into()),
    }
    n
}

fn per_io(v: f64, ios: u64) -> f64 {
    if ios == 0 {
        0.0
    } else {
        v / ios as f64
    }
}

/// Most first; ties by name, so that the output is stable.
fn sorted<K: Clone + Ord>(v: impl Iterator<Item = (K, u64)>) -> Vec<(K, u64)> {
    let mut v: Vec<(K, u64)> = v.collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn breakdown(t: &Tally, o: Owner, ios: u64, top: usize) -> Breakdown {
    let total = t.ns_of(o);
    let us = |ns: u64| per_io(ns as f64 / 1000.0, ios);
    let share = |ns: u64| {
        if total == 0 {
            0.0
        } else {
            ns as f64 / total as f64
        }
    };
    let cost = |(name, ns): (String, u64)| Cost {
        name,
        us_per_io: us(ns),
        share: share(ns),
    };
    let kernel = t.kernel_ns.get(&o).copied().unwrap_or(0);
    let funcs = sorted(
        t.functions
            .iter()
            .filter(|(k, _)| k.0 == o)
            .map(|(k, v)| ((k.1.clone(), k.2, k.3), *v)),
    );
    let rest: u64 = funcs.iter().skip(top).map(|x| x.1).sum();
    Breakdown {
        samples: t.samples.get(&o).copied().unwrap_or(0),
        us_per_io: us(total),
        kernel_us_per_io: us(kernel),
        user_us_per_io: us(total - kernel),
        threads: sorted(
            t.threads
                .iter()
                .filter(|(k, _)| k.0 == o)
                .map(|(k, v)| (k.1.clone(), *v)),
        )
        .into_iter()
        .map(cost)
        .collect(),
        subsystems: sorted(
            t.subsystems
                .iter()
                .filter(|(k, _)| k.0 == o)
                .map(|(k, v)| (k.1.to_string(), *v)),
        )
        .into_iter()
        .map(cost)
        .collect(),
        other_functions: funcs.len().saturating_sub(top) as u64,
        other_functions_us_per_io: us(rest),
        functions: funcs
            .into_iter()
            .take(top)
            .map(|((function, subsystem, kernel), ns)| FunctionCost {
                function,
                subsystem: subsystem.to_string(),
                kernel,
                us_per_io: us(ns),
                share: share(ns),
            })
            .collect(),
    }
}

fn folded(t: &Tally) -> String {
    let mut v: Vec<(&String, &u64)> = t.folded.iter().collect();
    v.sort();
    let mut s = String::new();
    for (stack, n) in v {
        s.push_str(stack);
        s.push(' ');
        s.push_str(&n.to_string());
        s.push('\n');
    }
    s
}

/// The other hooks, with perf's start, window and stop around them.
struct WithProfile<'a> {
    inner: &'a mut dyn TrialHooks,
    profiler: &'a mut Profiler,
}

impl TrialHooks for WithProfile<'_> {
    fn before_trial(&mut self, g: u32, t: u32, jobs: &[&ResolvedJob], table: &TargetTable) {
        self.inner.before_trial(g, t, jobs, table);
        // Last, so that the other hooks' work is not recorded (perf's
        // events are off until the window opens anyway).
        self.profiler.before_trial(g, t, jobs);
    }
    fn measure_start(&mut self, g: u32, t: u32) {
        self.profiler.measure_start();
        self.inner.measure_start(g, t);
    }
    fn during_trial(&mut self, g: u32, t: u32) {
        self.profiler.during_trial();
        self.inner.during_trial(g, t);
    }
    fn measure_end(&mut self, g: u32, t: u32, ios: u64) {
        self.profiler.measure_end(ios);
        self.inner.measure_end(g, t, ios);
    }
    fn after_trial(&mut self, g: u32, t: u32, jobs: &[&ResolvedJob], table: &TargetTable) {
        self.profiler.after_trial();
        self.inner.after_trial(g, t, jobs, table);
    }
}
