//! Stage one without a file or device: jobs from command-line options,
//! targets described by hand, the two pure steps (`target_needs`,
//! `resolve`) checked case by case.

use super::*;
use crate::runner::fixtures;
use std::borrow::Cow;

const K: u64 = 1024;
const M: u64 = 1024 * 1024;

/// A target as the open step would describe it.
#[derive(Clone, Copy)]
struct Tgt {
    kind: TargetKind,
    size: u64,
    align: u32,
    /// The size before the run (what a percentage offset is of).
    prior: u64,
}

const FILE_4M: Tgt = Tgt {
    kind: TargetKind::File,
    size: 4 * M,
    align: 512,
    prior: 4 * M,
};
const DEV_4M: Tgt = Tgt {
    kind: TargetKind::BlockDevice,
    size: 4 * M,
    align: 4096,
    prior: 0,
};

/// The facts of a run whose every path is a target like `t`.
fn facts(plan: &Plan, files: &[JobFiles], t: Tgt) -> Facts {
    let mut f = Facts::default();
    for (j, jf) in plan.jobs.iter().zip(files) {
        for p in jf.paths.iter().flatten() {
            if f.targets
                .iter()
                .any(|x| x.path == *p && x.direct == j.direct)
            {
                continue;
            }
            f.targets.push(TargetInfo {
                path: p.clone(),
                kind: t.kind,
                size: t.size,
                offset_align: t.align,
                mem_align: t.align,
                align_source: Cow::Borrowed("a test"),
                direct: j.direct,
                writable: true,
                created: false,
                prior_size: t.prior,
                open_sync: 0,
            });
        }
    }
    f
}

/// Resolve the job of `args` on targets like `t`: per clone, each file's
/// path and region.
type Regions = Vec<Vec<(String, (u64, u64))>>;

fn resolve_on(args: &[&str], t: Tgt) -> Result<Regions, String> {
    resolve_with(args, t, |_| {})
}

fn resolve_with(args: &[&str], t: Tgt, edit: impl Fn(&mut Facts)) -> Result<Regions, String> {
    let plan = fixtures::plan(args);
    let files = JobFiles::of(&plan).map_err(|e| e.to_string())?;
    let mut f = facts(&plan, &files, t);
    edit(&mut f);
    let out = resolve(&plan, &files, &f).map_err(|e| e.to_string())?;
    Ok(out[0]
        .clones
        .iter()
        .map(|c| {
            c.iter()
                .map(|u| (u.path.display().to_string(), u.region))
                .collect()
        })
        .collect())
}

fn one(path: &str, off: u64, len: u64) -> Vec<(String, (u64, u64))> {
    vec![(path.to_string(), (off, len))]
}

#[test]
fn sizes_and_offsets() {
    // (what, options, target, the clones' files and regions)
    let cases: Vec<(&str, Vec<&str>, Tgt, Regions)> = vec![
        (
            "no size: the whole target",
            vec!["--filename=/t/a"],
            FILE_4M,
            vec![one("/t/a", 0, 4 * M)],
        ),
        (
            "size in bytes",
            vec!["--filename=/t/a", "--size=1m"],
            FILE_4M,
            vec![one("/t/a", 0, M)],
        ),
        (
            "size as a percentage of the target",
            vec!["--filename=/t/a", "--size=50%"],
            FILE_4M,
            vec![one("/t/a", 0, 2 * M)],
        ),
        (
            "offset in bytes, then size",
            vec!["--filename=/t/a", "--offset=1m", "--size=1m"],
            FILE_4M,
            vec![one("/t/a", M, M)],
        ),
        (
            "offset without size: to the end",
            vec!["--filename=/t/a", "--offset=3m"],
            FILE_4M,
            vec![one("/t/a", 3 * M, M)],
        ),
        (
            // 33 % of 4 MiB is 1384120.32: rounded up to the smallest bs.
            "a percentage offset lands on a block boundary",
            vec!["--filename=/t/a", "--offset=33%", "--bs=4k"],
            FILE_4M,
            vec![one("/t/a", 338 * 4096, 4 * M - 338 * 4096)],
        ),
        (
            "a percentage offset rounds to offset_align when given",
            vec![
                "--filename=/t/a",
                "--offset=33%",
                "--bs=4k",
                "--offset_align=64k",
            ],
            FILE_4M,
            vec![one("/t/a", 22 * 64 * K, 4 * M - 22 * 64 * K)],
        ),
        (
            "offset_increment moves each clone",
            vec![
                "--filename=/t/a",
                "--numjobs=3",
                "--offset_increment=1m",
                "--size=1m",
            ],
            FILE_4M,
            vec![one("/t/a", 0, M), one("/t/a", M, M), one("/t/a", 2 * M, M)],
        ),
        (
            "filesize: up to the larger bound",
            vec!["--filename=/t/a", "--filesize=1m-2m"],
            FILE_4M,
            vec![one("/t/a", 0, 2 * M)],
        ),
        (
            "a block device: whole device",
            vec!["--filename=/dev/x", "--direct=1"],
            DEV_4M,
            vec![one("/dev/x", 0, 4 * M)],
        ),
    ];
    for (what, args, t, want) in cases {
        assert_eq!(resolve_on(&args, t), Ok(want), "{what}: {args:?}");
    }
}

#[test]
fn file_lists_nrfiles_and_clone_names() {
    let cases: Vec<(&str, Vec<&str>, Regions)> = vec![
        (
            "a ':' list shares size",
            vec!["--filename=/t/a:/t/b", "--size=2m"],
            vec![vec![("/t/a".into(), (0, M)), ("/t/b".into(), (0, M))]],
        ),
        (
            "'\\:' is a ':' in the name",
            vec!["--filename=/t/a\\:b", "--size=1m"],
            vec![one("/t/a:b", 0, M)],
        ),
        (
            "empty entries of a list are skipped",
            vec!["--filename=/t/a::/t/b:", "--size=2m"],
            vec![vec![("/t/a".into(), (0, M)), ("/t/b".into(), (0, M))]],
        ),
        (
            "a relative name goes under directory",
            vec!["--filename=a:/abs/b", "--directory=/d", "--size=2m"],
            vec![vec![("/d/a".into(), (0, M)), ("/abs/b".into(), (0, M))]],
        ),
        (
            "nrfiles: jobname.clone.file, size split",
            vec!["--directory=/d", "--nrfiles=3", "--size=3m"],
            vec![vec![
                ("/d/t.0.0".into(), (0, M)),
                ("/d/t.0.1".into(), (0, M)),
                ("/d/t.0.2".into(), (0, M)),
            ]],
        ),
        (
            "numjobs: each clone its own file",
            vec!["--directory=/d", "--numjobs=2", "--size=1m"],
            vec![one("/d/t.0.0", 0, M), one("/d/t.1.0", 0, M)],
        ),
        (
            "filename_format names the files",
            vec![
                "--directory=/d",
                "--numjobs=2",
                "--nrfiles=2",
                "--size=2m",
                "--filename_format=f.$jobnum.$filenum.$jobname",
            ],
            vec![
                vec![("/d/f.0.0.t".into(), (0, M)), ("/d/f.0.1.t".into(), (0, M))],
                vec![("/d/f.1.0.t".into(), (0, M)), ("/d/f.1.1.t".into(), (0, M))],
            ],
        ),
        (
            "numjobs on one named file: every clone shares it",
            vec!["--filename=/t/a", "--numjobs=2", "--size=1m"],
            vec![one("/t/a", 0, M), one("/t/a", 0, M)],
        ),
    ];
    for (what, args, want) in cases {
        assert_eq!(resolve_on(&args, FILE_4M), Ok(want), "{what}: {args:?}");
    }
}

#[test]
fn refusals_name_the_option_the_value_and_a_fix() {
    // (what, options, target, words the error must hold)
    let cases: Vec<(&str, Vec<&str>, Tgt, Vec<&str>)> = vec![
        (
            "bs not a multiple of the logical block size",
            vec!["--filename=/dev/x", "--direct=1", "--bs=1000"],
            DEV_4M,
            vec!["bs=1000", "4096", "/dev/x", "bs=8192"],
        ),
        (
            "one size of a bs range misaligned",
            vec!["--filename=/dev/x", "--direct=1", "--bsrange=4k-6k"],
            DEV_4M,
            vec!["bs=6144", "4096"],
        ),
        (
            "offset misaligned",
            vec!["--filename=/dev/x", "--direct=1", "--offset=1000"],
            DEV_4M,
            vec!["offset=1000", "offset=4096"],
        ),
        (
            "offset_increment misaligned",
            vec![
                "--filename=/dev/x",
                "--direct=1",
                "--numjobs=2",
                "--size=1m",
                "--offset_increment=1000",
            ],
            DEV_4M,
            vec!["offset_increment=1000"],
        ),
        (
            "the region past the end",
            vec!["--filename=/dev/x", "--direct=1", "--size=8m"],
            DEV_4M,
            vec!["/dev/x holds 4194304 bytes", "8388608", "lower size="],
        ),
        (
            "offset past the end",
            vec!["--filename=/dev/x", "--direct=1", "--offset=4m"],
            DEV_4M,
            vec!["offset 4194304", "lower size= or offset="],
        ),
        (
            "a region smaller than one block",
            vec!["--filename=/t/a", "--size=2k", "--bs=4k"],
            FILE_4M,
            vec!["job 't'", "2048 bytes", "smaller than bs=4096"],
        ),
    ];
    for (what, args, t, words) in cases {
        let e = resolve_on(&args, t).expect_err(what);
        for w in words {
            assert!(e.contains(w), "{what}: {w:?} missing from {e:?}");
        }
    }
    // Buffered I/O takes any size.
    assert!(resolve_on(&["--filename=/dev/x", "--bs=1000", "--size=1000k"], DEV_4M).is_ok());
}

#[test]
fn facts_the_open_step_read() {
    // fill_device on a file: what it has plus what its file system has
    // free, in whole blocks.
    let got = resolve_with(
        &[
            "--filename=/t/a",
            "--fill_device=1",
            "--bs=64k",
            "--rw=write",
        ],
        Tgt { size: M, ..FILE_4M },
        |f| {
            f.free.insert("/t/a".into(), 3 * M + 100);
        },
    );
    assert_eq!(got, Ok(vec![one("/t/a", 0, 4 * M)]));
    // hipri on a device whose queue does not poll.
    let args = [
        "--filename=/dev/x",
        "--direct=1",
        "--hipri=1",
        "--ioengine=io_uring",
    ];
    assert!(resolve_on(&args, DEV_4M).is_ok());
    let e = resolve_with(&args, DEV_4M, |f| {
        f.no_poll.insert("/dev/x".into());
    })
    .unwrap_err();
    assert!(
        e.contains("queue/io_poll = 0") && e.contains("drop hipri"),
        "{e}"
    );
}

#[test]
fn target_needs_size_each_file_for_its_region() {
    // (what, options, size of the files now, each need's min_size)
    let cases: Vec<(&str, Vec<&str>, u64, Vec<u64>)> = vec![
        (
            "no size: what the file has",
            vec!["--filename=/t/a"],
            0,
            vec![0],
        ),
        ("size", vec!["--filename=/t/a", "--size=1m"], 0, vec![M]),
        (
            "size split over a list",
            vec!["--filename=/t/a:/t/b", "--size=2m"],
            0,
            vec![M, M],
        ),
        (
            "offset + size",
            vec!["--filename=/t/a", "--offset=1m", "--size=1m"],
            0,
            vec![2 * M],
        ),
        (
            "a percentage offset is of the size the file has",
            vec!["--filename=/t/a", "--offset=50%", "--size=1m"],
            4 * M,
            vec![3 * M],
        ),
        (
            "offset_increment per clone",
            vec![
                "--filename=/t/a",
                "--numjobs=2",
                "--offset_increment=1m",
                "--size=1m",
            ],
            0,
            vec![M, 2 * M],
        ),
        (
            "filesize: the larger bound",
            vec!["--filename=/t/a", "--filesize=1m-3m"],
            0,
            vec![3 * M],
        ),
        (
            "fill_device: its writes size the file",
            vec!["--filename=/t/a", "--fill_device=1", "--rw=write"],
            0,
            vec![1],
        ),
    ];
    for (what, args, now, want) in cases {
        let plan = fixtures::plan(&args);
        let files = JobFiles::of(&plan).unwrap();
        let needs = target_needs(&plan, &files, |_| now);
        let got: Vec<u64> = needs.iter().map(|n| n.min_size).collect();
        assert_eq!(got, want, "{what}: {args:?}");
    }
    // What a need says beyond its size.
    let plan = fixtures::plan(&["--filename=/t/a", "--rw=read", "--create_on_open=1"]);
    let files = JobFiles::of(&plan).unwrap();
    let n = &target_needs(&plan, &files, |_| 0)[0];
    assert!(!n.write && n.fill && n.no_layout, "{n:?}");
    let plan = fixtures::plan(&["--filename=/t/a", "--rw=write", "--overwrite=0"]);
    let files = JobFiles::of(&plan).unwrap();
    let n = &target_needs(&plan, &files, |_| 0)[0];
    assert!(n.write && !n.fill && !n.no_layout, "{n:?}");
}

#[test]
fn jobs_without_real_io_have_no_files() {
    let plan = fixtures::plan(&["--ioengine=null", "--numjobs=2", "--size=1m"]);
    let files = JobFiles::of(&plan).unwrap();
    assert_eq!(files[0].paths, vec![Vec::<PathBuf>::new(); 2]);
    assert!(target_needs(&plan, &files, |_| 0).is_empty());
    let out = resolve(&plan, &files, &Facts::default()).unwrap();
    assert_eq!(out[0].clones.len(), 2);
    assert!(out[0].clones.iter().all(|c| c.is_empty()));
}

#[test]
fn stonewall_places_jobs_in_phases() {
    let text = "[a]\nioengine=null\nsize=1m\n[b]\nioengine=null\nsize=1m\n\
                [c]\nioengine=null\nsize=1m\nstonewall\n";
    let plan = crate::job::parse_job_text(text).unwrap();
    let files = JobFiles::of(&plan).unwrap();
    let out = resolve(&plan, &files, &Facts::default()).unwrap();
    let phases: Vec<u32> = out.iter().map(|r| r.phase).collect();
    assert_eq!(phases, vec![0, 0, 1]);
}
