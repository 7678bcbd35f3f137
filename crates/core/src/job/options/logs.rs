//! fio's log options (runner/logs.rs writes the logs): which logs, their
//! windows, columns and time base, and fio's options about keeping logs in
//! memory, which dioscope accepts for fio's job files (its logs go to disk
//! as they fill) or refuses with the reason.

use super::*;

/// Why `log_store_compressed=1` is refused.
const LOG_STORE_COMPRESSED_REFUSAL: &str =
    "dioscope cannot write fio's compressed .fz logs: they are zlib streams of fio's own \
     in-memory sample records (binary, laid out as that fio version and architecture keep them), \
     which fio --inflate-log turns back into text; dioscope writes the text logs directly. \
     Drop log_store_compressed (or set it to 0) and compress the .log files afterwards if \
     space matters (gzip)";

fn log_name(j: &JobSpec, v: &str) -> Option<String> {
    // fio: a bare flag or "1" logs under the job's name.
    match v.trim() {
        "" | "1" => Some(j.name.clone()),
        "0" => None,
        s => Some(s.to_string()),
    }
}

/// The log section of the option table.
pub(super) static LOGS: &[OptDef] = &[
    OptDef {
        name: "write_bw_log",
        aliases: &[],
        kind: Kind::OptStr,
        creates: Creates::Job(created::bw_logs),
        default: None,
        range: None,
        category: Category::Logs,
        example: "mylog",
        help: "Write a bandwidth log PREFIX_bw.N.log",
        apply: job!(|j, v| {
            j.write_bw_log = log_name(j, v);
            Ok(())
        }),
    },
    OptDef {
        name: "write_iops_log",
        aliases: &[],
        kind: Kind::OptStr,
        creates: Creates::Job(created::iops_logs),
        default: None,
        range: None,
        category: Category::Logs,
        example: "mylog",
        help: "Write an IOPS log PREFIX_iops.N.log",
        apply: job!(|j, v| {
            j.write_iops_log = log_name(j, v);
            Ok(())
        }),
    },
    OptDef {
        name: "write_lat_log",
        aliases: &[],
        kind: Kind::OptStr,
        creates: Creates::Job(created::lat_logs),
        default: None,
        range: None,
        category: Category::Logs,
        example: "mylog",
        help: "Write latency logs PREFIX_{slat,clat,lat}.N.log",
        apply: job!(|j, v| {
            j.write_lat_log = log_name(j, v);
            Ok(())
        }),
    },
    OptDef {
        name: "log_avg_msec",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1000",
        help: "Average log samples over this many ms",
        apply: job!(|j, v| {
            j.log_avg_msec = parse_int(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_max_value",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1",
        help: "With log_avg_msec: log each window's maximum instead of its mean",
        apply: job!(|j, v| {
            j.log_max_value = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_window_value",
        aliases: &[],
        kind: Kind::Choice(&["avg", "max", "both"]),
        creates: Creates::Nothing,
        default: Some("avg"),
        range: None,
        category: Category::Logs,
        example: "both",
        help: "With log_avg_msec: log each window's mean (avg, mean, 0), maximum (max, 1) or both \
               (both, 2: the mean, then the maximum, as two value columns); bandwidth and IOPS \
               have one rate per window, so both columns hold it",
        apply: job!(|j, v| {
            let (max, both) = match v.trim() {
                "avg" | "mean" | "0" => (false, false),
                "max" | "1" => (true, false),
                "both" | "2" => (false, true),
                o => return Err(format!("'{o}' is not avg, max or both")),
            };
            j.log_max_value = max;
            j.log_window_both = both;
            Ok(())
        }),
    },
    OptDef {
        name: "log_issue_time",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1",
        help: "Per-I/O logs end each line with the I/O's issue time in ns (on the time column's \
               base); windowed lines (log_avg_msec) write 0 there, as they do for the offset",
        apply: job!(|j, v| {
            j.log_issue_time = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_offset",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1",
        help: "Add each I/O's offset to the log lines",
        apply: job!(|j, v| {
            j.log_offset = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "per_job_logs",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Logs,
        example: "0",
        help: "Name logs PREFIX_TYPE.N.log per job (1, default) or share PREFIX_TYPE.log (0)",
        apply: job!(|j, v| {
            j.per_job_logs = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "write_hist_log",
        aliases: &[],
        kind: Kind::OptStr,
        creates: Creates::Job(created::hist_logs),
        default: None,
        range: None,
        category: Category::Logs,
        example: "mylog",
        help: "Write completion-latency histograms PREFIX_clat_hist.N.log every log_hist_msec (fio's bins; fiologparser_hist.py reads them)",
        apply: job!(|j, v| {
            j.write_hist_log = log_name(j, v);
            Ok(())
        }),
    },
    OptDef {
        name: "log_hist_msec",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1000",
        help: "Window of the histogram log in ms (0: write_hist_log's file stays empty, as in fio)",
        apply: job!(|j, v| {
            j.log_hist_msec = parse_int(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_hist_coarseness",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: Some(Range::at_most(6)),
        category: Category::Logs,
        example: "2",
        help: "Histogram log resolution 0-6: each step sums neighbouring bins in pairs (0: 1856 bins)",
        apply: job!(|j, v| {
            j.log_hist_coarseness = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_prio",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1",
        help: "Log each I/O's priority value (hex) instead of the 0/1 high-priority flag",
        apply: job!(|j, v| {
            j.log_prio = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_unix_epoch",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1",
        help: "Log times in ms since the Unix epoch instead of since the job's start",
        apply: job!(|j, v| {
            j.log_unix_epoch = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_alternate_epoch",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1",
        help: "Log times in ms on the epoch of the clock log_alternate_epoch_clock_id names",
        apply: job!(|j, v| {
            j.log_alternate_epoch = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_alternate_epoch_clock_id",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1",
        help: "clock_gettime clock id of the log epoch (0 realtime, default; 1 monotonic; 7 boottime)",
        apply: job!(|j, v| {
            j.log_alternate_epoch_clock_id = i32::try_from(parse_int(v)?)
                .map_err(|_| format!("'{v}' is not a clock id (0 realtime, 1 monotonic, 7 boottime)"))?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_entries",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1024"),
        range: None,
        category: Category::Logs,
        example: "65536",
        help: "Accepted for fio's job files: dioscope's log buffers are always preallocated (64 Ki records, no allocation while running)",
        apply: job!(|_, v| {
            parse_int(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_compression",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "1m",
        help: "Accepted for fio's job files: fio compresses logs kept in memory; dioscope streams them to disk (8 MiB per worker at most), so the text logs are the same",
        apply: job!(|_, v| {
            parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "log_compression_cpus",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Logs,
        example: "0",
        help: "Accepted for fio's job files: dioscope runs no log compression threads",
        apply: job!(|_, _| Ok(())),
    },
    OptDef {
        name: "log_store_compressed",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Logs,
        example: "0",
        help: "Refused when set: fio's .fz logs hold fio's in-memory sample records, which dioscope does not reproduce",
        apply: job!(|_, v| {
            if parse_bool(v)? {
                return Err(LOG_STORE_COMPRESSED_REFUSAL.to_string());
            }
            Ok(())
        }),
    },
];
