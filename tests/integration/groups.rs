//! Run phases and reporting groups (runner/plan.rs), `exit_what`, and reads
//! of a file `create_on_open` made empty (issue 15).
//!
//! fio keeps two numberings apart: `stonewall` makes a job wait for every
//! job before it (a new run phase, and a new reporting group), `new_group`
//! only starts a reporting group (`groupid`), whose jobs still run beside
//! the ones before it. The expected groupids below are what fio 3.33
//! prints for the same job files. Most jobs use the null engine, whose I/O
//! completes at once: what a job did depends on its options, not on the
//! machine's speed.

use crate::common::*;
use std::path::Path;

fn job_file(dir: &Path, text: &str) -> std::process::Output {
    std::fs::write(dir.join("j.fio"), text).unwrap();
    run_in(dir, &["--eta=never", "--output-format=json", "j.fio"])
}

fn ok(dir: &Path, text: &str) -> serde_json::Value {
    let o = job_file(dir, text);
    assert_eq!(o.status.code(), Some(0), "{text}\n{}", stderr(&o));
    json(&o)
}

fn jobs(v: &serde_json::Value) -> Vec<(String, u64)> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["groupid"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn job<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {v}"))
}

fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// fio's examples/exitwhat.fio, its groups and jobs (null engine, no exitall).
fn exitwhat_shape(group_reporting: u8) -> String {
    format!(
        "[global]\nioengine=null\nbs=4k\nsize=64k\ngroup_reporting={group_reporting}\n\
         [slow1]\nrw=read\nnew_group=1\n\
         [fast1]\nnew_group=1\nrw=randrw\nnumjobs=2\n\
         [slow2]\nstonewall=1\nrw=write\nnew_group=1\n\
         [fast2]\nrw=randrw\nnumjobs=2\n\
         [runsnever]\nrw=randrw\nnumjobs=2\n"
    )
}

#[test]
fn groupids_are_numbered_as_fio_numbers_them() {
    let d = tempfile::tempdir().unwrap();
    // fio 3.33 on the same file: a first job's new_group does not bump the
    // number; clones share their job's group; stonewall + new_group bump once.
    let v = ok(d.path(), &exitwhat_shape(0));
    let want: Vec<(String, u64)> = [
        ("slow1", 0),
        ("fast1", 1),
        ("fast1", 1),
        ("slow2", 2),
        ("fast2", 2),
        ("fast2", 2),
        ("runsnever", 2),
        ("runsnever", 2),
    ]
    .iter()
    .map(|&(a, b)| (a.to_string(), b))
    .collect();
    assert_eq!(jobs(&v), want);
    // With group_reporting fio prints one entry per reporting group, named
    // after its first job: three here.
    let v = ok(d.path(), &exitwhat_shape(1));
    let want: Vec<(String, u64)> = [("slow1", 0), ("fast1", 1), ("slow2", 2)]
        .iter()
        .map(|&(a, b)| (a.to_string(), b))
        .collect();
    assert_eq!(jobs(&v), want);
    // slow2's entry holds slow2 and the clones of fast2 and runsnever:
    // 16 writes of slow2, 5 × 16 of the randrw jobs split between directions.
    let g2 = job(&v, "slow2");
    assert_eq!(
        n(&g2["read"]["total_ios"]) + n(&g2["write"]["total_ios"]),
        16 * 5
    );
}

#[test]
fn group_reporting_merges_within_each_reporting_group_of_one_phase() {
    let d = tempfile::tempdir().unwrap();
    // a and b run at once (new_group, no stonewall) but report apart.
    let v = ok(
        d.path(),
        "[global]\nioengine=null\nbs=4k\nrw=read\ngroup_reporting=1\nnumjobs=2\n\
         [a]\nsize=1m\n[b]\nnew_group=1\nsize=2m\n",
    );
    assert_eq!(jobs(&v), vec![("a".to_string(), 0), ("b".to_string(), 1)]);
    assert_eq!(n(&job(&v, "a")["read"]["total_ios"]), 2 * 256);
    assert_eq!(n(&job(&v, "b")["read"]["total_ios"]), 2 * 512);
    // Both started together: one job_start.
    assert_eq!(job(&v, "a")["job_start"], job(&v, "b")["job_start"], "{v}");
}

#[test]
fn new_group_runs_beside_and_stonewall_waits() {
    let d = tempfile::tempdir().unwrap();
    let two = |how: &str| {
        format!(
            "[global]\nioengine=null\nrw=read\nbs=4k\ntime_based=1\nruntime=2\n\
             [a]\n[b]\n{how}=1\n"
        )
    };
    // Each job runs 2 s of its own clock: one after the other take at
    // least 4 s; side by side about 2 s (the margin absorbs a loaded host).
    let t = std::time::Instant::now();
    let v = ok(d.path(), &two("new_group"));
    let beside = t.elapsed().as_secs_f64();
    assert_eq!(jobs(&v), vec![("a".to_string(), 0), ("b".to_string(), 1)]);
    assert!(
        beside < 3.6,
        "new_group jobs took {beside:.2} s: they did not overlap"
    );
    assert_eq!(job(&v, "a")["job_start"], job(&v, "b")["job_start"]);

    let t = std::time::Instant::now();
    let v = ok(d.path(), &two("stonewall"));
    let serial = t.elapsed().as_secs_f64();
    assert_eq!(jobs(&v), vec![("a".to_string(), 0), ("b".to_string(), 1)]);
    assert!(
        serial >= 4.0,
        "stonewall jobs took {serial:.2} s: they overlapped"
    );
    let (sa, sb) = (n(&job(&v, "a")["job_start"]), n(&job(&v, "b")["job_start"]));
    assert!(
        sb >= sa + 1900,
        "b started {} ms after a",
        sb as i64 - sa as i64
    );
}

/// a finishes at once; a2 (its reporting group) and b (another group,
/// running beside) would run on; c waits behind a stonewall.
fn exit_file(what: &str) -> String {
    format!(
        "[global]\nioengine=null\nbs=4k\nrw=read\nexitall=1\n\
         [a]\nsize=1m\nexit_what={what}\n\
         [a2]\ntime_based=1\nruntime=30\n\
         [b]\nnew_group=1\ntime_based=1\nruntime=2\n\
         [c]\nstonewall=1\nsize=1m\n"
    )
}

fn runtime_ms(v: &serde_json::Value, name: &str) -> u64 {
    n(&job(v, name)["read"]["runtime"])
}

#[test]
fn exit_what_group_stops_only_the_finishers_reporting_group() {
    let d = tempfile::tempdir().unwrap();
    let v = ok(d.path(), &exit_file("group"));
    assert_eq!(n(&job(&v, "a")["read"]["total_ios"]), 256);
    assert!(
        runtime_ms(&v, "a2") < 15_000,
        "a2 ran {} ms",
        runtime_ms(&v, "a2")
    );
    // b is of group 1: it runs its whole 2 s (fio 3.33: 2001 ms).
    assert!(
        runtime_ms(&v, "b") >= 1_900,
        "b ran {} ms",
        runtime_ms(&v, "b")
    );
    // The next phase still runs.
    assert_eq!(n(&job(&v, "c")["read"]["total_ios"]), 256);
    let notes = v["dioscope"]["notes"].to_string();
    assert!(notes.contains("reporting group 0"), "{notes}");
}

#[test]
fn exit_what_stonewall_stops_every_running_job_then_the_next_phase_runs() {
    let d = tempfile::tempdir().unwrap();
    let v = ok(d.path(), &exit_file("stonewall"));
    assert!(
        runtime_ms(&v, "a2") < 15_000,
        "a2 ran {} ms",
        runtime_ms(&v, "a2")
    );
    assert!(
        runtime_ms(&v, "b") < 1_900,
        "b ran {} ms",
        runtime_ms(&v, "b")
    );
    assert_eq!(n(&job(&v, "c")["read"]["total_ios"]), 256);
    assert_eq!(v["dioscope"]["interrupted"], false);
}

#[test]
fn exit_what_all_stops_everything_and_later_phases_report_zeros() {
    let d = tempfile::tempdir().unwrap();
    let v = ok(d.path(), &exit_file("all"));
    assert!(
        runtime_ms(&v, "a2") < 15_000,
        "a2 ran {} ms",
        runtime_ms(&v, "a2")
    );
    assert!(
        runtime_ms(&v, "b") < 1_900,
        "b ran {} ms",
        runtime_ms(&v, "b")
    );
    // fio lists a job that never started, with no I/O, in its group.
    let c = job(&v, "c");
    assert_eq!(n(&c["read"]["total_ios"]), 0, "{c}");
    assert_eq!(n(&c["groupid"]), 2);
    let notes = v["dioscope"]["notes"].to_string();
    assert!(notes.contains("exit_what=all"), "{notes}");
}

#[test]
fn exitall_on_one_job_holds_for_every_job_of_the_run() {
    let d = tempfile::tempdir().unwrap();
    // fio: exitall is a run-wide switch. Here the job without it finishes
    // first, and its end still stops its group.
    let v = ok(
        d.path(),
        "[global]\nioengine=null\nbs=4k\nrw=read\n\
         [short]\nsize=1m\n[long]\ntime_based=1\nruntime=30\nexitall=1\n",
    );
    assert!(
        runtime_ms(&v, "long") < 15_000,
        "long ran {} ms",
        runtime_ms(&v, "long")
    );
}

#[test]
fn exitwhat_example_ends_with_each_job_stopped_where_fio_stops_it() {
    let d = tempfile::tempdir().unwrap();
    // fio's examples/exitwhat.fio, scaled down: fast1 and fast2 would take
    // 20 s per 4 KiB at rate=200; slow1's end (exit_what=stonewall) stops
    // fast1, slow2's (exit_what=all) stops fast2 and runsnever.
    let t = std::time::Instant::now();
    let v = ok(
        d.path(),
        "[global]\nioengine=null\nsize=8m\nblocksize=4096\ngroup_reporting=0\nexitall=1\n\
         [slow1]\nrw=read\nnew_group=1\nthinktime=1000\nnumber_ios=200\nexit_what=stonewall\n\
         [fast1]\nnew_group=1\nrw=randrw\nnumjobs=2\niodepth=16\nrate=200,200,200\n\
         [slow2]\nstonewall=1\nrw=write\nnew_group=1\nthinktime=1000\nnumber_ios=200\n\
         exit_what=all\n\
         [fast2]\nrw=randrw\nnumjobs=2\niodepth=16\nrate=200,200,200\n\
         [runsnever]\nrw=randrw\nnumjobs=2\niodepth=16\nrate=200,200,200\n",
    );
    assert!(t.elapsed().as_secs() < 15, "took {:?}", t.elapsed());
    assert_eq!(n(&job(&v, "slow1")["read"]["total_ios"]), 200);
    assert_eq!(n(&job(&v, "slow2")["write"]["total_ios"]), 200);
    for name in ["fast1", "fast2", "runsnever"] {
        for j in v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["jobname"] == name)
        {
            let rt = n(&j["read"]["runtime"]).max(n(&j["write"]["runtime"]));
            assert!(rt < 10_000, "{name} ran {rt} ms");
        }
    }
}

#[test]
fn create_on_open_reads_past_the_end_count_nothing_on_async_engines() {
    let d = tempfile::tempdir().unwrap();
    // fio 3.33, libaio, rw=read of a file create_on_open made empty: 2048
    // reads of 4 KiB over 8 MiB, 0 bytes, no error, exit 0.
    let v = ok(
        d.path(),
        "[v]\nioengine=libaio\niodepth=8\ndirect=1\nbs=4k\nsize=1m\nrw=read\n\
         create_on_open=1\nfilename=v.dat\n",
    );
    let r = &job(&v, "v")["read"];
    assert_eq!(n(&r["total_ios"]), 256, "{r}");
    assert_eq!(n(&r["io_bytes"]), 0, "{r}");
    assert_eq!(n(&job(&v, "v")["error"]), 0);
    assert_eq!(std::fs::metadata(d.path().join("v.dat")).unwrap().len(), 0);
    // randrw: the writes land, the reads past the end read nothing.
    let v = ok(
        d.path(),
        "[w]\nioengine=libaio\niodepth=8\ndirect=1\nbs=4k\nsize=1m\nrw=randrw\n\
         create_on_open=1\nfilename=w.dat\n",
    );
    let j = job(&v, "w");
    assert!(n(&j["write"]["io_bytes"]) > 0, "{j}");
    assert!(n(&j["read"]["total_ios"]) > 0, "{j}");
    assert!(std::fs::metadata(d.path().join("w.dat")).unwrap().len() <= 1 << 20);
}

#[test]
fn create_on_open_read_past_the_end_fails_a_sync_engine_as_in_fio() {
    let d = tempfile::tempdir().unwrap();
    // fio 3.33 with psync: err=5 "full resid" on the first read, exit 1.
    let o = job_file(
        d.path(),
        "[v]\nioengine=psync\ndirect=1\nbs=4k\nsize=1m\nrw=read\n\
         create_on_open=1\nfilename=v.dat\n",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(n(&job(&v, "v")["error"]), 5, "EIO");
    assert!(stderr(&o).contains("past the end"), "{}", stderr(&o));
}
