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
        assert!(!text.is_empty() || f.contains("hist"), "{f} is empty");
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
    let o = run_file(
        d.path(),
        "[global]\nioengine=null\nrw=read\nsize=64m\n\
         [w]\nwrite_lat_log=w\nlog_avg_msec=20\nlog_window_value=both\nlog_offset=1\n\
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
