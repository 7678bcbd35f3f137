//! fio job files run unchanged.

use crate::common::*;

const FIO_JOB: &str = "\
; a typical fio job file
[global]
ioengine=libaio
direct=1
bs=4k
size=2m
thread
group_reporting=0
filename=${DIOSCOPE_TEST_TARGET}

[reader]
rw=randread
iodepth=8

# a second job in the same group
[writer]
rw=write
bs=64k
";

#[test]
fn fio_job_file_with_global_and_two_jobs() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("two.fio");
    std::fs::write(&job, FIO_JOB).unwrap();
    let o = std::process::Command::new(bin())
        .args([job.to_str().unwrap(), "--output-format=json"])
        .current_dir(d.path())
        .env("DIOSCOPE_TEST_TARGET", "data.bin")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let jobs = j["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["jobname"], "reader");
    assert_eq!(jobs[0]["read"]["io_bytes"], 2 << 20);
    assert_eq!(jobs[0]["job options"]["ioengine"], "libaio");
    assert_eq!(jobs[1]["jobname"], "writer");
    assert_eq!(jobs[1]["write"]["io_bytes"], 2 << 20);
    assert_eq!(jobs[1]["write"]["total_ios"], 32);
    assert_eq!(jobs[0]["groupid"], jobs[1]["groupid"]);
    assert!(d.path().join("data.bin").exists());
}

#[test]
fn stonewall_makes_groups_and_include_works() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("common.inc"), "ioengine=null\nsize=1m\n").unwrap();
    std::fs::write(
        d.path().join("g.fio"),
        "[global]\ninclude common.inc\n[a]\nrw=read\n[b]\nstonewall\nrw=randread\n",
    )
    .unwrap();
    let o = run_in(d.path(), &["g.fio", "--output-format=json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["jobs"][0]["groupid"], 0);
    assert_eq!(j["jobs"][1]["groupid"], 1);
}

#[test]
fn job_file_errors_point_at_the_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("bad.fio"),
        "[global]\nbs=4k\n[a]\niodepht=4\n",
    )
    .unwrap();
    let o = run_in(d.path(), &["bad.fio"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.fio:4") && e.contains("'iodepth'"), "{e}");
}

/// fio names a job by its section: a `name=` in [global] names none (it
/// stays in the JSON's "global options"), a `name=` in a section renames
/// that one job. Anything keyed by job name (compare) keeps them apart.
#[test]
fn a_global_name_leaves_each_job_its_section_name() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("ss.fio"),
        "[global]\nname=steady-state\nioengine=null\nsize=1m\ntrials=2\n\
         [seq-read]\nrw=read\n[rand-read]\nrw=randread\n[third]\nname=renamed\n",
    )
    .unwrap();
    let o = run_in(
        d.path(),
        &["ss.fio", "--output-format=json", "--output=a.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("a.json")).unwrap()).unwrap();
    let names: Vec<&str> = j["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["seq-read", "rand-read", "renamed"]);
    assert_eq!(j["global options"]["name"], "steady-state");
    // The text report names each job as fio's does.
    let o = run_in(d.path(), &["ss.fio"]);
    let text = stdout(&o);
    for n in ["seq-read", "rand-read", "renamed"] {
        assert!(text.contains(&format!("{n}: (g")), "{n}: {text}");
    }
    assert!(!text.contains("steady-state:"), "{text}");
    // compare, keyed by job name: three jobs, not one.
    std::fs::copy(d.path().join("a.json"), d.path().join("b.json")).unwrap();
    let o = run_in(
        d.path(),
        &["compare", "a.json", "b.json", "--output-format=json"],
    );
    let v = json(&o);
    let compared: Vec<&str> = v["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(compared, ["seq-read", "rand-read", "renamed"], "{v}");
}
