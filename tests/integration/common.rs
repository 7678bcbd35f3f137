//! Shared helpers: running the binary, loop devices that always go away,
//! and tools that must exist in CI.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dioscope")
}

/// Run dioscope with `args` in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(bin());
    c.args(args).current_dir(dir);
    output_within(c, std::time::Duration::from_secs(120))
}

#[path = "../support/child.rs"]
mod child;

/// Run a command to completion, but kill it and fail the test if it takes
/// longer than `limit`: a hang must fail CI, not stall it.
pub fn output_within(c: Command, limit: std::time::Duration) -> Output {
    let what = format!("{c:?}");
    child::run_within(c, limit, false)
        .unwrap_or_else(|| panic!("{what} did not finish within {limit:?} (killed): a hang"))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

pub fn is_root() -> bool {
    // SAFETY-free: geteuid via the environment-independent /proc view.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Whether a test that needs `what` can run. In CI (CI set, as root) a
/// missing prerequisite is a failure, not a skip.
pub fn can_run(what: &str, ok: bool) -> bool {
    if ok {
        return true;
    }
    if in_ci() {
        panic!("CI must provide {what}; .ci/run installs it");
    }
    eprintln!("SKIPPED: needs {what}");
    false
}

pub fn have_tool(name: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// An empty zram device of its own (hot_add), reset and removed on drop,
/// even when the test panics. (profile.rs has one filled with random data.)
pub struct Zram {
    id: String,
}

impl Zram {
    pub fn new(size: u64) -> Option<Zram> {
        let id = std::fs::read_to_string("/sys/class/zram-control/hot_add").ok()?;
        let z = Zram {
            id: id.trim().to_string(),
        };
        std::fs::write(
            format!("/sys/block/zram{}/disksize", z.id),
            size.to_string(),
        )
        .ok()?;
        Some(z)
    }
    pub fn dev(&self) -> String {
        format!("/dev/zram{}", self.id)
    }
}

impl Drop for Zram {
    /// Reset and remove the device. Right after a run udev may still hold
    /// it open (its probe of the written device), and then both fail with
    /// EBUSY: one try left a 256 MiB zram behind at every run of
    /// tests/stages. So it tries for up to 5 s, and says so if it could not.
    fn drop(&mut self) {
        let reset = format!("/sys/block/zram{}/reset", self.id);
        for _ in 0..50 {
            if std::fs::write(&reset, "1").is_ok()
                && std::fs::write("/sys/class/zram-control/hot_remove", &self.id).is_ok()
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!(
            "WARNING: /dev/zram{} could not be reset and removed",
            self.id
        );
    }
}

/// A loop device over a sparse image file; detached (and the image removed)
/// on drop, even when the test panics.
pub struct LoopDev {
    pub dev: PathBuf,
    pub image: PathBuf,
}

impl LoopDev {
    pub fn new(dir: &Path, size: u64, extra: &[&str]) -> LoopDev {
        let image = dir.join(format!("loop-{}.img", std::process::id()));
        let f = std::fs::File::create(&image).unwrap();
        f.set_len(size).unwrap();
        drop(f);
        let mut args = vec!["-f", "--show"];
        args.extend_from_slice(extra);
        let img = image.to_str().unwrap().to_string();
        args.push(&img);
        let o = Command::new("losetup")
            .args(&args)
            .output()
            .expect("losetup");
        assert!(
            o.status.success(),
            "losetup failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dev = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        LoopDev { dev, image }
    }

    /// Fill the device with random data (so reads measure something).
    pub fn fill_random(&self) {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "head -c $(blockdev --getsize64 {d}) /dev/urandom > {d}",
                d = self.dev.display()
            ))
            .output()
            .unwrap();
        assert!(o.status.success());
    }

    pub fn path(&self) -> &str {
        self.dev.to_str().unwrap()
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        // Detach only while the device is still ours: a test that detached
        // it may have freed the number for another test's device.
        let name = self.dev.file_name().unwrap_or_default().to_string_lossy();
        let backing = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
            .unwrap_or_default();
        let image = std::fs::canonicalize(&self.image).unwrap_or(self.image.clone());
        if backing.starts_with(&*image.to_string_lossy()) {
            let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        }
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Every entry of a directory (to prove nothing was left behind).
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Wait for `cond` to hold, polling; panic with `what` after `secs`.
pub fn wait_for(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The I/O counters (rchar, wchar) of the worker thread of job `job`
/// (clone 0) of process `pid`, once that thread exists. A worker thread does
/// nothing but the job's I/O, so these prove the run is under way.
pub fn worker_io(pid: u32, job: &str) -> Option<(u64, u64)> {
    let comm = format!("{job}.0");
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let p = t.path();
        if std::fs::read_to_string(p.join("comm")).ok()?.trim() != comm {
            continue;
        }
        let io = std::fs::read_to_string(p.join("io")).ok()?;
        let field = |k: &str| {
            io.lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        return Some((field("rchar:"), field("wchar:")));
    }
    None
}

/// Bytes the whole process `pid` has written through syscalls so far.
pub fn process_wchar(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("wchar:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Send signal `sig` to `pid` with kill(1) (no unsafe in tests).
pub fn kill(pid: u32, sig: i32) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

/// Run a command that must succeed (test setup and teardown).
pub fn sh(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd).args(args).output().expect(cmd);
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A small filesystem on a loop device, mounted on a temporary directory;
/// unmounted and detached on drop, even when the test panics.
pub struct MountedFs {
    pub mnt: tempfile::TempDir,
    pub lo: LoopDev,
    _images: tempfile::TempDir,
}

impl MountedFs {
    /// `mkfs` is "ext4", "xfs" or "btrfs".
    pub fn new(size: u64, mkfs: &str) -> MountedFs {
        let images = tempfile::tempdir().unwrap();
        let lo = LoopDev::new(images.path(), size, &[]);
        let force = if mkfs == "ext4" { "-F" } else { "-f" };
        sh(&format!("mkfs.{mkfs}"), &["-q", force, lo.path()]);
        let mnt = tempfile::tempdir().unwrap();
        sh("mount", &[lo.path(), mnt.path().to_str().unwrap()]);
        MountedFs {
            mnt,
            lo,
            _images: images,
        }
    }

    pub fn path(&self) -> &Path {
        self.mnt.path()
    }
}

impl Drop for MountedFs {
    fn drop(&mut self) {
        umount_retrying(self.mnt.path());
    }
}

/// Unmount a test's file system. io_uring drops its file references a
/// moment after the run ends, so a first umount can fail with EBUSY: retry
/// for up to 5 s, then detach lazily so the mount (and the loop device
/// under it, autocleared) never outlives the test.
pub fn umount_retrying(m: &Path) {
    for _ in 0..50 {
        let ok = Command::new("umount")
            .arg(m)
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = Command::new("umount").arg("-l").arg(m).status();
}

/// Run `script` as root in a private mount namespace whose /dev is a fresh
/// tmpfs holding only null, zero and stdout: what a test does to /dev there
/// cannot touch the machine's.
pub fn in_private_dev(dir: &Path, script: &str) -> std::process::Output {
    let mut c = std::process::Command::new("unshare");
    c.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs dioscope-dev /dev && mknod -m 666 /dev/null c 1 3 && \
             mknod -m 666 /dev/zero c 1 5 && ln -s /proc/self/fd/1 /dev/stdout && \
             ln -s /proc/self/fd /dev/fd && {script}"
        ))
        .current_dir(dir)
        .env("DIOSCOPE", bin());
    output_within(c, std::time::Duration::from_secs(60))
}

/// A `compare` that must find a regression: exit 1, or exit 4 when the
/// sides' environments differed (other tests or a hog loading one side) —
/// then its JSON `v` must name what differed. `what` is printed on failure.
pub fn regression_or_confounded(o: &std::process::Output, v: &serde_json::Value, what: &str) {
    match o.status.code() {
        Some(1) => {}
        Some(4) => assert!(
            v["environment"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["differs"] == true),
            "exit 4 names no environment that differed: {what}"
        ),
        c => panic!("a regression should exit 1 (or 4): exit {c:?}\n{what}"),
    }
}

/// The JSON and the text of one run's `--output-format=normal,json`,
/// written in fio's order: the JSON object first (it ends at the first
/// `}` alone on a line), then the normal text.
pub fn json_then_text(out: &str) -> (serde_json::Value, &str) {
    let end = out.find("\n}\n").expect("a JSON object first") + 3;
    let v = serde_json::from_str(&out[..end])
        .unwrap_or_else(|e| panic!("the JSON does not parse: {e}: {out}"));
    (v, &out[end..])
}
