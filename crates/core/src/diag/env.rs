//! The environment a result was measured in: kernel, CPU, memory, and for the
//! target its file system, device and queue limits. Recorded with every result
//! (so two results can be compared knowing what differed) and summarised in
//! one line for the text output.
//!
//! Everything is read from /proc and /sys; a missing file leaves its field
//! `None` rather than failing, because containers and VMs hide many of them.

use std::path::{Path, PathBuf};

use super::device::{read_trimmed, resolve, BlockDev, DevRole};
// The types are plain data in the result layer; reading them is here.
use super::findings::human_bytes;
use super::mounts::{mount_for, read_mountinfo};
pub use crate::results::environment::{
    ClockInfo, Cpu, DeviceInfo, Environment, FsInfo, Kernel, Numa, QueueLimits, TargetEnv,
    TargetKind,
};

impl Kernel {
    pub fn read() -> Kernel {
        Kernel {
            release: read_trimmed(Path::new("/proc/sys/kernel/osrelease")),
            version: read_trimmed(Path::new("/proc/sys/kernel/version")),
            arch: std::env::consts::ARCH.to_string(),
        }
    }

    /// `(major, minor)` of the release, e.g. (6, 18).
    pub fn version_tuple(&self) -> Option<(u32, u32)> {
        parse_release(self.release.as_deref()?)
    }
}

fn parse_release(r: &str) -> Option<(u32, u32)> {
    let mut it = r.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

impl Cpu {
    pub fn read() -> Cpu {
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| cpu_model(&s));
        Cpu {
            model,
            count: dioscope_sys::proc::ncpus(),
            governors: read_governors(Path::new("/sys/devices/system/cpu")),
        }
    }
}

/// The CPU model from /proc/cpuinfo (x86 `model name`, arm64 has none, some
/// others `cpu model`/`Processor`).
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let k = k.trim();
        let v = v.trim();
        (matches!(k, "model name" | "cpu model" | "Processor" | "cpu") && !v.is_empty())
            .then(|| v.split_whitespace().collect::<Vec<_>>().join(" "))
    })
}

/// Governors under a `/sys/devices/system/cpu`-shaped directory.
pub(crate) fn read_governors(cpu_dir: &Path) -> Vec<(String, usize)> {
    let Ok(rd) = std::fs::read_dir(cpu_dir) else {
        return Vec::new();
    };
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut names: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("cpu"))
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    names.sort();
    for p in names {
        if let Some(g) = read_trimmed(&p.join("cpufreq/scaling_governor")) {
            match counts.iter_mut().find(|(n, _)| *n == g) {
                Some(c) => c.1 += 1,
                None => counts.push((g, 1)),
            }
        }
    }
    counts.sort();
    counts
}

pub fn mem_total_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo_total(&s)
}

fn parse_meminfo_total(s: &str) -> Option<u64> {
    let l = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl QueueLimits {
    pub fn read(queue_dir: &Path) -> QueueLimits {
        let num = |f: &str| read_trimmed(&queue_dir.join(f)).and_then(|s| s.parse::<u32>().ok());
        let flag = |f: &str| num(f).map(|v| v != 0);
        QueueLimits {
            logical_block_size: num("logical_block_size"),
            physical_block_size: num("physical_block_size"),
            max_sectors_kb: num("max_sectors_kb"),
            max_hw_sectors_kb: num("max_hw_sectors_kb"),
            nr_requests: num("nr_requests"),
            scheduler: read_trimmed(&queue_dir.join("scheduler")).map(|s| active_scheduler(&s)),
            rotational: flag("rotational"),
            io_poll: flag("io_poll"),
            write_cache: read_trimmed(&queue_dir.join("write_cache")),
            nomerges: num("nomerges"),
            rq_affinity: num("rq_affinity"),
        }
    }
}

/// `mq-deadline kyber [none]` → `none`; a single name stands for itself.
fn active_scheduler(s: &str) -> String {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(s.trim())
        .to_string()
}

impl DeviceInfo {
    pub fn of(dev: &BlockDev) -> DeviceInfo {
        let q = dev.queue_dir();
        DeviceInfo {
            name: dev.name.clone(),
            model: read_trimmed(&q.join("device/model")),
            size_bytes: read_trimmed(&dev.sysfs.join("size"))
                .and_then(|s| s.parse::<u64>().ok())
                .map(|s| s * 512),
            queue: QueueLimits::read(&q.join("queue")),
            firmware: read_trimmed(&q.join("device/firmware_rev"))
                .or_else(|| read_trimmed(&q.join("device/rev"))),
            numa_node: read_trimmed(&q.join("device/numa_node"))
                .or_else(|| read_trimmed(&q.join("device/device/numa_node")))
                .and_then(|s| s.parse().ok()),
        }
    }
}

impl TargetEnv {
    pub fn read(path: &Path) -> TargetEnv {
        let st = dioscope_sys::fs::statx_path(path).ok();
        let kind = match &st {
            None => TargetKind::Missing,
            Some(s) if s.is_block_device() => TargetKind::BlockDevice,
            Some(s) if s.is_regular() => TargetKind::File,
            Some(_) => TargetKind::Other,
        };
        let devices = resolve(path);
        let fs = (kind == TargetKind::File).then(|| fs_info(path)).flatten();
        // The first whole disk in the chain carries the queue that serves us.
        let first = devices.first();
        let queue_dev = first.map(|d| {
            if d.is_partition {
                devices
                    .iter()
                    .find(|p| p.role == DevRole::ParentDisk)
                    .unwrap_or(d)
            } else {
                d
            }
        });
        TargetEnv {
            path: path.to_path_buf(),
            kind,
            fs,
            device: queue_dev.map(DeviceInfo::of),
            devices,
            dio_align: st.and_then(|s| s.dio_align),
        }
    }
}

fn fs_info(path: &Path) -> Option<FsInfo> {
    let m = mount_for(&read_mountinfo(), path)?;
    let block_size = std::fs::File::open(path)
        .ok()
        .and_then(|f| dioscope_sys::fsinfo::fstatfs(std::os::fd::AsRawFd::as_raw_fd(&f)).ok())
        .map(|s| s.block_size);
    Some(FsInfo {
        fs_type: m.fs_type,
        block_size,
        mount_point: m.mount_point,
        source: m.source,
        mount_options: m.mount_options,
        super_options: m.super_options,
    })
}

impl Numa {
    pub fn read() -> Numa {
        let nodes = std::fs::read_dir("/sys/devices/system/node")
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| {
                        let n = e.file_name();
                        let n = n.to_string_lossy();
                        n.strip_prefix("node")
                            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .count()
            })
            .unwrap_or(0);
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.trim().to_string())
        };
        Numa {
            nodes,
            cpus_allowed: field("Cpus_allowed_list:"),
            mems_allowed: field("Mems_allowed_list:"),
        }
    }
}

impl ClockInfo {
    pub fn measure() -> ClockInfo {
        use dioscope_sys::clock::now_ns;
        // 10k reads give the mean cost to well under a nanosecond; 100k
        // were 1-2 ms of user time in every run's user CPU per I/O.
        const N: u64 = 10_000;
        let t0 = now_ns();
        let mut x = 0u64;
        for _ in 0..N {
            x = x.wrapping_add(now_ns());
        }
        std::hint::black_box(x);
        let cost = (now_ns() - t0) as f64 / N as f64;
        ClockInfo {
            source: match dioscope_sys::clock::source() {
                dioscope_sys::clock::Source::Tsc => {
                    "TSC, calibrated against CLOCK_MONOTONIC".into()
                }
                dioscope_sys::clock::Source::Monotonic => "CLOCK_MONOTONIC via the vDSO".into(),
            },
            kernel_clocksource: read_trimmed(Path::new(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )),
            resolution_ns: dioscope_sys::clock::resolution_ns(),
            cost_ns: cost,
            reads_per_batch: 2,
        }
    }
}

impl Environment {
    pub fn read(targets: &[&Path]) -> Environment {
        Environment {
            kernel: Kernel::read(),
            clock: ClockInfo::measure(),
            cpu: Cpu::read(),
            mem_total_bytes: mem_total_bytes(),
            targets: targets.iter().map(|p| TargetEnv::read(p)).collect(),
            numa: Numa::read(),
        }
    }

    /// One line for the text summary, e.g.
    /// `Linux 6.18.4 x86_64 · 2 × AMD EPYC 7B13 · schedutil · 23.5 GiB · /mnt/f: ext4 (4 KiB, rw,relatime) on vda [none, lbs 512, max 1280 KiB, poll off, ssd] · dio align 512/512`.
    pub fn one_line(&self) -> String {
        let mut parts = vec![format!(
            "Linux {} {}",
            self.kernel.release.as_deref().unwrap_or("?"),
            self.kernel.arch
        )];
        parts.push(format!(
            "{} × {}",
            self.cpu.count,
            self.cpu.model.as_deref().unwrap_or("unknown CPU")
        ));
        if !self.cpu.governors.is_empty() {
            let g: Vec<&str> = self.cpu.governors.iter().map(|(g, _)| g.as_str()).collect();
            parts.push(format!("governor {}", g.join("/")));
        }
        if let Some(m) = self.mem_total_bytes {
            parts.push(human_bytes(m));
        }
        for t in &self.targets {
            parts.push(t.one_line());
        }
        parts.join(" · ")
    }
}

impl TargetEnv {
    pub fn one_line(&self) -> String {
        let mut s = format!("{}:", self.path.display());
        if let Some(fs) = &self.fs {
            s.push_str(&format!(" {}", fs.fs_type));
            let mut inner = Vec::new();
            if let Some(b) = fs.block_size {
                inner.push(human_bytes(b));
            }
            if !fs.mount_options.is_empty() {
                inner.push(fs.mount_options.clone());
            }
            if !inner.is_empty() {
                s.push_str(&format!(" ({})", inner.join(", ")));
            }
        }
        match &self.device {
            Some(d) => {
                if self.fs.is_some() {
                    s.push_str(" on");
                }
                s.push_str(&format!(" {}", d.name));
                if let Some(m) = &d.model {
                    s.push_str(&format!(" \"{m}\""));
                }
                let q = &d.queue;
                let mut inner = Vec::new();
                if let Some(x) = &q.scheduler {
                    inner.push(x.clone());
                }
                if let Some(x) = q.logical_block_size {
                    inner.push(format!("lbs {x}"));
                }
                if let Some(x) = q.max_sectors_kb {
                    inner.push(format!("max {x} KiB"));
                }
                if let Some(x) = q.io_poll {
                    inner.push(if x { "poll on" } else { "poll off" }.into());
                }
                if let Some(x) = q.rotational {
                    inner.push(if x { "rotational" } else { "non-rotational" }.into());
                }
                if !inner.is_empty() {
                    s.push_str(&format!(" [{}]", inner.join(", ")));
                }
            }
            None if self.fs.is_some() => s.push_str(", no block device"),
            None => s.push_str(" no block device"),
        }
        match self.dio_align {
            Some((0, 0)) => s.push_str(" · no direct I/O"),
            Some((m, o)) => s.push_str(&format!(" · dio align {m}/{o}")),
            None => {}
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_parsers() {
        assert_eq!(active_scheduler("mq-deadline kyber [none]"), "none");
        assert_eq!(active_scheduler("none"), "none");
        assert_eq!(parse_release("6.18.44-fc-v657"), Some((6, 18)));
        assert_eq!(parse_release("garbage"), None);
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC   7B13\n"),
            Some("AMD EPYC 7B13".into())
        );
        assert_eq!(parse_meminfo_total("MemTotal:  1024 kB\n"), Some(1 << 20));
    }

    #[test]
    fn governors_from_a_fake_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, gov) in [
            ("cpu0", "powersave"),
            ("cpu1", "performance"),
            ("cpu2", "powersave"),
        ] {
            let d = dir.path().join(cpu).join("cpufreq");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("scaling_governor"), format!("{gov}\n")).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("cpufreq")).unwrap(); // not a CPU
        let g = read_governors(dir.path());
        assert_eq!(
            g,
            vec![("performance".to_string(), 1), ("powersave".to_string(), 2)]
        );
        assert!(read_governors(Path::new("/nonexistent")).is_empty());
    }

    #[test]
    fn environment_of_this_machine() {
        let exe = std::env::current_exe().unwrap();
        let e = Environment::read(&[exe.as_path(), Path::new("/nonexistent")]);
        assert!(e.kernel.release.is_some());
        assert!(e.cpu.count >= 1);
        assert_eq!(e.targets[0].kind, TargetKind::File);
        assert!(e.targets[0].fs.is_some());
        assert_eq!(e.targets[1].kind, TargetKind::Missing);
        let line = e.one_line();
        assert!(line.starts_with("Linux "), "{line}");
        assert!(line.contains(&exe.display().to_string()));
        serde_json::to_string(&e).unwrap();
    }
}
