//! The metadata engines (engines/meta.rs): one timed operation per file,
//! what each leaves on disk, fio's direction and counts, and the guard
//! (never a device, never a name the run did not make).

use crate::common::*;
use dioscope_core::engines::EngineKind;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const ENGINES: &[&str] = &[
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "filesetxattr",
    "filelistxattr",
];

/// (total_ios, io_bytes, clat samples) of `dir` ("read"/"write") of job `i`.
fn counts(v: &serde_json::Value, i: usize, dir: &str) -> (u64, u64, u64) {
    let d = &v["jobs"][i][dir];
    (
        d["total_ios"].as_u64().unwrap(),
        d["io_bytes"].as_u64().unwrap(),
        d["clat_ns"]["N"].as_u64().unwrap(),
    )
}

/// Run engine `e` on `n` files named m.0.K in `dir`, with `extra` options.
fn run_meta(cwd: &Path, e: &str, dir: &str, n: u32, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "--name=m".to_string(),
        format!("--directory={dir}"),
        format!("--nrfiles={n}"),
        "--filesize=4k".into(),
        format!("--ioengine={e}"),
        "--output-format=json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    run_in(cwd, &args.iter().map(|s| s.as_str()).collect::<Vec<_>>())
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

#[test]
fn the_list_is_every_metadata_engine() {
    let mut by_name: Vec<&str> = EngineKind::ALL
        .iter()
        .filter(|k| k.caps().by_name)
        .map(|k| k.as_str())
        .collect();
    by_name.sort();
    let mut ours = ENGINES.to_vec();
    ours.sort();
    assert_eq!(by_name, ours);
}

#[test]
fn each_engine_does_one_operation_per_file_and_leaves_what_it_should() {
    let d = tempfile::tempdir().unwrap();
    for &e in ENGINES {
        let o = run_meta(
            d.path(),
            e,
            e,
            7,
            &["--xattr_count=3", "--xattr_size=100"][..if e == "filesetxattr" { 2 } else { 0 }],
        );
        assert_eq!(o.status.code(), Some(0), "{e}: {}", stderr(&o));
        let v = json(&o);
        // fio: the operation's latency in the job's direction (read by
        // default), one block accounted per operation.
        assert_eq!(counts(&v, 0, "read"), (7, 7 * 4096, 7), "{e}");
        assert_eq!(counts(&v, 0, "write").0, 0, "{e}");
        assert!(v["jobs"][0]["read"]["clat_ns"]["mean"].as_f64().unwrap() > 0.0);
        let dir = d.path().join(e);
        let names = entries(&dir);
        let want: Vec<String> = if e.ends_with("delete") {
            Vec::new()
        } else {
            (0..7).map(|i| format!("m.0.{i}")).collect()
        };
        assert_eq!(names, want, "{e}");
        for n in &names {
            let md = std::fs::metadata(dir.join(n)).unwrap();
            match e {
                "dircreate" | "dirstat" => assert!(md.is_dir(), "{e} {n}"),
                // filecreate opens with O_CREAT and writes nothing.
                "filecreate" => assert_eq!((md.is_file(), md.len()), (true, 0), "{e} {n}"),
                // The others work on files laid out to filesize first.
                _ => assert_eq!((md.is_file(), md.len()), (true, 4096), "{e} {n}"),
            }
        }
        if e == "filesetxattr" {
            let p = cstr(&dir.join("m.0.4"));
            let mut buf = vec![0u8; 4096];
            for i in 0..3 {
                let name = CString::new(format!("user.dioscope.{i}")).unwrap();
                let n = dioscope_sys::meta::getxattr(&p, &name, &mut buf).unwrap();
                assert_eq!(n, 100, "xattr_size of attribute {i}");
            }
            let n = dioscope_sys::meta::listxattr(&p, &mut buf).unwrap();
            let list = String::from_utf8_lossy(&buf[..n]).into_owned();
            assert_eq!(list.matches("user.dioscope.").count(), 3, "{list:?}");
        }
    }
}

#[test]
fn rw_picks_the_direction_and_fio_s_pattern_names_are_read() {
    let d = tempfile::tempdir().unwrap();
    let o = run_meta(d.path(), "filecreate", "w", 5, &["--rw=write"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(counts(&v, 0, "write"), (5, 5 * 4096, 5));
    assert_eq!(counts(&v, 0, "read").0, 0);
    // fio 3.42's examples write rw=filestat for ioengine=filestat.
    let o = run_meta(
        d.path(),
        "filestat",
        "s",
        4,
        &["--rw=filestat", "--stat_type=statx"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(counts(&json(&o), 0, "read"), (4, 4 * 4096, 4));
    for st in ["stat", "lstat"] {
        let o = run_meta(
            d.path(),
            "dirstat",
            "ds",
            3,
            &[&format!("--stat_type={st}")],
        );
        assert_eq!(o.status.code(), Some(0), "{st}: {}", stderr(&o));
        assert_eq!(counts(&json(&o), 0, "read").0, 3, "{st}");
    }
    let o = run_meta(d.path(), "filestat", "s", 4, &["--stat_type=fstat"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("stat_type"), "{}", stderr(&o));
    let o = run_meta(d.path(), "filestat", "s", 4, &["--rw=trim"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot trim"), "{}", stderr(&o));
}

#[test]
fn loops_and_numjobs_multiply_the_operations() {
    let d = tempfile::tempdir().unwrap();
    let o = run_meta(
        d.path(),
        "filestat",
        "l",
        6,
        &["--loops=3", "--numjobs=2", "--group_reporting"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(counts(&json(&o), 0, "read"), (36, 36 * 4096, 36));
    // Each clone has its own names: m.0.K and m.1.K.
    assert_eq!(entries(&d.path().join("l")).len(), 12);
    // number_ios stops early.
    let o = run_meta(d.path(), "filestat", "l", 6, &["--number_ios=4"]);
    assert_eq!(counts(&json(&o), 0, "read").0, 4);
}

#[test]
fn delete_engines_never_remove_a_name_the_run_did_not_make() {
    let d = tempfile::tempdir().unwrap();
    for (e, make) in [("filedelete", true), ("dirdelete", false)] {
        let dir = d.path().join(e);
        std::fs::create_dir(&dir).unwrap();
        let theirs = dir.join("m.0.1");
        if make {
            std::fs::write(&theirs, b"precious").unwrap();
        } else {
            std::fs::create_dir(&theirs).unwrap();
        }
        let o = run_meta(d.path(), e, e, 3, &[]);
        assert_ne!(o.status.code(), Some(0), "{e}");
        let err = stderr(&o);
        assert!(
            err.contains("m.0.1") && err.contains("was not made by this run"),
            "{e}: {err}"
        );
        // Theirs is intact, and nothing the refused setup made stays.
        assert_eq!(entries(&dir), vec!["m.0.1"], "{e}");
        if make {
            assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
        }
    }
}

#[test]
fn unlink_removes_only_what_the_run_made() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("u");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("m.0.1"), b"theirs").unwrap();
    let o = run_meta(d.path(), "filecreate", "u", 3, &["--unlink=1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(counts(&json(&o), 0, "read").0, 3);
    // open(O_CREAT) without O_TRUNC: their file keeps its bytes.
    assert_eq!(entries(&dir), vec!["m.0.1"]);
    assert_eq!(std::fs::read(dir.join("m.0.1")).unwrap(), b"theirs");
    for e in ["dircreate", "dirstat", "filestat", "filesetxattr"] {
        let o = run_meta(d.path(), e, e, 4, &["--unlink=1"]);
        assert_eq!(o.status.code(), Some(0), "{e}: {}", stderr(&o));
        assert!(entries(&d.path().join(e)).is_empty(), "{e}");
    }
}

#[test]
fn devices_and_names_of_the_wrong_kind_are_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("adir")).unwrap();
    std::fs::write(d.path().join("afile"), b"x").unwrap();
    for (e, name, what) in [
        ("filestat", "/dev/null", "a device or special file"),
        ("filecreate", "/dev/null", "a device or special file"),
        ("filedelete", "adir", "a directory"),
        ("dirstat", "afile", "a regular file"),
        ("dircreate", "adir", "was not made by this run"),
    ] {
        let o = run_in(
            d.path(),
            &[
                "--name=m",
                &format!("--filename={name}"),
                "--size=4k",
                &format!("--ioengine={e}"),
                "--output-format=json",
            ],
        );
        assert_ne!(o.status.code(), Some(0), "{e} {name}");
        assert!(stderr(&o).contains(what), "{e} {name}: {}", stderr(&o));
    }
    assert!(d.path().join("adir").is_dir());
    assert_eq!(std::fs::read(d.path().join("afile")).unwrap(), b"x");
}

#[test]
fn counts_and_direction_match_fio() {
    if !can_run("fio", have_tool("fio")) {
        return;
    }
    // fio 3.33 has the three file engines (the dir and xattr ones came later).
    let d = tempfile::tempdir().unwrap();
    for e in ["filecreate", "filestat", "filedelete"] {
        for rw in ["read", "write"] {
            let args = |dir: &str| {
                vec![
                    "--name=m".to_string(),
                    format!("--directory={dir}"),
                    "--nrfiles=25".into(),
                    "--filesize=4k".into(),
                    "--openfiles=1".into(),
                    format!("--rw={rw}"),
                    format!("--ioengine={e}"),
                    "--output-format=json".into(),
                ]
            };
            for sub in ["ours", "fio"] {
                std::fs::create_dir_all(d.path().join(format!("{e}-{rw}-{sub}"))).unwrap();
            }
            let a = args(&format!("{e}-{rw}-ours"));
            let o = run_in(d.path(), &a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
            assert_eq!(o.status.code(), Some(0), "{e} {rw}: {}", stderr(&o));
            let ours = json(&o);
            let mut c = std::process::Command::new("fio");
            c.args(args(&format!("{e}-{rw}-fio"))).current_dir(d.path());
            let f = output_within(c, std::time::Duration::from_secs(60));
            assert!(f.status.success(), "fio {e} {rw}: {}", stderr(&f));
            let text = stdout(&f);
            let fio: serde_json::Value =
                serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
            for dir in ["read", "write"] {
                assert_eq!(
                    counts(&ours, 0, dir),
                    counts(&fio, 0, dir),
                    "{e} {rw} {dir}"
                );
            }
            assert_eq!(
                entries(&d.path().join(format!("{e}-{rw}-ours"))),
                entries(&d.path().join(format!("{e}-{rw}-fio"))),
                "{e} {rw}: the same files are left"
            );
        }
    }
}
