//! Diagnostics end to end: seed 004 (page-cache pages and another opener on
//! a loop device), seed 000 (device requests per 4 MiB write on ext4 with
//! and without extents), findings in the text and the JSON, and `doctor`.
//! Every loop device, mount and helper process is released by a guard, also
//! when an assertion fails.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process holding a path open on its stdin; killed on drop.
struct Holder(Child);

impl Holder {
    fn new(path: &Path) -> Holder {
        let f = std::fs::File::open(path).unwrap();
        Holder(
            Command::new("sleep")
                .arg("600")
                .stdin(f)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn sleep"),
        )
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A file system mounted on a temporary directory; unmounted on drop. Declare
/// it after its [`LoopDev`] so that it is dropped first.
struct Mounted {
    dir: tempfile::TempDir,
}

impl Mounted {
    fn new(dev: &Path) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("mount")
            .arg(dev)
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "mount {}: {}",
            dev.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        Mounted { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        crate::common::umount_retrying(self.dir.path());
    }
}

/// Buffered reads of the first 1 MiB of a device, as blkid does.
fn buffered_read(dev: &str) {
    let o = Command::new("dd")
        .args([&format!("if={dev}"), "of=/dev/null", "bs=4k", "count=256"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Pages of `dev` in the page cache, as `dioscope doctor` counts them.
fn doctor_pages(dir: &Path, dev: &str) -> u64 {
    let o = run_in(dir, &["doctor", dev, "--output-format=json"]);
    let j = json(&o);
    j["page_cache"]["pages"].as_u64().unwrap_or(0)
}

/// Wait (up to 5 s) until the buffered reader's pages are visible.
fn wait_for_pages(dir: &Path, dev: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = doctor_pages(dir, dev);
        if n > 0 || Instant::now() > deadline {
            return n;
        }
        std::thread::yield_now();
    }
}

fn findings(j: &Value) -> &Vec<Value> {
    j["dioscope"]["findings"]
        .as_array()
        .expect("dioscope.findings is an array")
}

fn of_kind<'a>(j: &'a Value, kind: &str) -> Vec<&'a Value> {
    findings(j).iter().filter(|f| f["kind"] == kind).collect()
}

/// Every finding carries severity, kind and message.
fn assert_findings_well_formed(j: &Value) {
    for f in findings(j) {
        assert!(
            ["info", "warning", "critical"].contains(&f["severity"].as_str().unwrap_or("")),
            "{f}"
        );
        assert!(f["kind"].is_string(), "{f}");
        assert!(f["message"].as_str().unwrap_or("").len() > 40, "{f}");
    }
}

fn seed_004_args<'a>(dev: &'a str, destroy: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "--name=x",
        dev,
        destroy,
        "--rw=randwrite",
        "--direct=1",
        "--ioengine=libaio",
        "--numjobs=2",
        "--norandommap",
        "--runtime=2",
        "--time_based",
        "--output-format=json",
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn seed_004_page_cache_and_other_opener_are_reported() {
    if !can_run(
        "root, losetup and dd",
        is_root() && have_tool("losetup") && have_tool("dd"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 256 << 20, &[]);
    let dev = lo.path().to_string();
    // The holder keeps the device open, so the pages the reader leaves
    // survive its close (the kernel drops a device's cache on last close).
    let holder = Holder::new(&lo.dev);
    buffered_read(&dev);
    let pages = wait_for_pages(d.path(), &dev);
    assert!(pages > 0, "the buffered reader left no pages on {dev}");
    let filename = format!("--filename={dev}");
    let destroy = format!("--destroy-data-on={dev}");

    // Default invalidation: pages reported, dropped before every trial.
    let o = run_in(
        d.path(),
        &seed_004_args(&filename, &destroy, &["--trials=2"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_findings_well_formed(&j);
    let pc = of_kind(&j, "page_cache_on_target");
    let before: Vec<&&Value> = pc.iter().filter(|f| f["phase"] == "before").collect();
    assert!(
        !before.is_empty() && before[0]["pages"].as_u64().unwrap() > 0,
        "no page-cache finding: {:#}",
        j["dioscope"]["findings"]
    );
    assert_eq!(before[0]["trial"], 1);
    assert_eq!(before[0]["dropped"], true);
    assert!(before[0]["message"]
        .as_str()
        .unwrap()
        .contains("dropped them"));
    let op = of_kind(&j, "other_openers");
    assert_eq!(op.len(), 1, "{:#}", j["dioscope"]["findings"]);
    let pids: Vec<u64> = op[0]["openers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["pid"].as_u64().unwrap())
        .collect();
    assert!(pids.contains(&(holder.pid() as u64)), "{pids:?}");
    assert!(op[0]["message"]
        .as_str()
        .unwrap()
        .contains(&format!("pid {}", holder.pid())));
    // The cache was empty when each trial started.
    let counts = j["dioscope"]["page_cache"].as_array().unwrap();
    assert_eq!(counts.len(), 2, "{counts:?}");
    for c in counts {
        assert_eq!(c["invalidate"], true);
        assert_eq!(
            c["before"], 0,
            "trial {} started with pages: {c}",
            c["trial"]
        );
    }
    assert!(counts[0]["found"].as_u64().unwrap() > 0, "{:?}", counts[0]);
    // Device accounting for the loop device, in dioscope's and fio's form.
    let name = lo.dev.file_name().unwrap().to_str().unwrap();
    let util = j["disk_util"].as_array().unwrap();
    let du = util.iter().find(|u| u["name"] == name).expect("disk_util");
    assert!(du["write_ios"].as_u64().unwrap() > 0, "{du}");
    for k in [
        "read_merges",
        "write_sectors",
        "read_ticks",
        "in_queue",
        "util",
    ] {
        assert!(du[k].is_number(), "{k} in {du}");
    }
    let dev_trials = j["dioscope"]["devices"].as_array().unwrap();
    assert_eq!(dev_trials.len(), 2);
    for t in dev_trials {
        let lo_dev = t["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["device"] == name)
            .expect("loop device accounted");
        assert_eq!(lo_dev["role"], "target");
        // 4 KiB writes: one request each, give or take merges.
        let rpi = lo_dev["metrics"]["requests_per_io"].as_f64().unwrap();
        assert!((0.5..=1.5).contains(&rpi), "{lo_dev}");
    }

    // invalidate=0: the pages stay and the finding says what they cost.
    buffered_read(&dev);
    assert!(wait_for_pages(d.path(), &dev) > 0);
    let o = run_in(
        d.path(),
        &seed_004_args(&filename, &destroy, &["--invalidate=0"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_findings_well_formed(&j);
    let kept = of_kind(&j, "page_cache_kept");
    assert_eq!(kept.len(), 1, "{:#}", j["dioscope"]["findings"]);
    assert!(kept[0]["pages"].as_u64().unwrap() > 0);
    let msg = kept[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("invalidate=0 kept") && msg.contains("35 %"),
        "{msg}"
    );
    let counts = j["dioscope"]["page_cache"].as_array().unwrap();
    assert_eq!(counts[0]["invalidate"], false);
    assert!(counts[0]["before"].as_u64().unwrap() > 0, "{:?}", counts[0]);
    assert!(of_kind(&j, "page_cache_on_target").is_empty());
    assert_eq!(of_kind(&j, "other_openers").len(), 1);
    drop(holder);
}

/// Device requests per 4 MiB direct write at offset 48 KiB of a file on a
/// fresh ext4 made with `mkfs_opts` (seed 000).
fn requests_per_4m_write(mkfs_opts: &[&str]) -> (f64, Value, QueueLimits) {
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 64 << 20, &[]);
    let mk = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .args(mkfs_opts)
        .arg(&lo.dev)
        .output()
        .unwrap();
    assert!(
        mk.status.success(),
        "{}",
        String::from_utf8_lossy(&mk.stderr)
    );
    let m = Mounted::new(&lo.dev);
    let file = m.path().join("f");
    std::fs::write(&file, vec![0x5a; 48 << 10]).unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=w",
            &format!("--filename={}", file.display()),
            "--rw=write",
            "--bs=4m",
            "--offset=48k",
            "--size=4m",
            "--loops=50",
            "--direct=1",
            "--ioengine=psync",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_findings_well_formed(&j);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 50);
    let name = lo.dev.file_name().unwrap().to_str().unwrap().to_string();
    let t = &j["dioscope"]["devices"][0];
    assert_eq!(t["app_ios"], 50, "{t}");
    let fs_dev = t["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["device"] == name.as_str())
        .unwrap_or_else(|| panic!("no accounting for {name}: {t}"))
        .clone();
    assert_eq!(fs_dev["role"], "filesystem");
    // Requests per write from the average request size: the device
    // snapshots bracket the measured interval, and a write in flight at
    // either end can fall outside it, so counting writes would be off by one.
    let avg = fs_dev["metrics"]["avg_request_bytes"]
        .as_f64()
        .unwrap_or_else(|| panic!("avg_request_bytes missing: {fs_dev}"));
    let rpi = (4u64 << 20) as f64 / avg;
    let limits = QueueLimits::of(&lo.dev);
    drop(m);
    (rpi, fs_dev, limits)
}

#[test]
fn seed_000_requests_per_write_with_and_without_extents() {
    if !can_run(
        "root, losetup, mkfs.ext4 and mount",
        is_root() && have_tool("losetup") && have_tool("mkfs.ext4") && have_tool("mount"),
    ) {
        return;
    }
    for (what, opts) in [
        ("ext4 -O ^extent,^64bit", &["-O", "^extent,^64bit"][..]),
        ("ext4 with extents", &[][..]),
    ] {
        let (rpi, dev, limits) = requests_per_4m_write(opts);
        let (lower, upper) = limits.expected_requests(4 << 20);
        println!(
            "seed 000: {what}: {rpi:.2} device requests per 4 MiB direct write at offset \
             48 KiB (avg request {} B; max_sectors_kb {}, page {} B: expected {lower}..={upper})",
            dev["metrics"]["avg_request_bytes"], limits.max_sectors_kb, limits.page_size
        );
        // Each write is split into exactly the requests the queue limits
        // force, not more (the seed's bug: one request per 4 KiB block, or
        // per mapping extent). A few small journal writes (mtime) would lower
        // the average request a little, never by a whole request per write.
        assert!(
            rpi >= lower as f64 - 0.01 && rpi < upper as f64 + 0.25,
            "{what}: {rpi} requests per 4 MiB write, expected {lower}..={upper}: {dev}"
        );
    }
}

/// The limits that decide how many requests one large direct write becomes.
struct QueueLimits {
    max_sectors_kb: u64,
    page_size: u64,
}

impl QueueLimits {
    fn of(dev: &Path) -> QueueLimits {
        let name = dev.file_name().unwrap().to_str().unwrap();
        let read = |f: &str| -> u64 {
            std::fs::read_to_string(format!("/sys/block/{name}/queue/{f}"))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let page = Command::new("getconf").arg("PAGESIZE").output().unwrap();
        QueueLimits {
            max_sectors_kb: read("max_sectors_kb"),
            page_size: String::from_utf8_lossy(&page.stdout)
                .trim()
                .parse()
                .unwrap(),
        }
    }

    /// The fewest and most requests a contiguous direct write of `len` bytes
    /// can become. A request is at most `max_sectors_kb` (the block layer
    /// splits bios to it); the direct-I/O path builds bios of at most
    /// BIO_MAX_VECS = 256 pages of the (4 KiB-page) user buffer, i.e. 1 MiB,
    /// and consecutive bios merge into one request only while it stays
    /// within `max_sectors_kb`. So: at least ⌈len ÷ max_sectors⌉ requests, at
    /// most ⌈len ÷ min(max_sectors, 256 pages)⌉. When max_sectors is below
    /// two bios (the loop device's 1280 KiB), no merge is possible and both
    /// are the same number: 4 for 4 MiB.
    fn expected_requests(&self, len: u64) -> (u64, u64) {
        let max_req = self.max_sectors_kb * 1024;
        let bio = 256 * self.page_size;
        (len.div_ceil(max_req), len.div_ceil(max_req.min(bio)))
    }
}

#[test]
fn buffered_job_is_flagged_in_text_and_json() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let args = |fmt: &'static str| {
        vec![
            "--name=b",
            "--filename=f.dat",
            "--size=4m",
            "--rw=randread",
            "--direct=0",
            "--ioengine=psync",
            fmt,
        ]
    };
    let o = run_in(d.path(), &args("--output-format=json"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_findings_well_formed(&j);
    assert_eq!(of_kind(&j, "buffered_io").len(), 1, "{:#}", j["dioscope"]);
    let env = &j["dioscope"]["environment"];
    assert!(env["kernel"]["release"].is_string(), "{env}");
    assert!(env["targets"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("f.dat"));
    // No page-cache counting for buffered I/O: the cache is the point.
    assert!(j["dioscope"]["page_cache"].as_array().unwrap().is_empty());

    let o = run_in(d.path(), &args("--output-format=normal"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = stdout(&o);
    let findings = t
        .split("\nfindings:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        findings.contains("WARNING") && findings.contains("direct=0"),
        "{t}"
    );
    let context = t.lines().find(|l| l.starts_with("context: ")).unwrap();
    assert!(
        context.contains("engine psync") && context.contains("Linux ") && context.contains("f.dat"),
        "{context}"
    );
}

fn checklist_ok(text: &str, target: &str) {
    assert!(
        text.starts_with(&format!("dioscope doctor {target}")),
        "{text}"
    );
    for check in [
        "target",
        "direct I/O",
        "really direct",
        "page cache",
        "other openers",
    ] {
        assert!(
            text.lines()
                .any(|l| l.chars().skip(2).collect::<String>().starts_with(check)),
            "no '{check}' line:\n{text}"
        );
    }
    assert!(text.contains(" passed, "), "{text}");
}

#[test]
fn doctor_prints_a_checklist_for_a_file_and_a_loop_device() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file: PathBuf = d.path().join("data");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let f = file.to_str().unwrap();
    let o = run_in(d.path(), &["doctor", f]);
    let text = stdout(&o);
    checklist_ok(&text, f);
    // A written file on the build disk has nothing critical.
    assert_eq!(o.status.code(), Some(0), "{text}");
    let o = run_in(d.path(), &["doctor", f, "--output-format=json"]);
    let j = json(&o);
    assert!(j["checks"].as_array().unwrap().len() >= 5, "{j}");
    assert_eq!(j["target"], f);

    let missing = d.path().join("missing");
    let o = run_in(d.path(), &["doctor", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does not exist"));
    let o = run_in(d.path(), &["doctor"]);
    assert_eq!(o.status.code(), Some(2));

    if !can_run("root and losetup", is_root() && have_tool("losetup")) {
        return;
    }
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    let o = run_in(d.path(), &["doctor", lo.path()]);
    let text = stdout(&o);
    checklist_ok(&text, lo.path());
    assert!(text.contains("block device, 16.0 MiB"), "{text}");
    // A loop device without direct I/O buffers everything: critical, exit 1.
    let dio = std::fs::read_to_string(format!(
        "/sys/block/{}/loop/dio",
        lo.dev.file_name().unwrap().to_str().unwrap()
    ))
    .unwrap_or_default();
    if dio.trim() == "0" {
        assert_eq!(o.status.code(), Some(1), "{text}");
        assert!(text.contains("✗ really direct"), "{text}");
    }
    // Another opener shows up in the checklist.
    let holder = Holder::new(&lo.dev);
    let o = run_in(d.path(), &["doctor", lo.path(), "--output-format=json"]);
    let j = json(&o);
    let check = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "other openers")
        .unwrap()
        .clone();
    assert_eq!(check["status"], "warn", "{check}");
    assert_eq!(check["findings"][0]["openers"][0]["pid"], holder.pid());
}

#[test]
fn reads_of_a_sparse_file_are_flagged() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = std::fs::File::create(d.path().join("sparse.dat")).unwrap();
    f.set_len(16 << 20).unwrap();
    drop(f);
    let o = run_in(
        d.path(),
        &[
            "--name=s",
            "--filename=sparse.dat",
            "--rw=randread",
            "--direct=1",
            "--ioengine=psync",
            "--size=16m",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_findings_well_formed(&j);
    let f = of_kind(&j, "reads_of_unwritten_regions");
    assert_eq!(f.len(), 1, "{:#}", j["dioscope"]["findings"]);
    assert_eq!(f[0]["range_bytes"], 16 << 20);
    assert_eq!(f[0]["hole_bytes"], 16 << 20);
    assert_eq!(f[0]["severity"], "critical");
}

#[test]
fn reads_of_never_written_zram_are_flagged() {
    let ok = is_root() && Path::new("/sys/class/zram-control/hot_add").exists();
    if !can_run("root and zram", ok) {
        return;
    }
    let z = Zram::new(32 << 20).expect("zram hot_add and disksize");
    let dev = z.dev();
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=z",
            &format!("--filename={dev}"),
            "--rw=randread",
            "--direct=1",
            "--ioengine=psync",
            "--size=32m",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_findings_well_formed(&j);
    let f = of_kind(&j, "zram_never_written");
    assert_eq!(f.len(), 1, "{:#}", j["dioscope"]["findings"]);
    assert_eq!(f[0]["stored_bytes"], 0);
    assert_eq!(f[0]["range_bytes"], 32 << 20);
    assert_eq!(f[0]["severity"], "critical");
}

/// A background shell script in its own process group; the whole group is
/// killed on drop.
struct Background(Child);

impl Background {
    fn new(script: &str, pin: Option<&str>) -> Background {
        use std::os::unix::process::CommandExt;
        let mut c = match pin {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpu, "sh", "-c", script]);
                c
            }
            None => {
                let mut c = Command::new("sh");
                c.args(["-c", script]);
                c
            }
        };
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn sh");
        Background(child)
    }
    fn pid(&self) -> i64 {
        self.0.id() as i64
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

/// A fresh ext4 on a loop device of our own, every inode table written at
/// mkfs time (no lazy init writing in the background during a run).
fn quiet_ext4(dir: &Path) -> (LoopDev, Mounted) {
    let lo = LoopDev::new(dir, 256 << 20, &[]);
    let mk = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
        .arg(&lo.dev)
        .output()
        .unwrap();
    assert!(
        mk.status.success(),
        "{}",
        String::from_utf8_lossy(&mk.stderr)
    );
    let m = Mounted::new(&lo.dev);
    (lo, m)
}

/// Two one-second trials of `rw` on `target`, in JSON; `pin` runs dioscope
/// under `taskset -c`.
fn short_run(dir: &Path, target: &str, rw: &str, pin: Option<&str>) -> Value {
    let filename = format!("--filename={target}");
    let rw = format!("--rw={rw}");
    let args = [
        "--name=j",
        filename.as_str(),
        "--size=32m",
        rw.as_str(),
        "--bs=64k",
        "--direct=1",
        "--ioengine=psync",
        "--runtime=1",
        "--time_based",
        "--trials=2",
        "--output-format=json",
    ];
    let mut c = match pin {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpu, bin()]);
            c
        }
        None => Command::new(bin()),
    };
    c.args(args).current_dir(dir);
    let o = output_within(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_findings_well_formed(&j);
    j
}

fn names_pid(f: &Value, list: &str, pid: i64) -> bool {
    f[list]
        .as_array()
        .is_some_and(|a| a.iter().any(|p| p["pid"].as_i64() == Some(pid)))
}

/// Planted condition: another process writes another file on the same file
/// system during the run. The device moved more than dioscope did, and the
/// finding names the writer; without it, no such finding.
#[test]
fn other_io_on_the_same_file_system_is_found_and_named() {
    if !can_run(
        "root, losetup, mkfs.ext4, mount and dd",
        is_root() && have_tool("losetup") && have_tool("mkfs.ext4") && have_tool("dd"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (lo, m) = quiet_ext4(d.path());
    let name = lo.dev.file_name().unwrap().to_str().unwrap().to_string();
    let target = m.path().join("f").display().to_string();
    let about_ours = |j: &Value| -> Vec<Value> {
        of_kind(j, "other_device_io")
            .into_iter()
            .filter(|f| f["device"] == name.as_str())
            .cloned()
            .collect()
    };

    let j = short_run(d.path(), &target, "randread", None);
    assert!(
        about_ours(&j).is_empty(),
        "nobody else: {:#}",
        j["dioscope"]["findings"]
    );

    // The shell holds a file on the file system open; its dd children write
    // another one, and reaped children's I/O counts in the shell's
    // /proc/PID/io.
    let other = m.path().join("other").display().to_string();
    let writer = Background::new(
        &format!(
            "exec 3>>{other}; while :; do dd if=/dev/zero of={other} bs=1M count=32 \
             oflag=direct conv=notrunc status=none; done"
        ),
        None,
    );
    let pid = writer.pid();
    let j = short_run(d.path(), &target, "randread", None);
    drop(writer);
    let found = about_ours(&j);
    assert_eq!(found.len(), 1, "{:#}", j["dioscope"]["findings"]);
    assert!(
        names_pid(&found[0], "processes", pid),
        "pid {pid}: {:#}",
        found[0]
    );
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains(&format!("pid {pid} (`sh")));
    drop(m);
}

/// Planted condition: another process reads the device directly during a
/// run on the device.
#[test]
fn other_reads_of_the_device_are_found_and_named() {
    if !can_run(
        "root, losetup and dd",
        is_root() && have_tool("losetup") && have_tool("dd"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 64 << 20, &[]);
    lo.fill_random();
    let dev = lo.path().to_string();
    let name = lo.dev.file_name().unwrap().to_str().unwrap().to_string();
    let about_ours = |j: &Value| -> Vec<Value> {
        of_kind(j, "other_device_io")
            .into_iter()
            .filter(|f| f["device"] == name.as_str())
            .cloned()
            .collect()
    };
    let j = short_run(d.path(), &dev, "randread", None);
    assert!(
        about_ours(&j).is_empty(),
        "nobody else: {:#}",
        j["dioscope"]["findings"]
    );

    let reader = Background::new(
        &format!(
            "exec 3<{dev}; while :; do dd if={dev} of=/dev/null bs=1M count=64 \
             iflag=direct status=none; done"
        ),
        None,
    );
    let pid = reader.pid();
    let j = short_run(d.path(), &dev, "randread", None);
    // doctor sees it too, in its short sample, before any benchmark.
    let o = run_in(d.path(), &["doctor", &dev, "--output-format=json"]);
    drop(reader);
    let doc = json(&o);
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "device sharing")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(check["status"], "warn", "{check:#}");
    assert!(
        names_pid(&check["findings"][0], "processes", pid),
        "{check:#}"
    );
    let o = run_in(d.path(), &["doctor", &dev, "--output-format=json"]);
    let doc = json(&o);
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "device sharing")
        .unwrap();
    assert_eq!(check["status"], "pass", "{check:#}");
    let found = about_ours(&j);
    assert_eq!(found.len(), 1, "{:#}", j["dioscope"]["findings"]);
    assert!(
        names_pid(&found[0], "processes", pid),
        "pid {pid}: {:#}",
        found[0]
    );
    assert!(found[0]["processes"][0]["read_bytes"].as_u64() > Some(0));
}

/// Planted condition: a busy loop pinned to the CPU dioscope is pinned to.
/// The CPU-contention finding names it; without it, the finding (which the
/// other work on a shared machine may still cause) does not.
#[test]
fn cpu_hog_on_our_cpu_is_found_and_named() {
    if !can_run(
        "root, losetup and taskset",
        is_root() && have_tool("losetup") && have_tool("taskset"),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 64 << 20, &[]);
    lo.fill_random();
    let dev = lo.path().to_string();
    // The last CPU we may use.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    let cpu = list.rsplit([',', '-']).next().unwrap().to_string();
    let hog = Background::new("while :; do :; done", Some(&cpu));
    let pid = hog.pid();
    let j = short_run(d.path(), &dev, "randread", Some(&cpu));
    drop(hog);
    let found = of_kind(&j, "cpu_contention");
    assert_eq!(found.len(), 1, "{:#}", j["dioscope"]["findings"]);
    assert!(names_pid(found[0], "top", pid), "pid {pid}: {:#}", found[0]);
    // Not a tool bottleneck: dioscope's worker did not have the CPU.
    assert!(
        of_kind(&j, "tool_bottleneck").is_empty(),
        "{:#}",
        j["dioscope"]["findings"]
    );

    let j = short_run(d.path(), &dev, "randread", Some(&cpu));
    for f in of_kind(&j, "cpu_contention") {
        assert!(!names_pid(f, "top", pid), "the hog is gone: {f:#}");
    }
}

/// What the run measured during its trials, as its environment findings
/// record it (CPU contention, other I/O on the device, page-cache pages a
/// trial started with or met): the conditions the trial findings name.
fn measured_conditions(j: &Value) -> Vec<dioscope_core::diag::findings::TrialCondition> {
    use dioscope_core::diag::findings::{Condition, TrialCondition};
    let trials_of = |kind: &str| -> Vec<usize> {
        let mut t: Vec<usize> = of_kind(j, kind)
            .iter()
            .flat_map(|f| f["trials"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t.as_u64().map(|t| t as usize))
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    // One finding may name several phases (`also_phases`) and trials
    // (`trials`) with the same count.
    let mut pages: Vec<usize> = of_kind(j, "page_cache_on_target")
        .iter()
        .filter(|f| {
            let during = f["phase"] == "during"
                || f["also_phases"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|x| x == "during"));
            during || (f["phase"] == "before" && f["dropped"] == false)
        })
        .flat_map(|f| match f["trials"].as_array() {
            Some(ts) => ts.iter().filter_map(|t| t.as_u64()).collect::<Vec<u64>>(),
            None => f["trial"].as_u64().into_iter().collect(),
        })
        .map(|t| t as usize)
        .collect();
    pages.sort_unstable();
    pages.dedup();
    [
        (Condition::CpuContention, trials_of("cpu_contention")),
        (Condition::OtherDeviceIo, trials_of("other_device_io")),
        (Condition::PageCache, pages),
    ]
    .into_iter()
    .filter(|(_, t)| !t.is_empty())
    .map(|(condition, trials)| TrialCondition { condition, trials })
    .collect()
}

/// The noise policy (docs/STATISTICS.md) on real repeated runs: the findings
/// of a 5-trial run are exactly what the rules say about the per-trial IOPS
/// the run recorded, and they obey the policy's invariants: no pattern under
/// 10 % of the median, outliers give way to modes, `high_variance` exactly
/// when the 95 % CI is wider than ±5 %.
#[test]
fn noise_policy_holds_on_real_repeated_runs() {
    use dioscope_core::diag::consistency::{high_variance, trial_findings};
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for rw in ["randread", "randwrite"] {
        let rw_arg = format!("--rw={rw}");
        let o = run_in(
            d.path(),
            &[
                "--name=n",
                "--filename=f.dat",
                "--size=16m",
                &rw_arg,
                "--bs=4k",
                "--direct=1",
                "--ioengine=psync",
                "--runtime=1",
                "--time_based",
                "--trials=5",
                "--output-format=json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let j = json(&o);
        assert_findings_well_formed(&j);
        let job = &j["dioscope"]["jobs"][0];
        let iops: Vec<f64> = job["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["iops"].as_f64().unwrap())
            .collect();
        assert_eq!(iops.len(), 5);
        let metric = "n IOPS";
        let conditions = measured_conditions(&j);
        let mut expected: Vec<String> = trial_findings(metric, &iops, &conditions)
            .into_iter()
            .chain(high_variance(metric, &iops, &conditions))
            .map(|f| f.code().to_string())
            .collect();
        expected.sort();
        let about_trials = [
            "outlier_trials",
            "bimodal_trials",
            "drift_across_trials",
            "high_variance",
        ];
        let mut got: Vec<String> = findings(&j)
            .iter()
            .filter_map(|f| f["kind"].as_str())
            .filter(|k| about_trials.contains(k))
            .map(str::to_string)
            .collect();
        got.sort();
        println!("{rw}: IOPS per trial {iops:?}, measured {conditions:?} → {got:?}");
        assert_eq!(got, expected, "{rw}: {iops:?}");
        // The invariants, on the run's own numbers.
        let s = &job["summary"]["iops"];
        let (mean, hi) = (s["mean"].as_f64().unwrap(), s["ci95"][1].as_f64().unwrap());
        let wide = (hi - mean) / mean > 0.05;
        assert_eq!(wide, got.iter().any(|k| k == "high_variance"), "{s}");
        let mut sorted = iops.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[2];
        for f in of_kind(&j, "outlier_trials") {
            for o in f["outliers"].as_array().unwrap() {
                let v = o["value"].as_f64().unwrap();
                assert!((v - median).abs() >= 0.1 * median, "{f}");
            }
        }
        for f in of_kind(&j, "bimodal_trials") {
            let gap = f["high_mean"].as_f64().unwrap() - f["low_mean"].as_f64().unwrap();
            assert!(gap >= 0.1 * median, "{f}");
            assert!(of_kind(&j, "outlier_trials").is_empty());
        }
    }
}
