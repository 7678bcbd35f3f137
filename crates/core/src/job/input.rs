//! Job files are input from anywhere: read them with bounds. Only regular
//! files are read (a FIFO would hang, `/dev/zero` never ends, a directory is
//! a typo), each at most [`MAX_JOB_FILE_BYTES`], and includes may not expand
//! to more than [`MAX_INCLUDED_FILES`] files or [`MAX_TOTAL_LINES`] lines
//! in all (a fan-out of includes is exponential long before it is deep).

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest job file read: real ones are a few KiB.
const MAX_JOB_FILE_BYTES: u64 = 1 << 20;
/// Files read for one run, includes counted each time they are read.
pub const MAX_INCLUDED_FILES: usize = 1024;
/// Lines of all job files of one run, includes expanded.
pub const MAX_TOTAL_LINES: usize = 100_000;

/// Read the job file at `path`, refusing anything but a regular file of at
/// most [`MAX_JOB_FILE_BYTES`]. The open does not block (O_NONBLOCK), so a
/// FIFO is refused instead of waiting for a writer.
pub fn read_job_file(path: &Path) -> Result<String, String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    let m = f.metadata().map_err(|e| e.to_string())?;
    let ft = m.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO (named pipe)"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(format!(
            "is {kind}, not a job file; job files and includes must be regular files"
        ));
    }
    if m.len() > MAX_JOB_FILE_BYTES {
        return Err(format!(
            "is {} bytes, more than the {MAX_JOB_FILE_BYTES} a job file may have; is it really \
             a job file?",
            m.len()
        ));
    }
    let mut bytes = Vec::new();
    // The file may grow while we read: never more than the limit.
    f.take(MAX_JOB_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    // Bytes that are not UTF-8 (a file name in another encoding) are kept
    // exactly (osstr).
    let text = crate::osstr::escape_bytes(&bytes);
    if bytes.len() as u64 > MAX_JOB_FILE_BYTES {
        return Err(format!(
            "grew beyond {MAX_JOB_FILE_BYTES} bytes while being read"
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_and_huge_files_are_refused() {
        assert!(read_job_file(Path::new("/dev/zero"))
            .unwrap_err()
            .contains("character device"));
        assert!(read_job_file(Path::new("/"))
            .unwrap_err()
            .contains("directory"));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.fio");
        std::fs::File::create(&p)
            .unwrap()
            .set_len(MAX_JOB_FILE_BYTES + 1)
            .unwrap();
        assert!(read_job_file(&p).unwrap_err().contains("more than"));
        std::fs::write(&p, "[a]\n").unwrap();
        assert_eq!(read_job_file(&p).unwrap(), "[a]\n");
    }
}
