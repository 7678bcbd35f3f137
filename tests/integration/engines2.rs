//! Engines that are not plain reads and writes (cpuio, exec, page_fault,
//! e4defrag), and the refusal of fio's engines dioscope does not have.

use super::common::*;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn run_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let o = run_in(dir, args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    json(&o)
}

#[test]
fn cpuio_burns_its_chunks_of_cpu_and_idles_for_the_rest() {
    let d = tempfile::tempdir().unwrap();
    for mode in ["noop", "qsort"] {
        let j = run_json(
            d.path(),
            &[
                "--name=burn",
                "--ioengine=cpuio",
                "--cpuload=40",
                "--cpuchunks=20000",
                &format!("--cpumode={mode}"),
                "--time_based",
                "--runtime=2",
                "--output-format=json",
                "--eta=never",
            ],
        );
        let job = &j["jobs"][0];
        let ios = job["read"]["total_ios"].as_u64().unwrap();
        assert_eq!(
            job["read"]["io_bytes"].as_u64(),
            Some(0),
            "cpuio moves no data"
        );
        // A cycle is 20 ms of CPU then 30 ms idle: at most 2 s / 50 ms of them.
        assert!((1..=41).contains(&ios), "{mode}: {ios} cycles in 2 s");
        let cpu = &j["dioscope"]["jobs"][0]["cpu"];
        let thread_us = cpu["workers_thread_us"].as_f64().unwrap();
        let per_cycle = thread_us / ios as f64;
        assert!(
            (19_000.0..30_000.0).contains(&per_cycle),
            "{mode}: {per_cycle} µs of CPU per 20 ms cycle ({cpu})"
        );
        let frac = cpu["busiest_worker_cpu_fraction"].as_f64().unwrap();
        assert!(frac <= 0.5, "{mode}: cpuload=40 used {frac} of a CPU");
    }
}

#[test]
fn cpuio_needs_a_load_and_an_end() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(d.path(), &["--name=c", "--ioengine=cpuio", "--runtime=1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs cpuload="), "{}", stderr(&o));
    let o = run_in(d.path(), &["--name=c", "--ioengine=cpuio", "--cpuload=10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("runtime=") && stderr(&o).contains("exit_on_io_done"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn cpuio_exit_on_io_done_ends_with_the_io_jobs() {
    let d = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    let j = run_json(
        d.path(),
        &[
            "--output-format=json",
            "--eta=never",
            "--name=burn",
            "--ioengine=cpuio",
            "--cpuload=20",
            "--cpuchunks=10000",
            "--exit_on_io_done=1",
            "--runtime=60",
            "--name=io",
            "--ioengine=null",
            "--rate_iops=2000",
            "--number_ios=2000",
            "--size=64m",
        ],
    );
    let secs = t0.elapsed().as_secs_f64();
    assert!(secs < 20.0, "the cpuio job outlived the I/O job: {secs} s");
    let burn = j["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["jobname"] == "burn")
        .unwrap();
    assert!(burn["read"]["total_ios"].as_u64().unwrap() > 0);
}

#[test]
fn exec_runs_the_program_for_the_runtime_and_reports_failures() {
    let d = tempfile::tempdir().unwrap();
    // %n and %r expand; stdout goes to JOBNAME.stdout.
    let f = write(
        d.path(),
        "ok.fio",
        "[mark]\nioengine=exec\nprogram=/bin/echo\narguments=job=%n runtime=%r\nruntime=1\n",
    );
    let t0 = std::time::Instant::now();
    let o = run_in(d.path(), &[&f, "--eta=never"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        t0.elapsed().as_secs_f64() >= 1.0,
        "the job lasts its runtime"
    );
    let out = std::fs::read_to_string(d.path().join("mark.stdout")).unwrap();
    assert_eq!(out.trim(), "job=mark runtime=1");
    assert!(d.path().join("mark.stderr").exists());

    // A program that fails fails the job, naming its status.
    let f = write(
        d.path(),
        "bad.fio",
        "[bad]\nioengine=exec\nprogram=/bin/false\nruntime=2\nstd_redirect=0\n",
    );
    let o = run_in(d.path(), &[&f, "--eta=never"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("exited with status 1"), "{all}");

    // One that cannot start says so.
    let f = write(
        d.path(),
        "missing.fio",
        "[missing]\nioengine=exec\nprogram=/nonexistent/tool\nruntime=1\n",
    );
    let o = run_in(d.path(), &[&f, "--eta=never"]);
    assert_eq!(o.status.code(), Some(1));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("cannot run '/nonexistent/tool'"), "{all}");

    // No program at all is bad input.
    let o = run_in(d.path(), &["--name=x", "--ioengine=exec", "--runtime=1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs program="), "{}", stderr(&o));
}

#[test]
fn exec_kills_a_program_that_ignores_sigterm_after_grace_time() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let script = d.path().join("stubborn.sh");
    // SIGTERM stays ignored through exec, so only SIGKILL ends the sleep.
    std::fs::write(
        &script,
        "#!/bin/sh\ntrap '' TERM\necho $$ > stubborn.pid\nexec sleep 60\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = write(
        d.path(),
        "s.fio",
        &format!(
            "[s]\nioengine=exec\nprogram={}\nruntime=1\ngrace_time=1\nstd_redirect=0\n",
            script.display()
        ),
    );
    let t0 = std::time::Instant::now();
    let o = run_in(d.path(), &[&f, "--eta=never"]);
    let secs = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        (1.9..15.0).contains(&secs),
        "runtime 1 s + grace 1 s took {secs} s"
    );
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("was killed"), "{all}");
    let pid = std::fs::read_to_string(d.path().join("stubborn.pid")).unwrap();
    let alive = Path::new(&format!("/proc/{}", pid.trim())).exists()
        && !std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
            .unwrap_or_default()
            .contains(") Z ");
    assert!(!alive, "the program survived its job");
}

#[test]
fn page_fault_copies_through_anonymous_memory() {
    let d = tempfile::tempdir().unwrap();
    let j = run_json(
        d.path(),
        &[
            "--name=pf",
            "--ioengine=page_fault",
            "--size=8m",
            "--rw=write",
            "--bs=4k",
            "--output-format=json",
            "--eta=never",
        ],
    );
    let job = &j["jobs"][0];
    assert_eq!(job["write"]["io_bytes"].as_u64(), Some(8 << 20));
    // Each page's first touch is a fault: at least one per page of the trial.
    let minf = job["minf"].as_u64().unwrap();
    assert!(minf >= 2048, "{minf} minor faults for 2048 new pages");
    // No file was made.
    assert!(entries(d.path()).is_empty(), "{:?}", entries(d.path()));
}

fn first_physical(path: &Path) -> String {
    let out = sh("filefrag", &["-v", path.to_str().unwrap()]);
    // "   0:        0..     255:      34816..     35071:    256:  ..."
    out.lines()
        .find(|l| l.trim_start().starts_with("0:"))
        .and_then(|l| l.split(':').nth(2))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| panic!("no extent in {out}"))
}

#[test]
fn e4defrag_moves_extents_and_keeps_the_data() {
    if !can_run(
        "root and ext4 on a loop device",
        is_root() && have_tool("filefrag"),
    ) {
        return;
    }
    let fs = MountedFs::new(128 << 20, "ext4");
    let file = fs.path().join("data");
    let data: Vec<u8> = (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&file, &data).unwrap();
    sh("sync", &[]);
    let before = first_physical(&file);
    let j = run_json(
        fs.path(),
        &[
            "--name=defrag",
            "--ioengine=e4defrag",
            &format!("--directory={}", fs.path().display()),
            "--filename=data",
            "--donorname=data.def",
            "--rw=write",
            "--bs=64k",
            "--size=4m",
            "--output-format=json",
            "--eta=never",
        ],
    );
    let w = &j["jobs"][0]["write"];
    assert_eq!(w["io_bytes"].as_u64(), Some(4 << 20), "{w}");
    assert_eq!(j["jobs"][0]["error"].as_u64(), Some(0));
    sh("sync", &[]);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        data,
        "defragmenting changed the data"
    );
    let after = first_physical(&file);
    assert_ne!(before, after, "the extents did not move");
    assert!(fs.path().join("data.def").exists());

    // Reads are not defragmentation: refused per I/O, as in fio.
    let o = run_in(
        fs.path(),
        &[
            "--name=r",
            "--ioengine=e4defrag",
            "--filename=data",
            "--donorname=data.def",
            "--rw=read",
            "--size=1m",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = run_in(
        fs.path(),
        &[
            "--name=x",
            "--ioengine=e4defrag",
            "--filename=data",
            "--rw=write",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs donorname="), "{}", stderr(&o));
}

#[test]
fn a_refused_engine_is_named_before_its_own_options() {
    let d = tempfile::tempdir().unwrap();
    // The engine's options come first, in [global]; the engine in the job.
    let f = write(
        d.path(),
        "gpu.fio",
        "[global]\ngpu_dev_ids=0\nrocm_io=hipfile\n[read]\nioengine=libhipfile\nrw=read\n",
    );
    let o = run_in(d.path(), &[&f]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("not supported by dioscope: ioengine=libhipfile (needs"),
        "{e}"
    );
    // The same on the command line, the engine last.
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--rocm_io=posix",
            "--gpu_dev_ids=0",
            "--ioengine=libhipfile",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ioengine=libhipfile"), "{}", stderr(&o));
    // fio's engines that are gone or need what we lack are named too.
    for engine in [
        "sgunmap",
        "sheepdog",
        "cpp_null",
        "fusion-aw-sync",
        "syslet-rw",
        "binject",
    ] {
        let o = run_in(
            d.path(),
            &[
                "--name=x",
                &format!("--ioengine={engine}"),
                "--some_option=1",
            ],
        );
        assert_eq!(o.status.code(), Some(2));
        let e = stderr(&o);
        assert!(
            e.contains(&format!(
                "not supported by dioscope: ioengine={engine} (needs"
            )),
            "{engine}: {e}"
        );
    }
    // An engine nobody has: its error wins over the options it would take.
    let f = write(d.path(), "b.fio", "[x]\nbanana_depth=3\nioengine=banana\n");
    let o = run_in(d.path(), &[&f]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("'banana' is not an engine"), "{e}");
    // Protection information is a feature, named as one.
    let f = write(
        d.path(),
        "pi.fio",
        "[w]\nmd_per_io_size=64\npi_act=0\nrw=write\n",
    );
    let o = run_in(d.path(), &[&f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not supported by dioscope: pi ("),
        "{}",
        stderr(&o)
    );
}

#[test]
fn time_based_without_runtime_warns_and_runs_by_size() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "t.fio",
        "[t]\nioengine=null\ntime_based\nsize=8*$pagesize\nrw=read\n",
    );
    let o = run_in(d.path(), &[&f, "--output-format=json", "--eta=never"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: job 't': time_based needs a runtime"),
        "{}",
        stderr(&o)
    );
    // A value that used a keyword is an expression, as in fio.
    let page: u64 = sh("getconf", &["PAGESIZE"]).trim().parse().unwrap();
    assert_eq!(
        json(&o)["jobs"][0]["read"]["io_bytes"].as_u64(),
        Some(8 * page)
    );
    let o = run_in(d.path(), &[&f, "--warnings-fatal"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--warnings-fatal"), "{}", stderr(&o));
}

#[test]
fn io_uring_polls_for_completions_when_complete_min_is_0_and_loses_no_io() {
    // fio's iodepth_batch_complete_min=0 ("always check for completed
    // events"): io_uring polls before it sleeps. A buffered write of 4 MiB at
    // depth 8, verified on read-back: every block written, read and checked
    // through the polling path; the default (sleeping) path says so too.
    let d = tempfile::tempdir().unwrap();
    // One io_uring job over poll.dat, buffered, depth 8, with `min`.
    let job = |name: &str, rw: &str, min: &str, extra: &[&str]| {
        let mut args: Vec<String> = vec![
            format!("--name={name}"),
            format!("--rw={rw}"),
            format!("--iodepth_batch_complete_min={min}"),
        ];
        args.extend(
            [
                "--filename=poll.dat",
                "--size=4m",
                "--bs=4k",
                "--direct=0",
                "--ioengine=io_uring",
                "--iodepth=8",
                "--trials=1",
                "--output-format=json",
                "--eta=never",
            ]
            .map(String::from),
        );
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_json(d.path(), &args)
    };
    for (min, polls) in [("0", true), ("1", false)] {
        let j = job("poll", "randwrite", min, &["--verify=crc32c"]);
        let job_w = &j["jobs"][0];
        assert_eq!(job_w["error"].as_i64(), Some(0), "min={min}: {job_w}");
        assert_eq!(
            job_w["write"]["total_ios"].as_u64(),
            Some(1024),
            "min={min}"
        );
        let v = &j["dioscope"]["verify"]["poll"];
        assert_eq!(v["checked"].as_u64(), Some(1024), "min={min}: {v}");
        assert_eq!(v["bad"].as_u64(), Some(0), "min={min}: {v}");
        // And read back through the same engine and setting.
        let r = job("pollread", "randread", min, &[]);
        let rj = &r["jobs"][0];
        assert_eq!(rj["error"].as_i64(), Some(0), "min={min}: {rj}");
        assert_eq!(rj["read"]["total_ios"].as_u64(), Some(1024), "min={min}");
        assert_eq!(rj["read"]["io_bytes"].as_u64(), Some(4 << 20), "min={min}");
        let notes = r["dioscope"]["notes"].to_string();
        assert!(
            notes.contains(&format!("poll_reaps={polls}")),
            "min={min}: {notes}"
        );
    }
}
