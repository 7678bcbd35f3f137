//! The per-I/O RWF flags that need the file system's support, checked
//! before the run: `uncached` (RWF_DONTCACHE, Linux 6.14+) by one probe
//! read with the flag on the job's own descriptor, and `atomic`
//! (RWF_ATOMIC, Linux 6.11+) by the file's statx atomic-write limits.
//!
//! Measured on Linux 6.18 (README.md, "Where dioscope differs from fio"): ext4 and XFS take
//! RWF_DONTCACHE, buffered or direct (with O_DIRECT it changes nothing);
//! btrfs, tmpfs and a raw loop device return EOPNOTSUPP. XFS reports atomic
//! writes of 4 KiB–1 MiB (one segment); ext4 without bigalloc, btrfs, tmpfs
//! and loop devices report none.

use crate::job::JobSpec;
use crate::targets::{Target, TargetInfo, TargetKind};
use dioscope_sys::fs::AtomicWrite;

/// What the file system under `t` is, for messages.
fn fs_name(t: &Target) -> String {
    if t.kind == TargetKind::BlockDevice {
        return "a block device".into();
    }
    match dioscope_sys::fsinfo::fstatfs(t.fd()) {
        Ok(s) => match dioscope_sys::fsinfo::fs_type_name(s.fs_type) {
            Some(n) => n.to_string(),
            None => format!("file system 0x{:x}", s.fs_type),
        },
        Err(_) => "an unknown file system".into(),
    }
}

/// Probe RWF_DONTCACHE with one read on `t`'s descriptor: `Some(why)`
/// when the kernel refuses it (EOPNOTSUPP). Other errors are left to the
/// first I/O, which reports them.
pub(super) fn probe_dontcache(t: &Target) -> Option<String> {
    let len = (t.offset_align as usize).max(4096);
    let flags = dioscope_sys::io::RWF_DONTCACHE;
    match dioscope_sys::io::probe_read_flags(t.fd(), flags, len) {
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Some(format!(
            "uncached=1: {} ({}) refuses RWF_DONTCACHE (EOPNOTSUPP): it has no uncached \
             buffered I/O (on Linux 6.18 ext4 and XFS have it; btrfs, tmpfs and block \
             devices do not; kernels before 6.14 have none); put the file on such a file \
             system, or drop uncached",
            t.path.display(),
            fs_name(t)
        )),
        _ => None,
    }
}

/// The atomic-write limits of `t`, or why it has none.
pub(super) fn atomic_limits(t: &Target) -> Result<AtomicWrite, String> {
    let st = dioscope_sys::fs::statx_fd(t.fd()).map_err(|e| format!("statx: {e}"))?;
    st.atomic_write.ok_or_else(|| {
        format!(
            "{} ({}) reports no atomic-write limits (statx STATX_WRITE_ATOMIC: none), so \
             RWF_ATOMIC writes would fail with EOPNOTSUPP",
            t.path.display(),
            fs_name(t)
        )
    })
}

/// Refuse `atomic=1` when the job's writes on `t` (region starting at
/// `off`) do not fit the file's limits `lim`.
pub(super) fn check_atomic(
    j: &JobSpec,
    t: &TargetInfo,
    lim: &Result<AtomicWrite, String>,
    off: u64,
) -> Result<(), String> {
    let lim = lim.as_ref().map_err(|why| {
        format!("atomic=1: {why}; use a file system with atomic writes (XFS: 4 KiB-1 MiB on Linux 6.18), or drop atomic")
    })?;
    let range = format!(
        "{}-{} bytes (statx stx_atomic_write_unit_min/max of {})",
        lim.unit_min,
        lim.unit_max,
        t.path.display()
    );
    for bs in j.bs[1].all() {
        if bs < lim.unit_min as u64 || bs > lim.unit_max as u64 || !bs.is_power_of_two() {
            return Err(format!(
                "atomic=1: a write of bs={bs} is outside the atomic-write unit {range}: \
                 use a power-of-two bs in that range"
            ));
        }
        for (what, v) in [("offset", off), ("offset_increment", j.offset_increment)] {
            if v % bs != 0 {
                return Err(format!(
                    "atomic=1: each atomic write must be aligned to its size, and {what}={v} \
                     is not a multiple of bs={bs} (atomic-write unit {range}); align {what}"
                ));
            }
        }
    }
    Ok(())
}
