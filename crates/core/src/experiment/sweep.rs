//! A sweep: one job run over the cross product of option values
//! (`--vary OPT=v1|v2 …`), each cell with its trials, in a chosen order,
//! written after every cell so an interrupted sweep resumes. The types here
//! are the sweep's JSON; the pivot table and CSV read them.

use super::samples::{SideSamples, METRICS};
use crate::results::RunDoc;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// Version of the sweep document's layout.
const SWEEP_SCHEMA: u32 = 1;

/// The separator between the values of one `--vary`: no fio value form
/// uses it (`bs=4k,64k` uses `,`, filename lists `:`, bssplit `/` and `:`,
/// ranges `-`, expressions `()*+`).
const VALUE_SEP: char = '|';

/// One option and the values it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub option: String,
    pub values: Vec<String>,
}

/// Parse one `--vary` argument: `OPT=v1|v2|…`.
pub fn parse_axis(s: &str) -> Result<Axis, String> {
    let (opt, vals) = s.split_once('=').ok_or_else(|| {
        format!("--vary {s}: write OPTION=VALUE1|VALUE2 (e.g. --vary 'bs=4k|64k|1m')")
    })?;
    let opt = opt.trim().trim_start_matches("--").to_string();
    if opt.is_empty() {
        return Err(format!(
            "--vary {s}: the option name is missing (e.g. --vary 'iodepth=1|32')"
        ));
    }
    let values: Vec<String> = vals.split(VALUE_SEP).map(|v| v.to_string()).collect();
    if values.iter().any(|v| v.trim().is_empty()) {
        return Err(format!(
            "--vary {s}: an empty value; values are separated by '{VALUE_SEP}' (e.g. --vary '{opt}=1|32')"
        ));
    }
    let mut seen = Vec::new();
    for v in &values {
        if seen.contains(v) {
            return Err(format!("--vary {s}: the value '{v}' is given twice"));
        }
        seen.push(v.clone());
    }
    Ok(Axis {
        option: opt,
        values,
    })
}

/// The cross product of the axes, first axis slowest: each cell's values
/// in axis order.
pub fn cross(axes: &[Axis]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for a in axes {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                a.values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push(v.clone());
                    c
                })
            })
            .collect();
    }
    out
}

/// The order cells run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The cross product as given.
    Given,
    /// A seeded shuffle (the seed is in the JSON).
    Random,
    /// One trial of every cell per pass, passes repeated for the trials:
    /// drift over the sweep hits every cell alike.
    Interleaved,
}

impl Order {
    /// The word a person reads (the one `--order=` takes).
    pub fn word(self) -> &'static str {
        match self {
            Order::Given => "given",
            Order::Random => "random",
            Order::Interleaved => "interleaved",
        }
    }

    pub fn parse(s: &str) -> Result<Order, String> {
        match s.trim() {
            "given" => Ok(Order::Given),
            "random" => Ok(Order::Random),
            "interleaved" => Ok(Order::Interleaved),
            o => Err(format!(
                "--order={o}: choose given, random or interleaved (e.g. --order=random)"
            )),
        }
    }
}

/// A seeded permutation of `0..n` (Fisher–Yates with SplitMix64).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut s = seed;
    for i in (1..n).rev() {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        v.swap(i, (z % (i as u64 + 1)) as usize);
    }
    v
}

/// The state of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    Pending,
    Done,
    /// The run could not be set up (bad combination) or had I/O errors.
    Failed,
}

/// One cell: its option values, its runs (one with all its trials; with
/// `--order=interleaved` one per pass) and their timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepCell {
    pub index: usize,
    /// The values, in axis order.
    pub values: Vec<String>,
    pub status: CellStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub runs: Vec<RunDoc>,
    /// Wall time of the cell's runs, and the part spent in ramps and
    /// measured trials.
    pub wall_s: f64,
    pub trials_s: f64,
}

impl SweepCell {
    /// The cell's samples over all its runs.
    pub fn samples(&self) -> SideSamples {
        let mut s = SideSamples::default();
        for r in &self.runs {
            s.add(r);
        }
        s
    }

    /// Findings of the cell's runs (distinct kinds).
    pub fn findings(&self) -> Vec<String> {
        let mut k: Vec<String> = self
            .runs
            .iter()
            .filter_map(|r| r.dioscope.as_ref())
            .flat_map(|d| d.findings.iter().map(|f| f.kind().to_string()))
            .collect();
        k.sort();
        k.dedup();
        k
    }
}

/// The whole sweep, as written after every cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub schema: u32,
    pub kind: String,
    pub dioscope_version: String,
    /// The job files and options every cell starts from.
    pub base_args: Vec<String>,
    pub axes: Vec<Axis>,
    pub order: Order,
    pub seed: u64,
    /// `--trials` as given (`auto` or a number; empty: the job's).
    pub trials: String,
    pub cells: Vec<SweepCell>,
    /// Wall time of the sweep (over all sessions when resumed).
    pub wall_s: f64,
    /// Wall time not spent in any cell's ramps and trials, and its share.
    pub overhead_s: f64,
    pub overhead_pct: f64,
    pub complete: bool,
    #[serde(default)]
    pub interrupted: bool,
    /// How the table shows it: `--pivot ROW,COL` (option names) and the
    /// metrics in each cell (keys of the metric table).
    #[serde(default)]
    pub pivot: Option<(String, String)>,
    #[serde(default)]
    pub table_metrics: Vec<String>,
}

impl Sweep {
    pub fn new(
        base_args: Vec<String>,
        axes: Vec<Axis>,
        order: Order,
        seed: u64,
        trials: String,
    ) -> Sweep {
        let cells = cross(&axes)
            .into_iter()
            .enumerate()
            .map(|(index, values)| SweepCell {
                index,
                values,
                status: CellStatus::Pending,
                error: None,
                runs: Vec::new(),
                wall_s: 0.0,
                trials_s: 0.0,
            })
            .collect();
        Sweep {
            schema: SWEEP_SCHEMA,
            kind: "sweep".into(),
            dioscope_version: env!("CARGO_PKG_VERSION").into(),
            base_args,
            axes,
            order,
            seed,
            trials,
            cells,
            wall_s: 0.0,
            overhead_s: 0.0,
            overhead_pct: 0.0,
            complete: false,
            interrupted: false,
            pivot: None,
            table_metrics: Vec::new(),
        }
    }

    /// Read a sweep's JSON.
    pub fn from_json(text: &str) -> Result<Sweep, String> {
        let s: Sweep =
            serde_json::from_str(text).map_err(|e| format!("not a dioscope sweep: {e}"))?;
        if s.schema > SWEEP_SCHEMA {
            return Err(format!(
                "sweep schema {} is newer than this dioscope reads ({SWEEP_SCHEMA}); upgrade dioscope",
                s.schema
            ));
        }
        // Each cell is one point of the grid: one value per axis, each one
        // of that axis's values (a hand-edited or foreign state would
        // otherwise run cells nobody asked for).
        for (i, c) in s.cells.iter().enumerate() {
            if c.values.len() != s.axes.len() {
                return Err(format!(
                    "cell {i} has {} values for {} axes; this is not a state dioscope wrote",
                    c.values.len(),
                    s.axes.len()
                ));
            }
            for (v, a) in c.values.iter().zip(&s.axes) {
                if !a.values.contains(v) {
                    return Err(format!(
                        "cell {i} has {}={v}, which is not one of the values the sweep varies \
                         ({}); this is not a state dioscope wrote",
                        a.option,
                        a.values.join(", ")
                    ));
                }
            }
        }
        Ok(s)
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        s
    }

    /// The cell whose values match `sel` (`opt=v,opt2=w`), for compare.
    pub fn find_cell(&self, sel: &str) -> Result<&SweepCell, String> {
        let mut want: Vec<Option<&str>> = vec![None; self.axes.len()];
        for part in sel.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("cell '{sel}': write OPT=VALUE,OPT2=VALUE"))?;
            let i = self
                .axes
                .iter()
                .position(|a| a.option == k.trim())
                .ok_or_else(|| format!("cell '{sel}': the sweep does not vary '{k}'"))?;
            want[i] = Some(v);
        }
        let found: Vec<&SweepCell> = self
            .cells
            .iter()
            .filter(|c| {
                want.iter()
                    .zip(&c.values)
                    .all(|(w, v)| w.is_none_or(|w| w == v))
            })
            .collect();
        match found.as_slice() {
            [one] => Ok(one),
            [] => Err(format!("cell '{sel}': no such cell")),
            _ => Err(format!(
                "cell '{sel}' matches {} cells; name a value for every varied option",
                found.len()
            )),
        }
    }

    /// Recompute the wall time's split (after a cell or a session).
    pub fn account(&mut self, session_wall_s: f64, prior_wall_s: f64) {
        self.wall_s = prior_wall_s + session_wall_s;
        let in_trials: f64 = self.cells.iter().map(|c| c.trials_s).sum();
        self.overhead_s = (self.wall_s - in_trials).max(0.0);
        self.overhead_pct = if self.wall_s > 0.0 {
            100.0 * self.overhead_s / self.wall_s
        } else {
            0.0
        };
        self.complete = self.cells.iter().all(|c| c.status != CellStatus::Pending);
    }
}

/// One metric of one job in one cell: mean, σ and the 95 % CI half-width
/// (widened when `--trials=auto` chose the trials) over `n` trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellStat {
    pub mean: f64,
    pub half: f64,
    pub n: usize,
    stddev: f64,
    pub auto_stop: bool,
}

impl CellStat {
    /// The standard deviation over the trials; `None` for one trial.
    pub fn sigma(&self) -> Option<f64> {
        (self.n >= 2).then_some(self.stddev)
    }
}

/// The statistic of metric `k` of job `job` (the first job when `None`).
pub fn cell_stat(cell: &SweepCell, job: Option<&str>, k: usize) -> Option<CellStat> {
    let s = cell.samples();
    let j = match job {
        Some(n) => s.jobs.iter().find(|j| j.name == n)?,
        None => s.jobs.first()?,
    };
    let v = j.column(k);
    if v.is_empty() {
        return None;
    }
    let sm = Summary::of_trials(&v, j.auto_stop);
    Some(CellStat {
        mean: sm.mean,
        half: sm.ci95.1 - sm.mean,
        n: sm.n,
        stddev: sm.stddev,
        auto_stop: sm.auto_stop,
    })
}

/// The job names of a sweep (from its first done cell).
pub fn job_names(s: &Sweep) -> Vec<String> {
    s.cells
        .iter()
        .find(|c| c.status == CellStatus::Done)
        .map(|c| c.samples().jobs.into_iter().map(|j| j.name).collect())
        .unwrap_or_default()
}

/// The metric keys of the table of a sweep, with their units.
pub fn metric_units(keys: &[usize]) -> Vec<(&'static str, &'static str)> {
    keys.iter()
        .map(|&k| (METRICS[k].key, METRICS[k].unit))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fio_value_form_fits_in_a_vary() {
        let a = parse_axis("bs=4k,64k|1m").unwrap();
        assert_eq!(a.values, vec!["4k,64k", "1m"]);
        let a = parse_axis("filename=/dev/a:/dev/b|/dev/a").unwrap();
        assert_eq!(a.values, vec!["/dev/a:/dev/b", "/dev/a"]);
        let a = parse_axis("bssplit=4k/50:64k/50|4k/10:1m/90").unwrap();
        assert_eq!(a.values, vec!["4k/50:64k/50", "4k/10:1m/90"]);
        let a = parse_axis("--bsrange=4k-64k|8k-16k").unwrap();
        assert_eq!(a.option, "bsrange");
        assert!(parse_axis("iodepth").is_err());
        assert!(parse_axis("iodepth=1||2").is_err());
        assert!(parse_axis("iodepth=1|1").is_err());
    }

    #[test]
    fn the_cross_product_runs_the_first_axis_slowest() {
        let axes = vec![
            parse_axis("numjobs=1|2").unwrap(),
            parse_axis("bs=4k|64k|1m").unwrap(),
        ];
        let c = cross(&axes);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec!["1", "4k"]);
        assert_eq!(c[3], vec!["2", "4k"]);
        let s = Sweep::new(vec![], axes, Order::Given, 0, String::new());
        assert_eq!(s.find_cell("numjobs=2,bs=64k").unwrap().index, 4);
        assert!(s.find_cell("bs=64k").unwrap_err().contains("matches 2"));
        assert!(s.find_cell("iodepth=1").is_err());
    }

    #[test]
    fn shuffles_are_permutations_and_reproducible() {
        let a = shuffled(10, 42);
        let mut b = a.clone();
        b.sort();
        assert_eq!(b, (0..10).collect::<Vec<_>>());
        assert_eq!(a, shuffled(10, 42));
        assert_ne!(a, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn a_sweep_reads_back() {
        let s = Sweep::new(
            vec!["job.fio".into()],
            vec![parse_axis("iodepth=1|32").unwrap()],
            Order::Random,
            7,
            "3".into(),
        );
        assert_eq!(Sweep::from_json(&s.to_json()).unwrap(), s);
    }
}
