//! Bad input: clear errors, exit 2, nothing written.

use crate::common::*;

#[test]
fn unknown_option_names_the_closest() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(d.path(), &["--blocksiz=4k"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("blocksiz") && e.contains("'blocksize'") && e.contains("'bs'"),
        "{e}"
    );
    assert!(entries(d.path()).is_empty(), "nothing may be written");
}

#[test]
fn bad_value_names_the_value_and_an_example() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(d.path(), &["--bs=banana"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("'banana'") && e.contains("bs=4k"), "{e}");
    assert!(entries(d.path()).is_empty());
}

#[test]
fn run_subcommand_and_bare_form_agree() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        vec![
            "run",
            "--name=a",
            "--ioengine=null",
            "--size=1m",
            "--output-format=json",
        ],
        vec![
            "--name=a",
            "--ioengine=null",
            "--size=1m",
            "--output-format=json",
        ],
    ] {
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["jobs"][0]["read"]["total_ios"], 256);
    }
}

#[test]
fn misaligned_block_size_is_refused_before_io() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=m",
            "--filename=f.dat",
            "--size=1m",
            "--bs=1000",
            "--direct=1",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("bs=1000") && e.contains("alignment") && e.contains("bs=1024"),
        "{e}"
    );
}

#[test]
fn missing_device_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--filename=/dev/does-not-exist-dioscope",
            "--rw=read",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/dev/does-not-exist-dioscope"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn output_file_is_written_whole() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=a",
            "--ioengine=null",
            "--size=4m",
            "--output-format=json",
            "--output=res.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("res.json")).unwrap()).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 1024);
    assert_eq!(
        entries(d.path()),
        vec!["res.json"],
        "no temporary file left behind"
    );
}

#[test]
fn output_into_missing_directory_fails_before_running() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=a",
            "--filename=f",
            "--size=1m",
            "--output=nodir/res.json",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        entries(d.path()).is_empty(),
        "the job must not have laid out its file"
    );
}

#[test]
fn help_lists_every_option_from_the_table() {
    let o = run_in(std::path::Path::new("."), &["--help"]);
    let h = stdout(&o);
    for name in [
        "bs",
        "iodepth",
        "ioengine",
        "percentile_list",
        "output-format",
        "ramp_time",
    ] {
        assert!(h.contains(&format!("--{name}")), "--help lacks {name}");
    }
}

#[test]
fn options_reference_in_docs_is_generated_from_the_table() {
    let o = run_in(std::path::Path::new("."), &["options", "--markdown"]);
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/OPTIONS.md")).unwrap();
    assert_eq!(
        stdout(&o),
        docs,
        "docs/OPTIONS.md is stale: regenerate with `dioscope options --markdown > docs/OPTIONS.md`"
    );
}

#[test]
fn fio_option_classification_in_docs_is_generated_from_the_tables() {
    let o = run_in(std::path::Path::new("."), &["options", "--fio-compat"]);
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/FIO-OPTIONS.md"))
        .unwrap();
    assert_eq!(
        stdout(&o),
        docs,
        "docs/FIO-OPTIONS.md is stale: regenerate with \
         `dioscope options --fio-compat > docs/FIO-OPTIONS.md`"
    );
    // Every refused option of the README's list is refused by the tables.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let refused: Vec<&str> = docs
        .lines()
        .filter(|l| l.contains("| refused |"))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    assert!(refused.len() > 30, "{}", refused.len());
    for r in &refused {
        assert!(
            readme.contains(&format!("`{r}`")),
            "README.md does not list the refused {r}"
        );
    }
}

#[test]
fn progress_only_on_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "--name=p",
        "--ioengine=null",
        "--size=1g",
        "--time_based",
        "--runtime=2",
        "--output-format=json",
    ];
    // Not a terminal: no progress at all.
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        !stderr(&o).contains("IOPS"),
        "progress on a pipe: {}",
        stderr(&o)
    );
    // A terminal (a pty from util-linux's script): elapsed, remaining, IOPS, bandwidth.
    if !can_run("script (util-linux)", have_tool("script")) {
        return;
    }
    let cmd = format!("{} {} 2>&1 >/dev/null", bin(), args.join(" "));
    let mut c = std::process::Command::new("script");
    c.args(["-qefc", &cmd, "/dev/null"]).current_dir(d.path());
    let o = output_within(c, std::time::Duration::from_secs(60));
    let tty = String::from_utf8_lossy(&o.stdout);
    assert!(
        tty.contains("elapsed")
            && tty.contains("remaining")
            && tty.contains("IOPS")
            && tty.contains("BW"),
        "{tty}"
    );
}

#[test]
fn summary_header_shows_block_sizes_as_given() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--rw=randrw",
            "--bs=4k,64k",
        ],
    );
    assert!(
        stdout(&o)
            .lines()
            // dioscope's header of the job, after fio's block.
            .find(|l| l.starts_with("x: (g=0)"))
            .unwrap()
            .contains("bs=4.00 KiB,64.0 KiB"),
        "{}",
        stdout(&o)
    );
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=1m",
            "--bssplit=4k/75:64k/25",
        ],
    );
    assert!(
        stdout(&o)
            .lines()
            // dioscope's header of the job, after fio's block.
            .find(|l| l.starts_with("x: (g=0)"))
            .unwrap()
            .contains("bs=4.00 KiB/75:64.0 KiB/25"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_job_file_named_like_a_command_runs_with_run_or_a_path() {
    let d = tempfile::tempdir().unwrap();
    for name in ["run", "doctor", "options"] {
        std::fs::write(
            d.path().join(name),
            format!("[{name}-job]\nioengine=null\nsize=64k\n"),
        )
        .unwrap();
        for args in [vec!["run", name], vec![&*format!("./{name}")]] {
            let mut a = args.clone();
            a.push("--output-format=json");
            let o = run_in(d.path(), &a);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
            assert_eq!(
                json(&o)["jobs"][0]["jobname"],
                format!("{name}-job"),
                "{args:?}"
            );
        }
    }
    // The bare name is the command, and --help says how to run such a file.
    let o = run_in(d.path(), &["options"]);
    assert!(stdout(&o).contains("--bs"), "{}", stdout(&o));
    let h = stdout(&run_in(d.path(), &["--help"]));
    assert!(
        h.contains("`dioscope run FILE` or `dioscope ./FILE`"),
        "{h}"
    );
}

#[test]
fn an_unknown_output_format_lists_the_formats_and_runs_nothing() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--filename=f.dat",
            "--size=64k",
            "--output-format=xml",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("'xml' is not an output format; choose one of normal, json, json+"),
        "{}",
        stderr(&o)
    );
    assert!(!d.path().join("f.dat").exists(), "nothing laid out");
}

/// `dioscope … | head`: a reader that goes away is not a panic (exit 101)
/// nor an error; the command finishes normally.
#[test]
fn a_closed_stdout_pipe_is_not_a_panic() {
    for args in [
        &["options"][..],
        &["--name=p", "--ioengine=null", "--size=1m", "--bs=4k"][..],
    ] {
        let mut child = std::process::Command::new(bin())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end before dioscope writes its output.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// fio's invocation flags: --minimal writes the terse v3 line (121 fields
/// without disks, as fio 3.33 for the same job), --append-terse adds it
/// after JSON, and the refused ones say why with exit 2 and run nothing.
#[test]
fn fio_flags_terse_and_refusals() {
    let d = tempfile::tempdir().unwrap();
    let job = ["--name=t", "--ioengine=null", "--rw=randrw", "--size=1m"];
    let mut a = job.to_vec();
    a.push("--minimal");
    let o = run_in(d.path(), &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    let f: Vec<&str> = out.trim_end().split(';').collect();
    assert_eq!(f.len(), 121, "{out}");
    assert_eq!((f[0], f[2]), ("3", "t"));
    // The I/O counted in KiB and the percentiles in fio's form.
    let kib: u64 = f[5].parse::<u64>().unwrap() + f[46].parse::<u64>().unwrap();
    assert_eq!(kib, 1024, "{out}");
    assert!(f[17].ends_with('%') || f[17].contains("%="), "{out}");
    // fio's order: the terse line, then the JSON.
    let mut a = job.to_vec();
    a.extend(["--output-format=json", "--append-terse"]);
    let o = run_in(d.path(), &a);
    let out = stdout(&o);
    let (terse, json_part) = out.split_once('\n').unwrap();
    assert!(terse.starts_with("3;"), "{out}");
    serde_json::from_str::<serde_json::Value>(json_part).unwrap();
    // The last of --minimal and --output-format wins: the output parses.
    let mut a = job.to_vec();
    a.extend(["--minimal", "--output-format=json"]);
    let o = run_in(d.path(), &a);
    serde_json::from_str::<serde_json::Value>(&stdout(&o)).unwrap();
    let mut a = job.to_vec();
    a.extend(["--output-format=json", "--minimal"]);
    let o = run_in(d.path(), &a);
    assert!(stdout(&o).starts_with("3;") && stdout(&o).lines().count() == 1);
    for (flag, needle) in [
        ("--client=host1", "DISTRIBUTED.md"),
        ("--trigger-file=/tmp/x", "trigger"),
        ("--terse-version=5", "version 3"),
    ] {
        let mut a = job.to_vec();
        a.push(flag);
        let o = run_in(d.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        let e = stderr(&o);
        assert!(
            e.contains("not supported by dioscope") && e.contains(needle),
            "{flag}: {e}"
        );
        assert!(stdout(&o).is_empty(), "{flag}");
    }
    // An unknown flag keeps the "did you mean" error.
    let o = run_in(d.path(), &["--minimall"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean"), "{}", stderr(&o));
    assert!(entries(d.path()).is_empty(), "nothing may be written");
}

#[test]
fn readonly_showcmd_cmdhelp_enghelp() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("w.fio");
    std::fs::write(&f, "[global]\nioengine=null\nsize=1m\n[w]\nrw=randwrite\n").unwrap();
    let fa = f.to_str().unwrap();
    let o = run_in(d.path(), &["--readonly", fa]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--readonly"), "{}", stderr(&o));
    let o = run_in(d.path(), &["--showcmd", fa]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "dioscope --ioengine=null --size=1m --name=w --rw=randwrite"
    );
    let o = run_in(d.path(), &["--cmdhelp=iodepth"]);
    assert!(stdout(&o).starts_with("iodepth:"), "{}", stdout(&o));
    let o = run_in(d.path(), &["--enghelp"]);
    assert!(stdout(&o).contains("io_uring"), "{}", stdout(&o));
    let o = run_in(d.path(), &["--parse-only", fa]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert_eq!(entries(d.path()), ["w.fio"], "nothing may be written");
}

#[test]
fn fio_invocation_forms_version_and_debug() {
    let d = tempfile::tempdir().unwrap();
    // fio's version form first, so readers that check "fio-3" accept it.
    let o = run_in(d.path(), &["--version"]);
    let v = stdout(&o);
    assert!(v.starts_with("fio-3.33 (dioscope "), "{v}");
    // getopt_long_only: one dash, and values in the next word.
    let o = run_in(
        d.path(),
        &[
            "-name=t",
            "-ioengine",
            "null",
            "-size=1m",
            "-iodepth",
            "4",
            "-thread",
            "-output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["fio version"].as_str().unwrap(), v.trim_end());
    assert_eq!(j["jobs"][0]["job options"]["iodepth"], "4", "{j}");
    // fio's steady-state test looks for these lines with --debug=parse.
    for (ss, line) in [
        ("iops:10", "set steady state IOPS threshold to 10.000000"),
        ("iops:10%", "set steady state threshold to 10.000000%"),
        ("iops:.1%", "set steady state threshold to 0.100000%"),
        ("bw:10%", "set steady state threshold to 10.000000%"),
        ("bw:12", "set steady state BW threshold to 12"),
        ("lat:500", "set steady state latency threshold to 500 nsec"),
    ] {
        let ss = format!("--ss={ss}");
        let o = run_in(
            d.path(),
            &[
                "--parse-only",
                "--debug=parse",
                "--ss_dur=10s",
                &ss,
                "--ss_ramp=5",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains(line), "{ss}: {out}");
        // Only what was given: no line for a default.
        assert_eq!(out.matches("set steady state").count(), 1, "{out}");
    }
    let o = run_in(d.path(), &["--debug=help"]);
    assert!(stdout(&o).contains("steadystate"), "{}", stderr(&o));
    let o = run_in(d.path(), &["--debug=nosuch", "--name=t", "--ioengine=null"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a debug category"),
        "{}",
        stderr(&o)
    );
    assert!(entries(d.path()).is_empty(), "nothing may be written");
}
