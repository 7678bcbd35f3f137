//! `--stages` (docs/STAGES.md) on devices of its own: a zram device
//! (bio-based) and a loop device (request-based), each made and removed by
//! the test. The stages must account for dioscope's own latency, the traced
//! total must agree with dioscope's, and the traced I/Os must be exactly the
//! run's, also while another process reads the same device. As root with
//! bpftrace (scripts/install-deps.sh); skipped with a reason when not root,
//! and in CI a missing bpftrace fails.

#[path = "../integration/common.rs"]
mod common;

use common::{is_root, run_in, stderr, LoopDev, Zram};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::Mutex;

/// One traced run at a time: the timings compare with each other.
static SERIAL: Mutex<()> = Mutex::new(());

/// Root, bpftrace and tracefs, or a printed reason to skip (a failure in CI
/// when bpftrace is missing).
fn can_trace() -> bool {
    if !is_root() {
        eprintln!("SKIPPED: --stages traces kernel tracepoints, which needs root");
        return false;
    }
    if !common::have_tool("bpftrace") {
        assert!(
            !common::in_ci(),
            "CI must have bpftrace: scripts/install-deps.sh installs it"
        );
        eprintln!("SKIPPED: bpftrace is not installed (apt-get install bpftrace)");
        return false;
    }
    if !Path::new("/sys/kernel/tracing/events").is_dir() {
        // bpftrace reads the tracepoints' formats from tracefs.
        let ok = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mounting tracefs at /sys/kernel/tracing failed");
    }
    true
}

/// One trial without ramp, every I/O of the size in the measured window,
/// with `--stages` and JSON output: what every run of these tests asks.
const ONE_TRACED_TRIAL: [&str; 6] = [
    "--trials=1",
    "--ramp_time=0",
    "--time_based=0",
    "--runtime=0",
    "--stages",
    "--output-format=json",
];

/// A traced run: `rw` of `bs` blocks at `depth`, `size` bytes, one trial
/// without ramp (so every I/O is in the measured window). Each completion
/// is reaped as it comes (`iodepth_batch_complete_min=1`): by default
/// dioscope waits for half the queue, and an early completion's wait in
/// the CQ is then part of its clat but not of submit_req → complete (it is
/// the delivery stage), which would make the p50 check compare two
/// different spans.
fn run(dev: &str, rw: &str, size: &str, bs: &str, depth: u32) -> (Value, String) {
    run_with(dev, rw, size, bs, depth, &[])
}

/// [`run`] with more options.
fn run_with(
    dev: &str,
    rw: &str,
    size: &str,
    bs: &str,
    depth: u32,
    extra: &[&str],
) -> (Value, String) {
    let f = format!("--filename={dev}");
    let bs = format!("--bs={bs}");
    let depth = format!("--iodepth={depth}");
    let rw = format!("--rw={rw}");
    let size = format!("--size={size}");
    let mut args = vec![
        "run",
        &f,
        &rw,
        &bs,
        &depth,
        &size,
        "--iodepth_batch_complete_min=1",
    ];
    args.extend_from_slice(&ONE_TRACED_TRIAL);
    args.extend_from_slice(extra);
    let o = run_in(&std::env::temp_dir(), &args);
    assert!(o.status.success(), "run failed: {}", stderr(&o));
    (common::json(&o), stderr(&o))
}

/// dioscope's I/Os, mean total latency and median completion latency of
/// one direction, from the jobs of the JSON.
fn dioscope_dir(v: &Value, dir: &str) -> (u64, f64, f64) {
    let d = &v["jobs"][0][dir];
    (
        d["total_ios"].as_u64().unwrap(),
        d["lat_ns"]["mean"].as_f64().unwrap(),
        d["clat_ns"]["percentile"]["50.000000"].as_f64().unwrap(),
    )
}

/// The sum of a direction's stage contributions (they add up to
/// dioscope's mean latency).
fn stages_sum(d: &Value) -> f64 {
    d["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["contribution_ns"].as_f64())
        .sum()
}

/// The checks every traced direction passes; returns the direction.
fn check_direction(v: &Value, dir: &str) -> Value {
    let s = &v["dioscope"]["stages"];
    assert_eq!(s["status"], "measured", "{s:#}");
    let d = s["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["direction"] == dir)
        .unwrap_or_else(|| panic!("no {dir} in {s:#}"))
        .clone();
    let (ios, mean, clat_p50) = dioscope_dir(v, dir);
    assert!(ios > 1000, "{ios} I/Os");
    // Exactly the run's I/Os: every one tagged, nothing else.
    assert_eq!(d["tagged_ios"].as_u64(), Some(ios), "{d:#}");
    // One in `sample_every` followed through the stages: all of them at
    // 1, otherwise a binomial count around ios ÷ N.
    let every = s["sample_every"].as_u64().unwrap();
    let followed = d["traced_total"]["ios"].as_u64().unwrap();
    assert!(
        near_share(followed, ios, every),
        "{followed} of {ios} I/Os followed, one in {every} expected: {d:#}"
    );
    measured_delivery(s, &d);
    // The stages add up to dioscope's mean latency (read from its jobs).
    let sum = stages_sum(&d);
    assert!(
        (sum / mean - 1.0).abs() < 0.05,
        "stages add up to {sum} ns, dioscope's mean is {mean} ns: {d:#}"
    );
    // The traced total of each I/O (submit_req → CQE) against dioscope's
    // own completion latency, at the median.
    let p50 = d["traced_total"]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0].as_f64() == Some(50.0))
        .and_then(|p| p[1].as_f64())
        .expect("a p50");
    assert!(
        (p50 / clat_p50 - 1.0).abs() < 0.10,
        "traced p50 {p50} ns vs dioscope's clat p50 {clat_p50} ns: {d:#}"
    );
    let p99 = pct_of(&d["traced_total"], 99.0);
    let clat_p99 = v["jobs"][0][dir]["clat_ns"]["percentile"]["99.000000"]
        .as_f64()
        .unwrap();
    assert!(
        (p99 / clat_p99 - 1.0).abs() < 0.10,
        "traced p99 {p99} ns vs dioscope's clat p99 {clat_p99} ns: {d:#}"
    );
    d
}

/// On the raw backend (io_uring), completion delivery is measured per I/O
/// by the workers themselves: every I/O dioscope counted, exactly, with
/// percentiles; the time before submit_req is what is left of the mean.
/// On bpftrace it stays a mean difference.
fn measured_delivery(s: &Value, d: &Value) {
    let del = stage(d, "completion delivery");
    if s["backend"] != "raw_tracepoint" {
        assert!(
            del["how"].as_str().unwrap().starts_with("mean difference"),
            "{d:#}"
        );
        return;
    }
    assert!(
        del["how"].as_str().unwrap().starts_with("measured per I/O"),
        "{d:#}"
    );
    assert_eq!(del["ios"], d["dioscope_ios"], "{d:#}");
    let (mean, p50) = (del["mean_ns"].as_f64().unwrap(), pct_of(del, 50.0));
    assert!(mean > 0.0 && p50 > 0.0 && p50 <= pct_of(del, 99.0), "{d:#}");
    assert_eq!(del["contribution_ns"], del["mean_ns"], "{d:#}");
    let before = stage(d, "before submit_req");
    assert!(
        before["how"]
            .as_str()
            .unwrap()
            .starts_with("mean difference"),
        "{d:#}"
    );
}

/// A stage's percentile `q` (ns).
fn pct_of(st: &Value, q: f64) -> f64 {
    st["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0].as_f64() == Some(q))
        .and_then(|p| p[1].as_f64())
        .unwrap_or_else(|| panic!("no p{q}: {st:#}"))
}

/// Whether `k` of `n` is what following one in `every` by a fair draw
/// gives: exactly `n` at 1, else within 5 standard deviations of n ÷ every
/// (a false alarm about 1 in 3 million).
fn near_share(k: u64, n: u64, every: u64) -> bool {
    if every == 1 {
        return k == n;
    }
    let p = 1.0 / every as f64;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    (k as f64 - n as f64 * p).abs() <= 5.0 * sd + 1.0
}

fn stage<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage {name}: {d:#}"))
}

#[test]
fn zram_is_bio_based_and_its_stages_add_up() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let Some(z) = Zram::new(256 << 20) else {
        if common::in_ci() {
            panic!("CI must be able to hot-add zram");
        }
        eprintln!("SKIPPED: no zram-control");
        return;
    };
    // 128 KiB writes (each compresses 32 pages: well over 100 µs), two at
    // a time, every I/O followed: the time outside the tracepoints
    // (system call entry and exit, the reap, a batch's other I/Os) stays
    // small against the per-I/O total, whose p50 and p99 are compared.
    let (v, _) = run_with(
        &z.dev(),
        "randwrite",
        "160m",
        "128k",
        2,
        &["--stages_sample=1"],
    );
    let d = check_direction(&v, "write");
    assert_eq!(stage(&d, "block layer")["how"], "not applicable", "{d:#}");
    // Every write is punted. On the raw backend each one is joined to the
    // bio the io-wq worker queues (by sector: its offset on the whole
    // device), so submission, the hand-off, the device and posting are
    // each measured for every I/O and no join leaves anything over; on
    // bpftrace the device stage follows each bio by its own draw (here all
    // of them).
    let tagged = d["tagged_ios"].as_u64().unwrap();
    let dev = stage(&d, "device")["ios"].as_u64().unwrap();
    assert_eq!(dev, tagged, "{d:#}");
    if v["dioscope"]["stages"]["backend"] == "raw_tracepoint" {
        for st in ["submission", "io-wq hand-off", "completion posting"] {
            let n = stage(&d, st)["ios"].as_u64().unwrap();
            assert!(
                n as f64 >= 0.99 * tagged as f64 && n <= tagged,
                "{st}: {n}: {d:#}"
            );
        }
        let (_, mean, _) = dioscope_dir(&v, "write");
        let rest = share(&d, "not joined per I/O");
        assert!(rest.abs() < 0.05 * mean, "{rest} ns not joined: {d:#}");
        assert!(share(&d, "io-wq hand-off") > 0.0, "{d:#}");
    }
    assert_eq!(d["other_device_ios"], 0, "{d:#}");
    // zram is bio-based and does not declare nowait support
    // (BLK_FEAT_NOWAIT), so io_uring cannot issue a write inline with
    // IOCB_NOWAIT: it punts every one to io-wq, and the finding says so.
    let punted = d["punted_io_wq"].as_u64().unwrap();
    assert_eq!(Some(punted), d["tagged_ios"].as_u64(), "{d:#}");
    let f = finding(&v, "io_wq_punts").unwrap_or_else(|| panic!("no io_wq_punts: {v:#}"));
    assert_eq!(f["punted"].as_u64(), Some(punted), "{f:#}");
    // On the raw backend its cost is the hand-off measured per I/O.
    if v["dioscope"]["stages"]["backend"] == "raw_tracepoint" {
        assert_eq!(
            f["handoff_ns"],
            stage(&d, "io-wq hand-off")["contribution_ns"],
            "{f:#}"
        );
    }
    assert_eq!(f["direction"], "write", "{f:#}");
}

/// zram beside a planted buffered reader of the same device: every I/O of
/// the run is counted as ours and exactly those (the reader's bios, queued
/// by `dd`, are other I/O), and on the raw backend each I/O's delivery is
/// still measured and the followed ones' hand-offs joined.
#[test]
fn zram_counts_only_the_runs_io_beside_a_reader() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let Some(z) = Zram::new(64 << 20) else {
        if common::in_ci() {
            panic!("CI must be able to hot-add zram");
        }
        eprintln!("SKIPPED: no zram-control");
        return;
    };
    let (v, _) = {
        let _r = Reader::start(&z.dev());
        run(&z.dev(), "randread", "32m", "4k", 16)
    };
    let s = &v["dioscope"]["stages"];
    let d = direction(&v);
    let (ios, _, _) = dioscope_dir(&v, "read");
    assert_eq!(ios, 8192, "{s:#}");
    assert_eq!(d["tagged_ios"].as_u64(), Some(ios), "{s:#}");
    assert_eq!(d["punted_io_wq"].as_u64(), Some(ios), "{s:#}");
    assert_eq!(d["device_bytes"].as_u64(), Some(ios * 4096), "{s:#}");
    assert!(
        d["other_device_ios"].as_u64().unwrap() > 100,
        "the reader's bios are other I/O: {s:#}"
    );
    measured_delivery(s, &d);
    if s["backend"] == "raw_tracepoint" {
        let followed = d["traced_total"]["ios"].as_u64().unwrap();
        let joined = stage(&d, "io-wq hand-off")["ios"].as_u64().unwrap();
        assert!(
            joined as f64 >= 0.95 * followed as f64 && joined <= followed,
            "{joined} of {followed} hand-offs joined: {s:#}"
        );
    }
}

/// The run's finding of that kind, if any.
fn finding(v: &Value, kind: &str) -> Option<Value> {
    v["dioscope"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind)
        .cloned()
}

/// A stage's contribution to the direction's mean latency, ns.
fn share(d: &Value, name: &str) -> f64 {
    stage(d, name)["contribution_ns"].as_f64().unwrap_or(0.0)
}

/// The one traced direction of a run.
fn direction(v: &Value) -> Value {
    let s = &v["dioscope"]["stages"];
    assert_eq!(s["status"], "measured", "{s:#}");
    s["directions"][0].clone()
}

/// Every I/O followed and issued inline: each per-I/O stage joined almost
/// every I/O (no more than there were), and what no join explains is under
/// 5 % of dioscope's mean.
fn joined_per_io(v: &Value, d: &Value) {
    let (_, mean, _) = dioscope_dir(v, "read");
    let rest = share(d, "not joined per I/O");
    assert!(rest.abs() < 0.05 * mean, "{rest} ns not joined: {d:#}");
    let tagged = d["tagged_ios"].as_u64().unwrap();
    for s in ["submission", "block layer", "device", "completion posting"] {
        let n = stage(d, s)["ios"].as_u64().unwrap();
        assert!(
            n as f64 > 0.95 * tagged as f64 && n <= tagged,
            "{s}: {n} I/Os: {d:#}"
        );
    }
}

#[test]
fn a_loop_device_splits_into_request_stages_that_explain_the_total() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 256 << 20, &[]);
    // 128 KiB reads one at a time: the device's time dominates, so the
    // time outside the tracepoints (syscall entry and exit, the reap,
    // waiting for a CPU on a loaded machine: 2 µs at QD 1, 20 µs and more
    // at QD 16 with 4 KiB on a busy 2-CPU machine) stays under the p50
    // check's 10 %. docs/STAGES.md shows the QD 16 breakdown.
    // Every I/O followed: the stages are exact per I/O.
    let (v, _) = run_with(
        l.path(),
        "randread",
        "256m",
        "128k",
        1,
        &["--stages_sample=1"],
    );
    let d = check_direction(&v, "read");
    joined_per_io(&v, &d);
    // A loop device takes nowait I/O: nothing punted, no finding.
    assert!(finding(&v, "io_wq_punts").is_none(), "{v:#}");
}

#[test]
fn psync_is_traced_by_its_system_calls() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 256 << 20, &[]);
    // pread64 enter → exit is each I/O's traced total, keyed by thread;
    // 128 KiB at QD 1, every I/O followed, as on the loop device above.
    let (v, _) = run_with(
        l.path(),
        "randread",
        "256m",
        "128k",
        1,
        &["--ioengine=psync", "--stages_sample=1"],
    );
    assert_eq!(v["dioscope"]["stages"]["backend"], "bpftrace");
    let d = check_direction(&v, "read");
    assert!(
        d["traced_total"]["span"]
            .as_str()
            .unwrap()
            .contains("pread64"),
        "{d:#}"
    );
    joined_per_io(&v, &d);
    // An engine whose calls dioscope's own threads also make is not traced,
    // and the run says which engines are.
    let (v, _) = run_with(l.path(), "randread", "4m", "4k", 1, &["--ioengine=sync"]);
    let s = &v["dioscope"]["stages"];
    assert_eq!(s["status"], "unavailable", "{s:#}");
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("not for ioengine=sync"),
        "{s:#}"
    );
}

#[test]
fn libaio_is_traced_from_io_submit_to_the_device() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 64 << 20, &[]);
    let (v, _) = run_with(
        l.path(),
        "randread",
        "64m",
        "4k",
        16,
        &["--ioengine=libaio"],
    );
    let s = &v["dioscope"]["stages"];
    // The raw program follows io_uring requests only: libaio is bpftrace's.
    assert_eq!(s["backend"], "bpftrace", "{s:#}");
    let d = direction(&v);
    let (ios, mean, _) = dioscope_dir(&v, "read");
    // Every bio of the run counted (4 KiB: one bio an I/O), one in 8 followed.
    assert_eq!(d["tagged_ios"].as_u64(), Some(ios), "{s:#}");
    let followed = d["traced_total"]["ios"].as_u64().unwrap();
    assert!(near_share(followed, ios, 8), "{followed} of {ios}: {s:#}");
    // No tracepoint ends an aio I/O: no traced total, and what follows the
    // device is one mean difference; the stages still add up.
    assert!(d["traced_total"]["mean_ns"].is_null(), "{s:#}");
    for st in ["submission", "block layer", "device"] {
        let n = stage(&d, st)["ios"].as_u64().unwrap();
        assert!(
            n as f64 > 0.95 * followed as f64 && n <= followed,
            "{st}: {n}: {s:#}"
        );
    }
    let after = share(&d, "completion and delivery");
    assert!(after > 0.0, "{s:#}");
    let sum = stages_sum(&d);
    assert!((sum / mean - 1.0).abs() < 0.05, "{sum} vs {mean}: {s:#}");
}

/// A buffered reader of the whole device, again and again, until dropped.
struct Reader {
    child: Child,
    flag: std::path::PathBuf,
}

impl Reader {
    /// `what` is a block device (its buffers flushed after each pass) or a
    /// file (its page cache dropped after each pass: `dd iflag=nocache`).
    fn start(what: &str) -> Reader {
        let flag = std::env::temp_dir().join(format!("stages-reader-{}", std::process::id()));
        std::fs::write(&flag, "").unwrap();
        let drop_cache = if what.starts_with("/dev/") {
            format!("blockdev --flushbufs {what}")
        } else {
            format!("dd if={what} iflag=nocache count=0 2>/dev/null")
        };
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "while [ -e {f} ]; do dd if={what} of=/dev/null bs=4k 2>/dev/null; \
                 {drop_cache}; done",
                f = flag.display()
            ))
            .spawn()
            .unwrap();
        Reader { child, flag }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.flag);
        let _ = self.child.wait();
    }
}

/// ext4 on a loop device that reads and writes its image directly
/// (`--direct-io=on`): the file's reads go to the disk under /tmp, not to
/// the image's page cache, so an I/O takes the time a disk takes and the
/// time outside the tracepoints (a few µs) is small against it. Unmounted
/// and detached on drop, even when the test panics.
struct Ext4OnDisk {
    mnt: tempfile::TempDir,
    _lo: LoopDev,
    _images: tempfile::TempDir,
}

impl Ext4OnDisk {
    fn new(size: u64) -> Ext4OnDisk {
        let images = tempfile::tempdir().unwrap();
        let lo = LoopDev::new(images.path(), size, &["--direct-io=on"]);
        common::sh("mkfs.ext4", &["-q", "-F", lo.path()]);
        let mnt = tempfile::tempdir().unwrap();
        common::sh("mount", &[lo.path(), mnt.path().to_str().unwrap()]);
        Ext4OnDisk {
            mnt,
            _lo: lo,
            _images: images,
        }
    }

    fn path(&self) -> &Path {
        self.mnt.path()
    }
}

impl Drop for Ext4OnDisk {
    fn drop(&mut self) {
        common::umount_retrying(self.mnt.path());
    }
}

#[test]
fn an_ext4_file_is_traced_on_its_device_and_a_readers_io_is_other() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let fs = Ext4OnDisk::new(512 << 20);
    let data = fs.path().join("data");
    let other = fs.path().join("other");
    std::fs::write(&other, vec![7u8; 16 << 20]).unwrap();
    let data = data.to_str().unwrap();
    // 128 KiB one at a time from the disk, so the time outside the
    // tracepoints stays small against the per-I/O total.
    let (v, _) = run_with(data, "randread", "160m", "128k", 1, &["--stages_sample=1"]);
    let d = check_direction(&v, "read");
    let s = &v["dioscope"]["stages"];
    assert!(
        s["devices"][0].as_str().unwrap().contains("request-based"),
        "{s:#}"
    );
    // ext4 takes nowait direct reads: they are issued inline and joined.
    let sub = stage(&d, "submission")["ios"].as_u64().unwrap();
    assert!(
        sub as f64 > 0.9 * d["traced_total"]["ios"].as_f64().unwrap(),
        "{s:#}"
    );
    // Again beside a buffered reader of another file on the same file
    // system (its CPU makes delivery slower, so only the counts are
    // checked): its bios are other I/O, the run's are exactly the run's.
    let (v, _) = {
        let _r = Reader::start(other.to_str().unwrap());
        run(data, "randread", "64m", "4k", 16)
    };
    let s = &v["dioscope"]["stages"];
    let d = direction(&v);
    let (ios, _, _) = dioscope_dir(&v, "read");
    assert_eq!(d["tagged_ios"].as_u64(), Some(ios), "{s:#}");
    assert!(
        d["other_device_ios"].as_u64().unwrap() > 100,
        "the reader's bios are other I/O: {s:#}"
    );
    // One request in 8 followed: a bio that is not followed must not find
    // an entry a followed one left at its sector (front merges, bios that
    // never became a request), or its age becomes a block-layer time no
    // traced total contains and "not joined" goes negative.
    let (_, mean, _) = dioscope_dir(&v, "read");
    let rest = share(&d, "not joined per I/O");
    assert!(rest > -0.05 * mean, "{rest} ns not joined: {s:#}");
    let total = d["traced_total"]["mean_ns"].as_f64().unwrap();
    for st in ["block layer", "device", "completion posting"] {
        let m = stage(&d, st)["mean_ns"].as_f64().unwrap();
        assert!(
            m < total,
            "{st}: mean {m} ns, traced total {total} ns: {s:#}"
        );
    }
}

#[test]
fn another_readers_io_on_the_device_is_other_not_ours() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 64 << 20, &[]);
    let (v, _) = {
        let _r = Reader::start(l.path());
        run(l.path(), "randread", "64m", "4k", 16)
    };
    let s = &v["dioscope"]["stages"];
    let d = &s["directions"][0];
    let (ios, _, _) = dioscope_dir(&v, "read");
    assert_eq!(d["tagged_ios"].as_u64(), Some(ios), "{s:#}");
    assert!(
        d["other_device_ios"].as_u64().unwrap() > 100,
        "the reader's bios are other I/O: {s:#}"
    );
    // Bytes too: the run's bios carry exactly the jobs' bytes (4 KiB
    // reads, one bio each), the reader's are other processes'.
    assert_eq!(d["device_bytes"].as_u64(), Some(ios * 4096), "{s:#}");
    assert_eq!(d["job_bytes"].as_u64(), Some(ios * 4096), "{s:#}");
    assert!(
        d["other_device_bytes"].as_u64().unwrap() > 100 * 4096,
        "{s:#}"
    );
    // By default one request in 8 is followed, by a fair draw; so are its
    // bios (each joined to its request, none of the reader's).
    assert_eq!(s["sample_every"], 8, "{s:#}");
    let followed = d["traced_total"]["ios"].as_u64().unwrap();
    assert!(near_share(followed, ios, 8), "{followed} of {ios}: {s:#}");
    let dev = stage(d, "device")["ios"].as_u64().unwrap();
    assert!(
        near_share(dev, ios, 8) && dev <= followed + 8,
        "{dev}: {s:#}"
    );
}

#[test]
fn without_bpftrace_the_run_goes_on_and_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    let mut c = Command::new(common::bin());
    // The bpftrace backend asked for: the raw one needs no bpftrace and
    // would measure (`the_raw_backend_is_the_default_and_counts_as_bpftrace_does`).
    c.env("PATH", dir.path())
        .env("DIOSCOPE_STAGES_BACKEND", "bpftrace")
        .current_dir(dir.path())
        .args([
            "run",
            &format!("--filename={}", f.display()),
            "--size=4m",
            "--bs=4k",
        ]);
    c.args(ONE_TRACED_TRIAL);
    let o = common::output_within(c, std::time::Duration::from_secs(120));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("bpftrace is not installed") && e.contains("apt-get install bpftrace"),
        "{e}"
    );
    assert_eq!(e.matches("--stages").count(), 1, "one message: {e}");
    let v = common::json(&o);
    assert_eq!(v["dioscope"]["stages"]["status"], "unavailable");
    assert!(v["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0);
}

/// A traced run of `dev` (4 KiB random reads at QD 16, 64 MiB) with the
/// environment `env` and `PATH` set to `path`.
fn run_env(dev: &str, env: &[(&str, &str)], path: &std::ffi::OsStr) -> Value {
    run_env_with(dev, env, path, &[])
}

/// [`run_env`] with the environment's PATH and more options.
fn run_env_args(dev: &str, extra: &[&str]) -> Value {
    let path = std::env::var_os("PATH").unwrap_or_default();
    run_env_with(dev, &[], &path, extra)
}

fn run_env_with(dev: &str, env: &[(&str, &str)], path: &std::ffi::OsStr, extra: &[&str]) -> Value {
    let mut c = Command::new(common::bin());
    c.env("PATH", path)
        .envs(env.iter().copied())
        .current_dir(std::env::temp_dir())
        .args([
            "run",
            &format!("--filename={dev}"),
            "--rw=randread",
            "--bs=4k",
            "--iodepth=16",
            "--size=64m",
        ])
        .args(ONE_TRACED_TRIAL)
        .args(extra);
    let o = common::output_within(c, std::time::Duration::from_secs(120));
    assert!(o.status.success(), "run failed: {}", stderr(&o));
    common::json(&o)
}

/// The raw-tracepoint backend (stages/bpf/stages.bpf.c) is the default
/// where it loads, needs no bpftrace (PATH without it), and on the same run
/// shape counts what the bpftrace backend counts: every request of the run
/// exactly, no other I/O, no punt, one in 8 followed through the stages,
/// whose shares add up to dioscope's mean.
#[test]
fn the_raw_backend_is_the_default_and_counts_as_bpftrace_does() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 64 << 20, &[]);
    let empty = tempfile::tempdir().unwrap();
    let raw = run_env(l.path(), &[], empty.path().as_os_str());
    let backend = raw["dioscope"]["stages"]["backend"].clone();
    if backend != "raw_tracepoint" {
        assert!(
            !common::in_ci(),
            "CI builds with clang and libbpf-dev: {:#}",
            raw["dioscope"]["stages"]
        );
        eprintln!("SKIPPED: the raw-tracepoint backend did not load here");
        return;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let bpf = run_env(l.path(), &[("DIOSCOPE_STAGES_BACKEND", "bpftrace")], &path);
    assert_eq!(bpf["dioscope"]["stages"]["backend"], "bpftrace");
    for v in [&raw, &bpf] {
        let s = &v["dioscope"]["stages"];
        let d = direction(v);
        let (ios, mean, _) = dioscope_dir(v, "read");
        assert_eq!(ios, 16384, "{s:#}");
        assert_eq!(d["tagged_ios"].as_u64(), Some(ios), "{s:#}");
        assert_eq!(d["other_device_ios"], 0, "{s:#}");
        assert_eq!(d["punted_io_wq"], 0, "{s:#}");
        assert_eq!(d["device_bytes"].as_u64(), Some(ios * 4096), "{s:#}");
        assert_eq!(d["other_device_bytes"], 0, "{s:#}");
        let followed = d["traced_total"]["ios"].as_u64().unwrap();
        assert!(near_share(followed, ios, 8), "{followed} of {ios}: {s:#}");
        for st in ["submission", "block layer", "device", "completion posting"] {
            let n = stage(&d, st)["ios"].as_u64().unwrap();
            assert!(
                n as f64 >= 0.95 * followed as f64 && n <= followed + 8,
                "{st}: {n} of {followed}: {s:#}"
            );
        }
        let sum = stages_sum(&d);
        assert!((sum / mean - 1.0).abs() < 0.05, "{sum} vs {mean}: {s:#}");
        measured_delivery(s, &d);
    }
    // The raw backend's bytes per trial: this run's reads, exactly, and
    // their amplification entry beside the device counters' (1.00×).
    let s = &raw["dioscope"]["stages"];
    assert_eq!(
        s["trial_bytes"],
        serde_json::json!([{"group": 0, "trial": 1, "read_bytes": 16384 * 4096,
            "write_bytes": 0, "other_read_bytes": 0, "other_write_bytes": 0}]),
        "{s:#}"
    );
    let amp = &raw["dioscope"]["amplification"];
    for entries in [&amp["trials"][0]["devices"], &amp["run"]] {
        let tagged: Vec<&Value> = entries
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["source"] == "tagged_bios")
            .collect();
        assert_eq!(tagged.len(), 1, "{amp:#}");
        assert_eq!(tagged[0]["read"]["ratio"], 1.0, "{amp:#}");
        assert_eq!(tagged[0]["read"]["device_bytes"], 16384 * 4096, "{amp:#}");
    }
    // Two workers at once, each its own part of the posted times (the tag
    // in its user_data): still every I/O's delivery, and each only once.
    let two = run_env_args(l.path(), &["--numjobs=2"]);
    let d = direction(&two);
    assert_eq!(d["dioscope_ios"], 2 * 16384, "{d:#}");
    measured_delivery(&two["dioscope"]["stages"], &d);
}

/// A busy loop pinned to one CPU at nice -10 (so it wins that CPU against
/// dioscope's thread about 9 to 1, whatever else the machine runs), killed
/// by its pid when dropped (`nice` and `taskset` exec, so the pid is the
/// loop's).
struct Hog(Child);

impl Hog {
    fn on_cpu(cpu: u32) -> Hog {
        let c = Command::new("nice")
            .args(["-n", "-10", "taskset", "-c", &cpu.to_string()])
            .args(["sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset");
        Hog(c)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A planted CPU hog on the job's CPU (`cpus_allowed=0`, the hog pinned to
/// CPU 0 with `taskset`): the device finishes as before, but the loop
/// worker's completion has to post the CQE as task work in dioscope's
/// thread and dioscope has to reap it, both waiting for the CPU the hog
/// holds. Completion posting + delivery grows against the same run without
/// the hog, and `cpu_contention`, which judges the CPU the workers are
/// pinned to (not both CPUs of the process: the other one stays idle and
/// would hide the hog), fires and carries the cost from the stages.
#[test]
fn a_cpu_hog_on_the_jobs_cpu_moves_latency_into_completion() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() || !common::have_tool("taskset") {
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 64 << 20, &[]);
    let go = || run_with(l.path(), "randread", "64m", "4k", 16, &["--cpus_allowed=0"]).0;
    let quiet = go();
    let hogged = {
        let _h = Hog::on_cpu(0);
        go()
    };
    let completion = |d: &Value| share(d, "completion posting") + share(d, "completion delivery");
    let (q, h) = (direction(&quiet), direction(&hogged));
    eprintln!(
        "hog: posting + delivery {:.1} µs with, {:.1} µs without; means {:.1} / {:.1} µs",
        completion(&h) / 1e3,
        completion(&q) / 1e3,
        h["dioscope_lat_mean_ns"].as_f64().unwrap() / 1e3,
        q["dioscope_lat_mean_ns"].as_f64().unwrap() / 1e3
    );
    assert!(
        completion(&h) >= 2.0 * completion(&q),
        "posting + delivery {} ns with the hog vs {} ns without: {h:#} {q:#}",
        completion(&h),
        completion(&q)
    );
    let f = finding(&hogged, "cpu_contention").unwrap_or_else(|| panic!("{hogged:#}"));
    eprintln!(
        "hog: cpu_contention on CPUs {} (pinned {}): {:.0} % busy, others {:.0} %, ours {:.0} %",
        f["cpu_list"],
        f["pinned"],
        pct(&f["busy_pct"]),
        pct(&f["others_pct"]),
        pct(&f["ours_pct"])
    );
    let cost = &f["delivery"];
    let (ns, mean) = (
        cost["cost_ns"].as_f64().unwrap(),
        cost["mean_ns"].as_f64().unwrap(),
    );
    // The finding's figure is the stages' own, and it is a large part.
    assert!((ns / completion(&h) - 1.0).abs() < 0.01, "{f:#} {h:#}");
    assert!(ns >= 0.3 * mean, "{f:#}");
    let msg = f["message"].as_str().unwrap();
    assert!(msg.contains("completion posting and delivery"), "{f:#}");
    // It judged CPU 0, the job's, and the hog there.
    assert_eq!(f["cpu_list"], serde_json::json!([0]), "{f:#}");
    assert_eq!(f["pinned"], true, "{f:#}");
    assert!(
        msg.contains("CPU 0, the one its workers are pinned to"),
        "{f:#}"
    );
    assert!(f["busy_pct"].as_f64().unwrap() >= 90.0, "{f:#}");
}

/// A percentage of a finding (NaN when absent).
fn pct(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The scheduler and request count of a block device, put back on drop.
struct QueueSettings {
    dir: std::path::PathBuf,
    scheduler: String,
    nr_requests: String,
}

impl QueueSettings {
    fn save(dev: &str) -> QueueSettings {
        let name = dev.trim_start_matches("/dev/");
        let dir = Path::new("/sys/block").join(name).join("queue");
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let sched = read("scheduler");
        // "[none] mq-deadline kyber": the bracketed one is in use.
        let scheduler = sched.split(['[', ']']).nth(1).unwrap_or("none").to_string();
        QueueSettings {
            scheduler,
            nr_requests: read("nr_requests").trim().to_string(),
            dir,
        }
    }

    fn set(&self, scheduler: &str, nr_requests: &str) {
        std::fs::write(self.dir.join("scheduler"), scheduler).unwrap();
        std::fs::write(self.dir.join("nr_requests"), nr_requests).unwrap();
    }
}

impl Drop for QueueSettings {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("scheduler"), &self.scheduler);
        let _ = std::fs::write(self.dir.join("nr_requests"), &self.nr_requests);
    }
}

/// A planted block-layer delay: mq-deadline with `nr_requests` 4 on a loop
/// device under 4 jobs at iodepth 32, so most bios wait for a request (a
/// tag) between `block_bio_queue` and `block_rq_issue`. A bio that finds
/// no tag with nowait fails back to io_uring, which punts it to io-wq to
/// wait there; but a ring's io-wq runs at most 4 workers per CPU (8 here),
/// so with one job most punted I/Os waited in io-wq's queue ("not joined
/// per I/O") and only a few in the block layer, whose planted wait (25–104
/// µs) was no larger than the baseline's (25–60 µs: a batch of 32 SQEs
/// plugged until submitted, on a loaded CPU) and the test was flaky. Four
/// jobs have four rings, 32 workers, 28 of them waiting for one of the 4
/// tags. The block layer stage grows against the same run with `none` and
/// the default request count.
#[test]
fn few_requests_under_mq_deadline_move_latency_into_the_block_layer() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 64 << 20, &[]);
    let saved = QueueSettings::save(l.path());
    let jobs = ["--numjobs=4", "--group_reporting"];
    let go = || direction(&run_with(l.path(), "randread", "64m", "4k", 32, &jobs).0);
    saved.set("none", &saved.nr_requests);
    let plain = go();
    saved.set("mq-deadline", "4");
    let starved = go();
    drop(saved);
    let (p, s) = (share(&plain, "block layer"), share(&starved, "block layer"));
    eprintln!(
        "mq-deadline/4: block layer {:.1} µs vs {:.1} µs (none/default); punted {} vs {}; \
         not joined {:.1} vs {:.1} µs; means {:.1} / {:.1} µs",
        s / 1e3,
        p / 1e3,
        starved["punted_io_wq"],
        plain["punted_io_wq"],
        share(&starved, "not joined per I/O") / 1e3,
        share(&plain, "not joined per I/O") / 1e3,
        starved["dioscope_lat_mean_ns"].as_f64().unwrap() / 1e3,
        plain["dioscope_lat_mean_ns"].as_f64().unwrap() / 1e3
    );
    assert!(
        s >= 2.0 * p,
        "block layer {s} ns with 4 requests vs {p} ns: {starved:#} {plain:#}"
    );
}

/// cgroup v1's blk-throttle rule on a device's reads, removed on drop.
struct Throttle {
    file: &'static str,
    dev: String,
}

const READ_IOPS: &str = "/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device";

impl Drop for Throttle {
    fn drop(&mut self) {
        let _ = std::fs::write(self.file, format!("{} 0", self.dev));
    }
}

/// blk-throttle (`io.max`'s cgroup v1 twin `blkio.throttle.read_iops_device`:
/// this machine mounts cgroup v2 with no `io` controller, the blkio one is
/// on v1) limiting the loop device to 2000 reads a second at iodepth 16.
/// Measured (docs/STAGES.md): the wait is in no per-I/O stage (bio queued →
/// issued → completed keep their unthrottled size) and lands in "not joined
/// per I/O", the traced total (submit_req → CQE) minus the joined stages:
/// 96–98 % of the mean in five runs.
///
/// Every I/O is followed (`--stages_sample=1`): the throttle releases I/Os
/// in bursts, so a one-in-8 sample of 2,048 I/Os (about 250, in a few dozen
/// bursts) estimates the traced total's mean far less well than its count
/// suggests. CI on c911328 saw 5.6 ms for the sample against dioscope's
/// 7.8 ms over all I/Os, and "not joined" at 70 % of the mean.
#[test]
fn blk_throttle_delay_lands_outside_the_per_io_stages() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_trace() {
        return;
    }
    if !Path::new(READ_IOPS).exists() {
        assert!(!common::in_ci(), "CI needs cgroup v1's blkio controller");
        eprintln!("SKIPPED: no {READ_IOPS} (cgroup v1 blkio is not mounted)");
        return;
    }
    let l = LoopDev::new(&std::env::temp_dir(), 64 << 20, &[]);
    let name = l.path().trim_start_matches("/dev/").to_string();
    let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap();
    let go = || {
        let all = ["--stages_sample=1"];
        direction(&run_with(l.path(), "randread", "8m", "4k", 16, &all).0)
    };
    let free = go();
    let held = {
        let t = Throttle {
            file: READ_IOPS,
            dev: dev.trim().to_string(),
        };
        std::fs::write(t.file, format!("{} 2000", t.dev)).unwrap();
        go()
    };
    let mean = held["dioscope_lat_mean_ns"].as_f64().unwrap();
    let free_mean = free["dioscope_lat_mean_ns"].as_f64().unwrap();
    // 16 in flight at 2000 a second: about 8 ms each, against well under 1 ms.
    assert!(
        mean >= 5.0 * free_mean,
        "{mean} vs {free_mean} ns: {held:#}"
    );
    let rest = share(&held, "not joined per I/O");
    eprintln!(
        "throttle: mean {:.1} µs (free {:.1}); not joined {:.1} µs; block layer {:.1}, \
         device {:.1} µs; other I/Os {}, submission joined {} of {}",
        mean / 1e3,
        free_mean / 1e3,
        rest / 1e3,
        share(&held, "block layer") / 1e3,
        share(&held, "device") / 1e3,
        held["other_device_ios"],
        stage(&held, "submission")["ios"],
        held["tagged_ios"]
    );
    assert!(
        rest >= 0.8 * mean,
        "{rest} of {mean} ns not joined: {held:#}"
    );
    let per_io = share(&held, "block layer") + share(&held, "device");
    assert!(
        per_io < 0.1 * mean,
        "{per_io} of {mean} ns per I/O: {held:#}"
    );
}
