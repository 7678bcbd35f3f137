//! Seed 001: inode->i_dio_count's atomic inc/dec per I/O capped O_DIRECT
//! scaling on a shared block device (2.5M → 9.6M IOPS when removed for
//! block devices). 4 KiB O_DIRECT random reads from 1..N threads on the raw
//! block device, on a file on the same device, and on the null engine
//! (dioscope's own ceiling).

use super::{cpus, job, pm, run_steps, Ctx, Recipe, Steps, Stop, Table};
use crate::experiment::samples::M;
use crate::scratch::FsSpec;

pub const RECIPE: Recipe = Recipe {
    name: "dio-scaling",
    seed: "001",
    reproduces: "O_DIRECT 4 KiB random-read scaling over threads, block device vs a file on it \
                 vs dioscope's own ceiling (i_dio_count, seed 001)",
    run: run_steps::<DioScaling>,
};

const TARGETS: &[&str] = &["bdev", "file", "null"];

fn thread_counts(quick: bool) -> Vec<usize> {
    let n = 2 * cpus();
    if quick {
        return vec![1, n];
    }
    let mut v = vec![1];
    let mut t = 2;
    while t < n {
        v.push(t);
        t *= 2;
    }
    v.push(n);
    v
}

struct DioScaling;

/// ext4 on a filled zram device: the device, a file on it, and the thread
/// counts to run.
struct Setup {
    dev: String,
    file: String,
    /// Bytes each job reads over.
    fsize: u64,
    threads: Vec<usize>,
}

impl Steps for DioScaling {
    type Setup = Setup;
    const SEED_REPORTED: &'static str = "2015, 2-socket box, multiqueue device: ~2.5M IOPS with \
        the i_dio_count inc/dec per I/O, ~9.6M without (3.6×), 30 % of system time in the counter";

    fn setup(ctx: &mut Ctx) -> Result<Setup, Stop> {
        // zram: no device queue or disk in the way, every I/O is CPU work —
        // the setting where per-I/O shared state shows. Filled, so that
        // reads of blocks the file system never wrote decompress real data.
        let size: u64 = if ctx.quick { 256 << 20 } else { 1 << 30 };
        let fs = ctx.fs(&FsSpec {
            fstype: "ext4".into(),
            mkfs: "-E nodiscard".into(),
            on: "zram".into(),
            size,
            fill: true,
            ..FsSpec::default()
        })?;
        Ok(Setup {
            dev: fs.devices()[0].clone(),
            file: format!("{}/f", fs.mountpoints()[0]),
            fsize: size / 2,
            threads: thread_counts(ctx.quick),
        })
    }

    fn cells(ctx: &mut Ctx, s: &Setup) -> Result<(), Stop> {
        let runtime = if ctx.quick { "1" } else { "3" };
        let trials = if ctx.quick { "3" } else { "auto" };
        ctx.plan(s.threads.len() * TARGETS.len(), 0);
        for &t in &s.threads {
            for &target in TARGETS {
                let mut o: Vec<(&str, String)> = vec![
                    ("rw", "randread".into()),
                    ("bs", "4k".into()),
                    ("direct", "1".into()),
                    ("numjobs", t.to_string()),
                    ("group_reporting", "1".into()),
                    ("runtime", runtime.into()),
                    ("time_based", "1".into()),
                    ("size", s.fsize.to_string()),
                ];
                let (path, engine) = match target {
                    "bdev" => (Some(&s.dev), "psync"),
                    "file" => (Some(&s.file), "psync"),
                    _ => (None, "null"),
                };
                if let Some(p) = path {
                    o.push(("filename", p.clone()));
                }
                o.push(("ioengine", engine.into()));
                ctx.cell(&format!("{target}-t{t}"), &job("r", &o), trials)?;
            }
        }
        Ok(())
    }

    fn tables(ctx: &Ctx, s: &Setup) -> Vec<Table> {
        let mut tab = Table::new(
            &format!(
                "4 KiB O_DIRECT random reads, psync, on {} (zram, ext4 for the file); {} CPUs",
                s.dev,
                cpus()
            ),
            &[
                "threads",
                "bdev kIOPS",
                "bdev µs/IO",
                "bdev eff",
                "file kIOPS",
                "file µs/IO",
                "file eff",
                "file/bdev",
                "null kIOPS",
                "null eff",
            ],
        );
        let eff = |tg: &str, t: usize| -> String {
            match (ctx.stat(&format!("{tg}-t{t}"), M::IOPS), one_thread(ctx, tg)) {
                (Some(s), Some(b)) if b > 0.0 => format!("{:.0} %", s.mean / (b * t as f64) * 100.0),
                _ => "—".into(),
            }
        };
        for &t in &s.threads {
            let c = |tg: &str| format!("{tg}-t{t}");
            let ratio = match (ctx.stat(&c("file"), M::IOPS), ctx.stat(&c("bdev"), M::IOPS)) {
                (Some(f), Some(b)) if b.mean > 0.0 => format!("{:.2}", f.mean / b.mean),
                _ => "—".into(),
            };
            tab.rows.push(vec![
                t.to_string(),
                pm(ctx.stat(&c("bdev"), M::IOPS), 1e-3, 1),
                pm(ctx.stat(&c("bdev"), M::CPU), 1.0, 2),
                eff("bdev", t),
                pm(ctx.stat(&c("file"), M::IOPS), 1e-3, 1),
                pm(ctx.stat(&c("file"), M::CPU), 1.0, 2),
                eff("file", t),
                ratio,
                pm(ctx.stat(&c("null"), M::IOPS), 1e-3, 0),
                eff("null", t),
            ]);
        }
        vec![tab]
    }

    fn verdict(ctx: &Ctx, s: &Setup) -> String {
        let n = *s.threads.last().unwrap_or(&1);
        let g = |tg: &str| ctx.stat(&format!("{tg}-t{n}"), M::IOPS).map(|s| s.mean);
        let (Some(b), Some(f), Some(nu), Some(b1)) = (g("bdev"), g("file"), g("null"), one_thread(ctx, "bdev")) else {
            return "no result: a cell did not run".into();
        };
        let scale = b / b1;
        format!(
            "at {n} threads the block device does {:.0}k IOPS ({scale:.1}× one thread), the file \
             {:.0}k ({:.0} % of the block device); dioscope's null engine {:.0}k, so the tool is \
             {}. {}",
            b / 1e3,
            f / 1e3,
            f / b * 100.0,
            nu / 1e3,
            if nu > 2.0 * b.max(f) {
                "not the limit"
            } else {
                "CLOSE TO the limit: read these figures as a lower bound"
            },
            if !ctx.apart(&format!("file-t{n}"), &format!("bdev-t{n}"), M::IOPS) {
                "The block device and the file do not differ significantly (U test at 5 %): no \
                 gap shown at this precision (the seed's collapse is ABSENT)."
            } else if f < 0.8 * b {
                "The file path costs clearly more than the block device (the seed's \
                 block-device-vs-file gap is PRESENT in this form); i_dio_count itself is no \
                 longer taken for block devices since 4.1."
            } else {
                "The file path keeps up with the block device: the seed's shared-counter \
                 collapse is ABSENT here (with only this many CPUs a cache-line bounce \
                 between sockets cannot show)."
            }
        )
    }

    fn notes(_: &Ctx, _: &Setup) -> Vec<String> {
        vec!["eff = IOPS(n) ÷ (n × IOPS(1)); with more threads than CPUs it falls by construction".into()]
    }
}

/// A target's IOPS with one thread (the base of its efficiency).
fn one_thread(ctx: &Ctx, target: &str) -> Option<f64> {
    ctx.stat(&format!("{target}-t1"), M::IOPS).map(|s| s.mean)
}
