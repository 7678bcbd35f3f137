//! The verify read-back checks exactly the blocks a job wrote: a property
//! test over rw modes, sizes, io_size, number_ios, norandommap, numjobs,
//! engines and experimental_verify, on real files. A healthy file never
//! has a bad block, and every interval holding an intact block of the job
//! is checked (no more: the read-back reads what was written, once); a
//! block corrupted between the writes and the read-back is reported with
//! its offset.

use super::{execute, prepare, ResolvedJob, RunOptions, RunResult, TrialHooks};
use crate::targets::TargetTable;
use crate::verify::{check_interval, BadKind};
use proptest::prelude::*;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
struct Case {
    rw: &'static str,
    bs: &'static str,
    /// The file, in units of 16 KiB.
    size16k: u64,
    /// io_size, in units of 16 KiB.
    io_size16k: Option<u64>,
    number_ios: Option<u64>,
    norandommap: bool,
    numjobs: u32,
    engine: &'static str,
    iodepth: u32,
    direct: bool,
    experimental: bool,
    time_based: bool,
    rwmixread: u32,
    algo: &'static str,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            prop::sample::select(vec!["write", "randwrite", "rw", "randrw", "readwrite"]),
            prop::sample::select(vec!["4k", "8k", "16k", "4k-16k"]),
            1u64..48,
            prop::option::weighted(0.4, 1u64..96),
            prop::option::weighted(0.25, 1u64..200),
            any::<bool>(),
            1u32..=3,
        ),
        (
            prop::sample::select(vec![
                "psync", "sync", "pvsync", "libaio", "posixaio", "io_uring",
            ]),
            prop::sample::select(vec![1u32, 4, 16]),
            any::<bool>(),
            any::<bool>(),
            prop::bool::weighted(0.15),
            prop::sample::select(vec![10u32, 50, 90]),
            prop::sample::select(vec!["crc32c", "md5", "xxhash"]),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (rw, bs, size16k, io_size16k, number_ios, norandommap, numjobs),
                (engine, iodepth, direct, experimental, time_based, rwmixread, algo, seed),
            )| Case {
                rw,
                bs,
                size16k,
                io_size16k,
                number_ios,
                norandommap,
                numjobs,
                engine,
                iodepth,
                direct,
                experimental,
                time_based,
                rwmixread,
                algo,
                seed,
            },
        )
}

fn args(c: &Case, dir: &Path) -> Vec<String> {
    let mut a = vec![
        "--name=j".to_string(),
        format!("--directory={}", dir.display()),
        format!("--rw={}", c.rw),
        if c.bs.contains('-') {
            format!("--bsrange={}", c.bs)
        } else {
            format!("--bs={}", c.bs)
        },
        format!("--size={}k", c.size16k * 16),
        format!("--verify={}", c.algo),
        "--do_verify=1".into(),
        format!("--ioengine={}", c.engine),
        format!("--iodepth={}", c.iodepth),
        format!("--direct={}", c.direct as u8),
        format!("--numjobs={}", c.numjobs),
        format!("--norandommap={}", c.norandommap as u8),
        format!("--experimental_verify={}", c.experimental as u8),
        format!("--rwmixread={}", c.rwmixread),
        format!("--randseed={}", c.seed),
    ];
    if let Some(n) = c.io_size16k {
        a.push(format!("--io_size={}k", n * 16));
    }
    if let Some(n) = c.number_ios {
        a.push(format!("--number_ios={n}"));
    }
    if c.time_based {
        a.push("--time_based=1".into());
        a.push("--runtime=100ms".into());
    }
    a
}

/// Every interval of the job's files that holds an intact block the job
/// wrote: (file, offset).
fn intact(job: &ResolvedJob) -> Vec<(PathBuf, u64)> {
    let vs = super::verifying::verify_spec(&job.spec, 1).expect("a verifying job");
    let iv = vs.interval as usize;
    let (mut scratch, mut swapped) = (vec![0u8; iv], vec![0u8; iv]);
    let mut out = Vec::new();
    for f in job.clones.iter().flatten() {
        let mut data = Vec::new();
        std::fs::File::open(&f.path)
            .and_then(|mut h| h.read_to_end(&mut data))
            .expect("the job's file");
        let (start, len) = f.region;
        let end = (start + len).min(data.len() as u64);
        let mut off = start;
        while off + iv as u64 <= end {
            let b = &data[off as usize..off as usize + iv];
            if check_interval(&vs, b, off, None, &mut scratch, &mut swapped).is_none() {
                out.push((f.path.clone(), off));
            }
            off += iv as u64;
        }
    }
    out
}

/// After the (only) trial, before the read-back: count the intact blocks,
/// and corrupt the payload of one of them when asked.
struct AfterWrites {
    corrupt: Option<usize>,
    intact: usize,
    corrupted: Option<(PathBuf, u64)>,
}

impl TrialHooks for AfterWrites {
    fn after_trial(&mut self, _g: u32, _t: u32, jobs: &[&ResolvedJob], _table: &TargetTable) {
        let blocks = intact(jobs[0]);
        self.intact = blocks.len();
        if let (Some(k), false) = (self.corrupt, blocks.is_empty()) {
            let (path, off) = blocks[k % blocks.len()].clone();
            let mut f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap();
            let at = off + crate::verify::HEADER_LEN as u64 + 7;
            let mut b = [0u8; 1];
            f.seek(SeekFrom::Start(at)).unwrap();
            f.read_exact(&mut b).unwrap();
            f.seek(SeekFrom::Start(at)).unwrap();
            f.write_all(&[b[0] ^ 0x40]).unwrap();
            f.sync_all().unwrap();
            self.corrupted = Some((path, off));
        }
    }
}

fn run(c: &Case, corrupt: Option<usize>) -> (RunResult, AfterWrites) {
    let d = tempfile::tempdir().unwrap();
    let plan = crate::job::parse_args(&args(c, d.path())).expect("a valid job");
    let (resolved, table) = prepare(&plan).expect("set up");
    let mut hooks = AfterWrites {
        corrupt,
        intact: 0,
        corrupted: None,
    };
    let r = execute(resolved, &table, &RunOptions::default(), &mut hooks);
    (r, hooks)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 40,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn read_back_checks_exactly_the_blocks_written(c in case(), k in any::<usize>()) {
        let (r, h) = run(&c, None);
        let job = &r.jobs[0];
        prop_assert!(job.trials.iter().all(|t| t.first_error.is_none()), "I/O error: {:?}", job.trials[0].first_error);
        let v = job.verify.as_ref().expect("a verify report");
        prop_assert_eq!(v.bad, 0, "a healthy file: {:?}", v.bad_blocks.first());
        prop_assert_eq!(v.read_errors, 0, "{:?}", v.first_read_error);
        // Every intact block of the job is checked, once.
        prop_assert_eq!(v.checked, h.intact as u64);
        let iv = v.interval as u64;
        let read: u64 = job.verify_io.iter().map(|io| io.reads.bytes).sum();
        prop_assert_eq!(read, v.checked * iv, "the read-back reads what was written, once");

        // One block corrupted after the writes is the one reported.
        let (r, h) = run(&c, Some(k));
        let v = r.jobs[0].verify.as_ref().expect("a verify report");
        match h.corrupted {
            None => prop_assert_eq!(v.bad, 0),
            Some((path, off)) => {
                prop_assert_eq!(v.bad, 1, "{:?}", v.bad_blocks);
                let (p, b) = &v.bad_blocks[0];
                prop_assert_eq!(Path::new(p), path.as_path());
                prop_assert_eq!(b.offset, off);
                prop_assert_eq!(b.kind, BadKind::TornWrite);
            }
        }
    }
}
