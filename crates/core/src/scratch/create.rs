//! Making scratch devices and file systems. Each step that could leave
//! something behind is recorded first.

use super::{diskseq_of, state, tool, Error, Item, Mount, Result, What};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A new record's creator fields: (pid, start time, boot id).
fn creator() -> (u32, u64, String) {
    let p = crate::outfile::private::ProcessId::current();
    (p.pid, p.start, p.boot)
}

/// Stop before the next step once a stop signal came (the caller removes
/// what was made).
fn stop_check(what: &str) -> Result<()> {
    if dioscope_sys::signal::stop_count() > 0 {
        return Err(Error::System(format!("{what}: stopped by a signal")));
    }
    Ok(())
}

/// Open `dev` and check that it is still the disk recorded (`diskseq`): the
/// open descriptor pins it (a zram cannot be hot-removed, a loop device not
/// re-attached to another file, while it is open), so what follows works on
/// the device made, not on whatever took its name.
fn pin(dev: &str, seq: u64) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let f =
        std::fs::File::open(dev).map_err(|e| Error::System(format!("cannot open {dev}: {e}")))?;
    if seq != 0 {
        let now = dioscope_sys::block::diskseq(f.as_raw_fd())
            .map_err(|e| Error::System(format!("{dev}: cannot read its diskseq: {e}")))?;
        if now != seq {
            return Err(Error::System(format!(
                "{dev} is no longer the device dioscope made (diskseq {now}, not {seq}): \
                 someone removed it and made another; left alone"
            )));
        }
    }
    Ok(f)
}

/// A random (version 4) UUID for a new file system.
fn new_uuid() -> String {
    let mut b = [0u8; 16];
    let got = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    if !got {
        let x = dioscope_sys::clock::now_ns() as u128 ^ ((std::process::id() as u128) << 64);
        b = x.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The UUID (or `uuid=UUID`) of the k-th file system of an item: the
/// recorded one with its last group (48 bits) plus k.
fn uuid_for(arg: &str, k: usize) -> String {
    let (pre, u) = arg.split_at(arg.len().saturating_sub(36));
    if u.len() != 36 || k == 0 {
        return arg.to_string();
    }
    let node = u64::from_str_radix(&u[24..], 16).unwrap_or(0);
    format!(
        "{pre}{}{:012x}",
        &u[..24],
        node.wrapping_add(k as u64) & 0xffff_ffff_ffff
    )
}

/// `--mkfs` holds options for mkfs, never devices or files: dioscope gives
/// mkfs the devices it made (with mkfs's force flag), so a device named
/// there would be overwritten. Refused (exit 2): a word naming an existing
/// path or starting with `/`, an option whose attached value is under
/// /dev/, `--` (what follows it are devices), and a word that is neither an
/// option (`-…`) nor the value right after one.
pub fn check_mkfs_words(mkfs: &str) -> Result<()> {
    let refuse = |w: &str, why: &str| {
        Err(Error::Input(format!(
            "--mkfs='{mkfs}': '{w}' {why}; --mkfs takes options for mkfs only, e.g. \
             --mkfs='-O ^extent' (dioscope gives mkfs the devices it made)"
        )))
    };
    let mut after_option = false;
    for w in mkfs.split_whitespace() {
        if w == "--" {
            return refuse(w, "ends mkfs's options: what follows would be devices");
        }
        let is_opt = w.len() > 1 && w.starts_with('-');
        if !is_opt && (w.starts_with('/') || Path::new(w).symlink_metadata().is_ok()) {
            return refuse(w, "names a path (a device or a file), not an option");
        }
        if is_opt {
            let attached = w
                .split_once('=')
                .map(|(_, v)| v)
                .unwrap_or(if w.starts_with("--") {
                    ""
                } else {
                    &w[2.min(w.len())..]
                });
            if attached.starts_with("/dev/") {
                return refuse(w, "names a device");
            }
        } else if !after_option {
            return refuse(w, "is not an option (options start with '-')");
        }
        after_option = is_opt;
    }
    Ok(())
}

/// Effective uid 0 (from /proc: no unsafe here).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

const ZRAM_CONTROL: &str = "/sys/class/zram-control";

fn need_root(what: &str) -> Result<()> {
    if !is_root() {
        return Err(Error::Input(format!(
            "scratch {what} needs root (it attaches devices): run it with sudo"
        )));
    }
    Ok(())
}

/// A new zram device of `size` bytes, hot-added (never an existing one);
/// filled with incompressible data unless `fill` is false, so that reads
/// measure the device and not zram's zero-page shortcut.
pub fn create_zram(size: u64, fill: bool) -> Result<Item> {
    create_zram_in(size, fill, None)
}

fn create_zram_in(size: u64, fill: bool, parent: Option<&str>) -> Result<Item> {
    need_root("create zram")?;
    if size == 0 || !size.is_multiple_of(4096) {
        return Err(Error::Input(format!(
            "--size={size}: a zram device needs a multiple of 4 KiB (e.g. --size=1g)"
        )));
    }
    if !Path::new(ZRAM_CONTROL).exists() {
        let _ = tool("modprobe", &["zram", "num_devices=0"]);
        if !Path::new(ZRAM_CONTROL).exists() {
            return Err(Error::System(format!(
                "{ZRAM_CONTROL} is missing: this kernel has no zram (modprobe zram), use \
                 scratch create loop"
            )));
        }
    }
    let n: u32 = std::fs::read_to_string(format!("{ZRAM_CONTROL}/hot_add"))
        .map_err(|e| Error::System(format!("cannot hot-add a zram device: {e}")))?
        .trim()
        .parse()
        .map_err(|_| Error::System("hot_add returned no device number".into()))?;
    let seq = diskseq_of(&format!("zram{n}")).unwrap_or(0);
    let (pid, start_time, boot_id) = creator();
    let mut it = state::add("zram", |id| Item {
        id,
        what: What::Zram {
            number: n,
            size,
            filled: false,
            diskseq: seq,
        },
        pid,
        start_time,
        boot_id,
        parent: parent.map(str::to_string),
        transient: true,
    })?;
    let sys = format!("/sys/block/zram{n}");
    let set = stop_check("scratch create zram").and_then(|_| {
        std::fs::write(format!("{sys}/disksize"), size.to_string())
            .map_err(|e| Error::System(format!("cannot size /dev/zram{n} to {size}: {e}")))
    });
    if let Err(e) = set {
        let _ = super::destroy(&it.id);
        return Err(e);
    }
    if fill {
        if let Err(e) = fill_random(&format!("/dev/zram{n}"), size) {
            let _ = super::destroy(&it.id);
            return Err(e);
        }
        it.what = What::Zram {
            number: n,
            size,
            filled: true,
            diskseq: seq,
        };
        state::update(&it)?;
    }
    Ok(it)
}

/// Fill a device with data no compressor shrinks (xorshift64*, a fresh
/// stream per chunk), stopping early on a stop signal.
fn fill_random(dev: &str, size: u64) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dev)
        .map_err(|e| Error::System(format!("cannot open {dev} to fill it: {e}")))?;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ dioscope_sys::clock::now_ns();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = size;
    let mut progress =
        crate::console::Progress::new(format!("filling {dev} with incompressible data"), size);
    while left > 0 {
        progress.update(size - left);
        if dioscope_sys::signal::stop_count() > 0 {
            return Err(Error::System(format!("filling {dev}: stopped by a signal")));
        }
        for c in buf.chunks_exact_mut(8) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            c.copy_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])
            .map_err(|e| Error::System(format!("filling {dev}: {e}")))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(|e| Error::System(format!("filling {dev}: {e}")))
}

/// What `scratch create loop` takes.
#[derive(Debug, Clone)]
pub struct LoopSpec {
    pub size: u64,
    pub sector_size: u32,
    pub direct_io: bool,
    /// The directory for the backing file (default /var/tmp).
    pub on: Option<PathBuf>,
}

impl Default for LoopSpec {
    fn default() -> LoopSpec {
        LoopSpec {
            size: 1 << 30,
            sector_size: 512,
            direct_io: true,
            on: None,
        }
    }
}

/// A new loop device over a new (sparse) backing file.
pub fn create_loop(spec: &LoopSpec) -> Result<Item> {
    create_loop_in(spec, None)
}

/// The directory of a loop device's backing file, once the spec's sector
/// size and size are ones a loop device takes.
fn backing_dir(spec: &LoopSpec) -> Result<PathBuf> {
    if ![512, 1024, 2048, 4096].contains(&spec.sector_size) {
        return Err(Error::Input(format!(
            "--sector-size={}: choose 512, 1024, 2048 or 4096",
            spec.sector_size
        )));
    }
    if spec.size == 0 || !spec.size.is_multiple_of(spec.sector_size as u64) {
        return Err(Error::Input(format!(
            "--size={}: a loop device needs a whole number of {}-byte sectors (e.g. --size=1g)",
            spec.size, spec.sector_size
        )));
    }
    let dir = spec.on.clone().unwrap_or_else(|| PathBuf::from("/var/tmp"));
    if !dir.is_dir() {
        return Err(Error::Input(format!(
            "--on={}: not a directory; give the directory for the backing file",
            dir.display()
        )));
    }
    Ok(dir)
}

fn create_loop_in(spec: &LoopSpec, parent: Option<&str>) -> Result<Item> {
    use std::os::unix::fs::MetadataExt;
    need_root("create loop")?;
    let dir = backing_dir(spec)?;
    let name = format!(
        "dioscope-scratch-{}-{}.img",
        std::process::id(),
        dioscope_sys::clock::now_ns()
    );
    let backing = dir.join(name);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&backing)
        .map_err(|e| Error::System(format!("cannot create {}: {e}", backing.display())))?;
    let md = f
        .metadata()
        .map_err(|e| Error::System(format!("{}: {e}", backing.display())))?;
    let bs = backing.display().to_string();
    let (pid, start_time, boot_id) = creator();
    let mut it = state::add("loop", |id| Item {
        id,
        what: What::Loop {
            device: String::new(),
            backing: bs.clone(),
            backing_dev: md.dev(),
            backing_ino: md.ino(),
            size: spec.size,
            sector_size: spec.sector_size,
            direct_io: spec.direct_io,
            diskseq: 0,
        },
        pid,
        start_time,
        boot_id,
        parent: parent.map(str::to_string),
        transient: true,
    })?;
    let attached = stop_check("scratch create loop")
        .and_then(|_| {
            f.set_len(spec.size)
                .map_err(|e| Error::System(format!("cannot size {bs}: {e}")))
        })
        .and_then(|_| {
            tool(
                "losetup",
                &[
                    "--find",
                    "--show",
                    "--sector-size",
                    &spec.sector_size.to_string(),
                    &format!("--direct-io={}", if spec.direct_io { "on" } else { "off" }),
                    &bs,
                ],
            )
        });
    let dev = match attached {
        Ok(d) => d.trim().to_string(),
        Err(e) => {
            let _ = super::destroy(&it.id);
            return Err(e);
        }
    };
    // A fresh device starts at the kernel's request-size limit, whatever
    // the last user of this loopN left there.
    super::reset_request_limit(&dev);
    // What the kernel actually does: loop falls back to buffered I/O on a
    // backing file system without O_DIRECT.
    let name = dev.trim_start_matches("/dev/").to_string();
    let dio = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
        .map(|s| s.trim() == "1")
        .unwrap_or(spec.direct_io);
    let seq = diskseq_of(&name).unwrap_or(0);
    if let What::Loop {
        device,
        direct_io,
        diskseq,
        ..
    } = &mut it.what
    {
        *device = dev;
        *direct_io = dio;
        *diskseq = seq;
    }
    state::update(&it)?;
    Ok(it)
}

/// What `scratch create fs` takes.
#[derive(Debug, Clone)]
pub struct FsSpec {
    pub fstype: String,
    pub mkfs: String,
    pub devices: usize,
    /// `zram` or `loop`.
    pub on: String,
    /// Per device.
    pub size: u64,
    pub sector_size: u32,
    pub direct_io: bool,
    /// zram only: fill with incompressible data before mkfs (pass
    /// `-E nodiscard` / `-K` to keep it), so reads of blocks the file
    /// system never wrote still cost a real decompression.
    pub fill: bool,
    /// loop only: the directory of the backing files (default /var/tmp;
    /// /dev/shm keeps a disk's noise out).
    pub backing_dir: Option<PathBuf>,
}

impl Default for FsSpec {
    fn default() -> FsSpec {
        FsSpec {
            fstype: "ext4".into(),
            mkfs: String::new(),
            devices: 1,
            on: "loop".into(),
            size: 1 << 30,
            sector_size: 512,
            direct_io: true,
            fill: false,
            backing_dir: None,
        }
    }
}

/// The smallest device mkfs.xfs accepts: "Filesystem must be larger than
/// 300MB" (xfsprogs ≥ 5.19; measured with 6.1: 300 MiB works, one byte
/// less does not).
pub const XFS_MIN_BYTES: u64 = 300 << 20;
/// The smallest device mkfs.btrfs accepts with its default profiles on one
/// device (btrfs-progs 6.2: "minimum size for each btrfs device is
/// 114294784", 109 MiB)…
pub const BTRFS_MIN_BYTES: u64 = 114_294_784;
/// …and per device of a striped set (`-d raid0 -m raid0`, 2–4 devices:
/// 131072000, 125 MiB).
pub const BTRFS_MIN_BYTES_STRIPED: u64 = 131_072_000;

/// Everything about a `scratch create fs` request that can be judged before
/// any device is made: the type, the devices, mkfs's arguments and its
/// presence, and the size each device needs for the file system and for
/// the device kind. An error here leaves nothing behind (exit 2).
pub fn fs_preconditions(spec: &FsSpec) -> Result<()> {
    if !["ext4", "xfs", "btrfs"].contains(&spec.fstype.as_str()) {
        return Err(Error::Input(format!(
            "--type={}: choose ext4, xfs or btrfs",
            spec.fstype
        )));
    }
    if !["zram", "loop"].contains(&spec.on.as_str()) {
        return Err(Error::Input(format!(
            "--on={}: choose zram or loop",
            spec.on
        )));
    }
    if spec.devices == 0 || spec.devices > 64 {
        return Err(Error::Input(format!(
            "--devices={}: give 1 to 64",
            spec.devices
        )));
    }
    check_mkfs_words(&spec.mkfs)?;
    let mib = |b: u64| format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64);
    // The user's own mkfs arguments may change what the minimum is
    // (btrfs --mixed, other profiles): mkfs judges then.
    let min = match spec.fstype.as_str() {
        "xfs" => Some((XFS_MIN_BYTES, "XFS needs at least 300 MiB (mkfs.xfs refuses smaller)")),
        "btrfs" if spec.mkfs.trim().is_empty() && spec.devices > 1 => Some((
            BTRFS_MIN_BYTES_STRIPED,
            "btrfs striped over several devices needs at least 125 MiB per device (mkfs.btrfs refuses smaller)",
        )),
        "btrfs" if spec.mkfs.trim().is_empty() => Some((
            BTRFS_MIN_BYTES,
            "btrfs needs at least 109 MiB (mkfs.btrfs refuses smaller)",
        )),
        _ => None,
    };
    if let Some((min, why)) = min {
        if spec.size < min {
            return Err(Error::Input(format!(
                "--size={} ({}): {why}; give --size={}m or more",
                spec.size,
                mib(spec.size),
                min.div_ceil(1 << 20)
            )));
        }
    }
    // The device kind's own rules, as create_zram/create_loop check them.
    if spec.on == "zram" {
        if spec.size == 0 || !spec.size.is_multiple_of(4096) {
            return Err(Error::Input(format!(
                "--size={}: a zram device needs a multiple of 4 KiB (e.g. --size=1g)",
                spec.size
            )));
        }
    } else {
        backing_dir(&LoopSpec {
            size: spec.size,
            sector_size: spec.sector_size,
            direct_io: spec.direct_io,
            on: spec.backing_dir.clone(),
        })?;
    }
    let tool = format!("mkfs.{}", spec.fstype);
    if !on_path(&tool) {
        return Err(Error::Input(format!(
            "{tool} is not installed (not on PATH); install it (scripts/install-deps.sh) \
             or choose another --type"
        )));
    }
    Ok(())
}

/// Whether an executable named `name` is in a directory of `$PATH`, where
/// running it will look (no `$PATH`: not judged here).
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH") else {
        return true;
    };
    std::env::split_paths(&path).any(|d| {
        std::fs::metadata(d.join(name))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// New devices with a file system: for ext4 and xfs one file system per
/// device, for btrfs one over all (`-d raid0`: the striped set), mounted
/// under /run/dioscope/mnt/.
pub fn create_fs(spec: &FsSpec) -> Result<Item> {
    need_root("create fs")?;
    fs_preconditions(spec)?;
    let mkfs_tool = format!("mkfs.{}", spec.fstype);
    let words: Vec<&str> = spec.mkfs.split_whitespace().collect();
    let user_uuid = words
        .iter()
        .any(|w| w.starts_with("-U") || w.contains("uuid="));
    let uuid = if user_uuid { String::new() } else { new_uuid() };
    let (pid, start_time, boot_id) = creator();
    let mut it = state::add("fs", |id| Item {
        id,
        what: What::Fs {
            fstype: spec.fstype.clone(),
            mkfs: spec.mkfs.clone(),
            devices: vec![],
            mounts: vec![],
            block_size: 0,
            uuid: uuid.clone(),
        },
        pid,
        start_time,
        boot_id,
        parent: None,
        transient: true,
    })?;
    let made = build_fs(spec, &mkfs_tool, &uuid, &mut it);
    if let Err(e) = made {
        let _ = super::destroy(&it.id);
        return Err(e);
    }
    Ok(it)
}

/// The devices under a new file system, each recorded as its child and
/// held open (pinned, with its diskseq) until the file system is mounted.
#[allow(clippy::type_complexity)]
fn fs_devices(
    spec: &FsSpec,
    it: &mut Item,
) -> Result<(Vec<String>, Vec<(String, u64, std::fs::File)>)> {
    let mut devs = Vec::new();
    // Each device stays open (pinned) until the file system is mounted.
    let mut pins = Vec::new();
    for _ in 0..spec.devices {
        stop_check("scratch create fs")?;
        let child = if spec.on == "zram" {
            create_zram_in(spec.size, spec.fill, Some(&it.id))?
        } else {
            create_loop_in(
                &LoopSpec {
                    size: spec.size,
                    sector_size: spec.sector_size,
                    direct_io: spec.direct_io,
                    on: spec.backing_dir.clone(),
                },
                Some(&it.id),
            )?
        };
        if let What::Fs { devices, .. } = &mut it.what {
            devices.push(child.id.clone());
        }
        state::update(it)?;
        let seq = match &child.what {
            What::Zram { diskseq, .. } | What::Loop { diskseq, .. } => *diskseq,
            What::Fs { .. } => 0,
        };
        let dev = child.devices()[0].clone();
        pins.push((dev.clone(), seq, pin(&dev, seq)?));
        devs.push(dev);
    }
    Ok((devs, pins))
}

fn build_fs(spec: &FsSpec, mkfs_tool: &str, uuid: &str, it: &mut Item) -> Result<()> {
    let (devs, pins) = fs_devices(spec, it)?;
    // Still the devices made (diskseq), by name, right before and after
    // each step that names them.
    let verify = |pins: &[(String, u64, std::fs::File)]| -> Result<()> {
        for (d, seq, _) in pins {
            pin(d, *seq)?;
        }
        Ok(())
    };
    let extra: Vec<&str> = spec.mkfs.split_whitespace().collect();
    let force = if spec.fstype == "ext4" { "-F" } else { "-f" };
    let groups: Vec<Vec<String>> = if spec.fstype == "btrfs" {
        vec![devs.clone()]
    } else {
        devs.iter().map(|d| vec![d.clone()]).collect()
    };
    let uuid_args: Vec<String> = match (uuid.is_empty(), spec.fstype.as_str()) {
        (true, _) => vec![],
        (false, "xfs") => vec!["-m".into(), format!("uuid={uuid}")],
        (false, _) => vec!["-U".into(), uuid.to_string()],
    };
    let mnt = super::state_dir().join("mnt");
    std::fs::create_dir_all(&mnt)
        .map_err(|e| Error::System(format!("cannot create {}: {e}", mnt.display())))?;
    let mut mounts = Vec::new();
    for (k, g) in groups.iter().enumerate() {
        stop_check("scratch create fs")?;
        let mut args: Vec<&str> = vec![force, "-q"];
        if spec.fstype == "btrfs" && g.len() > 1 && !extra.contains(&"-d") {
            args.extend(["-d", "raid0", "-m", "raid0"]);
        }
        // One UUID per file system: the k-th gets the recorded one with
        // its last group plus k.
        let uuid_args: Vec<String> = uuid_args.iter().map(|a| uuid_for(a, k)).collect();
        args.extend(uuid_args.iter().map(String::as_str));
        args.extend(extra.iter().copied());
        args.extend(g.iter().map(String::as_str));
        verify(&pins)?;
        tool(mkfs_tool, &args)?;
        verify(&pins)?;
        let mp = mnt.join(format!("{}-{k}", it.id)).display().to_string();
        let m = Mount {
            device: g[0].clone(),
            mountpoint: mp.clone(),
        };
        if spec.fstype == "btrfs" && g.len() > 1 {
            // btrfs must see every member before the mount.
            let _ = tool("btrfs", &["device", "scan"]);
        }
        // A new mount point, never one that exists (ids are never reused).
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o755)
                .create(&mp)
                .map_err(|e| Error::System(format!("cannot create {mp}: {e}")))?;
        }
        mounts.push(m.clone());
        if let What::Fs { mounts: ms, .. } = &mut it.what {
            ms.push(m);
        }
        state::update(it)?;
        stop_check("scratch create fs")?;
        tool("mount", &[&g[0], &mp])?;
        verify(&pins)?;
    }
    drop(pins);
    let bs = std::fs::File::open(&mounts[0].mountpoint)
        .ok()
        .and_then(|f| {
            use std::os::fd::AsRawFd;
            dioscope_sys::fsinfo::fstatfs(f.as_raw_fd()).ok()
        })
        .map(|s| s.block_size)
        .unwrap_or(0);
    if let What::Fs { block_size, .. } = &mut it.what {
        *block_size = bs;
    }
    state::update(it)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fstype: &str, size: u64, devices: usize) -> FsSpec {
        FsSpec {
            fstype: fstype.into(),
            size,
            devices,
            ..FsSpec::default()
        }
    }

    #[test]
    fn too_small_for_the_file_system_is_an_input_error() {
        let e = fs_preconditions(&spec("xfs", 256 << 20, 1)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(
            m.contains("XFS needs at least 300 MiB") && m.contains("--size=300m"),
            "{m}"
        );
        let e = fs_preconditions(&spec("btrfs", 100 << 20, 1)).unwrap_err();
        assert!(e.to_string().contains("109 MiB"), "{e}");
        let e = fs_preconditions(&spec("btrfs", 120 << 20, 2)).unwrap_err();
        assert!(e.to_string().contains("125 MiB per device"), "{e}");
        // A user's mkfs arguments leave btrfs's minimum to mkfs.
        let mut mixed = spec("btrfs", 100 << 20, 1);
        mixed.mkfs = "--mixed".into();
        assert!(!matches!(fs_preconditions(&mixed), Err(e) if e.to_string().contains("109 MiB")));
        // A bad type or sector count is caught before any device as well.
        assert_eq!(
            fs_preconditions(&spec("zfs", 1 << 30, 1))
                .unwrap_err()
                .exit_code(),
            2
        );
        let e = fs_preconditions(&spec("ext4", (1 << 30) + 100, 1)).unwrap_err();
        assert!(
            e.to_string().contains("whole number of 512-byte sectors"),
            "{e}"
        );
    }

    #[test]
    fn big_enough_passes_when_mkfs_is_installed() {
        for (t, size) in [
            ("xfs", XFS_MIN_BYTES),
            ("btrfs", BTRFS_MIN_BYTES),
            ("ext4", 16 << 20),
        ] {
            match fs_preconditions(&spec(t, size, 1)) {
                Ok(()) => {}
                Err(e) => assert!(e.to_string().contains("not installed"), "{t}: {e}"),
            }
        }
    }
}
