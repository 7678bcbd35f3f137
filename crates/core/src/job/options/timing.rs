//! fio's clock-reducing options: they turn latency measurements off so the
//! worker reads the clock less (see `runner/worker/`). A latency that is
//! not measured reports zeros, as fio's JSON does.

use super::*;

pub(super) static TIMING: &[OptDef] = &[
    OptDef {
        name: "gtod_cpu",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Output,
        example: "1",
        help: "Set CPU N aside, as fio does for its time-keeping thread: no worker of any job \
               runs on it (it is taken out of every job's CPU set, cpus_allowed or the CPUs the \
               process may use). Unlike fio, no thread keeps the time there: each worker reads \
               CLOCK_MONOTONIC through the vDSO, which costs no system call",
        apply: job!(|j, v| {
            let n = parse_int(v)? as usize;
            let cpus = dioscope_sys::proc::ncpus();
            if n >= cpus {
                return Err(format!("CPU {n} does not exist (CPUs 0-{})", cpus - 1));
            }
            j.gtod_cpus = vec![n];
            Ok(())
        }),
    },
    OptDef {
        name: "gtod_reduce",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Measure no latencies (disable_slat, disable_clat, disable_lat), and read the clock \
               only every few batches, adapting so the run still ends on time",
        apply: job!(|j, v| {
            let on = parse_bool(v)?;
            j.gtod_reduce = on;
            // fio: gtod_reduce sets the three; gtod_reduce=0 clears them.
            j.disable_slat = on;
            j.disable_clat = on;
            j.disable_lat = on;
            Ok(())
        }),
    },
    OptDef {
        name: "disable_lat",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Do not measure total latency (lat_ns reports zeros)",
        apply: job!(|j, v| {
            j.disable_lat = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "disable_clat",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Do not measure completion latency (clat_ns and the latency_* maps report zeros)",
        apply: job!(|j, v| {
            j.disable_clat = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "disable_slat",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Do not measure submission latency (slat_ns reports zeros)",
        apply: job!(|j, v| {
            j.disable_slat = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "disable_bw_measurement",
        aliases: &["disable_bw"],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Accepted and changes nothing: bandwidth and IOPS samples come from the \
               once-a-second time series, never from a clock read per I/O (fio 3.33 also \
               still reports them with this option)",
        apply: job!(|_j, v| {
            parse_bool(v)?;
            Ok(())
        }),
    },
];
