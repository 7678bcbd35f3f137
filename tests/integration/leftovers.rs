//! fio drop-in details measured side by side with fio 3.33: which errors a
//! job goes on after (continue_on_error, ignore_error), e4defrag's refused
//! moves, the metadata engines' counts, the null engine's trims, and a
//! reader sized when it starts after a fill_device job.
//!
//! Where fio is installed (CI installs it) the same job runs under both
//! tools and the figures are compared; the fixed figures below are what
//! fio 3.33 reported for the same jobs.

use crate::common::*;
use std::path::Path;
use std::process::Output;

/// Run fio with `args` in `dir`: its JSON (after any warnings) and exit code.
fn fio_json(dir: &Path, args: &[String]) -> (serde_json::Value, Option<i32>) {
    let mut c = std::process::Command::new("fio");
    c.args(args).current_dir(dir);
    let o = output_within(c, std::time::Duration::from_secs(60));
    let text = stdout(&o);
    let at = text
        .find('{')
        .unwrap_or_else(|| panic!("fio wrote no JSON: {}{}", text, stderr(&o)));
    (serde_json::from_str(&text[at..]).unwrap(), o.status.code())
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn ours(dir: &Path, a: &[String]) -> (serde_json::Value, Option<i32>, Output) {
    let o = run_in(dir, &a.iter().map(String::as_str).collect::<Vec<_>>());
    (json(&o), o.status.code(), o)
}

/// (total_ios, io_bytes, clat samples) of direction `d` of job `i`.
fn counts(v: &serde_json::Value, i: usize, d: &str) -> (u64, u64, u64) {
    let x = &v["jobs"][i][d];
    (
        x["total_ios"].as_u64().unwrap(),
        x["io_bytes"].as_u64().unwrap(),
        x["clat_ns"]["N"].as_u64().unwrap(),
    )
}

/// Reads of a 1 MiB file that `exec_prerun` empties after the job was
/// sized: every read finds end of file, which is EIO (fio's error for it).
fn eof_reads(dir: &Path, extra: &[&str]) -> (serde_json::Value, Option<i32>, Output) {
    std::fs::write(dir.join("e.dat"), vec![0x5a; 1 << 20]).unwrap();
    let mut a = args(&[
        "--name=r",
        "--filename=e.dat",
        "--rw=read",
        "--bs=4k",
        "--size=1m",
        "--ioengine=psync",
        "--exec_prerun=truncate -s 0 e.dat",
        "--output-format=json",
    ]);
    a.extend(args(extra));
    ours(dir, &a)
}

#[test]
fn continue_on_error_goes_on_only_after_fios_non_fatal_errors() {
    let d = tempfile::tempdir().unwrap();
    // EIO is one of fio's non-fatal errors: the job goes on, counting each.
    let (j, code, o) = eof_reads(d.path(), &["--continue_on_error=all"]);
    assert_eq!(code, Some(1), "I/O errors fail the run: {}", stderr(&o));
    let job = &j["jobs"][0];
    assert_eq!(job["error"], 5, "fio's error is the first one's errno");
    assert_eq!(job["total_err"], 256, "every read counted");
    assert_eq!(job["first_error"], 5);
    assert_eq!(j["dioscope"]["stopped_by_error"], false);
    assert!(stderr(&o).contains("the job went on"), "{}", stderr(&o));
    // Without continue_on_error: the first error ends it, and fio's
    // total_err/first_error are not written.
    let (j, code, _) = eof_reads(d.path(), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(j["dioscope"]["io_errors"], 1);
    assert_eq!(j["dioscope"]["stopped_by_error"], true);
    assert!(j["jobs"][0].get("total_err").is_none(), "{}", j["jobs"][0]);
    // A READ list replaces fio's non-fatal EIO: EIO now ends the job.
    let (j, code, o) = eof_reads(
        d.path(),
        &["--continue_on_error=all", "--ignore_error=ENOSPC"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(j["dioscope"]["stopped_by_error"], true);
    assert_eq!(j["jobs"][0]["total_err"], 1);
    assert!(
        stderr(&o).contains("continue_on_error goes on only after fio's non-fatal errors"),
        "{}",
        stderr(&o)
    );
    // Listed (`,` between types, `:` between errnos, as fio parses it),
    // the list alone turns continue_on_error on: ignored, counted in
    // total_err, and the run succeeds (as fio's exit 0).
    let (j, code, o) = eof_reads(d.path(), &["--ignore_error=ENXIO:EIO,ENOSPC"]);
    assert_eq!(code, Some(0), "{}", stderr(&o));
    assert_eq!(j["dioscope"]["io_errors"], 0);
    assert_eq!(j["jobs"][0]["total_err"], 256);
    assert_eq!(
        j["jobs"][0]["error"], 5,
        "fio's error: the first, even ignored"
    );
    // The same list for writes only leaves reads fatal.
    let (j, code, _) = eof_reads(d.path(), &["--ignore_error=,EIO"]);
    assert_eq!(code, Some(1));
    assert_eq!(j["dioscope"]["stopped_by_error"], true);
}

#[test]
fn a_refused_move_ends_the_e4defrag_job_even_with_continue_on_error() {
    if !can_run(
        "root, losetup and mkfs.ext4",
        is_root() && have_tool("mkfs.ext4"),
    ) {
        return;
    }
    let fs = MountedFs::new(64 << 20, "ext4");
    {
        // Written and synced: ext4 moves only allocated extents (a range
        // still in delayed allocation is ENODATA).
        use std::io::Write;
        let mut f = std::fs::File::create(fs.path().join("f")).unwrap();
        f.write_all(&vec![0xa5; 4 << 20]).unwrap();
        f.sync_all().unwrap();
    }
    let with_fio = have_tool("fio");
    // e4defrag refuses reads (EINVAL): not one of fio's non-fatal errors,
    // so continue_on_error=all stops at the first (fio 3.33: error 22,
    // total_err 1, exit 1); listed for reads, the writes all happen (fio
    // 3.33: exit 0); listed for writes only, reads still stop it.
    for (extra, stops) in [
        ("--continue_on_error=all", true),
        ("--ignore_error=EINVAL", false),
        ("--ignore_error=,EINVAL", true),
    ] {
        let a = |donor: &str| {
            args(&[
                "--name=d",
                "--filename=f",
                "--ioengine=e4defrag",
                &format!("--donorname={donor}"),
                "--rw=randrw",
                "--bs=64k",
                "--size=4m",
                "--filesize=4m",
                "--randrepeat=0",
                extra,
                "--output-format=json",
            ])
        };
        let (j, code, o) = ours(fs.path(), &a("ours.def"));
        let job = &j["jobs"][0];
        assert_eq!(job["error"], 22, "{extra}: {}", stderr(&o));
        assert_eq!(j["dioscope"]["stopped_by_error"], stops, "{extra}");
        assert_eq!(code, Some(stops as i32), "{extra}: {}", stderr(&o));
        let errs = job["total_err"].as_u64().unwrap();
        if stops {
            assert_eq!(errs, 1, "{extra}");
        } else {
            assert!(errs > 1, "{extra}: every refused read counted: {errs}");
            assert_eq!(
                job["write"]["io_bytes"].as_u64().unwrap() + errs * (64 << 10),
                4 << 20,
                "{extra}: every write moved its blocks"
            );
        }
        if with_fio {
            let (f, fcode) = fio_json(fs.path(), &a("fio.def"));
            assert_eq!(fcode, code, "{extra}: exit codes");
            assert_eq!(f["jobs"][0]["error"], job["error"], "{extra}");
            let ferrs = f["jobs"][0]["total_err"].as_u64().unwrap();
            assert_eq!(ferrs > 1, errs > 1, "{extra}: fio {ferrs}, ours {errs}");
        }
    }
}

#[test]
fn metadata_engines_count_blocks_and_time_one_operation_per_file() {
    let d = tempfile::tempdir().unwrap();
    let with_fio = have_tool("fio");
    // (options, total_ios, io_bytes, operations) as fio 3.33 counts them:
    // each file is filesize (else size / nrfiles, else one block) in whole
    // blocks; one timed operation per file per pass, the other blocks
    // complete untimed.
    let cases: &[(&[&str], u64, u64, u64)] = &[
        (&["--nrfiles=10", "--bs=4k"], 10, 40960, 10),
        (&["--nrfiles=10", "--bs=4k", "--size=1m"], 250, 1024000, 10),
        (
            &["--nrfiles=10", "--bs=4k", "--filesize=16k"],
            40,
            163840,
            10,
        ),
        (
            &["--nrfiles=10", "--bs=4k", "--filesize=8k", "--loops=2"],
            40,
            163840,
            20,
        ),
        (
            &["--nrfiles=5", "--bs=4k", "--filesize=16k", "--rw=randread"],
            20,
            81920,
            5,
        ),
    ];
    let mut n = 0;
    for e in [
        "filecreate",
        "filestat",
        "filedelete",
        "dircreate",
        "dirstat",
        "dirdelete",
    ] {
        for (opts, ios, bytes, ops) in cases {
            if (e.ends_with("delete") || e == "dircreate") && opts.contains(&"--loops=2") {
                // A second pass deletes what is gone, or makes a directory
                // that exists (an error in fio too).
                continue;
            }
            n += 1;
            let a = |dir: &str| {
                let mut a = args(&[
                    "--name=m",
                    &format!("--directory={dir}"),
                    &format!("--ioengine={e}"),
                    "--output-format=json",
                ]);
                a.extend(args(opts));
                a
            };
            let (j, code, o) = ours(d.path(), &a(&format!("o{n}")));
            assert_eq!(code, Some(0), "{e} {opts:?}: {}", stderr(&o));
            assert_eq!(counts(&j, 0, "read"), (*ios, *bytes, *ops), "{e} {opts:?}");
            // fio 3.33 has the three file engines (the others came later);
            // its filestat and filedelete want a size for files they lay out.
            let sized = opts.iter().any(|o| o.contains("size="));
            if with_fio && (e == "filecreate" || (e.starts_with("file") && sized)) {
                std::fs::create_dir_all(d.path().join(format!("f{n}"))).unwrap();
                let (f, fcode) = fio_json(d.path(), &a(&format!("f{n}")));
                assert_eq!(fcode, Some(0), "fio {e} {opts:?}");
                assert_eq!(counts(&j, 0, "read"), counts(&f, 0, "read"), "{e} {opts:?}");
            }
        }
    }
}

#[test]
fn the_null_engine_counts_trims_as_fio() {
    let d = tempfile::tempdir().unwrap();
    let with_fio = have_tool("fio");
    // fio 3.33: 256 trims of 4 KiB, and with trimwrite 256 writes after them.
    for (rw, writes) in [
        ("trim", 0),
        ("randtrim", 0),
        ("trimwrite", 256),
        ("randtrimwrite", 256),
    ] {
        let a = args(&[
            "--name=n",
            "--ioengine=null",
            &format!("--rw={rw}"),
            "--size=1m",
            "--bs=4k",
            "--output-format=json",
        ]);
        let (j, code, o) = ours(d.path(), &a);
        assert_eq!(code, Some(0), "{rw}: {}", stderr(&o));
        assert_eq!(counts(&j, 0, "trim"), (256, 1 << 20, 256), "{rw}");
        assert_eq!(counts(&j, 0, "write").0, writes, "{rw}");
        if with_fio {
            let (f, _) = fio_json(d.path(), &a);
            for dir in ["trim", "write"] {
                assert_eq!(counts(&j, 0, dir).0, counts(&f, 0, dir).0, "{rw} {dir}");
                assert_eq!(counts(&j, 0, dir).1, counts(&f, 0, dir).1, "{rw} {dir}");
            }
        }
    }
}

#[test]
fn a_reader_after_fill_device_reads_what_the_fill_wrote() {
    if !can_run(
        "root, losetup and mkfs.ext4",
        is_root() && have_tool("mkfs.ext4"),
    ) {
        return;
    }
    let fs = MountedFs::new(32 << 20, "ext4");
    let job = "[global]\nbs=64k\ndirect=1\nioengine=psync\nfilename=fill.dat\n\n\
               [fill]\nrw=write\nfill_device=1\n\n\
               [readback]\nstonewall\ncreate_serialize=0\nrw=read\n";
    std::fs::write(fs.path().join("fill.fio"), job).unwrap();
    let (j, code, o) = ours(fs.path(), &args(&["fill.fio", "--output-format=json"]));
    assert_eq!(code, Some(0), "{}", stderr(&o));
    let written = counts(&j, 0, "write").1;
    let read = counts(&j, 1, "read").1;
    assert!(
        written > 8 << 20,
        "the fill wrote the free space: {written}"
    );
    assert_eq!(
        read,
        written / (64 << 10) * (64 << 10),
        "the reader read all of it"
    );
    if have_tool("fio") {
        std::fs::remove_file(fs.path().join("fill.dat")).unwrap();
        let (f, fcode) = fio_json(fs.path(), &args(&["fill.fio", "--output-format=json"]));
        assert_eq!(fcode, Some(0));
        let (fw, fr) = (counts(&f, 0, "write").1, counts(&f, 1, "read").1);
        assert_eq!(
            fr,
            fw / (64 << 10) * (64 << 10),
            "fio's reader reads the fill too"
        );
        assert!(
            fr.abs_diff(read) <= 1 << 20,
            "as much as ours: fio {fr}, ours {read}"
        );
    }
}
