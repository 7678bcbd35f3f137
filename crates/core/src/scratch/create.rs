//! Making scratch devices and file systems. Each step that could leave
//! something behind is recorded first.

use super::{state, tool, Error, Item, Mount, Result, What};
use std::io::Write;
use std::path::{Path, PathBuf};

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
    let mut it = state::add("zram", |id| Item {
        id,
        what: What::Zram {
            number: n,
            size,
            filled: false,
        },
        pid: std::process::id(),
        parent: None,
        transient: false,
    })?;
    let sys = format!("/sys/block/zram{n}");
    let set = std::fs::write(format!("{sys}/disksize"), size.to_string())
        .map_err(|e| Error::System(format!("cannot size /dev/zram{n} to {size}: {e}")));
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
    while left > 0 {
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

fn create_loop_in(spec: &LoopSpec, parent: Option<&str>) -> Result<Item> {
    use std::os::unix::fs::MetadataExt;
    need_root("create loop")?;
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
        },
        pid: std::process::id(),
        parent: parent.map(str::to_string),
        transient: false,
    })?;
    let attached = f
        .set_len(spec.size)
        .map_err(|e| Error::System(format!("cannot size {bs}: {e}")))
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
    // What the kernel actually does: loop falls back to buffered I/O on a
    // backing file system without O_DIRECT.
    let name = dev.trim_start_matches("/dev/").to_string();
    let dio = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
        .map(|s| s.trim() == "1")
        .unwrap_or(spec.direct_io);
    if let What::Loop {
        device, direct_io, ..
    } = &mut it.what
    {
        *device = dev;
        *direct_io = dio;
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
        }
    }
}

/// New devices with a file system: for ext4 and xfs one file system per
/// device, for btrfs one over all (`-d raid0`: the striped set), mounted
/// under /run/dioscope/mnt/.
pub fn create_fs(spec: &FsSpec) -> Result<Item> {
    need_root("create fs")?;
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
    let mkfs_tool = format!("mkfs.{}", spec.fstype);
    let mut it = state::add("fs", |id| Item {
        id,
        what: What::Fs {
            fstype: spec.fstype.clone(),
            mkfs: spec.mkfs.clone(),
            devices: vec![],
            mounts: vec![],
            block_size: 0,
        },
        pid: std::process::id(),
        parent: None,
        transient: false,
    })?;
    let made = build_fs(spec, &mkfs_tool, &mut it);
    if let Err(e) = made {
        let _ = super::destroy(&it.id);
        return Err(e);
    }
    Ok(it)
}

fn build_fs(spec: &FsSpec, mkfs_tool: &str, it: &mut Item) -> Result<()> {
    let mut devs = Vec::new();
    for _ in 0..spec.devices {
        let child = if spec.on == "zram" {
            let c = create_zram(spec.size, spec.fill)?;
            let mut c2 = c.clone();
            c2.parent = Some(it.id.clone());
            state::update(&c2)?;
            c2
        } else {
            create_loop_in(
                &LoopSpec {
                    size: spec.size,
                    sector_size: spec.sector_size,
                    direct_io: spec.direct_io,
                    on: None,
                },
                Some(&it.id),
            )?
        };
        devs.push(child.devices()[0].clone());
        if let What::Fs { devices, .. } = &mut it.what {
            devices.push(child.id.clone());
        }
        state::update(it)?;
    }
    let extra: Vec<&str> = spec.mkfs.split_whitespace().collect();
    let force = if spec.fstype == "ext4" { "-F" } else { "-f" };
    let groups: Vec<Vec<String>> = if spec.fstype == "btrfs" {
        vec![devs.clone()]
    } else {
        devs.iter().map(|d| vec![d.clone()]).collect()
    };
    let mut mounts = Vec::new();
    for (k, g) in groups.iter().enumerate() {
        let mut args: Vec<&str> = vec![force, "-q"];
        if spec.fstype == "btrfs" && g.len() > 1 && !extra.contains(&"-d") {
            args.extend(["-d", "raid0", "-m", "raid0"]);
        }
        args.extend(extra.iter().copied());
        args.extend(g.iter().map(String::as_str));
        tool(mkfs_tool, &args)?;
        let mp = super::state_dir()
            .join("mnt")
            .join(format!("{}-{k}", it.id))
            .display()
            .to_string();
        let m = Mount {
            device: g[0].clone(),
            mountpoint: mp.clone(),
        };
        if spec.fstype == "btrfs" && g.len() > 1 {
            // btrfs must see every member before the mount.
            let _ = tool("btrfs", &["device", "scan"]);
        }
        std::fs::create_dir_all(&mp)
            .map_err(|e| Error::System(format!("cannot create {mp}: {e}")))?;
        mounts.push(m.clone());
        if let What::Fs { mounts: ms, .. } = &mut it.what {
            ms.push(m);
        }
        state::update(it)?;
        tool("mount", &[&g[0], &mp])?;
    }
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
