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

/// `--status-interval=T`: while a trial runs, an interim status every T on
/// stdout, before the final report — in JSON one object per interval
/// (`{"status": {…}}`), otherwise one line. It carries what the workers
/// publish while they run (the I/Os and bytes measured so far in the trial,
/// all its jobs together, and the rates from them); latencies and per-job
/// figures are in the final report only, since the workers share nothing
/// else while they run.
pub(super) struct StatusInterval {
    every_ns: Option<u64>,
    json: bool,
    start: u64,
    next: u64,
    measure_start: u64,
    jobs: Vec<String>,
}

impl StatusInterval {
    pub(super) fn new(plan: &Plan) -> StatusInterval {
        let now = dioscope_sys::clock::now_ns();
        let every_ns = plan.global.status_interval_ms.map(|ms| ms * 1_000_000);
        StatusInterval {
            every_ns,
            json: plan
                .global
                .output_format
                .split(',')
                .any(|f| f.trim().starts_with("json")),
            start: now,
            next: now + every_ns.unwrap_or(0),
            measure_start: now,
            jobs: Vec::new(),
        }
    }
}

impl runner::TrialHooks for StatusInterval {
    fn before_trial(
        &mut self,
        _g: u32,
        _t: u32,
        jobs: &[&runner::ResolvedJob],
        _table: &crate::targets::TargetTable,
    ) {
        self.jobs = jobs.iter().map(|j| j.spec.name.clone()).collect();
    }
    fn measure_start(&mut self, _g: u32, _t: u32) {
        self.measure_start = dioscope_sys::clock::now_ns();
    }
    fn poll_every_ns(&self) -> u64 {
        self.every_ns.unwrap_or(u64::MAX)
    }
    fn stop_requested(&mut self, g: u32, t: u32, ios: u64, bytes: u64, done: bool) -> bool {
        let Some(every) = self.every_ns else {
            return false;
        };
        let now = dioscope_sys::clock::now_ns();
        if done || now < self.next {
            return false;
        }
        while self.next <= now {
            self.next += every;
        }
        let secs = now.saturating_sub(self.measure_start) as f64 / 1e9;
        let per_s = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let elapsed_ms = now.saturating_sub(self.start) / 1_000_000;
        let text = if self.json {
            let v = serde_json::json!({"status": {
                "elapsed_ms": elapsed_ms,
                "group": g,
                "trial": t + 1,
                "jobs": self.jobs,
                "total_ios": ios,
                "io_bytes": bytes,
                "iops": per_s(ios),
                "bw_bytes": per_s(bytes).round() as u64,
            }});
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
        } else {
            format!(
                "status at {:.1}s: group {g} trial {} ({}): {} I/Os, {} in {secs:.1}s: IOPS={}, BW={}/s\n",
                elapsed_ms as f64 / 1000.0,
                t + 1,
                self.jobs.join(", "),
                ios,
                crate::results::human_bytes(bytes),
                crate::results::human_count(per_s(ios)),
                crate::results::human_rate(per_s(bytes)),
            )
        };
        crate::console::stdout(&text);
        false
    }
}
