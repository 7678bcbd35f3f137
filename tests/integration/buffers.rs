//! Buffer contents, priorities, placement, memory kinds and job hooks: each
//! is checked where it lands (the written file, the kernel's view of the
//! worker thread, the files a hook writes).

use crate::common::*;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};

fn write(dir: &Path, extra: &[&str]) -> Vec<u8> {
    let mut args = vec![
        "--name=b",
        "--filename=b.dat",
        "--size=1m",
        "--rw=write",
        "--bs=4k",
        "--direct=1",
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    let o = run_in(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    std::fs::read(dir.join("b.dat")).unwrap()
}

fn blocks(data: &[u8]) -> Vec<&[u8]> {
    data.chunks(4096).collect()
}

#[test]
fn pattern_zeros_random_and_scramble_land_in_the_file() {
    let d = tempfile::tempdir().unwrap();
    // A pattern with the block's offset, unscrambled: every block exact.
    let data = write(
        d.path(),
        &[
            "--buffer_pattern=0xdeadbeef\"ab\"%o",
            "--scramble_buffers=0",
        ],
    );
    for (i, b) in blocks(&data).iter().enumerate() {
        let mut unit = vec![0xde, 0xad, 0xbe, 0xef, b'a', b'b'];
        unit.extend_from_slice(&((i * 4096) as u64).to_le_bytes());
        for (k, x) in b.iter().enumerate() {
            assert_eq!(*x, unit[k % unit.len()], "block {i} byte {k}");
        }
    }
    // buffer_pattern turns scrambling off (fio), so it is exact by default too.
    let data = write(d.path(), &["--buffer_pattern=0x5a"]);
    assert!(data.iter().all(|&x| x == 0x5a));
    // zero_buffers: zeros, also when the job reads into the same buffers
    // (each write is zeroed again, or it would write what a read left).
    let data = write(d.path(), &["--zero_buffers"]);
    assert!(data.iter().all(|&x| x == 0));
    let before = write(d.path(), &["--scramble_buffers=0", "--refill_buffers"]);
    let o = run_in(
        d.path(),
        &[
            "--name=b",
            "--filename=b.dat",
            "--size=1m",
            "--rw=randrw",
            "--bs=4k",
            "--direct=1",
            "--zero_buffers",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = std::fs::read(d.path().join("b.dat")).unwrap();
    let mut zeroed = 0;
    for (i, (a, b)) in blocks(&after).iter().zip(blocks(&before)).enumerate() {
        if a.iter().all(|&x| x == 0) {
            zeroed += 1;
        } else {
            assert_eq!(a, &b, "block {i} is neither its old data nor zeros");
        }
    }
    assert!(zeroed > 10, "{zeroed} blocks written");
    // Default: random data, scrambled per write; one slot (iodepth 1)
    // still gives 256 distinct blocks.
    let scrambled = write(d.path(), &[]);
    let distinct: HashSet<&[u8]> = blocks(&scrambled).into_iter().collect();
    assert_eq!(
        distinct.len(),
        256,
        "scramble_buffers (fio's default) makes every write unique"
    );
    // Without scrambling, the one buffer is written 256 times; scrambling
    // changed the first 16 bytes of each 512 of it, nothing else.
    let data = write(d.path(), &["--scramble_buffers=0"]);
    let distinct: HashSet<&[u8]> = blocks(&data).into_iter().collect();
    assert_eq!(distinct.len(), 1);
    for (a, b) in blocks(&scrambled).iter().zip(blocks(&data)) {
        let changed: Vec<usize> = (0..4096).filter(|&i| a[i] != b[i]).collect();
        assert!(changed.len() >= 8, "{changed:?}");
        assert!(changed.iter().all(|i| i % 512 < 16), "{changed:?}");
    }
    // refill_buffers: new random data every write.
    let data = write(d.path(), &["--scramble_buffers=0", "--refill_buffers"]);
    let distinct: HashSet<&[u8]> = blocks(&data).into_iter().collect();
    assert_eq!(distinct.len(), 256);
}

fn compressed_size(path: &Path) -> usize {
    let o = Command::new("gzip")
        .args(["-c", "-6"])
        .stdin(std::fs::File::open(path).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success());
    o.stdout.len()
}

#[test]
fn compress_percentage_is_what_a_compressor_finds() {
    if !can_run("gzip", have_tool("gzip")) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for (pct, chunk) in [("25", "512"), ("50", "4k"), ("80", "512")] {
        let data = write(
            d.path(),
            &[
                "--size=4m",
                &format!("--buffer_compress_percentage={pct}"),
                &format!("--buffer_compress_chunk={chunk}"),
            ],
        );
        let ratio = compressed_size(&d.path().join("b.dat")) as f64 / data.len() as f64;
        let want = 1.0 - pct.parse::<f64>().unwrap() / 100.0;
        assert!(
            (ratio - want).abs() < 0.04,
            "buffer_compress_percentage={pct} chunk {chunk}: gzip keeps {ratio:.3}, expected about {want:.2}"
        );
    }
    // Fresh random data (refill_buffers) does not compress at all.
    write(d.path(), &["--size=4m", "--refill_buffers"]);
    let ratio = compressed_size(&d.path().join("b.dat")) as f64 / (4 << 20) as f64;
    assert!(ratio > 0.99, "{ratio}");
}

#[test]
fn dedupe_percentage_repeats_that_share_of_blocks() {
    let d = tempfile::tempdir().unwrap();
    let data = write(d.path(), &["--size=8m", "--dedupe_percentage=40"]);
    let n = data.len() / 4096;
    let distinct: HashSet<&[u8]> = blocks(&data).into_iter().collect();
    let unique = distinct.len() as f64 / n as f64;
    assert!(
        (0.55..0.65).contains(&unique),
        "dedupe_percentage=40: {:.1} % of {n} blocks unique",
        unique * 100.0
    );
}

/// The thread named `comm` of process `pid`, once it exists.
fn thread_of(pid: u32, comm: &str) -> u32 {
    let mut tid = 0;
    wait_for(&format!("thread {comm}"), 20, || {
        tid = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .find(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == comm)
            })
            .and_then(|t| t.file_name().to_str()?.parse().ok())
            .unwrap_or(0);
        tid != 0
    });
    tid
}

fn stat_field(pid: u32, tid: u32, n: usize) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap();
    // Fields after "(comm)" start at field 3.
    s.rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(n - 3)
        .unwrap()
        .to_string()
}

#[test]
fn priority_nice_and_cpus_reach_the_worker_threads() {
    let d = tempfile::tempdir().unwrap();
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mut child = Command::new(bin())
        .args([
            "--name=p",
            "--filename=p.dat",
            "--size=1m",
            "--rw=randread",
            "--time_based",
            "--runtime=20s",
            "--numjobs=2",
            "--prioclass=2",
            "--prio=6",
            "--nice=7",
            &format!("--cpus_allowed=0-{}", ncpu - 1),
            "--cpus_allowed_policy=split",
            "--output-format=json",
        ])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let checks = std::panic::catch_unwind(|| {
        let mut cpus = Vec::new();
        for c in 0..2 {
            let tid = thread_of(pid, &format!("p.{c}"));
            let cpus_of = || {
                std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
                    .unwrap_or_default()
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .map(|l| l.trim().to_string())
                    .unwrap_or_default()
            };
            // The thread applies its settings before its first I/O: wait
            // until it has started writing to read them.
            wait_for("the worker to start", 20, || {
                worker_io(pid, "p").is_some_and(|(r, _)| r > 0)
                    && dioscope_sys::sched::thread_ioprio(tid as i32).unwrap_or(0) != 0
            });
            // What ionice -p shows: the kernel's ioprio of that thread.
            let v = dioscope_sys::sched::thread_ioprio(tid as i32).unwrap();
            assert_eq!(
                v,
                dioscope_sys::sched::ioprio_value(2, 6),
                "ioprio of p.{c}"
            );
            assert_eq!(stat_field(pid, tid, 19), "7", "nice of p.{c}");
            cpus.push(cpus_of());
        }
        // split: one CPU each, round robin over the set.
        assert_eq!(cpus[0], "0");
        assert_eq!(cpus[1], if ncpu > 1 { "1" } else { "0" });
        // The runner's own thread keeps the default priority.
        assert_ne!(
            dioscope_sys::sched::thread_ioprio(pid as i32).unwrap(),
            dioscope_sys::sched::ioprio_value(2, 6)
        );
    });
    kill(pid, 9);
    let _ = child.wait();
    if let Err(e) = checks {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn cmdprio_runs_on_engines_that_carry_it_and_is_refused_elsewhere() {
    let d = tempfile::tempdir().unwrap();
    for engine in ["io_uring", "libaio"] {
        let o = run_in(
            d.path(),
            &[
                "--name=c",
                "--filename=c.dat",
                "--size=1m",
                "--rw=randrw",
                "--bs=4k",
                "--direct=1",
                &format!("--ioengine={engine}"),
                "--iodepth=8",
                "--cmdprio_percentage=50",
                "--cmdprio_class=2",
                "--cmdprio=1",
                "--output-format=json",
            ],
        );
        // The kernel checks each I/O's priority: a bad one fails the I/O.
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["jobs"][0]["error"], 0);
    }
    let o = run_in(
        d.path(),
        &[
            "--name=c",
            "--filename=c.dat",
            "--size=1m",
            "--ioengine=psync",
            "--cmdprio_percentage=50",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("io_uring"), "{}", stderr(&o));
}

#[test]
fn numa_options_use_the_nodes_that_exist() {
    let d = tempfile::tempdir().unwrap();
    let data = write(
        d.path(),
        &[
            "--numa_cpu_nodes=0",
            "--numa_mem_policy=bind:0",
            "--buffer_pattern=0x11",
        ],
    );
    assert!(data.iter().all(|&x| x == 0x11));
    let o = run_in(
        d.path(),
        &[
            "--name=n",
            "--filename=n.dat",
            "--size=1m",
            "--numa_cpu_nodes=63",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("NUMA node 63 does not exist"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn memory_kinds_hold_correct_data() {
    let d = tempfile::tempdir().unwrap();
    let map = d.path().join("iomem.map").display().to_string();
    for mem in [
        "shm",
        "mmapshared",
        "mmap",
        &format!("mmap:{map}"),
        "malloc",
    ] {
        let o = run_in(
            d.path(),
            &[
                "--name=m",
                "--filename=m.dat",
                "--size=1m",
                "--rw=randwrite",
                "--bs=16k",
                "--direct=1",
                "--ioengine=io_uring",
                "--iodepth=4",
                "--verify=crc32c",
                &format!("--iomem={mem}"),
                "--iomem_align=64k",
                "--output-format=json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{mem}: {}", stderr(&o));
        let v = &json(&o)["dioscope"]["verify"]["m"];
        assert_eq!(
            (v["checked"].as_u64(), v["bad"].as_u64()),
            (Some(64), Some(0)),
            "{mem}"
        );
    }
    let o = run_in(
        d.path(),
        &[
            "--name=m",
            "--filename=m.dat",
            "--size=1m",
            "--mem=cudamalloc",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not supported by dioscope"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn lockmem_pins_memory_and_names_the_limit_when_it_cannot() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=l",
            "--filename=l.dat",
            "--size=1m",
            "--lockmem=4m",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    if !can_run(
        "root, prlimit and setpriv",
        is_root() && have_tool("prlimit") && have_tool("setpriv"),
    ) {
        return;
    }
    // Without CAP_IPC_LOCK and a 64 KiB `ulimit -l`, 4 MiB cannot be locked.
    let mut c = Command::new("prlimit");
    c.args([
        "--memlock=65536:65536",
        "setpriv",
        "--bounding-set=-ipc_lock",
        "--inh-caps=-ipc_lock",
        bin(),
        "--name=l",
        "--filename=l.dat",
        "--size=1m",
        "--lockmem=4m",
    ])
    .current_dir(d.path());
    let o = output_within(c, std::time::Duration::from_secs(60));
    assert_ne!(o.status.code(), Some(0));
    let e = stderr(&o);
    assert!(
        e.contains("lockmem") && e.contains("ulimit -l") && e.contains("65536 bytes"),
        "{e}"
    );
}

#[test]
fn exec_prerun_and_postrun_write_their_output_files() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--filename=x.dat",
            "--size=1m",
            "--exec_prerun=echo before; test -f x.dat && echo exists",
            "--exec_postrun=echo after >&2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pre = std::fs::read_to_string(d.path().join("x.prerun.txt")).unwrap();
    assert_eq!(pre, "before\nexists\n");
    let post = std::fs::read_to_string(d.path().join("x.postrun.txt")).unwrap();
    assert_eq!(post, "after\n");
    let o = run_in(
        d.path(),
        &[
            "--name=x",
            "--filename=x.dat",
            "--size=1m",
            "--exec_prerun=exit 3",
        ],
    );
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("exec_prerun 'exit 3' failed") && stderr(&o).contains("x.prerun.txt"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn uid_gid_and_cgroup_are_refused_with_a_reason() {
    let d = tempfile::tempdir().unwrap();
    for opt in ["--uid=1000", "--gid=1000", "--cgroup=test"] {
        let o = run_in(d.path(), &["--name=u", "--size=1m", opt]);
        assert_eq!(o.status.code(), Some(2), "{opt}");
        let e = stderr(&o);
        assert!(
            e.contains("not supported by dioscope") || e.contains("dioscope does not implement"),
            "{opt}: {e}"
        );
    }
}
