//! The destructive-write guard against real loop devices.
//!
//! Every test needs root (loop devices, mkfs, mount) and skips with a message
//! otherwise, except in CI (`CI` set), where a missing prerequisite fails. Each loop device, mount, swap area and child process lives in a
//! guard whose Drop tears it down, so a failing assertion leaves nothing
//! attached or mounted behind.

use dioscope_core::safety::{
    check_block_device_write, other_openers, signatures, SafetyError, Signature, WriteGuard,
};
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A prerequisite is missing: fail in CI (a skipped check must not pass for
/// a green one), else say so; the caller then returns.
fn skip(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("CI must provide what this test needs (scripts/install-deps.sh): {why}");
    }
    eprintln!("skipping: {why}");
}

macro_rules! require_root {
    () => {
        if !is_root() {
            skip("needs root to create loop devices, mkfs and mount");
            return;
        }
    };
}

/// Whether an external tool is installed (sbin directories included).
fn have(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .any(|d| d.join(tool).is_file())
}

/// Run a command to completion; panic with its stderr on failure.
fn run(cmd: &str, args: &[&str]) -> String {
    run_stdin(cmd, args, None)
}

fn run_stdin(cmd: &str, args: &[&str], input: Option<&str>) -> String {
    use std::io::Write;
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    if let Some(text) = input {
        stdin.write_all(text.as_bytes()).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A sparse, zero-filled image file of `mib` MiB in its own temp directory.
struct Image {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn image(mib: u64) -> Image {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("disk.img");
    File::create(&path).unwrap().set_len(mib << 20).unwrap();
    Image { _dir: dir, path }
}

/// An attached loop device; Drop turns swap off, unmounts, then detaches.
struct Loop {
    dev: PathBuf,
    mounts: Vec<PathBuf>,
    swaps: Vec<PathBuf>,
}

impl Loop {
    fn attach(backing: &Path) -> Loop {
        Loop::attach_with(backing, &[])
    }

    /// `losetup -f --show` races with other users of free loop devices: the
    /// loser keeps the device it lost open while it sleeps and retries, which
    /// other tests would see as an opener. Our own tests take turns; other
    /// users of the machine can still race, hence the retries.
    fn attach_with(backing: &Path, extra: &[&str]) -> Loop {
        static LOSETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _turn = LOSETUP.lock().unwrap_or_else(|e| e.into_inner());
        let backing = backing.to_str().unwrap();
        let mut last = String::new();
        for _ in 0..5 {
            let out = Command::new("losetup")
                .args(["-f", "--show"])
                .args(extra)
                .arg(backing)
                .output()
                .unwrap();
            if out.status.success() {
                let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
                return Loop {
                    dev: PathBuf::from(dev),
                    mounts: Vec::new(),
                    swaps: Vec::new(),
                };
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
        }
        panic!("losetup {backing}: {last}");
    }

    /// Attach with partition scanning. This kernel may lack partition
    /// parsers (no CONFIG_EFI_PARTITION), so add the partitions from user
    /// space with `partx` when the kernel did not.
    fn attach_partitioned(backing: &Path) -> Loop {
        let l = Loop::attach_with(backing, &["-P"]);
        if !Path::new(&l.part_path(1)).exists() {
            run("partx", &["-a", l.path()]);
        }
        assert!(
            Path::new(&l.part_path(1)).exists(),
            "no partitions on {}",
            l.path()
        );
        l
    }

    fn path(&self) -> &str {
        self.dev.to_str().unwrap()
    }

    fn part_path(&self, n: u32) -> String {
        format!("{}p{n}", self.path())
    }

    fn mount(&mut self, what: &str, on: &Path) {
        run("mount", &[what, on.to_str().unwrap()]);
        self.mounts.push(on.to_path_buf());
    }

    fn umount_all(&mut self) {
        while let Some(m) = self.mounts.pop() {
            let _ = Command::new("umount").arg(&m).status();
        }
    }

    fn swapon(&mut self) {
        run("swapon", &[self.path()]);
        self.swaps.push(self.dev.clone());
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        for s in self.swaps.drain(..) {
            let _ = Command::new("swapoff").arg(&s).status();
        }
        self.umount_all();
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// A child process, killed and reaped on Drop.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn check(dev: &Path) -> Result<(), SafetyError> {
    check_block_device_write(dev, &WriteGuard::default())
}

/// The signatures a refused check reported, or a panic saying what it did.
fn refused_signatures(dev: &Path) -> Vec<Signature> {
    match check(dev) {
        Err(SafetyError::Signature { found, .. }) => found,
        other => panic!(
            "{}: expected a signature refusal, got {other:?}",
            dev.display()
        ),
    }
}

#[test]
fn blank_loop_passes() {
    require_root!();
    let img = image(16);
    let l = Loop::attach(&img.path);
    assert_eq!(check(&l.dev).map_err(|e| e.to_string()), Ok(()));
    assert!(signatures::probe(&l.dev, true).unwrap().is_empty());
}

/// Each format made by its own tool on an image file: our magic-byte check
/// finds it in the file (no blkid involved), and the guard refuses the loop
/// device over it, naming it, with and without blkid.
#[test]
fn signatures_are_refused_and_named() {
    require_root!();
    type Make = fn(&str);
    let cases: [(&str, u64, Signature, Make); 6] = [
        ("mkfs.ext4", 32, Signature::Ext4, |p| {
            run("mkfs.ext4", &["-q", "-F", p]);
        }),
        // mkfs.xfs refuses filesystems under 300 MiB; the image is sparse.
        ("mkfs.xfs", 320, Signature::Xfs, |p| {
            run("mkfs.xfs", &["-q", "-f", p]);
        }),
        ("mkfs.btrfs", 128, Signature::Btrfs, |p| {
            run("mkfs.btrfs", &["-q", "-f", p]);
        }),
        ("mkswap", 16, Signature::Swap, |p| {
            run("mkswap", &[p]);
        }),
        ("sfdisk", 16, Signature::Gpt, |p| {
            run_stdin("sfdisk", &["-q", p], Some("label: gpt\n,8M\n,\n"));
        }),
        ("sfdisk", 16, Signature::Mbr, |p| {
            run_stdin("sfdisk", &["-q", p], Some("label: dos\n,8M,83\n,,83\n"));
        }),
    ];
    let mut ran = 0;
    for (tool, mib, want, make) in cases {
        if !have(tool) {
            skip(&format!("{want}: {tool} is not installed"));
            continue;
        }
        let img = image(mib);
        make(img.path.to_str().unwrap());

        let in_file = signatures::probe_magic(&img.path).unwrap();
        assert!(
            in_file.contains(&want),
            "{want}: magic check on the image found {in_file:?}"
        );

        let l = Loop::attach(&img.path);
        let found = refused_signatures(&l.dev);
        assert!(found.contains(&want), "{want}: refusal named {found:?}");
        let msg = check(&l.dev).unwrap_err().to_string();
        assert!(msg.contains(want.name()), "{msg}");
        assert!(
            msg.contains(&format!("--destroy-data-on={}", l.path())),
            "{msg}"
        );

        // As if blkid were not installed.
        let own = signatures::probe(&l.dev, false).unwrap();
        assert!(own.contains(&want), "{want}: without blkid found {own:?}");
        if signatures::find_blkid().is_some() {
            let f = File::open(&l.dev).unwrap();
            let len = signatures::size_of(&f).unwrap();
            let theirs = signatures::probe_blkid_fd(&f, 0, len).unwrap();
            assert!(theirs.contains(&want), "{want}: blkid said {theirs:?}");
        }
        ran += 1;
    }
    assert!(ran > 0, "no mkfs tool installed at all");
}

#[test]
fn mounted_device_is_refused_and_left_intact() {
    require_root!();
    if !have("mkfs.ext4") {
        skip("mkfs.ext4 is not installed");
        return;
    }
    let img = image(32);
    run("mkfs.ext4", &["-q", "-F", img.path.to_str().unwrap()]);
    let mnt = tempfile::tempdir().unwrap();
    let mut l = Loop::attach(&img.path);
    let dev = l.path().to_string();
    l.mount(&dev, mnt.path());
    let payload = b"written before the check\n".repeat(100);
    fs::write(mnt.path().join("keep"), &payload).unwrap();

    match check(&l.dev) {
        Err(e @ SafetyError::Mounted { .. }) => {
            let SafetyError::Mounted {
                ref mount_point,
                ref fstype,
                ref member,
                ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(mount_point, mnt.path());
            assert_eq!(fstype, "ext4");
            assert_eq!(member, "it");
            let msg = e.to_string();
            assert!(msg.contains("bad idea"), "{msg}");
            assert!(msg.contains(&format!("--destroy-data-on={dev}")), "{msg}");
        }
        other => panic!("expected Mounted, got {other:?}"),
    }

    // Unmounted, it is still refused, now for its filesystem, and the
    // filesystem is exactly as it was.
    l.umount_all();
    assert!(refused_signatures(&l.dev).contains(&Signature::Ext4));
    if have("e2fsck") {
        run("e2fsck", &["-f", "-n", &dev]);
    }
    l.mount(&dev, mnt.path());
    assert_eq!(fs::read(mnt.path().join("keep")).unwrap(), payload);
}

#[test]
fn mounted_partition_refuses_the_whole_disk() {
    require_root!();
    for tool in ["sfdisk", "partx", "mkfs.ext4"] {
        if !have(tool) {
            skip(&format!("{tool} is not installed"));
            return;
        }
    }
    let img = image(64);
    run_stdin(
        "sfdisk",
        &["-q", img.path.to_str().unwrap()],
        Some("label: gpt\n,24M\n,\n"),
    );
    let mnt = tempfile::tempdir().unwrap();
    let mut l = Loop::attach_partitioned(&img.path);
    let (p1, p2) = (l.part_path(1), l.part_path(2));
    run("mkfs.ext4", &["-q", "-F", &p1]);
    l.mount(&p1, mnt.path());

    match check(&l.dev) {
        Err(SafetyError::Mounted {
            member,
            mount_point,
            ..
        }) => {
            assert_eq!(member, format!("its partition {p1}"));
            assert_eq!(mount_point, mnt.path());
        }
        other => panic!("expected the whole disk refused as mounted, got {other:?}"),
    }
    assert!(matches!(
        check(Path::new(&p1)),
        Err(SafetyError::Mounted { member, .. }) if member == "it"
    ));
    // The untouched sibling partition is free: the guard does not over-refuse.
    assert_eq!(check(Path::new(&p2)).map_err(|e| e.to_string()), Ok(()));
}

#[test]
fn held_open_by_another_process_is_refused_naming_it() {
    require_root!();
    let img = image(16);
    let l = Loop::attach(&img.path);
    // Read-only, so no udev change event is triggered on close.
    let child = Kill(
        Command::new("sleep")
            .arg("30")
            .stdin(File::open(&l.dev).unwrap())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id() as i32;

    match check(&l.dev) {
        Err(e @ SafetyError::OpenedByOthers { .. }) => {
            let msg = e.to_string();
            let SafetyError::OpenedByOthers { openers, .. } = e else {
                unreachable!()
            };
            let o = openers.iter().find(|o| o.pid == pid).unwrap();
            assert_eq!(o.comm, "sleep");
            assert!(!o.writable);
            assert!(
                msg.contains(&format!("pid {pid} (`sleep`, read-only)")),
                "{msg}"
            );
        }
        other => panic!("expected OpenedByOthers, got {other:?}"),
    }

    // Found by device number, also through a symlink to the device.
    let link_dir = tempfile::tempdir().unwrap();
    let link = link_dir.path().join("alias");
    std::os::unix::fs::symlink(&l.dev, &link).unwrap();
    assert!(other_openers(&link).iter().any(|o| o.pid == pid));

    drop(child);
    assert_eq!(check(&l.dev).map_err(|e| e.to_string()), Ok(()));
    // Other tools may open it for a moment (losetup -f opens every loop
    // device), so only our child's absence is certain.
    assert!(!other_openers(&l.dev).iter().any(|o| o.pid == pid));
}

#[test]
fn overrides_pass_only_for_the_named_device() {
    require_root!();
    if !have("mkfs.ext4") {
        skip("mkfs.ext4 is not installed");
        return;
    }
    let img = image(32);
    run("mkfs.ext4", &["-q", "-F", img.path.to_str().unwrap()]);
    let mnt = tempfile::tempdir().unwrap();
    let mut l = Loop::attach(&img.path);
    let other_img = image(16);
    let other = Loop::attach(&other_img.path);
    let link_dir = tempfile::tempdir().unwrap();
    let link = link_dir.path().join("alias");
    std::os::unix::fs::symlink(&l.dev, &link).unwrap();

    let target = l.dev.clone();
    let guard = |allow: bool, list: &[String]| {
        check_block_device_write(
            &target,
            &WriteGuard {
                allow_mounted_write: allow,
                destroy_data_on: list,
            },
        )
    };
    let named = |p: &Path| vec![p.to_str().unwrap().to_string()];

    assert!(guard(false, &[]).is_err());
    assert!(guard(true, &[]).is_ok(), "allow_mounted_write");
    assert!(guard(false, &named(&l.dev)).is_ok(), "destroy_data_on=dev");
    assert!(
        guard(false, &named(&link)).is_ok(),
        "destroy_data_on=symlink"
    );
    assert!(
        matches!(
            guard(false, &named(&other.dev)),
            Err(SafetyError::Signature { .. })
        ),
        "destroy_data_on naming another device must not pass"
    );
    assert!(guard(false, &["/dev/does-not-exist".into()]).is_err());

    // The override also covers a mounted device (the message warns against it).
    let dev = l.path().to_string();
    l.mount(&dev, mnt.path());
    assert!(matches!(
        guard(false, &named(&other.dev)),
        Err(SafetyError::Mounted { .. })
    ));
    assert!(guard(false, &named(&l.dev)).is_ok());
    assert!(guard(true, &[]).is_ok());
}

#[test]
fn a_loop_device_stacked_on_it_is_refused() {
    require_root!();
    let img = image(16);
    let base = Loop::attach(&img.path);
    let top = Loop::attach(&base.dev);
    let top_name = top.dev.file_name().unwrap().to_str().unwrap().to_string();
    match check(&base.dev) {
        Err(SafetyError::Stacked { member, .. }) => {
            assert!(member.contains(&top_name), "{member}");
            assert!(member.contains("loop device over"), "{member}");
        }
        other => panic!("expected Stacked, got {other:?}"),
    }
    drop(top);
    assert_eq!(check(&base.dev).map_err(|e| e.to_string()), Ok(()));
}

#[test]
fn active_swap_is_refused() {
    require_root!();
    if !have("mkswap") || !have("swapon") {
        skip("mkswap/swapon are not installed");
        return;
    }
    let img = image(16);
    let mut l = Loop::attach(&img.path);
    run("mkswap", &[l.path()]);
    l.swapon();
    match check(&l.dev) {
        Err(SafetyError::Swap { swap, member, .. }) => {
            assert_eq!(swap, l.path());
            assert_eq!(member, "it");
        }
        other => panic!("expected Swap, got {other:?}"),
    }
}

/// A mount that our mount namespace cannot see (a container's, say) is still
/// caught: the kernel refuses our exclusive open.
#[test]
fn mounted_in_another_namespace_is_refused_as_busy() {
    require_root!();
    if !have("mkfs.ext4") || !have("unshare") {
        skip("mkfs.ext4/unshare are not installed");
        return;
    }
    use std::io::{BufRead, BufReader};
    let img = image(32);
    run("mkfs.ext4", &["-q", "-F", img.path.to_str().unwrap()]);
    let mnt = tempfile::tempdir().unwrap();
    let l = Loop::attach(&img.path);
    let script = format!(
        "mount {} {} && echo mounted && exec sleep 30",
        l.path(),
        mnt.path().display()
    );
    let mut child = Kill(
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    if line.trim() != "mounted" {
        skip("could not mount in a new mount namespace");
        return;
    }
    let ours = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !ours.contains(mnt.path().to_str().unwrap()),
        "mount leaked into our namespace"
    );
    match check(&l.dev) {
        Err(e @ SafetyError::Busy { .. }) => {
            assert!(e.to_string().contains("another mount namespace"), "{e}");
        }
        other => panic!("expected Busy, got {other:?}"),
    }
}

/// What `wipefs` lists on an image, as (offset, type) rows.
fn wipefs_types(path: &Path) -> Vec<String> {
    let out = Command::new("wipefs")
        .args(["-n", "--noheadings", "-O", "TYPE"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The class test for the built-in probe (no blkid): every format made with
/// its real tool (or, for ZFS, written at its documented offsets) and listed
/// by `wipefs` is found by our magic-byte check alone, under blkid's name.
#[test]
fn builtin_probe_finds_what_wipefs_lists() {
    require_root!();
    type Make = fn(&Path);
    let sh = |c: &str| {
        let st = Command::new("sh").arg("-c").arg(c).status().unwrap();
        assert!(st.success(), "{c}");
    };
    let _ = sh;
    let cases: Vec<(&str, u64, &str, Make)> = vec![
        ("mkfs.ext2", 16, "ext2", |p| {
            run("mkfs.ext2", &["-q", "-F", p.to_str().unwrap()]);
        }),
        ("mkfs.ext3", 16, "ext3", |p| {
            run("mkfs.ext3", &["-q", "-F", p.to_str().unwrap()]);
        }),
        ("mkfs.vfat", 16, "vfat", |p| {
            run("mkfs.vfat", &["-F", "12", p.to_str().unwrap()]);
        }),
        ("mkfs.vfat", 32, "vfat", |p| {
            run("mkfs.vfat", &["-F", "16", p.to_str().unwrap()]);
        }),
        ("mkfs.vfat", 64, "vfat", |p| {
            run("mkfs.vfat", &["-F", "32", p.to_str().unwrap()]);
        }),
        ("mkfs.exfat", 16, "exfat", |p| {
            run("mkfs.exfat", &[p.to_str().unwrap()]);
        }),
        ("mkntfs", 16, "ntfs", |p| {
            run("mkntfs", &["-q", "-F", "-f", p.to_str().unwrap()]);
        }),
        ("mkswap", 16, "swap", |p| {
            run("mkswap", &[p.to_str().unwrap()]);
        }),
        ("cryptsetup", 32, "crypto_LUKS", |p| {
            run_stdin(
                "cryptsetup",
                &[
                    "luksFormat",
                    "--batch-mode",
                    "--type",
                    "luks1",
                    "--pbkdf-force-iterations",
                    "1000",
                    "--key-file=-",
                    p.to_str().unwrap(),
                ],
                Some("secret"),
            );
        }),
        ("cryptsetup", 32, "crypto_LUKS", |p| {
            run_stdin(
                "cryptsetup",
                &[
                    "luksFormat",
                    "--batch-mode",
                    "--type",
                    "luks2",
                    "--pbkdf",
                    "pbkdf2",
                    "--pbkdf-force-iterations",
                    "1000",
                    "--key-file=-",
                    p.to_str().unwrap(),
                ],
                Some("secret"),
            );
        }),
        ("make-bcache", 16, "bcache", |p| {
            run("make-bcache", &["-B", p.to_str().unwrap()]);
        }),
        ("mksquashfs", 0, "squashfs", |p| {
            let src = tempfile::tempdir().unwrap();
            fs::write(src.path().join("f"), b"data").unwrap();
            let _ = fs::remove_file(p);
            run(
                "mksquashfs",
                &[
                    src.path().to_str().unwrap(),
                    p.to_str().unwrap(),
                    "-quiet",
                    "-noappend",
                ],
            );
        }),
        ("genisoimage", 0, "iso9660", |p| {
            let src = tempfile::tempdir().unwrap();
            fs::write(src.path().join("f"), b"data").unwrap();
            run(
                "genisoimage",
                &[
                    "-quiet",
                    "-o",
                    p.to_str().unwrap(),
                    src.path().to_str().unwrap(),
                ],
            );
        }),
        ("sgdisk", 16, "gpt", |p| {
            // Only the backup header at the end is left.
            run("sgdisk", &["-n", "1:2048:+4M", p.to_str().unwrap()]);
            let f = fs::OpenOptions::new().write(true).open(p).unwrap();
            std::os::unix::fs::FileExt::write_all_at(&f, &[0u8; 34 * 512], 0).unwrap();
        }),
        ("true", 16, "zfs_member", |p| {
            // No ZFS tools on Debian main: an uberblock magic (0x00bab10c,
            // little-endian) in the uberblock ring of label 0 (128 KiB in)
            // and of label 3 (256 KiB before the end).
            let f = fs::OpenOptions::new().write(true).open(p).unwrap();
            let magic = 0x00ba_b10c_u64.to_le_bytes();
            let len = f.metadata().unwrap().len();
            for off in [128 * 1024 + 5 * 1024, len - 256 * 1024 + 128 * 1024] {
                std::os::unix::fs::FileExt::write_all_at(&f, &magic, off).unwrap();
            }
        }),
    ];
    let mut ran = 0;
    for (tool, mib, want, make) in cases {
        if !have(tool) {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must provide {tool} (scripts/install-deps.sh)"
            );
            eprintln!("skipping {want}: {tool} is not installed");
            continue;
        }
        let img = image(mib.max(1));
        make(&img.path);
        if want != "zfs_member" {
            let listed = wipefs_types(&img.path);
            assert!(
                listed.iter().any(|t| t == want),
                "{tool}: wipefs lists {listed:?}, not {want}"
            );
        }
        let own = signatures::probe_magic(&img.path).unwrap();
        assert!(
            own.iter().any(|s| s.name() == want),
            "{tool}: our probe found {own:?}, wipefs lists {want}"
        );
        ran += 1;
    }
    assert!(ran > 3, "too few mkfs tools installed");

    // md superblocks: 0.90 (64 KiB-aligned, 64 KiB before the end), 1.0
    // (4 KiB-aligned, 8 KiB before the end), 1.1 (at 0), 1.2 (at 4 KiB).
    // mdadm cannot assemble arrays in this container (no md device nodes
    // without udev), so the magic 0xa92b4efc is written at the offsets md(4)
    // documents, on an image of an odd size so the alignment matters.
    let len: u64 = (16 << 20) + 12345;
    for (meta, off) in [
        ("0.90", (len & !0xffff) - 0x10000),
        ("1.0", (len - 8192) & !4095),
        ("1.1", 0),
        ("1.2", 4096),
    ] {
        let img = image(1);
        let f = fs::OpenOptions::new().write(true).open(&img.path).unwrap();
        f.set_len(len).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &0xa92b_4efc_u32.to_le_bytes(), off).unwrap();
        let own = signatures::probe_magic(&img.path).unwrap();
        assert!(
            own.iter().any(|s| s.name() == "linux_raid_member"),
            "md {meta} at {off}: our probe found {own:?}"
        );
    }

    // LVM2 PV, made on a loop device.
    if have("pvcreate") {
        let a = image(16);
        let la = Loop::attach(&a.path);
        run("pvcreate", &["-q", "-f", la.path()]);
        let own = signatures::probe(&la.dev, false).unwrap();
        let _ = Command::new("pvremove").args(["-q", "-ff", "-y", la.path()]);
        drop(la);
        assert!(own.contains(&Signature::Lvm2), "LVM2 PV: found {own:?}");
    }
}
