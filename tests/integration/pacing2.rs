//! fio job-file forms from its examples and t/jobs: bare log options, the
//! window and issue-time log columns, /dev/null and /dev/zero as targets,
//! verify on the null engine and with intervals larger than a block,
//! ignore_error, io_submit_mode=offload and gtod_cpu.

use crate::common::*;
use std::path::Path;

fn run_file(dir: &Path, job: &str) -> std::process::Output {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    run_in(dir, &["run", "job.fio", "--output-format=json"])
}

fn ok_json(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    json(o)
}

#[test]
fn a_bare_log_option_logs_under_the_job_name() {
    let d = tempfile::tempdir().unwrap();
    let o = run_file(
        d.path(),
        "[global]\nioengine=null\nsize=1m\nwrite_bw_log\nwrite_lat_log\nwrite_iops_log\n\
         write_hist_log\nlog_hist_msec=10\n[myjob]\nrw=read\n",
    );
    ok_json(&o);
    for f in [
        "myjob_bw.1.log",
        "myjob_iops.1.log",
        "myjob_clat.1.log",
        "myjob_lat.1.log",
        "myjob_slat.1.log",
        "myjob_clat_hist.1.log",
    ] {
        let text = std::fs::read_to_string(d.path().join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        // The slat log is empty at iodepth 1 on null: as in fio, an I/O
        // that completes when submitted has no submission latency.
        assert!(
            !text.is_empty() || f.contains("hist") || f.contains("slat"),
            "{f} is empty"
        );
    }
    // With a value it is still the prefix; =0 turns it off.
    let o = run_file(
        d.path(),
        "[other]\nioengine=null\nsize=64k\nwrite_bw_log=pre\nwrite_iops_log=0\n",
    );
    ok_json(&o);
    assert!(d.path().join("pre_bw.1.log").exists());
    assert!(!d.path().join("other_iops.1.log").exists());
    assert!(!d.path().join("0_iops.1.log").exists());
}

#[test]
fn log_window_value_both_and_log_issue_time_in_the_files() {
    let d = tempfile::tempdir().unwrap();
    // 64m on the null engine ends in a few ms, less than one 20 ms window
    // (a sliver of a last window is not written): [w] runs for 150 ms.
    let o = run_file(
        d.path(),
        "[global]\nioengine=null\nrw=read\nsize=64m\n\
         [w]\nwrite_lat_log=w\nlog_avg_msec=20\nlog_window_value=both\nlog_offset=1\n\
         time_based=1\nruntime=150ms\n\
         [i]\nwrite_lat_log=i\nlog_offset=1\nlog_issue_time=1\n",
    );
    ok_json(&o);
    let w = std::fs::read_to_string(d.path().join("w_clat.1.log")).unwrap();
    assert!(!w.is_empty(), "no windows");
    for l in w.lines() {
        let f: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
        // time, mean, max, direction, bs, offset, prio
        assert_eq!(f.len(), 7, "{l}");
        assert!(f[2] >= f[1], "the maximum is at least the mean: {l}");
    }
    let i = std::fs::read_to_string(d.path().join("i_clat.2.log")).unwrap();
    assert!(!i.is_empty());
    for l in i.lines().take(1000) {
        let f: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
        // time (ms), clat, direction, bs, offset, prio, issue time (ns)
        assert_eq!(f.len(), 7, "{l}");
        let done_ns = f[0] * 1_000_000;
        assert!(
            f[6] <= done_ns + 1_000_000 && f[6] + f[1] + 1_000_000 >= done_ns,
            "issued at {} ns, done in ms {} after {} ns: {l}",
            f[6],
            f[0],
            f[1]
        );
    }
    // A value fio does not know is refused with the choices.
    let o = run_file(
        d.path(),
        "[x]\nioengine=null\nsize=1m\nlog_window_value=median\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("avg, max or both"), "{}", stderr(&o));
}

#[test]
fn dev_null_and_dev_zero_are_targets_as_in_fio() {
    let d = tempfile::tempdir().unwrap();
    let j = ok_json(&run_in(
        d.path(),
        &[
            "--name=w",
            "--filename=/dev/null",
            "--rw=write",
            "--bs=128k",
            "--size=8m",
            "--output-format=json",
        ],
    ));
    assert_eq!(j["jobs"][0]["write"]["io_bytes"], 8 << 20);
    let j = ok_json(&run_in(
        d.path(),
        &[
            "--name=r",
            "--filename=/dev/zero",
            "--rw=randread",
            "--size=8m",
            "--output-format=json",
        ],
    ));
    assert_eq!(j["jobs"][0]["read"]["io_bytes"], 8 << 20);
    assert_eq!(j["dioscope"]["targets"][0]["kind"], "null_device");
    // Reading /dev/null returns nothing: an error, as fio's EIO.
    let o = run_in(
        d.path(),
        &["--name=r", "--filename=/dev/null", "--rw=read", "--size=1m"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // No size of its own.
    let o = run_in(
        d.path(),
        &["--name=w", "--filename=/dev/null", "--rw=write"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("size="), "{}", stderr(&o));
    // O_DIRECT: the kernel refuses it, as fio finds.
    let o = run_in(
        d.path(),
        &[
            "--name=r",
            "--filename=/dev/zero",
            "--rw=read",
            "--size=1m",
            "--direct=1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("direct=0"), "{}", stderr(&o));
    // Other character devices stay refused, by device number, not name:
    // /dev/full (1:7), /dev/urandom (1:9); /dev/null under another name runs.
    for p in ["/dev/full", "/dev/urandom"] {
        let o = run_in(
            d.path(),
            &[
                "--name=w",
                &format!("--filename={p}"),
                "--rw=write",
                "--size=1m",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{p}");
        assert!(
            stderr(&o).contains("character device"),
            "{p}: {}",
            stderr(&o)
        );
    }
    if is_root() {
        let node = d.path().join("null-by-another-name");
        let ok = std::process::Command::new("mknod")
            .args([node.to_str().unwrap(), "c", "1", "3"])
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            let j = ok_json(&run_in(
                d.path(),
                &[
                    "--name=w",
                    &format!("--filename={}", node.display()),
                    "--rw=write",
                    "--size=1m",
                    "--output-format=json",
                ],
            ));
            assert_eq!(j["jobs"][0]["write"]["io_bytes"], 1 << 20);
        }
    }
}

#[test]
fn verify_on_the_null_engine_checks_nothing_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let j = ok_json(&run_in(
        d.path(),
        &[
            "--name=v",
            "--ioengine=null",
            "--rw=randwrite",
            "--size=4m",
            "--verify=crc32c-intel",
            "--verify_backlog=1m",
            "--verify_async=2",
            "--output-format=json",
        ],
    ));
    assert!(
        j["dioscope"]["verify"].is_null(),
        "no verify result: {}",
        j["dioscope"]["verify"]
    );
    let notes = j["dioscope"]["notes"].to_string();
    assert!(
        notes.contains("checked nothing") && notes.contains("ioengine=null"),
        "{notes}"
    );
    assert_eq!(j["jobs"][0]["write"]["io_bytes"], 4 << 20);
}

#[test]
fn a_verify_interval_larger_than_the_block_is_the_block() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("v.dat");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "--name=v".to_string(),
            format!("--filename={}", f.display()),
            "--size=1m".into(),
            "--bs=512".into(),
            "--verify=md5".into(),
            "--verify_interval=1m".into(),
            "--output-format=json".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let a = args(&["--rw=write"]);
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    let j = ok_json(&run_in(d.path(), &a));
    let v = &j["dioscope"]["verify"]["v"];
    assert_eq!(v["interval"], 512, "{v}");
    assert_eq!(v["checked"], 2048, "{v}");
    assert_eq!(v["bad"], 0, "{v}");
    // Each 512-byte block carries its own header: a flipped byte in one
    // is found in that one only.
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
    file.write_all_at(b"X", 512 * 7 + 100).unwrap();
    drop(file);
    let a = args(&["--rw=read", "--verify_only=1"]);
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    let v = &j["dioscope"]["verify"]["v"];
    assert_eq!(v["bad"], 1, "{v}");
    assert_eq!(v["bad_blocks"][0][1]["offset"], 512 * 7, "{v}");
}

/// The CPU list a thread of `pid` named `comm` may run on, once it exists.
fn thread_cpus(pid: u32, comm: &str) -> Option<String> {
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let p = t.path();
        if std::fs::read_to_string(p.join("comm")).ok()?.trim() == comm {
            let st = std::fs::read_to_string(p.join("status")).ok()?;
            return st
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string());
        }
    }
    None
}

#[test]
fn gtod_cpu_keeps_every_worker_off_that_cpu() {
    if !can_run(
        "two CPUs",
        std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2,
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("job.fio"),
        "[global]\nioengine=null\nsize=1g\ntime_based\nruntime=3\n\
         [a]\ngtod_cpu=1\n[b]\nrw=randread\n",
    )
    .unwrap();
    let child = std::process::Command::new(bin())
        .args(["run", "job.fio", "--output-format=json"])
        .current_dir(d.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // The job that asked and the one that did not: both kept to CPU 0
    // once their threads are set up (a thread is named before it is pinned).
    wait_for("both workers on CPU 0 only", 10, || {
        ["a.0", "b.0"]
            .iter()
            .all(|c| thread_cpus(pid, c).as_deref() == Some("0"))
    });
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A CPU that does not exist is refused before anything runs.
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--gtod_cpu=4096",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("CPU 4096 does not exist"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn offload_runs_a_pool_of_submitters_sharing_the_job() {
    let d = tempfile::tempdir().unwrap();
    // The pool: iodepth submitter threads per worker, named after it.
    let child = std::process::Command::new(bin())
        .args([
            "--name=o",
            "--ioengine=null",
            "--rw=randread",
            "--size=1g",
            "--iodepth=4",
            "--io_submit_mode=offload",
            "--time_based",
            "--runtime=2",
            "--output-format=json",
        ])
        .current_dir(d.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_for("four submitters", 10, || {
        (0..4).all(|k| thread_cpus(pid, &format!("o.0.s{k}")).is_some())
    });
    assert!(thread_cpus(pid, "o.0.s4").is_none(), "no fifth submitter");
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        j["jobs"].as_array().unwrap().len(),
        1,
        "one result per job, as fio"
    );
    assert!(j["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0);

    // Their shares add up to the job's size, each block once.
    let f = d.path().join("o.dat");
    std::fs::write(&f, vec![7u8; 1 << 20]).unwrap();
    let j = ok_json(&run_in(
        d.path(),
        &[
            "--name=o",
            &format!("--filename={}", f.display()),
            "--ioengine=psync",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=8",
            "--io_submit_mode=offload",
            "--output-format=json",
        ],
    ));
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 256);
    assert_eq!(j["jobs"][0]["read"]["io_bytes"], 1 << 20);

    // The job's rate, shared: together they keep it.
    let j = ok_json(&run_in(
        d.path(),
        &[
            "--name=o",
            &format!("--filename={}", f.display()),
            "--rw=randread",
            "--bs=4k",
            "--iodepth=4",
            "--io_submit_mode=offload",
            "--rate_iops=400",
            "--time_based",
            "--runtime=2",
            "--output-format=json",
        ],
    ));
    let iops = j["jobs"][0]["read"]["iops"].as_f64().unwrap();
    assert!(
        (380.0..=420.0).contains(&iops),
        "{iops} IOPS, asked for 400"
    );

    // A job whose per-worker state a pool would split is refused.
    let o = run_in(
        d.path(),
        &[
            "--name=o",
            "--ioengine=null",
            "--size=1m",
            "--io_submit_mode=offload",
            "--write_lat_log=x",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("io_submit_mode=offload with write_lat_log"),
        "{}",
        stderr(&o)
    );
}

/// A write job over a 64 MiB sparse file on a 32 MiB ext4: it runs out
/// of space. Returns its exit code and JSON.
fn enospc_job(extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let fs = MountedFs::new(32 << 20, "ext4");
    let f = fs.path().join("sparse.dat");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--name=w".to_string(),
        format!("--filename={}", f.display()),
        "--rw=write".into(),
        "--bs=1m".into(),
        "--direct=1".into(),
        "--ioengine=psync".into(),
        "--output-format=json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_in(out.path(), &a);
    (o.status.code(), json(&o), stderr(&o))
}

#[test]
fn ignore_error_lists_errnos_per_type_as_fio_parses_them() {
    // Bad lists are refused, naming the entry.
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--ignore_error=,EBOGUS",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("'EBOGUS' is not an errno name"),
        "{}",
        stderr(&o)
    );
    if !can_run(
        "root, losetup and mkfs.ext4",
        is_root() && have_tool("mkfs.ext4"),
    ) {
        return;
    }
    // ENOSPC listed for writes, by name, with continue_on_error=write: the
    // job writes what fits, goes on, and the run succeeds (fio 3.33: exit 0).
    let (code, j, err) =
        enospc_job(&["--continue_on_error=write", "--ignore_error=EIO:EIO,ENOSPC"]);
    assert_eq!(code, Some(0), "{err}");
    let notes = j["dioscope"]["notes"].to_string();
    assert!(notes.contains("ignore_error lists were ignored"), "{notes}");
    assert_eq!(j["dioscope"]["io_errors"], 0);
    let written = j["jobs"][0]["write"]["io_bytes"].as_u64().unwrap();
    assert!(written > 0 && written < 64 << 20, "{written}");
    // By number too, and a list alone turns continue_on_error on for its
    // type (fio 3.33: exit 0).
    let (code, _, err) = enospc_job(&["--ignore_error=,28"]);
    assert_eq!(code, Some(0), "{err}");
    // Listed for reads only (fio reads `ENOSPC`, `ENOSPC,` and `ENOSPC:28`
    // so): writes still fail (fio 3.33: exit 1, error 28).
    for list in ["ENOSPC", "ENOSPC,", "ENOSPC:28"] {
        let (code, j, _) =
            enospc_job(&["--continue_on_error=all", &format!("--ignore_error={list}")]);
        assert_eq!(code, Some(1), "{list}");
        assert_eq!(j["dioscope"]["first_error"]["errno"], 28, "{list}");
        assert_eq!(j["dioscope"]["stopped_by_error"], true, "{list}");
    }
}

#[test]
fn the_null_engine_is_as_large_as_filesize_as_in_fio() {
    // fio's t0023/t0024 size null jobs with filesize= only: 2 MiB, not 1 GiB.
    let d = tempfile::tempdir().unwrap();
    let j = ok_json(&run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--filesize=2m",
            "--rw=randtrimwrite",
            "--output-format=json",
        ],
    ));
    assert_eq!(j["jobs"][0]["write"]["io_bytes"], 2 << 20);
}
