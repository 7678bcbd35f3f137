//! One way to run a child process with a time limit, shared by the test
//! binaries (each includes this file with `#[path]`): a hang must fail or be
//! counted, never stall CI.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Run `c` with its output captured. `None` when it took longer than
/// `limit`; it has then been stopped: with `interrupt_first`, SIGINT and 5 s
/// to clean up after itself (dioscope removes its scratch files), then
/// SIGKILL.
pub fn run_within(mut c: Command, limit: Duration, interrupt_first: bool) -> Option<Output> {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    if let Ok(out) = rx.recv_timeout(limit) {
        return Some(out.expect("wait for child"));
    }
    let kill = |signal: &str| {
        let _ = Command::new("kill").args([signal, &pid]).status();
    };
    if interrupt_first {
        kill("-INT");
        if rx.recv_timeout(Duration::from_secs(5)).is_ok() {
            return None;
        }
    }
    kill("-9");
    let _ = rx.recv_timeout(Duration::from_secs(5));
    None
}
