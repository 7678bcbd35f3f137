//! `--profile`'s result: plain data, serialised under `dioscope.profile`
//! and read back by the result model (it depends on nothing else). The
//! profiler (`crate::profile`) fills it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileStatus {
    /// Every trial was recorded.
    Recorded,
    /// Some trials were recorded, some not (see `message`).
    Partial,
    /// perf is missing or not permitted: nothing was recorded.
    Unavailable,
    /// perf was there but failed: nothing was recorded.
    Failed,
}

/// `--profile`'s result: under `dioscope.profile` in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileResult {
    pub status: ProfileStatus,
    /// Why there is no (full) profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<PerfInfo>,
    /// What the figures cover and what they do not.
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub groups: Vec<GroupProfile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfInfo {
    pub path: String,
    pub version: String,
    /// The running kernel (perf's version may differ: it need not match).
    pub kernel: String,
    /// `system-wide` or `process`.
    pub scope: String,
    pub event: String,
    /// CPU time per sample.
    pub period_us: f64,
}

/// A cost: µs of CPU per I/O, and its share of the total it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub name: String,
    pub us_per_io: f64,
    /// Fraction (0–1) of the owner's sampled CPU time.
    pub share: f64,
}

/// One function's own time (samples whose innermost frame it is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCost {
    pub function: String,
    /// The subsystem its samples were charged to (a lock or `memcpy` is
    /// charged to its caller's subsystem, so it may appear once per caller).
    pub subsystem: String,
    pub kernel: bool,
    pub us_per_io: f64,
    pub share: f64,
}

/// CPU time by function and subsystem of one owner (our process, or the
/// kernel threads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Breakdown {
    pub samples: u64,
    /// All sampled CPU time per I/O: the sum of `subsystems`, of `threads`
    /// and of `functions` plus `other_functions_us_per_io`.
    pub us_per_io: f64,
    pub kernel_us_per_io: f64,
    pub user_us_per_io: f64,
    pub threads: Vec<Cost>,
    pub subsystems: Vec<Cost>,
    /// The costliest functions, most first.
    pub functions: Vec<FunctionCost>,
    /// The functions not listed, summed.
    pub other_functions_us_per_io: f64,
    pub other_functions: u64,
}

/// Context switches, page faults and CPU migrations of our process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Counters {
    pub context_switches_per_io: f64,
    pub voluntary_switches_per_io: f64,
    pub page_faults_per_io: f64,
    pub major_faults_per_io: f64,
    pub migrations_per_io: f64,
    pub migrations: u64,
}

/// One trial's recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialProfile {
    /// 1-based.
    pub trial: u32,
    /// I/Os of the measured window.
    pub ios: u64,
    /// I/Os of the part of it perf recorded (all but the `enable` latency,
    /// at the trial's mean rate): what the sampled figures are divided by.
    pub recorded_ios: u64,
    pub samples: u64,
    /// Our process's sampled CPU per I/O.
    pub sampled_us_per_io: f64,
    /// The process's CPU per I/O as the run measured it (getrusage).
    pub measured_us_per_io: f64,
    /// How long perf took to answer `enable` (the window opens that late).
    pub enable_latency_us: u64,
    /// How long perf recorded: from `enable` answered to `disable` sent,
    /// which is after the workers have ended.
    pub window_us: u64,
    /// The process's CPU time in that window (getrusage).
    pub window_cpu_us: u64,
    /// Sampled ÷ `window_cpu_us`: how much of the CPU time the process
    /// used while perf recorded the samples account for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_coverage: Option<f64>,
    /// perf's own CPU time during the trial, as a share of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_cpu_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The profile of one group of jobs over its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupProfile {
    pub group: u32,
    pub jobs: Vec<String>,
    /// I/Os of the recorded part of the trials' measured windows (see
    /// [`TrialProfile::recorded_ios`]): the divisor of every figure here.
    pub ios: u64,
    /// The process's CPU per I/O as the run measured it (getrusage over
    /// the same trials): what `process` should add up to.
    pub measured_us_per_io: f64,
    /// `process.us_per_io ÷ measured_us_per_io`.
    pub coverage: f64,
    /// Our process: every thread, io_uring's io-wq workers included.
    pub process: Breakdown,
    /// Kernel threads (kworker, ksoftirqd, irq/N) during the window,
    /// system-wide: work for us and for anything else that ran. Absent
    /// when perf could see our process only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_threads: Option<Breakdown>,
    /// Interrupt handlers that ran while a CPU was idle (completions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_interrupts_us_per_io: Option<f64>,
    pub counters: Counters,
    pub trials: Vec<TrialProfile>,
    /// Folded stacks (`thread;outermost;…;leaf samples`, one per line), for
    /// flamegraph.pl or speedscope; a sample is `perf.period_us` of CPU.
    pub folded: String,
    /// Why the ranking of functions cannot be trusted (too few samples),
    /// when it cannot: the text and the HTML show it above the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl GroupProfile {
    /// Samples of our process over the trials that were read.
    pub fn process_samples(&self) -> u64 {
        self.process.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::{Dioscope, RunDoc};

    #[test]
    fn a_profile_round_trips_through_the_result_model() {
        let p = ProfileResult {
            status: ProfileStatus::Recorded,
            message: None,
            fix: None,
            perf: Some(PerfInfo {
                path: "/usr/bin/perf".into(),
                version: "6.1.187".into(),
                kernel: "6.18.44".into(),
                scope: "system-wide".into(),
                event: "cpu-clock".into(),
                period_us: 250.0,
            }),
            notes: vec!["n".into()],
            groups: vec![GroupProfile {
                warning: None,
                group: 0,
                jobs: vec!["b2".into()],
                ios: 1000,
                measured_us_per_io: 2.5,
                coverage: 0.96,
                process: Breakdown {
                    samples: 10,
                    us_per_io: 2.4,
                    kernel_us_per_io: 2.3,
                    user_us_per_io: 0.1,
                    threads: vec![Cost {
                        name: "job b2 workers".into(),
                        us_per_io: 2.4,
                        share: 1.0,
                    }],
                    subsystems: vec![Cost {
                        name: "driver".into(),
                        us_per_io: 2.4,
                        share: 1.0,
                    }],
                    functions: vec![FunctionCost {
                        function: "copy_page".into(),
                        subsystem: "driver".into(),
                        kernel: true,
                        us_per_io: 2.4,
                        share: 1.0,
                    }],
                    other_functions_us_per_io: 0.0,
                    other_functions: 0,
                },
                kernel_threads: Some(Breakdown::default()),
                idle_interrupts_us_per_io: Some(0.0),
                counters: Counters::default(),
                trials: vec![TrialProfile {
                    trial: 1,
                    ios: 1000,
                    recorded_ios: 990,
                    samples: 10,
                    sampled_us_per_io: 2.4,
                    measured_us_per_io: 2.5,
                    enable_latency_us: 300,
                    window_us: 1_000_000,
                    window_cpu_us: 2500,
                    window_coverage: Some(0.96),
                    perf_cpu_share: Some(0.1),
                    error: None,
                }],
                folded: "job b2 workers;copy_page 10\n".into(),
            }],
        };
        let doc = RunDoc {
            dioscope: Some(Dioscope {
                profile: Some(p.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let back = RunDoc::from_json(&doc.to_json(false)).unwrap();
        assert_eq!(back.dioscope.unwrap().profile, Some(p));
    }
}
