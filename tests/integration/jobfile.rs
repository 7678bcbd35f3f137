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
