//! Faults during setup and during a run, on real loop devices and small
//! filesystems: each gets a message naming the path, the offset, the errno
//! and a fix; a run stops (or goes on with continue_on_error) and keeps its
//! partial result, marked; nothing else is lost. docs/RELIABILITY.md lists
//! what each test shows.

use crate::common::*;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

fn root_with(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have_tool(t)).collect();
    can_run("root", is_root()) && can_run(&missing.join(", "), missing.is_empty())
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dioscope")
}

/// Wait until job `job`'s worker has read (or written) something.
fn wait_running(c: &Child, job: &str, write: bool) {
    let pid = c.id();
    wait_for("the run to be under way", 30, || {
        worker_io(pid, job).is_some_and(|(r, w)| if write { w > 0 } else { r > 0 })
    });
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).expect("result file")).expect("whole JSON")
}

fn assert_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

#[test]
fn enospc_laying_out_removes_the_file_it_created() {
    if !root_with(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let fs = MountedFs::new(32 << 20, "ext4");
    let out = tempfile::tempdir().unwrap();
    let f = fs.path().join("big.dat");
    let res = out.path().join("res.json");
    let o = run_in(
        out.path(),
        &[
            "--name=w",
            &format!("--filename={}", f.display()),
            "--size=64m",
            "--rw=write",
            "--bs=1m",
            "--direct=1",
            "--output-format=json",
            &format!("--output={}", res.display()),
        ],
    );
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(
        e.contains(&f.display().to_string())
            && e.contains("out of space")
            && e.contains("No space left on device")
            && e.contains("of 67108864 bytes")
            && e.contains("bytes free")
            && e.contains("lower size="),
        "{e}"
    );
    assert!(!f.exists(), "the file dioscope created is removed");
    assert_eq!(entries(fs.path()), vec!["lost+found"]);
    assert!(
        entries(out.path()).is_empty(),
        "no result file: nothing ran"
    );
}

#[test]
fn enospc_laying_out_keeps_a_users_short_file_intact() {
    if !root_with(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let fs = MountedFs::new(32 << 20, "ext4");
    let f = fs.path().join("users.dat");
    std::fs::write(&f, b"the user's data").unwrap();
    let o = run_in(
        fs.path(),
        &[
            "--name=r",
            "--filename=users.dat",
            "--size=64m",
            "--rw=read",
            "--direct=1",
        ],
    );
    assert_code(&o, 2);
    assert!(stderr(&o).contains("out of space"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&f).unwrap(),
        b"the user's data",
        "an existing file keeps its bytes and its size"
    );
}

/// A sparse 64 MiB file on a 32 MiB filesystem: the layout has nothing to
/// do, so the writes themselves run out of space mid-run.
fn sparse_write_job(extra: &[&str]) -> (Output, serde_json::Value, MountedFs) {
    let fs = MountedFs::new(32 << 20, "ext4");
    let f = fs.path().join("sparse.dat");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let res = out.path().join("res.json");
    let mut args = vec![
        "--name=w".to_string(),
        format!("--filename={}", f.display()),
        "--rw=write".into(),
        "--bs=1m".into(),
        "--direct=1".into(),
        "--ioengine=psync".into(),
        "--output-format=json".into(),
        format!("--output={}", res.display()),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_in(out.path(), &a);
    let j = read_json(&res);
    assert_eq!(entries(out.path()), vec!["res.json"], "no temporary file");
    assert!(f.exists(), "the user's file is never removed");
    (o, j, fs)
}

#[test]
fn enospc_while_writing_stops_with_a_partial_result() {
    if !root_with(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let (o, j, _fs) = sparse_write_job(&[]);
    assert_code(&o, 1);
    let d = &j["dioscope"];
    assert_eq!(d["io_errors"], 1);
    assert_eq!(d["partial"], true);
    assert_eq!(d["stopped_by_error"], true);
    let fe = &d["first_error"];
    assert_eq!(fe["errno"], 28);
    assert_eq!(fe["direction"], "write");
    let off = fe["offset"].as_u64().unwrap();
    assert!(off > 0 && off < 32 << 20, "fails inside the 32 MiB: {off}");
    assert!(fe["hint"].as_str().unwrap().contains("full"), "{fe}");
    assert_eq!(
        j["jobs"][0]["write"]["io_bytes"].as_u64().unwrap(),
        off,
        "the partial result counts every byte written before the failure"
    );
    let e = stderr(&o);
    assert!(
        e.contains(&format!("at offset {off} of"))
            && e.contains("No space left on device")
            && e.contains("continue_on_error=all")
            && e.contains("hint: the filesystem holding"),
        "{e}"
    );
}

#[test]
fn enospc_ends_the_job_even_with_continue_on_error_as_in_fio() {
    if !root_with(&["losetup", "mkfs.ext4"]) {
        return;
    }
    // fio goes on only after its non-fatal errors (EIO, EILSEQ) or the ones
    // ignore_error lists: fio 3.33 on this job stops at the first ENOSPC
    // with error 28, total_err 1, exit 1.
    let (o, j, _fs) = sparse_write_job(&["--continue_on_error=all"]);
    assert_code(&o, 1);
    let d = &j["dioscope"];
    assert_eq!(d["io_errors"], 1);
    assert_eq!(d["stopped_by_error"], true);
    assert_eq!(d["first_error"]["errno"], 28);
    let job = &j["jobs"][0];
    assert_eq!(
        (job["error"].as_i64(), job["total_err"].as_u64()),
        (Some(28), Some(1))
    );
    assert_eq!(job["first_error"], 28);
    assert!(
        stderr(&o).contains("continue_on_error goes on only after fio's non-fatal errors"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn file_truncated_mid_run_is_a_read_error_at_its_offset() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("t.dat");
    std::fs::write(&f, vec![0x5a; 8 << 20]).unwrap();
    let c = spawn(
        d.path(),
        &[
            "--name=r",
            "--filename=t.dat",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=psync",
            "--time_based",
            "--runtime=30",
            "--output-format=json",
        ],
    );
    wait_running(&c, "r", false);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(0)
        .unwrap();
    let o = c.wait_with_output().unwrap();
    assert_code(&o, 1);
    let j = json(&o);
    let fe = &j["dioscope"]["first_error"];
    assert_eq!(fe["errno"], 5, "{fe}");
    assert_eq!(fe["path"], "t.dat");
    assert!(
        fe["hint"].as_str().unwrap().contains("truncated"),
        "the hint says why: {fe}"
    );
    assert!(j["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0);
    let e = stderr(&o);
    assert!(e.contains("read of 4096 bytes at offset") && e.contains("t.dat is now 0 bytes"));
    assert!(f.exists(), "the user's file is not removed");
}

#[test]
fn loop_device_detached_lazily_mid_run_finishes_the_run() {
    if !root_with(&["losetup"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 32 << 20, &[]);
    let c = spawn(
        d.path(),
        &[
            "--name=r",
            &format!("--filename={}", lo.path()),
            "--rw=randread",
            "--ioengine=psync",
            "--time_based",
            "--runtime=2",
            "--output-format=json",
        ],
    );
    wait_running(&c, "r", false);
    // The kernel defers the detach of an open loop device to its last close.
    sh("losetup", &["-d", lo.path()]);
    let o = c.wait_with_output().unwrap();
    assert_code(&o, 0);
    assert_eq!(json(&o)["dioscope"]["io_errors"], 0);
}

#[test]
fn loop_device_detached_and_shrunk_mid_run_is_an_error_at_its_offset() {
    if !root_with(&["losetup"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 32 << 20, &[]);
    let c = spawn(
        d.path(),
        &[
            "--name=r",
            &format!("--filename={}", lo.path()),
            "--rw=randread",
            "--ioengine=psync",
            "--time_based",
            "--runtime=30",
            "--output-format=json",
        ],
    );
    wait_running(&c, "r", false);
    // Detach (deferred while dioscope holds it open), then take its backing
    // store away: with capacity 0 every read is past the end.
    sh("losetup", &["-d", lo.path()]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.image)
        .unwrap()
        .set_len(0)
        .unwrap();
    sh("losetup", &["-c", lo.path()]);
    let o = c.wait_with_output().unwrap();
    assert_code(&o, 1);
    let j = json(&o);
    let fe = &j["dioscope"]["first_error"];
    assert_eq!(fe["errno"], 5, "{fe}");
    assert_eq!(fe["path"], lo.path());
    assert!(fe["offset"].as_u64().unwrap() < 32 << 20);
    assert!(
        fe["hint"].as_str().unwrap().contains("is now 0 bytes"),
        "{fe}"
    );
    assert_eq!(j["dioscope"]["partial"], true);
}

#[test]
fn failing_backing_store_is_an_eio_with_its_offset() {
    if !root_with(&["losetup", "mkfs.ext4", "xfs_io"]) {
        return;
    }
    // A loop device whose image lives on a filesystem that is then shut
    // down: the loop driver's I/O to the image fails, as a dying disk does.
    let outer = MountedFs::new(64 << 20, "ext4");
    let inner = LoopDev::new(outer.path(), 16 << 20, &["--direct-io=off"]);
    let c = spawn(
        outer.path(),
        &[
            "--name=w",
            &format!("--filename={}", inner.path()),
            "--rw=randwrite",
            "--direct=1",
            "--ioengine=psync",
            "--time_based",
            "--runtime=30",
            "--output-format=json",
        ],
    );
    wait_running(&c, "w", true);
    sh(
        "xfs_io",
        &["-x", "-c", "shutdown", outer.path().to_str().unwrap()],
    );
    let o = c.wait_with_output().unwrap();
    assert_code(&o, 1);
    let j = json(&o);
    let fe = &j["dioscope"]["first_error"];
    assert_eq!(fe["errno"], 5, "{fe}");
    assert_eq!(fe["direction"], "write");
    assert!(fe["hint"].as_str().unwrap().contains("dmesg"), "{fe}");
    assert!(j["jobs"][0]["write"]["total_ios"].as_u64().unwrap() > 0);
    let e = stderr(&o);
    assert!(
        e.contains(&format!("at offset {} of {}", fe["offset"], inner.path()))
            && e.contains("Input/output error"),
        "{e}"
    );
    drop(inner);
}

/// Run dioscope as `nobody` (uid 65534).
fn run_as_nobody(dir: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("setpriv")
}

fn world_readable_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

#[test]
fn permission_denied_on_a_file_names_the_path() {
    if !root_with(&["setpriv"]) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let d = world_readable_dir();
    let f = d.path().join("root-only.dat");
    std::fs::write(&f, vec![1u8; 1 << 20]).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = run_as_nobody(
        d.path(),
        &["--name=p", "--filename=root-only.dat", "--rw=read"],
    );
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(
        e.contains("root-only.dat: permission denied (EACCES) opening it read-only")
            && e.contains("run as a user who may"),
        "{e}"
    );
    assert_eq!(std::fs::read(&f).unwrap().len(), 1 << 20);
    assert_eq!(entries(d.path()), vec!["root-only.dat"]);
}

#[test]
fn permission_denied_on_a_device_names_the_device() {
    if !root_with(&["setpriv", "losetup"]) {
        return;
    }
    let d = world_readable_dir();
    let lo = LoopDev::new(d.path(), 8 << 20, &[]);
    // Loop devices are root:disk 0660; nobody is in neither.
    let o = run_as_nobody(
        d.path(),
        &[
            "--name=p",
            &format!("--filename={}", lo.path()),
            "--rw=read",
        ],
    );
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{}: permission denied (EACCES) opening it read-only",
            lo.path()
        )),
        "{e}"
    );
    // A write job meets the destructive-write guard first, which cannot
    // look at the device either and refuses.
    let o = run_as_nobody(
        d.path(),
        &[
            "--name=p",
            &format!("--filename={}", lo.path()),
            "--rw=write",
        ],
    );
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(
        e.contains(&format!("refusing to write to {}", lo.path()))
            && e.contains("Permission denied"),
        "{e}"
    );
}

#[test]
fn permission_denied_creating_a_file_leaves_nothing() {
    if !root_with(&["setpriv"]) {
        return;
    }
    let d = world_readable_dir();
    let o = run_as_nobody(d.path(), &["--name=p", "--filename=new.dat", "--size=1m"]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("new.dat: permission denied (EACCES) creating it"),
        "{}",
        stderr(&o)
    );
    assert!(entries(d.path()).is_empty());
}

#[test]
fn device_smaller_than_size_is_refused_before_io() {
    if !root_with(&["losetup"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    let o = run_in(
        d.path(),
        &[
            "--name=s",
            &format!("--filename={}", lo.path()),
            "--size=32m",
            "--rw=read",
        ],
    );
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{} holds 16777216 bytes but the job needs 33554432",
            lo.path()
        )) && e.contains("lower size="),
        "{e}"
    );
}

#[test]
fn bad_input_after_layout_removes_the_file_it_created() {
    // Two files: the first is laid out, the second job's bs is misaligned.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("two.fio"),
        "[a]\nfilename=a.dat\nsize=1m\ndirect=1\n[b]\nfilename=b.dat\nsize=1m\nbs=1000\ndirect=1\n",
    )
    .unwrap();
    let o = run_in(d.path(), &["two.fio"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("bs=1000"), "{}", stderr(&o));
    assert_eq!(entries(d.path()), vec!["two.fio"], "nothing written");
}

#[test]
fn missing_directory_is_named() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &["--name=x", "--filename=nodir/f.dat", "--size=1m"],
    );
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("directory nodir does not exist"),
        "{}",
        stderr(&o)
    );
    assert!(entries(d.path()).is_empty());
}

#[test]
fn missing_device_with_a_size_creates_no_file_in_dev() {
    let p = "/dev/dioscope-no-such-device";
    let o = run_in(
        Path::new("."),
        &["--name=x", &format!("--filename={p}"), "--size=1m"],
    );
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains(&format!("{p}: no such device")),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(p).exists(), "no regular file made in /dev");
}

#[test]
fn writing_to_a_formatted_or_mounted_device_is_refused_and_the_fs_survives() {
    if !root_with(&["losetup", "mkfs.ext4", "e2fsck"]) {
        return;
    }
    let fs = MountedFs::new(32 << 20, "ext4");
    std::fs::write(fs.path().join("keep.txt"), b"still here").unwrap();
    let dev = fs.lo.path().to_string();
    let write = |extra: &[&str]| {
        let mut a = vec!["--name=w", "--rw=write", "--size=1m", "--direct=1"];
        let f = format!("--filename={dev}");
        a.push(&f);
        a.extend_from_slice(extra);
        run_in(Path::new("."), &a)
    };
    let o = write(&[]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains(&format!("refusing to write to {dev}: it is mounted on")),
        "{}",
        stderr(&o)
    );
    sh("umount", &[fs.path().to_str().unwrap()]);
    let o = write(&[]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("carries a signature (ext4)")
            && stderr(&o).contains("--destroy-data-on="),
        "{}",
        stderr(&o)
    );
    // Nothing was written: the filesystem checks clean and keeps its file.
    sh("e2fsck", &["-fn", &dev]);
    sh("mount", &[&dev, fs.path().to_str().unwrap()]);
    assert_eq!(
        std::fs::read(fs.path().join("keep.txt")).unwrap(),
        b"still here"
    );
}
