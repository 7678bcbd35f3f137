//! `dioscope recipe run NAME --quick` for every recipe, as root: the table,
//! the JSON (read back by `compare` and `report`), and that scratch leaves
//! nothing behind — loop devices, zram devices, mounts and the state
//! directory are listed before and after every recipe (and after each
//! recipe interrupted with SIGINT mid-cell) and nothing new may remain. Other processes'
//! devices come and go meanwhile: only what is new is checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One recipe at a time: a snapshot must not see another test's devices.
static SERIAL: Mutex<()> = Mutex::new(());

/// Per recipe: --quick promises a minute; setup and teardown on a loaded
/// 2-CPU machine get the rest.
const BUDGET: Duration = Duration::from_secs(150);

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dioscope")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Root is a prerequisite: skip with a message, but fail in CI.
fn can_run() -> bool {
    if is_root() && Path::new("/sys/class/zram-control").exists() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("recipes need root and zram (/sys/class/zram-control) in CI");
    }
    eprintln!("skipped: recipes need root and zram");
    false
}

fn within(mut c: Command, limit: Duration) -> (Output, u32) {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn dioscope");
    let t0 = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            let pid = child.id();
            return (child.wait_with_output().expect("output"), pid);
        }
        if t0.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(10));
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "over the {limit:?} budget; stderr:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Everything scratch could leave behind.
fn snapshot(state: &Path) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    if let Ok(o) = Command::new("losetup").args(["-a"]).output() {
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            s.insert(format!("loop {l}"));
        }
    }
    if let Ok(rd) = std::fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if n.starts_with("zram") {
                s.insert(format!("zram {n}"));
            }
        }
    }
    for l in std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
    {
        s.insert(format!("mount {l}"));
    }
    for d in [state.to_path_buf(), state.join("mnt")] {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                // The lock is held for a moment by any dioscope process.
                // The id counter stays, so that no id is ever reused.
                if n != "scratch.lock" && n != "mnt" && n != "scratch.next" {
                    s.insert(format!("state {}/{n}", d.display()));
                }
            }
        }
    }
    for d in ["/var/tmp", "/dev/shm"] {
        if let Ok(rd) = std::fs::read_dir(d) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if n.starts_with("dioscope-scratch-") {
                    s.insert(format!("backing {d}/{n}"));
                }
            }
        }
    }
    s
}

/// A scratch state directory of the test's own: other worktrees run these
/// tests at the same time, and their devices are not ours to judge.
fn state_dir(dir: &Path) -> std::path::PathBuf {
    let d = dir.join("state");
    std::fs::create_dir_all(&d).expect("state dir");
    d
}

fn dioscope(state: &Path) -> Command {
    let mut c = Command::new(bin());
    c.env("DIOSCOPE_STATE_DIR", state);
    c
}

/// A test's own scratch world: the serial lock held, a temporary
/// directory, a state directory in it, and what existed before.
struct Fresh {
    _g: std::sync::MutexGuard<'static, ()>,
    dir: tempfile::TempDir,
    state: std::path::PathBuf,
    before: BTreeSet<String>,
}

/// [`Fresh`], or `None` where the tests cannot run (not root, no loop
/// devices).
fn fresh() -> Option<Fresh> {
    if !can_run() {
        return None;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let state = state_dir(dir.path());
    let before = snapshot(&state);
    Some(Fresh {
        _g,
        dir,
        state,
        before,
    })
}

/// Nothing the run (process `pid`, state directory `state`) made is left:
/// no mount under its state directory, no backing file of its process, no
/// record (a zram is removed before its record goes), and the state
/// directory holds nothing but the empty mount-point directory.
fn assert_nothing_new(before: &BTreeSet<String>, state: &Path, pid: u32, what: &str) {
    let after = snapshot(state);
    let new: Vec<&String> = after.difference(before).collect();
    let sd = state.display().to_string();
    let backing = format!("dioscope-scratch-{pid}-");
    let ours: Vec<&&String> = new
        .iter()
        .filter(|l| l.contains(&sd) || l.contains(&backing))
        .collect();
    assert!(
        ours.is_empty(),
        "{what} left behind: {ours:#?}\n(all new, others' included: {new:#?})"
    );
    let list = dioscope(state)
        .args(["scratch", "list", "--json"])
        .output()
        .expect("scratch list");
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).expect("list JSON");
    assert_eq!(
        v.as_array().map(|a| a.len()),
        Some(0),
        "{what}: scratch list still shows: {v:#}"
    );
}

/// Every loop device's request-size limit (`queue/max_sectors_kb`) and
/// its hardware limit, by name.
fn request_limits() -> BTreeMap<String, (String, String)> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let q = e.path().join("queue");
        let r = |f: &str| {
            std::fs::read_to_string(q.join(f))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        m.insert(name, (r("max_sectors_kb"), r("max_hw_sectors_kb")));
    }
    m
}

/// A recipe's caps (indirect-write's control and `--cap-request-kb`) do
/// not outlive it: the setting belongs to the loopN node, so a cap left
/// behind would cut the requests of whoever attaches that device next.
/// Every loop device reads what it read before, or its kernel default.
fn assert_limits_kept(before: &BTreeMap<String, (String, String)>, name: &str) {
    for (dev, (now, hw)) in request_limits() {
        let was = before.get(&dev).map(|b| b.0.as_str());
        // The kernel's default is the hardware limit, capped at 1280 KiB.
        let default = hw
            .parse::<u64>()
            .map(|h| h.min(1280).to_string())
            .unwrap_or_default();
        assert!(
            was == Some(now.as_str()) || now == default,
            "{name}: {dev}'s queue/max_sectors_kb is {now} after the recipe (before: {was:?}, \
             default {default})"
        );
    }
}

/// `recipe run NAME --quick EXTRA…`: the checks of every run (nothing left
/// behind, the table, the JSON, compare and report read it); the text and
/// the JSON for the caller's own checks (`None`: skipped, not root).
fn run_recipe_with(name: &str, extra: &[&str]) -> Option<(String, serde_json::Value)> {
    if !can_run() {
        return None;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join(format!("{name}.json"));
    let state = state_dir(dir.path());
    let before = snapshot(&state);
    let limits = request_limits();
    let mut c = dioscope(&state);
    c.args([
        "recipe",
        "run",
        name,
        "--quick",
        &format!("--output={}", out.display()),
    ])
    .args(extra)
    .current_dir(dir.path());
    let t0 = Instant::now();
    let (o, pid) = within(c, BUDGET);
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_nothing_new(&before, &state, pid, name);
    assert_limits_kept(&limits, name);
    assert!(
        o.status.success(),
        "{name}: exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.status
    );
    eprintln!("{name} {extra:?}: {took:?}\n{stdout}");
    // The table: a header row and a separator, mean ± σ in the cells (and
    // the legend that says so), a verdict.
    assert!(stdout.contains("|--"), "{name}: no table:\n{stdout}");
    assert!(
        stdout.contains(" ± ") && stdout.contains("(mean ± σ over the cell's trials"),
        "{name}: no spread in the table:\n{stdout}"
    );
    assert!(
        stdout.contains("This kernel: ")
            && (stdout.contains("PRESENT")
                || stdout.contains("ABSENT")
                || stdout.contains("INCONCLUSIVE")
                || stdout.contains("no interference shown")),
        "{name}: no plain verdict:\n{stdout}"
    );
    assert!(stdout.contains("The seed: "), "{name}:\n{stdout}");
    // The JSON: a sweep with the recipe section, every cell done with trials.
    let text = std::fs::read_to_string(&out).expect("the JSON result");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["kind"], "sweep");
    assert_eq!(v["recipe"]["name"], name);
    assert_eq!(v["recipe"]["quick"], true);
    assert!(!v["recipe"]["tables"].as_array().unwrap().is_empty());
    assert!(!v["recipe"]["geometry"].as_array().unwrap().is_empty());
    let cells = v["cells"].as_array().expect("cells");
    assert!(cells.len() >= 2, "{name}: {} cells", cells.len());
    for c in cells {
        assert_eq!(c["status"], "done", "{name}: {c}");
        let runs = c["runs"].as_array().unwrap();
        assert!(!runs.is_empty());
        // Over the cell's runs (an alternating cell has one trial a run).
        let trials: usize = runs
            .iter()
            .map(|r| {
                r["dioscope"]["jobs"][0]["trials"]
                    .as_array()
                    .map_or(0, |t| t.len())
            })
            .sum();
        assert!(
            trials >= 2,
            "{name}: cell {} has {trials} trials",
            c["values"][0]
        );
        assert!(
            runs.iter().all(|r| r["dioscope"]["scratch"].is_array()),
            "{name}: a run of the cell does not carry the scratch geometry"
        );
    }
    // submit-cost: the kernel profile per I/O, --quick too, when perf is
    // there (install-deps.sh installs it; in CI it must be there).
    if name == "submit-cost" {
        let perf = Command::new("perf").arg("--version").output().is_ok();
        assert!(
            perf || std::env::var_os("CI").is_none(),
            "perf is missing in CI (scripts/install-deps.sh installs linux-perf)"
        );
        if perf {
            assert!(
                stdout.contains("bdev kernel top") && stdout.contains("file kernel top"),
                "no kernel profile columns:\n{stdout}"
            );
            // --quick profiles the first engine's cells (perf costs
            // seconds per trial); the full run every engine's.
            for c in cells
                .iter()
                .filter(|c| c["values"][0].as_str().unwrap().starts_with("psync-"))
            {
                let p = &c["runs"][0]["dioscope"]["profile"];
                assert!(
                    p["groups"].as_array().is_some_and(|g| !g.is_empty()),
                    "cell {}: no profile: {p}",
                    c["values"][0]
                );
            }
            let psync = stdout
                .lines()
                .find(|l| l.contains("|    psync |"))
                .unwrap_or("");
            assert!(
                !psync.trim_end_matches(" |").ends_with("—"),
                "no kernel figures for psync:\n{stdout}"
            );
        }
    }
    // compare reads a cell of it; report reads a cell's run.
    let cell = cells[0]["values"][0].as_str().unwrap().to_string();
    let sel = format!("{}@cell={cell}", out.display());
    let cmp = Command::new(bin())
        .args(["compare", &sel, &sel, "--output-format=json"])
        .output()
        .expect("compare");
    assert!(
        cmp.status.code() != Some(2),
        "{name}: compare cannot read the result: {}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    let doc = out.with_extension("d").join(format!("{cell}.json"));
    let html = dir.path().join("r.html");
    let rep = Command::new(bin())
        .args([
            "report",
            &doc.display().to_string(),
            "-o",
            &html.display().to_string(),
        ])
        .output()
        .expect("report");
    assert!(
        rep.status.success() && html.exists(),
        "{name}: report cannot read {}: {}",
        doc.display(),
        String::from_utf8_lossy(&rep.stderr)
    );
    // The three-way verdict, in the JSON and the text alike.
    let verdict = v["recipe"]["verdict"].as_str().unwrap_or("").to_string();
    assert!(
        verdict == "PRESENT" || verdict == "ABSENT" || verdict.starts_with("INCONCLUSIVE ("),
        "{name}: verdict {verdict:?}"
    );
    assert!(
        stdout.contains(&format!("This kernel: {verdict}")),
        "{stdout}"
    );
    Some((stdout.to_string(), v))
}

/// `--quick --control`: the control is detected (control_verdict PRESENT,
/// "control: detected" in the text), and the verdict is never ABSENT
/// without it.
fn run_control(name: &str) -> Option<(String, serde_json::Value)> {
    let (stdout, v) = run_recipe_with(name, &["--control"])?;
    let r = &v["recipe"];
    assert_eq!(r["control"], true, "{name}");
    assert_eq!(
        r["control_verdict"], "PRESENT",
        "{name}: the control was not detected: {}\n{stdout}",
        r["control_text"]
    );
    assert!(stdout.contains("control: detected — "), "{name}:\n{stdout}");
    Some((stdout, v))
}

/// The recipes this file runs and interrupts (a test each, below).
const TESTED: &[&str] = &[
    "indirect-write",
    "dio-scaling",
    "blocksize",
    "submit-cost",
    "pagecache-interference",
];

/// A recipe added to the table without its two tests here fails.
#[test]
fn every_recipe_is_tested() {
    let o = Command::new(bin())
        .args(["recipe", "list"])
        .output()
        .expect("recipe list");
    assert!(o.status.success());
    let listed: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(!listed.is_empty());
    for name in &listed {
        assert!(
            TESTED.contains(&name.as_str()),
            "recipe {name} has no tests: add a run_recipe_with(\"{name}\", …) test and \
             interrupt_recipe(\"{name}\") tests and its name to TESTED"
        );
    }
    assert_eq!(listed.len(), TESTED.len(), "{listed:?} vs {TESTED:?}");
}

// Time budget of this binary (issue 29): each `--quick --control` run
// below takes 5–70 s here (blocksize about 40 s), the two planted cases
// about 30 s, the interruptions a few seconds each: about 6 minutes for the
// whole binary on this 2-CPU machine while other builds run, within the
// 10 minutes the issue allows (each run is also held to BUDGET).

#[test]
fn indirect_write_quick() {
    let Some((_, v)) = run_control("indirect-write") else {
        return;
    };
    // This kernel's indirect layout leaves its write in 7 requests against
    // the extents layout's 4: the split is seen.
    assert_eq!(
        v["recipe"]["verdict"], "PRESENT",
        "{}",
        v["recipe"]["verdict_text"]
    );
}

/// dio-scaling's control (the top thread count confined to half its CPUs)
/// is detected, and the verdict on fewer CPUs than the seed's collapse
/// needs is masked, never ABSENT.
#[test]
fn dio_scaling_quick() {
    let Some((_, v)) = run_control("dio-scaling") else {
        return;
    };
    let cpus = v["recipe"]["cpus"].as_u64().unwrap_or(0);
    if cpus < 8 {
        let verdict = v["recipe"]["verdict"].as_str().unwrap_or("");
        assert!(
            verdict.starts_with(&format!("INCONCLUSIVE (masked: {cpus} CPUs")),
            "{verdict}"
        );
    }
}

/// The fair negative, required: seed 002's "system time fell by a third
/// with 16k/64k blocks" on this kernel. The writer's CPU per 1 MiB buffered
/// write with 4k and with 64k XFS blocks, the runs alternating (18 pairs,
/// each on two new file systems), judged in triplets: the interval must
/// exclude the seed's −33 % (stated in the JSON's `effect_pct`, the
/// interval in `interval_pct`, both in the text) on a clean baseline, and
/// the control (seccomp filters whose removal is a fall of at most 33 % in
/// the same metric) must be detected: ABSENT. By simulation of the decision
/// (recipes::blocksize::tests) a true null is ABSENT 97.5–98.5 % of the
/// time at this machine's noise (3 % quiet, 8 % loaded), also under drift,
/// a step and a wild trial; the rest is PRESENT by chance (the interval's
/// one-sided 2.5 %), and a true small saving of a few % makes PRESENT more
/// likely (2 of 17 runs): a PRESENT far inside the seed's size gets one more
/// run, which must be ABSENT.
#[test]
fn blocksize_quick() {
    // A true small saving (−2 to −7 % here, docs/RECIPES.md) reaches
    // significance in about 1 quick run in 10: that run is PRESENT with its
    // whole interval far inside the seed's −33 %, the recipe's verdict,
    // not a failure of it. Then one more independent run must be ABSENT
    // (both runs must exclude −33 %): a false failure about 1 in 100.
    for attempt in 1..=2 {
        let Some((stdout, v)) = run_control("blocksize") else {
            return;
        };
        let r = &v["recipe"];
        let text = r["verdict_text"].as_str().unwrap_or("");
        assert_eq!(r["effect_pct"].as_f64(), Some(-33.0), "{r}");
        let lo = r["interval_pct"][0].as_f64().expect("interval_pct");
        let hi = r["interval_pct"][1].as_f64().expect("interval_pct");
        assert!(
            lo > -33.0 && lo <= hi,
            "[{lo}, {hi}] does not exclude −33 %: {text}"
        );
        if r["verdict"] == "PRESENT" && attempt == 1 {
            eprintln!("blocksize run 1: PRESENT inside the seed's size ({text}); running again");
            continue;
        }
        assert_eq!(r["verdict"], "ABSENT", "run {attempt}: {text}\n{stdout}");
        assert!(
            text.contains("the seed's effect: -33 %") && text.contains("excludes the seed's −33 %"),
            "{text}"
        );
        assert!(
            text.contains("alternating") && text.contains("triplets"),
            "{text}"
        );
        return;
    }
}

#[test]
fn submit_cost_quick() {
    run_control("submit-cost");
}

/// The clean case and the fair negative: seed 004's interference on this
/// kernel. Clean trials and trials that start with the whole device freshly
/// cached alternate in one cell (drift falls on both alike). A direct write
/// removes the cached pages of its own range, and the writes cover the
/// device within the first part of a trial, so the cached trials cost at
/// most a few % and the comparison excludes the seed's +35 %; the control
/// (blkid's pages kept outside the writes' range in every second trial:
/// the seed's per-write bookkeeping, about +8 % here) is detected. The
/// verdict must be decisive and agree with that: ABSENT, or PRESENT with
/// its whole interval below the seed's size (the pages do cost something
/// while they last: a true small effect may reach significance), never
/// INCONCLUSIVE on a clean baseline. When another process holds the CPUs
/// (cpu_contention in the cells) the rule says INCONCLUSIVE, which fails
/// this test in CI and skips the check locally with a message.
#[test]
fn pagecache_interference_quick() {
    let Some((_, v)) = run_control("pagecache-interference") else {
        return;
    };
    let r = &v["recipe"];
    let verdict = r["verdict"].as_str().unwrap_or("");
    let text = r["verdict_text"].as_str().unwrap_or("");
    if verdict.contains("cpu_contention") && std::env::var_os("CI").is_none() {
        eprintln!("skipped the verdict check: the CPUs were busy with other work ({verdict})");
        return;
    }
    assert!(text.contains("the seed's effect: +35 %"), "{text}");
    assert!(text.contains("alternating"), "{text}");
    match verdict {
        "ABSENT" => {}
        "PRESENT" => {
            let hi = upper_end(text).unwrap_or_else(|| panic!("no interval: {text}"));
            assert!(
                hi < 35.0,
                "PRESENT at the seed's size on this kernel: {text}"
            );
        }
        _ => panic!("{verdict}: {text}"),
    }
}

/// The upper end of the first interval `[lo %, hi %]` of a verdict text.
fn upper_end(text: &str) -> Option<f64> {
    let inner = text.split_once('[')?.1.split_once(']')?.0;
    let hi = inner.split_once(',')?.1.trim().trim_end_matches('%').trim();
    hi.replace('\u{2212}', "-").parse().ok()
}

#[test]
fn the_upper_end_of_an_interval_is_read() {
    assert_eq!(
        upper_end("x (+1.0 % [+0.2 %, +2.5 %], 12 trials"),
        Some(2.5)
    );
    assert_eq!(upper_end("x (-1.0 % [-4.5 %, -0.5 %])"), Some(-0.5));
    assert_eq!(upper_end("no interval"), None);
}

/// Seed 000 masked: every request of both layouts capped at 64 KiB, so
/// both write 64-odd requests and the layout's split cannot show: not
/// ABSENT but INCONCLUSIVE, naming the device limit.
#[test]
fn indirect_write_masked_by_the_request_size_limit() {
    let Some((_, v)) = run_recipe_with("indirect-write", &["--cap-request-kb=64"]) else {
        return;
    };
    let verdict = v["recipe"]["verdict"].as_str().unwrap_or("");
    assert!(
        verdict.starts_with("INCONCLUSIVE (masked: the device request-size limit"),
        "{verdict}: {}",
        v["recipe"]["verdict_text"]
    );
}

/// Seed 004 on a contaminated baseline: a buffered reader on the device
/// during every cell, the clean one included; the findings show it and the
/// verdict says so.
#[test]
fn pagecache_interference_contaminated_baseline() {
    let Some((_, v)) = run_recipe_with("pagecache-interference", &["--contaminate"]) else {
        return;
    };
    let verdict = v["recipe"]["verdict"].as_str().unwrap_or("");
    assert!(
        verdict.starts_with("INCONCLUSIVE (contaminated baseline: ")
            && ["page_cache", "other_openers", "other_device_io"]
                .iter()
                .any(|k| verdict.contains(k)),
        "{verdict}: {}",
        v["recipe"]["verdict_text"]
    );
}

/// How a recipe is stopped in [`interrupt_recipe_with`].
#[derive(Clone, Copy, PartialEq)]
enum Stopping {
    /// One SIGINT.
    Once,
    /// Two SIGINTs back to back (an impatient Ctrl-C Ctrl-C).
    Twice,
    /// `scratch destroy --all` by another process first (it must leave the
    /// running recipe's devices alone), then one SIGINT.
    DestroyAllFirst,
    /// SIGKILL: nothing can clean up; `scratch list` marks what it made
    /// LEFTOVER and `scratch destroy --all` removes exactly that.
    Kill,
    /// One SIGINT once `--control`'s first cell runs (its devices made).
    InControl,
}

/// SIGINT in the middle of recipe `name`, once its scratch devices exist
/// and its first cell runs: exit 130, and everything it made is gone.
fn interrupt_recipe(name: &str) {
    interrupt_recipe_with(name, Stopping::Once)
}

fn interrupt_recipe_with(name: &str, how: Stopping) {
    let Some(Fresh {
        _g,
        dir,
        state,
        before,
    }) = fresh()
    else {
        return;
    };
    let control: &[&str] = if how == Stopping::InControl {
        &["--control"]
    } else {
        &[]
    };
    let marker = if how == Stopping::InControl {
        "[recipe · control-"
    } else {
        "[recipe · "
    };
    let mut child = dioscope(&state)
        .args(["recipe", "run", name, "--quick"])
        .args(control)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    // stderr read as it comes: each cell announces itself there.
    let err = std::sync::Arc::new(Mutex::new(String::new()));
    let reader = {
        let err = err.clone();
        let mut pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut pipe, &mut buf) {
                if n == 0 {
                    break;
                }
                err.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let t0 = Instant::now();
    loop {
        let l = dioscope(&state)
            .args(["scratch", "list", "--json"])
            .output()
            .expect("list");
        let v: serde_json::Value = serde_json::from_slice(&l.stdout).unwrap_or_default();
        let made = v
            .as_array()
            .map(|a| a.iter().any(|i| i["pid"] == pid))
            .unwrap_or(false);
        if made && err.lock().unwrap().contains(marker) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(if control.is_empty() { 90 } else { 150 }),
            "{name}: no scratch device or no cell within 90 s; stderr:\n{}",
            err.lock().unwrap()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "{name}: the recipe ended early; stderr:\n{}",
            err.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Into the first cell's trials, soon: a quick indirect-write runs both
    // its cells in about a second, and an interrupt after the recipe has
    // finished tests nothing (it exits 0).
    std::thread::sleep(Duration::from_millis(100));
    if how == Stopping::DestroyAllFirst {
        let ids = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter(|i| i["pid"] == pid)
                        .map(|i| i["id"].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        let list = || -> serde_json::Value {
            let l = dioscope(&state)
                .args(["scratch", "list", "--json"])
                .output()
                .expect("list");
            serde_json::from_slice(&l.stdout).unwrap_or_default()
        };
        let before_ids = ids(&list());
        let d = dioscope(&state)
            .args(["scratch", "destroy", "--all"])
            .output()
            .expect("destroy --all");
        let after_ids = ids(&list());
        assert!(
            before_ids.iter().all(|i| after_ids.contains(i)),
            "destroy --all removed a running recipe's devices: {before_ids:?} -> {after_ids:?}; {}",
            String::from_utf8_lossy(&d.stderr)
        );
        assert!(
            String::from_utf8_lossy(&d.stdout).contains(&format!("{pid}"))
                || String::from_utf8_lossy(&d.stderr).contains(&format!("{pid}")),
            "destroy --all does not say whose devices it left: {}{}",
            String::from_utf8_lossy(&d.stdout),
            String::from_utf8_lossy(&d.stderr)
        );
    }
    let signals = if how == Stopping::Twice { 2 } else { 1 };
    let sig = if how == Stopping::Kill {
        "-KILL"
    } else {
        "-INT"
    };
    for _ in 0..signals {
        Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .expect("kill");
    }
    let t1 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(60),
            "{name}: no exit within 60 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = reader.join();
    let err = err.lock().unwrap().clone();
    let took = t1.elapsed();
    if how == Stopping::Kill {
        let l = dioscope(&state).args(["scratch", "list"]).output().unwrap();
        let lines = String::from_utf8_lossy(&l.stdout).to_string();
        assert!(
            lines.contains(&format!("process {pid} is gone")),
            "nothing marked: {lines}"
        );
        for line in lines.lines() {
            assert!(line.contains("LEFTOVER"), "not marked: {line}\n{lines}");
        }
        let d = dioscope(&state)
            .args(["scratch", "destroy", "--all"])
            .output()
            .expect("destroy");
        assert!(d.status.success(), "{}", String::from_utf8_lossy(&d.stderr));
        assert_nothing_new(&before, &state, pid, &format!("the killed {name}"));
        return;
    }
    assert_eq!(status.code(), Some(130), "{name}: stderr:\n{err}");
    assert_nothing_new(&before, &state, pid, &format!("the interrupted {name}"));
    // Within a second or so of the first signal (tear-down included: an
    // unmount and a detach on a loaded machine).
    assert!(
        took < Duration::from_secs(3),
        "{name}: {took:?} from SIGINT to exit; stderr:\n{err}"
    );
}

/// Issue 29: SIGINT while the control runs (dio-scaling's control makes an
/// XFS on a loop device of its own) leaves no loop or zram device, mount
/// or file of the recipe.
#[test]
fn interrupted_control_leaves_nothing() {
    interrupt_recipe_with("dio-scaling", Stopping::InControl);
}

/// Issue 23, principle 4: a second Ctrl-C finishes the clean-up (quickly)
/// instead of abandoning it.
#[test]
fn second_sigint_during_recipe_run_still_leaves_nothing() {
    interrupt_recipe_with("indirect-write", Stopping::Twice);
}

/// Issue 23, principle 4: SIGKILL of `recipe run` leaves records (written
/// before the devices) that `scratch list` marks LEFTOVER and `scratch
/// destroy --all` removes, and nothing else.
#[test]
fn sigkill_of_recipe_run_leaves_leftovers_that_destroy_removes() {
    interrupt_recipe_with("indirect-write", Stopping::Kill);
}

/// Issue 23, principle 3: `scratch destroy --all` leaves the items of a
/// process that is still running (a recipe's devices mid-run).
#[test]
fn destroy_all_leaves_a_running_recipes_devices() {
    interrupt_recipe_with("indirect-write", Stopping::DestroyAllFirst);
}

#[test]
fn interrupted_indirect_write_leaves_nothing() {
    interrupt_recipe("indirect-write");
}

#[test]
fn interrupted_dio_scaling_leaves_nothing() {
    interrupt_recipe("dio-scaling");
}

#[test]
fn interrupted_blocksize_leaves_nothing() {
    interrupt_recipe("blocksize");
}

#[test]
fn interrupted_submit_cost_leaves_nothing() {
    interrupt_recipe("submit-cost");
}

#[test]
fn interrupted_pagecache_interference_leaves_nothing() {
    interrupt_recipe("pagecache-interference");
}

/// `scratch create` and `destroy` by hand: made, listed, removed, and a
/// bad request refused with exit 2.
#[test]
fn scratch_by_hand() {
    let Some(f) = fresh() else { return };
    let (state, before) = (f.state.clone(), f.before.clone());
    let o = dioscope(&state)
        .args([
            "scratch",
            "create",
            "fs",
            "--type=btrfs",
            "--devices=2",
            "--on=zram",
            "--size=256m",
        ])
        .output()
        .expect("create");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let id = out.split_whitespace().next().unwrap().to_string();
    assert!(out.contains("fs btrfs"), "{out}");
    let l = dioscope(&state).args(["scratch", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&l.stdout).contains(&id));
    // A device of the file system cannot go on its own.
    let child = String::from_utf8_lossy(&l.stdout)
        .lines()
        .find(|x| x.contains(&format!("(part of {id})")))
        .map(|x| x.split_whitespace().next().unwrap().to_string())
        .expect("its devices are listed");
    let r = dioscope(&state)
        .args(["scratch", "destroy", &child])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    let r = dioscope(&state)
        .args(["scratch", "destroy", &id])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let bad = dioscope(&state)
        .args([
            "scratch",
            "create",
            "loop",
            "--size=1g",
            "--sector-size=3000",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("4096"));
    let none = dioscope(&state)
        .args(["scratch", "destroy", "no-such-id"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    // The creating process is gone: its backing files carry its pid.
    assert_nothing_new(&before, &state, 0, "scratch by hand");
}

/// `scratch destroy` of a loop device someone holds open (here the test;
/// in CI it was the `mkfs` a killed `scratch create` left running) does
/// not call it destroyed while it is still attached: `losetup -d` only
/// marks it to detach at the last close. Destroy waits for the close and
/// then nothing of it is left.
#[test]
fn scratch_destroy_waits_for_a_held_loop_device_to_detach() {
    let Some(f) = fresh() else { return };
    let (state, before) = (f.state.clone(), f.before.clone());
    let o = dioscope(&state)
        .args(["scratch", "create", "loop", "--size=64m"])
        .output()
        .expect("create");
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let id = out.split_whitespace().next().unwrap().to_string();
    let dev = out
        .split_whitespace()
        .find(|w| w.starts_with("/dev/loop"))
        .unwrap_or_else(|| panic!("no device in: {out}"))
        .to_string();
    let held = std::fs::File::open(&dev).expect("hold the device open");
    let released = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        drop(held);
    });
    let t0 = Instant::now();
    let r = dioscope(&state)
        .args(["scratch", "destroy", &id])
        .output()
        .unwrap();
    let took = t0.elapsed();
    released.join().unwrap();
    assert!(r.status.success(), "{}", text(&r));
    assert!(
        took >= Duration::from_millis(1000),
        "destroy returned after {took:?}, while the device was still held"
    );
    assert_nothing_new(&before, &state, 0, "a held loop device's destroy");
}

/// `--profile` reaches every cell of any recipe, quick or not (the
/// recipe's cells go through `Ctx::cell`, which adds it): each cell of a
/// quick run carries a recorded profile. indirect-write has the fewest
/// cells; perf's start per trial makes a larger recipe outgrow the budget.
#[test]
fn quick_recipe_with_profile_has_the_profile() {
    if !can_run() {
        return;
    }
    let perf = Command::new("sh")
        .args(["-c", "command -v perf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !perf {
        if std::env::var_os("CI").is_some() {
            panic!("CI must provide perf (scripts/install-deps.sh installs linux-perf)");
        }
        eprintln!("SKIPPED: needs perf");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("p.json");
    let state = state_dir(dir.path());
    let before = snapshot(&state);
    let mut c = dioscope(&state);
    c.args([
        "recipe",
        "run",
        "indirect-write",
        "--quick",
        "--profile",
        &format!("--output={}", out.display()),
    ])
    .current_dir(dir.path());
    let (o, pid) = within(c, BUDGET);
    assert_nothing_new(&before, &state, pid, "indirect-write --profile");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "exit {:?}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("JSON")).expect("JSON");
    for c in v["cells"].as_array().expect("cells") {
        let p = &c["runs"][0]["dioscope"]["profile"];
        assert!(
            p["status"] == "recorded" || p["status"] == "partial",
            "cell {}: {p}",
            c["values"][0]
        );
        assert!(
            p["groups"][0]["process"]["us_per_io"]
                .as_f64()
                .unwrap_or(0.0)
                > 0.0,
            "cell {}: {p}",
            c["values"][0]
        );
    }
}

// ---- Issue 23: scratch devices are known by identity, not by number ----

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn sh(cmd: &str) -> Output {
    Command::new("sh").args(["-c", cmd]).output().expect("sh")
}

/// A zram device of the test's own (the "user's"), removed on drop while it
/// is still the disk the test made (its diskseq).
struct UserZram {
    n: u32,
    seq: String,
}

impl UserZram {
    fn diskseq(n: u32) -> String {
        std::fs::read_to_string(format!("/sys/block/zram{n}/diskseq")).unwrap_or_default()
    }

    /// A new zram, and only if it got number `want`; other numbers it got
    /// on the way are given back.
    fn with_number(want: u32) -> Option<UserZram> {
        let mut others = Vec::new();
        let mut got = None;
        for _ in 0..8 {
            let n: u32 = std::fs::read_to_string("/sys/class/zram-control/hot_add")
                .ok()?
                .trim()
                .parse()
                .ok()?;
            let z = UserZram {
                n,
                seq: UserZram::diskseq(n),
            };
            if n == want {
                got = Some(z);
                break;
            }
            others.push(z);
        }
        drop(others);
        got
    }

    /// An ext4 on it (size `size`); its UUID.
    fn ext4(&self, size: u64) -> String {
        std::fs::write(
            format!("/sys/block/zram{}/disksize", self.n),
            size.to_string(),
        )
        .expect("disksize");
        let o = sh(&format!("mkfs.ext4 -q -F /dev/zram{}", self.n));
        assert!(o.status.success(), "{}", text(&o));
        self.uuid()
    }

    fn uuid(&self) -> String {
        String::from_utf8_lossy(
            &sh(&format!("blkid -p -o value -s UUID /dev/zram{}", self.n)).stdout,
        )
        .trim()
        .to_string()
    }
}

impl Drop for UserZram {
    fn drop(&mut self) {
        if !self.seq.is_empty() && UserZram::diskseq(self.n) == self.seq {
            let _ = std::fs::write("/sys/class/zram-control/hot_remove", self.n.to_string());
        }
    }
}

/// `scratch create zram` of a small unfilled device: (id, number).
fn scratch_zram(state: &Path) -> (String, u32) {
    let o = dioscope(state)
        .args(["scratch", "create", "zram", "--size=64m", "--no-fill"])
        .output()
        .expect("create");
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let id = out.split_whitespace().next().unwrap().to_string();
    let n: u32 = out
        .split("/dev/zram")
        .nth(1)
        .and_then(|r| {
            r.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })
        .expect("its number");
    (id, n)
}

/// A stale record (its zram removed behind dioscope's back) whose number a
/// user's zram of the same size took, with an ext4 on it: `scratch destroy`
/// leaves the user's device and its file system alone.
#[test]
fn scratch_destroy_leaves_a_user_zram_that_took_the_number() {
    if !can_run() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let state = state_dir(dir.path());
    let (id, n) = scratch_zram(&state);
    std::fs::write("/sys/class/zram-control/hot_remove", n.to_string()).expect("hot_remove");
    let Some(user) = UserZram::with_number(n) else {
        // Another process took the number meanwhile: nothing to test.
        eprintln!("SKIPPED: zram{n} was taken by another process");
        return;
    };
    let uuid = user.ext4(64 << 20);
    assert!(!uuid.is_empty());
    let d = dioscope(&state)
        .args(["scratch", "destroy", &id])
        .output()
        .expect("destroy");
    assert!(
        Path::new(&format!("/sys/block/zram{n}")).exists(),
        "the user's zram{n} was removed: {}",
        text(&d)
    );
    assert_eq!(user.uuid(), uuid, "the user's file system changed");
    // The record is stale: it goes, and says why.
    let l = dioscope(&state).args(["scratch", "list"]).output().unwrap();
    assert!(!text(&l).contains(&id), "{}", text(&l));
    assert!(text(&d).contains(&format!("zram{n}")), "{}", text(&d));
}

/// A zram dioscope made, reset (not removed) by the user and given an
/// ext4: reset keeps the kernel's diskseq, so the identity check alone
/// passes; the file system dioscope did not make keeps `destroy` away.
#[test]
fn scratch_destroy_leaves_a_reset_zram_with_a_user_file_system() {
    if !can_run() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let state = state_dir(dir.path());
    let (id, n) = scratch_zram(&state);
    let seq = UserZram::diskseq(n);
    std::fs::write(format!("/sys/block/zram{n}/reset"), "1").expect("reset");
    assert_eq!(
        UserZram::diskseq(n),
        seq,
        "reset changed diskseq (see RELIABILITY.md)"
    );
    // From here on it is the user's: removed on drop by the test.
    let user = UserZram { n, seq };
    let uuid = user.ext4(64 << 20);
    let d = dioscope(&state)
        .args(["scratch", "destroy", &id])
        .output()
        .expect("destroy");
    assert!(
        Path::new(&format!("/sys/block/zram{n}")).exists(),
        "the user's zram{n} was removed: {}",
        text(&d)
    );
    assert_eq!(user.uuid(), uuid, "the user's file system changed");
    assert_eq!(d.status.code(), Some(1), "{}", text(&d));
    assert!(text(&d).contains("ext4"), "{}", text(&d));
}

/// An id is never given again, even after the registry emptied: an id
/// from an old `scratch list` never names a newer device.
#[test]
fn scratch_ids_are_never_reused() {
    let Some(f) = fresh() else { return };
    let (state, before) = (f.state.clone(), f.before.clone());
    let mut seen = Vec::new();
    for _ in 0..2 {
        let o = dioscope(&state)
            .args(["scratch", "create", "loop", "--size=1m"])
            .output()
            .expect("create");
        assert!(o.status.success(), "{}", text(&o));
        let id = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        let d = dioscope(&state)
            .args(["scratch", "destroy", &id])
            .output()
            .expect("destroy");
        assert!(d.status.success(), "{}", text(&d));
        assert!(!seen.contains(&id), "{id} given twice");
        seen.push(id);
    }
    assert_nothing_new(&before, &state, 0, "scratch ids");
}

/// `--mkfs` takes options, never devices: a word naming an existing path
/// (the user's ext4 on a loop device) or a stray word is refused with exit
/// 2 before anything is made, and the user's file system is intact.
#[test]
fn scratch_mkfs_words_are_options_never_devices() {
    let Some(Fresh {
        _g,
        dir,
        state,
        before,
    }) = fresh()
    else {
        return;
    };
    // The user's ext4 on a loop device of the test's own.
    let img = dir.path().join("user.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(128 << 20))
        .expect("image");
    let o = sh(&format!("losetup -f --show {}", img.display()));
    assert!(o.status.success(), "{}", text(&o));
    let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
    struct Detach(String, std::path::PathBuf);
    impl Drop for Detach {
        fn drop(&mut self) {
            let name = self.0.trim_start_matches("/dev/");
            let b = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
                .unwrap_or_default();
            if b.trim() == self.1.display().to_string() {
                let _ = Command::new("losetup").args(["-d", &self.0]).status();
            }
        }
    }
    let _detach = Detach(dev.clone(), img.clone());
    let o = sh(&format!("mkfs.ext4 -q -F {dev}"));
    assert!(o.status.success(), "{}", text(&o));
    let uuid = || {
        String::from_utf8_lossy(&sh(&format!("blkid -p -o value -s UUID {dev}")).stdout)
            .trim()
            .to_string()
    };
    let u0 = uuid();
    for mkfs in [dev.clone(), format!("-L x {dev}"), "stray".to_string()] {
        let o = dioscope(&state)
            .args([
                "scratch",
                "create",
                "fs",
                "--type=btrfs",
                "--size=256m",
                &format!("--mkfs={mkfs}"),
            ])
            .output()
            .expect("create");
        assert_eq!(o.status.code(), Some(2), "--mkfs={mkfs}: {}", text(&o));
        assert!(text(&o).contains("--mkfs"), "{}", text(&o));
        assert_eq!(uuid(), u0, "--mkfs={mkfs}: the user's ext4 was overwritten");
    }
    assert_nothing_new(&before, &state, 0, "refused --mkfs");
}

/// The records exist before the devices: `scratch create` killed with
/// SIGKILL mid-way leaves records that `scratch list` marks LEFTOVER, and
/// `scratch destroy` of them removes exactly what it made.
#[test]
fn sigkill_of_scratch_create_leaves_a_leftover_that_destroy_removes() {
    let Some(f) = fresh() else { return };
    let (state, before) = (f.state.clone(), f.before.clone());
    let mut child = dioscope(&state)
        .args([
            "scratch",
            "create",
            "fs",
            "--type=ext4",
            "--on=loop",
            "--size=256m",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    // Kill it once a loop device of it is attached (recorded).
    let t0 = Instant::now();
    loop {
        let t = std::fs::read_to_string(state.join("scratch.json")).unwrap_or_default();
        if t.contains("\"/dev/loop") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no loop device: {t}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let finished = child.try_wait().expect("wait").is_some();
    let _ = child.kill();
    let st = child.wait().expect("wait");
    if finished && st.success() {
        let _ = dioscope(&state)
            .args(["scratch", "destroy", "--all"])
            .output();
        eprintln!("SKIPPED: scratch create finished before SIGKILL");
        return;
    }
    let l = dioscope(&state).args(["scratch", "list"]).output().unwrap();
    let lines = String::from_utf8_lossy(&l.stdout).to_string();
    assert!(!lines.trim().is_empty(), "nothing recorded");
    for line in lines.lines() {
        assert!(
            line.contains("LEFTOVER") && line.contains(&pid.to_string()),
            "not marked: {line}\n{lines}"
        );
    }
    let d = dioscope(&state)
        .args(["scratch", "destroy", "--all"])
        .output()
        .expect("destroy");
    assert!(d.status.success(), "{}", text(&d));
    assert_nothing_new(&before, &state, pid, "a killed scratch create");
}

/// `scratch create` stopped by SIGINT (twice, back to back) exits 1 after
/// removing what it made.
#[test]
fn scratch_create_stopped_by_a_signal_exits_1_and_leaves_nothing() {
    let Some(f) = fresh() else { return };
    let (state, before) = (f.state.clone(), f.before.clone());
    let mut child = dioscope(&state)
        .args([
            "scratch",
            "create",
            "fs",
            "--type=ext4",
            "--on=loop",
            "--size=256m",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let t0 = Instant::now();
    loop {
        let t = std::fs::read_to_string(state.join("scratch.json")).unwrap_or_default();
        if t.contains("\"/dev/loop") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no loop device: {t}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    if child.try_wait().expect("wait").is_some() {
        let _ = dioscope(&state)
            .args(["scratch", "destroy", "--all"])
            .output();
        eprintln!("SKIPPED: scratch create finished before the signal");
        return;
    }
    for _ in 0..2 {
        let _ = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status();
    }
    let o = child.wait_with_output().expect("wait");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_nothing_new(&before, &state, pid, "an interrupted scratch create");
}

#[test]
fn a_recipe_writing_to_standard_output_makes_no_folder_in_dev() {
    // Issue 23: `--output=/dev/stdout` made a folder /dev/stdout.d/ for
    // the per-cell results. The JSON goes to the stream, no folder is made
    // beside it (a note says so), and nothing is created in /dev.
    let Some(Fresh {
        _g,
        dir,
        state,
        before,
    }) = fresh()
    else {
        return;
    };
    let dev_before: BTreeSet<String> = std::fs::read_dir("/dev")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Standard output into a file (a pipe nobody reads until the end would
    // fill up with the JSON); `exec` keeps dioscope's pid the shell's.
    let mut c = Command::new("sh");
    c.args([
        "-c",
        "exec \"$0\" recipe run blocksize --quick --output=/dev/stdout > out.txt",
        bin(),
    ])
    .env("DIOSCOPE_STATE_DIR", &state)
    .current_dir(dir.path());
    let (o, pid) = within(c, BUDGET);
    let leaked = Path::new("/dev/stdout.d");
    let made = leaked.exists();
    if made {
        // Never leave it on the machine, even when the test fails.
        let _ = std::fs::remove_dir_all(leaked);
    }
    assert_nothing_new(&before, &state, pid, "blocksize to stdout");
    let stdout = std::fs::read_to_string(dir.path().join("out.txt")).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}\n{stderr}", o.status);
    assert!(!made, "a folder /dev/stdout.d was made");
    assert!(
        stdout.contains("\"kind\": \"sweep\""),
        "no JSON on stdout:\n{stdout}"
    );
    assert!(stderr.contains("is a stream"), "no note:\n{stderr}");
    let dev_after: BTreeSet<String> = std::fs::read_dir("/dev")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let new: Vec<_> = dev_after
        .difference(&dev_before)
        .filter(|n| !n.starts_with("loop") && !n.starts_with("zram"))
        .collect();
    assert!(new.is_empty(), "made in /dev: {new:?}");
}
