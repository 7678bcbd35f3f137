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

/// Whether phases that take a while (laying out a file, filling a scratch
/// device, post-processing a profile) say how far they are on stderr: 0
/// decide by whether stderr is a terminal, 1 always, 2 never. A run sets it
/// from `--eta` (fio's option: auto = a terminal, always, never).
static PROGRESS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Show phase progress always (`--eta=always`), never, or only on a
/// terminal (`None`, the default).
pub fn set_progress(show: Option<bool>) {
    let v = match show {
        None => 0,
        Some(true) => 1,
        Some(false) => 2,
    };
    PROGRESS.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// A phase's progress on stderr: nothing for a phase done within
/// [`Progress::FIRST`], then an update at most every [`Progress::EVERY_TTY`]
/// on a terminal (one line rewritten in place, cleared at the end) or every
/// [`Progress::EVERY_PLAIN`] otherwise (plain lines, for logs).
pub struct Progress {
    what: String,
    total: u64,
    t0: std::time::Instant,
    last: Option<std::time::Instant>,
    show: bool,
    tty: bool,
}

impl Progress {
    /// The first update comes this long after the start.
    pub const FIRST: std::time::Duration = std::time::Duration::from_millis(250);
    pub const EVERY_TTY: std::time::Duration = std::time::Duration::from_millis(250);
    pub const EVERY_PLAIN: std::time::Duration = std::time::Duration::from_secs(1);

    /// `what`: "laying out /x/f"; `total`: the bytes (or units) to do, 0
    /// when unknown.
    pub fn new(what: impl Into<String>, total: u64) -> Progress {
        let tty = dioscope_sys::proc::stderr_is_tty();
        let show = match PROGRESS.load(std::sync::atomic::Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => tty,
        };
        Progress {
            what: what.into(),
            total,
            t0: std::time::Instant::now(),
            last: None,
            show,
            tty,
        }
    }

    /// `done` bytes of `total` so far.
    pub fn update(&mut self, done: u64) {
        if !self.show {
            return;
        }
        let now = std::time::Instant::now();
        let due = match self.last {
            None => now.duration_since(self.t0) >= Self::FIRST,
            Some(l) => {
                let every = if self.tty {
                    Self::EVERY_TTY
                } else {
                    Self::EVERY_PLAIN
                };
                now.duration_since(l) >= every
            }
        };
        if due {
            self.last = Some(now);
            self.say(&self.line(done, now));
        }
    }

    /// A phase whose amount is unknown: how long it has taken so far.
    pub fn tick(&mut self) {
        self.update(0)
    }

    fn line(&self, done: u64, now: std::time::Instant) -> String {
        let secs = now.duration_since(self.t0).as_secs_f64();
        if self.total == 0 {
            return if done > 0 {
                format!(
                    "dioscope: {}: {} read, {secs:.0} s",
                    self.what,
                    crate::results::human_bytes(done)
                )
            } else {
                format!("dioscope: {} … {secs:.0} s", self.what)
            };
        }
        let pct = 100.0 * done as f64 / self.total as f64;
        let rate = done as f64 / secs.max(1e-3);
        let eta = if done > 0 && done < self.total {
            format!(", {:.0} s left", (self.total - done) as f64 / rate)
        } else {
            String::new()
        };
        format!(
            "dioscope: {}: {} of {} ({pct:.0} %), {}/s{eta}",
            self.what,
            crate::results::human_bytes(done),
            crate::results::human_bytes(self.total),
            crate::results::human_bytes(rate as u64),
        )
    }

    fn say(&self, line: &str) {
        use std::io::Write;
        let mut e = std::io::stderr().lock();
        let _ = if self.tty {
            write!(e, "\r\x1b[K{line}")
        } else {
            writeln!(e, "{line}")
        };
        let _ = e.flush();
    }
}

impl Drop for Progress {
    /// The line in place is cleared: what comes next starts on a clean line.
    fn drop(&mut self) {
        if self.show && self.tty && self.last.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    #[test]
    fn line_says_what_how_far_and_how_fast() {
        let mut p = Progress::new("laying out /x", 1 << 30);
        p.t0 = std::time::Instant::now() - std::time::Duration::from_secs(2);
        let l = p.line(256 << 20, std::time::Instant::now());
        assert!(l.starts_with("dioscope: laying out /x: 256"), "{l}");
        assert!(
            l.contains("(25 %)") && l.contains("/s") && l.contains("s left"),
            "{l}"
        );
        let q = Progress::new("post-processing", 0);
        assert!(q
            .line(0, std::time::Instant::now())
            .contains("post-processing …"));
    }
}
