//! The state file: what dioscope made, under /run/dioscope/ (tmpfs: it
//! goes with a reboot, as do the devices). Read-modify-write under a lock
//! file so that two dioscope processes do not lose each other's records.

use super::{Error, Item, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    next: u64,
    items: Vec<Item>,
}

/// The state directory (`DIOSCOPE_STATE_DIR` overrides it, for tests).
pub fn state_dir() -> PathBuf {
    std::env::var_os("DIOSCOPE_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/dioscope"))
}

pub fn state_path() -> PathBuf {
    state_dir().join("scratch.json")
}

/// The last id number given: kept when the registry empties, so that an id
/// from an old `scratch list` never names a newer device.
fn counter_path() -> PathBuf {
    state_dir().join("scratch.next")
}

fn read_counter() -> u64 {
    std::fs::read_to_string(counter_path())
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

struct Lock(PathBuf);

impl Lock {
    fn take() -> Result<Lock> {
        let dir = state_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::System(format!("cannot create {}: {e}", dir.display())))?;
        let p = dir.join("scratch.lock");
        let t0 = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p)
            {
                Ok(_) => return Ok(Lock(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // A holder only reads and writes one small file: a lock
                    // older than 10 s was left by a killed process.
                    let stale = std::fs::metadata(&p)
                        .and_then(|m| m.modified())
                        .map(|m| m.elapsed().unwrap_or_default() > Duration::from_secs(10))
                        .unwrap_or(false);
                    if stale || t0.elapsed() > Duration::from_secs(15) {
                        let _ = std::fs::remove_file(&p);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(Error::System(format!("cannot lock {}: {e}", p.display()))),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn read() -> Result<State> {
    let p = state_path();
    match std::fs::read_to_string(&p) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| {
            Error::System(format!(
                "{} is not dioscope's scratch state: {e} (move it away to start afresh)",
                p.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
        Err(e) => Err(Error::System(format!("cannot read {}: {e}", p.display()))),
    }
}

fn write(s: &State) -> Result<()> {
    let p = state_path();
    if s.items.is_empty() {
        // Nothing left: no file either (a clean system has no state but
        // the id counter).
        let _ = std::fs::remove_file(&p);
        return Ok(());
    }
    let text = serde_json::to_string_pretty(s).unwrap_or_default();
    crate::outfile::write_atomic(&p, text.as_bytes())
        .map_err(|e| Error::System(format!("cannot write {}: {e}", p.display())))
}

/// Every recorded item.
pub fn load() -> Result<Vec<Item>> {
    Ok(read()?.items)
}

/// A new id (`PREFIX-N`), and the item it names recorded by `make`.
pub(super) fn add(prefix: &str, make: impl FnOnce(String) -> Item) -> Result<Item> {
    let _l = Lock::take()?;
    let mut s = read()?;
    s.next = s.next.max(read_counter()) + 1;
    let p = counter_path();
    crate::outfile::write_atomic(&p, format!("{}\n", s.next).as_bytes())
        .map_err(|e| Error::System(format!("cannot write {}: {e}", p.display())))?;
    let it = make(format!("{prefix}-{}", s.next));
    s.items.push(it.clone());
    write(&s)?;
    Ok(it)
}

/// Replace the record of `it.id`.
pub(super) fn update(it: &Item) -> Result<()> {
    let _l = Lock::take()?;
    let mut s = read()?;
    for x in s.items.iter_mut() {
        if x.id == it.id {
            *x = it.clone();
        }
    }
    write(&s)
}

/// Items `ids` and the devices under them stay until destroyed: no longer
/// leftovers when their creator ends (`scratch create`'s, once made).
pub(super) fn persist(id: &str) -> Result<()> {
    let _l = Lock::take()?;
    let mut s = read()?;
    for x in s.items.iter_mut() {
        if x.id == id || x.parent.as_deref() == Some(id) {
            x.transient = false;
        }
    }
    write(&s)
}

pub(super) fn remove(id: &str) -> Result<()> {
    let _l = Lock::take()?;
    let mut s = read()?;
    s.items.retain(|x| x.id != id);
    write(&s)
}
