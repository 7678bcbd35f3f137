//! Scratch devices: zram and loop devices and file systems dioscope makes
//! for an experiment and removes afterwards.
//!
//! Everything made is recorded in a state file under `/run/dioscope/`
//! *before* the step that could leave it behind, so that after a crash
//! `dioscope scratch list` shows the leftovers and `destroy` removes them.
//! Destroy acts only on what the state file records, and only after
//! checking that the thing is still the one recorded: identity, never a
//! number or a name. Nothing written into a device's data area can prove it
//! (a scratch device exists to be overwritten), so a record carries the
//! kernel's per-disk sequence number (`diskseq`, never reused within a
//! boot) with the boot id, the creating process (pid and start time), for
//! a loop device its backing file's inode, for a file system the UUID
//! dioscope chose; a zram whose diskseq is another's is not ours. A zram
//! *reset* (not removed) keeps its diskseq, so a file system found on a
//! bare zram, or one of another UUID on an fs's device, keeps destroy away
//! as well: a device dioscope did not create is never touched.
//!
//! Records are written before the device exists and stay "transient" (a
//! leftover once the creator is gone) until `scratch create` finished; ids
//! come from a counter that survives the registry emptying.

pub mod create;
mod state;

pub use create::{check_mkfs_words, create_fs, create_loop, create_zram, FsSpec, LoopSpec};

/// `scratch create` finished: item `id` (and the devices under it) stay
/// until destroyed, no longer leftovers when this process ends.
pub fn persist(id: &str) -> Result<()> {
    state::persist(id)
}
pub use state::{load, state_dir, state_path};

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

/// Why a scratch operation failed: bad input (exit 2) or the system
/// refused (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    System(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) => 2,
            Error::System(_) => 1,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// One mounted file system of a scratch `fs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mount {
    pub device: String,
    pub mountpoint: String,
}

/// What a scratch item is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum What {
    Zram {
        /// The number `hot_add` returned: /dev/zramN.
        number: u32,
        size: u64,
        filled: bool,
        /// The kernel's sequence number of the disk (0: unknown).
        #[serde(default)]
        diskseq: u64,
    },
    Loop {
        /// Empty until `losetup` attached it.
        device: String,
        backing: String,
        /// Identity of the backing file dioscope created.
        backing_dev: u64,
        backing_ino: u64,
        size: u64,
        sector_size: u32,
        direct_io: bool,
        /// The kernel's sequence number of the attached device (0: unknown).
        #[serde(default)]
        diskseq: u64,
    },
    Fs {
        fstype: String,
        mkfs: String,
        /// The scratch ids of the devices under it (destroyed with it).
        devices: Vec<String>,
        /// One per device for ext4/xfs (one file system each), one for btrfs.
        mounts: Vec<Mount>,
        block_size: u64,
        /// The UUID dioscope chose and gave mkfs (empty: the user's
        /// `--mkfs` gave one); the k-th file system (ext4, xfs: one per
        /// device) has its last group plus k.
        #[serde(default)]
        uuid: String,
    },
}

/// One thing dioscope made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    pub what: What,
    /// The process that made it (a leftover when it is gone).
    pub pid: u32,
    /// Its start time (`/proc/PID/stat` field 22) and boot: a later
    /// process that got the same pid is not the creator.
    #[serde(default)]
    pub start_time: u64,
    #[serde(default)]
    pub boot_id: String,
    /// The file system this device belongs to, if any.
    #[serde(default)]
    pub parent: Option<String>,
    /// Made for one run (a recipe's), or not yet complete: a leftover once
    /// its process is gone. Items of `scratch create` stay until destroyed
    /// once it has finished (then this is false).
    #[serde(default)]
    pub transient: bool,
}

/// The geometry of a device or file system, as results carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    pub id: String,
    pub device: String,
    pub logical_block_size: u32,
    pub physical_block_size: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct_io: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_block_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mkfs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mountpoint: Option<String>,
}

impl Item {
    /// The process that made it.
    pub fn creator(&self) -> crate::outfile::private::ProcessId {
        crate::outfile::private::ProcessId {
            pid: self.pid,
            start: self.start_time,
            boot: self.boot_id.clone(),
        }
    }

    /// Whether its creator still runs (pid, start time and boot alike).
    fn creator_alive(&self) -> bool {
        self.creator().alive()
    }

    /// The block devices of this item (one for zram/loop).
    pub fn devices(&self) -> Vec<String> {
        match &self.what {
            What::Zram { number, .. } => vec![format!("/dev/zram{number}")],
            What::Loop { device, .. } if !device.is_empty() => vec![device.clone()],
            What::Loop { .. } => vec![],
            What::Fs { mounts, .. } => mounts.iter().map(|m| m.device.clone()).collect(),
        }
    }

    /// The mount points (empty for a bare device).
    pub fn mountpoints(&self) -> Vec<String> {
        match &self.what {
            What::Fs { mounts, .. } => mounts.iter().map(|m| m.mountpoint.clone()).collect(),
            _ => vec![],
        }
    }

    /// One line for `scratch list`.
    pub fn describe(&self) -> String {
        let h = crate::results::units::human_bytes;
        match &self.what {
            What::Zram {
                number,
                size,
                filled,
                ..
            } => format!(
                "zram /dev/zram{number} {}{}",
                h(*size),
                if *filled {
                    " filled (incompressible)"
                } else {
                    " not filled"
                }
            ),
            What::Loop {
                device,
                backing,
                size,
                sector_size,
                direct_io,
                ..
            } => format!(
                "loop {} {} sector {sector_size} direct-io {} backing {backing}",
                if device.is_empty() {
                    "(not attached)"
                } else {
                    device
                },
                h(*size),
                if *direct_io { "on" } else { "off" }
            ),
            What::Fs {
                fstype,
                mkfs,
                mounts,
                block_size,
                ..
            } => format!(
                "fs {fstype} block {block_size}{} on {}",
                if mkfs.is_empty() {
                    String::new()
                } else {
                    format!(" mkfs '{mkfs}'")
                },
                mounts
                    .iter()
                    .map(|m| format!("{} at {}", m.device, m.mountpoint))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Geometry of each of its devices (and file systems).
    pub fn geometry(&self) -> Vec<Geometry> {
        let mut out = Vec::new();
        match &self.what {
            What::Fs {
                fstype,
                mkfs,
                mounts,
                block_size,
                ..
            } => {
                for m in mounts {
                    let (l, p) = block_sizes(&m.device);
                    out.push(Geometry {
                        id: self.id.clone(),
                        device: m.device.clone(),
                        logical_block_size: l,
                        physical_block_size: p,
                        direct_io: None,
                        fs_type: Some(fstype.clone()),
                        fs_block_size: Some(*block_size),
                        mkfs: Some(mkfs.clone()),
                        mountpoint: Some(m.mountpoint.clone()),
                    });
                }
            }
            w => {
                for d in self.devices() {
                    let (l, p) = block_sizes(&d);
                    out.push(Geometry {
                        id: self.id.clone(),
                        device: d,
                        logical_block_size: l,
                        physical_block_size: p,
                        direct_io: match w {
                            What::Loop { direct_io, .. } => Some(*direct_io),
                            _ => None,
                        },
                        fs_type: None,
                        fs_block_size: None,
                        mkfs: None,
                        mountpoint: None,
                    });
                }
            }
        }
        out
    }
}

/// The logical and physical block sizes the kernel reports for `dev`.
pub fn block_sizes(dev: &str) -> (u32, u32) {
    let name = Path::new(dev)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let rd = |f: &str| -> u32 {
        std::fs::read_to_string(format!("/sys/block/{name}/queue/{f}"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    };
    (rd("logical_block_size"), rd("physical_block_size"))
}

/// The kernel's sequence number of block device `name` (`loop3`), from
/// sysfs (None: no such device, or a kernel before 5.15).
pub fn diskseq_of(name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/block/{name}/diskseq"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The file system signature on `dev` (type, UUID), probed on the device
/// itself (`blkid -p`, no cache); None when there is none.
fn signature(dev: &str) -> Option<(String, String)> {
    let out = Command::new("blkid")
        .args(["-p", "-o", "export", dev])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(str::to_string)
    };
    let t = field("TYPE")?;
    Some((t, field("UUID").unwrap_or_default()))
}

/// Run an external tool; its stderr in the error.
pub(crate) fn tool(cmd: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(cmd).args(args).output().map_err(|e| {
        Error::System(format!(
            "cannot run {cmd}: {e} (install it: scripts/install-deps.sh)"
        ))
    })?;
    if !out.status.success() {
        return Err(Error::System(format!(
            "{cmd} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// `f` until it succeeds, for up to 5 s (a device or mount still busy for
/// a moment after its last user closed it).
fn retry(mut f: impl FnMut() -> Result<()>) -> Result<()> {
    let t0 = std::time::Instant::now();
    loop {
        match f() {
            Ok(()) => return Ok(()),
            Err(e) if t0.elapsed() > std::time::Duration::from_secs(5) => return Err(e),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

/// Destroy the item `id` and the devices under it. Refuses a device that
/// belongs to a file system (destroy the file system).
pub fn destroy(id: &str) -> Result<()> {
    let items = load()?;
    let Some(it) = items.iter().find(|i| i.id == id) else {
        let known: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        return Err(Error::Input(format!(
            "no scratch item '{id}' (dioscope scratch list shows them{})",
            if known.is_empty() {
                ": there are none".to_string()
            } else {
                format!(": {}", known.join(", "))
            }
        )));
    };
    if let Some(p) = &it.parent {
        if items.iter().any(|i| &i.id == p) {
            return Err(Error::Input(format!(
                "{id} is a device of the file system {p}: destroy {p}"
            )));
        }
    }
    destroy_item(it)
}

/// Destroy every recorded item, file systems first, but those of a
/// process that still runs (another's recipe mid-run): they are left, and
/// said. Returns the number destroyed and the first error after trying all.
pub fn destroy_all() -> Result<usize> {
    let items = load()?;
    let me = std::process::id();
    let busy = |i: &Item| i.pid != me && i.creator_alive();
    let mut left: Vec<&Item> = items.iter().filter(|i| busy(i)).collect();
    left.sort_by_key(|i| i.pid);
    for i in &left {
        eprintln!(
            "dioscope: note: left {} of process {} (still running: it removes it when it \
             ends; stop it first to remove it now)",
            i.id, i.pid
        );
    }
    let mut first_err = None;
    let mut n = 0;
    for it in items
        .iter()
        .filter(|i| matches!(i.what, What::Fs { .. }) && !busy(i))
    {
        match destroy_item(it) {
            Ok(()) => n += 1,
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    for it in load()?.iter().filter(|i| !busy(i)) {
        match destroy_item(it) {
            Ok(()) => n += 1,
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

fn destroy_item(it: &Item) -> Result<()> {
    match &it.what {
        What::Fs {
            devices, mounts, ..
        } => {
            for m in mounts {
                unmount_if_ours(m)?;
            }
            for d in devices {
                if let Some(child) = load()?.into_iter().find(|i| &i.id == d) {
                    destroy_item(&child)?;
                }
            }
        }
        What::Zram {
            number,
            size,
            diskseq,
            ..
        } => {
            // A device of a file system carries the UUID dioscope gave it.
            let fs_uuid = it.parent.as_ref().and_then(|p| {
                load().ok()?.into_iter().find_map(|x| match x.what {
                    What::Fs { uuid, .. } if &x.id == p => Some(uuid),
                    _ => None,
                })
            });
            destroy_zram(it, *number, *size, *diskseq, fs_uuid.as_deref())?
        }
        What::Loop {
            device,
            backing,
            backing_dev,
            backing_ino,
            ..
        } => destroy_loop(device, backing, *backing_dev, *backing_ino)?,
    }
    state::remove(&it.id)
}

/// Unmount `m` if /proc/mounts shows it mounted from the recorded device,
/// then remove the (empty) mount point.
fn unmount_if_ours(m: &Mount) -> Result<()> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mut ours = false;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 2 && f[1] == m.mountpoint {
            if f[0] != m.device {
                return Err(Error::System(format!(
                    "{} is mounted from {}, not from the recorded {}: left alone",
                    m.mountpoint, f[0], m.device
                )));
            }
            ours = true;
        }
    }
    if ours {
        // io_uring drops its file references asynchronously after the ring
        // is closed: a umount right after a run can find the fs busy.
        retry(|| tool("umount", &[&m.mountpoint]).map(|_| ()))?;
    }
    // Only an empty directory goes: remove_dir fails on anything else.
    let _ = std::fs::remove_dir(&m.mountpoint);
    Ok(())
}

fn destroy_zram(
    it: &Item,
    number: u32,
    size: u64,
    diskseq: u64,
    fs_uuid: Option<&str>,
) -> Result<()> {
    let sys = format!("/sys/block/zram{number}");
    if !Path::new(&sys).exists() {
        return Ok(()); // already gone
    }
    let dev = format!("/dev/zram{number}");
    if !it.boot_id.is_empty() && it.boot_id != crate::outfile::private::boot_id() {
        eprintln!(
            "dioscope: note: {}: {dev} was made before the last reboot; the one there now \
             is not dioscope's: left alone (the record goes)",
            it.id
        );
        return Ok(());
    }
    let now_seq = diskseq_of(&format!("zram{number}"));
    if let Some(now_seq) = now_seq.filter(|s| diskseq != 0 && *s != diskseq) {
        eprintln!(
            "dioscope: note: {}: {dev} is another disk now (diskseq {now_seq}, dioscope's \
             was {diskseq}: removed behind dioscope's back and the number reused): left alone \
             (the record goes)",
            it.id
        );
        return Ok(());
    }
    let now: u64 = std::fs::read_to_string(format!("{sys}/disksize"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX);
    // 0: made, but the crash came before disksize was set.
    if now != size && now != 0 {
        return Err(Error::System(format!(
            "{dev} is {now} bytes, not the {size} recorded: it is not the one dioscope \
             made; left alone (check it and hot_remove it yourself)"
        )));
    }
    // A reset keeps the diskseq: a file system dioscope did not make on it
    // says that someone else uses it now.
    if now != 0 {
        if let Some((t, u)) = signature(&dev) {
            // Each file system of an item has the recorded UUID but for its
            // last group (one per device: see create::uuid_for).
            let ours = fs_uuid.is_some_and(|x| {
                x.len() == 36 && u.len() == 36 && x[..24].eq_ignore_ascii_case(&u[..24])
            });
            if !ours {
                return Err(Error::System(format!(
                    "{}: {dev} holds a file system dioscope did not make ({t}, UUID {u}): \
                     someone reset and reused it; left alone (if it is yours to remove: \
                     echo {number} > /sys/class/zram-control/hot_remove, then dioscope \
                     scratch destroy {})",
                    it.id, it.id
                )));
            }
        }
    }
    retry(|| {
        std::fs::write("/sys/class/zram-control/hot_remove", number.to_string())
            .map_err(|e| Error::System(e.to_string()))
    })
    .map_err(|e| {
        Error::System(format!(
            "cannot remove /dev/zram{number}: {e} (is it still open? fuser -v /dev/zram{number})"
        ))
    })
}

/// A loop device's request-size limit (`queue/max_sectors_kb`) back to the
/// kernel's default. The setting belongs to the `loopN` node, not to an
/// attachment: a cap (a recipe's control, `--cap-request-kb`) outlives
/// `losetup -d` and would cut the requests of whoever attaches `loopN`
/// next. Writing 0 restores the default (Linux ≥ 6.8); an older kernel
/// refuses 0 and gets the hardware limit instead. Best effort: a device
/// that cannot be reset is still detached.
pub(crate) fn reset_request_limit(device: &str) {
    let name = device.trim_start_matches("/dev/");
    let q = format!("/sys/block/{name}/queue");
    let p = format!("{q}/max_sectors_kb");
    if std::fs::write(&p, "0").is_err() {
        if let Ok(hw) = std::fs::read_to_string(format!("{q}/max_hw_sectors_kb")) {
            let _ = std::fs::write(&p, hw.trim());
        }
    }
}

/// Cap a scratch device's requests at `kb` KiB (`queue/max_sectors_kb`):
/// a recipe's planted or masked request size. Undone when the device is
/// destroyed ([`reset_request_limit`]).
pub fn set_request_limit(device: &str, kb: u64) -> std::io::Result<()> {
    let name = device.trim_start_matches("/dev/");
    std::fs::write(
        format!("/sys/block/{name}/queue/max_sectors_kb"),
        kb.to_string(),
    )
}

/// A read-IOPS limit on a scratch device (blk-throttle, cgroup v1's
/// `blkio.throttle.read_iops_device` of the root group: every reader of
/// the device shares it), taken off when dropped. A recipe's planted
/// collapse: a shared budget every I/O of every thread draws from.
pub struct ReadThrottle {
    file: &'static str,
    rule: String,
}

/// Where cgroup v1's blkio controller takes its read-IOPS rules.
const THROTTLE_READ_IOPS: &str = "/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device";

impl ReadThrottle {
    /// Limit reads of `device` to `iops` per second.
    pub fn new(device: &str, iops: u64) -> std::result::Result<ReadThrottle, String> {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(device)
            .map_err(|e| format!("{device}: {e}"))?
            .rdev();
        let (ma, mi) = (libc::major(rdev), libc::minor(rdev));
        if !std::path::Path::new(THROTTLE_READ_IOPS).exists() {
            return Err(format!(
                "no blk-throttle here ({THROTTLE_READ_IOPS} is missing: cgroup v1's blkio \
                 controller is not mounted)"
            ));
        }
        std::fs::write(THROTTLE_READ_IOPS, format!("{ma}:{mi} {iops}"))
            .map_err(|e| format!("cannot limit {device}'s reads ({THROTTLE_READ_IOPS}): {e}"))?;
        Ok(ReadThrottle {
            file: THROTTLE_READ_IOPS,
            rule: format!("{ma}:{mi} 0"),
        })
    }
}

impl Drop for ReadThrottle {
    fn drop(&mut self) {
        // "MAJ:MIN 0" removes the rule.
        let _ = std::fs::write(self.file, &self.rule);
    }
}

fn destroy_loop(device: &str, backing: &str, bdev: u64, bino: u64) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let ours = std::fs::metadata(backing)
        .map(|m| m.dev() == bdev && m.ino() == bino)
        .unwrap_or(false);
    // Every loop device on our backing file (the recorded one, and one a
    // crash attached before it was recorded).
    let mut devs: Vec<String> = Vec::new();
    if ours {
        if let Ok(out) = tool("losetup", &["-j", backing, "-O", "NAME", "-n", "-l"]) {
            devs.extend(out.lines().map(|l| l.trim().to_string()));
        }
    }
    if !device.is_empty() && !devs.iter().any(|d| d == device) {
        // Still attached to our file? (the file name check of /sys)
        let name = device.trim_start_matches("/dev/");
        let bf = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
            .unwrap_or_default();
        if ours && bf.trim() == backing {
            devs.push(device.to_string());
        }
    }
    for d in devs.iter().filter(|d| !d.is_empty()) {
        reset_request_limit(d);
        tool("losetup", &["-d", d])?;
    }
    for d in devs.iter().filter(|d| !d.is_empty()) {
        wait_detached(d, backing)?;
    }
    if ours {
        std::fs::remove_file(backing)
            .map_err(|e| Error::System(format!("cannot remove {backing}: {e}")))?;
    }
    Ok(())
}

/// How long a detach may stay pending: a holder of the device (udev's
/// probe after the attach, or the `mkfs` a killed `scratch create` left
/// running) closes it within this.
const DETACH_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// Wait until `device` no longer serves `backing`. `losetup -d` of a device
/// someone holds open only marks it to detach at the last close
/// (autoclear), so "destroyed" would otherwise be said of a device still
/// attached to its (deleted) file. An error names the device and how to
/// see who holds it; the record stays, so `scratch destroy` can be rerun.
fn wait_detached(device: &str, backing: &str) -> Result<()> {
    let name = device.trim_start_matches("/dev/");
    let file = format!("/sys/block/{name}/loop/backing_file");
    let attached = || {
        std::fs::read_to_string(&file)
            .map(|b| {
                let b = b.trim();
                b == backing || b.strip_suffix(" (deleted)") == Some(backing)
            })
            .unwrap_or(false)
    };
    let t0 = std::time::Instant::now();
    while attached() {
        if t0.elapsed() > DETACH_WAIT {
            return Err(Error::System(format!(
                "{device} is still attached to {backing} {}s after `losetup -d`: something holds \
                 it open and it detaches at the last close (see who: fuser -v {device}); \
                 run `dioscope scratch destroy` again once they have closed it",
                DETACH_WAIT.as_secs()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(())
}

/// Items made in this process, destroyed when dropped (on success, on
/// failure, and after a stop signal: the caller returns normally).
#[derive(Default)]
pub struct Session {
    ids: Vec<String>,
}

impl Session {
    pub fn new() -> Session {
        Session::default()
    }

    /// Take `it` into the session (it goes at teardown; a crash before
    /// that leaves it listed as a leftover: it is transient from the start).
    pub fn keep(&mut self, it: &Item) {
        self.ids.push(it.id.clone());
    }

    /// Whether this item is a leftover: made for a run, or not finished,
    /// and its process is gone.
    pub fn is_leftover(it: &Item) -> bool {
        it.transient && !it.creator_alive()
    }

    /// Destroy everything made, newest first. Errors are printed.
    pub fn teardown(&mut self) -> bool {
        let mut ok = true;
        while let Some(id) = self.ids.pop() {
            if let Err(e) = destroy(&id) {
                // Already removed with its file system: not an error.
                if !matches!(e, Error::Input(_)) {
                    eprintln!("dioscope: warning: scratch {id}: {e}");
                    ok = false;
                }
            }
        }
        ok
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.teardown();
    }
}
