//! Findings about the run itself: trials that disagree (outliers, two groups,
//! drift), trials that never settle, and a tool that is its own bottleneck.
//! The statistics are in [`crate::stats::trials`]; this turns them into
//! findings with 1-based trial numbers.

use crate::stats::summary::{median, t975, Summary};
use crate::stats::trials;

use super::env::Cpu;
use super::findings::{
    BimodalTrials, DriftAcrossTrials, DriftWithinTrial, Finding, GovernorNotPerformance,
    HighVariance, KernelCpuBound, OutlierTrials, ToolBottleneck, TrialCondition, TrialValue,
};

/// The conditions restricted to the trials of a series of `n` values (a
/// condition seen only in trials left out touches nothing here).
fn within(conditions: &[TrialCondition], n: usize) -> Vec<TrialCondition> {
    conditions
        .iter()
        .map(|c| TrialCondition {
            condition: c.condition,
            trials: c
                .trials
                .iter()
                .copied()
                .filter(|&t| (1..=n).contains(&t))
                .collect(),
        })
        .filter(|c| !c.trials.is_empty())
        .collect()
}

/// Two modes in one value per trial: first the groups named by a measured
/// condition ([`trials::conditioned_split`]: the trials under CPU contention
/// against the rest, …), then the split searched in the values alone
/// ([`trials::bimodality`]). `higher_is_better` says which way a condition
/// is expected to move the metric.
pub fn two_modes(
    values: &[f64],
    conditions: &[TrialCondition],
    higher_is_better: bool,
) -> Option<trials::Bimodality> {
    within(conditions, values.len())
        .iter()
        .find_map(|c| {
            let flagged: Vec<usize> = c.trials.iter().map(|t| t - 1).collect();
            trials::conditioned_split(values, &flagged, higher_is_better).filter(|b| b.bimodal)
        })
        .or_else(|| trials::bimodality(values).filter(|b| b.bimodal))
}

/// Findings over one value per trial of a higher-is-better metric (IOPS),
/// with what dioscope measured during those trials (`conditions`, 1-based
/// trials), which the findings name before any device cause. When the
/// trials form two groups, the members of the smaller one are not also
/// reported as outliers.
pub fn trial_findings(metric: &str, values: &[f64], conditions: &[TrialCondition]) -> Vec<Finding> {
    let mut out = Vec::new();
    let conditions = within(conditions, values.len());
    let bimodal = two_modes(values, &conditions, true);
    if let Some(b) = &bimodal {
        let one_based = |v: &[usize]| v.iter().map(|i| i + 1).collect::<Vec<_>>();
        out.push(Finding::BimodalTrials(BimodalTrials {
            metric: metric.to_string(),
            low_trials: one_based(&b.split.low),
            high_trials: one_based(&b.split.high),
            low_mean: b.split.low_mean,
            high_mean: b.split.high_mean,
            conditions: conditions.clone(),
        }));
    } else {
        let o = trials::outliers(values);
        if !o.is_empty() {
            out.push(Finding::OutlierTrials(OutlierTrials {
                metric: metric.to_string(),
                median: median(values),
                outliers: o
                    .iter()
                    .map(|o| TrialValue {
                        trial: o.index + 1,
                        value: o.value,
                        score: o.score,
                    })
                    .collect(),
                conditions: conditions.clone(),
            }));
        }
    }
    if let Some(d) = trials::drift(values).filter(|d| d.drifting) {
        out.push(Finding::DriftAcrossTrials(DriftAcrossTrials {
            metric: metric.to_string(),
            trials: values.len(),
            rel_change: d.rel_change,
            p_value: d.p_value,
            conditions: conditions.clone(),
        }));
    }
    out
}

/// Drift of a metric within one trial's per-interval series (1-based
/// `trial`). The first interval is left out: it often holds a partial second
/// or the tail of the ramp.
pub fn series_findings(metric: &str, trial: usize, series: &[f64]) -> Vec<Finding> {
    let s = if series.len() > 5 {
        &series[1..]
    } else {
        series
    };
    trials::drift(s)
        .filter(|d| d.drifting)
        .map(|d| {
            Finding::DriftWithinTrial(DriftWithinTrial {
                metric: metric.to_string(),
                trial,
                intervals: s.len(),
                rel_change: d.rel_change,
                p_value: d.p_value,
            })
        })
        .into_iter()
        .collect()
}

/// A worker this busy on its CPU is the bottleneck (the rest is the kernel's
/// accounting granularity and the time the thread sleeps between batches).
pub const BOTTLENECK_CPU_PCT: f64 = 95.0;

/// Share of the workers' CPU time in user space from which dioscope's own
/// code, not the kernel, is what a saturated worker spends its CPU on.
pub const TOOL_USER_SHARE: f64 = 0.5;

/// When the busiest worker of `job` was at ≥ 95 % of a CPU (`busiest` is
/// its user+system CPU time over its wall time, from
/// `getrusage(RUSAGE_THREAD)`; 1.0 = a whole CPU): [`ToolBottleneck`] when
/// the workers' CPU time (`user_us`, `sys_us`, summed over workers) was
/// mostly user space, dioscope's own code; [`KernelCpuBound`] when it was
/// mostly the kernel (system calls, block layer, a RAM-backed device's
/// copies), where a faster tool would not help.
pub fn cpu_bound(job: &str, busiest: f64, user_us: u64, sys_us: u64) -> Option<Finding> {
    let cpu_pct = (100.0 * busiest).min(100.0);
    if cpu_pct < BOTTLENECK_CPU_PCT {
        return None;
    }
    let total = (user_us + sys_us) as f64;
    let user_share = if total > 0.0 {
        user_us as f64 / total
    } else {
        1.0
    };
    Some(if user_share >= TOOL_USER_SHARE {
        ToolBottleneck {
            job: job.to_string(),
            cpu_pct,
        }
        .into()
    } else {
        KernelCpuBound {
            job: job.to_string(),
            cpu_pct,
            kernel_pct: 100.0 * (1.0 - user_share),
        }
        .into()
    })
}

/// [`HighVariance`] when the 95 % confidence interval of the mean of
/// `values` (Student's t) is wider than ±[`HIGH_VARIANCE_PCT`] % of it.
/// Needs 2 values: one trial has no interval at all. `conditions` (what
/// dioscope measured during the trials) is named before more trials are
/// suggested.
pub fn high_variance(
    metric: &str,
    values: &[f64],
    conditions: &[TrialCondition],
) -> Option<Finding> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let s = Summary::of(values);
    if s.mean <= 0.0 {
        return None;
    }
    let half_pct = 100.0 * (s.ci95.1 - s.mean) / s.mean;
    if half_pct <= HIGH_VARIANCE_PCT {
        return None;
    }
    let cv = s.stddev / s.mean;
    let trials_needed = (n..=MAX_TRIALS_SUGGESTED)
        .find(|&k| 100.0 * t975(k - 1) * cv / (k as f64).sqrt() <= HIGH_VARIANCE_PCT)
        .unwrap_or(MAX_TRIALS_SUGGESTED);
    Some(
        HighVariance {
            metric: metric.to_string(),
            trials: n,
            mean: s.mean,
            ci_half_pct: half_pct,
            cv_pct: 100.0 * cv,
            trials_needed,
            conditions: within(conditions, n),
        }
        .into(),
    )
}

/// The CI half-width, in % of the mean, above which a result is too noisy.
pub const HIGH_VARIANCE_PCT: f64 = 5.0;
/// The most trials [`high_variance`] suggests (beyond, the noise needs
/// removing, not averaging).
pub const MAX_TRIALS_SUGGESTED: usize = 100;

/// [`Finding::GovernorNotPerformance`] when any CPU's governor is not
/// `performance`; nothing when the kernel exposes no cpufreq.
pub fn governor_finding(cpu: &Cpu) -> Option<Finding> {
    cpu.governors
        .iter()
        .any(|(g, _)| g != "performance")
        .then(|| {
            Finding::GovernorNotPerformance(GovernorNotPerformance {
                governors: cpu.governors.clone(),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(|f| f.code()).collect()
    }

    #[test]
    fn seed_004_bimodal_not_outliers() {
        let f = trial_findings(
            "write MB/s",
            &[3810.0, 2390.0, 3795.0, 3820.0, 2405.0, 3790.0],
            &[],
        );
        assert_eq!(codes(&f), vec!["bimodal_trials"]);
        match &f[0] {
            Finding::BimodalTrials(BimodalTrials {
                low_trials,
                high_trials,
                ..
            }) => {
                assert_eq!(low_trials, &vec![2, 5]);
                assert_eq!(high_trials, &vec![1, 3, 4, 6]);
            }
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn single_outlier_and_drift() {
        let f = trial_findings("IOPS", &[1000.0, 1002.0, 998.0, 600.0, 1001.0], &[]);
        assert_eq!(codes(&f), vec!["outlier_trials"]);
        let f = trial_findings("IOPS", &[1000.0, 950.0, 900.0, 860.0, 800.0], &[]);
        assert_eq!(codes(&f), vec!["drift_across_trials"]);
        assert!(trial_findings("IOPS", &[1000.0, 1003.0, 998.0], &[]).is_empty());
        assert!(trial_findings("IOPS", &[1000.0], &[]).is_empty());
    }

    /// The policy of docs/STATISTICS.md, on the cases that motivated it.
    #[test]
    fn the_rules_agree() {
        let all = |xs: &[f64]| {
            let mut f = trial_findings("IOPS", xs, &[]);
            f.extend(high_variance("IOPS", xs, &[]));
            codes(&f)
        };
        // A 6 % deviation on a quiet machine: not an outlier, and the mean
        // is still known to ±5 %.
        assert!(all(&[1000.0, 1002.0, 998.0, 1001.0, 940.0]).is_empty());
        // A two-fold spread over five trials with no structure: not silent.
        assert_eq!(
            all(&[1000.0, 2000.0, 1400.0, 1800.0, 1100.0]),
            vec!["high_variance"]
        );
        // Any two-fold spread over five trials gets at least one finding.
        let mut seed = 1u64;
        for _ in 0..2000 {
            let mut xs: Vec<f64> = (0..5)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    1000.0 + 1000.0 * ((seed >> 11) as f64 / (1u64 << 53) as f64)
                })
                .collect();
            xs[0] = 1000.0;
            xs[1] = 2000.0;
            assert!(!all(&xs).is_empty(), "{xs:?}");
        }
        // Too few trials for a pattern: only the interval speaks.
        assert_eq!(all(&[1000.0, 1001.0, 500.0]), vec!["high_variance"]);
        // One trial: nothing to say.
        assert!(all(&[1000.0]).is_empty());
        // Outliers give way to two modes (seed 004).
        let c = all(&[3810.0, 2390.0, 3795.0, 3820.0, 2405.0, 3790.0]);
        assert!(
            c.contains(&"bimodal_trials") && !c.contains(&"outlier_trials"),
            "{c:?}"
        );
    }

    #[test]
    fn high_variance_says_how_many_trials() {
        // CV 5 %, 3 trials: t(2) = 4.303, half-width 4.303 × 5/√3 = 12.4 %.
        let xs = [950.0, 1000.0, 1050.0];
        match high_variance("IOPS", &xs, &[]) {
            Some(Finding::HighVariance(h)) => {
                assert!((h.ci_half_pct - 12.42).abs() < 0.05, "{h:?}");
                assert!((h.cv_pct - 5.0).abs() < 1e-9);
                // t(k−1)·5/√k ≤ 5 first holds at k = 7 (2.447·5/√7 = 4.62;
                // k = 6 gives 2.571·5/√6 = 5.25).
                assert_eq!(h.trials_needed, 7);
            }
            f => panic!("{f:?}"),
        }
        assert!(high_variance("IOPS", &[1000.0, 1001.0, 999.0], &[]).is_none());
    }

    #[test]
    fn drift_within_a_trial() {
        let warming: Vec<f64> = (0..30).map(|i| 1000.0 + 10.0 * i as f64).collect();
        let f = series_findings("IOPS", 2, &warming);
        assert_eq!(codes(&f), vec!["drift_within_trial"]);
        let flat = vec![1000.0; 30];
        assert!(series_findings("IOPS", 2, &flat).is_empty());
    }

    #[test]
    fn bottleneck_and_governor() {
        // Mostly user space: dioscope's own code is the limit.
        let f = cpu_bound("j", 0.99, 800, 200).unwrap();
        assert!(
            matches!(f, Finding::ToolBottleneck(ref t) if t.job == "j"),
            "{f:?}"
        );
        // Mostly the kernel (psync on a RAM-backed device): not the tool.
        match cpu_bound("j", 0.99, 100, 900).unwrap() {
            Finding::KernelCpuBound(k) => assert!((k.kernel_pct - 90.0).abs() < 1e-9),
            f => panic!("{f:?}"),
        }
        assert!(cpu_bound("j", 0.4, 0, 1000).is_none());
        assert!(cpu_bound("j", 0.0, 0, 0).is_none());
        let mut cpu = Cpu {
            governors: vec![("performance".into(), 2)],
            ..Default::default()
        };
        assert!(governor_finding(&cpu).is_none());
        cpu.governors.push(("powersave".into(), 1));
        assert!(governor_finding(&cpu).is_some());
        cpu.governors.clear();
        assert!(governor_finding(&cpu).is_none());
    }
}

/// The two-modes rule with and without the measured conditions, simulated on
/// the real finding code ([`trial_findings`]) with a fixed seed: random
/// contention flags on unimodal data (false alarms) and a planted two-level
/// pattern whose low trials are exactly the contended ones (detection).
/// docs/STATISTICS.md quotes the figures it prints
/// (`cargo test -p dioscope-core --lib conditioned_two_modes -- --nocapture`).
#[cfg(test)]
mod simulation {
    use super::trial_findings;
    use crate::diag::findings::{Condition, TrialCondition};

    /// xorshift64* and Box–Muller, seeded: the same figures on every run.
    struct Rng(u64);
    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u1, u2) = (self.uniform(), self.uniform());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
    }

    fn bimodal(values: &[f64], flagged: &[usize]) -> bool {
        let conds = [TrialCondition {
            condition: Condition::CpuContention,
            trials: flagged.to_vec(),
        }];
        let conds = if flagged.is_empty() {
            &[][..]
        } else {
            &conds[..]
        };
        trial_findings("IOPS", values, conds)
            .iter()
            .any(|f| f.code() == "bimodal_trials")
    }

    /// (alarms without the flags, alarms with them) over `runs` unimodal
    /// normal series of `n` values at coefficient of variation `cv`, each
    /// trial flagged as contended with probability 0.3, unrelated to its value.
    fn false_alarms(r: &mut Rng, n: usize, cv: f64, runs: usize) -> (usize, usize) {
        let (mut old, mut new) = (0, 0);
        for _ in 0..runs {
            let xs: Vec<f64> = (0..n).map(|_| 1000.0 * (1.0 + cv * r.normal())).collect();
            let flagged: Vec<usize> = (1..=n).filter(|_| r.uniform() < 0.3).collect();
            old += bimodal(&xs, &[]) as usize;
            new += bimodal(&xs, &flagged) as usize;
        }
        (old, new)
    }

    /// (found without the flags, found with them) over `runs` series of `n`
    /// trials, `k` of them (at random places, flagged) at a level 1.6 times
    /// lower than the others (60 % apart), each level with noise `cv`.
    fn detection(r: &mut Rng, n: usize, k: usize, cv: f64, runs: usize) -> (usize, usize) {
        let (mut old, mut new) = (0, 0);
        for _ in 0..runs {
            let mut idx: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                let j = (r.next_u64() % (i as u64 + 1)) as usize;
                idx.swap(i, j);
            }
            let mut low: Vec<usize> = idx[..k].iter().map(|i| i + 1).collect();
            low.sort_unstable();
            let xs: Vec<f64> = (1..=n)
                .map(|t| {
                    let level = if low.contains(&t) {
                        1000.0 / 1.6
                    } else {
                        1000.0
                    };
                    level * (1.0 + cv * r.normal())
                })
                .collect();
            old += bimodal(&xs, &[]) as usize;
            new += bimodal(&xs, &low) as usize;
        }
        (old, new)
    }

    #[test]
    fn conditioned_two_modes() {
        let mut r = Rng(0x5eed_2026);
        let runs = 4000;
        eprintln!("false alarms of bimodal_trials on unimodal data, random contention flags (p = 0.3), {runs} series each:");
        eprintln!("  n   CV    without flags  with flags");
        for &cv in &[0.01, 0.03, 0.05, 0.10, 0.20] {
            for &n in &[5usize, 6, 8, 10, 12] {
                let (old, new) = false_alarms(&mut r, n, cv, runs);
                eprintln!(
                    "  {n:<3} {:>3.0} %  {:>5.2} %        {:>5.2} %",
                    cv * 100.0,
                    100.0 * old as f64 / runs as f64,
                    100.0 * new as f64 / runs as f64
                );
                // The flags add alarms only where a random group happens to
                // be the worst trials with a clear hole above them: none on
                // quiet data (the 10 % floor), and on noisy data at most
                // 0.1 % of the series (4 of 4000).
                if cv <= 0.03 {
                    assert_eq!(new, old, "n={n} cv={cv}");
                } else {
                    assert!(new <= old + runs / 1000, "n={n} cv={cv}: {old} → {new}");
                }
            }
        }
        eprintln!("detection of a planted two-level pattern 60 % apart, 8 trials, the low ones exactly the contended ones:");
        eprintln!("  low trials  CV    without flags  with flags");
        for &cv in &[0.03, 0.05, 0.10, 0.15] {
            for &k in &[2usize, 3, 4] {
                let (old, new) = detection(&mut r, 8, k, cv, runs);
                eprintln!(
                    "  {k:<10}  {:>3.0} %  {:>5.1} %        {:>5.1} %",
                    cv * 100.0,
                    100.0 * old as f64 / runs as f64,
                    100.0 * new as f64 / runs as f64
                );
                let rate = new as f64 / runs as f64;
                match cv {
                    c if c <= 0.05 => assert!(rate >= 0.99, "k={k} cv={cv}: {rate}"),
                    c if c <= 0.10 => assert!(
                        rate >= 0.55 && new >= 3 * old,
                        "k={k} cv={cv}: {old} → {new}"
                    ),
                    _ => assert!(
                        rate >= 0.2 && new >= 3 * old,
                        "k={k} cv={cv}: {old} → {new}"
                    ),
                }
            }
        }
    }

    /// The planted case of the issue as one series: two levels 60 % apart,
    /// the contended trials the low ones, noise 10 %: without the flags only
    /// the interval speaks; with them, two groups named by their cause.
    #[test]
    fn contended_trials_form_their_own_group() {
        let xs = [1040.0, 590.0, 960.0, 1100.0, 650.0, 930.0, 700.0, 1010.0];
        let without = trial_findings("IOPS", &xs, &[]);
        assert!(
            without.iter().all(|f| f.code() != "bimodal_trials"),
            "{without:?}"
        );
        let conds = [TrialCondition {
            condition: Condition::CpuContention,
            trials: vec![2, 5, 7],
        }];
        let with = trial_findings("IOPS", &xs, &conds);
        let b = with
            .iter()
            .find(|f| f.code() == "bimodal_trials")
            .unwrap_or_else(|| panic!("{with:?}"));
        let text = b.to_string();
        assert!(text.contains("2, 5, 7 at IOPS"), "{text}");
        assert!(
            text.contains("exactly the trials with CPU contention"),
            "{text}"
        );
        assert!(!text.contains("garbage collection"), "{text}");
        // An outlier under contention names it before the device.
        let xs = [1000.0, 1002.0, 998.0, 600.0, 1001.0];
        let conds = [TrialCondition {
            condition: Condition::CpuContention,
            trials: vec![4],
        }];
        let f = trial_findings("IOPS", &xs, &conds);
        let text = f[0].to_string();
        let (cause, device) = (
            text.find("CPU contention (cpu_contention) in trial 4"),
            text.find("garbage collection"),
        );
        assert!(cause.is_some() && cause < device, "{text}");
        // Contention in other trials is not this outlier's cause.
        let conds = [TrialCondition {
            condition: Condition::CpuContention,
            trials: vec![1],
        }];
        let text = trial_findings("IOPS", &xs, &conds)[0].to_string();
        assert!(text.contains("nothing dioscope measures"), "{text}");
    }
}
