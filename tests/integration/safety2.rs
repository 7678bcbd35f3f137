//! The guard, round two (issue 10): end to end through the binary, on real
//! loop devices. Every test owns its devices (dropped even on panic) and
//! checks the data it protects is still there afterwards, not only the exit
//! status.

use crate::common::*;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn ready(tools: &[&str]) -> bool {
    let ok = is_root() && tools.iter().all(|t| have_tool(t));
    can_run(&format!("root and {}", tools.join(", ")), ok)
}

/// A loop device over any backing (a device, a file, with options);
/// detached on drop.
struct Attached(PathBuf);

impl Attached {
    fn new(backing: &str, extra: &[&str]) -> Attached {
        let mut args = vec!["-f", "--show"];
        args.extend_from_slice(extra);
        args.push(backing);
        Attached(PathBuf::from(sh("losetup", &args).trim()))
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

/// The ext2/3/4 superblock magic is still at 1024 + 0x38.
fn ext_intact(dev: &str) -> bool {
    let mut b = [0u8; 2];
    let f = std::fs::File::open(dev).unwrap();
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut b, 1024 + 0x38).unwrap();
    b == [0x53, 0xef]
}

fn write_args(target: &str) -> Vec<String> {
    [
        "--name=w",
        &format!("--filename={target}"),
        "--rw=write",
        "--bs=64k",
        "--size=1m",
        "--ioengine=psync",
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_write(dir: &Path, target: &str, extra: &[&str]) -> std::process::Output {
    let mut a = write_args(target);
    a.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    run_in(dir, &a)
}

// ---- Principle 1: an override covers the device / job it names only ----

#[test]
fn p1_allow_mounted_write_in_one_job_does_not_cover_another() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let m = MountedFs::new(32 << 20, "ext4");
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("plain"), vec![7u8; 1 << 20]).unwrap();
    let job = format!(
        "[a]\nfilename=plain\nrw=read\nsize=1m\nallow_mounted_write=1\n\
         [b]\nfilename={}\nrw=write\nbs=64k\nsize=1m\nioengine=psync\n",
        m.lo.path()
    );
    std::fs::write(d.path().join("j.fio"), job).unwrap();
    let o = run_in(d.path(), &["j.fio", "--output-format=json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("mounted"), "{}", stderr(&o));
    assert!(ext_intact(m.lo.path()), "the mounted ext4 was overwritten");
}

#[test]
fn p1_allow_mounted_write_in_global_covers_the_jobs_below() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    sh("mkfs.ext4", &["-q", "-F", lo.path()]);
    let job = format!(
        "[global]\nallow_mounted_write=1\n[b]\nfilename={}\nrw=write\nbs=64k\nsize=1m\nioengine=psync\n",
        lo.path()
    );
    std::fs::write(d.path().join("j.fio"), job).unwrap();
    let o = run_in(d.path(), &["j.fio", "--output-format=json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

// ---- Principle 2: decide on the descriptor that is written ----

/// A symlink flipped between a blank file and a formatted device, as fast as
/// a thread can rename, while dioscope writes "the file" again and again:
/// the device must never be written.
#[test]
fn p2_symlink_flipped_to_a_device_never_gets_it_written() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    sh("mkfs.ext4", &["-q", "-F", lo.path()]);
    let blank = d.path().join("blank");
    std::fs::write(&blank, vec![0u8; 1 << 20]).unwrap();
    let link = d.path().join("target");
    symlink(&blank, &link).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (stop, link, blank, dev) = (stop.clone(), link.clone(), blank.clone(), lo.dev.clone());
        std::thread::spawn(move || {
            let tmp = link.with_extension("tmp");
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let to = if i.is_multiple_of(2) { &dev } else { &blank };
                let _ = std::fs::remove_file(&tmp);
                if symlink(to, &tmp).is_ok() {
                    let _ = std::fs::rename(&tmp, &link);
                }
                i += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let start = Instant::now();
    let mut attempts = 0;
    let mut wrote_file = 0;
    let mut broken = false;
    while attempts < 60 && start.elapsed() < Duration::from_secs(45) {
        attempts += 1;
        let o = run_write(d.path(), "target", &[]);
        if o.status.code() == Some(0) {
            wrote_file += 1;
        }
        if !ext_intact(lo.path()) {
            broken = true;
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    assert!(
        !broken,
        "the formatted device was overwritten through the flipped symlink (attempt {attempts})"
    );
    eprintln!("{attempts} attempts, {wrote_file} wrote the blank file");
}

// ---- Principle 3: up and down the whole stack ----

#[test]
fn p3_loop_with_offset_over_a_mounted_ext4_is_refused() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let m = MountedFs::new(32 << 20, "ext4");
    let upper = Attached::new(m.lo.path(), &["-o", "3145728"]);
    let d = tempfile::tempdir().unwrap();
    let o = run_write(d.path(), upper.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("mounted"), "{}", stderr(&o));
}

#[test]
fn p3_image_file_behind_a_mounted_loop_device_is_refused() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let m = MountedFs::new(32 << 20, "ext4");
    let d = tempfile::tempdir().unwrap();
    let img = m.lo.image.to_str().unwrap().to_string();
    let o = run_write(d.path(), &img, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(m.lo.path()) && stderr(&o).contains("mounted"),
        "{}",
        stderr(&o)
    );
    assert!(ext_intact(m.lo.path()));
}

#[test]
fn p3_whole_disk_is_refused_while_a_partition_holds_ext4() {
    if !ready(&["losetup", "mkfs.ext4", "sfdisk", "partx"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 32 << 20, &["-P"]);
    let o = Command::new("sfdisk")
        .arg(lo.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"label: dos\n,16M,L\n")?;
            c.wait()
        })
        .unwrap();
    assert!(o.success());
    let p1 = format!("{}p1", lo.path());
    if !Path::new(&p1).exists() {
        let _ = Command::new("partx").args(["-a", lo.path()]).status();
    }
    assert!(Path::new(&p1).exists(), "no partition node {p1}");
    sh("mkfs.ext4", &["-q", "-F", &p1]);
    // Wipe the partition table: the kernel still has the partition, and the
    // partition still holds ext4.
    sh(
        "dd",
        &[
            "if=/dev/zero",
            &format!("of={}", lo.path()),
            "bs=512",
            "count=1",
            "conv=notrunc",
        ],
    );
    let o = run_write(d.path(), lo.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("ext4"), "{}", stderr(&o));
    assert!(ext_intact(&p1));
}

#[test]
fn p3_scratch_loop_over_a_blank_image_stays_writable() {
    if !ready(&["losetup"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    let o = run_write(d.path(), lo.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // And a loop with offset over it, too.
    let upper = Attached::new(lo.path(), &["-o", "1048576"]);
    let o = run_write(d.path(), upper.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

// ---- Principle 4: fail closed ----

/// A directory holding a `blkid` that is not util-linux's.
fn fake_blkid(script: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("blkid");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn run_with_path(dir: &Path, path_first: &Path, args: &[String]) -> std::process::Output {
    let mut c = Command::new(bin());
    let path = format!(
        "{}:{}",
        path_first.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.args(args).current_dir(dir).env("PATH", path);
    output_within(c, Duration::from_secs(60))
}

#[test]
fn p4_a_blkid_that_is_not_util_linux_is_a_failed_check() {
    if !ready(&["losetup"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    for script in [
        "#!/bin/sh\nexit 2\n",
        "#!/bin/sh\necho 'something else'\nexit 0\n",
        "#!/nonexistent/interpreter\n",
    ] {
        let fake = fake_blkid(script);
        let o = run_with_path(d.path(), fake.path(), &write_args(lo.path()));
        assert_eq!(o.status.code(), Some(2), "{script}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("blkid") && e.contains("--destroy-data-on"),
            "{script}: {e}"
        );
    }
}

#[test]
fn p4_vfat_and_squashfs_are_refused_without_a_working_blkid() {
    if !ready(&["losetup", "mkfs.vfat", "mksquashfs"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let fake = fake_blkid("#!/nonexistent/interpreter\n");
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    sh("mkfs.vfat", &[lo.path()]);
    let o = run_with_path(d.path(), fake.path(), &write_args(lo.path()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("f"), b"data").unwrap();
    let sq = d.path().join("sq.img");
    sh(
        "mksquashfs",
        &[
            src.path().to_str().unwrap(),
            sq.to_str().unwrap(),
            "-quiet",
            "-noappend",
        ],
    );
    let lo2 = Attached::new(sq.to_str().unwrap(), &[]);
    // A squashfs image is small: write what it has.
    let mut a = write_args(lo2.path());
    a.retain(|s| !s.starts_with("--size") && !s.starts_with("--bs"));
    a.push("--bs=4k".into());
    let o = run_with_path(d.path(), fake.path(), &a);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("squashfs"), "{}", stderr(&o));
}

#[test]
fn p4_gpt_backup_header_alone_is_refused() {
    if !ready(&["losetup", "sgdisk"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    sh("sgdisk", &["-n", "1:2048:+4M", lo.path()]);
    // Wipe the protective MBR and the primary header: only the backup at the
    // end of the disk is left (wipefs still lists it).
    sh(
        "dd",
        &[
            "if=/dev/zero",
            &format!("of={}", lo.path()),
            "bs=512",
            "count=34",
            "conv=notrunc",
        ],
    );
    let o = run_write(d.path(), lo.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("gpt"), "{}", stderr(&o));
}

#[test]
fn p4_a_process_mapping_the_device_counts_as_a_user() {
    // Python's own mmap module keeps a duplicate descriptor; map through
    // libc and close the only descriptor, so nothing but the mapping is left.
    if !ready(&["losetup", "python3"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    let script = format!(
        "import ctypes,os,time\nc=ctypes.CDLL(None,use_errno=True)\nc.mmap.restype=ctypes.c_void_p\nc.mmap.argtypes=[ctypes.c_void_p,ctypes.c_size_t,ctypes.c_int,ctypes.c_int,ctypes.c_int,ctypes.c_long]\nfd=os.open('{}',os.O_RDONLY)\na=c.mmap(None,4096,1,1,fd,0)\nassert a not in (None,ctypes.c_void_p(-1).value)\nos.close(fd)\nprint('ok',flush=True)\ntime.sleep(60)\n",
        lo.path()
    );
    let mut child = Command::new("python3")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    struct K(std::process::Child);
    impl Drop for K {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut out = child.stdout.take().unwrap();
    let child = K(child);
    let mut b = [0u8; 2];
    std::io::Read::read_exact(&mut out, &mut b).unwrap();
    let o = run_write(d.path(), lo.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&child.0.id().to_string()),
        "{}",
        stderr(&o)
    );
}

// ---- Principle 5: remove only what dioscope created, by identity ----

#[test]
fn p5_a_user_file_put_at_the_scratch_path_mid_run_survives() {
    if !can_run("root", is_root()) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut c = Command::new(bin());
    c.current_dir(d.path()).args([
        "--name=s",
        "--filename=s.dat",
        "--size=4m",
        "--rw=randread",
        "--ioengine=psync",
        "--time_based",
        "--runtime=2",
        "--unlink=1",
        "--output-format=json",
    ]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let pid = child.id();
    wait_for("the worker", 30, || worker_io(pid, "s").is_some());
    // Swap the scratch file for a user's file at the same path.
    std::fs::rename(d.path().join("s.dat"), d.path().join("moved.dat")).unwrap();
    std::fs::write(d.path().join("s.dat"), b"user data").unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
    assert_eq!(
        std::fs::read(d.path().join("s.dat")).unwrap(),
        b"user data",
        "the user's file at the scratch path was removed"
    );
}

#[test]
fn p5_user_files_named_like_result_temporaries_survive() {
    let d = tempfile::tempdir().unwrap();
    // A pid that is surely gone.
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let names = [
        format!(".r.json.tmp.{dead}"),
        format!(".r.json.dioscope-tmp.{dead}.1"),
        format!(".r.json.dioscope-tmp.{dead}.123456789"),
    ];
    for n in &names {
        std::fs::write(d.path().join(n), b"mine").unwrap();
    }
    let o = run_in(
        d.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--output=r.json",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for n in &names {
        assert_eq!(
            std::fs::read(d.path().join(n)).ok().as_deref(),
            Some(&b"mine"[..]),
            "{n} was removed"
        );
    }
}

// ---- Principle 6: the result file never hurts anything ----

fn read_job(target: &str, output: &str) -> Vec<String> {
    [
        "--name=r",
        &format!("--filename={target}"),
        "--rw=read",
        "--size=1m",
        "--ioengine=psync",
        &format!("--output={output}"),
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_strs(dir: &Path, a: &[String]) -> std::process::Output {
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    run_in(dir, &a)
}

#[test]
fn p6_output_resolving_to_a_target_is_refused_before_io() {
    let d = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(d.path().join("data.dat"), &data).unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    symlink(d.path().join("data.dat"), d.path().join("link.json")).unwrap();
    for out in ["data.dat", "./sub/../data.dat", "link.json"] {
        let o = run_strs(d.path(), &read_job("data.dat", out));
        assert_eq!(o.status.code(), Some(2), "{out}: {}", stderr(&o));
        assert!(stderr(&o).contains("--output"), "{out}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(d.path().join("data.dat")).unwrap(),
            data,
            "{out}: the target was replaced by the report"
        );
    }
}

#[test]
fn p6_directories_fifos_and_sockets_are_refused_as_output() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("data.dat"), vec![1u8; 1 << 20]).unwrap();
    std::fs::create_dir(d.path().join("adir")).unwrap();
    sh("mkfifo", &[d.path().join("fifo").to_str().unwrap()]);
    let _sock = std::os::unix::net::UnixListener::bind(d.path().join("sock")).unwrap();
    for out in ["adir", "fifo", "sock"] {
        let o = run_strs(d.path(), &read_job("data.dat", out));
        assert_eq!(o.status.code(), Some(2), "{out}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{out}: ran anyway");
    }
    use std::os::unix::fs::FileTypeExt;
    let ft = std::fs::symlink_metadata(d.path().join("fifo"))
        .unwrap()
        .file_type();
    assert!(ft.is_fifo(), "the FIFO was replaced");
    assert!(d.path().join("adir").is_dir());
}

#[test]
fn p6_dev_null_is_a_discard_and_stays_a_device() {
    // Issue 23: /dev/null is accepted as a discard (was refused), and is
    // never replaced by a regular file; other device nodes stay refused.
    if !ready(&["unshare", "mknod"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("data.dat"), vec![1u8; 1 << 20]).unwrap();
    let o = in_private_dev(
        d.path(),
        "\"$DIOSCOPE\" --name=r --filename=data.dat --rw=read --size=1m --output=/dev/null \
         --output-format=json; echo \"exit=$?\"; \"$DIOSCOPE\" --name=r --filename=data.dat \
         --rw=read --size=1m --output=/dev/zero --output-format=json; echo \"exit=$?\"; \
         stat -c %F /dev/null /dev/zero; ls -a /dev | tr '\\n' ' '",
    );
    let out = stdout(&o);
    assert!(out.contains("exit=0\nexit=2"), "{out} {}", stderr(&o));
    assert_eq!(out.matches("character special file").count(), 2, "{out}");
    assert!(
        !out.contains(".null") && !out.contains(".zero"),
        "a temporary file was left in /dev: {out}"
    );
}

#[test]
fn p6_no_regular_file_is_created_in_dev_through_symlinks_or_dotdot() {
    if !ready(&["unshare", "mknod"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("data.dat"), vec![1u8; 1 << 20]).unwrap();
    symlink("/dev", d.path().join("devlink")).unwrap();
    let depth = d.path().components().count();
    let dotdot = format!("{}dev/typo.json", "../".repeat(depth));
    let o = in_private_dev(
        d.path(),
        &format!(
            "for out in devlink/typo.json {dotdot} /dev/typo.json; do \
             \"$DIOSCOPE\" --name=r --filename=data.dat --rw=read --size=1m --output=$out \
             --output-format=json >/dev/null; echo \"exit=$?\"; done; ls -a /dev | tr '\\n' ' '"
        ),
    );
    let out = stdout(&o);
    assert_eq!(out.matches("exit=2").count(), 3, "{out} {}", stderr(&o));
    assert!(!out.contains("typo"), "a file was created in /dev: {out}");
}

#[test]
fn p6_standard_output_forms_are_written_directly() {
    if !ready(&["unshare", "mknod"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("data.dat"), vec![1u8; 1 << 20]).unwrap();
    for out in ["-", "/dev/stdout", "/dev/fd/1"] {
        let o = in_private_dev(
            d.path(),
            &format!(
                "\"$DIOSCOPE\" --name=r --filename=data.dat --rw=read --size=1m \
                 --output={out} --output-format=json | head -c 100000; echo; \
                 echo \"exit=${{PIPESTATUS:-?}}\"; stat -c %F /dev/stdout; ls -a"
            ),
        );
        let text = stdout(&o);
        assert!(
            text.contains("\"jobs\""),
            "{out}: no JSON on stdout: {text}"
        );
        assert!(
            text.contains("symbolic link"),
            "{out}: /dev/stdout replaced: {text}"
        );
        assert!(
            !text.lines().any(|l| l == "-"),
            "{out}: a file named - was made"
        );
    }
}

#[test]
fn p6_unwritable_output_location_is_found_before_the_run() {
    if !ready(&["setpriv"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(d.path().join("data.dat"), vec![1u8; 1 << 20]).unwrap();
    std::fs::set_permissions(
        d.path().join("data.dat"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let start = Instant::now();
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        bin(),
        "--name=r",
        "--filename=data.dat",
        "--rw=read",
        "--size=1m",
        "--ioengine=psync",
        "--time_based",
        "--runtime=3",
        "--output=r.json",
        "--output-format=json",
    ])
    .current_dir(d.path());
    let o = output_within(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "the run went ahead before the output location was checked"
    );
    assert!(stderr(&o).contains("--output=r.json"), "{}", stderr(&o));
}

#[test]
fn p6_replacing_a_result_keeps_its_mode_and_owner() {
    if !can_run("root", is_root()) {
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.json");
    std::fs::write(&r, b"old").unwrap();
    std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::chown(&r, Some(65534), Some(65534)).unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--output=r.json",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = std::fs::metadata(&r).unwrap();
    assert_ne!(std::fs::read(&r).unwrap(), b"old");
    assert_eq!(m.mode() & 0o7777, 0o640);
    assert_eq!((m.uid(), m.gid()), (65534, 65534));
}

// ---- Principle 7: validate everything before anything is written ----

#[test]
fn p7_a_refused_target_in_a_later_job_stops_the_layout_of_earlier_ones() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &[]);
    sh("mkfs.ext4", &["-q", "-F", lo.path()]);
    // A user's short file that job [a] would extend.
    let user: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.path().join("a.dat"), &user).unwrap();
    let job = format!(
        "[a]\nfilename=a.dat\nrw=write\nsize=4m\n[b]\nstonewall\nfilename={}\nrw=write\nsize=1m\n",
        lo.path()
    );
    std::fs::write(d.path().join("j.fio"), job).unwrap();
    let o = run_in(d.path(), &["j.fio", "--output-format=json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let now = std::fs::read(d.path().join("a.dat")).unwrap();
    assert!(
        now == user,
        "job [a]'s file was laid out before job [b]'s target was refused ({} bytes now, {} before)",
        now.len(),
        user.len()
    );
    assert!(ext_intact(lo.path()));
}

#[test]
fn p7_absurd_values_are_refused_before_io_with_the_limit_named() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f.dat"), vec![1u8; 1 << 20]).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--ioengine=io_uring", "--iodepth=100000"], "32768"),
        (&["--ioengine=null", "--numjobs=100000"], "worker threads"),
        (&["--cpus_allowed=0,1000"], "online"),
        (
            &["--ioengine=libaio", "--iodepth=60000", "--numjobs=4"],
            "aio-max-nr",
        ),
        (
            &[
                "--offset_increment=4611686018427387904",
                "--numjobs=8",
                "--size=4k",
            ],
            "2^64",
        ),
    ];
    for (extra, want) in cases {
        let mut a = vec![
            "--name=x",
            "--filename=f.dat",
            "--rw=read",
            "--runtime=1",
            "--output-format=json",
        ];
        a.extend_from_slice(extra);
        let o = run_in(d.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(want) && !stderr(&o).contains("panicked"),
            "{extra:?}: {}",
            stderr(&o)
        );
    }
}

/// Run dioscope in `dir` without CAP_IPC_LOCK and with a locked-memory
/// limit of `memlock` bytes: the kernel then charges io_uring's ring memory
/// to that limit, and a large ring fails `io_uring_setup` with ENOMEM inside
/// the worker (preflight cannot know the ring's size in pages).
fn run_memlocked(dir: &Path, memlock: u64, args: &[&str]) -> std::process::Output {
    let mut c = Command::new("setpriv");
    c.args([
        "--inh-caps=-ipc_lock",
        "--bounding-set=-ipc_lock",
        "--",
        "prlimit",
    ])
    .arg(format!("--memlock={memlock}"))
    .arg("--")
    .arg(bin())
    .args(args)
    .current_dir(dir);
    output_within(c, Duration::from_secs(60))
}

#[test]
fn p7_an_engine_that_cannot_start_is_a_setup_error_with_its_errno() {
    if !ready(&["setpriv", "prlimit"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let args = |depth: &'static str| {
        vec![
            "--name=a",
            "--filename=new.dat",
            "--ioengine=io_uring",
            depth,
            "--rw=read",
            "--bs=4k",
            "--size=4m",
            "--output-format=json",
        ]
    };
    // The same limit with a one-entry ring runs: the ring is the cause.
    let ok = run_memlocked(d.path(), 65536, &args("--iodepth=1"));
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    std::fs::remove_file(d.path().join("new.dat")).unwrap();
    let o = run_memlocked(d.path(), 65536, &args("--iodepth=4096"));
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for want in [
        "group 0 (job 'a'",
        "io_uring_setup with 4096 entries failed",
        "errno 12",
        "ulimit -l",
        "nothing was run",
    ] {
        assert!(e.contains(want), "no {want:?} in: {e}");
    }
    assert!(!e.contains("offset 0") && !e.contains("panicked"), "{e}");
    assert!(o.stdout.is_empty(), "a result for a run that did not run");
    assert!(
        !d.path().join("new.dat").exists(),
        "the file laid out for the run that could not start stayed"
    );
}

#[test]
fn p7_a_later_group_that_cannot_start_lists_the_groups_that_completed() {
    if !ready(&["setpriv", "prlimit"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let job = "[global]\nbs=4k\nsize=4m\nfilename=g.dat\n\
               [a]\nioengine=psync\nrw=write\n\
               [b]\nstonewall\nioengine=psync\nrw=read\n\
               [c]\nstonewall\nioengine=io_uring\niodepth=4096\nrw=read\n";
    std::fs::write(d.path().join("j.fio"), job).unwrap();
    let o = run_memlocked(d.path(), 65536, &["j.fio", "--output-format=json"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("group 2 (job 'c'") && e.contains("groups completed: 0, 1"),
        "{e}"
    );
    assert!(!e.contains("offset 0") && !e.contains("panicked"), "{e}");
    let v = json(&o);
    let ds = &v["dioscope"];
    assert_eq!(ds["groups_completed"], serde_json::json!([0, 1]), "{ds}");
    assert_eq!(ds["setup_error"]["group"], 2, "{ds}");
    assert_eq!(ds["setup_error"]["job"], "c", "{ds}");
    assert_eq!(ds["setup_error"]["errno"], 12, "{ds}");
    assert_eq!(ds["partial"], true);
    assert_eq!(
        ds["io_errors"], 0,
        "a setup failure counted as an I/O error"
    );
    // Groups 0 and 1 are in the result with their I/O; [c] did none.
    let jobs = v["jobs"].as_array().unwrap();
    let ios = |name: &str| {
        jobs.iter().find(|j| j["jobname"] == name).map(|j| {
            j["read"]["total_ios"].as_u64().unwrap() + j["write"]["total_ios"].as_u64().unwrap()
        })
    };
    assert_eq!(ios("a"), Some(1024), "{v}");
    assert_eq!(ios("b"), Some(1024), "{v}");
    assert!(ios("c").unwrap_or(0) == 0, "{v}");
    // The text result says it too.
    let t = run_memlocked(d.path(), 65536, &["j.fio"]);
    assert_eq!(t.status.code(), Some(1), "{}", stderr(&t));
    assert!(
        stdout(&t).contains("STOPPED by a setup error in group 2 (job 'c')")
            && stdout(&t).contains("Groups completed: 0, 1"),
        "{}",
        stdout(&t)
    );
}

#[test]
fn p7_a_worker_thread_that_cannot_be_spawned_is_a_setup_error() {
    if !ready(&["setpriv", "prlimit"]) {
        return;
    }
    // A user near `ulimit -u`: its other processes (sleepers) leave room
    // for two of six workers. Preflight passes (6 <= half the limit); the
    // third thread spawn fails with EAGAIN. A uid of its own per run keeps
    // other processes out of the count.
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let exe = dir.join("dioscope");
    std::fs::copy(bin(), &exe).unwrap();
    let uid = 50_000 + std::process::id() % 10_000;
    let script = format!(
        "pids=; for i in 1 2 3 4 5 6 7 8; do sleep 60 & pids=\"$pids $!\"; done; \
         prlimit --nproc=12 -- {} --name=n --ioengine=null --size=1m --numjobs=6 \
         --output-format=json; rc=$?; kill $pids; exit $rc",
        exe.display()
    );
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .args(["--clear-groups", "--", "sh", "-c", &script])
        .current_dir(dir);
    let o = output_within(c, Duration::from_secs(60));
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for want in [
        "group 0 (job 'n'",
        "starting a worker thread failed",
        "errno 11",
        "ulimit -u",
    ] {
        assert!(e.contains(want), "no {want:?} in: {e}");
    }
    assert!(!e.contains("panicked"), "{e}");
}

// ---- Principle 8: bounded input ----

fn run_limited(dir: &Path, args: &[&str], secs: u64) -> std::process::Output {
    // An address-space limit turns "reads gigabytes" into a failure.
    let mut c = Command::new("prlimit");
    c.arg("--as=4000000000")
        .arg(bin())
        .args(args)
        .current_dir(dir);
    output_within(c, Duration::from_secs(secs))
}

#[test]
fn p8_endless_and_special_files_as_job_files_are_clear_errors() {
    if !ready(&["prlimit", "mkfifo"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = run_limited(d.path(), &["/dev/zero"], 20);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("/dev/zero"), "{}", stderr(&o));
    // A FIFO as an include: nobody writes to it, so reading it would hang.
    sh("mkfifo", &[d.path().join("fifo").to_str().unwrap()]);
    std::fs::write(
        d.path().join("j.fio"),
        "[a]\ninclude fifo\nioengine=null\nsize=1m\n",
    )
    .unwrap();
    let o = run_limited(d.path(), &["j.fio"], 20);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("fifo"), "{}", stderr(&o));
    // A directory.
    let o = run_limited(d.path(), &["."], 20);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn p8_oversized_job_files_and_include_fan_out_are_refused() {
    if !ready(&["prlimit"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // 8 MiB of comments.
    let big = "# padding padding padding padding padding padding padding padding\n".repeat(130_000);
    std::fs::write(
        d.path().join("big.fio"),
        format!("[a]\nioengine=null\nsize=1m\n{big}"),
    )
    .unwrap();
    let o = run_limited(d.path(), &["big.fio"], 20);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("big.fio"), "{}", stderr(&o));
    // Each level includes the next 16 times: 16^6 reads of the last file.
    for lvl in 0..6 {
        let line = format!("include l{}.inc\n", lvl + 1);
        std::fs::write(d.path().join(format!("l{lvl}.inc")), line.repeat(16)).unwrap();
    }
    std::fs::write(d.path().join("l6.inc"), "bs=4k\n").unwrap();
    std::fs::write(
        d.path().join("fan.fio"),
        "[a]\nioengine=null\nsize=1m\ninclude l0.inc\n",
    )
    .unwrap();
    let start = Instant::now();
    let o = run_limited(d.path(), &["fan.fio"], 30);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("include"), "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn p8_sigterm_during_startdelay_is_honoured_within_a_second() {
    let d = tempfile::tempdir().unwrap();
    let mut c = Command::new(bin());
    c.args([
        "--name=s",
        "--ioengine=null",
        "--size=1m",
        "--startdelay=30",
        "--output-format=json",
    ])
    .current_dir(d.path())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let pid = child.id();
    wait_for("the worker thread", 20, || worker_io(pid, "s").is_some());
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    kill(pid, 15);
    let deadline = Instant::now() + Duration::from_secs(10);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("SIGTERM during startdelay was not honoured within 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "took {:?} to stop",
        t.elapsed()
    );
    assert_eq!(st.code(), Some(128 + 15));
}

// ---- Principle 9: messages name the right thing ----

#[test]
fn p9_a_tmpfs_path_under_dev_is_a_file_not_a_missing_device() {
    if !Path::new("/dev/shm").is_dir() {
        eprintln!("SKIPPED: no /dev/shm");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let p = format!("/dev/shm/dioscope-safety2-{}.dat", std::process::id());
    let o = run_in(
        d.path(),
        &[
            "--name=t",
            &format!("--filename={p}"),
            "--rw=read",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !stderr(&o).contains("no such device") && stderr(&o).contains("size="),
        "{}",
        stderr(&o)
    );
    let o = run_in(
        d.path(),
        &[
            "--name=t",
            &format!("--filename={p}"),
            "--size=1m",
            "--rw=read",
            "--unlink=1",
            "--output-format=json",
        ],
    );
    let _ = std::fs::remove_file(&p);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn p9_relative_paths_into_dev_are_device_paths() {
    let d = tempfile::tempdir().unwrap();
    let depth = d.path().components().count();
    let rel = format!(
        "{}dev/dioscope-typo-{}",
        "../".repeat(depth),
        std::process::id()
    );
    symlink("/dev", d.path().join("devlink")).unwrap();
    for p in [
        rel.clone(),
        format!("devlink/dioscope-typo-{}", std::process::id()),
    ] {
        let o = run_in(
            d.path(),
            &[
                "--name=t",
                &format!("--filename={p}"),
                "--size=1m",
                "--rw=write",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{p}: {}", stderr(&o));
        assert!(stderr(&o).contains("no such device"), "{p}: {}", stderr(&o));
    }
    let made = Path::new("/dev").join(format!("dioscope-typo-{}", std::process::id()));
    let existed = made.exists();
    let _ = std::fs::remove_file(&made);
    assert!(!existed, "a regular file was created in /dev");
}

#[test]
fn p9_read_only_device_and_active_swap_file_are_refused_with_that_reason() {
    if !ready(&["losetup", "blockdev", "mkswap", "swapon"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lo = LoopDev::new(d.path(), 16 << 20, &["-r"]);
    let o = run_write(d.path(), lo.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("read-only"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("run as"), "{}", stderr(&o));

    let swap = d.path().join("swapfile");
    let f = std::fs::File::create(&swap).unwrap();
    // swapon wants real blocks, not holes.
    std::os::unix::fs::FileExt::write_all_at(&f, &vec![0u8; 16 << 20], 0).unwrap();
    drop(f);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&swap, std::fs::Permissions::from_mode(0o600)).unwrap();
    sh("mkswap", &[swap.to_str().unwrap()]);
    struct Off(PathBuf);
    impl Drop for Off {
        fn drop(&mut self) {
            let _ = Command::new("swapoff").arg(&self.0).status();
        }
    }
    if !Command::new("swapon")
        .arg(&swap)
        .status()
        .unwrap()
        .success()
    {
        assert!(!in_ci(), "swapon on a file failed in CI");
        eprintln!("SKIPPED: swapon on a file is not allowed here");
        return;
    }
    let _off = Off(swap.clone());
    let o = run_write(d.path(), swap.to_str().unwrap(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("swap"), "{}", stderr(&o));
}

#[test]
fn p9_eperm_on_an_immutable_file_is_not_run_as_root() {
    if !ready(&["chattr"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("frozen.dat");
    std::fs::write(&f, vec![1u8; 1 << 20]).unwrap();
    struct Unfreeze(PathBuf);
    impl Drop for Unfreeze {
        fn drop(&mut self) {
            let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
        }
    }
    if !Command::new("chattr")
        .arg("+i")
        .arg(&f)
        .status()
        .unwrap()
        .success()
    {
        assert!(!in_ci(), "chattr +i failed in CI");
        eprintln!("SKIPPED: the filesystem has no immutable flag");
        return;
    }
    let _u = Unfreeze(f.clone());
    let o = run_write(d.path(), "frozen.dat", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(!e.contains("run as"), "{e}");
    assert!(e.contains("immutable"), "{e}");
}

#[test]
fn p9_a_newline_in_a_file_name_cannot_forge_report_lines() {
    let d = tempfile::tempdir().unwrap();
    let name = "evil\nREAD: forged\n.dat";
    std::fs::write(d.path().join(name), vec![1u8; 1 << 20]).unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=t",
            &format!("--filename={name}"),
            "--rw=read",
            "--size=1m",
        ],
    );
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        !all.lines().any(|l| l.starts_with("READ: forged")),
        "a forged line: {all}"
    );
    assert_eq!(o.status.code(), Some(2), "{all}");
    assert!(all.contains("control character"), "{all}");
}

#[test]
fn p9_enospc_on_a_loop_device_names_the_backing_filesystem() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    // A 64 MiB sparse image on a 32 MiB ext4: writes through the loop
    // device run out of space in the filesystem holding the image.
    let m = MountedFs::new(32 << 20, "ext4");
    let img = m.path().join("big.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let up = Attached::new(img.to_str().unwrap(), &["--direct-io=on"]);
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "--name=w",
            &format!("--filename={}", up.path()),
            "--rw=write",
            "--bs=1m",
            "--size=60m",
            "--direct=1",
            "--ioengine=psync",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&img.display().to_string()) || e.contains(&m.path().display().to_string()),
        "the hint does not name the backing file's filesystem: {e}"
    );
}

#[test]
fn p3_reading_a_mounted_device_is_allowed_without_claiming_it() {
    if !ready(&["losetup", "mkfs.ext4"]) {
        return;
    }
    let m = MountedFs::new(32 << 20, "ext4");
    let d = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let o = run_in(
        d.path(),
        &[
            "--name=r",
            &format!("--filename={}", m.lo.path()),
            "--rw=read",
            "--size=1m",
            "--ioengine=psync",
            "--output-format=json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // No O_EXCL claim is attempted (and retried) for a read.
    assert!(t.elapsed() < Duration::from_secs(5));
}
