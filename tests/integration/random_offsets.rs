//! Random offsets as fio's own tests check them (t/jobs/t0020.fio and
//! t0021.fio, checked by t/run-fio-tests.py): every block once per pass
//! with the random map or the LFSR, no clustering (the Wald–Wolfowitz runs
//! test above/below the mean), and `randrepeat`/`randseed` repeatable.

use crate::common::*;
use dioscope_core::runner::randgen::{mean, runs_z};
use std::path::Path;

/// Run a job file's text in `dir` (its `write_iolog` starts anew: the
/// log is appended to, as fio's is).
fn run_job(dir: &Path, name: &str, text: &str) {
    for l in ["o.log", "r.log"] {
        let _ = std::fs::remove_file(dir.join(l));
    }
    std::fs::write(dir.join(name), text).unwrap();
    let o = run_in(dir, &[name, "--output-format=json", "--output=r.json"]);
    assert!(o.status.success(), "{text}\n{}", stderr(&o));
}

/// The blocks (offset / 4096) of a `write_iolog`, in order.
fn iolog_blocks(p: &Path) -> Vec<u64> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            match t[..] {
                [.., "read", off, _] => Some(off.parse::<u64>().unwrap() / 4096),
                _ => None,
            }
        })
        .collect()
}

/// fio's t0020 (random map) and t0021 (`norandommap=1
/// random_generator=lfsr`) as fio ships them, checked as its script does:
/// the bandwidth log's offsets (`log_offset=1`), all 256 blocks, and the
/// runs test at p ≥ 0.05 (|z| < 1.96).
#[test]
fn fio_t0020_and_t0021_offsets_cover_the_file_and_pass_the_runs_test() {
    let base = "[test]\nioengine=null\nfilesize=1M\nrw=randread\nwrite_bw_log=test\n\
                per_job_logs=0\nlog_offset=1\n";
    for (name, extra) in [
        ("t0020", ""),
        ("t0021", "norandommap=1\nrandom_generator=lfsr\n"),
    ] {
        let d = tempfile::tempdir().unwrap();
        run_job(d.path(), "t.fio", &format!("{base}{extra}"));
        let text = std::fs::read_to_string(d.path().join("test_bw.log")).unwrap();
        let blocks: Vec<u64> = text
            .lines()
            .map(|l| l.split(", ").nth(4).unwrap().parse::<u64>().unwrap() / 4096)
            .collect();
        assert_eq!(blocks.len(), 256, "{name}");
        let mut sorted = blocks.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..256).collect::<Vec<u64>>(),
            "{name}: a block missed"
        );
        let z = runs_z(&blocks, mean(&blocks));
        assert!(
            z.abs() < 1.96,
            "{name}: runs test z = {z:.2} (fio: p ≥ 0.05)"
        );
    }
}

/// The same checks through `write_iolog` at 10 other sizes (1 block,
/// non-powers of two), for each generator: each block exactly once in each
/// of two passes (random map, lfsr), and no clustering.
#[test]
fn every_generator_covers_each_size_once_per_pass() {
    let kinds = [
        ("tausworthe", "random_generator=tausworthe\n"),
        ("tausworthe64", "random_generator=tausworthe64\n"),
        ("lfsr", "random_generator=lfsr\nnorandommap=1\n"),
    ];
    let d = tempfile::tempdir().unwrap();
    for blocks in [1u64, 3, 31, 100, 255, 257, 1000, 1023, 4097, 10_000] {
        for (kind, opts) in kinds {
            let text = format!(
                "[j]\nioengine=null\nfilesize={}\nbs=4k\nrw=randread\nloops=2\n{opts}\
                 write_iolog=o.log\n",
                blocks * 4096
            );
            run_job(d.path(), "j.fio", &text);
            let v = iolog_blocks(&d.path().join("o.log"));
            assert_eq!(v.len() as u64, 2 * blocks, "{kind} {blocks}");
            for pass in v.chunks(blocks as usize) {
                let mut sorted = pass.to_vec();
                sorted.sort_unstable();
                assert_eq!(
                    sorted,
                    (0..blocks).collect::<Vec<u64>>(),
                    "{kind} {blocks} blocks: not each block once in a pass"
                );
            }
            if blocks >= 20 {
                let first = &v[..blocks as usize];
                let z = runs_z(first, mean(first));
                // One seed per size: a bound that one chance in 2,000 fails.
                assert!(
                    z.abs() < 3.3,
                    "{kind} {blocks} blocks: runs test z = {z:.2}"
                );
            }
        }
    }
}

/// randrepeat=1 (the default): the same offsets every run, another
/// `randseed` other offsets; randrepeat=0: a new sequence each run.
#[test]
fn randrepeat_and_randseed_decide_the_sequence() {
    let d = tempfile::tempdir().unwrap();
    let seq = |opts: &str| {
        run_job(
            d.path(),
            "r.fio",
            &format!(
                "[r]\nioengine=null\nfilesize=4M\nrw=randread\nnorandommap=1\n{opts}\
                 write_iolog=r.log\n"
            ),
        );
        iolog_blocks(&d.path().join("r.log"))
    };
    for opts in [
        "",
        "random_generator=lfsr\n",
        "random_generator=tausworthe64\n",
    ] {
        let a = seq(opts);
        assert_eq!(a.len(), 1024);
        assert_eq!(a, seq(opts), "{opts}: randrepeat=1 repeats");
        assert_eq!(
            seq(&format!("{opts}randseed=1234\n")),
            seq(&format!("{opts}randseed=1234\n")),
            "{opts}: a randseed repeats"
        );
        assert_ne!(a, seq(&format!("{opts}randseed=1234\n")), "{opts}");
        assert_ne!(
            seq(&format!("{opts}randrepeat=0\n")),
            seq(&format!("{opts}randrepeat=0\n")),
            "{opts}: randrepeat=0 draws anew"
        );
    }
}
