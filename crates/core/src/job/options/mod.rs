//! The one option table. Command-line parsing, job-file parsing, `--help` and
//! the option reference in the docs are all generated from [`all`].
//!
//! Adding an option means adding one [`OptDef`] here: its name, aliases, the
//! kind of value it takes, a line of help, an example, its default (as a
//! user would write it), the numbers it accepts ([`Range`]), its
//! [`Category`] in the references, the files it creates, and how it sets the
//! [`JobSpec`] (or the [`GlobalSettings`]). Nothing else: the defaults of
//! `JobSpec::default()` are the table's, applied through each option's own
//! `apply`; the parser checks the range before `apply` runs ([`OptDef::set`]);
//! `--help`, `--cmdhelp` and docs/OPTIONS.md list the option under its
//! category with its default and range (regenerate OPTIONS.md with
//! `dioscope options --markdown > docs/OPTIONS.md`: a test compares them).

pub use super::created::{self, Creates};
use super::spec::{
    BlockSizes, EngineKind, Eta, GlobalSettings, JobSpec, RandomDist, RankStonewall, RwMode,
};
use super::units::*;

/// What kind of value an option takes; decides how a bare flag is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A boolean that may appear bare (`thread`, `time_based`).
    Flag,
    Int,
    Size,
    Time,
    Str,
    /// Text that may also appear bare, meaning a default (fio's
    /// `write_bw_log` alone logs under the job's name). On the command line
    /// it still takes the next word, as fio's does.
    OptStr,
    Choice(&'static [&'static str]),
}

/// Where an option applies.
pub enum Apply {
    Job(fn(&mut JobSpec, &str) -> Result<(), UnitError>),
    Global(fn(&mut GlobalSettings, &str) -> Result<(), UnitError>),
    /// The job's engine parameters, through the `apply` the engine declares
    /// with the option (`EngineDef::OWN_OPTIONS`).
    Engine,
}

impl Apply {
    /// Whether the option sets the job (its own fields or its engine's).
    pub fn is_job(&self) -> bool {
        !matches!(self, Apply::Global(_))
    }
}

pub struct OptDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    pub help: &'static str,
    /// A valid value, shown in errors and help.
    pub example: &'static str,
    pub apply: Apply,
    /// The files the option makes besides the targets (logs, iologs, a
    /// program's output …): every such option is marked, and the run checks
    /// each name before the first I/O (`outfile::check`) and opens it
    /// through `outfile::open`.
    pub creates: Creates,
    /// The value a job has when the option is not given, as a user would
    /// write it (fio's default, or dioscope's where it differs and says so).
    /// `JobSpec::default()` and `GlobalSettings::default()` are these values
    /// applied to a blank spec; `None` when there is no value to write
    /// (`filename`), or the default is worked out from other options
    /// (`verify_interval`: the block size), and the help says so.
    pub default: Option<&'static str>,
    /// The numbers the option accepts: [`OptDef::set`] checks a value that
    /// reads as a number (each part of a `R,W,T` list) before `apply`
    /// sees it.
    pub range: Option<Range>,
    /// Where `--cmdhelp` and docs/OPTIONS.md list the option.
    pub category: Category,
}

/// The groups of the option reference, in its order (after fio's HOWTO).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Jobs,
    Targets,
    Size,
    Pattern,
    BlockSize,
    Engine,
    EngineOptions,
    Pacing,
    Time,
    Buffers,
    Verify,
    Errors,
    Placement,
    Replay,
    Logs,
    Output,
    Trials,
    Safety,
    Ranks,
    Stages,
}

impl Category {
    pub const ALL: &'static [Category] = &[
        Category::Jobs,
        Category::Targets,
        Category::Size,
        Category::Pattern,
        Category::BlockSize,
        Category::Engine,
        Category::EngineOptions,
        Category::Pacing,
        Category::Time,
        Category::Buffers,
        Category::Verify,
        Category::Errors,
        Category::Placement,
        Category::Replay,
        Category::Logs,
        Category::Output,
        Category::Trials,
        Category::Safety,
        Category::Ranks,
        Category::Stages,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Category::Jobs => "Jobs, groups and synchronization",
            Category::Targets => "Target files and devices",
            Category::Size => "I/O size",
            Category::Pattern => "I/O type, pattern and offsets",
            Category::BlockSize => "Block sizes",
            Category::Engine => "I/O engine and depth",
            Category::EngineOptions => "Engine-specific options",
            Category::Pacing => "Rate, think time, latency target and steady state",
            Category::Time => "Run time, repetition and clock",
            Category::Buffers => "Buffers, data and memory",
            Category::Verify => "Verification",
            Category::Errors => "Error handling",
            Category::Placement => "CPU, NUMA and priority",
            Category::Replay => "I/O logs and replay",
            Category::Logs => "Bandwidth, IOPS, latency and histogram logs",
            Category::Output => "Measurements and reporting",
            Category::Trials => "Trials and precision (dioscope)",
            Category::Safety => "Safety (dioscope)",
            Category::Ranks => "Multi-rank runs under mpirun (dioscope)",
            Category::Stages => "Latency by stage (dioscope)",
        }
    }
}

/// The whole numbers an option accepts, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub min: u64,
    /// `u64::MAX`: no upper bound.
    pub max: u64,
}

impl Range {
    pub const PERCENT: Range = Range::between(0, 100);

    pub const fn between(min: u64, max: u64) -> Range {
        Range { min, max }
    }
    pub const fn at_least(min: u64) -> Range {
        Range { min, max: u64::MAX }
    }
    pub const fn at_most(max: u64) -> Range {
        Range { min: 0, max }
    }
    pub fn contains(&self, n: u64) -> bool {
        (self.min..=self.max).contains(&n)
    }
    /// The range in words, with sizes in fio's units (`from 0 to 64k`).
    pub fn describe(&self, kind: Kind) -> String {
        let n = |v: u64| match kind {
            Kind::Size => short_size(v),
            _ => v.to_string(),
        };
        match (self.min, self.max) {
            (lo, u64::MAX) => format!("at least {}", n(lo)),
            (lo, hi) => format!("from {} to {}", n(lo), n(hi)),
        }
    }
}

/// `65536` as `64k`: the largest binary unit that divides it.
fn short_size(v: u64) -> String {
    for (shift, unit) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if v != 0 && v.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", v >> shift);
        }
    }
    v.to_string()
}

impl OptDef {
    /// `value`'s numbers against [`OptDef::range`]: each `,`-separated part
    /// that reads as a number must be in the range (a part that does not is
    /// left to `apply`, whose error says what it expected).
    fn check_range(&self, value: &str) -> Result<(), UnitError> {
        let Some(r) = self.range else { return Ok(()) };
        for part in value.split(',') {
            if let Ok(n) = parse_size(part) {
                if !r.contains(n) {
                    return Err(format!(
                        "{} is out of range: {} must be {}",
                        part.trim(),
                        self.name,
                        r.describe(self.kind)
                    ));
                }
            }
        }
        Ok(())
    }

    /// Check `value` against the range, then apply it to the job or the
    /// globals: the one way a value reaches a spec.
    pub fn set(
        &self,
        job: &mut JobSpec,
        global: &mut GlobalSettings,
        value: &str,
    ) -> Result<(), UnitError> {
        self.check_range(value)?;
        match self.apply {
            Apply::Job(f) => f(job, value),
            Apply::Global(f) => f(global, value),
            Apply::Engine => engines::apply(self, job, value),
        }
    }
}

/// fio's `R,W,T` block sizes: an empty value is the default (4k), and the
/// last value given applies to the directions after it unless the list
/// ends with a comma (`bs=8k,32k` → trims 32k; `bs=8k,32k,` → trims 4k).
fn bs_dirs(
    v: &str,
    f: impl Fn(&str) -> Result<BlockSizes, UnitError>,
) -> Result<([BlockSizes; 2], BlockSizes), UnitError> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!(
            "'{v}': give at most a read, a write and a trim value"
        ));
    }
    let default = BlockSizes::Fixed(4096);
    let one = |p: &str| {
        if p.trim().is_empty() {
            Ok(default.clone())
        } else {
            f(p)
        }
    };
    let r = one(parts[0])?;
    let w = match parts.get(1) {
        Some(p) => one(p)?,
        None => r.clone(),
    };
    let t = match parts.get(2) {
        Some(p) => one(p)?,
        None => w.clone(),
    };
    Ok(([r, w], t))
}

fn fixed_bs(s: &str) -> Result<BlockSizes, UnitError> {
    let b = parse_size(s)?;
    if b == 0 {
        return Err("a block size of 0".into());
    }
    Ok(BlockSizes::Fixed(b))
}

fn range_bs(s: &str) -> Result<BlockSizes, UnitError> {
    let (lo, hi) = parse_range(s).or_else(|e| fio_loose_range(s).ok_or(e))?;
    if lo == 0 {
        return Err("a block size of 0".into());
    }
    Ok(if lo == hi {
        BlockSizes::Fixed(lo)
    } else {
        BlockSizes::Range(lo, hi)
    })
}

/// fio reads a range as the size at the start of each side of the first
/// `-` or `:`, ignoring what follows a size: its own t/jobs/t0024.fio
/// gives `bsrange=512/25:1k:25:2k:25:4k/25` (a bssplit list), which fio
/// runs as 512-1k. Only a value with such a tail (a `/`) is read this way,
/// so a plain typo still fails.
fn fio_loose_range(s: &str) -> Option<(u64, u64)> {
    if !s.contains('/') {
        return None;
    }
    let (a, b) = s.split_once(['-', ':'])?;
    let lead = |x: &str| {
        let x = x.trim();
        let n = x
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(x.len());
        parse_size(&x[..n]).ok()
    };
    let (lo, hi) = (lead(a)?, lead(b)?);
    Some((lo.min(hi), lo.max(hi)))
}

fn split_bs(s: &str) -> Result<BlockSizes, UnitError> {
    let mut v = Vec::new();
    let mut unassigned = Vec::new();
    for part in s.split(':').filter(|p| !p.trim().is_empty()) {
        let (sz, pct) = match part.split_once('/') {
            // `1k/`: no share given, as a bare `1k` (fio's t0023 form).
            Some((a, b)) if b.trim().is_empty() => (parse_size(a)?, None),
            Some((a, b)) => (parse_size(a)?, Some(pct(b)?)),
            None => (parse_size(part)?, None),
        };
        if sz == 0 {
            return Err("a block size of 0".into());
        }
        match pct {
            Some(p) => v.push((sz, p)),
            None => unassigned.push(sz),
        }
    }
    // Saturating: a long enough list of 100s must not overflow.
    let used = v.iter().fold(0u32, |a, x| a.saturating_add(x.1));
    if used > 100 {
        return Err(format!("percentages add up to {used}, more than 100"));
    }
    if !unassigned.is_empty() {
        // Sizes without a percentage share what is left; the first ones take
        // the remainder so that `4k:8k:16k` is 34/33/33 and adds up to 100.
        let n = unassigned.len() as u32;
        let (share, extra) = ((100 - used) / n, (100 - used) % n);
        v.extend(
            unassigned
                .into_iter()
                .zip(0..)
                .map(|(s, i)| (s, share + u32::from(i < extra))),
        );
    }
    if v.is_empty() {
        return Err("no block sizes".into());
    }
    Ok(BlockSizes::Split(v))
}

fn u32v(v: &str) -> Result<u32, UnitError> {
    let n = parse_int(v)?;
    u32::try_from(n).map_err(|_| format!("'{v}' is too large"))
}

fn pos_u32(v: &str) -> Result<u32, UnitError> {
    let n = u32v(v)?;
    if n == 0 {
        return Err("it must be at least 1".into());
    }
    Ok(n)
}

fn pct(v: &str) -> Result<u32, UnitError> {
    let n = u32v(v)?;
    if n > 100 {
        return Err(format!("'{v}' is more than 100"));
    }
    Ok(n)
}

fn opt_str(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty()).then(|| v.to_string())
}

macro_rules! job {
    ($f:expr) => {
        Apply::Job($f)
    };
}

// Section files (after `job!`: they use it).
mod accepted;
pub mod engines;
mod logs;
pub mod output;
pub mod pacing;
mod timing;
pub mod workload;

/// The sections of the option table, one file each under `job/options/` (the
/// core options are below). A section is a `static &[OptDef]`; adding one is
/// one line here. Helpers (`job!`, the unit parsers, `bs_dirs`, …) are visible
/// to the section files through `use super::*`.
static SECTIONS: &[&[OptDef]] = &[
    CORE,
    workload::WORKLOAD,
    pacing::PACING,
    buffers::BUFFERS,
    logs::LOGS,
    timing::TIMING,
    output::OUTPUT,
    accepted::ACCEPTED,
];

pub mod buffers;

/// Every option dioscope understands, in table order.
pub fn all() -> impl Iterator<Item = &'static OptDef> + Clone {
    SECTIONS
        .iter()
        .flat_map(|s| s.iter())
        .chain(engines::ENGINES.iter())
}

/// The core options: targets, sizes, patterns, engines, time, groups, output.
static CORE: &[OptDef] = &[
    OptDef {
        name: "name",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Jobs,
        example: "randread-test",
        help: "Job name; on the command line each --name starts a new job",
        apply: job!(|j, v| {
            j.name = v.trim().to_string();
            Ok(())
        }),
    },
    OptDef {
        name: "filename",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Targets,
        example: "/dev/nvme0n1:/data/f2",
        help: "Target file(s) or block device(s), ':'-separated",
        apply: job!(|j, v| {
            // fio escapes a literal ':' as '\:'.
            let mut out = Vec::new();
            let mut cur = String::new();
            let mut chars = v.trim().chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if chars.peek() == Some(&':') => {
                        cur.push(':');
                        chars.next();
                    }
                    ':' => {
                        if !cur.is_empty() {
                            out.push(std::mem::take(&mut cur));
                        }
                    }
                    c => cur.push(c),
                }
            }
            if !cur.is_empty() {
                out.push(cur);
            }
            if out.is_empty() {
                return Err("an empty filename".into());
            }
            j.filenames = out;
            Ok(())
        }),
    },
    OptDef {
        name: "directory",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Targets,
        example: "/mnt/test",
        help: "Directory for files named after the job",
        apply: job!(|j, v| {
            j.directory = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "size",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Size,
        example: "1g",
        help: "Total bytes of I/O per job (or % of the target)",
        apply: job!(|j, v| {
            j.size = Some(parse_size_or_pct(v)?);
            Ok(())
        }),
    },
    OptDef {
        name: "filesize",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Size,
        example: "256m",
        help: "Size of each file (a range gives a random size per file)",
        apply: job!(|j, v| {
            j.filesize = Some(if v.contains('-') || v.contains(':') {
                parse_range(v)?
            } else {
                let s = parse_size(v)?;
                (s, s)
            });
            Ok(())
        }),
    },
    OptDef {
        name: "offset",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1m",
        help: "Start I/O at this offset in the target (or % of it)",
        apply: job!(|j, v| {
            j.offset = parse_size_or_pct(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "offset_increment",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1g",
        help: "Each clone of a job (numjobs) starts this much further in",
        apply: job!(|j, v| {
            j.offset_increment = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "bs",
        aliases: &["blocksize"],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("4k"),
        range: None,
        category: Category::BlockSize,
        example: "4k",
        help: "Block size; 'R,W' sets reads and writes separately",
        apply: job!(|j, v| {
            (j.bs, j.bs_trim) = bs_dirs(v, fixed_bs)?;
            Ok(())
        }),
    },
    OptDef {
        name: "bsrange",
        aliases: &["blocksize_range"],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::BlockSize,
        example: "4k-64k",
        help: "Random block sizes in a range; 'R,W' per direction",
        apply: job!(|j, v| {
            (j.bs, j.bs_trim) = bs_dirs(v, range_bs)?;
            Ok(())
        }),
    },
    OptDef {
        name: "bssplit",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::BlockSize,
        example: "4k/50:64k/50",
        help: "Weighted mix of block sizes; 'R,W' per direction",
        apply: job!(|j, v| {
            (j.bs, j.bs_trim) = bs_dirs(v, split_bs)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rw",
        aliases: &["readwrite"],
        kind: Kind::Choice(RwMode::NAMES),
        creates: Creates::Nothing,
        default: Some("read"),
        range: None,
        category: Category::Pattern,
        example: "randread",
        help: "I/O pattern: read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, randtrimwrite; ':N' after a sequential one skips N bytes after each I/O (negative: backwards), after a random one does N I/Os per random offset. Like every option with a list of values, a value may be abbreviated to the first one it begins (rw=r is read, rw=w write; fio 3.33 itself wants the whole word). filecreate, filestat, filedelete, dircreate, dirstat, dirdelete (fio 3.42's forms for its metadata engines) mean read: the engine does the operation",
        apply: job!(|j, v| {
            let (mode, modifier) = match v.trim().split_once(':') {
                Some((m, n)) => (m.trim(), Some(n.trim())),
                None => (v.trim(), None),
            };
            // fio 3.42's patterns of its file-operation engines: the engine
            // does the operation; fio 3.33 reports it as reads, and so do we.
            let mode = match mode {
                "filecreate" | "filestat" | "filedelete" | "dircreate" | "dirstat"
                | "dirdelete" => "read",
                m => m,
            };
            j.rw = RwMode::parse(mode).ok_or_else(|| format!("'{mode}' is not an I/O pattern"))?;
            j.rw_offset_mod = match modifier {
                None => 0,
                Some(n) => {
                    let (neg, n) = match n.strip_prefix('-') {
                        Some(rest) => (true, rest),
                        None => (false, n),
                    };
                    let b = i64::try_from(parse_size(n)?)
                        .map_err(|_| format!("'{n}' is too large"))?;
                    if neg {
                        -b
                    } else {
                        b
                    }
                }
            };
            if j.rw_offset_mod < 0 && j.rw.is_random() {
                return Err(format!(
                    "'{}': a random pattern takes a count of I/Os per offset, not a negative one",
                    v.trim()
                ));
            }
            Ok(())
        }),
    },
    OptDef {
        name: "rwmixread",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("50"),
        range: Some(Range::PERCENT),
        category: Category::Pattern,
        example: "70",
        help: "Percentage of reads in mixed workloads",
        apply: job!(|j, v| {
            j.rwmixread = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rwmixwrite",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("50"),
        range: Some(Range::PERCENT),
        category: Category::Pattern,
        example: "30",
        help: "Percentage of writes in mixed workloads",
        apply: job!(|j, v| {
            // The range keeps it at most 100.
            j.rwmixread = 100u32.saturating_sub(u32v(v)?);
            Ok(())
        }),
    },
    OptDef {
        name: "ioengine",
        aliases: &[],
        kind: Kind::Choice(EngineKind::NAMES),
        creates: Creates::Nothing,
        default: Some("psync"),
        range: None,
        category: Category::Engine,
        example: "io_uring",
        help: "I/O engine",
        apply: job!(|j, v| {
            j.ioengine = EngineKind::parse(v.trim())
                .ok_or_else(|| format!("'{}' is not an engine dioscope has", v.trim()))?;
            Ok(())
        }),
    },
    OptDef {
        name: "iodepth",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1"),
        range: Some(Range::at_least(1)),
        category: Category::Engine,
        example: "32",
        help: "I/Os kept in flight per job",
        apply: job!(|j, v| {
            j.iodepth = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "iodepth_batch_submit",
        aliases: &["iodepth_batch"],
        kind: Kind::Int,
        creates: Creates::Nothing,
        // fio defaults to 1 (a syscall per I/O); dioscope submits all that
        // are ready at once: same I/O, lower cost.
        default: Some("0"),
        range: None,
        category: Category::Engine,
        example: "8",
        help: "I/Os submitted at once (0: all that are ready, up to iodepth)",
        apply: job!(|j, v| {
            // fio: 0 means "iodepth"; dioscope's default (0) is "all that are ready".
            j.iodepth_batch_submit = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "iodepth_batch_complete_min",
        aliases: &["iodepth_batch_complete"],
        kind: Kind::Int,
        creates: Creates::Nothing,
        // Not given: iodepth/2, at least 1 (the field's 0 without
        // poll_reaps). fio waits for 1; reaping a few at a time halves the
        // system calls at the same depth. Given as 0 it means polling.
        default: None,
        range: None,
        category: Category::Engine,
        example: "8",
        help: "Completions to wait for at least per reap (default: iodepth/2, at least 1; 1 is fio's default, which times each completion as it arrives); 0: \
               look for completions before sleeping, as fio's 0 does (io_uring: up to 256 \
               non-blocking reaps, then wait for 1; more CPU, no wake-up per wait)",
        apply: job!(|j, v| {
            j.iodepth_batch_complete_min = u32v(v)?;
            j.poll_reaps = j.iodepth_batch_complete_min == 0;
            Ok(())
        }),
    },
    OptDef {
        name: "iodepth_batch_complete_max",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Engine,
        example: "32",
        help: "Completions to reap at most at once (0 = iodepth)",
        apply: job!(|j, v| {
            j.iodepth_batch_complete_max = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "numjobs",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1"),
        range: Some(Range::at_least(1)),
        category: Category::Jobs,
        example: "4",
        help: "Clones of this job, each a thread of its own",
        apply: job!(|j, v| {
            j.numjobs = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "thread",
        aliases: &["threads"],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Jobs,
        example: "1",
        help: "Accepted for fio compatibility: dioscope always uses threads",
        apply: job!(|_, v| {
            parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "runtime",
        aliases: &["timeout"],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Time,
        example: "30s",
        help: "Stop after this long (seconds by default)",
        apply: job!(|j, v| {
            j.runtime_us = parse_time_us(v, 1_000_000)?;
            Ok(())
        }),
    },
    OptDef {
        name: "time_based",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Time,
        example: "1",
        help: "Keep going until runtime, repeating the workload",
        apply: job!(|j, v| {
            j.time_based = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "ramp_time",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Time,
        example: "2s",
        help: "Run this long before measuring (repeated per trial)",
        apply: job!(|j, v| {
            j.ramp_time_us = parse_time_us(v, 1_000_000)?;
            Ok(())
        }),
    },
    OptDef {
        name: "loops",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1"),
        range: Some(Range::at_least(1)),
        category: Category::Time,
        example: "3",
        help: "Repeat the workload this many times",
        apply: job!(|j, v| {
            j.loops = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "direct",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "Use O_DIRECT (bypass the page cache)",
        apply: job!(|j, v| {
            j.direct = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "buffered",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Pattern,
        example: "0",
        help: "The opposite of direct",
        apply: job!(|j, v| {
            j.direct = !parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "invalidate",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "Drop the target's cached pages before each trial",
        apply: job!(|j, v| {
            j.invalidate = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "fsync",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "32",
        help: "fsync after this many writes (0 = never)",
        apply: job!(|j, v| {
            j.fsync = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "fdatasync",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "32",
        help: "fdatasync after this many writes (0 = never)",
        apply: job!(|j, v| {
            j.fdatasync = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "end_fsync",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "fsync the target when the job ends",
        apply: job!(|j, v| {
            j.end_fsync = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "norandommap",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "Random offsets may repeat within a pass",
        apply: job!(|j, v| {
            j.norandommap = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "randrepeat",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "Same random sequence every run",
        apply: job!(|j, v| {
            j.randrepeat = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "allrandrepeat",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Pattern,
        example: "1",
        help: "Seed every random generator (offsets, buffer contents, block sizes, read/write mix, pacing) from randseed: two runs do the same I/O with the same data. Sets randrepeat too (fio 3.41 made it randrepeat's alias): allrandrepeat=0 draws seeds from the clock",
        apply: job!(|j, v| {
            let b = parse_bool(v)?;
            j.allrandrepeat = b;
            j.randrepeat = b;
            Ok(())
        }),
    },
    OptDef {
        name: "randseed",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0x89"),
        range: None,
        category: Category::Pattern,
        example: "1234",
        help: "Seed of the random offsets",
        apply: job!(|j, v| {
            j.randseed = parse_int(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "random_distribution",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("random"),
        range: None,
        category: Category::Pattern,
        example: "zipf:1.2",
        help: "random, zipf:THETA[:CENTER], pareto:H[:CENTER], normal|gauss:DEV[:CENTER], zoned:IO%/SIZE%:…, zoned_abs:IO%/BYTES:… ('R,W' zone lists per direction), sequence:I,J,… (these block indices in order, repeated; see random_sequence_stride)",
        apply: job!(|j, v| {
            let v = v.trim();
            // zoned_abs is also written with '=' (fio's HOWTO does).
            let (kind, rest) = match v.find([':', '=']) {
                Some(i) => (&v[..i], &v[i + 1..]),
                None => (v, ""),
            };
            let mut args = rest.split(':');
            let arg = args.next().unwrap_or("").trim();
            let center = args.next().map(|c| c.trim());
            let num = |d: f64| {
                if arg.is_empty() {
                    Ok(d)
                } else {
                    parse_float(arg)
                }
            };
            let zoned = kind.starts_with("zoned");
            let center = match center {
                Some(c) if !zoned => {
                    let c = parse_float(c)?;
                    if !(0.0..=1.0).contains(&c) {
                        return Err(format!("the center {c} is not between 0 and 1"));
                    }
                    Some(c)
                }
                _ => None,
            };
            j.random_distribution = match kind {
                "random" => RandomDist::Uniform,
                "zipf" => RandomDist::Zipf(workload::zipf_theta(num(1.2)?)?),
                "pareto" => RandomDist::Pareto(workload::pareto_h(num(0.2)?)?),
                "normal" | "gauss" => {
                    RandomDist::Normal(workload::normal_dev(num(10.0)?)?)
                }
                "zoned" | "zoned_abs" => {
                    RandomDist::Zoned(workload::zoned(rest, kind == "zoned_abs")?)
                }
                "sequence" => RandomDist::Sequence(workload::sequence(rest)?),
                other => return Err(format!("'{other}' is not a distribution")),
            };
            j.random_center = center;
            Ok(())
        }),
    },
    OptDef {
        name: "group_reporting",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Report the jobs of a group (and their clones) together",
        apply: job!(|j, v| {
            j.group_reporting = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "stonewall",
        aliases: &["wait_for_previous"],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Jobs,
        example: "1",
        help: "Wait for the jobs before this one to finish; starts a new run phase and reporting group",
        apply: job!(|j, v| {
            j.stonewall = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "new_group",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Jobs,
        example: "1",
        help: "Start a new reporting group (groupid); its jobs still run beside the ones before it unless stonewall is set",
        apply: job!(|j, v| {
            j.new_group = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "cpus_allowed",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Placement,
        example: "0-1",
        help: "Pin the job's threads to these CPUs",
        apply: job!(|j, v| {
            j.cpus_allowed = Some(parse_cpu_list(v)?);
            Ok(())
        }),
    },
    OptDef {
        name: "percentile_list",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99"),
        range: None,
        category: Category::Output,
        example: "50:99:99.9",
        help: "Latency percentiles to report, ':'-separated",
        apply: job!(|j, v| {
            let mut l = Vec::new();
            for p in v.split(':').filter(|p| !p.trim().is_empty()) {
                let x = parse_float(p)?;
                if !(0.0..=100.0).contains(&x) {
                    return Err(format!("percentile {x} is not between 0 and 100"));
                }
                l.push(x);
            }
            if l.is_empty() {
                return Err("an empty percentile list".into());
            }
            j.percentile_list = l;
            Ok(())
        }),
    },
    OptDef {
        name: "clat_percentiles",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Report completion-latency percentiles",
        apply: job!(|j, v| {
            j.clat_percentiles = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "lat_percentiles",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Report total-latency percentiles",
        apply: job!(|j, v| {
            j.lat_percentiles = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "slat_percentiles",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Report submission-latency percentiles too (JSON slat_ns.percentile and the text's \
               slat percentiles rows); a synchronous engine's I/O has no submission latency",
        apply: job!(|j, v| {
            j.slat_percentiles = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "unlink",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Targets,
        example: "1",
        help: "Remove the files this job created when it ends",
        apply: job!(|j, v| {
            j.unlink = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "fixedbufs",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "io_uring: register buffers (dioscope's default: on)",
        apply: job!(|j, v| {
            j.fixedbufs = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "registerfiles",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "io_uring: register the file (dioscope's default: on)",
        apply: job!(|j, v| {
            j.registerfiles = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "sqthread_poll",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "io_uring: a kernel thread polls the submission queue",
        apply: job!(|j, v| {
            j.sqthread_poll = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "hipri",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "Polled completions (needs poll queues on the device)",
        apply: job!(|j, v| {
            j.hipri = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "nowait",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "RWF_NOWAIT: fail an I/O rather than block (pvsync2, libaio, io_uring)",
        apply: job!(|j, v| {
            j.nowait = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "uncached",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "RWF_DONTCACHE (Linux 6.14+): buffered I/O whose pages leave the page cache once done (pvsync2, io_uring); the file system must support it (checked before the run)",
        apply: job!(|j, v| {
            j.uncached = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "atomic",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::EngineOptions,
        example: "1",
        help: "RWF_ATOMIC (Linux 6.11+): torn-write-protected direct writes (pvsync2, io_uring); needs direct=1, and bs within the file's statx atomic-write limits (checked before the run)",
        apply: job!(|j, v| {
            j.atomic = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "create_on_open",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Targets,
        example: "1",
        help: "Create missing files empty instead of laying them out; the job's writes fill them (write-only jobs)",
        apply: job!(|j, v| {
            j.create_on_open = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "allow_mounted_write",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Safety,
        example: "1",
        help: "Allow writes to a mounted or in-use block device (destroys data)",
        apply: job!(|j, v| {
            j.allow_mounted_write = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "continue_on_error",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("none"),
        range: None,
        category: Category::Errors,
        example: "all",
        help: "Keep going after fio's non-fatal I/O errors, EIO and EILSEQ (or the errnos ignore_error lists), of the types none, all, io, read, write, verify; any other errno still ends the job, as in fio",
        apply: job!(|j, v| {
            // Which types ignore_error's lists apply to (fio's bits).
            j.continue_on = match v.trim() {
                "none" | "0" => [false; 3],
                "" | "all" | "1" => [true; 3],
                "io" => [true, true, false],
                "read" => [true, false, false],
                "write" => [false, true, false],
                "verify" => [false, false, true],
                o => {
                    return Err(format!(
                        "'{o}' is not one of none, all, io, read, write, verify"
                    ))
                }
            };
            j.continue_on_error = j.continue_on.iter().any(|&b| b);
            Ok(())
        }),
    },
    OptDef {
        name: "verify",
        aliases: &[],
        kind: Kind::Choice(&[
            "0",
            "crc32c",
            "crc32c-intel",
            "crc32",
            "crc64",
            "crc16",
            "crc7",
            "xxhash",
            "sha256",
            "sha512",
            "md5",
            "meta",
            "pattern",
            "pattern_hdr",
        ]),
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "crc32c",
        help: "Write verifiable blocks and check them on read-back",
        apply: job!(|j, v| {
            j.verify = match v.trim() {
                "0" | "" | "none" => None,
                "crc32c-intel" => Some("crc32c".into()),
                a if crate::verify::Algo::parse(a).is_some() => Some(a.to_string()),
                o @ ("sha1" | "sha3-224" | "sha3-256" | "sha3-384" | "sha3-512" | "null") => {
                    return Err(format!(
                        "not supported by dioscope: verify={o} (no SHA-1/SHA-3 and no pretend verify here); use sha256 or sha512"
                    ))
                }
                o => {
                    return Err(format!(
                        "'{o}' is not a verify method ({})",
                        crate::verify::Algo::NAMES.join(", ")
                    ))
                }
            };
            Ok(())
        }),
    },
    OptDef {
        name: "do_verify",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("1"),
        range: None,
        category: Category::Verify,
        example: "1",
        help: "Run the verify phase after writing",
        apply: job!(|j, v| {
            j.do_verify = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_fatal",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "1",
        help: "Stop at the first bad block",
        apply: job!(|j, v| {
            j.verify_fatal = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_only",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Verify,
        example: "1",
        help: "Only read back and check earlier verify writes",
        apply: job!(|j, v| {
            j.verify_only = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "verify_interval",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Verify,
        example: "512",
        help: "Verify header every this many bytes (default: block size); one that does not divide a fixed block size leaves a shorter last interval in each block",
        apply: job!(|j, v| {
            j.verify_interval = parse_size(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "trials",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("1"),
        range: Some(Range::at_least(1)),
        category: Category::Trials,
        example: "5",
        help: "Repeat the job this many times and report statistics over trials;\n\
               auto: until the 95 % CI of --precision-metric is within --precision",
        apply: job!(|j, v| {
            // 0 stands for auto (runner: until precise, within the limits).
            j.trials = if v.trim() == "auto" { 0 } else { u32v(v)? };
            Ok(())
        }),
    },
    OptDef {
        name: "precision",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("2%"),
        range: None,
        category: Category::Trials,
        example: "5%",
        help: "trials=auto: the 95 % CI half-width to reach, relative to the mean (default 2%)",
        apply: Apply::Global(|g, v| {
            let p: f64 = v
                .trim()
                .trim_end_matches('%')
                .parse()
                .map_err(|_| UnitError::from("give a percentage such as 2%"))?;
            if !(p > 0.0 && p < 100.0) {
                return Err("it must be between 0 and 100 %".into());
            }
            g.auto.precision = p / 100.0;
            Ok(())
        }),
    },
    OptDef {
        name: "max-trials",
        aliases: &["max_trials"],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("30"),
        range: Some(Range::at_least(1)),
        category: Category::Trials,
        example: "30",
        help: "trials=auto: stop after this many trials (default 30)",
        apply: Apply::Global(|g, v| {
            g.auto.max_trials = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "max-time",
        aliases: &["max_time"],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("10m"),
        range: None,
        category: Category::Trials,
        example: "10m",
        help: "trials=auto: do not start a trial that would end after this (default 10m)",
        apply: Apply::Global(|g, v| {
            g.auto.max_time_s = parse_time_us(v, 1_000_000)? as f64 / 1e6;
            Ok(())
        }),
    },
    OptDef {
        name: "precision-metric",
        aliases: &["precision_metric"],
        kind: Kind::Choice(crate::stats::significance::PRECISION_METRICS),
        creates: Creates::Nothing,
        default: Some("iops"),
        range: None,
        category: Category::Trials,
        example: "bw",
        help: "trials=auto: the metric whose precision decides (default iops)",
        apply: Apply::Global(|g, v| {
            g.auto.metric = v.trim().to_string();
            Ok(())
        }),
    },
    // Invocation-wide settings.
    OptDef {
        name: "output-format",
        aliases: &["output_format"],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Output,
        example: "json",
        help: "The output format: one of those listed under OUTPUT FORMATS in --help",
        apply: Apply::Global(|g, v| {
            g.output_format = v.trim().to_string();
            Ok(())
        }),
    },
    OptDef {
        name: "output",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Run,
        default: None,
        range: None,
        category: Category::Output,
        example: "result.json",
        help: "Write the result to this file (atomically) instead of stdout",
        apply: Apply::Global(|g, v| {
            g.output = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "report",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Run,
        default: None,
        range: None,
        category: Category::Output,
        example: "report.html",
        help: "Also write the HTML report of the run to this file (one self-contained page)",
        apply: Apply::Global(|g, v| {
            g.report = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "destroy-data-on",
        aliases: &["destroy_data_on"],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Safety,
        example: "/dev/sdX",
        help: "Allow writing to this block device even if it holds data",
        apply: Apply::Global(|g, v| {
            g.destroy_data_on.push(v.trim().to_string());
            Ok(())
        }),
    },
    OptDef {
        name: "eta",
        aliases: &["progress"],
        kind: Kind::Choice(&["auto", "always", "never"]),
        creates: Creates::Nothing,
        default: Some("auto"),
        range: None,
        category: Category::Output,
        example: "never",
        help: "Live progress on stderr (the trials, laying out files, --profile's post-processing): auto (when a terminal), always (plain lines once a second when not a terminal), never",
        apply: Apply::Global(|g, v| {
            g.eta = match v.trim() {
                "auto" => Eta::Auto,
                "always" => Eta::Always,
                "never" => Eta::Never,
                o => return Err(format!("'{o}' is not auto, always or never")),
            };
            Ok(())
        }),
    },
    // Multi-rank runs under mpirun (docs/DISTRIBUTED.md); ignored otherwise.
    OptDef {
        name: "rank_stonewall",
        aliases: &["rank-stonewall"],
        kind: Kind::Choice(&["off", "stop", "wearout"]),
        creates: Creates::Nothing,
        default: Some("off"),
        range: None,
        category: Category::Ranks,
        example: "stop",
        help: "mpirun: when the first rank finishes its work, stop every rank (stop) or let every rank finish the same work (wearout); both report first- and last-done figures",
        apply: Apply::Global(|g, v| {
            g.rank_stonewall = match v.trim() {
                "off" | "0" => RankStonewall::Off,
                "stop" | "1" => RankStonewall::Stop,
                "wearout" => RankStonewall::Wearout,
                o => return Err(format!("'{o}' is not off, stop or wearout")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "rank_shared_files",
        aliases: &["rank-shared-files"],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Ranks,
        example: "1",
        help: "mpirun: allow ranks on one host to write the same file or device",
        apply: Apply::Global(|g, v| {
            g.rank_shared_files = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rank_timeout",
        aliases: &["rank-timeout"],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Ranks,
        example: "120s",
        help: "mpirun: abort the run when a rank does not answer a collective step within this time (default 600s)",
        apply: Apply::Global(|g, v| {
            let us = parse_time_us(v, 1_000_000)?;
            if us == 0 {
                return Err("it must be more than 0".into());
            }
            g.rank_timeout_us = Some(us);
            Ok(())
        }),
    },
    OptDef {
        name: "profile",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Run,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "1",
        help: "Record the measured windows with perf: CPU per I/O by function and subsystem \
               (fio's profile=act and profile=tiobench, built-in job profiles, are refused)",
        apply: Apply::Global(|g, v| {
            if ["act", "tiobench"].contains(&v.trim()) {
                return Err(format!(
                    "not supported by dioscope: fio's built-in job profile profile={} (write \
                     the jobs it runs out as a job file); dioscope's profile=1 records a perf \
                     profile",
                    v.trim()
                ));
            }
            g.profile = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "stages",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Stages,
        example: "1",
        help: "dioscope extension (fio has no such option: a job file with it is dioscope's \
               own): trace the block tracepoints and the engine's own (io_uring's, or the \
               system calls of libaio, psync, pvsync and pvsync2) with bpftrace over the \
               measured windows and split each direction's latency into stages (submission, \
               block layer, device, completion), with this run's I/Os told apart from other I/O \
               on the device (root, bpftrace; without them the run goes on without stages)",
        apply: Apply::Global(|g, v| {
            g.stages = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "stages_sample",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("8"),
        range: Some(Range::at_least(1)),
        category: Category::Stages,
        example: "1",
        help: "dioscope extension: with --stages, follow one request in N through the stages \
               (drawn at submission from the kernel's pseudo-random numbers, or on bpftrace \
               from a hash of the submission clock, so nothing about the I/O decides); \
               every request and every io-wq hand-off is still counted. 1 follows every \
               I/O, at about twice the tracing cost of the default (docs/STAGES.md, Cost)",
        apply: Apply::Global(|g, v| {
            g.stages_sample = u32v(v)?;
            Ok(())
        }),
    },
];

/// fio options dioscope does not implement, each with the reason: a job
/// that sets one fails with "not supported by dioscope: OPTION (reason)"
/// rather than "unknown option", and docs/OPTIONS.md lists them. Implement
/// an option by adding it to a section and deleting its line here (the
/// table test refuses a name in both).
pub static FIO_UNIMPLEMENTED: &[(&str, &str)] = &[
    (
        "cgroup",
        "dioscope does not create or join cgroups; run it under systemd-run or cgexec",
    ),
    (
        "pre_read",
        "reading files into the page cache first is not implemented",
    ),
    ("lockfile", "file locks between jobs are not implemented"),
    (
        "opendir",
        "taking every file of a directory is not implemented; list the files in filename=",
    ),
    ("trim_percentage", "trims after writes are not implemented"),
    ("trim_verify_zero", "trims after writes are not implemented"),
    ("trim_backlog", "trims after writes are not implemented"),
    (
        "trim_backlog_batch",
        "trims after writes are not implemented",
    ),
    (
        "ioscheduler",
        "dioscope does not switch I/O schedulers; set /sys/block/DEV/queue/scheduler",
    ),
    ("uid", "dioscope does not switch users"),
    ("gid", "dioscope does not switch groups"),
    ("fadvise_hint", "dioscope gives no posix_fadvise hints"),
    ("ioengine_opts", "engine options are options of their own"),
    (
        "userspace_reap",
        "reaping libaio completions in user space is not implemented",
    ),
    ("bwavgtime", "the bandwidth sample window is fixed"),
    ("iopsavgtime", "the IOPS sample window is fixed"),
    // fio 3.33's HOWTO, the rest (job/compat.rs classifies every entry).
    ("create_only", "laying out files without running the jobs is not implemented; run the job once with a short runtime"),
    ("zonecapacity", "it belongs to zonemode=zbd, which is refused"),
    ("write_hint", "write lifetime hints (F_SET_RW_HINT) are not implemented"),
    ("write_barrier", "barrier writes are not implemented"),
    ("sync_file_range", "sync_file_range calls are not implemented; use fdatasync=N or fsync=N"),
    ("fsync_on_close", "an fsync when a file is closed is not implemented; use end_fsync=1"),
    ("softrandommap", "dioscope's random map is allocated before the run and never fails, so there is nothing to fall back from; remove it"),
    ("blocksize_unaligned", "block sizes of a range are kept multiples of the smallest; give bsrange or bssplit sizes that are"),
    ("bs_unaligned", "block sizes of a range are kept multiples of the smallest; give bsrange or bssplit sizes that are"),
    ("bs_is_seq_rand", "block sizes by sequential or random I/O (instead of by direction) are not implemented"),
    ("file_append", "appending at the end of the file is not implemented; give offset= the file's size"),
    ("nonvectored", "dioscope's io_uring always issues non-vectored reads and writes (IORING_OP_READ/WRITE, or the fixed-buffer ones); remove it"),
    ("force_async", "forcing io-wq punts (IOSQE_ASYNC) is not implemented"),
    ("sqthread_poll_cpu", "pinning the SQPOLL thread is not implemented; it runs where the kernel puts it"),
    ("hipri_percentage", "polling a share of the I/Os is not implemented; hipri=1 polls all"),
    ("iodepth_low", "dioscope refills the queue as soon as it can (fio's default, iodepth_low = iodepth); to reap in batches use iodepth_batch_complete_min"),
    ("max_latency", "stopping a job with an error on one slow I/O is not implemented; latency_target finds the depth that keeps a latency"),
    ("read_iolog_chunked", "an iolog is read whole before the run; it is not read in chunks"),
    ("merge_blktrace_file", "blktrace merging is not implemented; merge with blkparse"),
    ("merge_blktrace_scalars", "blktrace merging is not implemented; merge with blkparse"),
    ("merge_blktrace_iters", "blktrace merging is not implemented; merge with blkparse"),
    ("cgroup_weight", "dioscope does not create or join cgroups; run it under systemd-run -p IOWeight= or cgexec"),
    ("cgroup_nodelete", "dioscope does not create or join cgroups; run it under systemd-run or cgexec"),
    ("stats", "dioscope always measures: statistics cost no clock read per I/O beyond the latency, which disable_lat and disable_clat turn off"),
    ("block_error_percentiles", "the trim-error histogram is not implemented (trims after writes are not either)"),
    ("significant_figures", "dioscope's text prints fio's fixed precision; the JSON has full values"),
];

/// Why dioscope does not support the fio option `name`, if it is one of those.
pub fn not_supported(name: &str) -> Option<&'static str> {
    FIO_UNIMPLEMENTED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, why)| *why)
}

/// Find an option by its name or an alias.
pub fn lookup(name: &str) -> Option<&'static OptDef> {
    all().find(|o| o.name == name || o.aliases.contains(&name))
}

/// Edit distance between two names, for "did you mean".
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The known option (name or alias) closest to `name`, with the option it belongs to.
pub fn closest(name: &str) -> Option<(&'static str, &'static OptDef)> {
    all()
        .flat_map(|o| {
            std::iter::once(o.name)
                .chain(o.aliases.iter().copied())
                .map(move |n| (n, o))
        })
        .map(|(n, o)| (levenshtein(name, n), n, o))
        .filter(|(d, n, _)| *d <= (n.len().max(name.len()) / 2).max(2))
        .min_by_key(|(d, _, _)| *d)
        .map(|(_, n, o)| (n, o))
}

/// An option's help, with its choices when it has a fixed set of values.
fn full_help(o: &OptDef) -> String {
    match o.kind {
        Kind::Choice(c) if !c.iter().any(|v| o.help.contains(v)) => {
            format!("{} ({})", o.help, c.join(", "))
        }
        _ => o.help.to_string(),
    }
}

/// The options of one category, in table order.
fn in_category(c: Category) -> impl Iterator<Item = &'static OptDef> {
    all().filter(move |o| o.category == c)
}

impl OptDef {
    /// `default 4k`, `default 1, at least 1`, `from 0 to 100`: what the
    /// option is when not given and the numbers it takes (empty for neither).
    fn default_and_range(&self) -> String {
        let d = self.default.map(|d| format!("default {d}"));
        let r = self.range.map(|r| r.describe(self.kind));
        d.into_iter().chain(r).collect::<Vec<_>>().join(", ")
    }
}

/// `--help` text (and `--cmdhelp` without a name), generated from the
/// table: one block per category, each option with its default and range.
pub fn help_text() -> String {
    let mut s = String::new();
    for &c in Category::ALL {
        s.push_str(&format!(" {}:\n", c.title()));
        for o in in_category(c) {
            let names = std::iter::once(o.name)
                .chain(o.aliases.iter().copied())
                .collect::<Vec<_>>()
                .join(", ");
            let facts = match o.default_and_range() {
                f if f.is_empty() => String::new(),
                f => format!(" [{f}]"),
            };
            s.push_str(&format!(
                "  --{:<34} {}{facts}\n",
                format!("{names}={}", o.example),
                full_help(o)
            ));
        }
    }
    s
}

/// The option reference in Markdown (docs/OPTIONS.md is generated from
/// it): one section per category, each a table with defaults and ranges.
pub fn markdown_table() -> String {
    let mut s = String::from(
        "# Options\n\n\
         Generated from dioscope's option table (`dioscope options --markdown`), grouped \
         as fio's HOWTO groups them. *default* is what a job has when the option is not \
         given (blank: no value, or one worked out from other options, as the meaning \
         says); *range* is the numbers the option accepts, checked before anything runs.\n",
    );
    for &c in Category::ALL {
        s.push_str(&format!(
            "\n## {}\n\n\
             | option | aliases | default | range | example | meaning |\n\
             | --- | --- | --- | --- | --- | --- |\n",
            c.title()
        ));
        for o in in_category(c) {
            s.push_str(&format!(
                "| `{}` | {} | {} | {} | `{}` | {} |\n",
                o.name,
                o.aliases
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(" "),
                o.default.map(|d| format!("`{d}`")).unwrap_or_default(),
                o.range.map(|r| r.describe(o.kind)).unwrap_or_default(),
                o.example,
                full_help(o)
            ));
        }
    }
    s.push_str(
        "\n## Not supported by dioscope\n\n\
         fio options dioscope refuses with \"not supported by dioscope: OPTION (reason)\" \
         (exit 2, nothing run) rather than accept and ignore.\n\n\
         | option | reason |\n| --- | --- |\n",
    );
    for (name, why) in FIO_UNIMPLEMENTED {
        s.push_str(&format!("| `{name}` | {why} |\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_forms_of_bssplit_and_bsrange_from_its_own_jobs() {
        // `1k/`: no share, like a bare size (t0023's bssplit).
        assert_eq!(
            split_bs("512/25:1k/:2k/:4k/").unwrap(),
            BlockSizes::Split(vec![(512, 25), (1024, 25), (2048, 25), (4096, 25)])
        );
        // A bssplit list in bsrange (t0024): fio runs it as 512-1k.
        assert_eq!(
            range_bs("512/25:1k:25:2k:25:4k/25").unwrap(),
            BlockSizes::Range(512, 1024)
        );
        // Without such a tail, a bad range is still an error.
        assert!(range_bs("512x-1k").is_err());
        assert!(range_bs("4k-64k").is_ok());
    }

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = self::all()
            .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "an option name or alias appears twice");
        for (u, why) in FIO_UNIMPLEMENTED {
            assert!(!why.is_empty(), "{u} has no reason");
            assert!(
                lookup(u).is_none(),
                "{u} is both implemented and listed unimplemented"
            );
        }
    }

    #[test]
    fn examples_are_valid() {
        for o in all() {
            o.set(
                &mut JobSpec::default(),
                &mut GlobalSettings::default(),
                o.example,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", o.name));
        }
    }

    #[test]
    fn every_default_parses_and_is_what_a_spec_starts_with() {
        let (j0, g0) = (JobSpec::default(), GlobalSettings::default());
        let mut with_defaults = 0;
        for o in all() {
            let Some(d) = o.default else { continue };
            with_defaults += 1;
            assert!(
                !d.trim().is_empty(),
                "{}: an empty default (use None)",
                o.name
            );
            let (mut j, mut g) = (j0.clone(), g0.clone());
            o.set(&mut j, &mut g, d)
                .unwrap_or_else(|e| panic!("{}: its default '{d}' is refused: {e}", o.name));
            // Giving the default changes nothing: the table and the spec
            // agree on it (an option whose default differs from the
            // value another option's default left fails here).
            assert_eq!(j, j0, "{}={d} changes the default job", o.name);
            assert_eq!(g, g0, "{}={d} changes the default settings", o.name);
        }
        assert!(with_defaults > 150, "only {with_defaults} defaults");
        // fio's defaults (FIO-COMPAT.md), as the table states them.
        for (name, d) in [
            ("rw", "read"),
            ("bs", "4k"),
            ("ioengine", "psync"),
            ("iodepth", "1"),
            ("numjobs", "1"),
            ("direct", "0"),
            ("invalidate", "1"),
            ("randrepeat", "1"),
            ("randseed", "0x89"),
            ("norandommap", "0"),
            ("rwmixread", "50"),
            ("runtime", "0"),
            ("clat_percentiles", "1"),
        ] {
            assert_eq!(lookup(name).unwrap().default, Some(d), "{name}");
        }
        assert_eq!(lookup("filename").unwrap().default, None);
    }

    #[test]
    fn the_defaults_hold_under_si_units() {
        // A job file's kb_base=1000 is in force while its options parse;
        // the defaults are fio's 1024-based ones all the same.
        let j = with_kb_base(1000, JobSpec::default);
        assert_eq!(j.bs[0], BlockSizes::Fixed(4096));
        assert_eq!(j, JobSpec::default());
    }

    #[test]
    fn every_option_is_in_a_listed_category_and_every_category_has_options() {
        let mut sorted = Category::ALL.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, Category::ALL, "Category::ALL: each once, in order");
        for o in all() {
            assert!(
                Category::ALL.contains(&o.category),
                "{}: {:?} is not in Category::ALL, so no reference lists it",
                o.name,
                o.category
            );
        }
        for &c in Category::ALL {
            assert!(in_category(c).next().is_some(), "{c:?} has no option");
        }
        let listed: usize = Category::ALL.iter().map(|&c| in_category(c).count()).sum();
        assert_eq!(listed, all().count());
    }

    #[test]
    fn ranges_are_checked_before_apply_with_one_clear_error() {
        let mut j = JobSpec::default();
        let e = set(&mut j, "iodepth", "0").unwrap_err();
        assert_eq!(e, "0 is out of range: iodepth must be at least 1");
        let e = set(&mut j, "rwmixread", "101").unwrap_err();
        assert_eq!(e, "101 is out of range: rwmixread must be from 0 to 100");
        let e = set(&mut j, "xattr_size", "65537").unwrap_err();
        assert_eq!(e, "65537 is out of range: xattr_size must be from 0 to 64k");
        // Each part of a R,W list; the value as written is named.
        set(&mut j, "percentage_random", "50,0x40").unwrap();
        assert_eq!(j.percentage_random, [50, 64]);
        let e = set(&mut j, "percentage_random", "50,120").unwrap_err();
        assert!(e.starts_with("120 is out of range"), "{e}");
        // A word is left to the option ("auto" trials).
        set(&mut j, "trials", "auto").unwrap();
        assert_eq!(j.trials, 0);
        assert!(set(&mut j, "trials", "0").is_err());
        // The ends are in the range.
        set(&mut j, "iodepth", "1").unwrap();
        set(&mut j, "rwmixwrite", "100").unwrap();
        assert_eq!(j.rwmixread, 0);
        set(&mut j, "xattr_size", "64k").unwrap();
        assert_eq!(j.engine_params.meta.xattr_size, 65536);
        set(&mut j, "log_hist_coarseness", "6").unwrap();
        assert!(set(&mut j, "log_hist_coarseness", "7").is_err());
    }

    #[test]
    fn ranges_hold_their_default_and_example_and_only_numbers_have_one() {
        for o in all().filter(|o| o.range.is_some()) {
            let r = o.range.unwrap();
            assert!(r.min <= r.max, "{}", o.name);
            assert!(
                matches!(o.kind, Kind::Int | Kind::Size | Kind::Str),
                "{}: a range on a {:?}",
                o.name,
                o.kind
            );
            for v in o.default.into_iter().chain([o.example]) {
                o.check_range(v)
                    .unwrap_or_else(|e| panic!("{}: {v} outside its own range: {e}", o.name));
            }
            // Just outside the range is refused, naming option and range.
            let outside = if r.min > 0 {
                r.min - 1
            } else {
                r.max.saturating_add(1)
            };
            if r.min > 0 || r.max < u64::MAX {
                let e = o.check_range(&outside.to_string()).unwrap_err();
                assert!(
                    e.contains(o.name) && e.contains(&r.describe(o.kind)),
                    "{}: {e}",
                    o.name
                );
            }
        }
    }

    #[test]
    fn references_show_categories_defaults_and_ranges() {
        let h = help_text();
        for &c in Category::ALL {
            assert!(h.contains(&format!(" {}:\n", c.title())), "{h}");
        }
        let line = |name: &str| {
            h.lines()
                .find(|l| l.starts_with(&format!("  --{name}=")))
                .unwrap_or_else(|| panic!("{name} missing"))
                .to_string()
        };
        assert!(
            line("iodepth").ends_with("[default 1, at least 1]"),
            "{}",
            line("iodepth")
        );
        assert!(line("bs, blocksize").ends_with("[default 4k]"));
        assert!(!line("filename").contains("[default"));
        let md = markdown_table();
        assert!(md.contains("\n## Block sizes\n"), "{md}");
        assert!(
            md.contains("| `iodepth` |  | `1` | at least 1 | `32` |"),
            "{md}"
        );
        assert!(
            md.contains("| `rwmixread` |  | `50` | from 0 to 100 |"),
            "{md}"
        );
        // Every option once, in its category's section.
        for o in all() {
            assert_eq!(
                md.matches(&format!("\n| `{}` |", o.name)).count(),
                1,
                "{}",
                o.name
            );
        }
    }

    #[test]
    fn closest_names_blocksize() {
        let (n, o) = closest("blocksiz").unwrap();
        assert_eq!(n, "blocksize");
        assert_eq!(o.name, "bs");
        assert_eq!(closest("iodepht").unwrap().0, "iodepth");
        assert!(closest("zzzzzzzzzzzz").is_none());
    }

    #[test]
    fn block_sizes() {
        let mut j = JobSpec::default();
        set(&mut j, "bs", "4k,64k").unwrap();
        assert_eq!(j.bs, [BlockSizes::Fixed(4096), BlockSizes::Fixed(65536)]);
        set(&mut j, "bssplit", "4k/50:64k").unwrap();
        assert_eq!(j.bs[0], BlockSizes::Split(vec![(4096, 50), (65536, 50)]));
        set(&mut j, "bsrange", "4k-16k").unwrap();
        assert_eq!(j.bs[1], BlockSizes::Range(4096, 16384));
        assert!(set(&mut j, "bs", "banana").is_err());
    }

    #[test]
    fn bssplit_percentages_are_bounded_and_add_up() {
        let split = |j: &mut JobSpec, v: &str| set(j, "bssplit", v);
        let mut j = JobSpec::default();
        // 4294967346 used to be truncated to 50 by `as u32`; u32::MAX twice
        // overflowed the sum.
        assert!(split(&mut j, "4k/4294967346:64k/50").is_err());
        assert!(split(&mut j, "4k/4294967295:64k/4294967295").is_err());
        assert!(split(&mut j, "4k/101").is_err());
        // Unassigned sizes share the rest without losing the remainder.
        split(&mut j, "4k:8k:16k").unwrap();
        assert_eq!(
            j.bs[0],
            BlockSizes::Split(vec![(4096, 34), (8192, 33), (16384, 33)])
        );
        split(&mut j, "1k/10:4k:8k:16k").unwrap();
        assert_eq!(
            j.bs[0],
            BlockSizes::Split(vec![(1024, 10), (4096, 30), (8192, 30), (16384, 30)])
        );
        // Many entries.
        let many = vec!["4k"; 1000].join(":");
        split(&mut j, &many).unwrap();
        match &j.bs[0] {
            BlockSizes::Split(v) => assert_eq!(v.iter().map(|x| x.1).sum::<u32>(), 100),
            other => panic!("{other:?}"),
        }
    }

    /// Set a job option the way the parser does (range, then apply).
    fn set(j: &mut JobSpec, name: &str, v: &str) -> Result<(), UnitError> {
        lookup(name)
            .unwrap()
            .set(j, &mut GlobalSettings::default(), v)
    }
}
