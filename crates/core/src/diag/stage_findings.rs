//! What `--stages` measured (crate::stages, its result in
//! `results/stages.rs`), in the findings: `cpu_contention` sized by the
//! time after the device finished (completion posting + delivery), and
//! `io_wq_punts` where io_uring handed (nearly) every I/O to io-wq. The
//! stages are measured after the diagnosis (the tracer stops with the run),
//! so the pipeline calls [`apply`] then; without `--stages` nothing changes.

use super::findings::{DeliveryCost, Finding, IoWqPunts};
use super::run::RunDiagnosis;
use crate::results::stages::{Stage, StageDirection, StagesResult};

/// From this share of a direction's traced I/Os punted to io-wq, the
/// direction is reported as punted ("every I/O", give or take the few
/// issued inline when a worker was already busy).
const PUNTED_MIN_SHARE: f64 = 0.9;

/// Add what the stages measured to the run's findings.
pub fn apply(diagnosis: &mut RunDiagnosis, st: &StagesResult) {
    if st.status != "measured" {
        return;
    }
    let costliest = st
        .directions
        .iter()
        .filter_map(delivery)
        .max_by(|a, b| a.cost_ns.total_cmp(&b.cost_ns));
    for f in diagnosis.findings.iter_mut() {
        if let Finding::CpuContention(c) = f {
            c.delivery = costliest.clone();
        }
    }
    for d in &st.directions {
        if let Some(p) = punts(d, &st.devices) {
            diagnosis.findings.push(p.into());
        }
    }
    diagnosis
        .findings
        .sort_by_key(|f| std::cmp::Reverse(f.severity()));
}

fn named<'a>(d: &'a StageDirection, name: &str) -> Option<&'a Stage> {
    d.stages.iter().find(|s| s.name == name)
}

fn contribution(d: &StageDirection, name: &str) -> Option<f64> {
    named(d, name).and_then(|s| s.contribution_ns)
}

/// The sampling half-width of a stage's contribution (0 when every I/O was
/// followed or the stage is absent).
fn ci95(d: &StageDirection, name: &str) -> f64 {
    named(d, name)
        .and_then(|s| s.sampling_ci95_ns)
        .unwrap_or(0.0)
}

/// Completion posting + delivery of a direction (posting is 0 where no
/// I/O was joined to it: punted I/O carries it in "not joined"). `None`
/// too when sampling leaves the cost within its 95 % interval of zero: a
/// size that sampling could have made is not given as the cost.
fn delivery(d: &StageDirection) -> Option<DeliveryCost> {
    // libaio's whole span after the device is one mean difference.
    let delivered = contribution(d, "completion delivery")
        .or_else(|| contribution(d, "completion and delivery"))?;
    let posted = contribution(d, "completion posting").unwrap_or(0.0);
    let spread = [
        "completion delivery",
        "completion and delivery",
        "completion posting",
    ]
    .map(|n| ci95(d, n).powi(2))
    .iter()
    .sum::<f64>()
    .sqrt();
    (d.dioscope_lat_mean_ns > 0.0 && posted + delivered > spread).then(|| DeliveryCost {
        direction: d.direction.clone(),
        cost_ns: posted + delivered,
        mean_ns: d.dioscope_lat_mean_ns,
    })
}

fn punts(d: &StageDirection, devices: &[String]) -> Option<IoWqPunts> {
    let ios = d.tagged_ios;
    (ios > 0 && d.punted_io_wq as f64 >= PUNTED_MIN_SHARE * ios as f64).then(|| IoWqPunts {
        direction: d.direction.clone(),
        devices: devices.to_vec(),
        punted: d.punted_io_wq,
        ios,
        not_joined_ns: contribution(d, "not joined per I/O").unwrap_or(0.0),
        handoff_ns: named(d, "io-wq hand-off")
            .filter(|s| s.ios > 0)
            .and_then(|s| s.contribution_ns),
        mean_ns: d.dioscope_lat_mean_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::findings::CpuContention;

    fn stage(name: &str, ns: f64) -> Stage {
        Stage {
            name: name.into(),
            contribution_ns: Some(ns),
            ..Stage::default()
        }
    }

    fn dir(punted: u64) -> StageDirection {
        StageDirection {
            direction: "read".into(),
            tagged_ios: 1000,
            punted_io_wq: punted,
            dioscope_lat_mean_ns: 200e3,
            stages: vec![
                stage("device", 50e3),
                stage("completion posting", 60e3),
                stage("not joined per I/O", 10e3),
                stage("completion delivery", 80e3),
            ],
            ..StageDirection::default()
        }
    }

    fn diagnosis(contended: bool) -> RunDiagnosis {
        let c = CpuContention {
            trials: vec![1],
            cpus: 1,
            cpu_list: vec![0],
            pinned: true,
            busy_pct: 100.0,
            ours_pct: 50.0,
            others_pct: 50.0,
            top: vec![],
            delivery: None,
        };
        RunDiagnosis {
            environment: Default::default(),
            findings: if contended { vec![c.into()] } else { vec![] },
            trials: vec![],
            devices: vec![],
            amplification: Default::default(),
        }
    }

    fn measured(d: StageDirection) -> StagesResult {
        StagesResult {
            status: "measured".into(),
            devices: vec!["/dev/zram9 (bio-based)".into()],
            directions: vec![d],
            ..StagesResult::default()
        }
    }

    #[test]
    fn contention_is_sized_by_posting_and_delivery() {
        let mut g = diagnosis(true);
        apply(&mut g, &measured(dir(0)));
        let Finding::CpuContention(c) = &g.findings[0] else {
            panic!("{:?}", g.findings)
        };
        let d = c.delivery.as_ref().unwrap();
        assert_eq!((d.cost_ns, d.mean_ns), (140e3, 200e3));
        let text = g.findings[0].to_string();
        assert!(
            text.contains("took 140.0 µs of the 200.0 µs mean read latency (70 %)"),
            "{text}"
        );
        assert_eq!(g.findings.len(), 1, "no punts, no io_wq_punts");
    }

    /// A delivery cost within its sampling interval of zero is not given.
    #[test]
    fn a_cost_sampling_could_have_made_is_not_given() {
        for (hw, sized) in [(None, true), (Some(90e3), true), (Some(110e3), false)] {
            let mut d = dir(0);
            for st in d
                .stages
                .iter_mut()
                .filter(|s| s.name.starts_with("completion"))
            {
                st.sampling_ci95_ns = hw;
            }
            let mut g = diagnosis(true);
            apply(&mut g, &measured(d));
            let Finding::CpuContention(c) = &g.findings[0] else {
                panic!("{:?}", g.findings)
            };
            // 140 µs against √2 × the half-width.
            assert_eq!(c.delivery.is_some(), sized, "{hw:?}");
        }
    }

    #[test]
    fn without_contention_or_stages_nothing_changes() {
        let mut g = diagnosis(false);
        apply(&mut g, &measured(dir(0)));
        assert!(g.findings.is_empty());
        let mut g = diagnosis(true);
        let before = g.findings.clone();
        let st = StagesResult {
            status: "unavailable".into(),
            ..measured(dir(1000))
        };
        apply(&mut g, &st);
        assert_eq!(g.findings, before);
    }

    #[test]
    fn punts_of_nearly_every_io_are_a_finding() {
        for (punted, found) in [(1000, true), (900, true), (899, false), (0, false)] {
            let mut g = diagnosis(false);
            apply(&mut g, &measured(dir(punted)));
            assert_eq!(g.findings.len(), found as usize, "{punted}");
            if found {
                let text = g.findings[0].to_string();
                assert!(text.contains("took 10.0 µs of the 200.0 µs mean"), "{text}");
                assert!(text.contains("/dev/zram9"), "{text}");
            }
        }
        // The hand-off measured per I/O (raw backend) is the cost given.
        let mut d = dir(1000);
        d.stages.push(Stage {
            ios: 1000,
            ..stage("io-wq hand-off", 150e3)
        });
        let mut g = diagnosis(false);
        apply(&mut g, &measured(d));
        let text = g.findings[0].to_string();
        assert!(
            text.contains("(the stages' \"io-wq hand-off\", measured per I/O) took 150.0 µs"),
            "{text}"
        );
    }

    /// JSON written before the field existed still reads.
    #[test]
    fn old_cpu_contention_json_reads() {
        let old = r#"{"kind":"cpu_contention","trials":[1],"cpus":2,"busy_pct":99.0,
            "ours_pct":50.0,"others_pct":60.0,"top":[]}"#;
        let f: Finding = serde_json::from_str(old).unwrap();
        let Finding::CpuContention(c) = f else {
            panic!()
        };
        assert!(c.delivery.is_none());
    }
}
