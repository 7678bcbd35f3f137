//! Seed 003: O_DIRECT on a block device should cost far less CPU per I/O
//! than on a file system ("a tight submission loop"). CPU µs per 4 KiB
//! direct read — submission and completion — per engine, on the block
//! device and on a file on it, with the kernel profile per I/O when perf
//! is there (`--profile`).

use super::verdict::{change_text, decide, median};
use super::{job, pm, run_steps, Ctx, Recipe, Said, Steps, Stop, Table, Verdict};
use crate::experiment::samples::M;
use crate::scratch::FsSpec;

pub const RECIPE: Recipe = Recipe {
    name: "submit-cost",
    seed: "003",
    reproduces: "CPU µs per 4 KiB O_DIRECT I/O per engine (psync, pvsync2, libaio, io_uring), \
                 block device vs file, with the kernel profile (seed 003)",
    run: run_steps::<SubmitCost>,
};

const ENGINES: &[&str] = &["psync", "pvsync2", "libaio", "io_uring"];

/// The effect an ABSENT verdict excludes: a direct read through the file
/// system costing 18 % more CPU than on the block device (the seed's ~20 %
/// micro-benchmark gain, about 0.9 µs per I/O).
pub const EFFECT_PCT: f64 = 18.0;

fn have_perf() -> bool {
    crate::profile::perf::find().is_ok()
}

struct SubmitCost;

/// ext4 on a zram device: the device and a file on it.
struct Setup {
    size: u64,
    dev: String,
    file: String,
    /// perf is there: the kernel profile per I/O.
    perf: bool,
    /// Profile the first engine's cells only (--quick without --profile).
    quick: bool,
}

impl Steps for SubmitCost {
    type Setup = Setup;
    const SEED_REPORTED: &'static str = "2006: a tight block-device O_DIRECT loop gave ~20 % in \
        a micro-benchmark and ~2 % in a database benchmark over the generic direct_io_worker";

    fn setup(ctx: &mut Ctx) -> Result<Setup, Stop> {
        let size: u64 = if ctx.quick { 256 << 20 } else { 1 << 30 };
        let fs = ctx.fs(&FsSpec {
            fstype: "ext4".into(),
            mkfs: "-E nodiscard".into(),
            on: "zram".into(),
            size,
            fill: true,
            ..FsSpec::default()
        })?;
        // The kernel profile per I/O whenever perf is there. perf costs about
        // 7 s per trial here (start-up, then `perf script`): --quick (at most
        // a minute) profiles the first engine's cells only, the full run all;
        // `recipe run --profile` profiles every engine in --quick too.
        Ok(Setup {
            size,
            dev: fs.devices()[0].clone(),
            file: format!("{}/f", fs.mountpoints()[0]),
            perf: have_perf(),
            quick: ctx.quick && !ctx.profile,
        })
    }

    fn cells(ctx: &mut Ctx, s: &Setup) -> Result<(), Stop> {
        let runtime = if ctx.quick { "1" } else { "3" };
        ctx.plan(ENGINES.len() * 2, 0);
        for &e in ENGINES {
            // The verdict's engine (the seed's tight synchronous loop) gets
            // 4 trials a side in --quick, the fewest for a 95 % interval.
            let trials = match (ctx.quick, e == ENGINES[0]) {
                (false, _) => "auto",
                (true, true) => "4",
                (true, false) => "2",
            };
            for (t, path) in [("bdev", &s.dev), ("file", &s.file)] {
                let mut o: Vec<(&str, String)> = vec![
                    ("filename", path.clone()),
                    ("size", (s.size / 2).to_string()),
                    ("rw", "randread".into()),
                    ("bs", "4k".into()),
                    ("direct", "1".into()),
                    ("ioengine", e.into()),
                    ("iodepth", "1".into()),
                    ("runtime", runtime.into()),
                    ("time_based", "1".into()),
                ];
                if s.perf && (!s.quick || e == ENGINES[0]) {
                    o.push(("profile", "1".into()));
                }
                ctx.cell(&format!("{e}-{t}"), &job("r", &o), trials)?;
            }
        }
        Ok(())
    }

    fn tables(ctx: &Ctx, s: &Setup) -> Vec<Table> {
        let mut header = vec![
            "engine",
            "bdev µs/IO",
            "bdev system-wide µs/IO",
            "file µs/IO",
            "file system-wide µs/IO",
            "file − bdev",
        ];
        if s.perf {
            header.extend(["bdev kernel top", "file kernel top"]);
        }
        let mut tab = Table::new(
            &format!("CPU per 4 KiB O_DIRECT random read, QD 1, on {} (zram) and ext4 on it", s.dev),
            &header,
        );
        for &e in ENGINES {
            let b = ctx.stat(&format!("{e}-bdev"), M::CPU);
            let f = ctx.stat(&format!("{e}-file"), M::CPU);
            let mut row = vec![
                e.to_string(),
                pm(b, 1.0, 2),
                pm(ctx.stat(&format!("{e}-bdev"), M::SYS_CPU), 1.0, 2),
                pm(f, 1.0, 2),
                pm(ctx.stat(&format!("{e}-file"), M::SYS_CPU), 1.0, 2),
                match (b, f) {
                    (Some(b), Some(f)) => format!("{:+.2}", f.mean - b.mean),
                    _ => "—".into(),
                },
            ];
            if s.perf {
                row.push(top_subsystems(ctx, &format!("{e}-bdev")));
                row.push(top_subsystems(ctx, &format!("{e}-file")));
            }
            tab.rows.push(row);
        }
        vec![tab]
    }

    fn verdict(ctx: &Ctx, _: &Setup) -> Said {
        let gaps: Vec<f64> = ENGINES
            .iter()
            .filter_map(|e| {
                let b = ctx.stat(&format!("{e}-bdev"), M::CPU)?;
                let f = ctx.stat(&format!("{e}-file"), M::CPU)?;
                Some(f.mean / b.mean)
            })
            .collect();
        let Some(mid) = median(&gaps) else {
            return Said::missing();
        };
        let e0 = ENGINES[0];
        let e = ctx.evidence(
            &format!("{e0} CPU per I/O (file vs block device)"),
            &format!("{e0}-bdev"),
            &format!("{e0}-file"),
            M::CPU,
            EFFECT_PCT,
        );
        let v = decide(&e);
        let text = format!(
            "{v}: with {e0} (the seed's tight synchronous loop) a direct read through ext4 costs {} \
             CPU against the block device (the seed's effect: +{EFFECT_PCT:.0} %); the median \
             over the {} engines of file ÷ block device: {:+.0} %. {}",
            change_text(e.change),
            gaps.len(),
            (mid - 1.0) * 100.0,
            match v {
                Verdict::Present => "The file-system path still costs measurably more per I/O.",
                Verdict::Absent => "The file-system path costs less than the seed's gap more: \
                                    the generic path no longer carries it.",
                Verdict::Inconclusive(_) => "",
            }
        );
        Said::new(v, text)
    }

    fn control(_: &mut Ctx, _: &Setup) -> Result<Said, Stop> {
        Ok(Said::new(
            Verdict::Inconclusive("no control planted: this recipe has none yet".into()),
            "no control: a known kernel-side cost per I/O of about 0.9 µs is not planted yet"
                .into(),
        ))
    }

    fn notes(_: &Ctx, s: &Setup) -> Vec<String> {
        let mut notes = vec![
            "µs/IO: the process's CPU time (user + system) per I/O (getrusage); system-wide: all \
             CPUs' busy time per I/O (includes other processes on this machine)"
                .into(),
        ];
        if s.perf && s.quick {
            notes.push(format!(
                "quick run: the kernel profile for {} only (perf costs seconds per trial); the \
                 full run profiles every engine",
                ENGINES[0]
            ));
        }
        if !s.perf {
            notes.push(
                "perf was not found: no kernel profile, CPU µs per I/O alone (install perf for \
                 the kernel profile per I/O)"
                    .into(),
            );
        }
        notes
    }
}

/// The kernel subsystems costing most per I/O in the cell's profile.
fn top_subsystems(ctx: &Ctx, cell: &str) -> String {
    let Some(p) = ctx
        .get(cell)
        .and_then(|c| c.runs.first())
        .and_then(|d| d.dioscope.as_ref())
        .and_then(|d| d.profile.as_ref())
    else {
        return "—".into();
    };
    let Some(g) = p.groups.first() else {
        return p
            .message
            .clone()
            .map(|m| m.chars().take(30).collect())
            .unwrap_or_else(|| "—".into());
    };
    let mut subs = g.process.subsystems.clone();
    subs.sort_by(|a, b| b.us_per_io.total_cmp(&a.us_per_io));
    subs.iter()
        .take(2)
        .map(|c| format!("{} {:.2}", c.name, c.us_per_io))
        .collect::<Vec<_>>()
        .join(", ")
}
