//! Time and pacing: rate caps and floors, think time, flows, steady state,
//! the latency target, when jobs end each other, and when they start. The
//! runner's side is runner/pacing.rs, runner/latency_target.rs,
//! runner/steadystate.rs and runner/watch.rs.
//!
//! dioscope repeats each group for its trials: every option here acts
//! within one trial and starts afresh in the next (the help says how).

use super::*;

/// `rate_process`: how rated I/O is spread in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateProcess {
    /// Evenly spaced, catching up when behind.
    #[default]
    Linear,
    /// Exponential gaps (a Poisson process), reproducible with the job's seed.
    Poisson,
}

/// `thinktime_blocks_type`: what `thinktime_blocks` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThinkBlocks {
    #[default]
    Complete,
    Issue,
}

/// `exit_what`: what `exitall` stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExitWhat {
    /// The jobs of the finisher's reporting group (fio's groupid), also
    /// those not started yet.
    #[default]
    Group,
    /// Every running job; the next stonewall phase still runs.
    Stonewall,
    /// Every job: no later phase or trial runs.
    All,
}

/// What steady state judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SsMetric {
    Iops,
    Bw,
    /// fio 3.41's `lat`: the mean completion latency of each second, in ns.
    Lat,
}

/// `steadystate=`: the criterion and its limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyCriterion {
    pub metric: SsMetric,
    /// The least-squares slope (`_slope`), else the largest deviation from the mean.
    pub slope: bool,
    pub limit: f64,
    /// The limit is a percentage of the window's mean.
    pub pct: bool,
}

impl Default for SteadyCriterion {
    /// fio's default, `iops_slope:0.01%`.
    fn default() -> Self {
        SteadyCriterion {
            metric: SsMetric::Iops,
            slope: true,
            limit: 0.01,
            pct: true,
        }
    }
}

impl SteadyCriterion {
    /// fio's name of the criterion: `iops`, `iops_slope`, `bw`, `bw_slope`, `lat`, `lat_slope`.
    pub fn name(&self) -> &'static str {
        match (self.metric, self.slope) {
            (SsMetric::Iops, false) => "iops",
            (SsMetric::Iops, true) => "iops_slope",
            (SsMetric::Bw, false) => "bw",
            (SsMetric::Bw, true) => "bw_slope",
            (SsMetric::Lat, false) => "lat",
            (SsMetric::Lat, true) => "lat_slope",
        }
    }

    /// What the criterion was read as, in fio's words (its `--debug=parse`
    /// line, which fio's steady-state tests look for).
    pub fn read_as(&self) -> String {
        match (self.pct, self.metric) {
            (true, _) => format!("set steady state threshold to {:.6}%", self.limit),
            (false, SsMetric::Iops) => {
                format!("set steady state IOPS threshold to {:.6}", self.limit)
            }
            (false, SsMetric::Bw) => {
                format!("set steady state BW threshold to {}", self.limit as u64)
            }
            (false, SsMetric::Lat) => {
                format!(
                    "set steady state latency threshold to {} nsec",
                    self.limit as u64
                )
            }
        }
    }

    /// `iops:10%`, `iops_slope:0.1%`, `bw:2%`, `bw_slope:1m` (a bandwidth
    /// limit without `%` is bytes per second, with units).
    pub fn parse(v: &str) -> Result<SteadyCriterion, UnitError> {
        let v = v.trim();
        let (name, limit) = v.split_once(':').ok_or_else(|| {
            format!("'{v}' is not CRITERION:LIMIT (e.g. iops_slope:0.1% or bw:5%)")
        })?;
        let (metric, slope) = match name.trim().to_ascii_lowercase().as_str() {
            "iops" => (SsMetric::Iops, false),
            "iops_slope" => (SsMetric::Iops, true),
            "bw" => (SsMetric::Bw, false),
            "bw_slope" => (SsMetric::Bw, true),
            "lat" => (SsMetric::Lat, false),
            "lat_slope" => (SsMetric::Lat, true),
            other => {
                return Err(format!(
                    "'{other}' is not a steady-state criterion: choose iops, iops_slope, bw, \
                     bw_slope, lat or lat_slope"
                ))
            }
        };
        let limit = limit.trim();
        let (limit, pct) = match limit.strip_suffix('%') {
            Some(p) => (parse_float(p)?, true),
            None if metric == SsMetric::Bw => (parse_size(limit)? as f64, false),
            // A latency: a bare number is nanoseconds (as fio 3.41 reads
            // it); with a unit (`50us`, `1ms`), that time.
            None if metric == SsMetric::Lat => {
                if limit.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
                    (parse_float(limit)?, false)
                } else {
                    (parse_time_us(limit, 1)? as f64 * 1000.0, false)
                }
            }
            None => (parse_float(limit)?, false),
        };
        if limit <= 0.0 {
            return Err(format!(
                "the limit '{limit}' must be above 0 (nothing is ever below 0)"
            ));
        }
        Ok(SteadyCriterion {
            metric,
            slope,
            limit,
            pct,
        })
    }
}

/// `iodepth_mode=stepped:LOW-HIGH/INC[,RAMP/RUN]` (runner/stepped.rs):
/// the job steps its load through LOW%, LOW+INC%, … up to HIGH%, where
/// HIGH% is the job's `iodepth` and 100% the peak IOPS a probe at full
/// depth found. Each step ramps (not measured) then runs (measured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SteppedDepth {
    pub low: u32,
    pub high: u32,
    pub inc: u32,
    /// Ramp and run of each step, microseconds (fio: seconds; 5 s and 30 s
    /// when the form leaves them out).
    pub ramp_us: u64,
    pub run_us: u64,
}

impl SteppedDepth {
    /// `none` (the default: None) or `stepped:LOW-HIGH/INC[,RAMP/RUN]`.
    pub fn parse(v: &str) -> Result<Option<SteppedDepth>, UnitError> {
        let v = v.trim();
        let form = "give iodepth_mode=none or iodepth_mode=stepped:LOW-HIGH/INC[,RAMP/RUN] \
                    (percentages, RAMP and RUN in seconds), e.g. stepped:10-130/5,5/30";
        let (mode, rest) = match v.split_once(':') {
            Some((m, r)) => (m.trim(), Some(r.trim())),
            None => (v, None),
        };
        match (mode.to_ascii_lowercase().as_str(), rest) {
            ("none", None) => Ok(None),
            ("stepped", Some(r)) if !r.is_empty() => {
                let bad = |why: &str| format!("'{v}': {why}; {form}");
                let (range, times) = match r.split_once(',') {
                    Some((a, b)) => (a.trim(), Some(b.trim())),
                    None => (r, None),
                };
                let (lohi, inc) = range
                    .split_once('/')
                    .ok_or_else(|| bad("the range has no /INC"))?;
                let (lo, hi) = lohi
                    .split_once('-')
                    .ok_or_else(|| bad("the range is not LOW-HIGH"))?;
                let num = |s: &str, what: &str| -> Result<u32, UnitError> {
                    s.trim().parse::<u32>().map_err(|_| {
                        bad(&format!("{what} '{}' is not a whole percentage", s.trim()))
                    })
                };
                let (low, high, inc) = (num(lo, "LOW")?, num(hi, "HIGH")?, num(inc, "INC")?);
                if inc == 0 || high == 0 {
                    return Err(bad("INC and HIGH must be at least 1"));
                }
                if low > high {
                    return Err(bad("LOW is above HIGH"));
                }
                if high > 100_000 {
                    return Err(bad("HIGH is above 100000 (%)"));
                }
                let (ramp_us, run_us) = match times {
                    None => (5_000_000, 30_000_000),
                    Some(t) => {
                        let (a, b) = t
                            .split_once('/')
                            .ok_or_else(|| bad("the times are not RAMP/RUN"))?;
                        let sec = |s: &str| {
                            parse_time_us(s, 1_000_000).map_err(|e| bad(&format!("{e} (RAMP/RUN)")))
                        };
                        (sec(a)?, sec(b)?)
                    }
                };
                if run_us == 0 {
                    return Err(bad("RUN must be longer than 0"));
                }
                Ok(Some(SteppedDepth {
                    low,
                    high,
                    inc,
                    ramp_us,
                    run_us,
                }))
            }
            _ => Err(format!("'{v}' is not a depth mode; {form}")),
        }
    }

    /// The load of each step in percent: LOW, LOW+INC, … up to HIGH (a LOW
    /// of 0 starts at INC: no load measures nothing).
    pub fn levels(&self) -> impl Iterator<Item = u32> {
        let first = if self.low == 0 { self.inc } else { self.low };
        let (high, inc) = (self.high, self.inc);
        (0..)
            .map(move |k: u32| first.saturating_add(k.saturating_mul(inc)))
            .take_while(move |&p| p <= high)
    }
}

/// fio's `read,write,trim` values: one value is every direction's, an
/// empty part is no value (0), a missing trim part is 0.
fn per_dir3(v: &str) -> Result<[u64; 3], UnitError> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!(
            "'{v}': give at most a read, a write and a trim value"
        ));
    }
    let one = |p: &str| {
        if p.trim().is_empty() {
            Ok(0)
        } else {
            parse_int(p)
        }
    };
    if parts.len() == 1 {
        return Ok([one(parts[0])?; 3]);
    }
    let mut out = [0; 3];
    for (o, p) in out.iter_mut().zip(&parts) {
        *o = one(p)?;
    }
    Ok(out)
}

/// A time or a range of times (`startdelay=1s-5s`; `:` also separates).
fn time_range_us(v: &str, unit_us: u64) -> Result<(u64, u64), UnitError> {
    let v = v.trim();
    let split = v
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '-' || c == ':')
        .map(|(i, _)| (&v[..i], &v[i + 1..]));
    match split {
        None => {
            let t = parse_time_us(v, unit_us)?;
            Ok((t, t))
        }
        Some((a, b)) => {
            let (a, b) = (parse_time_us(a, unit_us)?, parse_time_us(b, unit_us)?);
            // fio swaps a reversed range.
            Ok((a.min(b), a.max(b)))
        }
    }
}

/// What the options of one job cannot mean together; checked before any I/O.
pub fn check(j: &JobSpec) -> Result<(), String> {
    let trim_parts = [
        ("rate", j.rate[2]),
        ("rate_iops", j.rate_iops[2]),
        ("rate_min", j.rate_min[2]),
        ("rate_iops_min", j.rate_iops_min[2]),
    ];
    if let Some((name, _)) = trim_parts
        .iter()
        .find(|(_, t)| *t > 0)
        .filter(|_| j.rw.trims())
    {
        return Err(format!(
            "not supported by dioscope: a {name} for trims (rw={} trims, and dioscope paces only reads and writes); give {name}=READ,WRITE",
            j.rw.as_str()
        ));
    }
    // A pool of submitters (runner/offload.rs) splits the job among
    // workers; these keep per-worker state it would not merge.
    let per_worker = [
        ("verify", j.verify.is_some()),
        ("write_bw_log", j.write_bw_log.is_some()),
        ("write_iops_log", j.write_iops_log.is_some()),
        ("write_lat_log", j.write_lat_log.is_some()),
        ("write_hist_log", j.write_hist_log.is_some()),
        ("latency_target", j.latency_target_ns > 0),
        ("read_iolog", j.read_iolog.is_some()),
        ("write_iolog", j.write_iolog.is_some()),
    ];
    if let Some((o, _)) = per_worker.iter().find(|c| c.1 && j.submit_offload) {
        return Err(format!(
            "not supported by dioscope: io_submit_mode=offload with {o} (each submitter of the \
             pool would keep its own {o} state, which dioscope does not merge); drop {o} or use \
             io_submit_mode=inline"
        ));
    }
    if j.iodepth_mode.is_some() {
        // The steps set the depth and the rate themselves.
        let clash = [
            ("latency_target", j.latency_target_ns > 0),
            ("rate", j.rate[0] | j.rate[1] > 0),
            ("rate_iops", j.rate_iops[0] | j.rate_iops[1] > 0),
            ("io_submit_mode=offload", j.submit_offload),
        ];
        if let Some((o, _)) = clash.iter().find(|c| c.1) {
            return Err(format!(
                "iodepth_mode=stepped sets each step's depth and rate itself, and {o} would \
                 fight it; drop {o} or iodepth_mode"
            ));
        }
    }
    if j.ss_dur_us > 0 && j.steadystate.slope && j.ss_dur_us < 2_000_000 {
        return Err(format!(
            "steadystate={} needs ss_dur of at least 2 s: a slope needs two samples (one a second)",
            j.steadystate.name()
        ));
    }
    Ok(())
}

/// Linux errno names, for `ignore_error` (fio takes a name or a number).
static ERRNO_NAMES: &[(&str, i32)] = &[
    ("EPERM", 1),
    ("ENOENT", 2),
    ("ESRCH", 3),
    ("EINTR", 4),
    ("EIO", 5),
    ("ENXIO", 6),
    ("E2BIG", 7),
    ("ENOEXEC", 8),
    ("EBADF", 9),
    ("ECHILD", 10),
    ("EAGAIN", 11),
    ("EWOULDBLOCK", 11),
    ("ENOMEM", 12),
    ("EACCES", 13),
    ("EFAULT", 14),
    ("ENOTBLK", 15),
    ("EBUSY", 16),
    ("EEXIST", 17),
    ("EXDEV", 18),
    ("ENODEV", 19),
    ("ENOTDIR", 20),
    ("EISDIR", 21),
    ("EINVAL", 22),
    ("ENFILE", 23),
    ("EMFILE", 24),
    ("ENOTTY", 25),
    ("ETXTBSY", 26),
    ("EFBIG", 27),
    ("ENOSPC", 28),
    ("ESPIPE", 29),
    ("EROFS", 30),
    ("EMLINK", 31),
    ("EPIPE", 32),
    ("EDOM", 33),
    ("ERANGE", 34),
    ("EDEADLK", 35),
    ("EDEADLOCK", 35),
    ("ENAMETOOLONG", 36),
    ("ENOLCK", 37),
    ("ENOSYS", 38),
    ("ENOTEMPTY", 39),
    ("ELOOP", 40),
    ("ENOMSG", 42),
    ("EIDRM", 43),
    ("ECHRNG", 44),
    ("EL2NSYNC", 45),
    ("EL3HLT", 46),
    ("EL3RST", 47),
    ("ELNRNG", 48),
    ("EUNATCH", 49),
    ("ENOCSI", 50),
    ("EL2HLT", 51),
    ("EBADE", 52),
    ("EBADR", 53),
    ("EXFULL", 54),
    ("ENOANO", 55),
    ("EBADRQC", 56),
    ("EBADSLT", 57),
    ("EBFONT", 59),
    ("ENOSTR", 60),
    ("ENODATA", 61),
    ("ETIME", 62),
    ("ENOSR", 63),
    ("ENONET", 64),
    ("ENOPKG", 65),
    ("EREMOTE", 66),
    ("ENOLINK", 67),
    ("EADV", 68),
    ("ESRMNT", 69),
    ("ECOMM", 70),
    ("EPROTO", 71),
    ("EMULTIHOP", 72),
    ("EDOTDOT", 73),
    ("EBADMSG", 74),
    ("EOVERFLOW", 75),
    ("ENOTUNIQ", 76),
    ("EBADFD", 77),
    ("EREMCHG", 78),
    ("ELIBACC", 79),
    ("ELIBBAD", 80),
    ("ELIBSCN", 81),
    ("ELIBMAX", 82),
    ("ELIBEXEC", 83),
    ("EILSEQ", 84),
    ("ERESTART", 85),
    ("ESTRPIPE", 86),
    ("EUSERS", 87),
    ("ENOTSOCK", 88),
    ("EDESTADDRREQ", 89),
    ("EMSGSIZE", 90),
    ("EPROTOTYPE", 91),
    ("ENOPROTOOPT", 92),
    ("EPROTONOSUPPORT", 93),
    ("ESOCKTNOSUPPORT", 94),
    ("ENOTSUP", 95),
    ("EOPNOTSUPP", 95),
    ("EPFNOSUPPORT", 96),
    ("EAFNOSUPPORT", 97),
    ("EADDRINUSE", 98),
    ("EADDRNOTAVAIL", 99),
    ("ENETDOWN", 100),
    ("ENETUNREACH", 101),
    ("ENETRESET", 102),
    ("ECONNABORTED", 103),
    ("ECONNRESET", 104),
    ("ENOBUFS", 105),
    ("EISCONN", 106),
    ("ENOTCONN", 107),
    ("ESHUTDOWN", 108),
    ("ETOOMANYREFS", 109),
    ("ETIMEDOUT", 110),
    ("ECONNREFUSED", 111),
    ("EHOSTDOWN", 112),
    ("EHOSTUNREACH", 113),
    ("EALREADY", 114),
    ("EINPROGRESS", 115),
    ("ESTALE", 116),
    ("EUCLEAN", 117),
    ("ENOTNAM", 118),
    ("ENAVAIL", 119),
    ("EISNAM", 120),
    ("EREMOTEIO", 121),
    ("EDQUOT", 122),
    ("ENOMEDIUM", 123),
    ("EMEDIUMTYPE", 124),
    ("ECANCELED", 125),
    ("ENOKEY", 126),
    ("EKEYEXPIRED", 127),
    ("EKEYREVOKED", 128),
    ("EKEYREJECTED", 129),
    ("EOWNERDEAD", 130),
    ("ENOTRECOVERABLE", 131),
    ("ERFKILL", 132),
];

/// One errno, by name (`ENOSPC`) or number (`28`).
fn errno_value(s: &str) -> Result<i32, UnitError> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i32>() {
        if n > 0 && n < 4096 {
            return Ok(n);
        }
        return Err(format!("'{s}' is not an errno (1-4095)"));
    }
    ERRNO_NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(s))
        .map(|&(_, v)| v)
        .ok_or_else(|| format!("'{s}' is not an errno name (ENOSPC, EIO, …) or number"))
}

/// `READ,WRITE,VERIFY`, each a `:` list of errnos; an empty part leaves
/// that type as it is.
fn parse_ignore_error(v: &str) -> Result<[Option<Vec<i32>>; 3], UnitError> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("'{v}': at most READ,WRITE,VERIFY lists"));
    }
    // As fio's code parses it (its HOWTO's prose says the reverse, its
    // example `EAGAIN,ENOSPC:122` and fio 3.33 agree): `,` between types,
    // `:` between the errnos of one type, a type's list ending at its
    // first empty entry. So `,ENOSPC` (enospc-pressure.fio) is a WRITE
    // list, and `:28` lists nothing.
    let mut out = [None, None, None];
    for (t, p) in parts.iter().enumerate() {
        let errs: Vec<i32> = p
            .split(':')
            .take_while(|e| !e.trim().is_empty())
            .map(errno_value)
            .collect::<Result<_, _>>()?;
        if !errs.is_empty() {
            out[t] = Some(errs);
        }
    }
    if out.iter().all(Option::is_none) {
        return Err(format!(
            "'{v}' lists no errno; for example ignore_error=,ENOSPC:EDQUOT (reads, then writes)"
        ));
    }
    Ok(out)
}

/// Time and pacing.
pub static PACING: &[OptDef] = &[
    OptDef {
        name: "rate",
        aliases: &[],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "1m,500k",
        help: "Cap each clone's bandwidth, bytes/s (R,W,T: separate caps; an empty part: none; trims are not paced, a trim cap is refused for jobs that trim); every trial starts its budget afresh",
        apply: job!(|j, v| {
            j.rate = per_dir3(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rate_iops",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "10000",
        help: "Cap each clone at this many I/Os per second (R,W: separate caps; empty: none); with a block-size range the smallest block is the unit, as fio counts it",
        apply: job!(|j, v| {
            j.rate_iops = per_dir3(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rate_min",
        aliases: &["ratemin"],
        kind: Kind::Size,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "100k",
        help: "Fail the job when a clone's bandwidth over a ratecycle falls below this, bytes/s (R,W); judged after ramp_time, in each trial",
        apply: job!(|j, v| {
            j.rate_min = per_dir3(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rate_iops_min",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "100",
        help: "Fail the job when a clone's IOPS over a ratecycle falls below this (R,W); judged after ramp_time, in each trial",
        apply: job!(|j, v| {
            j.rate_iops_min = per_dir3(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rate_cycle",
        aliases: &["ratecycle"],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("1000"),
        range: Some(Range::at_least(1)),
        category: Category::Pacing,
        example: "500",
        help: "Milliseconds over which rate_min and rate_iops_min are averaged (default 1000)",
        apply: job!(|j, v| {
            j.rate_cycle_ms = parse_int(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "rate_process",
        aliases: &[],
        kind: Kind::Choice(&["linear", "poisson"]),
        creates: Creates::Nothing,
        default: Some("linear"),
        range: None,
        category: Category::Pacing,
        example: "poisson",
        help: "How rated I/O is spread: linear (even gaps, catching up when behind) or poisson (exponential gaps, reproducible with randseed)",
        apply: job!(|j, v| {
            j.rate_process = match v.trim() {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                o => return Err(format!("'{o}' is not a rate process: choose linear or poisson")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "rate_poisson",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "1",
        help: "The form fio's examples/poisson-rate-submission.fio uses: 1 is rate_process=poisson, \
               0 rate_process=linear",
        apply: job!(|j, v| {
            j.rate_process = if parse_bool(v)? {
                RateProcess::Poisson
            } else {
                RateProcess::Linear
            };
            Ok(())
        }),
    },
    OptDef {
        name: "rate_ignore_thinktime",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "1",
        help: "After a thinktime stall, go on at the rate instead of catching up on the I/O the stall did not issue",
        apply: job!(|j, v| {
            j.rate_ignore_thinktime = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "thinktime",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "100us",
        help: "Stall this long (microseconds by default) after thinktime_blocks I/Os, with the queue drained; not during ramp_time",
        apply: job!(|j, v| {
            j.thinktime_us = parse_time_us(v, 1)?;
            Ok(())
        }),
    },
    OptDef {
        name: "thinktime_spin",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "20us",
        help: "Spend this much of each thinktime stall busy on the CPU (microseconds by default), sleeping the rest",
        apply: job!(|j, v| {
            j.thinktime_spin_us = parse_time_us(v, 1)?;
            Ok(())
        }),
    },
    OptDef {
        name: "thinktime_blocks",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: None,
        range: Some(Range::at_least(1)),
        category: Category::Pacing,
        example: "8",
        help: "I/Os between thinktime stalls (default 1)",
        apply: job!(|j, v| {
            j.thinktime_blocks = parse_int(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "thinktime_blocks_type",
        aliases: &[],
        kind: Kind::Choice(&["complete", "issue"]),
        creates: Creates::Nothing,
        default: Some("complete"),
        range: None,
        category: Category::Pacing,
        example: "issue",
        help: "Whether thinktime_blocks counts completed or issued I/Os",
        apply: job!(|j, v| {
            j.thinktime_blocks_type = match v.trim() {
                "complete" => ThinkBlocks::Complete,
                "issue" => ThinkBlocks::Issue,
                o => return Err(format!("'{o}' is not a block count type: choose complete or issue")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "thinktime_iotime",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "9s",
        help: "Stall for thinktime after doing I/O this long (seconds by default), or after thinktime_blocks if given, whichever comes first",
        apply: job!(|j, v| {
            j.thinktime_iotime_us = parse_time_us(v, 1_000_000)?;
            Ok(())
        }),
    },
    OptDef {
        name: "flow",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "8",
        help: "Weight of this job in its flow_id: concurrent jobs of a flow issue I/Os in proportion to their weights (a shared counter, new in each trial); a flow with negative and positive weights is balanced instead, as fio's older form: each I/O adds the job's weight to the counter, which is kept near 0 (flow=-8 and flow=1: the second job does 8 I/Os per I/O of the first)",
        apply: job!(|j, v| {
            let t = v.trim();
            let (neg, digits) = match t.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, t),
            };
            let n = i32::try_from(u32v(digits)?)
                .map_err(|_| format!("'{t}' is too large for a flow weight"))?;
            j.flow = if neg { -n } else { n };
            Ok(())
        }),
    },
    OptDef {
        name: "flow_id",
        aliases: &[],
        kind: Kind::Int,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "2",
        help: "The flow a job with flow= belongs to (default 0)",
        apply: job!(|j, v| {
            j.flow_id = u32v(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "flow_sleep",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "1000",
        help: "Microseconds to wait, queue drained, when a job is ahead of its flow share (default 0: retry at once)",
        apply: job!(|j, v| {
            j.flow_sleep_us = parse_time_us(v, 1)?;
            Ok(())
        }),
    },
    OptDef {
        name: "steadystate",
        aliases: &["ss"],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("iops_slope:0.01%"),
        range: None,
        category: Category::Pacing,
        example: "iops_slope:0.1%",
        help: "Stop the job once steady over ss_dur: iops/bw/lat (every second's value within LIMIT of the mean; lat: the mean completion latency, LIMIT in ns or with a time unit) or iops_slope/bw_slope/lat_slope (least-squares slope under LIMIT); LIMIT may be a % of the mean. Judged in each trial; JSON `steadystate` is fio's",
        apply: job!(|j, v| {
            j.steadystate = SteadyCriterion::parse(v)?;
            crate::job::debug::parse(|| j.steadystate.read_as());
            Ok(())
        }),
    },
    OptDef {
        name: "steadystate_duration",
        aliases: &["ss_dur"],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "30",
        help: "Window of steady-state detection, whole seconds (seconds by default); 0, the default, turns detection off",
        apply: job!(|j, v| {
            let us = parse_time_us(v, 1_000_000)?;
            if us % 1_000_000 != 0 {
                return Err("give whole seconds (one sample is taken a second)".into());
            }
            j.ss_dur_us = us;
            Ok(())
        }),
    },
    OptDef {
        name: "steadystate_ramp_time",
        aliases: &["ss_ramp"],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "10",
        help: "Run this long (seconds by default) before collecting steady-state samples, counted from the job's start (ramp_time included)",
        apply: job!(|j, v| {
            j.ss_ramp_us = parse_time_us(v, 1_000_000)?;
            Ok(())
        }),
    },
    OptDef {
        name: "latency_target",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "5ms",
        help: "Find the deepest queue (up to iodepth) whose latency_percentile of I/Os complete within this (microseconds by default), then report that depth only; each trial searches afresh",
        apply: job!(|j, v| {
            j.latency_target_ns = parse_time_us(v, 1)?.saturating_mul(1000);
            Ok(())
        }),
    },
    OptDef {
        name: "iodepth_mode",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("none"),
        range: None,
        category: Category::Engine,
        example: "stepped:10-130/5,5/30",
        help: "stepped:LOW-HIGH/INC[,RAMP/RUN]: probe the peak IOPS at iodepth, then step the load from LOW% to HIGH% (HIGH% = iodepth; under 100%, a rate of that share of the peak) by INC, each step RAMP seconds unmeasured then RUN measured (default 5/30); per-step results in iodepth_steps. none: off",
        apply: job!(|j, v| {
            j.iodepth_mode = SteppedDepth::parse(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "latency_window",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "1s",
        help: "How long each queue depth is tried by latency_target (microseconds by default)",
        apply: job!(|j, v| {
            j.latency_window_us = parse_time_us(v, 1)?;
            Ok(())
        }),
    },
    OptDef {
        name: "latency_percentile",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: Some("100"),
        range: None,
        category: Category::Pacing,
        example: "99.9",
        help: "Percent of I/Os that must meet latency_target (default 100: one late I/O fails the window, and at depth 1 the job)",
        apply: job!(|j, v| {
            let p = parse_float(v.trim().trim_end_matches('%'))?;
            if !(p > 0.0 && p <= 100.0) {
                return Err(format!("'{}' is not a percentage in (0, 100]", v.trim()));
            }
            j.latency_percentile = p;
            Ok(())
        }),
    },
    OptDef {
        name: "latency_run",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Pacing,
        example: "1",
        help: "Keep adjusting the depth for latency_target until the runtime ends, instead of ending once found",
        apply: job!(|j, v| {
            j.latency_run = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "exitall",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Jobs,
        example: "1",
        help: "When any job finishes, stop what its exit_what names (as fio, set on one job it holds for every job of the run)",
        apply: job!(|j, v| {
            j.exitall = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "exit_what",
        aliases: &[],
        kind: Kind::Choice(&["group", "stonewall", "all"]),
        creates: Creates::Nothing,
        default: Some("group"),
        range: None,
        category: Category::Jobs,
        example: "all",
        help: "What exitall stops: group (the jobs of its reporting group, also those not started), stonewall (every running job; later stonewall phases still run), all (every job: no later phase or trial runs)",
        apply: job!(|j, v| {
            j.exit_what = match v.trim() {
                "group" => ExitWhat::Group,
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                o => return Err(format!("'{o}' is not an exit_what: choose group, stonewall or all")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "exitall_on_error",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Jobs,
        example: "1",
        help: "When this job fails, stop what its exit_what names (default: its reporting group)",
        apply: job!(|j, v| {
            j.exitall_on_error = parse_bool(v)?;
            Ok(())
        }),
    },
    OptDef {
        name: "io_submit_mode",
        aliases: &[],
        kind: Kind::Choice(&["inline", "offload"]),
        creates: Creates::Nothing,
        default: Some("inline"),
        range: None,
        category: Category::Engine,
        example: "offload",
        help: "inline: each worker submits and reaps its own queue; offload: a pool of iodepth \
               submitter threads per worker, each with its own engine at depth 1, sharing the \
               job's rate (staggered so linear arrivals keep the job's exact schedule), size \
               and region (one slice each): a slow I/O holds up one thread, not the submissions",
        apply: job!(|j, v| {
            j.submit_offload = match v.trim() {
                "inline" => false,
                "offload" => true,
                o => return Err(format!("'{o}' is not a submit mode: choose inline or offload")),
            };
            Ok(())
        }),
    },
    OptDef {
        name: "ignore_error",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Errors,
        example: "EAGAIN,ENOSPC:EDQUOT",
        help: "READ,WRITE,VERIFY lists of errnos (names or numbers, `:` between them) that a job \
               goes on after (a list turns continue_on_error on for its type, as in fio): such \
               an I/O is counted apart (the run's notes), is not the job's error and does not \
               fail the run; any other errno of that type stops it (the list replaces fio's \
               non-fatal EIO/EILSEQ). Verify mismatches are always \
               counted and stop only with verify_fatal, so the VERIFY list changes nothing",
        apply: job!(|j, v| {
            j.ignore_error = parse_ignore_error(v)?;
            // As in fio, a list turns continue_on_error on for its type.
            for (t, l) in j.ignore_error.iter().enumerate() {
                j.continue_on[t] |= l.is_some();
            }
            j.continue_on_error = j.continue_on.iter().any(|&b| b);
            Ok(())
        }),
    },
    OptDef {
        name: "error_dump",
        aliases: &[],
        kind: Kind::Flag,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Errors,
        example: "0",
        help: "0: report the first I/O error (its offset, errno and file) and the count, which is \
               what dioscope does; 1 (a line per failed I/O) is refused",
        apply: job!(|_, v| {
            if parse_bool(v)? {
                return Err("not supported by dioscope: error_dump=1 (a line for every failed I/O); \
                            dioscope reports the first error with its offset and counts the rest: \
                            use error_dump=0"
                    .into());
            }
            Ok(())
        }),
    },
    OptDef {
        name: "startdelay",
        aliases: &[],
        kind: Kind::Time,
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Time,
        example: "1s-3s",
        help: "Wait this long before starting (seconds by default); a range LO-HI draws a delay per clone and trial from the job's seed",
        apply: job!(|j, v| {
            j.startdelay_us = time_range_us(v, 1_000_000)?;
            Ok(())
        }),
    },
    OptDef {
        name: "clocksource",
        aliases: &[],
        kind: Kind::Choice(&["clock_gettime", "gettimeofday", "cpu"]),
        creates: Creates::Nothing,
        default: Some("clock_gettime"),
        range: None,
        category: Category::Time,
        example: "clock_gettime",
        help: "Accepted for fio's job files: dioscope always times with its own clock, clock_gettime(CLOCK_MONOTONIC) through the vDSO (the calibrated TSC where the kernel trusts it; the JSON's environment.clock); cpu and gettimeofday run with a note",
        apply: Apply::Global(|g, v| match v.trim() {
            "clock_gettime" => Ok(()),
            o @ ("gettimeofday" | "cpu") => {
                let note = format!(
                    "clocksource={o}: dioscope times every I/O with its own clock, \
                     clock_gettime(CLOCK_MONOTONIC) through the vDSO (which reads the calibrated \
                     TSC where the kernel trusts it; the JSON's environment.clock says which), \
                     whatever clocksource says"
                );
                if !g.notes.contains(&note) {
                    g.notes.push(note);
                }
                Ok(())
            }
            o => Err(format!("'{o}' is not a clock source: choose clock_gettime")),
        }),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, v: &str) -> Result<JobSpec, UnitError> {
        let o = all()
            .find(|o| o.name == name || o.aliases.contains(&name))
            .unwrap();
        let mut j = JobSpec::default();
        o.set(&mut j, &mut GlobalSettings::default(), v)?;
        Ok(j)
    }

    #[test]
    fn ignore_error_lists_are_per_type_as_fio_parses_them() {
        // `,` between READ, WRITE, VERIFY; `:` between errnos; a type's list
        // ends at its first empty entry (fio 3.33's behaviour, measured).
        let l = |v: &str| parse_ignore_error(v).unwrap();
        assert_eq!(
            l("EAGAIN,ENOSPC:122"),
            [
                Some(vec![libc::EAGAIN]),
                Some(vec![libc::ENOSPC, 122]),
                None
            ]
        );
        assert_eq!(l(",ENOSPC"), [None, Some(vec![libc::ENOSPC]), None]);
        assert_eq!(
            l("EIO:EINVAL"),
            [Some(vec![libc::EIO, libc::EINVAL]), None, None]
        );
        assert_eq!(l("ENOSPC::EIO"), [Some(vec![libc::ENOSPC]), None, None]);
        assert!(parse_ignore_error(":28").is_err(), "lists nothing");
        assert!(parse_ignore_error("EIO,EIO,EIO,EIO").is_err());
        // A list turns continue_on_error on for its type only.
        let j = set("ignore_error", ",ENOSPC").unwrap();
        assert_eq!(
            (j.continue_on, j.continue_on_error),
            ([false, true, false], true)
        );
    }

    #[test]
    fn rates_per_direction() {
        assert_eq!(
            set("rate", "1m,500k").unwrap().rate,
            [1 << 20, 500 << 10, 0]
        );
        assert_eq!(set("rate", ",500k").unwrap().rate, [0, 500 << 10, 0]);
        assert_eq!(set("rate", "500k,").unwrap().rate, [500 << 10, 0, 0]);
        assert_eq!(set("rate", "2m").unwrap().rate, [2 << 20; 3]);
        assert_eq!(set("rate", "300,300,300").unwrap().rate, [300; 3]);
        assert!(set("rate", "1,2,3,4").is_err());
        assert_eq!(set("ratemin", "1m").unwrap().rate_min, [1 << 20; 3]);
        assert_eq!(
            set("rate_iops_min", "10,20").unwrap().rate_iops_min,
            [10, 20, 0]
        );
        assert_eq!(set("ratecycle", "250").unwrap().rate_cycle_ms, 250);
        assert!(set("ratecycle", "0").is_err());
    }

    #[test]
    fn steady_state_criteria() {
        let c = set("ss", "iops_slope:0.1%").unwrap().steadystate;
        assert_eq!(
            (c.metric, c.slope, c.limit, c.pct),
            (SsMetric::Iops, true, 0.1, true)
        );
        let c = set("steadystate", "bw:1m").unwrap().steadystate;
        assert_eq!(
            (c.metric, c.slope, c.limit, c.pct),
            (SsMetric::Bw, false, 1048576.0, false)
        );
        let c = set("ss", "iops:30").unwrap().steadystate;
        assert_eq!((c.limit, c.pct), (30.0, false));
        let c = set("ss", "lat:2%").unwrap().steadystate;
        assert_eq!(
            (c.metric, c.slope, c.limit, c.pct, c.name()),
            (SsMetric::Lat, false, 2.0, true, "lat")
        );
        let c = set("ss", "lat_slope:500").unwrap().steadystate;
        assert_eq!((c.slope, c.limit, c.pct), (true, 500.0, false));
        assert_eq!(set("ss", "lat:50us").unwrap().steadystate.limit, 50_000.0);
        for bad in ["iops", "lat", "latency:1%", "iops:-1%", "iops:0", "iops:x%"] {
            assert!(set("ss", bad).is_err(), "{bad}");
        }
        assert_eq!(set("ss_dur", "30").unwrap().ss_dur_us, 30_000_000);
        assert_eq!(set("ss_dur", "1m").unwrap().ss_dur_us, 60_000_000);
        assert!(set("ss_dur", "1500ms").is_err());
        assert_eq!(set("ss_ramp", "5").unwrap().ss_ramp_us, 5_000_000);
        assert_eq!(SteadyCriterion::default().name(), "iops_slope");
    }

    #[test]
    fn startdelay_ranges() {
        assert_eq!(
            set("startdelay", "2").unwrap().startdelay_us,
            (2_000_000, 2_000_000)
        );
        assert_eq!(
            set("startdelay", "1s-3s").unwrap().startdelay_us,
            (1_000_000, 3_000_000)
        );
        assert_eq!(
            set("startdelay", "500ms:1").unwrap().startdelay_us,
            (500_000, 1_000_000)
        );
        assert_eq!(
            set("startdelay", "3-1").unwrap().startdelay_us,
            (1_000_000, 3_000_000)
        );
        assert!(set("startdelay", "1s-x").is_err());
    }

    #[test]
    fn latency_and_time_units() {
        let j = set("latency_target", "5ms").unwrap();
        assert_eq!(j.latency_target_ns, 5_000_000);
        assert_eq!(
            set("latency_target", "250").unwrap().latency_target_ns,
            250_000
        );
        assert_eq!(
            set("latency_window", "1s").unwrap().latency_window_us,
            1_000_000
        );
        assert_eq!(
            set("latency_percentile", "99.9")
                .unwrap()
                .latency_percentile,
            99.9
        );
        assert!(set("latency_percentile", "0").is_err());
        assert!(set("latency_percentile", "101").is_err());
        assert_eq!(set("thinktime", "100").unwrap().thinktime_us, 100);
        assert_eq!(
            set("thinktime_iotime", "9").unwrap().thinktime_iotime_us,
            9_000_000
        );
        assert_eq!(set("flow_sleep", "1000").unwrap().flow_sleep_us, 1000);
        assert_eq!(set("flow", "-8").unwrap().flow, -8);
        assert_eq!(set("flow", "3").unwrap().flow, 3);
        assert!(set("flow", "-x").is_err());
        assert!(set("flow", "4294967295").is_err());
    }

    #[test]
    fn combinations_that_cannot_work_are_refused_before_any_io() {
        let mut j = set("rate", "1m,1m,1m").unwrap();
        assert!(check(&j).is_ok(), "no trims: the trim part changes nothing");
        j.rw = RwMode::RandTrim;
        let e = check(&j).unwrap_err();
        assert!(
            e.starts_with("not supported by dioscope: a rate for trims"),
            "{e}"
        );
        j.rate = [1 << 20, 1 << 20, 0];
        assert!(check(&j).is_ok());
        let mut j = set("ss_dur", "1").unwrap();
        assert!(check(&j).unwrap_err().contains("at least 2 s"));
        j.steadystate = SteadyCriterion::parse("iops:5%").unwrap();
        assert!(check(&j).is_ok(), "a deviation can be judged on one sample");
    }

    #[test]
    fn refusals_name_the_feature() {
        assert!(set("io_submit_mode", "offload").unwrap().submit_offload);
        assert!(!set("io_submit_mode", "inline").unwrap().submit_offload);
        let mut j = set("io_submit_mode", "offload").unwrap();
        j.verify = Some("crc32c".into());
        let e = check(&j).unwrap_err();
        assert!(e.contains("io_submit_mode=offload with verify"), "{e}");
        let (mut j, mut g) = (JobSpec::default(), GlobalSettings::default());
        let o = all().find(|o| o.name == "clocksource").unwrap();
        for v in ["cpu", "gettimeofday", "cpu", "clock_gettime"] {
            o.set(&mut j, &mut g, v).unwrap();
        }
        assert_eq!(g.notes.len(), 2, "one note per clock, once: {:?}", g.notes);
        assert!(
            g.notes[0].starts_with("clocksource=cpu: dioscope times"),
            "{:?}",
            g.notes
        );
        assert!(set("clocksource", "bogus").is_err());
    }
}
