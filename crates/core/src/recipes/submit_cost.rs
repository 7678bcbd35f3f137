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

/// ext4 on a zram device with a file on it, and a raw zram device of the
/// same size for the block-device cells.
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
        // The block-device cells read a second filled zram of the same
        // size: the mounted file system's metadata sits in its own device's
        // page cache (a contaminated baseline), this one's cache is empty.
        let raw = ctx.zram(size, true)?;
        // The kernel profile per I/O whenever perf is there. perf costs about
        // 7 s per trial here (start-up, then `perf script`): --quick (at most
        // a minute) profiles the first engine's cells only, the full run all;
        // `recipe run --profile` profiles every engine in --quick too.
        Ok(Setup {
            size,
            dev: raw.devices()[0].clone(),
            file: format!("{}/f", fs.mountpoints()[0]),
            perf: have_perf(),
            quick: ctx.quick && !ctx.profile,
        })
    }

    fn cells(ctx: &mut Ctx, s: &Setup) -> Result<(), Stop> {
        ctx.plan(ENGINES.len() * 2 + 2 * usize::from(ctx.control), 0);
        for &e in ENGINES {
            // The verdict's engine (the seed's tight synchronous loop) gets
            // 4 trials a side in --quick, the fewest for a 95 % interval.
            let trials = match (ctx.quick, e == ENGINES[0]) {
                (false, _) => "auto",
                (true, true) => "4",
                (true, false) => "2",
            };
            for (t, path) in [("bdev", &s.dev), ("file", &s.file)] {
                let mut o = read_job(ctx, s, path, e);
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
            &format!("CPU per 4 KiB O_DIRECT random read, QD 1, on {} (zram) and on ext4 on a twin zram", s.dev),
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
        if let (Some(b), Some(p)) = (
            ctx.stat("control-base", M::CPU),
            ctx.stat("control-planted", M::CPU),
        ) {
            let mut row = vec![
                format!("control ({}, file: base | planted)", ENGINES[0]),
                pm(Some(b), 1.0, 2),
                "—".into(),
                pm(Some(p), 1.0, 2),
                "—".into(),
                format!("{:+.2}", p.mean - b.mean),
            ];
            if s.perf {
                row.extend(["—".to_string(), "—".to_string()]);
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
        let mut e = ctx.evidence(
            &format!("{e0} CPU per I/O (file vs block device)"),
            &format!("{e0}-bdev"),
            &format!("{e0}-file"),
            M::CPU,
            EFFECT_PCT,
        );
        // The process's CPU time per I/O: a CPU another process holds
        // delays the worker, it does not add to the worker's CPU time.
        e.contention.clear();
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
        Said::judged(v, text, &e)
    }

    fn control(ctx: &mut Ctx, s: &Setup) -> Result<Said, Stop> {
        plant_syscall_cost(ctx, s)
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

/// The job of a cell: 4 KiB O_DIRECT random reads at QD 1 with `engine`.
fn read_job(ctx: &Ctx, s: &Setup, path: &str, engine: &str) -> Vec<(&'static str, String)> {
    vec![
        ("filename", path.to_string()),
        ("size", (s.size / 2).to_string()),
        ("rw", "randread".into()),
        ("bs", "4k".into()),
        ("direct", "1".into()),
        ("ioengine", engine.into()),
        ("iodepth", "1".into()),
        ("runtime", if ctx.quick { "1" } else { "3" }.into()),
        ("time_based", "1".into()),
    ]
}

/// The control: a known kernel-side cost on every system call — a seccomp
/// filter that runs a measured number of BPF instructions before allowing
/// the call — sized to 17 % of the file cell's CPU per I/O (under the
/// seed's 18 %). `control-base` runs the first engine's file cell again
/// just before, `control-planted` with the filter; the filter stays on the
/// dioscope process until it exits (it allows every call).
fn plant_syscall_cost(ctx: &mut Ctx, s: &Setup) -> Result<Said, Stop> {
    let e0 = ENGINES[0];
    // Longer and more trials than the quick cells: CPU per I/O varies by
    // ±10 % from trial to trial on a busy machine.
    let trials = if ctx.quick { "6" } else { "auto" };
    let per_insn = dioscope_sys::seccomp::ns_per_insn()
        .map_err(|e| Stop::Failed(format!("control: {e}")))?;
    let mut o = read_job(ctx, s, &s.file, e0);
    o.retain(|(k, _)| *k != "runtime");
    o.push(("runtime", "3".into()));
    ctx.cell("control-base", &job("r", &o), trials)?;
    let Some(base_us) = ctx.stat("control-base", M::CPU).map(|c| c.mean) else {
        return Ok(Said::missing());
    };
    let target_ns = base_us * 1e3 * 0.17;
    let mut insns = (target_ns / per_insn).round() as usize;
    let planted_ns = insns as f64 * per_insn;
    // Whole filters of at most MAX_INSNS, stacked (each call runs them all).
    let max = dioscope_sys::seccomp::MAX_INSNS;
    while insns >= 3 {
        let n = insns.min(max);
        dioscope_sys::seccomp::install_cost_filter(n)
            .map_err(|e| Stop::Failed(format!("control: the seccomp filter: {e}")))?;
        insns -= n;
    }
    ctx.cell("control-planted", &job("r", &o), trials)?;
    let e = ctx.control_evidence("CPU per I/O", "control-base", "control-planted", M::CPU, EFFECT_PCT);
    let v = decide(&e);
    let text = format!(
        "a seccomp filter adding {:.2} µs of kernel work to every system call ({:.2} ns per BPF \
         instruction, measured), {:.0} % of {e0}'s {:.2} µs per read through ext4: CPU per I/O {}",
        planted_ns / 1e3,
        per_insn,
        planted_ns / 1e3 / base_us * 100.0,
        base_us,
        change_text(e.change)
    );
    Ok(Said::new(v, text))
}
