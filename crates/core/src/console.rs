//! What dioscope prints outside a result: `dioscope: error: …` on stderr
//! (with overlong words clipped), and text on stdout that survives a closed
//! pipe. Every command and the run pipeline print through these.

/// `dioscope: error: MSG` on stderr; the exit code of bad input.
pub fn eprint_err(msg: &str) -> i32 {
    eprintln!("dioscope: error: {}", crate::osstr::shown(&clip_words(msg)));
    2
}

/// A message with each overlong word (a 1 MB bad value echoed back) cut to
/// its start and its length, so the message stays readable.
pub fn clip_words(msg: &str) -> String {
    if msg.len() <= 2000 {
        return msg.to_string();
    }
    msg.split(' ')
        .map(crate::outfile::shown)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Write to standard output. A reader that went away (`dioscope … | head`)
/// is not an error: the run itself has finished and its result file (if
/// any) is written; other write errors are said on stderr. (`print!` would
/// panic on EPIPE, since Rust ignores SIGPIPE.)
pub fn stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("dioscope: error: cannot write to standard output: {e}"),
    }
}
