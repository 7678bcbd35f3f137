//! One sentence on what to do about an I/O error, from the errno and the
//! target's state now.

use crate::runner::RunResult;

/// What to do about an I/O error of a run: one sentence from the errno and
/// the state of the target now (a file or device that shrank since the run
/// started explains a read that returned nothing).
pub fn io_error_hint(e: &crate::runner::IoErrorInfo, path: &str, r: &RunResult) -> String {
    // A pacing limit the job failed (rate_min, latency_target) says itself what happened.
    if let Some(n) = r
        .notes
        .iter()
        .find(|n| crate::runner::pacing::is_failure(n, e.errno))
    {
        return n.clone();
    }
    let start = r
        .targets
        .iter()
        .find(|t| t.path.as_path() == std::path::Path::new(path));
    let now = current_size(path);
    if let (Some(t), Some(now)) = (start, now) {
        if now < t.size {
            return format!(
                "{path} is now {now} bytes, {} when the run started: another process truncated or shrank it (a resized or detached device?); keep other writers away from the target",
                t.size
            );
        }
    }
    if start.is_some() && now.is_none() {
        return format!("{path} is gone: it was removed or its device detached during the run");
    }
    if e.errno == libc::EIO && !e.write && now.is_some_and(|n| e.offset >= n) {
        return format!(
            "the read at offset {} is past the end of {path} ({} bytes now): nothing was written there yet (create_on_open starts the file empty); a synchronous engine fails such a read, as fio's do: use ioengine=libaio or io_uring (a read past the end then counts as 0 bytes), rw=write, or drop create_on_open",
            e.offset,
            now.unwrap_or(0)
        );
    }
    match e.errno {
        libc::ENOSPC | libc::EDQUOT => {
            let (free, place) = crate::targets::free_space(std::path::Path::new(path));
            let held = if place.as_path() == std::path::Path::new(path) {
                format!("the filesystem holding {path}")
            } else {
                format!(
                    "the filesystem holding {}, the backing file of {path},",
                    place.display()
                )
            };
            format!(
                "{held} is full ({free} bytes free): free space or lower size=; writes into the holes of a sparse file, and every write on a copy-on-write filesystem (btrfs), need new space"
            )
        }
        libc::EIO => format!(
            "the device failed the request: read `dmesg` for errors of {path} or the device under it; its medium or backing store may have failed or been removed"
        ),
        libc::ENXIO | libc::ENODEV => {
            format!("the device of {path} went away (removed or detached)")
        }
        libc::EROFS | libc::EACCES | libc::EPERM => format!(
            "{path} became read-only or lost its permissions (a filesystem remounted read-only after an error?); check `dmesg` and the mount"
        ),
        libc::EINVAL => "the kernel refused the request: an alignment or a flag this target does not support".into(),
        _ => format!("errno {} from the kernel; check `dmesg`", e.errno),
    }
}

/// Size of a file or block device now (None if it no longer exists).
fn current_size(path: &str) -> Option<u64> {
    let st = dioscope_sys::fs::statx_path(std::path::Path::new(path)).ok()?;
    if st.is_block_device() {
        let sectors = crate::targets::sysfs_block_attr(st.rdev, "size")?;
        return sectors.parse::<u64>().ok().map(|s| s * 512);
    }
    Some(st.size)
}
