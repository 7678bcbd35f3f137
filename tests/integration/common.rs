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
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run dioscope")
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
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
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
