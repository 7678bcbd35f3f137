//! Options of buffer contents, verification details, priorities, CPU and
//! memory placement and job hooks (fio's "Buffers and memory",
//! "Verification" and "Threads, processes and job synchronization"). The
//! runner side is runner/buffers.rs (contents, priorities),
//! runner/verifying.rs (verify) and runner/thread_setup.rs (placement,
//! memory, exec_prerun/postrun).

use super::*;
use crate::verify::pattern::Pattern;

/// One `cmdprio_bssplit` entry: block size, percentage, and a class and
/// level of its own (`None`: `cmdprio_class`/`cmdprio`).
type BsPrio = (u64, u32, Option<u32>, Option<u32>);

/// Per-I/O priorities (`cmdprio_percentage`, `cmdprio_class`, `cmdprio`,
/// `cmdprio_bssplit`), read then write.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CmdPrio {
    pub percentage: [u32; 2],
    /// `None`: fio's default, the real-time class.
    pub class: [Option<u32>; 2],
    pub level: [u32; 2],
    pub bssplit: [Vec<BsPrio>; 2],
}

impl CmdPrio {
    /// Whether any I/O gets a priority of its own.
    pub fn active(&self) -> bool {
        self.percentage.iter().any(|&p| p > 0) || self.bssplit.iter().any(|v| !v.is_empty())
    }
}

/// `cpus_allowed_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuPolicy {
    /// Every thread of the job may run on every CPU of the set.
    Shared,
    /// Each thread gets one CPU of the set, round robin.
    Split,
}

/// `numa_mem_policy=MODE[:NODES]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemPolicy {
    /// `MPOL_*` (dioscope_sys::sched).
    pub mode: i32,
    /// Node numbers; `None` is `all`.
    pub nodes: Option<Vec<usize>>,
}

/// `mem=`/`iomem=`: where the I/O buffers live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemKind {
    Malloc,
    Shm,
    ShmHuge,
    Mmap(Option<String>),
    MmapHuge(Option<String>),
    MmapShared,
}

/// fio's `READ,WRITE` value: one value is both; trims (a third value) have
/// no priority here.
fn per_dir_u32(v: &str, max: u64, what: &str) -> Result<[u32; 2], UnitError> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("'{v}': give a read and a write value"));
    }
    let one = |p: &str| {
        if p.trim().is_empty() {
            Ok(0)
        } else {
            parse_int(p)
        }
    };
    let r = one(parts[0])?;
    let w = match parts.get(1) {
        Some(p) => one(p)?,
        None => r,
    };
    let d = [r, w];
    for x in d {
        if x > max {
            return Err(format!("'{v}': {x} is above {max}, the highest {what}"));
        }
    }
    Ok(d.map(|x| x as u32))
}

fn pattern(v: &str) -> Result<Pattern, UnitError> {
    Pattern::parse(v)
}

/// A node list `0,2-3` or `all` (`None`).
fn nodes(v: &str) -> Result<Option<Vec<usize>>, UnitError> {
    if v.trim() == "all" {
        return Ok(None);
    }
    parse_cpu_list(v)
        .map(Some)
        .map_err(|e| e.replace("CPU", "node"))
}

fn cmdprio_bssplit(v: &str) -> Result<[Vec<BsPrio>; 2], UnitError> {
    let one = |s: &str| -> Result<Vec<BsPrio>, UnitError> {
        let mut out = Vec::new();
        for e in s.split(':').filter(|e| !e.trim().is_empty()) {
            let f: Vec<&str> = e.split('/').collect();
            let (bs, pct, class, level) = match f.as_slice() {
                [b, p] => (parse_size(b)?, u32v(p)?, None, None),
                [b, p, c, l] => (parse_size(b)?, u32v(p)?, Some(u32v(c)?), Some(u32v(l)?)),
                // fio 3.41's third form adds a priority hint; hint 0 is none.
                [b, p, c, l, h] if u32v(h)? == 0 => {
                    (parse_size(b)?, u32v(p)?, Some(u32v(c)?), Some(u32v(l)?))
                }
                [_, _, _, _, h] => {
                    return Err(format!(
                        "'{e}': priority hints (the fifth field, {h}; fio's cmdprio_hint) are not \
                         implemented; give hint 0 or the BS/PERCENT/CLASS/LEVEL form"
                    ))
                }
                _ => {
                    return Err(format!(
                    "'{e}': give BS/PERCENT, BS/PERCENT/CLASS/LEVEL or BS/PERCENT/CLASS/LEVEL/HINT, e.g. 64k/30 or 64k/30/1/0"
                ))
                }
            };
            if pct > 100 || class.is_some_and(|c| c > 3) || level.is_some_and(|l| l > 7) {
                return Err(format!(
                    "'{e}': the percentage is at most 100, the class 0-3 and the level 0-7"
                ));
            }
            out.push((bs, pct, class, level));
        }
        Ok(out)
    };
    let parts: Vec<&str> = v.split(',').collect();
    let r = one(parts[0])?;
    let w = match parts.get(1) {
        Some(p) if !p.trim().is_empty() => one(p)?,
        _ => r.clone(),
    };
    Ok([r, w])
}

fn mem_kind(v: &str) -> Result<MemKind, UnitError> {
    let (kind, path) = match v.trim().split_once(':') {
        Some((k, p)) => (k, Some(p.to_string())),
        None => (v.trim(), None),
    };
    Ok(match (kind, path) {
        ("malloc", None) => MemKind::Malloc,
        ("shm", None) => MemKind::Shm,
        ("shmhuge", None) => MemKind::ShmHuge,
        ("mmap", p) => MemKind::Mmap(p),
        ("mmaphuge", p) => MemKind::MmapHuge(p),
        ("mmapshared", None) => MemKind::MmapShared,
        ("cudamalloc", _) => {
            return Err(
                "cudamalloc is not supported by dioscope (GPU memory needs the rdma engine, which dioscope does not have)"
                    .into(),
            )
        }
        (k, Some(_)) if ["malloc", "shm", "shmhuge", "mmapshared"].contains(&k) => {
            return Err(format!("'{v}': only mmap and mmaphuge take a :FILE"))
        }
        _ => {
            return Err(format!(
                "'{v}' is not malloc, shm, shmhuge, mmap[:FILE], mmaphuge[:FILE] or mmapshared"
            ))
        }
    })
}

fn nice(v: &str) -> Result<i32, UnitError> {
    let n: i32 = v
        .trim()
        .parse()
        .map_err(|_| format!("'{}' is not a nice value", v.trim()))?;
    if !(-20..=19).contains(&n) {
        return Err(format!("nice {n} is outside -20..19"));
    }
    Ok(n)
}

/// Checks of these options against the rest of the job (exit 2 before anything runs).
pub fn validate(j: &JobSpec) -> Result<(), String> {
    if j.verify_offset > 0
        && j.verify.is_some()
        && !(j.verify.as_deref() == Some("pattern") && j.verify_pattern.is_some())
    {
        let iv = j.verify_interval_used();
        let h = crate::verify::HEADER_LEN as u64;
        if j.verify_offset < h || j.verify_offset + h > iv {
            return Err(format!(
                "verify_offset={} must leave room for the {h}-byte header: between {h} and {} for {iv}-byte verify intervals",
                j.verify_offset,
                iv.saturating_sub(h)
            ));
        }
    }
    if j.dedupe_percentage > 0
        && j.dedupe_working_set
        && !matches!(j.size, Some(SizeOrPct::Bytes(_)))
    {
        return Err(
            "dedupe_mode=working_set sizes its working set from size=; give size= in bytes (fio needs it too)"
                .into(),
        );
    }
    let c = &j.cmdprio;
    if c.percentage.iter().any(|&p| p > 0) && c.bssplit.iter().any(|b| !b.is_empty()) {
        return Err(
            "cmdprio_percentage and cmdprio_bssplit exclude each other (fio); keep one".into(),
        );
    }
    if c.active() && !j.ioengine.caps().per_io_prio {
        let with: Vec<&str> = EngineKind::ALL
            .iter()
            .filter(|k| k.caps().per_io_prio)
            .map(|k| k.as_str())
            .collect();
        return Err(format!(
            "cmdprio_percentage/cmdprio_bssplit set priorities per I/O, which {} can do and {} cannot; change ioengine=, or use prio/prioclass for the whole job",
            with.join(" and "),
            j.ioengine.as_str()
        ));
    }
    Ok(())
}

pub(super) static BUFFERS: &[OptDef] = &[
    OptDef {
        name: "zero_buffers",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Buffers,
        example: "1",
        help: "Fill write buffers with zeros (default: random data)",
        apply: job!(|j, v| {
            j.zero_buffers = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "scramble_buffers",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Buffers,
        example: "0",
        help: "Change a few bytes of every 512 of each write, so writes do not deduplicate (default on, off with zero_buffers)",
        apply: job!(|j, v| {
            j.scramble_buffers = Some(parse_bool(v)?);
            Ok(())
        }),
    },
    OptDef {
        name: "refill_buffers",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Buffers,
        example: "1",
        help: "Refill the write buffer with new random data before every write",
        apply: job!(|j, v| {
            j.refill_buffers = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "buffer_pattern",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Buffers,
        example: "0xdeadbeef",
        help: "Fill write buffers with this pattern: 0x hex, decimal, \"text\", 'file', %o (the block's offset), concatenated",
        apply: job!(|j, v| {
            j.buffer_pattern = Some(pattern(v)?);
            // fio: a pattern replaces scrambling and zeroing.
            j.scramble_buffers = Some(false);
            j.zero_buffers = false;
            Ok(())
        }),
    },
    OptDef {
        name: "buffer_compress_percentage",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: Some(Range::PERCENT),
        category: Category::Buffers,
        example: "50",
        help: "Make write buffers compress to about this percentage (random data, then zeros or buffer_pattern)",
        apply: job!(|j, v| {
            j.buffer_compress_percentage = Some(u32v(v)?);
            Ok(())
        }),
    },
    OptDef {
        name: "buffer_compress_chunk",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("512"),
        range: None,
        category: Category::Buffers,
        example: "4k",
        help: "Size of each random-then-compressible region with buffer_compress_percentage (default 512; 0: the block)",
        apply: job!(|j, v| {
            j.buffer_compress_chunk = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "dedupe_percentage",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: Some(Range::PERCENT),
        category: Category::Buffers,
        example: "30",
        help: "Make this percentage of writes repeat an earlier write's contents (deduplicable)",
        apply: job!(|j, v| {
            j.dedupe_percentage = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "dedupe_mode",
        aliases: &[],
        kind: Kind::Choice(&["repeat", "working_set"]),
        creates: Creates::Nothing,
        default: Some("repeat"),
        range: None,
        category: Category::Buffers,
        example: "working_set",
        help: "How deduplicable writes are made: repeat the last unique write, or pick one of a working set (dedupe_working_set_percentage)",
        apply: job!(|j, v| {
            j.dedupe_working_set = match v.trim() {
                "repeat" => false,
                "working_set" => true,
                o => return Err(format!("'{o}' is not repeat or working_set")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "dedupe_working_set_percentage",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("5"),
        range: Some(Range::between(1, 100)),
        category: Category::Buffers,
        example: "40",
        help: "dedupe_mode=working_set: the working set, as a percentage of size= (default 5)",
        apply: job!(|j, v| {
            j.dedupe_working_set_percentage = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "dedupe_global",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Buffers,
        example: "1",
        help: "Deduplicable writes of every job with this option draw from one shared set of buffers",
        apply: job!(|j, v| {
            j.dedupe_global = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_pattern",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Verify,
        example: "0xff%o\"abcd\"-12",
        help: "Verify with this pattern (forms as buffer_pattern; %o: the block's offset); alone, implies verify=pattern",
        apply: job!(|j, v| {
            j.verify_pattern = Some(pattern(v)?);
            if j.verify.is_none() {
                j.verify = Some("pattern".into());
            }
            Ok(())
        }),
    },
    OptDef {
        name: "verify_pattern_interval",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "512",
        help: "fio 3.41: start verify_pattern again every this many bytes, %o holding each piece's offset (0: once per verify interval)",
        apply: job!(|j, v| {
            j.verify_pattern_interval = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_backlog",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "16",
        help: "Check written blocks every this many writes while the job runs",
        apply: job!(|j, v| {
            j.verify_backlog = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_backlog_batch",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "8",
        help: "How many of the verify_backlog blocks to check (default: all)",
        apply: job!(|j, v| {
            j.verify_backlog_batch = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_state_save",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Job(created::state_files),
        default: Some("1"),
        range: None,
        category: Category::Verify,
        example: "0",
        help: "When a verifying write job is stopped early, save which blocks it wrote to local-JOB-N-verify.state (default on)",
        apply: job!(|j, v| {
            j.verify_state_save = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_state_load",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "1",
        help: "With verify_only, check only the blocks a saved verify state says were written",
        apply: job!(|j, v| {
            j.verify_state_load = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "experimental_verify",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "1",
        help: "Accepted as in fio; the read-back reads exactly the blocks written either way (from the record the writes leave)",
        apply: job!(|j, v| {
            j.experimental_verify = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_dump",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Dynamic,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "1",
        help: "Write each bad block as read and as expected to FILE.OFFSET.received / .expected",
        apply: job!(|j, v| {
            j.verify_dump = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_async",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "2",
        help: "Read back and check with this many threads per job clone",
        apply: job!(|j, v| {
            j.verify_async = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_async_cpus",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Verify,
        example: "0-1",
        help: "CPUs of the verify_async read-back threads (as cpus_allowed)",
        apply: job!(|j, v| {
            j.verify_async_cpus = Some(parse_cpu_list(v)?);
            Ok(())
        }),
    },
    OptDef {
        name: "verify_write_sequence",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Verify,
        example: "0",
        help: "Treat a block from an earlier trial as bad (stale generation) (default on)",
        apply: job!(|j, v| {
            j.verify_write_sequence = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_offset",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "512",
        help: "Store the verify header at this offset of each block (swapped with the data there)",
        apply: job!(|j, v| {
            j.verify_offset = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_header_seed",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Verify,
        example: "0",
        help: "Treat a block header written with another seed as bad (default on)",
        apply: job!(|j, v| {
            j.verify_header_seed = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "prioclass",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "2",
        help: "I/O priority class of the job's threads: 1 real-time, 2 best-effort, 3 idle",
        apply: job!(|j, v| {
            let c = u32v(v)?;
            if c > 3 {
                return Err(format!("{c} is not a class (0 none, 1 rt, 2 be, 3 idle)"));
            }
            j.prioclass = Some(c);
            Ok(())
        }),
    },
    OptDef {
        name: "prio",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "4",
        help: "I/O priority level of the job's threads, 0 (highest) to 7",
        apply: job!(|j, v| {
            let p = u32v(v)?;
            if p > 7 {
                return Err(format!("{p} is above 7, the lowest priority"));
            }
            j.prio = Some(p);
            Ok(())
        }),
    },
    OptDef {
        name: "cmdprio_percentage",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Placement,
        example: "30",
        help: "Percentage of I/Os issued with their own priority (cmdprio_class/cmdprio); READ,WRITE",
        apply: job!(|j, v| {
            j.cmdprio.percentage = per_dir_u32(v, 100, "percentage")?;
            Ok(())
        }),
    },
    OptDef {
        name: "cmdprio_class",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "1",
        help: "Priority class of those I/Os (default 1, real-time); READ,WRITE",
        apply: job!(|j, v| {
            let c = per_dir_u32(v, 3, "class")?;
            j.cmdprio.class = c.map(Some);
            Ok(())
        }),
    },
    OptDef {
        name: "cmdprio",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "3",
        help: "Priority level of those I/Os (default 0); READ,WRITE",
        apply: job!(|j, v| {
            j.cmdprio.level = per_dir_u32(v, 7, "level")?;
            Ok(())
        }),
    },
    OptDef {
        name: "cmdprio_bssplit",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "4k/10:64k/50/1/0",
        help: "Per block size: the percentage of I/Os with their own priority (BS/PCT[/CLASS/LEVEL]:…); READ,WRITE",
        apply: job!(|j, v| {
            j.cmdprio.bssplit = cmdprio_bssplit(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "nice",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Placement,
        example: "5",
        help: "Nice value of the job's threads (-20..19)",
        apply: job!(|j, v| {
            j.nice = nice(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "cpus_allowed_policy",
        aliases: &[],
        kind: Kind::Choice(&["shared", "split"]),
        creates: Creates::Nothing,
        default: Some("shared"),
        range: None,
        category: Category::Placement,
        example: "split",
        help: "shared: every thread may use every allowed CPU; split: one CPU per thread, round robin",
        apply: job!(|j, v| {
            j.cpus_allowed_policy = match v.trim() {
                "shared" => CpuPolicy::Shared,
                "split" => CpuPolicy::Split,
                o => return Err(format!("'{o}' is not shared or split")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "cpumask",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: Some(Range::at_least(1)),
        category: Category::Placement,
        example: "3",
        help: "CPUs the job may run on, as a bit mask (bit N: CPU N); see cpus_allowed",
        apply: job!(|j, v| {
            let m = parse_int(v)?;
            j.cpus_allowed = Some((0..64).filter(|b| m & (1 << b) != 0).collect());
            Ok(())
        }),
    },
    OptDef {
        name: "numa_cpu_nodes",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "0",
        help: "Run the job's threads on the CPUs of these NUMA nodes (list, ranges or all)",
        apply: job!(|j, v| {
            j.numa_cpu_nodes = Some(nodes(v)?.unwrap_or_default());
            Ok(())
        }),
    },
    OptDef {
        name: "numa_mem_policy",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "bind:0",
        help: "Memory policy of the job's threads: default, local, prefer:N, bind:NODES, interleave:NODES",
        apply: job!(|j, v| {
            use dioscope_sys::sched::*;
            let (mode, list) = match v.trim().split_once(':') {
                Some((m, l)) => (m, Some(l)),
                None => (v.trim(), None),
            };
            let (mode, need) = match mode {
                "default" => (MPOL_DEFAULT, false),
                "local" => (MPOL_LOCAL, false),
                "prefer" => (MPOL_PREFERRED, true),
                "bind" => (MPOL_BIND, true),
                "interleave" => (MPOL_INTERLEAVE, true),
                m => {
                    return Err(format!(
                        "'{m}' is not default, prefer, bind, interleave or local"
                    ))
                }
            };
            let nodes = match (need, list) {
                (false, None) => Some(Vec::new()),
                (false, Some(_)) => {
                    return Err(format!("'{}' takes no node list", v.trim()))
                }
                (true, None) => {
                    return Err(format!("'{}' needs nodes, e.g. {}:0", v.trim(), v.trim()))
                }
                (true, Some(l)) => nodes(l)?,
            };
            if mode == MPOL_PREFERRED && nodes.as_ref().is_none_or(|n| n.len() != 1) {
                return Err("prefer takes exactly one node, e.g. prefer:0".into());
            }
            j.numa_mem_policy = Some(MemPolicy { mode, nodes });
            Ok(())
        }),
    },
    OptDef {
        name: "iomem",
        aliases: &["mem"],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("malloc"),
        range: None,
        category: Category::Buffers,
        example: "shm",
        help: "Memory of the I/O buffers: malloc, shm, shmhuge, mmap[:FILE], mmaphuge[:FILE], mmapshared",
        apply: job!(|j, v| {
            j.iomem = mem_kind(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "iomem_align",
        aliases: &["mem_align"],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Buffers,
        example: "64k",
        help: "Alignment of the first I/O buffer (a power of two; the page size at least)",
        apply: job!(|j, v| {
            let a = parse_size(v)?;
            if a != 0 && !a.is_power_of_two() {
                return Err(format!("{a} is not a power of two"));
            }
            j.iomem_align = a;
            Ok(())
        }),
    },
    OptDef {
        name: "lockmem",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Buffers,
        example: "64m",
        help: "Pin this much memory per thread with mlock while the job runs (to simulate a smaller machine)",
        apply: job!(|j, v| {
            j.lockmem = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "exec_prerun",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Job(created::prerun_output),
        default: None,
        range: None,
        category: Category::Jobs,
        example: "echo start",
        help: "Run this shell command in each of the job's threads before it starts, each trial (output: JOB.prerun.txt; failing stops the run)",
        apply: job!(|j, v| {
            j.exec_prerun = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "exec_postrun",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Job(created::postrun_output),
        default: None,
        range: None,
        category: Category::Jobs,
        example: "echo done",
        help: "Run this shell command in each of the job's threads after it ends (output: JOB.postrun.txt)",
        apply: job!(|j, v| {
            j.exec_postrun = opt_str(v);
            Ok(())
        }),
    },
];
