//! Seed 002: large file-system block sizes (the "Large Blocksize Support"
//! series): sequential write and read throughput and system time by XFS
//! block size (`-b size=`) and number of devices (one XFS per device, the
//! job spreading over one file per device), buffered and direct; plus the
//! raw-device variant, loop devices with 512- and 4096-byte sectors.

use super::verdict::{change_text, decide};
use super::{derived, job, pm, run_steps, Ctx, Recipe, Said, Steps, Stop, Table, Verdict};
use crate::experiment::samples::M;
use crate::scratch::{FsSpec, LoopSpec};

pub const RECIPE: Recipe = Recipe {
    name: "blocksize",
    seed: "002",
    reproduces: "sequential MB/s and system time by XFS block size (4k/16k/64k) × devices, \
                 buffered and direct, and 512 vs 4096-byte sectors (large blocksize, seed 002)",
    run: run_steps::<Blocksize>,
};

const GIB: f64 = (1u64 << 30) as f64;
const MODES: [&str; 2] = ["buffered", "direct"];
const SECTORS: [u32; 2] = [512, 4096];
const RAW_BS: [&str; 2] = ["4k", "64k"];

/// The effect an ABSENT verdict excludes: buffered writes' system time per
/// GiB a third lower with the largest block size than with 4 KiB (the
/// seed's "system time fell by a third").
pub const EFFECT_PCT: f64 = -33.0;

struct Blocksize;

/// The grid: devices, XFS block sizes and bytes per device. The file
/// systems are made per block size inside `cells` (one size's go before
/// the next size's are made), so set-up only chooses the grid.
struct Setup {
    disks: Vec<usize>,
    sizes: Vec<&'static str>,
    per_dev: u64,
    raw_size: u64,
}

impl Steps for Blocksize {
    type Setup = Setup;
    const SEED_REPORTED: &'static str = "2007, dm raid0 (512k stripe), 32 GB files, buffered: 1 \
        disk 4k 89 MB/s 18 s sys → 64k 75 MB/s 12 s sys; 8 disks 4k 415 → 64k 664 MB/s; system \
        time fell by a third with 16k/64k blocks";

    fn setup(ctx: &mut Ctx) -> Result<Setup, Stop> {
        Ok(if ctx.quick {
            Setup {
                disks: vec![1, 2],
                sizes: vec!["4k", "64k"],
                per_dev: 64 << 20,
                raw_size: 16 << 20,
            }
        } else {
            Setup {
                disks: vec![1, 2, 4],
                sizes: vec!["4k", "16k", "64k"],
                per_dev: 128 << 20,
                raw_size: 256 << 20,
            }
        })
    }

    fn cells(ctx: &mut Ctx, s: &Setup) -> Result<(), Stop> {
        // Buffered and direct × devices × sizes × write/read, then 2 sectors
        // × 2 directions × 2 block sizes on raw devices.
        ctx.plan(MODES.len() * s.disks.len() * s.sizes.len() * 2 + 8 + 3 * usize::from(ctx.control), 0);
        for bsz in &s.sizes {
            xfs_cells(ctx, s, bsz)?;
        }
        for sector in SECTORS {
            raw_cells(ctx, s, sector)?;
        }
        Ok(())
    }

    fn tables(ctx: &Ctx, s: &Setup) -> Vec<Table> {
        let mut tables: Vec<Table> = MODES.iter().map(|mode| xfs_table(ctx, s, mode)).collect();
        let mut raw = Table::new(
            "raw loop devices (backing file in /dev/shm): O_DIRECT sequential MB/s",
            &[
                "sector",
                "bs",
                "write tput",
                "read tput",
                "write µs/IO CPU",
                "read µs/IO CPU",
            ],
        );
        for sector in SECTORS {
            for bs in RAW_BS {
                let c = |rw: &str| format!("raw-s{sector}-{bs}-{rw}");
                raw.rows.push(vec![
                    sector.to_string(),
                    bs.to_string(),
                    pm(ctx.stat(&c("write"), M::BW), 1e-6, 0),
                    pm(ctx.stat(&c("read"), M::BW), 1e-6, 0),
                    pm(ctx.stat(&c("write"), M::CPU), 1.0, 1),
                    pm(ctx.stat(&c("read"), M::CPU), 1.0, 1),
                ]);
            }
        }
        tables.push(raw);
        tables
    }

    fn verdict(ctx: &Ctx, s: &Setup) -> Said {
        // The seed's claim: larger blocks cut buffered system time.
        let (small, large) = (s.sizes[0], s.sizes[s.sizes.len() - 1]);
        let cell = |bsz: &str| format!("buffered-d1-{bsz}-write");
        let sys_of = |bsz: &str| {
            let per = ctx.bytes_per_io(&cell(bsz))?;
            Some(ctx.stat(&cell(bsz), M::SYS_CPU)?.mean * (GIB / per) / 1e6)
        };
        let bw_of = |bsz: &str| Some(ctx.stat(&cell(bsz), M::BW)?.mean);
        let (Some(s4), Some(s64), Some(b4), Some(b64)) =
            (sys_of(small), sys_of(large), bw_of(small), bw_of(large))
        else {
            return Said::missing();
        };
        let e = ctx.evidence(
            "buffered write system time",
            &cell(small),
            &cell(large),
            M::SYS_CPU,
            EFFECT_PCT,
        );
        let v = decide(&e);
        let text = format!(
            "{v}: buffered writes on one device: {large} blocks {:.0} MB/s and {s64:.2} s sys/GiB vs \
             {small} blocks {:.0} MB/s and {s4:.2} s/GiB — system time {} (the seed's effect: \
             {EFFECT_PCT:.0} %). {}",
            b64 / 1e6,
            b4 / 1e6,
            change_text(e.change),
            match v {
                Verdict::Present => "Larger blocks cut system time, as in the seed.",
                Verdict::Absent => "No saving of the seed's size: large folios in the page cache \
                                    already batch the per-page work the series amortised.",
                Verdict::Inconclusive(_) => "",
            }
        );
        Said::new(v, text)
    }

    fn control(ctx: &mut Ctx, _: &Setup) -> Result<Said, Stop> {
        plant_syscall_cost(ctx)
    }

    fn notes(_: &Ctx, _: &Setup) -> Vec<String> {
        vec!["devices are zram (CPU-bound): throughput shows per-byte CPU cost, not spindles; \
              the seed's multi-disk rows were bandwidth-bound"
            .into()]
    }
}

/// The control: buffered writes whose system time per GiB is made a known
/// amount larger, so that dropping the addition is a fall of the seed's
/// size. A seccomp filter that runs a measured number of BPF instructions on
/// every system call (kernel work, counted as system time; it allows every
/// call) adds 49 % to the system time per write of `control-base` (4 KiB
/// buffered writes into the page cache of a file on a 4 KiB-block XFS, 2 s
/// per trial; its pages are written back by the kernel's flusher, outside
/// the process); `control-planted` runs the same job with it. From `control-planted` to `control-base` the system
/// time falls by 1 − 1/1.49 = 33 %: the seed's "a third", no more. The
/// filter cannot be taken off, so the planted cell runs last; it stays on
/// the dioscope process until it exits. Writes into the page cache (a
/// microsecond or two of system time each) keep the addition within the
/// kernel's 32,768 instructions per system call.
fn plant_syscall_cost(ctx: &mut Ctx) -> Result<Said, Stop> {
    const ADD: f64 = 0.49;
    let size: u64 = 64 << 20;
    let fs = ctx.fs(&FsSpec {
        fstype: "xfs".into(),
        mkfs: "-b size=4k".into(),
        on: "zram".into(),
        size: 320 << 20,
        ..FsSpec::default()
    })?;
    let file = format!("{}/c", fs.mountpoints()[0]);
    let o: Vec<(&str, String)> = vec![
        ("filename", file),
        ("size", size.to_string()),
        ("rw", "write".into()),
        ("bs", "4k".into()),
        ("ioengine", "psync".into()),
        ("direct", "0".into()),
        ("time_based", "1".into()),
        ("runtime", "2".into()),
    ];
    let trials = if ctx.quick { "6" } else { "auto" };
    let per_insn =
        dioscope_sys::seccomp::ns_per_insn().map_err(|e| Stop::Failed(format!("control: {e}")))?;
    ctx.cell("control-base", &job("seq", &o), trials)?;
    let Some(base_us) = ctx.stat("control-base", M::SYS_CPU).map(|c| c.mean) else {
        return Ok(Said::missing());
    };
    let max = dioscope_sys::seccomp::MAX_INSNS;
    // Filters stack and cannot be taken off. What an instruction costs on
    // this write path is not what it costs on getppid() (measured: up to
    // 4× more), so a quarter of the plan goes on first, a pilot cell
    // measures what it really added, and the rest is sized from that.
    // (instructions, filters) on the process so far.
    let mut on = (0usize, 0usize);
    let install = |on: &mut (usize, usize), mut insns: usize| -> Result<(), Stop> {
        // The kernel's limit on one call's path: 32,768 instructions, each
        // filter counting 4 more than its length.
        while insns >= 3 && on.0 + insns.min(max) + 4 * (on.1 + 1) <= 32_768 {
            let n = insns.min(max);
            dioscope_sys::seccomp::install_cost_filter(n)
                .map_err(|e| Stop::Failed(format!("control: the seccomp filter: {e}")))?;
            on.0 += n;
            on.1 += 1;
            insns -= n;
        }
        Ok(())
    };
    let want_us = base_us * ADD;
    install(&mut on, ((want_us / 4.0) * 1e3 / per_insn).round() as usize)?;
    let mut p = o.clone();
    p.retain(|(k, _)| *k != "runtime");
    p.push(("runtime", "1".into()));
    ctx.cell("control-pilot", &job("seq", &p), "2")?;
    let pilot_us = ctx.stat("control-pilot", M::SYS_CPU).map(|c| c.mean - base_us);
    // ns per instruction on this path, as the pilot saw it (the getppid()
    // figure when the pilot's difference is lost in the noise).
    let in_situ = pilot_us
        .filter(|&d| d > 0.0)
        .map(|d| d * 1e3 / on.0.max(1) as f64)
        .unwrap_or(per_insn)
        .max(per_insn);
    let rest_us = want_us - on.0 as f64 * in_situ / 1e3;
    if rest_us > 0.0 {
        install(&mut on, (rest_us * 1e3 / in_situ).round() as usize)?;
    }
    let (installed, planted_ns) = (on.0, on.0 as f64 * in_situ);
    ctx.cell("control-planted", &job("seq", &o), trials)?;
    let e = ctx.control_evidence(
        "buffered write system time",
        "control-planted",
        "control-base",
        M::SYS_CPU,
        EFFECT_PCT,
    );
    let v = decide(&e);
    let text = format!(
        "4 KiB buffered writes on a 4 KiB-block XFS with and without seccomp filters of \
         {installed} BPF instructions on every system call, about {:.2} µs of kernel work \
         ({in_situ:.2} ns per instruction on this path by a pilot, {per_insn:.2} on getppid; \
         planned: 49 % of the {base_us:.2} µs of system time per write, so its removal is \
         −33 %): system time per write without them {}",
        planted_ns / 1e3,
        change_text(e.change)
    );
    Ok(Said::new(v, text))
}

/// One XFS block size: an XFS per device (this kernel has no md or
/// device-mapper), buffered and direct × devices × write/read, then the
/// file systems go before the next size's are made.
fn xfs_cells(ctx: &mut Ctx, s: &Setup, bsz: &str) -> Result<(), Stop> {
    let maxd = *s.disks.last().unwrap_or(&1);
    // mkfs.xfs wants 300 MiB at least.
    let fs = ctx.fs(&FsSpec {
        fstype: "xfs".into(),
        mkfs: format!("-b size={bsz}"),
        on: "zram".into(),
        devices: maxd,
        // Two files (buffered and direct) per device, plus XFS's log.
        size: (2 * s.per_dev + (192 << 20)).max(320 << 20),
        ..FsSpec::default()
    })?;
    let mps = fs.mountpoints();
    for mode in MODES {
        for &d in &s.disks {
            let files: Vec<String> = mps[..d].iter().map(|m| format!("{m}/f-{mode}")).collect();
            for rw in ["write", "read"] {
                let mut o: Vec<(&str, String)> = vec![
                    ("filename", files.join(":")),
                    ("size", (s.per_dev * d as u64).to_string()),
                    ("rw", rw.into()),
                    ("bs", "1m".into()),
                    ("ioengine", "psync".into()),
                    ("direct", if mode == "direct" { "1" } else { "0" }.into()),
                ];
                if mode == "buffered" && rw == "write" {
                    // Throughput to the devices, not into the page cache.
                    o.push(("end_fsync", "1".into()));
                }
                // The verdict's cells (buffered writes on one device) get 4
                // trials in --quick, the fewest for a 95 % interval.
                let verdict_cell = mode == "buffered" && d == 1 && rw == "write";
                let trials = match (ctx.quick, verdict_cell) {
                    (false, _) => "auto",
                    (true, true) => "4",
                    (true, false) => "2",
                };
                ctx.cell(&format!("{mode}-d{d}-{bsz}-{rw}"), &job("seq", &o), trials)?;
            }
        }
    }
    ctx.session.teardown();
    Ok(())
}

/// Raw devices: a memory-backed loop device with `sector`-byte logical
/// sectors (the sector size's cost, not a disk's).
fn raw_cells(ctx: &mut Ctx, s: &Setup, sector: u32) -> Result<(), Stop> {
    let trials = if ctx.quick { "2" } else { "auto" };
    let dev = ctx.loopdev(&LoopSpec {
        size: s.raw_size,
        sector_size: sector,
        direct_io: true,
        on: Some("/dev/shm".into()),
    })?;
    let path = dev.devices()[0].clone();
    for rw in ["write", "read"] {
        for bs in RAW_BS {
            let o: Vec<(&str, String)> = vec![
                ("filename", path.clone()),
                ("size", s.raw_size.to_string()),
                ("rw", rw.into()),
                ("bs", bs.into()),
                ("ioengine", "psync".into()),
                ("direct", "1".into()),
                ("destroy-data-on", path.clone()),
            ];
            ctx.cell(&format!("raw-s{sector}-{bs}-{rw}"), &job("raw", &o), trials)?;
        }
    }
    Ok(())
}

/// One mode's table: devices × block sizes, throughput and system time.
fn xfs_table(ctx: &Ctx, s: &Setup, mode: &str) -> Table {
    let mut t = Table::new(
        &format!(
            "{mode} I/O, 1 MiB sequential, {} per device; XFS per device on zram (tput MB/s, sys = \
             system-wide CPU s per GiB)",
            crate::results::units::human_bytes(s.per_dev)
        ),
        &["disks", "blksz", "write tput", "write sys", "read tput", "read sys"],
    );
    for &d in &s.disks {
        for bsz in &s.sizes {
            let c = |rw: &str| format!("{mode}-d{d}-{bsz}-{rw}");
            let sys = |rw: &str| {
                let st = ctx.stat(&c(rw), M::SYS_CPU);
                let per = ctx.bytes_per_io(&c(rw)).unwrap_or(1.0 * 1048576.0);
                derived(st, move |v| v * (GIB / per) / 1e6, 2)
            };
            t.rows.push(vec![
                d.to_string(),
                bsz.to_string(),
                pm(ctx.stat(&c("write"), M::BW), 1e-6, 0),
                sys("write"),
                pm(ctx.stat(&c("read"), M::BW), 1e-6, 0),
                sys("read"),
            ]);
        }
    }
    t
}
