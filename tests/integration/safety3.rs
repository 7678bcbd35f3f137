//! The guard, round three (issue 23): every file dioscope writes besides
//! the target and `--output` — logs, iologs, verify states, a program's
//! output, reports, compare/sweep/recipe outputs — goes through one checked
//! function (`outfile`), is refused before the first I/O when it would land
//! on a target, an input, a device, or go through a planted symlink, and
//! inputs are read with bounds. Real loop devices; each test checks the data
//! it protects afterwards, not only the exit status.

use crate::common::*;
use dioscope_core::job::created::Creates;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn ready(tools: &[&str]) -> bool {
    let ok = is_root() && tools.iter().all(|t| have_tool(t));
    can_run(&format!("root and {}", tools.join(", ")), ok)
}

/// The ext2/3/4 superblock magic is still at 1024 + 0x38.
fn ext_intact(dev: &Path) -> bool {
    let mut b = [0u8; 2];
    let f = std::fs::File::open(dev).unwrap();
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut b, 1024 + 0x38).unwrap();
    b == [0x53, 0xef]
}

/// A 64 KiB file of a known pattern.
fn data(dir: &Path, name: &str) -> Vec<u8> {
    let v: Vec<u8> = (0..65536u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(dir.join(name), &v).unwrap();
    v
}

fn read_job(target: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=j",
        &format!("--filename={target}"),
        "--rw=read",
        "--bs=4k",
        "--size=64k",
        "--ioengine=psync",
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn run_strs(dir: &Path, a: &[String]) -> std::process::Output {
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    run_in(dir, &a)
}

#[test]
fn a_log_symlinked_to_an_unmounted_ext4_is_refused_and_the_fs_survives() {
    // Was: PREFIX_bw.1.log -> /dev/loopN overwrote the superblock, exit 0.
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let l = LoopDev::new(d.path(), 16 << 20, &[]);
    sh("mkfs.ext4", &["-q", "-F", l.path()]);
    assert!(ext_intact(&l.dev));
    data(d.path(), "in.dat");
    for (link, opt) in [
        ("p_bw.1.log", "--write_bw_log=p"),
        ("p_clat.1.log", "--write_lat_log=p"),
        ("p_clat_hist.1.log", "--write_hist_log=p"),
        ("p_iops.1.log", "--write_iops_log=p"),
    ] {
        let _ = std::fs::remove_file(d.path().join(link));
        symlink(&l.dev, d.path().join(link)).unwrap();
        let o = run_strs(d.path(), &read_job("in.dat", &[opt]));
        assert_eq!(o.status.code(), Some(2), "{opt}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("symbolic link"),
            "{opt}: {}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty(), "{opt}: ran anyway");
        assert!(
            ext_intact(&l.dev),
            "{opt}: the ext4 superblock was overwritten"
        );
    }
    // The iolog named as the device itself.
    let o = run_strs(
        d.path(),
        &read_job("in.dat", &[&format!("--write_iolog={}", l.path())]),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("block device"), "{}", stderr(&o));
    assert!(
        ext_intact(&l.dev),
        "write_iolog overwrote the ext4 superblock"
    );
}

#[test]
fn a_target_named_like_its_own_log_or_iolog_is_refused_and_kept() {
    // Was: a read job whose target is named like its log truncated the
    // target to 15 bytes; write_iolog= the target appended to it.
    let d = tempfile::tempdir().unwrap();
    for (target, opt) in [
        ("j_bw.1.log", "--write_bw_log=j"),
        ("j_lat.1.log", "--write_lat_log"),
        ("x.iolog", "--write_iolog=x.iolog"),
        ("j.prerun.txt", "--exec_prerun=true"),
    ] {
        let want = data(d.path(), target);
        let o = run_strs(d.path(), &read_job(target, &[opt]));
        assert_eq!(o.status.code(), Some(2), "{opt}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("a target of this run"),
            "{opt}: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(d.path().join(target)).unwrap(),
            want,
            "{opt}: the target was changed"
        );
    }
}

#[test]
fn a_job_file_is_never_replaced_by_the_output_or_a_log() {
    // Was: `dioscope my.fio --output=my.fio` replaced the job file.
    let d = tempfile::tempdir().unwrap();
    data(d.path(), "in.dat");
    let job = "[j]\nfilename=in.dat\nrw=read\nsize=64k\nioengine=psync\n";
    std::fs::write(d.path().join("my.fio"), job).unwrap();
    for extra in ["--output=my.fio", "--report=my.fio", "--write_iolog=my.fio"] {
        let o = run_in(d.path(), &["my.fio", extra]);
        assert_eq!(o.status.code(), Some(2), "{extra}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("an input of this command"),
            "{extra}: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("my.fio")).unwrap(),
            job,
            "{extra}: the job file was replaced"
        );
    }
    // An include counts too.
    std::fs::write(d.path().join("inc.fio"), "bs=4k\n").unwrap();
    std::fs::write(
        d.path().join("top.fio"),
        "[j]\ninclude inc.fio\nfilename=in.dat\nrw=read\nsize=64k\n",
    )
    .unwrap();
    let o = run_in(
        d.path(),
        &["top.fio", "--write_bw_log=x", "--output=inc.fio"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(d.path().join("inc.fio")).unwrap(),
        "bs=4k\n"
    );
}

/// A result of a small null run, for report and compare.
fn a_result(dir: &Path, name: &str) -> String {
    let o = run_in(
        dir,
        &[
            "--name=r",
            "--ioengine=null",
            "--size=1m",
            "--trials=2",
            "--output-format=json",
            &format!("--output={name}"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn report_compare_and_sweep_never_replace_their_inputs() {
    let d = tempfile::tempdir().unwrap();
    let a = a_result(d.path(), "a.json");
    let b = a_result(d.path(), "b.json");
    let job = "[s]\nioengine=null\nsize=1m\n";
    std::fs::write(d.path().join("s.fio"), job).unwrap();
    let cases: &[&[&str]] = &[
        &["report", "a.json", "-o", "a.json"],
        &["report", "a.json", "b.json", "-o", "b.json"],
        &["compare", "a.json", "b.json", "--output=a.json"],
        &["compare", "a.json", "b.json", "--output=b.json"],
        &["sweep", "s.fio", "--vary", "bs=4k|8k", "--output=s.fio"],
    ];
    for args in cases {
        let o = run_in(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("an input of this command"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    assert_eq!(std::fs::read_to_string(d.path().join("a.json")).unwrap(), a);
    assert_eq!(std::fs::read_to_string(d.path().join("b.json")).unwrap(), b);
    assert_eq!(
        std::fs::read_to_string(d.path().join("s.fio")).unwrap(),
        job
    );
}

#[test]
fn report_output_is_checked_before_the_work() {
    // Was: `report -o DIR` failed with exit 1 after building the report.
    let d = tempfile::tempdir().unwrap();
    a_result(d.path(), "a.json");
    std::fs::create_dir(d.path().join("adir")).unwrap();
    for out in ["adir", "no/such/dir/r.html", "/dev/dioscope-typo.html"] {
        let o = run_in(d.path(), &["report", "a.json", "-o", out]);
        assert_eq!(o.status.code(), Some(2), "{out}: {}", stderr(&o));
        assert!(stderr(&o).contains("report -o"), "{out}: {}", stderr(&o));
    }
    assert!(!Path::new("/dev/dioscope-typo.html").exists());
}

#[test]
fn dev_null_as_report_output_is_a_discard_and_stays_a_device() {
    // Was: `report r.json -o /dev/null` replaced /dev/null with a regular
    // file. In a private /dev, so a failure cannot hurt the machine's.
    if !ready(&["unshare", "mknod"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    a_result(d.path(), "a.json");
    let o = in_private_dev(
        d.path(),
        "\"$DIOSCOPE\" report a.json -o /dev/null; echo \"exit=$?\"; stat -c %F /dev/null; \
         \"$DIOSCOPE\" --name=r --ioengine=null --size=64k --write_bw_log=/dev/typo; \
         echo \"exit=$?\"; ls -a /dev | tr '\\n' ' '",
    );
    let out = stdout(&o);
    assert!(out.contains("exit=0"), "{out} {}", stderr(&o));
    assert!(out.contains("character special file"), "{out}");
    assert!(out.contains("exit=2"), "write_bw_log=/dev/typo ran: {out}");
    assert!(!out.contains("typo"), "a log was created in /dev: {out}");
    assert!(!out.contains("null."), "a temporary file in /dev: {out}");
}

#[test]
fn streams_work_for_outputs_but_not_for_logs() {
    let d = tempfile::tempdir().unwrap();
    a_result(d.path(), "a.json");
    // A pipe from process substitution: written directly.
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "\"{}\" report a.json -o >(wc -c > n.txt); sleep 0.5; cat n.txt",
            bin()
        ))
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let n: u64 = stdout(&o).trim().parse().unwrap_or(0);
    assert!(
        n > 1000,
        "the report did not reach the pipe: {}",
        stdout(&o)
    );
    // A log named /dev/stdout is a stream: refused, nothing made in /dev.
    let o = run_in(
        d.path(),
        &[
            "--name=r",
            "--ioengine=null",
            "--size=64k",
            "--write_iolog=/dev/stdout",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("stream"), "{}", stderr(&o));
}

#[test]
fn inputs_are_bounded_devices_and_directories_refused() {
    // Was: `compare /dev/zero r.json` grew to 903 MB in 3 s.
    let d = tempfile::tempdir().unwrap();
    a_result(d.path(), "a.json");
    let cases: &[&[&str]] = &[
        &["compare", "/dev/zero", "a.json"],
        &["report", "/dev/zero"],
        &["report", "."],
        &["sweep", "--resume=/dev/zero"],
    ];
    for args in cases {
        let mut c = std::process::Command::new(bin());
        c.args(*args).current_dir(d.path());
        let o = output_within(c, Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("character device") || e.contains("directory"),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn a_sweep_resume_state_must_match_its_axes() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "sweep",
            "--name=s",
            "--ioengine=null",
            "--size=64k",
            "--trials=1",
            "--vary",
            "bs=4k|8k",
            "--output=s.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.path().join("s.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    // A cell whose value is not one of the axis's.
    v["cells"][0]["values"][0] = serde_json::json!("999k");
    std::fs::write(d.path().join("bad.json"), v.to_string()).unwrap();
    let o = run_in(d.path(), &["sweep", "--resume=bad.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("999k"), "{}", stderr(&o));
}

#[test]
fn a_result_without_jobs_or_with_negative_counts_is_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let text = a_result(d.path(), "a.json");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut empty = v.clone();
    empty["jobs"] = serde_json::json!([]);
    std::fs::write(d.path().join("empty.json"), empty.to_string()).unwrap();
    v["jobs"][0]["read"]["total_ios"] = serde_json::json!(-5);
    std::fs::write(d.path().join("neg.json"), v.to_string()).unwrap();
    for f in ["empty.json", "neg.json"] {
        for args in [vec!["report", f], vec!["compare", f, "a.json"]] {
            let o = run_in(d.path(), &args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        }
    }
}

#[test]
fn a_huge_bad_value_is_not_echoed_whole() {
    let d = tempfile::tempdir().unwrap();
    // Nearly 1 MiB in a job file (its limit); 100 KiB in an argument (the
    // kernel's limit for one is 128 KiB).
    let big = "x".repeat(1000 << 10);
    std::fs::write(
        d.path().join("big.fio"),
        format!("[r]\nioengine=null\nbs={big}\n"),
    )
    .unwrap();
    let o = run_in(d.path(), &["big.fio"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        &stderr(&o)[..200.min(stderr(&o).len())]
    );
    assert!(
        stderr(&o).len() < 4096,
        "the 1 MB value was echoed: {} bytes",
        stderr(&o).len()
    );
    let big = "x".repeat(100 << 10);
    let o = run_in(
        d.path(),
        &["--name=r", "--ioengine=null", &format!("--bs={big}")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).len() < 4096, "{} bytes", stderr(&o).len());
    let o = run_in(d.path(), &["report", &big]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).len() < 4096, "{} bytes", stderr(&o).len());
}

// ---- Every option that names a created file goes through the check ----

/// What a marked option needs besides its example to make its file(s).
fn setup_for(option: &str) -> Vec<&'static str> {
    match option {
        "verify_state_save" => vec!["--rw=write", "--verify=crc32c"],
        "std_redirect" => vec!["--ioengine=exec", "--program=true", "--runtime=1"],
        "donorname" => vec!["--ioengine=e4defrag"],
        _ => vec![],
    }
}

/// The files `args` make besides the targets, as the option table says.
fn created_by(args: &[String], option: &str) -> Vec<PathBuf> {
    let plan = dioscope_core::job::parse::parse_args(args).expect("the walk's job parses");
    dioscope_core::runner::created_files(&plan)
        .into_iter()
        .filter(|(o, _)| *o == option)
        .map(|(_, p)| p)
        .collect()
}

#[test]
fn every_option_marked_as_creating_a_file_is_checked_before_io() {
    // Walks the option table: for each option that names a file dioscope
    // creates, a target with that file's name and a symlink planted at it
    // are both refused (exit 2) before any I/O, and their data survives.
    let mut walked = 0;
    for def in dioscope_core::job::options::all() {
        let Creates::Job(_) = def.creates else {
            continue;
        };
        let d = tempfile::tempdir().unwrap();
        let value = if def.kind == dioscope_core::job::options::Kind::Flag {
            "1".to_string()
        } else {
            def.example.to_string()
        };
        let mut base = read_job("in.dat", &setup_for(def.name));
        base.push(format!("--{}={value}", def.name));
        let names = created_by(&base, def.name);
        assert!(
            !names.is_empty(),
            "{} is marked as creating files, but names none with its example '{}' \
             (give it a setup in setup_for)",
            def.name,
            value
        );
        let name = names[0].to_str().unwrap().to_string();
        // The file named like a target of the run (engines with targets).
        let mut as_target = base.clone();
        as_target[1] = format!("--filename={name}");
        let plan = dioscope_core::job::parse::parse_args(&as_target).unwrap();
        if !dioscope_core::runner::target_paths(&plan).is_empty() {
            let want = data(d.path(), &name);
            let o = run_strs(d.path(), &as_target);
            assert_eq!(o.status.code(), Some(2), "{}: {}", def.name, stderr(&o));
            assert!(
                stderr(&o).contains(def.name),
                "{}: the error does not name the option: {}",
                def.name,
                stderr(&o)
            );
            assert_eq!(std::fs::read(d.path().join(&name)).unwrap(), want);
            std::fs::remove_file(d.path().join(&name)).unwrap();
        }
        // A symlink planted at the name, pointing at a user's file.
        let victim = data(d.path(), "victim");
        data(d.path(), "in.dat");
        symlink(d.path().join("victim"), d.path().join(&name)).unwrap();
        let o = run_strs(d.path(), &base);
        assert_eq!(o.status.code(), Some(2), "{}: {}", def.name, stderr(&o));
        assert!(
            stderr(&o).contains("symbolic link"),
            "{}: {}",
            def.name,
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(d.path().join("victim")).unwrap(),
            victim,
            "{}: written through a planted symlink",
            def.name
        );
        walked += 1;
    }
    assert!(walked >= 9, "only {walked} options are marked");
}

#[test]
fn no_unmarked_option_creates_a_file() {
    // Every other option of the table, with its example value, on a small
    // null job in an empty folder: a file that appears there (other than a
    // target of the run) is made by an option the table does not mark.
    use dioscope_core::job::options::Kind;
    let defs: Vec<_> = dioscope_core::job::options::all()
        .filter(|d| d.creates.is_nothing())
        .collect();
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(def) = defs.get(i) else { break };
                let d = tempfile::tempdir().unwrap();
                let value = if def.kind == Kind::Flag {
                    "1"
                } else {
                    def.example
                };
                let args: Vec<String> = vec![
                    "--name=w".into(),
                    "--ioengine=null".into(),
                    "--size=64k".into(),
                    "--runtime=200ms".into(),
                    format!("--{}={value}", def.name),
                ];
                let targets: Vec<String> = dioscope_core::job::parse::parse_args(&args)
                    .map(|p| {
                        dioscope_core::runner::target_paths(&p)
                            .iter()
                            .map(|t| t.to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                let mut c = std::process::Command::new(bin());
                c.args(&args).current_dir(d.path());
                let _ = output_within(c, Duration::from_secs(15));
                for e in entries(d.path()) {
                    let t = d.path().join(&e);
                    if !targets.iter().any(|x| Path::new(x) == t || *x == e) {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("--{}={value} made {e}", def.name));
                    }
                }
            });
        }
    });
    let f = failures.into_inner().unwrap();
    assert!(
        f.is_empty(),
        "options that create files without Creates in the table: {f:?}"
    );
}

#[test]
fn no_file_is_created_outside_the_checked_function() {
    // Reads the sources: creating a file or folder (File::create,
    // OpenOptions…create, fs::write, create_dir, O_CREAT) happens only in
    // outfile/ — the one checked way — and in the places that create the
    // run's targets under the guard (targets/, the metadata engines) or
    // scratch devices (scratch/), each listed here with its reason.
    let allowed: &[(&str, &str)] = &[
        ("outfile/", "the checked function itself"),
        (
            "targets/",
            "the run's targets, under the destructive-write guard",
        ),
        ("engines/meta.rs", "filecreate/filestat/filedelete targets"),
        ("engines/filecreate.rs", "its help text"),
        (
            "scratch/",
            "scratch backing files, made O_EXCL in a private folder",
        ),
        ("diag/root_tests.rs", "a test module (its fixtures)"),
        ("job/input.rs", "reads job files"),
        ("infile.rs", "reads inputs"),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src");
    let mut bad = Vec::new();
    let mut files = Vec::new();
    crate::source_scan::rust_files(&root, &mut files);
    for p in files {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if allowed.iter().any(|(a, _)| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        // Tests make their own fixtures.
        let code = crate::source_scan::without_test_code(&text);
        for (n, line) in code.lines().enumerate() {
            let l = line.trim_start();
            if l.starts_with("//") {
                continue;
            }
            for pat in [
                "File::create(",
                ".create(true)",
                ".create_new(true)",
                "fs::write(",
                "create_dir(",
                "create_dir_all(",
                "O_CREAT",
                "write_atomic(",
            ] {
                if l.contains(pat) && !l.contains("outfile::") {
                    bad.push(format!("{rel}:{}: {}", n + 1, l.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "files created outside outfile (route them through outfile::open, \
         write_result or create_dir):\n{}",
        bad.join("\n")
    );
}

#[test]
fn a_binary_without_mpi_refuses_a_launched_world_and_runs_a_world_of_one() {
    // The test binary's dioscope is built with the features of this test
    // run: simulate the launcher's environment (mpirun itself is exercised
    // in tests/mpi with the binary built without the feature).
    if cfg!(feature = "mpi") {
        // Built with MPI, this binary joins the world instead: tests/mpi
        // launches a binary built without the feature under mpirun.
        eprintln!("skipped: this dioscope is built with MPI (tests/mpi covers the other)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let run = |var: &str, n: &str| {
        let mut c = std::process::Command::new(bin());
        c.args([
            "--name=r",
            "--ioengine=null",
            "--size=64k",
            "--output-format=json",
        ])
        .current_dir(d.path())
        .env(var, n);
        output_within(c, Duration::from_secs(20))
    };
    for var in ["PMI_SIZE", "MV2_COMM_WORLD_SIZE"] {
        let o = run(var, "2");
        assert_eq!(o.status.code(), Some(2), "{var}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--features mpi"),
            "{var}: {}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty());
        let o = run(var, "1");
        assert_eq!(o.status.code(), Some(0), "{var}=1: {}", stderr(&o));
        assert!(stderr(&o).contains("world of one"), "{}", stderr(&o));
    }
}

#[test]
fn readonly_refuses_writes_trims_and_changing_engines_but_allows_logs() {
    let d = tempfile::tempdir().unwrap();
    let want = data(d.path(), "in.dat");
    for extra in [
        &["--rw=randtrim"][..],
        &["--rw=write"],
        &["--ioengine=falloc"],
        &["--ioengine=filedelete"],
    ] {
        let mut a = read_job("in.dat", extra);
        a.push("--readonly".into());
        let o = run_strs(d.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--readonly"), "{}", stderr(&o));
        assert_eq!(std::fs::read(d.path().join("in.dat")).unwrap(), want);
    }
    // Logs, iologs and reports stay allowed, through the checked function.
    let o = run_strs(
        d.path(),
        &read_job(
            "in.dat",
            &["--readonly", "--write_bw_log=ro", "--write_iolog=ro.iolog"],
        ),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(d.path().join("ro_bw.1.log").exists());
    assert!(d.path().join("ro.iolog").exists());
    // A log that resolves to the target is refused with --readonly too.
    let o = run_strs(
        d.path(),
        &read_job("in.dat", &["--readonly", "--write_iolog=in.dat"]),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(d.path().join("in.dat")).unwrap(), want);
}

// ---- Principle 6: any bytes in a file name ----

fn run_os(dir: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut c = std::process::Command::new(bin());
    c.args(args).current_dir(dir);
    output_within(c, Duration::from_secs(60))
}

#[test]
fn names_that_are_not_utf8_work_end_to_end_without_a_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = tempfile::tempdir().unwrap();
    let name = b"g\xff\xfe.dat";
    let mut fname = b"--filename=".to_vec();
    fname.extend_from_slice(name);
    let mut out = b"--output=r\xff.json".to_vec();
    let o = run_os(
        d.path(),
        &[
            OsStr::new("--name=j"),
            OsStr::from_bytes(&fname),
            OsStr::new("--size=64k"),
            OsStr::new("--rw=write"),
            OsStr::new("--ioengine=psync"),
            OsStr::new("--output-format=json"),
            OsStr::from_bytes(&out),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The file has exactly those bytes as its name, and 64 KiB.
    let target = d.path().join(OsStr::from_bytes(name));
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 65536);
    let result = d.path().join(OsStr::from_bytes(&out[9..]));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    assert_eq!(
        j["jobs"][0]["job options"]["filename"], "g\\xff\\xfe.dat",
        "{j}"
    );
    let raw = &j["dioscope"]["raw_names"];
    assert_eq!(raw[0]["hex"], "67fffe2e646174", "{raw}");
    assert_eq!(raw[0]["shown"], "g\\xff\\xfe.dat");
    // The same name in a job file; the job file's own name not UTF-8 either.
    let mut job = b"[j]\nrw=read\nsize=64k\nioengine=psync\nfilename=".to_vec();
    job.extend_from_slice(name);
    job.push(b'\n');
    let jf = d.path().join(OsStr::from_bytes(b"j\xe9.fio"));
    std::fs::write(&jf, &job).unwrap();
    let o = run_os(
        d.path(),
        &[
            OsStr::from_bytes(b"j\xe9.fio"),
            OsStr::new("--output-format=json"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["jobs"][0]["read"]["io_bytes"], 65536, "{j}");
    // A bad option in bytes: a clear error, never a panic (exit 101).
    out.clear();
    let o = run_os(
        d.path(),
        &[OsStr::from_bytes(b"--bs=\xff"), OsStr::new("--name=x")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("\\xff"), "{}", stderr(&o));
    let o = run_os(
        d.path(),
        &[OsStr::new("report"), OsStr::from_bytes(b"n\xff.json")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
