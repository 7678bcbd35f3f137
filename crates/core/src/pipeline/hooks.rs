//! Trial hooks every run has: `--eta-newline` and `--status-interval`.

use crate::job::Plan;
use crate::runner;

/// `--eta-newline=T`: ends the live progress line every T seconds, so that
/// a log of stderr keeps one line per period (fio's behaviour).
pub(super) struct EtaNewline {
    pub(super) every_s: Option<u64>,
    pub(super) seconds: u64,
}

impl runner::TrialHooks for EtaNewline {
    fn during_trial(&mut self, _group: u32, _trial: u32) {
        let Some(every) = self.every_s else {
            return;
        };
        self.seconds += 1;
        if self.seconds.is_multiple_of(every) {
            eprintln!();
        }
    }
}

/// `--status-interval=T`: every T while a trial measures, fio's full
/// report of what was measured so far, in the run's output formats (JSON:
/// one whole fio-layout object per interval, parsable on its own; normal:
/// the per-job blocks, run status and so on; terse: its line), before the
/// final report, as fio prints them.
///
/// Values are cumulative from the start of measurement of the trial that
/// is running (after its ramp), per job as the final report merges them:
/// dioscope repeats a group's jobs for its trials, and each trial starts
/// from zero as a fio run would, so an interim report is what fio would
/// print at that moment of a run that is this trial. The final report
/// merges the trials. Jobs of other groups (phases) are not in it; device
/// statistics (`disk_util`, Disk stats) and the diagnosis are only in the
/// final report. See docs/FIO-COMPAT-TESTS.md.
///
/// With `--output=FILE` they go to the file, before the final report (as
/// fio); the file is written once, atomically, at the end.
pub(super) struct StatusInterval {
    every_ns: Option<u64>,
    formats: Vec<&'static crate::render::Format<crate::results::RunDoc>>,
    /// `--output=FILE`: the reports are kept for the file, not printed.
    keep: bool,
    /// The reports kept for `--output`.
    pub(super) kept: String,
    global_options: Vec<(String, String)>,
    next: u64,
    /// The running trial: its jobs, the targets, when measuring began
    /// (wall ms).
    jobs: Vec<runner::ResolvedJob>,
    targets: Vec<crate::targets::TargetInfo>,
    start_ms: u64,
    /// Each worker's latest copy: stands in when one does not answer in time.
    latest: Vec<Option<runner::WorkerResult>>,
}

impl StatusInterval {
    pub(super) fn new(plan: &Plan) -> StatusInterval {
        let every_ns = plan.global.status_interval_ms.map(|ms| ms * 1_000_000);
        let mut formats: Vec<_> = plan
            .global
            .formats
            .iter()
            .filter_map(|n| crate::render::find(crate::render::RUN_FORMATS, n))
            .collect();
        if formats.is_empty() {
            formats.push(&crate::render::RUN_FORMATS[0]);
        }
        StatusInterval {
            every_ns,
            formats,
            keep: plan.global.output.is_some(),
            kept: String::new(),
            global_options: plan.global_options.to_vec(),
            next: u64::MAX,
            jobs: Vec::new(),
            targets: Vec::new(),
            start_ms: 0,
            latest: Vec::new(),
        }
    }

    /// The interim result of the running trial from the workers' copies.
    fn interim(&self, g: u32, w: &runner::Snapshots) -> runner::RunResult {
        let jobs: Vec<&runner::ResolvedJob> = self.jobs.iter().collect();
        let owners: Vec<(usize, usize)> = (0..w.len()).map(|k| w.owner(k)).collect();
        let per_job = runner::merge_snapshots(&jobs, &owners, &self.latest);
        let ios = per_job.iter().map(|t| t.dirs[0].ios + t.dirs[1].ios).sum();
        let env = w.trial_env(ios);
        runner::RunResult {
            jobs: self
                .jobs
                .iter()
                .zip(per_job)
                .map(|(r, tj)| runner::JobRun {
                    resolved: r.clone(),
                    trials: vec![tj],
                    pace: Vec::new(),
                    verify: None,
                    verify_io: Vec::new(),
                })
                .collect(),
            phases: vec![runner::PhaseRun {
                phase: g,
                trials: vec![env],
                start_ms: self.start_ms,
            }],
            targets: self.targets.clone(),
            interrupted: false,
            signal: 0,
            start_ms: self.start_ms,
            notes: Vec::new(),
            auto_trials: Vec::new(),
            setup_error: None,
            completed_groups: Vec::new(),
        }
    }

    /// The interim report in every output format, as the final one is written.
    fn render(&self, r: &runner::RunResult) -> String {
        let diagnosis = crate::diag::RunDiagnosis {
            environment: Default::default(),
            findings: Vec::new(),
            trials: Vec::new(),
            devices: Vec::new(),
            amplification: Default::default(),
        };
        let mut doc = crate::render::build::run_doc(r, &diagnosis, String::new());
        if !self.global_options.is_empty() {
            doc.global_options = Some(self.global_options.iter().cloned().collect());
        }
        crate::pipeline::Formats(self.formats.clone()).render(&doc)
    }
}

impl runner::TrialHooks for StatusInterval {
    fn before_trial(
        &mut self,
        _g: u32,
        _t: u32,
        jobs: &[&runner::ResolvedJob],
        table: &crate::targets::TargetTable,
    ) {
        if self.every_ns.is_none() {
            return;
        }
        self.jobs = jobs.iter().map(|&j| j.clone()).collect();
        self.targets = table.targets.iter().map(|t| t.info.clone()).collect();
        self.latest.clear();
        self.next = u64::MAX;
    }
    fn measure_start(&mut self, _g: u32, _t: u32) {
        let Some(every) = self.every_ns else {
            return;
        };
        self.next = dioscope_sys::clock::now_ns() + every;
        self.start_ms = dioscope_sys::clock::wall_ms();
    }
    fn poll_every_ns(&self) -> u64 {
        // Often enough to keep to the interval within a few ms.
        self.every_ns.map_or(u64::MAX, |e| (e / 20).max(1_000_000))
    }
    fn wants_snapshots(&self) -> bool {
        self.every_ns.is_some()
    }
    fn status(&mut self, g: u32, _t: u32, w: &runner::Snapshots) {
        let Some(every) = self.every_ns else {
            return;
        };
        let now = dioscope_sys::clock::now_ns();
        if now < self.next {
            return;
        }
        while self.next <= now {
            self.next += every;
        }
        // A worker answers at its next publish (every 250 µs while it
        // measures); one stuck in a long I/O is waited for this long, then
        // counted with its previous copy.
        let got = w.collect((every / 4).clamp(1_000_000, 500_000_000));
        self.latest.resize(w.len(), None);
        for (mine, new) in self.latest.iter_mut().zip(got) {
            if new.is_some() {
                *mine = new;
            }
        }
        let text = self.render(&self.interim(g, w));
        if self.keep {
            self.kept.push_str(&text);
        } else {
            crate::console::stdout(&text);
        }
    }
}
