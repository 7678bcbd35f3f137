//! Files and offsets: how many files a job uses and how they are named and
//! served, where each I/O goes (rw value forms, zones, distributions,
//! alignment), how much I/O a job does, and iolog record and replay.
//! Semantics are fio's (HOWTO), implemented in runner/offsets.rs (and
//! offsets/random.rs), runner/iolog.rs and targets/.

use super::*;
use crate::job::spec::{AccessZone, Fallocate, FileService, RandomGenerator, ZoneMode, ZoneSize};

/// `name:N` → (name, Some(N)).
fn with_suffix(v: &str) -> (&str, Option<&str>) {
    match v.trim().split_once(':') {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (v.trim(), None),
    }
}

/// `file_service_type=random:8`, `zipf:1.2`, …
fn file_service(j: &mut JobSpec, v: &str) -> Result<(), UnitError> {
    let (kind, arg) = with_suffix(v);
    let float = |d: f64| arg.map(parse_float).unwrap_or(Ok(d));
    let every = || -> Result<u32, UnitError> {
        match arg {
            Some(a) => pos_u32(a),
            None => Ok(1),
        }
    };
    let (svc, n) = match kind {
        "random" => (FileService::Random, every()?),
        "roundrobin" => (FileService::RoundRobin, every()?),
        "sequential" => (FileService::Sequential, every()?),
        "zipf" => (FileService::Zipf(zipf_theta(float(1.1)?)?), 1),
        "pareto" => (FileService::Pareto(pareto_h(float(0.2)?)?), 1),
        "normal" | "gauss" => (FileService::Normal(normal_dev(float(10.0)?)?), 1),
        o => {
            return Err(format!(
                "'{o}' is not random, roundrobin, sequential, zipf, pareto, normal or gauss"
            ))
        }
    };
    j.file_service = svc;
    j.file_service_every = n;
    Ok(())
}

pub(super) fn zipf_theta(t: f64) -> Result<f64, UnitError> {
    if t <= 0.0 || t == 1.0 {
        return Err("zipf's theta must be > 0 and not 1".into());
    }
    Ok(t)
}

pub(super) fn pareto_h(h: f64) -> Result<f64, UnitError> {
    if !(0.0..1.0).contains(&h) || h == 0.0 {
        return Err("pareto's h must be between 0 and 1".into());
    }
    Ok(h)
}

pub(super) fn normal_dev(p: f64) -> Result<f64, UnitError> {
    if p <= 0.0 || p > 100.0 {
        return Err("normal's deviation must be a percentage (0 to 100]".into());
    }
    Ok(p)
}

/// `zoned:60/10:30/20:10/70[,R/W zones]` (percent of the region) or
/// `zoned_abs:60/20g:40/100g` (bytes).
pub(super) fn zoned(spec: &str, abs: bool) -> Result<[Vec<AccessZone>; 2], UnitError> {
    let one = |list: &str| -> Result<Vec<AccessZone>, UnitError> {
        let mut v = Vec::new();
        // fio: a zone whose size percentage is left out (`10/`, `10`) or 0
        // shares what the others leave of the region, equally (whole percents).
        let mut missing = Vec::new();
        for part in list.split(':').map(str::trim).filter(|p| !p.is_empty()) {
            let (io, size) = match part.split_once('/') {
                Some((io, size)) => (io, size.trim()),
                None if !abs => (part, ""),
                None => {
                    return Err(format!(
                        "'{part}' is not IO_PERCENT/SIZE, for example 60/10g"
                    ))
                }
            };
            let io_pct = pct(io)?;
            let size = if abs {
                ZoneSize::Bytes(parse_size(size)?)
            } else {
                let p = if size.is_empty() {
                    0.0
                } else {
                    parse_float(size.trim_end_matches('%'))?
                };
                if !(0.0..=100.0).contains(&p) {
                    return Err(format!("zone size '{size}' is not a percentage"));
                }
                if p == 0.0 {
                    missing.push(v.len());
                }
                ZoneSize::Pct(p)
            };
            v.push(AccessZone { io_pct, size });
        }
        if !missing.is_empty() {
            let given: f64 = v
                .iter()
                .map(|z| match z.size {
                    ZoneSize::Pct(p) => p,
                    ZoneSize::Bytes(_) => 0.0,
                })
                .sum();
            let share = ((100.0 - given).max(0.0) / missing.len() as f64).floor();
            if share <= 0.0 {
                return Err(format!(
                    "the zones with a size leave nothing of the region for the {} without one",
                    missing.len()
                ));
            }
            for i in missing {
                v[i].size = ZoneSize::Pct(share);
            }
        }
        if v.is_empty() || v.len() > 256 {
            return Err("give 1 to 256 zones, for example zoned:60/10:40/90".into());
        }
        let io: u32 = v.iter().map(|z| z.io_pct).sum();
        if io != 100 {
            return Err(format!(
                "the zones' I/O percentages add up to {io}, not 100"
            ));
        }
        if !abs {
            let sz: f64 = v
                .iter()
                .map(|z| match z.size {
                    ZoneSize::Pct(p) => p,
                    ZoneSize::Bytes(_) => 0.0,
                })
                .sum();
            if sz > 100.0 + 1e-9 {
                return Err(format!(
                    "the zones cover {sz}% of the region, more than 100%"
                ));
            }
        }
        Ok(v)
    };
    let lists: Vec<&str> = spec.split(',').collect();
    if lists.len() > 3 {
        return Err("at most read, write and trim zone lists".into());
    }
    let r = one(lists[0])?;
    let w = match lists.get(1) {
        Some(l) if !l.trim().is_empty() => one(l)?,
        _ => r.clone(),
    };
    Ok([r, w])
}

/// `sequence:3,1,0,2`: block indices (in units of the smallest block size).
pub(super) fn sequence(spec: &str) -> Result<Vec<u64>, UnitError> {
    let v = spec
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<u64>()
                .map_err(|_| format!("'{p}' is not a block index (0, 1, 2, …)"))
        })
        .collect::<Result<Vec<u64>, _>>()?;
    if v.is_empty() || v.len() > 65536 {
        return Err("give 1 to 65536 block indices, for example sequence:3,1,0,2".into());
    }
    Ok(v)
}

fn opt_bytes(v: &str) -> Result<Option<String>, UnitError> {
    Ok(opt_str(v))
}

/// Checks across this section's options, once a job is complete.
pub fn validate(j: &JobSpec) -> Result<(), String> {
    if j.unlink_each_loop && j.loops > 1 {
        return Err(format!(
            "not supported by dioscope: unlink_each_loop with loops={} (a job's loops run over \
             files laid out once); use loops=1 with unlink_each_loop, or unlink=1",
            j.loops
        ));
    }
    if j.zonemode == ZoneMode::Strided && j.zonesize == 0 {
        return Err("zonemode=strided needs zonesize=, for example zonesize=64m".into());
    }
    if j.sprandom {
        sprandom_fits(j)?;
    }
    if j.read_iolog.is_some() && j.read_iolog == j.write_iolog {
        return Err("read_iolog and write_iolog name the same file; record to another one".into());
    }
    if j.rw.trims() && j.verify.is_some() {
        return Err(format!(
            "rw={} with verify: trimmed blocks hold no verifiable data; drop verify= or trim \
             in a job of its own",
            j.rw.as_str()
        ));
    }
    Ok(())
}

/// What `sprandom=1` needs of the rest of the job (fio's rules, t/sprandom.py):
/// random writes only, one file, one power-of-two block size, and no
/// explicit random map or generator other than lfsr (sprandom brings its
/// own order: every block once). The sizes are checked with the target
/// (runner/sprandom.rs).
fn sprandom_fits(j: &JobSpec) -> Result<(), String> {
    let given = |name: &str| {
        j.given
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if j.rw != RwMode::RandWrite {
        return Err(format!(
            "sprandom=1 is a random-write preconditioning and needs rw=randwrite, not rw={}",
            j.rw.as_str()
        ));
    }
    if given("random_generator").is_some() && j.random_generator != RandomGenerator::Lfsr {
        return Err(format!(
            "sprandom=1 writes every block once in its own order, which random_generator={} \
             cannot give; drop random_generator or use random_generator=lfsr",
            given("random_generator").unwrap_or("")
        ));
    }
    if given("norandommap").is_some() && !j.norandommap {
        return Err(
            "sprandom=1 chooses its offsets without fio's random map; drop norandommap=0 (or set \
             norandommap=1)"
                .into(),
        );
    }
    let bs = match &j.bs[1] {
        BlockSizes::Fixed(b) if b.is_power_of_two() => *b,
        other => {
            return Err(format!(
            "sprandom=1 needs one power-of-two block size for its writes (bs=4k, 16k, …), not {}",
            match other {
                BlockSizes::Fixed(b) => format!("bs={b}"),
                _ => "a range or split".into(),
            }
        ))
        }
    };
    if j.blockalign[1] != 0 && j.blockalign[1] != bs {
        return Err(format!(
            "sprandom=1 writes whole blocks of bs={bs}; blockalign={} differs: drop it or set it to {bs}",
            j.blockalign[1]
        ));
    }
    if j.numjobs > 1 {
        return Err(format!(
            "sprandom=1 preconditions its file with one job (fio's rule): numjobs={} would write \
             the pattern that many times over, interleaved; use numjobs=1",
            j.numjobs
        ));
    }
    if j.filenames.len() > 1 || j.nrfiles > 1 {
        return Err(
            "sprandom=1 preconditions one file or device per job; give one filename (or use \
             one job per device)"
                .into(),
        );
    }
    Ok(())
}

/// fio's `wait_for`, across the jobs of a plan: the waitee must be one
/// job defined before the waiter (fio's rule). Run phases (runner/plan.rs)
/// run one after the other, so a waitee of an earlier phase needs nothing;
/// a waiter in the waitee's phase starts a new phase (`wait_phase`), which
/// runs once every clone of the waitee is done. Unlike `stonewall` it keeps
/// the reporting group: fio's groupid does not change at `wait_for`.
pub fn resolve_wait_for(jobs: &mut [JobSpec]) -> Result<(), String> {
    let mut group = vec![0u32; jobs.len()];
    for i in 0..jobs.len() {
        let mut g = match i {
            0 => 0,
            _ if jobs[i].stonewall => group[i - 1] + 1,
            _ => group[i - 1],
        };
        if let Some(w) = jobs[i].wait_for.clone() {
            let named: Vec<usize> = (0..i).filter(|&k| jobs[k].name == w).collect();
            let k = match named[..] {
                [k] => k,
                [] => {
                    return Err(format!(
                        "job '{}': wait_for={w} names no job before it; the job waited for                          must come first in the job file",
                        jobs[i].name
                    ))
                }
                _ => {
                    return Err(format!(
                        "job '{}': wait_for={w} names {} jobs; give the job waited for a                          name of its own",
                        jobs[i].name,
                        named.len()
                    ))
                }
            };
            if group[k] == g {
                jobs[i].wait_phase = true;
                g += 1;
            }
        }
        group[i] = g;
    }
    Ok(())
}

/// Options of this section.
pub(super) static WORKLOAD: &[OptDef] = &[
    OptDef {
        name: "nrfiles",
        aliases: &["nr_files"],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1"),
        range: Some(Range::at_least(1)),
        category: Category::Targets,
        example: "4",
        help: "Files per job clone (named by filename_format; each gets size/nrfiles unless filesize is given)",
        apply: job!(|j, v| {
            j.nrfiles = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "openfiles",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: Some(Range::at_least(1)),
        category: Category::Targets,
        example: "2",
        help: "Files kept open at once; dioscope opens each file once per run (no open/close in the measurement), so this only limits which files are served together",
        apply: job!(|j, v| {
            j.openfiles = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "filename_format",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Targets,
        example: "data.$jobnum.$filenum",
        help: "Names of generated files: $jobname, $jobnum (clone), $filenum, $clientuid (the MPI rank, else 0); default $jobname.$jobnum.$filenum",
        apply: job!(|j, v| {
            j.filename_format = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "file_service_type",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("roundrobin"),
        range: None,
        category: Category::Targets,
        example: "random:8",
        help: "Which file the next I/O goes to: roundrobin, sequential, random (':N' I/Os before switching), zipf/pareto/normal/gauss (':PARAM')",
        apply: job!(file_service),
    },
    OptDef {
        name: "allow_file_create",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Targets,
        example: "0",
        help: "May dioscope create missing files (default 1); 0: a missing file is an error",
        apply: job!(|j, v| {
            j.allow_file_create = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "random_sequence_stride",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "With random_distribution=sequence: 1 moves each round of the sequence on by its length (3,1,0,2 then 7,5,4,6, …); 0 (default) repeats it",
        apply: job!(|j, v| {
            j.random_sequence_stride = parse_int(v)? != 0;
            Ok(())
        }),
    },
    OptDef {
        name: "fill_device",
        aliases: &["fill_fs"],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Size,
        example: "1",
        help: "Write until the file system is full: on a file, the region is the file plus the free space and ENOSPC (or EDQUOT) ends the job without an error, and a job of a later group on that file without size= of its own takes what the fill wrote (sized when it starts, as fio does with create_serialize=0); on a block device, the whole device (size= is ignored)",
        apply: job!(|j, v| {
            j.fill_device = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "create_serialize",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Targets,
        example: "1",
        help: "Accepted for fio's job files: dioscope lays out every file one after the other before any job starts, outside the measurement, so 0 and 1 measure the same",
        apply: job!(|_j, v| {
            parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "sync",
        aliases: &[],
        kind: Kind::Choice(&["none", "0", "sync", "1", "dsync"]),
        creates: Creates::Nothing,
        default: Some("none"),
        range: None,
        category: Category::Pattern,
        example: "none",
        help: "Open the job's files and devices with O_SYNC (sync, 1: each write returns once data and metadata are stable) or O_DSYNC (dsync: data only); none (0) is fio's default",
        apply: job!(|j, v| match v.trim() {
            "none" | "0" | "" => {
                j.open_sync = 0;
                Ok(())
            }
            "sync" | "1" => {
                j.open_sync = libc::O_SYNC;
                Ok(())
            }
            "dsync" => {
                j.open_sync = libc::O_DSYNC;
                Ok(())
            }
            o => Err(format!("'{o}' is not none, 0, sync, 1 or dsync")),
        }),
    },
    OptDef {
        name: "wait_for",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Jobs,
        example: "writers",
        help: "Start this job once every clone of the named earlier job is done (a job of an earlier run phase already is; one running beside it makes this job start a new run phase, in the same reporting group as fio)",
        apply: job!(|j, v| {
            j.wait_for = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "overwrite",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Targets,
        example: "1",
        help: "1 (dioscope's default): a file is filled with data before the job writes over it; 0 (fio's default): a job that only writes gets its new file sized and its space reserved (fallocate=), not filled, so its writes are first writes",
        apply: job!(|j, v| {
            j.overwrite = Some(parse_bool(v)?);
            Ok(())
        }),
    },
    OptDef {
        name: "fallocate",
        aliases: &[],
        kind: Kind::Choice(&["none", "native", "posix", "keep", "truncate", "0", "1"]),
        creates: Creates::Nothing,
        default: Some("native"),
        range: None,
        category: Category::Targets,
        example: "posix",
        help: "Space reservation when laying out files: none, native (default), posix, keep (FALLOC_FL_KEEP_SIZE), truncate (ftruncate only); 0=none, 1=posix",
        apply: job!(|j, v| {
            j.fallocate = match v.trim() {
                "none" | "0" => Fallocate::None,
                "native" => Fallocate::Native,
                "posix" | "1" => Fallocate::Posix,
                "keep" => Fallocate::Keep,
                "truncate" => Fallocate::Truncate,
                o => return Err(format!("'{o}' is not none, native, posix, keep or truncate")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "unlink_each_loop",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Targets,
        example: "1",
        help: "Remove the files this job created after each loop (with loops=1: at the end, as unlink)",
        apply: job!(|j, v| {
            j.unlink_each_loop = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rw_sequencer",
        aliases: &[],
        kind: Kind::Choice(&["sequential", "identical"]),
        creates: Creates::Nothing,
        default: Some("sequential"),
        range: None,
        category: Category::Pattern,
        example: "identical",
        help: "With rw=randread:N: the N-1 I/Os after each random offset continue sequentially (default) or repeat the same offset",
        apply: job!(|j, v| {
            j.rw_sequencer_identical = match v.trim() {
                "sequential" => false,
                "identical" => true,
                o => return Err(format!("'{o}' is not sequential or identical")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "offset_align",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Pattern,
        example: "64k",
        help: "Round a percentage offset up to this (default: the smallest block size)",
        apply: job!(|j, v| {
            j.offset_align = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "blockalign",
        aliases: &["ba"],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::BlockSize,
        example: "8k",
        help: "Boundary of random offsets (default: the block size); 'R,W' per direction; turns off the random map",
        apply: job!(|j, v| {
            let parts: Vec<&str> = v.split(',').map(str::trim).collect();
            if parts.len() > 3 {
                return Err("at most read, write and trim values".into());
            }
            let one = |p: &str| -> Result<u64, UnitError> {
                if p.is_empty() {
                    return Ok(0);
                }
                match parse_size(p)? {
                    0 => Err("a blockalign of 0".into()),
                    b => Ok(b),
                }
            };
            let r = one(parts[0])?;
            let w = match parts.get(1) {
                Some(p) => one(p)?,
                None => r,
            };
            j.blockalign = [r, w];
            Ok(())
        }),
    },
    OptDef {
        name: "random_generator",
        aliases: &[],
        kind: Kind::Choice(&["tausworthe", "lfsr", "tausworthe64"]),
        creates: Creates::Nothing,
        default: Some("tausworthe"),
        range: None,
        category: Category::Pattern,
        example: "lfsr",
        help: "tausworthe: L'Ecuyer's taus88 (tausworthe64, or over 2^32 blocks: lfsr258), each block once per pass with the random map (one block size: a keyed Feistel permutation of each pass, no bitmap; several: a bitmap), repeats with norandommap; lfsr: a maximal-length LFSR, each block once per pass without a map; all reproducible from randseed",
        apply: job!(|j, v| {
            j.random_generator = match v.trim() {
                "tausworthe" => RandomGenerator::Tausworthe,
                "lfsr" => RandomGenerator::Lfsr,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                o => return Err(format!("'{o}' is not tausworthe, lfsr or tausworthe64")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "sprandom",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "SanDisk pseudo-random preconditioning (rw=randwrite): write the file region by region, every block once, rewriting a share of each region's blocks in the next as the SSD's steady state would have them invalid (spr_op, spr_num_regions, spr_cs); the job writes the modelled physical size, size × (1 + spr_op)",
        apply: job!(|j, v| {
            j.sprandom = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "spr_op",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("0.15"),
        range: None,
        category: Category::Pattern,
        example: "0.2",
        help: "sprandom: the device's over-provisioning ratio, between 0 and 1 (default 0.15)",
        apply: job!(|j, v| {
            let op = parse_float(v)?;
            if !(op > 0.0 && op < 1.0) {
                return Err(format!(
                    "spr_op={} is not an over-provisioning ratio between 0 and 1 (e.g. 0.15 for 15 %)",
                    v.trim()
                ));
            }
            j.spr_op = op;
            Ok(())
        }),
    },
    OptDef {
        name: "spr_num_regions",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("100"),
        range: Some(Range::at_least(1)),
        category: Category::Pattern,
        example: "50",
        help: "sprandom: regions the write pattern is made of (default 100)",
        apply: job!(|j, v| {
            j.spr_num_regions = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "spr_cs",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "32k",
        help: "sprandom: the device's write cache in bytes (default 0): with one, each region's rewrites of the previous region come at its end, after more than a cache's worth of other writes; a region must be larger",
        apply: job!(|j, v| {
            j.spr_cs = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "percentage_random",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("100"),
        range: Some(Range::PERCENT),
        category: Category::Pattern,
        example: "80",
        help: "In a random workload, the percent of I/Os at random offsets (the rest continue sequentially); 'R,W' per direction",
        apply: job!(|j, v| {
            let parts: Vec<&str> = v.split(',').collect();
            if parts.len() > 3 {
                return Err("at most read, write and trim values".into());
            }
            let r = if parts[0].trim().is_empty() { 100 } else { u32v(parts[0])? };
            let w = match parts.get(1) {
                Some(p) if !p.trim().is_empty() => u32v(p)?,
                Some(_) => 100,
                None => r,
            };
            j.percentage_random = [r, w];
            Ok(())
        }),
    },
    OptDef {
        name: "serialize_overlap",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Engine,
        example: "1",
        help: "Never have two in-flight I/Os of a job overlap (waits for the earlier one)",
        apply: job!(|j, v| {
            j.serialize_overlap = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "zonemode",
        aliases: &[],
        kind: Kind::Choice(&["none", "strided"]),
        creates: Creates::Nothing,
        default: Some("none"),
        range: None,
        category: Category::Pattern,
        example: "strided",
        help: "none, or strided: I/O in zones of zonerange bytes, zonesize bytes each, skipping zoneskip between (zbd: not supported)",
        apply: job!(|j, v| {
            j.zonemode = match v.trim() {
                "none" => ZoneMode::None,
                "strided" => ZoneMode::Strided,
                "zbd" => {
                    return Err("not supported by dioscope: zonemode=zbd (zoned block devices: \
                                dioscope has no zone management, write pointers or zone resets); \
                                use zonemode=strided or none"
                        .into())
                }
                o => return Err(format!("'{o}' is not none or strided")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "zonesize",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "64m",
        help: "zonemode=strided: bytes transferred in a zone before moving on",
        apply: job!(|j, v| {
            j.zonesize = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "zonerange",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "256m",
        help: "zonemode=strided: size of a zone (default: zonesize)",
        apply: job!(|j, v| {
            j.zonerange = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "zoneskip",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1g",
        help: "zonemode=strided: bytes skipped after each zone",
        apply: job!(|j, v| {
            j.zoneskip = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "number_ios",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Size,
        example: "10000",
        help: "Stop after this many I/Os (if nothing else ends the job first)",
        apply: job!(|j, v| {
            j.number_ios = parse_int(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "io_size",
        aliases: &["io_limit"],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Size,
        example: "10g",
        help: "Bytes of I/O to do, independent of the region size= sets (more wraps around, less stops early)",
        apply: job!(|j, v| {
            let b = parse_size(v)?;
            j.io_size = (b > 0).then_some(b);
            Ok(())
        }),
    },
    OptDef {
        name: "write_iolog",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Job(created::iologs),
        default: None,
        range: None,
        category: Category::Replay,
        example: "job.iolog",
        help: "Record every issued I/O in fio's iolog v2 format (one file per job clone: NAME, NAME.1, …)",
        apply: job!(|j, v| {
            j.write_iolog = opt_bytes(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "read_iolog",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Replay,
        example: "job.iolog",
        help: "Replay the I/Os of an iolog (fio's v2 or v3 format) instead of generating them",
        apply: job!(|j, v| {
            j.read_iolog = opt_bytes(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "replay_no_stall",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Replay,
        example: "1",
        help: "Replay a v3 iolog as fast as possible instead of at its recorded times",
        apply: job!(|j, v| {
            j.replay_no_stall = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "replay_redirect",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Replay,
        example: "/dev/sdc",
        help: "Replay every I/O of the iolog onto this one file or device",
        apply: job!(|j, v| {
            j.replay_redirect = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "replay_align",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Replay,
        example: "4k",
        help: "Align replayed offsets down to this power of 2",
        apply: job!(|j, v| {
            let a = parse_size(v)?;
            if a != 0 && !a.is_power_of_two() {
                return Err(format!("{a} is not a power of 2"));
            }
            j.replay_align = a;
            Ok(())
        }),
    },
    OptDef {
        name: "replay_time_scale",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("100"),
        range: Some(Range::at_least(1)),
        category: Category::Replay,
        example: "200",
        help: "Replay a timed iolog at this percent of its recorded rate (200: twice as fast)",
        apply: job!(|j, v| {
            j.replay_time_scale = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "replay_skip",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Replay,
        example: "write,trim",
        help: "Kinds of the iolog's I/Os not to replay: read, write, trim, sync (comma-separated)",
        apply: job!(|j, v| {
            let mut kinds = Vec::new();
            for k in v.split(',').map(str::trim).filter(|k| !k.is_empty()) {
                if !["read", "write", "trim", "sync"].contains(&k) {
                    return Err(format!("'{k}' is not read, write, trim or sync"));
                }
                kinds.push(k.to_string());
            }
            j.replay_skip = kinds;
            Ok(())
        }),
    },
    OptDef {
        name: "replay_scale",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Replay,
        example: "2",
        help: "Divide replayed offsets by this factor",
        apply: job!(|j, v| {
            j.replay_scale = parse_int(v)?.max(1);
            Ok(())
        }),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::spec::RwMode;

    fn set(j: &mut JobSpec, name: &str, v: &str) -> Result<(), UnitError> {
        let o = lookup(name).unwrap_or_else(|| panic!("{name}"));
        assert!(o.apply.is_job(), "{name} is global");
        o.set(j, &mut GlobalSettings::default(), v)
    }

    #[test]
    fn bs_read_write_trim_as_fio() {
        let mut j = JobSpec::default();
        let f = BlockSizes::Fixed;
        set(&mut j, "bs", "256k").unwrap();
        assert_eq!(
            (j.bs.clone(), j.bs_trim.clone()),
            ([f(262144), f(262144)], f(262144))
        );
        set(&mut j, "bs", "8k,32k").unwrap();
        assert_eq!(
            (j.bs.clone(), j.bs_trim.clone()),
            ([f(8192), f(32768)], f(32768))
        );
        set(&mut j, "bs", "8k,32k,").unwrap();
        assert_eq!(j.bs_trim, f(4096));
        set(&mut j, "bs", ",8k").unwrap();
        assert_eq!(
            (j.bs.clone(), j.bs_trim.clone()),
            ([f(4096), f(8192)], f(8192))
        );
        set(&mut j, "bs", ",8k,").unwrap();
        assert_eq!(
            (j.bs.clone(), j.bs_trim.clone()),
            ([f(4096), f(8192)], f(4096))
        );
        set(&mut j, "bs", "4k,8k,16k").unwrap();
        assert_eq!(j.bs_trim, f(16384));
        assert!(set(&mut j, "bs", "4k,8k,16k,32k").is_err());
        set(&mut j, "bssplit", "2k/50:4k/50,4k/90:8k/10").unwrap();
        assert_eq!(j.bs[0], BlockSizes::Split(vec![(2048, 50), (4096, 50)]));
        assert_eq!(j.bs[1], BlockSizes::Split(vec![(4096, 90), (8192, 10)]));
    }

    #[test]
    fn rw_value_forms() {
        let mut j = JobSpec::default();
        set(&mut j, "rw", "read:-8k").unwrap();
        assert_eq!((j.rw, j.rw_offset_mod), (RwMode::Read, -8192));
        set(&mut j, "rw", "randrw:4").unwrap();
        assert_eq!((j.rw, j.rw_offset_mod), (RwMode::RandRw, 4));
        set(&mut j, "readwrite", "write:4k").unwrap();
        assert_eq!((j.rw, j.rw_offset_mod), (RwMode::Write, 4096));
        for (v, m) in [
            ("trim", RwMode::Trim),
            ("randtrim", RwMode::RandTrim),
            ("trimwrite", RwMode::TrimWrite),
            ("randtrimwrite", RwMode::RandTrimWrite),
        ] {
            set(&mut j, "rw", v).unwrap();
            assert_eq!(j.rw, m);
            assert!(j.rw.trims() && j.rw.writes() && !j.rw.reads(), "{v}");
        }
        assert!(set(&mut j, "rw", "randread:-2").is_err());
        assert!(set(&mut j, "rw", "sideways").is_err());
    }

    #[test]
    fn random_distribution_forms() {
        let mut j = JobSpec::default();
        set(&mut j, "random_distribution", "zipf:1.2:0.25").unwrap();
        assert_eq!(j.random_distribution, RandomDist::Zipf(1.2));
        assert_eq!(j.random_center, Some(0.25));
        set(&mut j, "random_distribution", "gauss:5").unwrap();
        assert_eq!(j.random_distribution, RandomDist::Normal(5.0));
        assert_eq!(j.random_center, None);
        set(&mut j, "random_distribution", "zoned:60/10:30/20:8/30:2/40").unwrap();
        let RandomDist::Zoned([r, w]) = &j.random_distribution else {
            panic!("{:?}", j.random_distribution)
        };
        assert_eq!(r.len(), 4);
        assert_eq!(r, w, "one list applies to both directions");
        set(
            &mut j,
            "random_distribution",
            "zoned_abs=60/20G:30/100G:10/500g",
        )
        .unwrap();
        let RandomDist::Zoned([r, _]) = &j.random_distribution else {
            panic!()
        };
        assert_eq!(r[1].size, ZoneSize::Bytes(100 << 30));
        set(&mut j, "random_distribution", "zoned:50/50:50/50,100/100").unwrap();
        let RandomDist::Zoned([r, w]) = &j.random_distribution else {
            panic!()
        };
        assert_eq!((r.len(), w.len()), (2, 1));
        // fio: a zone without a size shares what the others leave.
        set(&mut j, "random_distribution", "zoned:60/10:30/20:10/").unwrap();
        let RandomDist::Zoned([r, _]) = &j.random_distribution else {
            panic!()
        };
        assert_eq!(r[2].size, ZoneSize::Pct(70.0));
        set(&mut j, "random_distribution", "zoned:50/10:25:25").unwrap();
        let RandomDist::Zoned([r, _]) = &j.random_distribution else {
            panic!()
        };
        assert_eq!(
            (r[1].size, r[2].size),
            (ZoneSize::Pct(45.0), ZoneSize::Pct(45.0))
        );
        set(&mut j, "random_distribution", "sequence:3,1,0,2").unwrap();
        assert_eq!(
            j.random_distribution,
            RandomDist::Sequence(vec![3, 1, 0, 2])
        );
        for bad in [
            "sequence:",
            "sequence:1,x",
            "zoned:60/10:30/20",
            "zoned:60/100:40/",
            "zoned_abs:60/1g:40/",
            "zoned:60/80:40/80",
            "zipf:1",
            "zipf:1.2:2",
            "pareto:1.5",
            "wobbly:3",
        ] {
            assert!(set(&mut j, "random_distribution", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn wait_for_orders_the_waiter_after_its_waitee() {
        let job = |name: &str, wait: Option<&str>, stonewall: bool| JobSpec {
            name: name.into(),
            wait_for: wait.map(String::from),
            stonewall,
            ..Default::default()
        };
        // A waitee of the same phase: the waiter starts a phase of its own,
        // not a reporting group (wait_phase, not stonewall).
        let mut v = vec![
            job("a", None, false),
            job("b", Some("a"), false),
            job("c", None, false),
        ];
        resolve_wait_for(&mut v).unwrap();
        assert!(v[1].wait_phase && !v[1].stonewall && !v[2].wait_phase);
        // One of an earlier phase: already done when the waiter starts.
        let mut v = vec![job("a", None, false), job("b", Some("a"), true)];
        resolve_wait_for(&mut v).unwrap();
        assert!(!v[1].wait_phase);
        // new_group alone runs beside the jobs before it: still a wait.
        let mut v = vec![job("a", None, false), job("b", Some("a"), false)];
        v[1].new_group = true;
        resolve_wait_for(&mut v).unwrap();
        assert!(v[1].wait_phase);
        let mut v = vec![job("b", Some("a"), false), job("a", None, false)];
        assert!(resolve_wait_for(&mut v)
            .unwrap_err()
            .contains("names no job before it"));
        let mut v = vec![
            job("a", None, false),
            job("a", None, false),
            job("b", Some("a"), false),
        ];
        assert!(resolve_wait_for(&mut v)
            .unwrap_err()
            .contains("names 2 jobs"));
    }

    #[test]
    fn file_service_type_forms() {
        let mut j = JobSpec::default();
        set(&mut j, "file_service_type", "random:8").unwrap();
        assert_eq!(
            (j.file_service, j.file_service_every),
            (FileService::Random, 8)
        );
        set(&mut j, "file_service_type", "roundrobin").unwrap();
        assert_eq!(
            (j.file_service, j.file_service_every),
            (FileService::RoundRobin, 1)
        );
        set(&mut j, "file_service_type", "zipf:1.4").unwrap();
        assert_eq!(j.file_service, FileService::Zipf(1.4));
        set(&mut j, "file_service_type", "gauss").unwrap();
        assert_eq!(j.file_service, FileService::Normal(10.0));
        assert!(set(&mut j, "file_service_type", "random:0").is_err());
        assert!(set(&mut j, "file_service_type", "chaos").is_err());
    }

    #[test]
    fn cross_checks() {
        let mut j = JobSpec {
            name: "x".into(),
            ..Default::default()
        };
        set(&mut j, "zonemode", "strided").unwrap();
        assert!(validate(&j).unwrap_err().contains("zonesize"));
        set(&mut j, "zonesize", "1m").unwrap();
        assert!(validate(&j).is_ok());
        set(&mut j, "rw", "trim").unwrap();
        set(&mut j, "verify", "crc32c").unwrap();
        assert!(validate(&j).is_err());
        let e = set(&mut j, "zonemode", "zbd").unwrap_err();
        assert!(e.contains("not supported by dioscope"), "{e}");
    }
}
