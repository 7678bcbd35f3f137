//! Inputs other than job files — results to compare or report, a sweep's
//! `--resume` state, a recipe's `--compare-with` — read with bounds: a
//! regular file or a pipe (`-`, `/dev/stdin`, an inherited `/dev/fd/N`, a
//! FIFO), at most [`MAX_INPUT_BYTES`]. A device (`/dev/zero` never ends), a
//! directory or a socket is refused before a byte is read.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

/// The largest result read: a json+ of many jobs is tens of MiB.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Read the input `given` for `what` (named in errors, e.g. `compare`),
/// at most `limit` bytes.
pub fn read(given: &str, what: &str, limit: u64) -> Result<String, String> {
    let shown = crate::outfile::shown(given);
    let err = |why: String| format!("{what}: {shown}: {why}");
    let mut f = if given == "-" {
        std::fs::File::open("/proc/self/fd/0")
            .map_err(|e| err(format!("cannot read standard input: {e}")))?
    } else {
        if given.is_empty() {
            return Err(format!("{what}: an empty file name; give a result's path"));
        }
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(crate::osstr::path(given))
            .map_err(|e| {
                format!("{what}: cannot read {shown}: {e} (give the path of a JSON result)")
            })?
    };
    let m = f.metadata().map_err(|e| err(e.to_string()))?;
    let ft = m.file_type();
    let kind = if ft.is_dir() {
        Some("a directory")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_char_device() && !crate::outfile::is_terminal(&m) {
        Some("a character device (it may never end)")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    };
    if let Some(k) = kind {
        return Err(err(format!(
            "is {k}, not a result; give a regular file, or - for standard input"
        )));
    }
    if ft.is_file() && m.len() > limit {
        return Err(err(format!(
            "is {} bytes, more than the {limit} an input may have; is it really a result?",
            m.len()
        )));
    }
    if ft.is_fifo() && given != "-" {
        // A named pipe: wait for its writer, as a pipe's reader does.
        f = std::fs::File::open(crate::osstr::path(given)).map_err(|e| err(e.to_string()))?;
    }
    let mut bytes = Vec::new();
    (&mut f)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(err(format!(
            "is more than the {limit} bytes an input may have; is it really a result?"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        err(format!(
            "is not text (a byte that is not UTF-8 at offset {}); give a JSON result",
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_huge_inputs_are_refused() {
        let e = read("/dev/zero", "compare", 1 << 20).unwrap_err();
        assert!(e.contains("character device"), "{e}");
        let e = read("/", "report", 1 << 20).unwrap_err();
        assert!(e.contains("directory"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.json");
        std::fs::write(&p, vec![b' '; 2048]).unwrap();
        let e = read(p.to_str().unwrap(), "report", 1024).unwrap_err();
        assert!(e.contains("more than the 1024"), "{e}");
        assert_eq!(
            read(p.to_str().unwrap(), "report", 4096).unwrap().len(),
            2048
        );
    }

    #[test]
    fn a_pipe_is_read_up_to_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let f2 = fifo.clone();
        let w = std::thread::spawn(move || {
            // An endless writer: the reader must stop at the limit.
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&f2) {
                let chunk = vec![b'x'; 4096];
                while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
            }
        });
        let e = read(fifo.to_str().unwrap(), "compare", 64 << 10).unwrap_err();
        assert!(e.contains("more than the 65536"), "{e}");
        let _ = std::fs::remove_file(&fifo);
        drop(w);
    }
}
