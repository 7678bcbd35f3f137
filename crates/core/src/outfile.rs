//! Result files: written whole (temporary file, fsync, rename) so a crash
//! leaves the old result or the new one, never half of one.

/// Write `data` to `path` atomically: a temporary file `.NAME.tmp.PID` in
/// the same directory, fsync, then rename. A crash leaves either the old file
/// or the new one, never half of one.
///
/// A process killed outright (SIGKILL, power loss) before the rename leaves
/// its temporary file; the next write of the same result removes those of
/// processes that no longer exist. (O_TMPFILE would hide the temporary file,
/// but not every filesystem has it and replacing an existing result still
/// needs a visible name before the rename.)
pub fn write_atomic(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    remove_stale_temps(dir, &name);
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let res = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Remove `.NAME.tmp.PID` files in `dir` whose process is gone.
fn remove_stale_temps(dir: &std::path::Path, name: &str) {
    let prefix = format!(".{name}.tmp.");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for ent in rd.flatten() {
        let f = ent.file_name();
        let Some(pid) = f
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = std::path::Path::new("/proc").join(pid.to_string()).exists();
        if pid != std::process::id() && !alive {
            let _ = std::fs::remove_file(ent.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn atomic_write_removes_temps_of_dead_processes_only() {
        let d = tempfile::tempdir().unwrap();
        // A process that has exited: its pid names a stale temporary file.
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let stale = d.path().join(format!(".r.json.tmp.{dead}"));
        let live = d.path().join(".r.json.tmp.1");
        let other = d.path().join(format!(".other.json.tmp.{dead}"));
        for p in [&stale, &live, &other] {
            std::fs::write(p, b"{\"half").unwrap();
        }
        write_atomic(&d.path().join("r.json"), b"whole").unwrap();
        assert!(
            !stale.exists(),
            "a dead process's temporary file is removed"
        );
        assert!(live.exists(), "pid 1 is alive: its file is not touched");
        assert!(
            other.exists(),
            "another result's temporary file is not touched"
        );
    }
}
