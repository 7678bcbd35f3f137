//! What differs between two results: job options, target (device model and
//! firmware, write cache, scheduler, nomerges, rq_affinity, file system,
//! size), engine, kernel, CPU and governor, NUMA placement, dioscope
//! version, and findings. Each fact has a *name* the user can give to
//! `--expect-different` (`iodepth`, `kernel`, `scheduler`, …).

use crate::results::RunDoc;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One fact recorded in a result: its key (unique), the name the user
/// names it by, and its value as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub key: String,
    pub name: String,
    pub value: String,
}

/// A fact that is not the same on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// What differs, e.g. `job 'rr' option iodepth`, `kernel`.
    pub what: String,
    /// The name `--expect-different` takes for it.
    pub name: String,
    /// Where: `A vs B`, or `within A` (two files of one side).
    pub between: String,
    pub a: String,
    pub b: String,
    /// Named by `--expect-different` (or `--allow-different`).
    pub expected: bool,
}

/// Options that say how to run or report, not what is measured.
const NOT_MEASURED: &[&str] = &[
    "output",
    "output-format",
    "trials",
    "eta",
    "destroy-data-on",
    "precision",
    "max-trials",
    "max-time",
    "precision-metric",
];

/// Findings that are not about the set-up and so are shown, not policed:
/// noise (they come and go between identical set-ups), what the workload
/// is bound by (it changes with what the experiment varies, e.g. iodepth),
/// and the environment a trial ran in (CPU contention, other I/O on the
/// device, other openers, page cache): those are listed per side with the
/// trials they touched, and make a significant change *confounded*
/// (`compare::ENV_FINDINGS`) instead of refusing the comparison.
pub const UNPOLICED_FINDINGS: &[&str] = &[
    "high_variance",
    "outlier_trials",
    "bimodal_trials",
    "drift_across_trials",
    "drift_within_trial",
    "trials_not_converged",
    "tool_bottleneck",
    "kernel_cpu_bound",
    "cpu_contention",
    "other_device_io",
    "other_openers",
    "page_cache_on_target",
    "page_cache_kept",
];

/// The names the user may use for a fact, mapped to the one it has.
pub fn canonical_name(n: &str) -> String {
    let n = n.trim().to_ascii_lowercase().replace('-', "_");
    match n.as_str() {
        "engine" => "ioengine".into(),
        "filesystem" | "file_system" => "fs".into(),
        "device" | "device_model" => "model".into(),
        "governors" => "governor".into(),
        "cpus" => "cpu".into(),
        "dioscope" | "dioscope_version" | "fio_version" => "version".into(),
        "finding" => "findings".into(),
        "target" | "filename" | "path" => "filename".into(),
        "io_scheduler" => "scheduler".into(),
        "wc" | "cache" => "write_cache".into(),
        _ => n,
    }
}

/// Every fact of one result document.
pub fn facts(doc: &RunDoc) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut push = |key: String, name: &str, value: String| {
        out.push(Fact {
            key,
            name: name.to_string(),
            value,
        })
    };
    let version = doc
        .dioscope
        .as_ref()
        .map(|d| format!("dioscope {}", d.version))
        .unwrap_or_else(|| doc.fio_version.clone());
    push("version".into(), "version", version);
    if let Some(g) = &doc.global_options {
        for (k, v) in g.iter() {
            if !NOT_MEASURED.contains(&k) {
                push(
                    format!("global option {k}"),
                    &canonical_name(k),
                    v.to_string(),
                );
            }
        }
    }
    let mut seen: Vec<(u32, &str)> = Vec::new();
    for j in &doc.jobs {
        if seen.contains(&(j.groupid, j.jobname.as_str())) {
            continue; // a clone in fio's JSON: the same options
        }
        seen.push((j.groupid, &j.jobname));
        push(
            format!("job '{}' (group {})", j.jobname, j.groupid),
            "jobs",
            "present".into(),
        );
        for (k, v) in j.job_options.iter() {
            if k == "name" || NOT_MEASURED.contains(&k) {
                continue;
            }
            push(
                format!("job '{}' option {k}", j.jobname),
                &canonical_name(k),
                v.to_string(),
            );
        }
    }
    if let Some(d) = &doc.dioscope {
        for dj in &d.jobs {
            push(
                format!("job '{}' engine", dj.jobname),
                "ioengine",
                dj.ioengine.clone(),
            );
        }
        env_facts(
            &serde_json::to_value(&d.environment).unwrap_or_default(),
            &mut push,
        );
        push(
            "findings".into(),
            "findings",
            policed_findings(std::slice::from_ref(doc)).join(", "),
        );
    }
    out
}

/// The default job's scratch file is named by the process id
/// (`dioscope-scratch.PID.dat`): two runs of it are the same target.
fn scratch_name(p: &str) -> String {
    let (dir, file) = p
        .rsplit_once('/')
        .map(|(d, f)| (Some(d), f))
        .unwrap_or((None, p));
    let same = file
        .strip_prefix("dioscope-scratch.")
        .and_then(|r| r.strip_suffix(".dat"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
    if !same {
        return p.to_string();
    }
    match dir {
        Some(d) => format!("{d}/dioscope-scratch.PID.dat"),
        None => "dioscope-scratch.PID.dat".into(),
    }
}

/// The distinct kinds of the set-up findings of `docs`, sorted.
pub fn policed_findings(docs: &[RunDoc]) -> Vec<String> {
    finding_kinds(docs, |k| !UNPOLICED_FINDINGS.contains(&k))
}

/// The distinct kinds of the findings of `docs` that `keep` accepts.
pub fn finding_kinds(docs: &[RunDoc], keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut kinds: Vec<String> = docs
        .iter()
        .filter_map(|d| d.dioscope.as_ref())
        .flat_map(|d| d.findings.iter().map(|f| f.kind().to_string()))
        .filter(|k| keep(k))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

fn text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    }
}

/// The environment section's facts (dioscope's `environment`).
fn env_facts(env: &Value, push: &mut impl FnMut(String, &str, String)) {
    let p = |ptr: &str| text(env.pointer(ptr));
    push("kernel".into(), "kernel", p("/kernel/release"));
    push("CPU model".into(), "cpu", p("/cpu/model"));
    push("CPUs online".into(), "cpu", p("/cpu/count"));
    push("CPU governor".into(), "governor", p("/cpu/governors"));
    for (k, ptr) in [
        ("NUMA nodes", "/numa/nodes"),
        ("CPUs allowed", "/numa/cpus_allowed"),
        ("memory nodes allowed", "/numa/mems_allowed"),
    ] {
        if env.pointer(ptr).is_some() {
            push(k.into(), "numa", p(ptr));
        }
    }
    let Some(targets) = env.get("targets").and_then(Value::as_array) else {
        return;
    };
    for (i, t) in targets.iter().enumerate() {
        let tp = |ptr: &str| text(t.pointer(ptr));
        let tag = if targets.len() > 1 {
            format!("target {} ", i + 1)
        } else {
            "target ".into()
        };
        push(format!("{tag}path"), "filename", scratch_name(&tp("/path")));
        for (what, name, ptr) in [
            ("device model", "model", "/device/model"),
            ("device firmware", "firmware", "/device/firmware"),
            ("device size", "size", "/device/size_bytes"),
            ("write cache", "write_cache", "/device/queue/write_cache"),
            ("scheduler", "scheduler", "/device/queue/scheduler"),
            ("nomerges", "nomerges", "/device/queue/nomerges"),
            ("rq_affinity", "rq_affinity", "/device/queue/rq_affinity"),
            (
                "max_sectors_kb",
                "max_sectors_kb",
                "/device/queue/max_sectors_kb",
            ),
            ("nr_requests", "nr_requests", "/device/queue/nr_requests"),
            ("device NUMA node", "numa", "/device/numa_node"),
            ("file system", "fs", "/fs/fs_type"),
            ("mount options", "fs", "/fs/mount_options"),
        ] {
            if t.pointer(ptr).is_some() {
                push(format!("{tag}{what}"), name, tp(ptr));
            }
        }
    }
}

/// The differences between two sets of facts (`between` says which
/// documents), each marked expected when its name is in `expect` or
/// `allow_all`.
pub fn differences(
    a: &[Fact],
    b: &[Fact],
    between: &str,
    expect: &[String],
    allow_all: bool,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut add = |what: &str, name: &str, va: String, vb: String| {
        let expected = allow_all || expect.iter().any(|e| canonical_name(e) == name);
        out.push(Difference {
            what: what.to_string(),
            name: name.to_string(),
            between: between.to_string(),
            a: va,
            b: vb,
            expected,
        });
    };
    for fa in a {
        match b.iter().find(|fb| fb.key == fa.key) {
            Some(fb) if fb.value != fa.value => {
                add(&fa.key, &fa.name, fa.value.clone(), fb.value.clone())
            }
            Some(_) => {}
            None => add(&fa.key, &fa.name, fa.value.clone(), "(not set)".into()),
        }
    }
    for fb in b {
        if !a.iter().any(|fa| fa.key == fb.key) {
            add(&fb.key, &fb.name, "(not set)".into(), fb.value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(iodepth: &str, kernel: &str) -> RunDoc {
        use crate::results::model::{Dioscope, FindingDoc, Job};
        let mut j = Job {
            jobname: "rr".into(),
            ..Default::default()
        };
        for (k, v) in [("name", "rr"), ("iodepth", iodepth), ("trials", "5")] {
            j.job_options.insert(k, v.to_string());
        }
        let mut f = FindingDoc::default();
        f.fields.insert("kind", Value::from("high_variance"));
        RunDoc {
            jobs: vec![j],
            dioscope: Some(Dioscope {
                version: "0.1.0".into(),
                environment: serde_json::from_value(serde_json::json!({
                    "kernel": {"release": kernel},
                    "cpu": {"model": "X", "count": 2, "governors": []},
                    "targets": [{"path": "/dev/loop9",
                                 "device": {"model": null, "queue": {"scheduler": "none"}}}]
                }))
                .unwrap(),
                findings: vec![f],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn an_unnamed_difference_is_unexpected_and_a_named_one_expected() {
        let (a, b) = (facts(&doc("32", "6.1")), facts(&doc("1", "6.1")));
        let d = differences(&a, &b, "A vs B", &[], false);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].name, "iodepth");
        assert!(!d[0].expected);
        assert_eq!((d[0].a.as_str(), d[0].b.as_str()), ("32", "1"));
        let d = differences(&a, &b, "A vs B", &["iodepth".into()], false);
        assert!(d[0].expected);
        let d = differences(&a, &b, "A vs B", &[], true);
        assert!(d[0].expected);
    }

    #[test]
    fn kernel_differences_are_named_kernel_and_noise_findings_are_not_policed() {
        let (a, b) = (facts(&doc("1", "6.1")), facts(&doc("1", "6.12")));
        let d = differences(&a, &b, "A vs B", &["kernel".into()], false);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].name, "kernel");
        assert!(d[0].expected);
        // trials= differs in no way that matters, high_variance is noise.
        assert!(a.iter().all(|f| f.name != "trials"));
        assert!(a.iter().any(|f| f.key == "findings" && f.value.is_empty()));
    }

    #[test]
    fn the_default_jobs_scratch_file_is_one_target() {
        assert_eq!(
            scratch_name("/x/dioscope-scratch.123.dat"),
            scratch_name("/x/dioscope-scratch.456.dat")
        );
        assert_ne!(
            scratch_name("/x/dioscope-scratch.1.dat"),
            scratch_name("/y/dioscope-scratch.1.dat")
        );
        assert_eq!(scratch_name("/dev/sda"), "/dev/sda");
    }

    #[test]
    fn aliases_name_the_same_fact() {
        assert_eq!(canonical_name("engine"), "ioengine");
        assert_eq!(canonical_name("File-System"), "fs");
        assert_eq!(canonical_name("iodepth"), "iodepth");
    }
}
