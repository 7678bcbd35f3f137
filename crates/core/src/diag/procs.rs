//! Other processes, from /proc: who holds a block device (or a file on its
//! file system) open and how much block I/O they did (`/proc/PID/io`), and
//! how much CPU time they used (`/proc/PID/stat`) — for the findings about
//! sharing the device or the CPUs with someone else. Read by the trial hooks
//! on the runner's thread, never in a worker.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// Major and minor of a `dev_t` (glibc's encoding, as `major(3)`).
fn dev_major_minor(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// Every process id in /proc except our own.
fn other_pids() -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| p != me)
        .collect()
}

/// Whether `pid` has an open descriptor on one of `devs` (major, minor):
/// the block device itself (`st_rdev`) or a file on a file system on it
/// (`st_dev`).
fn holds(pid: i32, devs: &[(u32, u32)]) -> bool {
    let Ok(rd) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    for e in rd.flatten() {
        // Sockets, pipes and anonymous inodes link to "type:[inode]"; only
        // paths can be on a device, and stat-ing the others is wasted work.
        match fs::read_link(e.path()) {
            Ok(l) if l.is_absolute() => {}
            _ => continue,
        }
        let Ok(m) = fs::metadata(e.path()) else {
            continue;
        };
        let hit = if m.file_type().is_block_device() {
            devs.contains(&dev_major_minor(m.rdev()))
        } else {
            devs.contains(&dev_major_minor(m.dev()))
        };
        if hit {
            return true;
        }
    }
    false
}

/// Processes (not us) holding one of `devs` or a file on it open.
pub fn holders(devs: &[(u32, u32)]) -> Vec<i32> {
    if devs.is_empty() {
        return Vec::new();
    }
    other_pids()
        .into_iter()
        .filter(|&p| holds(p, devs))
        .collect()
}

/// `read_bytes` and `write_bytes` of a `/proc/PID/io` text: bytes this
/// process caused to be read from or sent to any block device.
fn parse_io(text: &str) -> Option<(u64, u64)> {
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
    };
    Some((field("read_bytes:")?, field("write_bytes:")?))
}

pub fn read_io(pid: i32) -> Option<(u64, u64)> {
    parse_io(&fs::read_to_string(format!("/proc/{pid}/io")).ok()?)
}

pub fn comm(pid: i32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// `(comm, utime + stime in clock ticks)` from a `/proc/PID/stat` text (the
/// whole thread group's). The comm is between the first `(` and the last
/// `)`, and may itself hold spaces and parentheses.
fn parse_stat_ticks(text: &str) -> Option<(String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // After the comm: state is field 3; utime and stime are fields 14, 15.
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

fn stat_ticks(pid: &str) -> Option<(String, u64)> {
    parse_stat_ticks(&fs::read_to_string(Path::new("/proc").join(pid).join("stat")).ok()?)
}

/// CPU ticks of every other process now: `(pid, comm, ticks)`.
pub fn all_ticks() -> Vec<(i32, String, u64)> {
    other_pids()
        .into_iter()
        .filter_map(|p| {
            let (c, t) = stat_ticks(&p.to_string())?;
            Some((p, c, t))
        })
        .collect()
}

/// A `Cpus_allowed_list` such as `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.trim().parse::<usize>().ok()),
        }
    }
    out
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    allowed_cpus_in("/proc/self/status")
}

/// The CPUs process `pid` may run on (empty when it is gone).
pub fn allowed_cpus_of(pid: i32) -> Vec<usize> {
    allowed_cpus_in(&format!("/proc/{pid}/status"))
}

fn allowed_cpus_in(status: &str) -> Vec<usize> {
    fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:").map(parse_cpu_list))
        })
        .unwrap_or_default()
}

/// `(cpu, busy, total)` clock ticks of every `cpuN` line of a `/proc/stat`
/// text. Busy is everything but idle and iowait.
fn parse_per_cpu(text: &str) -> Vec<(usize, u64, u64)> {
    let mut out = Vec::new();
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let Some(n) = f
            .next()
            .and_then(|c| c.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let v: Vec<u64> = f.take(8).filter_map(|x| x.parse().ok()).collect();
        let all: u64 = v.iter().sum();
        let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
        out.push((n, all - idle.min(all), all));
    }
    out
}

/// Busy and total ticks of every CPU now: `(cpu, busy, total)`.
pub fn per_cpu_ticks() -> Vec<(usize, u64, u64)> {
    fs::read_to_string("/proc/stat")
        .map(|s| parse_per_cpu(&s))
        .unwrap_or_default()
}

/// This process's threads now: `(tid, utime + stime in clock ticks, the
/// CPUs it may run on)`. A thread's affinity may be narrower than the
/// process's (a worker pinned with cpus_allowed).
pub fn own_threads() -> Vec<(i32, u64, Vec<usize>)> {
    let Ok(rd) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    rd.filter_map(|e| {
        let e = e.ok()?;
        let tid: i32 = e.file_name().to_str()?.parse().ok()?;
        let (_, ticks) = parse_stat_ticks(&fs::read_to_string(e.path().join("stat")).ok()?)?;
        let allowed = allowed_cpus_in(&e.path().join("status").to_string_lossy());
        Some((tid, ticks, allowed))
    })
    .collect()
}

/// This process's utime + stime in clock ticks.
pub fn own_ticks() -> u64 {
    stat_ticks("self").map(|(_, t)| t).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers() {
        assert_eq!(dev_major_minor(0x0701), (7, 1));
        assert_eq!(dev_major_minor((259 << 8) | 3), (259, 3));
        // Large minors spill into the high bits.
        assert_eq!(dev_major_minor((7 << 8) | (0x12 << 20) | 0x34), (7, 0x1234));
        let io = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\n\
                  cancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), Some((4096, 8192)));
        assert_eq!(parse_io("rchar: 1\n"), None);
        let stat = "4242 (my (odd) name) R 1 4242 4242 0 -1 4194304 100 0 0 0 1234 56 0 0 20 0 \
                    1 0 100 1000 10 18446744073709551615";
        assert_eq!(parse_stat_ticks(stat), Some(("my (odd) name".into(), 1290)));
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("1"), vec![1]);
        let ps = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                  cpu0 5 0 5 50 10 0 0 0 0 0\n\
                  cpu1 100 0 0 0 0 0 0 0 0 0\n";
        assert_eq!(parse_per_cpu(ps), vec![(0, 10, 70), (1, 100, 100)]);
    }

    #[test]
    fn sees_a_holder_of_a_file_on_our_file_system() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = dir.path().join("held");
        fs::write(&p, b"x").unwrap();
        let dev = dev_major_minor(fs::metadata(&p).unwrap().dev());
        let f = fs::File::open(&p).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(f)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let found = holders(&[dev]).contains(&pid);
        let _ = child.kill();
        let _ = child.wait();
        assert!(found, "pid {pid} holds a file on {dev:?}");
        assert!(!holders(&[(u32::MAX, 0)]).contains(&pid));
        assert!(own_ticks() > 0 || all_ticks().iter().all(|t| t.0 != pid));
        // Our threads, this one among them, each with its CPUs.
        let threads = own_threads();
        assert!(!threads.is_empty());
        assert!(threads.iter().all(|t| !t.2.is_empty()), "{threads:?}");
    }
}
