//! Seed 004's users' trap: O_DIRECT writes to a block device that has page
//! cache pages (made by a buffered reader — blkid, a dd without
//! O_DIRECT — while the device is open) pay for invalidating them on every
//! write. Direct random writes (2 jobs, as in the seed) with a clean page
//! cache, with cached pages present, with a buffered reader running now and
//! then (intermittent: the trials split in two), and with dioscope's hygiene
//! (invalidate before each trial) over the same cached pages.

use super::{apart, job, pm, Ctx, Outcome, Recipe, Stop, Table};
use crate::experiment::samples::M;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const RECIPE: Recipe = Recipe {
    name: "pagecache-interference",
    seed: "004",
    reproduces: "O_DIRECT random writes to a block device with and without page-cache pages from \
                 a buffered reader, intermittent, and with dioscope's hygiene (seed 004)",
    run,
};

const MODES: &[(&str, &str)] = &[
    ("clean", "no cached pages, invalidate=1"),
    ("cached", "device read buffered first, invalidate=0"),
    (
        "intermittent",
        "a buffered reader every 0.5 s during the run, invalidate=0",
    ),
    (
        "hygiene",
        "device read buffered first, invalidate=1 (dioscope's default)",
    ),
];

/// Read the whole device without O_DIRECT: its pages land in the cache.
fn buffered_read(dev: &str) -> std::io::Result<()> {
    let mut f = std::fs::File::open(dev)?;
    let mut buf = vec![0u8; 1 << 20];
    while f.read(&mut buf)? > 0 {}
    Ok(())
}

/// A background buffered reader (as `blkid -p` run from udev now and
/// then): one pass, a pause, until stopped.
struct Reader {
    stop: Arc<AtomicBool>,
    h: Option<std::thread::JoinHandle<()>>,
}

impl Reader {
    fn start(dev: String) -> Reader {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let _ = buffered_read(&dev);
                for _ in 0..50 {
                    if s.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        });
        Reader { stop, h: Some(h) }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.h.take() {
            let _ = h.join();
        }
    }
}

fn run(ctx: &mut Ctx) -> Result<Outcome, Stop> {
    let size: u64 = if ctx.quick { 128 << 20 } else { 1 << 30 };
    let z = ctx.zram(size, true)?;
    let dev = z.devices()[0].clone();
    let runtime = if ctx.quick { "1" } else { "5" };
    for (mode, _) in MODES {
        let invalidate = if matches!(*mode, "clean" | "hygiene") {
            "1"
        } else {
            "0"
        };
        let o: Vec<(&str, String)> = vec![
            ("filename", dev.clone()),
            ("rw", "randwrite".into()),
            ("bs", "4k".into()),
            ("direct", "1".into()),
            ("ioengine", "psync".into()),
            ("numjobs", "2".into()),
            ("group_reporting", "1".into()),
            ("runtime", runtime.into()),
            ("time_based", "1".into()),
            ("invalidate", invalidate.into()),
            ("destroy-data-on", dev.clone()),
        ];
        if matches!(*mode, "cached" | "hygiene") {
            buffered_read(&dev)
                .map_err(|e| Stop::Failed(format!("buffered read of {dev}: {e}")))?;
        }
        let _reader = (*mode == "intermittent").then(|| Reader::start(dev.clone()));
        // Intermittent needs trials to split into two groups.
        let trials = match (*mode, ctx.quick) {
            ("intermittent", true) => "5",
            (_, true) => "3",
            ("intermittent", false) => "10",
            _ => "auto",
        };
        ctx.cell(mode, &job("w", &o), trials)?;
    }
    let mut t = Table::new(
        &format!("4 KiB O_DIRECT random writes, 2 jobs, psync, on {dev} (zram, filled)"),
        &[
            "mode",
            "kIOPS",
            "MB/s",
            "µs per block",
            "CPU µs/IO",
            "findings",
            "what",
        ],
    );
    for (mode, what) in MODES {
        let f = ctx.findings(mode);
        t.rows.push(vec![
            mode.to_string(),
            pm(ctx.stat(mode, M::IOPS), 1e-3, 1),
            pm(ctx.stat(mode, M::BW), 1e-6, 0),
            pm(ctx.stat(mode, M::LAT_MEAN), 1e-3, 2),
            pm(ctx.stat(mode, M::CPU), 1.0, 2),
            if f.is_empty() {
                "—".into()
            } else {
                f.join(" ")
            },
            what.to_string(),
        ]);
    }
    let lat = |m: &str| ctx.stat(m, M::LAT_MEAN).map(|s| s.mean);
    let verdict =
        match (lat("clean"), lat("cached"), lat("hygiene")) {
            (Some(c), Some(k), Some(h)) => {
                format!(
            "with cached pages a block takes {:.2} µs vs {:.2} µs clean ({:+.0} %){}; with \
             dioscope's invalidate before each trial {:.2} µs ({:+.0} % vs clean): {}. {}",
            k / 1e3,
            c / 1e3,
            (k / c - 1.0) * 100.0,
            if !apart(ctx.stat("clean", M::LAT_MEAN), ctx.stat("cached", M::LAT_MEAN)) {
                " — within the noise (95 % intervals overlap): no interference shown at this \
                 precision"
            } else if k > c * 1.1 {
                " — the interference is PRESENT on this kernel"
            } else {
                " — no lasting interference: each page is dropped by the first direct write to it"
            },
            h / 1e3,
            (h / c - 1.0) * 100.0,
            if !apart(ctx.stat("clean", M::LAT_MEAN), ctx.stat("cached", M::LAT_MEAN)) {
                "nothing for it to remove here"
            } else if h < c * 1.1 {
                "the hygiene removes it"
            } else {
                "the hygiene does not fully remove it"
            },
            if ctx.findings("intermittent").iter().any(|f| f.contains("bimodal")) {
                "The intermittent reader split the trials in two (bimodal_trials)."
            } else {
                "The intermittent reader did not split the trials into two groups here."
            }
        )
            }
            _ => "no result: a cell did not run".into(),
        };
    Ok(Outcome {
        tables: vec![t],
        verdict,
        seed_reported: "2006 (raw/blockdev O_DIRECT rework): the generic direct-I/O path did page \
                        cache bookkeeping per I/O on a block device; users saw slow, bimodal \
                        direct writes when a buffered reader had left pages behind"
            .into(),
        notes: vec![
            "findings are dioscope's diagnosis of each cell's run (e.g. page_cache_on_target, \
             other_openers, bimodal_trials)"
                .into(),
        ],
    })
}
