//! fio 3.33's own test scripts (its `t/*.py`), pointed at the real `fio`
//! and at dioscope, the way fio's CI runs them.
//!
//! The scripts come from Debian's source package of the installed fio
//! (`scripts/install-deps.sh` runs `apt-get source fio` into
//! [`FIO_SRC_DEFAULT`]; `DIOSCOPE_FIO_SRC` points elsewhere, e.g. at a tree
//! of a later fio taken from its git repository). Nothing of fio is kept in
//! this repository.
//!
//! Each script runs twice, in a scratch directory of its own: once with
//! `/usr/bin/fio` (the reference: which tests fio passes on this machine)
//! and once with `target/release/dioscope`. The per-test PASSED/FAILED
//! lines of each script are parsed; of the tests fio passes, less the
//! [`EXCEPTIONS`] (each printed with its reason), dioscope must pass at
//! least [`FLOOR_PERCENT`] %. A script that dies half way counts every test
//! it did not report as failed. A table per script is printed
//! (`cargo test --release --test fio_tscripts -- --nocapture`).
//!
//! Time budget: about 10 minutes on 2 cores. Tests that measure rates
//! (run-fio-tests.py's flow and rate_iops tests, all of
//! steadystate_tests.py) and one that hangs fio when it shares the CPU
//! ([`RUN_FIO_TESTS_TIMED`]) run fio then dioscope, one after the other;
//! everything else runs both side by side (run-fio-tests.py in two
//! passes: [`Timing::Only`]). A reference run of fio cut short by the
//! timeout fails the test. latency_percentiles.py alone
//! takes about 6 minutes (its checks sort every logged latency of 2–5 s
//! null-engine runs); all of its 22 tests are kept. Tests left out are in
//! [`EXCEPTIONS`].
//!
//! In CI (CI set) a missing prerequisite (fio, fio's source, python3 with
//! scipy, root) fails the test; locally it skips with a message.

#[path = "../integration/common.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where install-deps.sh unpacks `apt-get source fio`.
const FIO_SRC_DEFAULT: &str = "/opt/dioscope-tests/fio-src";
/// Of the tests fio passes (less the exceptions), dioscope must pass this share.
const FLOOR_PERCENT: f64 = 95.0;
/// One script's run, at most (fio's own per-job timeout is 600 s).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(900);

/// A test a script runs that is left out of the comparison, and why.
struct Exception {
    script: &'static str,
    /// The test's id as the script prints it ("10", "job0", …).
    id: &'static str,
    reason: &'static str,
}

/// run-fio-tests.py's tests that are not job files dioscope could run:
/// fio's own C test programs and build products, and the scripts this test
/// runs directly (counted there, once).
const RUN_FIO_TESTS_NOT_JOBS: &[(u32, &str)] = &[
    (1000, "t/axmap: a C unit test of fio's bitmap, built with fio (not a job)"),
    (1001, "t/ieee754: a C unit test of fio's float packing (not a job)"),
    (1002, "t/lfsr-test: a C unit test of fio's LFSR (not a job)"),
    (1003, "t/readonly.py: run directly below, counted there"),
    (1004, "t/steadystate_tests.py: run directly below, counted there"),
    (1005, "t/stest: a C unit test of fio's smalloc (not a job)"),
    (1006, "t/strided.py: run directly below, counted there"),
    (1007, "t/zbd: zoned block devices (needs zoned null_blk, absent here)"),
    (1008, "t/zbd: zoned block devices (needs zoned null_blk, absent here)"),
    (1009, "unittests/unittest: fio's C unit tests (not a job)"),
    (1010, "t/latency_percentiles.py: run directly below, counted there"),
    (1011, "t/jsonplus2csv_test.py: run directly below, counted there"),
    (
        1012,
        "t/log_compression.py: log_store_compressed (fio's zlib-compressed log format; the issue excepts it)",
    ),
    // fio 3.41's scripts (DIOSCOPE_FIO_SRC at a later tree; absent in 3.33).
    (1013, "t/random_seed.py: run directly below, counted there"),
    (1014, "t/nvmept.py: NVMe passthrough (needs an NVMe character device)"),
    (1015, "t/nvmept_trim.py: NVMe passthrough (needs an NVMe character device)"),
    (1016, "t/client_server.py: fio's client/server mode (the issue excepts it)"),
    (1017, "t/verify.py: run directly below, counted there"),
    (1018, "t/verify-trim.py: run directly below, counted there"),
];

const EXCEPTIONS: &[Exception] = &[Exception {
    script: "run-fio-tests.py",
    id: "10",
    reason: "t0010 (io_submit_mode=offload, 10 GiB on the null engine): fio 3.33 \
             itself ran over 16 minutes here without finishing (its script's timeout \
             is 600 s); left out of both runs to keep the budget",
}];

/// One of fio's scripts and how to call it.
struct Script {
    name: &'static str,
    /// Arguments after the script's path, given the binary, fio's root,
    /// the scratch directory and which of its tests to run.
    args: fn(&Path, &Path, &Path, Part) -> Vec<String>,
    /// Which of its tests measure rates, so that fio and dioscope must not
    /// run them at the same time.
    timing: Timing,
    /// The script needs a block device it may write and trim (`--dut`):
    /// a loop device of the run's own, or it looks for null_blk (absent).
    dut: bool,
}

/// Which of a script's tests measure rates (IOPS, bandwidth, their
/// ratios, steady state): those run with one binary at a time.
#[derive(Clone, Copy)]
enum Timing {
    /// None: fio and dioscope run the whole script side by side.
    None,
    /// All: fio's run, then dioscope's.
    All,
    /// These test ids (run-fio-tests.py's numbers) one after the other, the
    /// rest side by side: two passes of the script.
    Only(&'static [u32]),
}

/// Which of a script's tests one run of it makes.
#[derive(Clone, Copy)]
enum Part {
    Whole,
    /// All but these ids.
    Without(&'static [u32]),
    /// Only these ids.
    Only(&'static [u32]),
}

/// run-fio-tests.py's tests that run with one binary at a time: those that
/// measure rates, t0011 (rate_iops=1000 and an 8:1 flow), t0012 and t0014
/// (flow ratios from IOPS logs); and t0013 (io_submit_mode=offload with
/// serialize_overlap, 8 jobs), on which fio 3.33 itself hung, all its
/// threads asleep, when it shared the CPU with dioscope's run (CI,
/// 2026-11-29). t0009 only checks that a 60 s time-based job ran 60 s,
/// which sharing the CPU does not change.
const RUN_FIO_TESTS_TIMED: &[u32] = &[11, 12, 13, 14];

fn s(p: &Path) -> String {
    p.display().to_string()
}

const SCRIPTS: &[Script] = &[
    Script {
        name: "run-fio-tests.py",
        timing: Timing::Only(RUN_FIO_TESTS_TIMED),
        dut: false,
        args: |bin, root, dir, part| {
            let mut a = vec![
                "-f".into(),
                s(bin),
                "-r".into(),
                s(root),
                "-a".into(),
                s(&dir.join("artifacts")),
                "-s".into(),
            ];
            a.extend(RUN_FIO_TESTS_NOT_JOBS.iter().map(|(id, _)| id.to_string()));
            a.extend(
                EXCEPTIONS
                    .iter()
                    .filter(|e| e.script == "run-fio-tests.py")
                    .map(|e| e.id.to_string()),
            );
            match part {
                Part::Whole => {}
                Part::Without(ids) => a.extend(ids.iter().map(u32::to_string)),
                Part::Only(ids) => {
                    a.push("-o".into());
                    a.extend(ids.iter().map(u32::to_string));
                }
            }
            a
        },
    },
    Script {
        name: "readonly.py",
        timing: Timing::None,
        dut: false,
        args: |bin, _, _, _| vec!["-f".into(), s(bin)],
    },
    Script {
        name: "strided.py",
        timing: Timing::None,
        dut: false,
        // fio 3.33 takes the binary as its argument (its -f is the file to
        // test); later ones take -f BIN and -a DIR.
        args: |bin, root, dir, _| {
            let text = std::fs::read_to_string(root.join("t/strided.py")).unwrap_or_default();
            if text.contains("add_argument('-a'") {
                vec!["-f".into(), s(bin), "-a".into(), s(&dir.join("artifacts"))]
            } else {
                vec![s(bin)]
            }
        },
    },
    Script {
        name: "jsonplus2csv_test.py",
        timing: Timing::None,
        dut: false,
        args: |bin, _, _, _| {
            vec![
                "-f".into(),
                s(bin),
                "-s".into(),
                "/usr/bin/fio_jsonplus_clat2csv".into(),
            ]
        },
    },
    Script {
        name: "latency_percentiles.py",
        timing: Timing::None,
        dut: false,
        args: |bin, _, dir, _| vec!["-f".into(), s(bin), "-a".into(), s(&dir.join("artifacts"))],
    },
    Script {
        name: "steadystate_tests.py",
        timing: Timing::All,
        dut: false,
        args: |bin, _, _, _| vec![s(bin)],
    },
    // Later fio's scripts, run when the tree has them (fio 3.41's, by hand).
    Script {
        name: "random_seed.py",
        timing: Timing::None,
        dut: false,
        args: |bin, _, dir, _| vec!["-f".into(), s(bin), "-a".into(), s(&dir.join("artifacts"))],
    },
    Script {
        name: "verify.py",
        timing: Timing::None,
        dut: false,
        args: |bin, root, dir, _| {
            vec![
                "-f".into(),
                s(bin),
                "-r".into(),
                s(root),
                "-a".into(),
                s(&dir.join("artifacts")),
            ]
        },
    },
    Script {
        name: "verify-trim.py",
        timing: Timing::None,
        dut: true,
        args: |bin, root, dir, _| {
            vec![
                "-f".into(),
                s(bin),
                "-r".into(),
                s(root),
                "-a".into(),
                s(&dir.join("artifacts")),
            ]
        },
    },
];

/// Each test's outcome as a script printed it: id → passed.
type Outcomes = BTreeMap<String, bool>;

/// Parses the per-test lines of fio's scripts:
/// `Test 3 PASSED …` (run-fio-tests, readonly, strided, jsonplus2csv),
/// `Test 11 FAILED:  iops value mismatch, t0011.fio` (run-fio-tests' failures),
/// `**********Test 7 FAILED**********` (latency_percentiles),
/// `PASSED 'set steady state …' found with arguments […]` (steadystate's
/// parse checks, numbered in order) and `PASSED job0 ss attained, …`
/// (steadystate's workloads, by job name). SKIPPED tests are left out.
fn parse_outcomes(stdout: &str) -> Outcomes {
    let mut out = Outcomes::new();
    let mut seen_ids: BTreeMap<String, u32> = BTreeMap::new();
    let mut parse_checks = 0;
    for line in stdout.lines() {
        let t = line.trim().trim_matches('*');
        if let Some(rest) = t.strip_prefix("Test ") {
            let mut w = rest.split_whitespace();
            if let (Some(id), Some(verdict)) = (w.next(), w.next()) {
                if id.chars().all(|c| c.is_ascii_digit()) {
                    // run-fio-tests.py: `Test 11 FAILED: <reason> <job>`.
                    let verdict = verdict.trim_matches('*').trim_end_matches(':');
                    if verdict == "PASSED" || verdict == "FAILED" {
                        // verify.py numbers each section's tests from 1
                        // again: a repeated id is its n-th occurrence.
                        let seen = seen_ids.entry(id.to_string()).or_insert(0u32);
                        *seen += 1;
                        let key = if *seen == 1 {
                            id.to_string()
                        } else {
                            format!("{id}#{seen}")
                        };
                        out.insert(key, verdict == "PASSED");
                    }
                }
            }
            continue;
        }
        for (word, passed) in [("PASSED ", true), ("FAILED ", false)] {
            if let Some(rest) = t.strip_prefix(word) {
                if rest.starts_with('\'') {
                    parse_checks += 1;
                    out.insert(format!("parse{parse_checks}"), passed);
                } else if let Some(name) = rest.split_whitespace().next() {
                    out.insert(name.to_string(), passed);
                }
            }
        }
    }
    out
}

struct Prereqs {
    fio: PathBuf,
    dioscope: PathBuf,
    root: PathBuf,
}

fn skip_or_fail(what: &str) -> Option<Prereqs> {
    if std::env::var_os("CI").is_some() {
        panic!("CI must provide {what}; scripts/install-deps.sh installs it");
    }
    eprintln!("fio_tscripts: skipped: {what} is missing (scripts/install-deps.sh installs it)");
    None
}

/// fio's source tree: DIOSCOPE_FIO_SRC, or the one `apt-get source` unpacked.
fn fio_source() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DIOSCOPE_FIO_SRC") {
        return Some(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(FIO_SRC_DEFAULT)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("t/run-fio-tests.py").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// A scratch "fio root" for run-fio-tests.py: its t/ and a config-host.h
/// naming the engines the installed fio was built with (the script reads
/// that file to decide which tests it can run; a source tree from
/// `apt-get source` has none because it was not configured).
fn prepare(scratch: &Path) -> Option<Prereqs> {
    if unsafe { libc::geteuid() } != 0 {
        return skip_or_fail("root (fio's scripts run cmdprio and direct-I/O tests)");
    }
    let fio = PathBuf::from("/usr/bin/fio");
    if !fio.is_file() {
        return skip_or_fail("fio (/usr/bin/fio)");
    }
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import scipy, numpy"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return skip_or_fail("/usr/bin/python3 with scipy (python3-scipy)");
    }
    let Some(src) = fio_source() else {
        return skip_or_fail("fio's source (apt-get source fio)");
    };
    let root = scratch.join("fio-root");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(src.join("t"), root.join("t")).unwrap();
    let engines = Command::new(&fio).arg("--enghelp").output().unwrap();
    let engines = String::from_utf8_lossy(&engines.stdout);
    let mut config = String::new();
    if engines.lines().any(|l| l.trim() == "libaio") {
        config.push_str("#define CONFIG_LIBAIO\n");
    }
    std::fs::write(root.join("config-host.h"), config).unwrap();
    let dioscope = PathBuf::from(env!("CARGO_BIN_EXE_dioscope"));
    Some(Prereqs {
        fio,
        dioscope,
        root,
    })
}

/// Runs one script with one binary in `dir`; returns its outcomes and time.
fn run_script(
    script: &Script,
    part: Part,
    bin: &Path,
    p: &Prereqs,
    dir: &Path,
) -> (Outcomes, Duration) {
    std::fs::create_dir_all(dir).unwrap();
    let path = p.root.join("t").join(script.name);
    // Detached when dropped, also when the script fails.
    let dut = script
        .dut
        .then(|| common::LoopDev::new(dir, 256 << 20, &[]));
    let mut args = (script.args)(bin, &p.root, dir, part);
    if let Some(d) = &dut {
        args.extend(["--dut".to_string(), s(&d.dev)]);
    }
    let start = Instant::now();
    // SIGTERM at the limit, then SIGKILL: a hung fio does not exit on
    // SIGTERM (it waits for its jobs), and would outlive the test.
    let out = Command::new("timeout")
        .args(["--kill-after=20"])
        .arg(SCRIPT_TIMEOUT.as_secs().to_string())
        .arg("/usr/bin/python3")
        .arg(&path)
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap();
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    std::fs::write(dir.join("script.stdout"), stdout.as_bytes()).unwrap();
    std::fs::write(dir.join("script.stderr"), &out.stderr).unwrap();
    // The reference cut short would leave its unreported tests out of the
    // comparison unseen (dioscope's, cut short, fails them: not reported).
    assert!(
        bin != p.fio || !matches!(out.status.code(), Some(124) | Some(137)),
        "fio's own run of {} did not finish within {SCRIPT_TIMEOUT:?} (fio hung; its last \
         tests were not run, so the comparison would be incomplete); see {}",
        script.name,
        dir.display()
    );
    (parse_outcomes(&stdout), took)
}

/// One script run with fio and with dioscope, as its [`Timing`] allows:
/// (fio's outcomes and time, dioscope's).
type Both = ((Outcomes, Duration), (Outcomes, Duration));

fn run_both(script: &Script, p: &Prereqs, base: &Path) -> Both {
    let dirs = |name: &str| {
        (
            base.join(format!("fio{name}")),
            base.join(format!("dioscope{name}")),
        )
    };
    let side_by_side = |part: Part, name: &str| -> Both {
        let (f, d) = dirs(name);
        std::thread::scope(|sc| {
            let fio = sc.spawn(|| run_script(script, part, &p.fio, p, &f));
            let dio = run_script(script, part, &p.dioscope, p, &d);
            (fio.join().unwrap(), dio)
        })
    };
    let one_then_other = |part: Part, name: &str| -> Both {
        let (f, d) = dirs(name);
        (
            run_script(script, part, &p.fio, p, &f),
            run_script(script, part, &p.dioscope, p, &d),
        )
    };
    match script.timing {
        Timing::None => side_by_side(Part::Whole, ""),
        Timing::All => one_then_other(Part::Whole, ""),
        Timing::Only(ids) => {
            let shared = side_by_side(Part::Without(ids), "");
            let apart = one_then_other(Part::Only(ids), "-timed");
            // A split that ran none of them would drop them unseen.
            let missing: Vec<&u32> = ids
                .iter()
                .filter(|id| !apart.0 .0.contains_key(&id.to_string()))
                .collect();
            assert!(
                missing.is_empty(),
                "{}: fio's run of the rate tests {ids:?} did not report {missing:?} (see {})",
                script.name,
                base.display()
            );
            let join = |(mut a, ta): (Outcomes, Duration), (b, tb): (Outcomes, Duration)| {
                a.extend(b);
                (a, ta + tb)
            };
            (join(shared.0, apart.0), join(shared.1, apart.1))
        }
    }
}

#[test]
fn parse_outcomes_reads_every_script_format() {
    let o = parse_outcomes(
        "Test 1 PASSED t0001.fio\nTest 2 SKIPPED (libaio required) x\nTest 3 FAILED t3\n\
         Test 11 FAILED:  iops value mismatch, t0011-5d2788d5.fio\n\
         Test 12 FAILED: unable to process test config\n\
         **********Test 7 PASSED**********\n**********Test 8 SKIPPED (User request)**********\n\
         PASSED 'set steady state' found with arguments ['--ss=iops:10%']\n\
         FAILED 'set steady state' NOT found with arguments []\n\
         FAILED job1 no ss, expected runtime 20000 ~= actual runtime 1\n\
         3 tests passed, 0 failed\n2 test(s) PASSED, 1 test(s) FAILED\n\
         \nddir: write, checksum: md5\nTest 1 FAILED verify\nTest 2 PASSED verify\n",
    );
    let want: Outcomes = [
        ("1", true),
        ("3", false),
        ("11", false),
        ("12", false),
        ("7", true),
        ("parse1", true),
        ("parse2", false),
        ("job1", false),
        // verify.py's next section numbers from 1 again.
        ("1#2", false),
        ("2", true),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect();
    assert_eq!(o, want);
}

#[test]
fn fio_tscripts_dioscope_passes_what_fio_passes() {
    let scratch =
        std::env::temp_dir().join(format!("dioscope-fio-tscripts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let Some(p) = prepare(&scratch) else { return };
    let only: Option<Vec<String>> = std::env::var("FIO_TSCRIPTS_ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    println!("fio's scripts from {}", p.root.join("t").display());
    for (id, why) in RUN_FIO_TESTS_NOT_JOBS {
        println!("  not compared: run-fio-tests.py {id}: {why}");
    }
    for e in EXCEPTIONS {
        println!("  not compared: {} {}: {}", e.script, e.id, e.reason);
    }
    let (mut ref_total, mut dio_total) = (0usize, 0usize);
    let mut failures = Vec::new();
    for script in SCRIPTS {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == script.name))
            || !p.root.join("t").join(script.name).is_file()
        {
            continue;
        }
        let base = scratch.join(script.name.trim_end_matches(".py"));
        let ((fio, t_fio), (dio, t_dio)) = run_both(script, &p, &base);
        let excepted = |id: &str| {
            EXCEPTIONS
                .iter()
                .any(|e| e.script == script.name && e.id == id)
        };
        let compared: Vec<&String> = fio
            .iter()
            .filter(|(id, passed)| **passed && !excepted(id))
            .map(|(id, _)| id)
            .collect();
        let passed = compared
            .iter()
            .filter(|id| dio.get(**id) == Some(&true))
            .count();
        println!(
            "\n{:<24} fio: {}/{} passed ({:.0?})  dioscope: {}/{} of those ({:.0?})",
            script.name,
            compared.len(),
            fio.len(),
            t_fio,
            passed,
            compared.len(),
            t_dio
        );
        let mut rows: Vec<(&String, &bool)> = fio.iter().collect();
        rows.sort_by_key(|(id, _)| (id.parse::<u64>().unwrap_or(u64::MAX), id.to_string()));
        for (id, fio_passed) in rows {
            let d = match dio.get(id) {
                Some(true) => "PASSED",
                Some(false) => "FAILED",
                None => "not reported",
            };
            let f = if *fio_passed { "PASSED" } else { "FAILED" };
            println!("  {id:<8} fio {f:<7} dioscope {d}");
            if *fio_passed && !excepted(id) && dio.get(id) != Some(&true) {
                failures.push(format!("{} {id}", script.name));
            }
        }
        ref_total += compared.len();
        dio_total += passed;
    }
    let pct = if ref_total == 0 {
        0.0
    } else {
        100.0 * dio_total as f64 / ref_total as f64
    };
    println!(
        "\nall scripts: dioscope passes {dio_total} of the {ref_total} tests fio passes ({pct:.1} %); \
         logs under {}",
        scratch.display()
    );
    if !failures.is_empty() {
        println!("dioscope fails: {}", failures.join(", "));
    }
    drop_data_files(&scratch);
    assert!(
        ref_total > 0,
        "fio passed no test: the scripts did not run (see {})",
        scratch.display()
    );
    assert!(
        pct >= FLOOR_PERCENT,
        "dioscope passes {pct:.1} % of the tests fio 3.33 passes (floor {FLOOR_PERCENT} %); failing: {}; logs under {}",
        failures.join(", "),
        scratch.display()
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Deletes the scripts' large data files (fio's t/jobs write GiBs), keeping
/// the logs for a failure's post-mortem.
fn drop_data_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        match e.metadata() {
            Ok(m) if m.is_dir() => drop_data_files(&path),
            Ok(m) if m.len() > 1 << 20 => {
                let _ = std::fs::remove_file(&path);
            }
            _ => {}
        }
    }
}
