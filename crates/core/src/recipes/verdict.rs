//! The one verdict rule of every recipe: PRESENT, ABSENT or INCONCLUSIVE
//! with its reason, from the change between two cells as `compare` judges
//! it (`experiment::sequential::judge`: the Hodges–Lehmann ratio of the
//! per-trial values with its 95 % interval inverted from the U test), the
//! seed's effect size the recipe states, the masking and contamination it
//! found, and its positive control.
//!
//! - PRESENT: the interval lies wholly on the effect's side of no change,
//!   on a baseline free of interference (page cache, other openers, other
//!   device I/O) and with the effect not masked.
//! - ABSENT: the interval lies wholly on the near side of the seed's effect
//!   size (it excludes it), the baseline is clean (no contamination, no
//!   CPU contention), nothing masks the effect and the positive control,
//!   run in the same invocation, was detected.
//! - INCONCLUSIVE(reason) otherwise: masked, contaminated, too few trials,
//!   no control or the control not detected, or an interval that excludes
//!   neither no change nor the seed's size.

use crate::experiment::sequential::{fixed_boundary, judge, Judged};
use std::fmt;

/// A recipe's three-way verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Present,
    Absent,
    /// Neither, and why.
    Inconclusive(String),
}

impl Verdict {
    /// The word alone (PRESENT, ABSENT, INCONCLUSIVE).
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Present => "PRESENT",
            Verdict::Absent => "ABSENT",
            Verdict::Inconclusive(_) => "INCONCLUSIVE",
        }
    }
}

impl fmt::Display for Verdict {
    /// `PRESENT`, `ABSENT` or `INCONCLUSIVE (reason)`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Verdict::Inconclusive(r) => write!(f, "INCONCLUSIVE ({r})"),
            v => f.write_str(v.word()),
        }
    }
}

/// The positive control of the run, as far as the verdict needs it.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// `--control` was not given.
    NotRun,
    /// The control's own verdict (PRESENT: detected).
    Ran(Verdict),
}

impl Control {
    pub fn detected(&self) -> bool {
        matches!(self, Control::Ran(Verdict::Present))
    }
}

/// What the rule decides on.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The metric, in words (for the reasons).
    pub metric: String,
    /// The change of the effect side against the baseline, as `compare`
    /// judges it (`None`: a side has no usable value).
    pub change: Option<Judged>,
    /// The seed's effect on this metric in % (signed: +28 is "28 % more
    /// under the effect", −35 "35 % less").
    pub size_pct: f64,
    /// Why the effect cannot show here (a device limit, a layout, too few
    /// CPUs), if it cannot.
    pub masked: Option<String>,
    /// Interference found in the compared cells (page cache, other openers,
    /// other device I/O): the comparison does not measure the effect alone.
    pub contaminated: Vec<String>,
    /// CPU contention found in the compared cells: noise that can hide an
    /// effect (blocks ABSENT), not make one.
    pub contention: Vec<String>,
    pub control: Control,
}

/// Compare `b` (the effect side) against `a` (the baseline), per-trial
/// values, as `compare` does for a fixed number of trials: one test at 5 %.
pub fn judge_trials(a: &[f64], b: &[f64]) -> Option<Judged> {
    let bound = fixed_boundary(a.len(), b.len(), 0.05);
    judge(a, b, bound, 0.0, true)
}

/// The rule (see the module's documentation).
pub fn decide(e: &Evidence) -> Verdict {
    if let Some(m) = &e.masked {
        return Verdict::Inconclusive(format!("masked: {m}"));
    }
    if !e.contaminated.is_empty() {
        return Verdict::Inconclusive(format!(
            "contaminated baseline: {} in the compared cells",
            e.contaminated.join(", ")
        ));
    }
    let Some((lo, hi)) = e.change.and_then(|j| j.ci_pct) else {
        return Verdict::Inconclusive(format!(
            "too few trials: no 95 % interval for {} (the U test needs 4 trials a side)",
            e.metric
        ));
    };
    let up = e.size_pct >= 0.0;
    // Wholly on the effect's side of no change.
    if (up && lo > 0.0) || (!up && hi < 0.0) {
        return Verdict::Present;
    }
    // Wholly on the near side of the seed's size: excludes it.
    let excludes = if up { hi < e.size_pct } else { lo > e.size_pct };
    if !excludes {
        return Verdict::Inconclusive(format!(
            "{}: the interval [{lo:+.1} %, {hi:+.1} %] excludes neither no change nor the seed's \
             {:+.0} %",
            e.metric, e.size_pct
        ));
    }
    if !e.contention.is_empty() {
        return Verdict::Inconclusive(format!(
            "contaminated baseline: {} in the compared cells (the interval [{lo:+.1} %, \
             {hi:+.1} %] would exclude the seed's {:+.0} %, but contention can hide an effect)",
            e.contention.join(", "),
            e.size_pct
        ));
    }
    match &e.control {
        Control::Ran(Verdict::Present) => Verdict::Absent,
        Control::Ran(v) => Verdict::Inconclusive(format!(
            "control not detected ({v}): the interval [{lo:+.1} %, {hi:+.1} %] excludes the \
             seed's {:+.0} %, but the recipe did not see a planted effect of that size",
            e.size_pct
        )),
        Control::NotRun => Verdict::Inconclusive(format!(
            "no control: the interval [{lo:+.1} %, {hi:+.1} %] excludes the seed's {:+.0} %, but \
             ABSENT needs the positive control detected (recipe run --control)",
            e.size_pct
        )),
    }
}

/// The findings that make a comparison's cells unfit: (interference,
/// contention) among the finding kinds of the compared cells.
pub fn interference(kinds: &[String]) -> (Vec<String>, Vec<String>) {
    let mut dirty: Vec<String> = kinds
        .iter()
        .filter(|k| {
            matches!(
                k.as_str(),
                "page_cache_on_target" | "other_openers" | "other_device_io" | "page_cache_kept"
            )
        })
        .cloned()
        .collect();
    let mut busy: Vec<String> = kinds
        .iter()
        .filter(|k| k.as_str() == "cpu_contention")
        .cloned()
        .collect();
    for v in [&mut dirty, &mut busy] {
        v.sort();
        v.dedup();
    }
    (dirty, busy)
}

/// The true median (the mean of the middle two of an even count).
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The interval of a change in words: `+12.3 % [+5.0 %, +20.1 %]`.
pub fn change_text(j: Option<Judged>) -> String {
    match j {
        Some(j) => match j.ci_pct {
            Some((lo, hi)) => format!("{:+.1} % [{lo:+.1} %, {hi:+.1} %]", j.change_pct),
            None => format!("{:+.1} % (no interval: too few trials)", j.change_pct),
        },
        None => "not measured".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::significance::SplitMix64;

    /// `n` trials around `mean` with relative noise `rel` (uniform).
    fn trials(rng: &mut SplitMix64, n: usize, mean: f64, rel: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                mean * (1.0 + rel * (2.0 * u - 1.0))
            })
            .collect()
    }

    fn ev(a: &[f64], b: &[f64], size: f64, control: Control) -> Evidence {
        Evidence {
            metric: "x".into(),
            change: judge_trials(a, b),
            size_pct: size,
            masked: None,
            contaminated: vec![],
            contention: vec![],
            control,
        }
    }

    fn detected() -> Control {
        Control::Ran(Verdict::Present)
    }

    /// Known-present inputs: a +35 % effect under 3 % noise, 6 trials a
    /// side, is PRESENT in (nearly) every simulated run; known-absent
    /// inputs (no effect, same noise) with the control detected are ABSENT
    /// in (nearly) every run and never PRESENT beyond the 5 % error rate.
    #[test]
    fn simulated_present_and_absent() {
        let mut rng = SplitMix64::new(29);
        let runs = 400;
        let (mut present, mut absent, mut false_present) = (0, 0, 0);
        for _ in 0..runs {
            let a = trials(&mut rng, 6, 100.0, 0.03);
            let b = trials(&mut rng, 6, 135.0, 0.03);
            if decide(&ev(&a, &b, 35.0, detected())) == Verdict::Present {
                present += 1;
            }
            let b0 = trials(&mut rng, 6, 100.0, 0.03);
            match decide(&ev(&a, &b0, 35.0, detected())) {
                Verdict::Absent => absent += 1,
                Verdict::Present => false_present += 1,
                _ => {}
            }
        }
        assert!(present >= runs * 99 / 100, "present {present}/{runs}");
        assert!(absent >= runs * 90 / 100, "absent {absent}/{runs}");
        assert!(
            false_present <= runs * 8 / 100,
            "false present {false_present}/{runs}"
        );
    }

    /// A decrease effect (−35 %) works the same way round.
    #[test]
    fn an_effect_that_lowers_the_metric() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [60.0, 61.0, 59.0, 60.5, 59.5];
        assert_eq!(decide(&ev(&a, &b, -35.0, detected())), Verdict::Present);
        let b0 = [100.2, 100.8, 99.2, 100.1, 99.7];
        assert_eq!(decide(&ev(&a, &b0, -35.0, detected())), Verdict::Absent);
    }

    /// Without the control, or with it not detected, a clean and narrow
    /// no-change is INCONCLUSIVE and says why; too few trials, masking and
    /// contamination each give their own reason; a wide interval that
    /// reaches the seed's size is INCONCLUSIVE, not ABSENT.
    #[test]
    fn every_reason() {
        let a = [100.0, 101.0, 99.0, 100.5];
        let b = [100.3, 100.9, 99.1, 100.2];
        let why = |v: Verdict| match v {
            Verdict::Inconclusive(r) => r,
            v => panic!("{v} where INCONCLUSIVE was due"),
        };
        assert!(why(decide(&ev(&a, &b, 35.0, Control::NotRun))).starts_with("no control"));
        let nd = Control::Ran(Verdict::Inconclusive("x".into()));
        assert!(why(decide(&ev(&a, &b, 35.0, nd))).starts_with("control not detected"));
        assert!(why(decide(&ev(&a[..3], &b[..3], 35.0, detected()))).starts_with("too few"));
        let mut e = ev(&a, &b, 35.0, detected());
        e.masked = Some("2 CPUs".into());
        assert_eq!(why(decide(&e)), "masked: 2 CPUs");
        let mut e = ev(&a, &b, 35.0, detected());
        e.contaminated = vec!["page_cache_on_target".into()];
        assert!(why(decide(&e)).starts_with("contaminated baseline: page_cache_on_target"));
        let mut e = ev(&a, &b, 35.0, detected());
        e.contention = vec!["cpu_contention".into()];
        assert!(why(decide(&e)).starts_with("contaminated baseline: cpu_contention"));
        // Contention does not undo a clear effect.
        let big = [140.0, 141.0, 139.0, 140.5];
        e.change = judge_trials(&a, &big);
        assert_eq!(decide(&e), Verdict::Present);
        // Noisy: the interval reaches +35 % and goes below 0.
        let wide = [70.0, 135.0, 100.0, 125.0];
        assert!(why(decide(&ev(&a, &wide, 35.0, detected()))).contains("excludes neither"));
    }

    /// The three cases (dio-scaling ABSENT, blocksize INCONCLUSIVE,
    /// submit-cost PRESENT from equally overlapping intervals) now follow
    /// one rule: overlapping cells are never PRESENT, and ABSENT exactly
    /// when the interval excludes the recipe's size.
    #[test]
    fn equally_overlapping_intervals_get_one_rule() {
        let a = [100.0, 110.0, 95.0, 105.0];
        let b = [104.0, 112.0, 97.0, 108.0];
        let (lo, hi) = judge_trials(&a, &b)
            .and_then(|j| j.ci_pct)
            .expect("an interval");
        assert!(lo < 0.0 && hi > 0.0, "[{lo}, {hi}] must overlap no change");
        for size in [-74.0, -33.0, 18.0] {
            let v = decide(&ev(&a, &b, size, detected()));
            let excludes = if size > 0.0 { hi < size } else { lo > size };
            let want = if excludes { "ABSENT" } else { "INCONCLUSIVE" };
            assert_eq!(v.word(), want, "size {size}, [{lo}, {hi}]: {v}");
        }
    }

    #[test]
    fn median_is_the_middle_of_an_even_count() {
        assert_eq!(median(&[1.0, 4.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[]), None);
    }
}
