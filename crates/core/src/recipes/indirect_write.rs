//! Seed 000: ext3's BH_Boundary made direct I/O submit one bio per page
//! when the write crosses indirect blocks. 4096 KiB O_DIRECT writes at
//! offset 48 KiB of a 48 KiB file, 1000 times, on ext4 without extents
//! (the ext3 layout, indirect blocks) and with extents.

use super::{derived, job, mem_used_pct, pm, run_steps, Ctx, Recipe, Steps, Stop, Table};
use crate::experiment::samples::M;
use crate::runner::{ResolvedJob, TrialHooks};
use crate::scratch::FsSpec;
use crate::targets::TargetTable;

pub const RECIPE: Recipe = Recipe {
    name: "indirect-write",
    seed: "000",
    reproduces: "ext3-style indirect blocks (ext4 -O ^extent) vs extents: requests and CPU per \
                 4 MiB O_DIRECT write at 48 KiB (BH_Boundary, seed 000)",
    run: run_steps::<IndirectWrite>,
};

const LAYOUTS: &[(&str, &str)] = &[("indirect", "-O ^extent,^64bit"), ("extents", "")];

/// Before each trial: the file back to its first 48 KiB (the seed's
/// step 1), so every trial's writes start past its end.
struct Truncate {
    path: String,
    len: u64,
}

impl TrialHooks for Truncate {
    fn before_trial(&mut self, _g: u32, _t: u32, _jobs: &[&ResolvedJob], _table: &TargetTable) {
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&self.path) {
            let _ = f.set_len(self.len);
            let _ = f.sync_all();
        }
    }
}

struct IndirectWrite;

/// One ext4 per layout on a loop device, each with the seed's 48 KiB file.
struct Setup {
    /// Writes per trial.
    loops: u64,
    /// (layout, the file on it).
    files: Vec<(&'static str, String)>,
}

impl Steps for IndirectWrite {
    type Setup = Setup;
    const SEED_REPORTED: &'static str = "3.8-rc7, Xeon E3-1220: I/O time 41.3 s vs 40.9 s, CPU \
        74.7 % vs 58.3 % (default vs patched, ext3): the same time, a quarter less CPU";

    fn setup(ctx: &mut Ctx) -> Result<Setup, Stop> {
        let mut files = Vec::new();
        for (name, mkfs) in LAYOUTS {
            let fs = ctx.fs(&FsSpec {
                fstype: "ext4".into(),
                mkfs: mkfs.to_string(),
                on: "loop".into(),
                size: 256 << 20,
                ..FsSpec::default()
            })?;
            let file = format!("{}/f", fs.mountpoints()[0]);
            // Step (1) of the seed: a 48 KiB file, its 12 direct blocks.
            crate::outfile::open(
                std::path::Path::new(&file),
                crate::outfile::Mode::Truncate,
                &crate::outfile::Rules::new("the recipe's file"),
            )
            .map_err(|e| std::io::Error::other(e.why))
            .and_then(|mut f| std::io::Write::write_all(&mut f, &vec![0x5au8; 48 << 10]))
            .map_err(|e| Stop::Failed(format!("cannot write {file}: {e}")))?;
            files.push((*name, file));
        }
        Ok(Setup {
            loops: if ctx.quick { 25 } else { 1000 },
            files,
        })
    }

    fn cells(ctx: &mut Ctx, s: &Setup) -> Result<(), Stop> {
        ctx.plan(LAYOUTS.len(), 0);
        for (name, file) in &s.files {
            // create_on_open: no layout, so the file is not filled out to
            // 48 KiB + 4 MiB before the writes; each trial starts again from
            // the 48 KiB file (the hook cuts it back), so its first write
            // allocates the 4 MiB and the other 999 overwrite them, as the
            // seed's loop did.
            let args = job(
                "w",
                &[
                    ("filename", file.clone()),
                    ("rw", "write".into()),
                    ("bs", "4m".into()),
                    ("offset", "48k".into()),
                    ("size", "4m".into()),
                    ("loops", s.loops.to_string()),
                    ("direct", "1".into()),
                    ("ioengine", "psync".into()),
                    ("create_on_open", "1".into()),
                ],
            );
            let mut hooks = Truncate {
                path: file.clone(),
                len: 48 << 10,
            };
            ctx.cell_with(name, &args, if ctx.quick { "3" } else { "auto" }, &mut hooks)?;
            let st = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            ctx.extra.insert(format!("{name}.file_bytes_after"), st.into());
            ctx.extra
                .insert(format!("{name}.mem_used_pct"), mem_used_pct().into());
        }
        Ok(())
    }

    fn tables(ctx: &Ctx, s: &Setup) -> Vec<Table> {
        let mut t = Table::new(
            &format!(
                "4096 KiB O_DIRECT writes at offset 48 KiB, {} per trial (I/O time per 1000 writes)",
                s.loops
            ),
            &[
                "layout",
                "I/O time (s)",
                "CPU used (%)",
                "mem used (%)",
                "requests/write",
                "avg request",
                "CPU µs/write",
            ],
        );
        for (name, mkfs) in LAYOUTS {
            t.rows.push(layout_row(ctx, name, mkfs));
        }
        vec![t]
    }

    fn verdict(ctx: &Ctx, _: &Setup) -> String {
        let ri = ctx.stat("indirect", M::REQS);
        let re = ctx.stat("extents", M::REQS);
        let ci = ctx.stat("indirect", M::CPU);
        let ce = ctx.stat("extents", M::CPU);
        let (Some(ri), Some(re), Some(ci), Some(ce)) = (ri, re, ci, ce) else {
            return "no result: a cell did not run".into();
        };
        let present = ri.mean > re.mean * 1.5;
        format!(
            "{}: without extents each 4 MiB write is {:.1} device requests, with extents {:.1}; \
             CPU per write {:.0} µs vs {:.0} µs ({:+.0} %). {}",
            if present {
                "PRESENT on this kernel"
            } else {
                "ABSENT on this kernel"
            },
            ri.mean,
            re.mean,
            ci.mean,
            ce.mean,
            (ci.mean / ce.mean - 1.0) * 100.0,
            if present {
                "The indirect-block layout splits the write into more, smaller requests, \
                 as the seed's BH_Boundary bug did."
            } else {
                "Both layouts send the same requests per write: the per-page bio submission \
                 the seed fixed does not happen here."
            }
        )
    }

    fn notes(_: &Ctx, _: &Setup) -> Vec<String> {
        vec!["CPU used (%) is the process's CPU time over the trial's wall time (100 % = one \
              CPU); mem used (%) is MemTotal − MemAvailable after the cell"
            .into()]
    }
}

/// A layout's row: I/O time per 1000 writes, CPU, memory, requests.
fn layout_row(ctx: &Ctx, name: &str, mkfs: &str) -> Vec<String> {
    let iops = ctx.stat(name, M::IOPS);
    let cpu = ctx.stat(name, M::CPU);
    let reqs = ctx.stat(name, M::REQS);
    let per = ctx.bytes_per_io(name).unwrap_or(0.0);
    let cpu_pct = match (cpu, iops) {
        (Some(c), Some(i)) => format!("{:.1}", c.mean * i.mean / 1e4),
        _ => "—".into(),
    };
    let avg_req = match reqs {
        Some(r) if r.mean > 0.0 => crate::results::units::human_bytes((per / r.mean) as u64),
        _ => "—".into(),
    };
    let mem = ctx
        .extra
        .get(&format!("{name}.mem_used_pct"))
        .and_then(|v| v.as_f64())
        .map(|m| format!("{m:.1}"))
        .unwrap_or_default();
    vec![
        format!("{name} ({})", if mkfs.is_empty() { "default" } else { mkfs }),
        derived(iops, |i| 1000.0 / i, 3),
        cpu_pct,
        mem,
        pm(reqs, 1.0, 2),
        avg_req,
        pm(cpu, 1.0, 0),
    ]
}
