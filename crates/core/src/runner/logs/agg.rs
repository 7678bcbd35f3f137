//! `--bandwidth-log`: fio's aggregate bandwidth logs, `agg-read_bw.log`,
//! `agg-write_bw.log` and `agg-trim_bw.log` in the working directory, one
//! line per interval, `time_ms, KiB/s, direction, 0, 0` — the bandwidth of
//! every job of the run together.
//!
//! fio fills them from its progress display's running totals (so with
//! `--eta=never`, or no terminal, its files stay empty). dioscope writes
//! them from the intervals it measures anyway (those of the report's
//! `bw (KiB/s)` samples: 500 ms, doubled as a long run needs, so a trial
//! keeps a bounded number of them): the jobs' intervals of a run phase
//! are summed by their end time; a later phase (after a `stonewall`)
//! follows the one before on the time line. Ramp intervals are left out.
//! Trial 1 writes fio's names; trial K > 1 writes `agg-read_bw.tK.log`, as
//! the per-job logs do. Trims are not sampled per interval: with a job
//! that trims, the trim log is left empty and a note says so; otherwise
//! its lines say 0, as fio's do.

use super::super::result::RunResult;
use crate::results::measure::Tick;
use std::collections::BTreeMap;
use std::path::Path;

/// The three logs' lines for one trial (`trial` 0-based): read, write,
/// trim, each `(time_ms, KiB/s)`; `None` for trim when a job trims.
type Lines = [Option<Vec<(u64, u64)>>; 3];

fn trial_lines(r: &RunResult, trial: usize) -> Lines {
    let trims = r
        .jobs
        .iter()
        .any(|j| j.resolved.spec.rw.trims() || j.trials.iter().any(|t| t.trim.ios > 0));
    let mut phases: BTreeMap<u32, BTreeMap<u64, [u64; 2]>> = BTreeMap::new();
    let mut phase_len: BTreeMap<u32, u64> = BTreeMap::new();
    for j in &r.jobs {
        let Some(t) = j.trials.get(trial) else {
            continue;
        };
        let p = phases.entry(j.resolved.phase).or_default();
        for k in t.ticks.iter().filter(|k: &&Tick| !k.ramp && k.dur_ns > 0) {
            let e = p.entry(k.end_ns / 1_000_000).or_default();
            for (sum, bytes) in e.iter_mut().zip(k.bytes) {
                *sum += kib_per_s(bytes, k.dur_ns);
            }
        }
        let end = t.ticks.last().map(|k| k.end_ns / 1_000_000).unwrap_or(0);
        let l = phase_len.entry(j.resolved.phase).or_default();
        *l = (*l).max(end);
    }
    let mut out: Lines = [Some(Vec::new()), Some(Vec::new()), Some(Vec::new())];
    let mut offset = 0u64;
    for (phase, ticks) in &phases {
        for (ms, bw) in ticks {
            for (d, v) in out.iter_mut().enumerate() {
                if let Some(v) = v {
                    v.push((offset + ms, if d < 2 { bw[d] } else { 0 }));
                }
            }
        }
        offset += phase_len.get(phase).copied().unwrap_or(0);
    }
    if trims {
        out[2] = None;
    }
    out
}

fn kib_per_s(bytes: u64, dur_ns: u64) -> u64 {
    (bytes as f64 / 1024.0 / (dur_ns as f64 / 1e9)).round() as u64
}

/// The text of one log.
fn render(lines: &[(u64, u64)], dir: usize) -> String {
    lines
        .iter()
        .map(|(ms, bw)| format!("{ms}, {bw}, {dir}, 0, 0\n"))
        .collect()
}

/// Write the logs into `dir` (through the checked way to create a file:
/// never a target, a device or a planted symlink). Returns the notes to
/// print; `Err` names the file that could not be written.
pub fn write(r: &RunResult, dir: &Path) -> Result<Vec<String>, String> {
    let trials = r.jobs.iter().map(|j| j.trials.len()).max().unwrap_or(0);
    let mut notes = Vec::new();
    for t in 0..trials.max(1) {
        let lines = trial_lines(r, t);
        for (d, name) in ["read", "write", "trim"].iter().enumerate() {
            let file = if t == 0 {
                format!("agg-{name}_bw.log")
            } else {
                format!("agg-{name}_bw.t{}.log", t + 1)
            };
            let text = match &lines[d] {
                Some(l) => render(l, d),
                None => {
                    if t == 0 {
                        notes.push(format!(
                            "--bandwidth-log: {file} is empty: dioscope does not sample trims \
                             per interval (the report's trim figures are over the whole run)"
                        ));
                    }
                    String::new()
                }
            };
            let path = dir.join(&file);
            let mut f = crate::outfile::open(
                &path,
                crate::outfile::Mode::Truncate,
                &crate::outfile::Rules::new("an aggregate bandwidth log"),
            )
            .map_err(|e| format!("cannot write {file}: {}", e.why))?;
            std::io::Write::write_all(&mut f, text.as_bytes())
                .map_err(|e| format!("cannot write {file}: {e}"))?;
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_fios_and_bandwidth_is_kib_per_second() {
        assert_eq!(kib_per_s(1024 * 1000, 500_000_000), 2000);
        assert_eq!(
            render(&[(500, 2000), (1000, 1500)], 1),
            "500, 2000, 1, 0, 0\n1000, 1500, 1, 0, 0\n"
        );
    }
}
