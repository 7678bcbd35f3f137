//! Everything that can be checked before touching the system: fio's
//! invocation flags, the job options, the output formats, `--readonly`, and
//! every file the run would create.

use crate::job::{self, Plan};
use crate::outfile::Rules;
use crate::render::{self, Format, RUN_FORMATS};
use crate::results::RunDoc;
use crate::runner;
use std::path::Path;

/// The output formats of a run, in the order given, each once
/// (`--output-format=normal,json`, `--minimal`, `--append-terse`).
#[derive(Debug, Clone)]
pub struct Formats(pub Vec<&'static Format<RunDoc>>);
impl Formats {
    /// Every format's output, one after the other.
    pub fn render(&self, doc: &RunDoc) -> String {
        // Names of raw bytes (osstr) are shown as \xHH, valid in every format.
        self.0
            .iter()
            .map(|f| {
                let text = f.exporter.render(doc);
                if f.name.starts_with("json") {
                    crate::osstr::shown_json(&text)
                } else {
                    crate::osstr::shown(&text)
                }
            })
            .collect()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|f| f.name).collect()
    }
}

/// Everything that can be checked before touching the system: fio's
/// invocation flags, the job options, the output formats, `--readonly`, the
/// output file's directory.
pub fn validate(args: &[String]) -> Result<(Plan, Formats), String> {
    let (flags, rest) = crate::job::flags::split(args)?;
    if let Some(job::debug::Request::Types(t)) = &flags.debug {
        job::debug::enable(t);
    }
    let mut plan = job::parse_args(&rest).map_err(|e| e.to_string())?;
    if flags.warnings_fatal {
        if let Some(w) = plan.global.warnings.first() {
            return Err(format!("{w} (an error with --warnings-fatal)"));
        }
    }
    for w in &plan.global.warnings {
        eprintln!("dioscope: warning: {w}");
    }
    for n in &plan.global.notes {
        eprintln!("dioscope: note: {n}");
    }
    plan.global.eta_newline_s = flags.eta_newline_s;
    plan.global.status_interval_ms = flags.status_interval_ms;
    plan.global.bandwidth_log = flags.bandwidth_log;
    if !flags.sections.is_empty() {
        let names: Vec<String> = plan.jobs.iter().map(|j| j.name.clone()).collect();
        plan.jobs.retain(|j| flags.sections.contains(&j.name));
        if let Some(s) = flags.sections.iter().find(|s| !names.contains(s)) {
            return Err(format!(
                "--section={s}: no job section is named '{s}'; the sections are {}",
                names.join(", ")
            ));
        }
    }
    if let Some(max) = flags.max_jobs {
        let n: u32 = plan.jobs.iter().map(|j| j.numjobs).sum();
        if n > max {
            return Err(format!(
                "--max-jobs={max}: the jobs start {n} threads (numjobs counted); lower numjobs or raise --max-jobs"
            ));
        }
    }
    let formats = formats(&plan.global.output_format, &flags)?;
    plan.global.formats = formats.names();
    if flags.readonly {
        readonly(&plan)?;
    }
    if plan.global.profile {
        crate::profile::check_tmpdir()?;
    }
    // The result's destination, checked before anything is opened or run
    // (outfile::check_output: targets, device nodes, /dev, writability).
    // Every file the run creates, checked before anything is opened or run
    // (outfile::check: never a target or an input, a device node, FIFO,
    // socket or directory, a symlink at the name, a new file in /dev).
    let targets = runner::target_paths(&plan);
    let inputs = runner::input_paths(&plan);
    let rules = |what| Rules::new(what).targets(&targets).inputs(&inputs);
    if let Some(out) = &plan.global.output {
        crate::outfile::check(Path::new(out), &rules("--output").streams())
            .map_err(|e| e.to_string())?;
    }
    if let Some(rep) = &plan.global.report {
        crate::outfile::check(Path::new(rep), &rules("--report")).map_err(|e| e.to_string())?;
    }
    check_created(&plan)?;
    Ok((plan, formats))
}

/// Check every file the run's jobs create besides their targets (logs,
/// iologs, verify states, a program's output: each option the table marks
/// `Creates::Job`) against the targets and inputs, before the first I/O,
/// and protect those for the checks made while the run opens files.
pub fn check_created(plan: &Plan) -> Result<(), String> {
    let targets = runner::target_paths(plan);
    let inputs = runner::input_paths(plan);
    for (opt, p) in runner::created_files(plan) {
        let rules = Rules::new(opt).targets(&targets).inputs(&inputs);
        crate::outfile::check(&p, &rules).map_err(|e| {
            format!(
                "{e} (the {opt} option names this file; change it, or the job's name it is \
                 derived from)"
            )
        })?;
    }
    crate::outfile::protect(&targets, &inputs);
    Ok(())
}

/// `--output-format=a,b` (each once; empty: the default) or `--minimal`
/// (terse), whichever came last (fio), then `--append-terse`; written in
/// fio's order whatever the order given: terse, JSON, normal text, then
/// dioscope's own formats in the order given.
fn formats(given: &str, flags: &crate::job::flags::Flags) -> Result<Formats, String> {
    let mut out: Vec<&'static Format<RunDoc>> = Vec::new();
    let terse = render::find(RUN_FORMATS, "terse").expect("terse is a run format");
    if flags.minimal {
        out.push(terse);
    } else {
        for name in given.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let f = render::find(RUN_FORMATS, name)
                .ok_or_else(|| render::unknown(RUN_FORMATS, name))?;
            if !out.iter().any(|o| o.name == f.name) {
                out.push(f);
            }
        }
    }
    if out.is_empty() {
        out.push(&RUN_FORMATS[0]);
    }
    if flags.append_terse && !out.iter().any(|o| o.name == terse.name) {
        out.push(terse);
    }
    let rank = |f: &Format<RunDoc>| match f.name {
        "terse" => 0,
        "json" | "json+" => 1,
        "normal" => 2,
        _ => 3,
    };
    out.sort_by_key(|f| rank(f));
    Ok(Formats(out))
}

/// `--readonly`, as fio: refuse, before anything is opened, a job that
/// would write (its pattern, or a file it would have to lay out).
fn readonly(plan: &Plan) -> Result<(), String> {
    for j in &plan.jobs {
        // Engines whose every operation changes the target or its files,
        // whatever the direction (falloc allocates on reads, filecreate and
        // filedelete make and remove files, e4defrag moves extents).
        if j.ioengine.caps().changes_target {
            return Err(format!(
                "--readonly: job '{}' uses ioengine={}, which changes its target whatever \
                 rw= says; drop --readonly or use an engine that reads",
                j.name,
                j.ioengine.as_str()
            ));
        }
        // verify_only reads back what an earlier run wrote: no write.
        if j.rw.writes() && !j.verify_only {
            return Err(format!(
                "--readonly: job '{}' writes (rw={}); drop --readonly or make it read only (rw=read or rw=randread)",
                j.name,
                j.rw.as_str()
            ));
        }
    }
    if plan.is_default_job {
        return Err(
            "--readonly: the default job writes its scratch file first; give a job that reads an existing file or device".into(),
        );
    }
    if let Some(p) = runner::target_paths(plan).into_iter().find(|p| !p.exists()) {
        return Err(format!(
            "--readonly: {} does not exist and would be created and written; create it first or drop --readonly",
            p.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn formats_come_from_the_table() {
        let (_, f) = validate(&s(&["--name=x", "--ioengine=null", "--size=1m"])).unwrap();
        assert_eq!(f.names(), ["normal"]);
        for fmt in RUN_FORMATS {
            let a = format!("--output-format={}", fmt.name);
            let (_, f) = validate(&s(&["--name=x", "--ioengine=null", &a])).unwrap();
            assert_eq!(f.names(), [fmt.name]);
        }
        let e = validate(&s(&["--name=x", "--output-format=xml"]))
            .err()
            .unwrap();
        assert!(e.contains("'xml' is not an output format"), "{e}");
        assert!(e.contains(&render::names(RUN_FORMATS)), "{e}");
    }

    #[test]
    fn format_lists_minimal_and_append_terse() {
        let names = |a: &[&str]| {
            let mut v = vec!["--name=x", "--ioengine=null"];
            v.extend_from_slice(a);
            validate(&s(&v)).map(|(_, f)| f.names())
        };
        // fio's order, whatever the order given: terse, JSON, normal.
        assert_eq!(
            names(&["--output-format=normal,json"]).unwrap(),
            ["json", "normal"]
        );
        assert_eq!(
            names(&["--output-format=json,normal,json,terse"]).unwrap(),
            ["terse", "json", "normal"]
        );
        // The last of --minimal and --output-format wins.
        assert_eq!(
            names(&["--minimal", "--output-format=json"]).unwrap(),
            ["json"]
        );
        assert_eq!(
            names(&["--output-format=json", "--minimal"]).unwrap(),
            ["terse"]
        );
        assert_eq!(names(&["--minimal"]).unwrap(), ["terse"]);
        assert_eq!(names(&["--output-format=minimal"]).unwrap(), ["terse"]);
        assert_eq!(
            names(&["--output-format=json", "--append-terse"]).unwrap(),
            ["terse", "json"]
        );
        assert_eq!(names(&["--append-terse"]).unwrap(), ["terse", "normal"]);
        assert_eq!(
            names(&["--terse-version=3", "--minimal"]).unwrap(),
            ["terse"]
        );
        let e = names(&["--output-format=json,xml"]).unwrap_err();
        assert!(e.contains("'xml' is not an output format"), "{e}");
        let e = names(&["--terse-version=4"]).unwrap_err();
        assert!(
            e.contains("not supported by dioscope") && e.contains("3"),
            "{e}"
        );
    }

    #[test]
    fn section_and_max_jobs() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.fio");
        std::fs::write(
            &f,
            "[global]\nioengine=null\nsize=1m\n[default]\nrw=read\n[override]\nrw=write\nnumjobs=4\n",
        )
        .unwrap();
        let f = f.to_str().unwrap();
        let (p, _) = validate(&s(&[f, "--section=override"])).unwrap();
        assert_eq!(p.jobs.len(), 1);
        assert_eq!(p.jobs[0].name, "override");
        let e = validate(&s(&[f, "--section=nope"])).err().unwrap();
        assert!(e.contains("default, override"), "{e}");
        let e = validate(&s(&[f, "--max-jobs=4"])).err().unwrap();
        assert!(e.contains("5 threads"), "{e}");
        validate(&s(&[f, "--max-jobs=5"])).unwrap();
    }

    #[test]
    fn readonly_refuses_writes_before_opening_anything() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("data");
        let fa = format!("--filename={}", f.display());
        let e = validate(&s(&[
            "--readonly",
            "--name=w",
            "--rw=write",
            "--size=1m",
            &fa,
        ]))
        .err()
        .unwrap();
        assert!(e.contains("--readonly") && e.contains("rw=write"), "{e}");
        assert!(!f.exists(), "nothing may be created");
        let e = validate(&s(&[
            "--readonly",
            "--name=r",
            "--rw=read",
            "--size=1m",
            &fa,
        ]))
        .err()
        .unwrap();
        assert!(e.contains("does not exist"), "{e}");
        std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
        validate(&s(&[
            "--readonly",
            "--name=r",
            "--rw=randread",
            "--size=1m",
            &fa,
        ]))
        .unwrap();
        let e = validate(&s(&["--readonly"])).err().unwrap();
        assert!(e.contains("default job"), "{e}");
    }

    #[test]
    fn a_missing_output_directory_is_refused_before_running() {
        let e = validate(&s(&["--name=x", "--output=/nonexistent/dir/r.json"]))
            .err()
            .unwrap();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn readonly_refuses_every_engine_that_changes_its_target() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("data");
        std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
        let fa = format!("--filename={}", f.display());
        let mut refused = Vec::new();
        for k in crate::engines::EngineKind::ALL {
            let e = format!("--ioengine={}", k.as_str());
            let args = s(&[
                "--readonly",
                "--name=r",
                "--rw=read",
                "--size=1m",
                &fa,
                &e,
                "--donorname=x",
            ]);
            let said = validate(&args).err().unwrap_or_default();
            let says = said.contains("changes its target");
            assert_eq!(says, k.caps().changes_target, "{}: {said}", k.as_str());
            if says {
                refused.push(k.as_str());
            }
        }
        // The engines the readonly check knew by name, and those it missed.
        for e in [
            "falloc",
            "filecreate",
            "filedelete",
            "e4defrag",
            "dircreate",
            "dirdelete",
            "filesetxattr",
        ] {
            assert!(refused.contains(&e), "{e}: {refused:?}");
        }
        assert!(!refused.contains(&"filestat") && !refused.contains(&"psync"));
    }
}
