//! Recipes: each seed's experiment as one command. A recipe makes its
//! scratch devices, runs its cells (each a job with trials, through the
//! same `run::execute` every run uses), builds a table shaped like the
//! seed's with a confidence interval per cell, says whether the seed's
//! effect is present on this kernel, and tears everything down — also on
//! a stop signal and on failure (the [`Ctx`]'s scratch session is dropped
//! on every path).
//!
//! The JSON result is a sweep (one axis, `cell`) with a `recipe` section:
//! `dioscope compare A.json@cell=X B.json@cell=X` reads it, and each cell's
//! run is also written as a plain result (`FILE.d/CELL.json`) for
//! `dioscope report`.
//!
//! To add a recipe: `recipes/my_recipe.rs` with `pub const RECIPE: Recipe`,
//! and its module name in the `recipes!` list below (docs/ARCHITECTURE.md).

use crate::experiment::samples::M;
use crate::experiment::sweep::{cell_stat, Axis, CellStat, CellStatus, Order, Sweep, SweepCell};
use crate::scratch::{self, Geometry, Item, Session};
use serde::Serialize;
pub use verdict::{Control, Evidence, Verdict};

pub mod verdict;

/// One recipe.
pub struct Recipe {
    pub name: &'static str,
    /// The seed it reproduces (file name prefix in the seeds folder).
    pub seed: &'static str,
    /// One line: what it reproduces.
    pub reproduces: &'static str,
    /// Its steps in order: `run_steps::<TheRecipe>`.
    pub run: fn(&mut Ctx) -> Result<Outcome, Stop>,
}

/// The steps of a recipe, in order: make the scratch devices (`setup`),
/// run the cells on them (`cells`), then from the cells' results build the
/// tables shaped like the seed's (`tables`) and say whether the seed's
/// effect is present here (`verdict`, with `notes` on how to read it).
/// [`run_steps`] runs them; each is a function of its own, so a recipe reads
/// top to bottom and the shared helpers (cells, statistics, formatting) are
/// here in mod.rs.
pub trait Steps {
    /// What set-up made that the other steps need (devices, paths, sizes).
    type Setup;
    /// What the seed reported, shown beside this kernel's result.
    const SEED_REPORTED: &'static str;
    fn setup(ctx: &mut Ctx) -> Result<Self::Setup, Stop>;
    fn cells(ctx: &mut Ctx, s: &Self::Setup) -> Result<(), Stop>;
    fn tables(ctx: &Ctx, s: &Self::Setup) -> Vec<Table>;
    /// The verdict by the shared rule ([`verdict::decide`]) and the
    /// sentence that gives its figures.
    fn verdict(ctx: &Ctx, s: &Self::Setup) -> Said;
    /// `--control`: plant the seed's effect (no larger than the size an
    /// ABSENT verdict excludes) on the recipe's scratch devices, run the
    /// cells that show it, and say whether the rule sees it (PRESENT:
    /// detected). Runs after [`Steps::cells`] and before the verdict.
    fn control(ctx: &mut Ctx, s: &Self::Setup) -> Result<Said, Stop>;
    fn notes(_ctx: &Ctx, _s: &Self::Setup) -> Vec<String> {
        Vec::new()
    }
}

/// A recipe's run: set-up, cells, tables, verdict.
pub fn run_steps<R: Steps>(ctx: &mut Ctx) -> Result<Outcome, Stop> {
    let setup = R::setup(ctx)?;
    R::cells(ctx, &setup)?;
    let control = if ctx.control {
        let c = R::control(ctx, &setup)?;
        ctx.control_state = Control::Ran(c.verdict.clone());
        Some(c)
    } else {
        None
    };
    let said = R::verdict(ctx, &setup);
    Ok(Outcome {
        tables: R::tables(ctx, &setup),
        verdict: said.verdict.to_string(),
        verdict_text: said.text,
        effect_pct: said.size_pct,
        interval_pct: said.interval_pct.map(|(lo, hi)| [lo, hi]),
        control_verdict: control.as_ref().map(|c| c.verdict.to_string()),
        control_text: control.map(|c| c.text).unwrap_or_default(),
        seed_reported: R::SEED_REPORTED.into(),
        notes: R::notes(ctx, &setup),
    })
}

/// A verdict and the sentence with its figures.
#[derive(Debug, Clone)]
pub struct Said {
    pub verdict: Verdict,
    pub text: String,
    /// The seed's effect size the verdict was judged against (ABSENT: the
    /// size it excludes), in %.
    pub size_pct: Option<f64>,
    /// The 95 % interval of the change the verdict rests on, in %.
    pub interval_pct: Option<(f64, f64)>,
}

impl Said {
    pub fn new(verdict: Verdict, text: String) -> Said {
        Said {
            verdict,
            text,
            size_pct: None,
            interval_pct: None,
        }
    }

    /// A verdict on evidence `e`: its effect size and interval go with it
    /// (the JSON's `effect_pct` and `interval_pct`).
    pub fn judged(verdict: Verdict, text: String, e: &Evidence) -> Said {
        Said {
            size_pct: Some(e.size_pct),
            interval_pct: e.change.and_then(|j| j.ci_pct),
            ..Said::new(verdict, text)
        }
    }

    /// A cell the verdict needs did not run.
    pub fn missing() -> Said {
        Said::new(
            Verdict::Inconclusive("no result: a cell did not run".into()),
            "no result: a cell did not run".into(),
        )
    }
}

/// Declares the recipe modules and [`RECIPES`] from one list: each module
/// has a `pub const RECIPE: Recipe`.
macro_rules! recipes {
    ($($(#[$a:meta])* $m:ident),* $(,)?) => {
        $($(#[$a])* pub mod $m;)*
        /// Every recipe, in the order `recipe list` shows them.
        pub static RECIPES: &[Recipe] = &[$($(#[$a])* $m::RECIPE),*];
    };
}

recipes!(
    indirect_write,
    dio_scaling,
    blocksize,
    submit_cost,
    pagecache_interference,
    // docs/ARCHITECTURE.md's "Add a recipe" followed by a test-only recipe
    // (the test `adding_a_recipe_is_one_file_and_one_line`).
    #[cfg(test)]
    example_recipe,
);

pub fn find(name: &str) -> Option<&'static Recipe> {
    RECIPES.iter().find(|r| r.name == name)
}

/// Why a recipe ended early.
#[derive(Debug)]
pub enum Stop {
    /// A stop signal (exit 128+N).
    Interrupted,
    /// Setup or a run failed (exit 1).
    Failed(String),
}

impl From<scratch::Error> for Stop {
    fn from(e: scratch::Error) -> Stop {
        // A step cut short by a stop signal is the signal's doing.
        if dioscope_sys::signal::stop_count() > 0 {
            return Stop::Interrupted;
        }
        Stop::Failed(format!("scratch: {e}"))
    }
}

/// A table shaped like the seed's.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(title: &str, header: &[&str]) -> Table {
        Table {
            title: title.into(),
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut w = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &Vec<String>| -> String {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .take(n)
                .map(|(i, c)| format!("{c:>width$}", width = w[i]))
                .collect();
            format!("| {} |\n", cells.join(" | "))
        };
        let sep = format!(
            "|{}|\n",
            w.iter()
                .map(|x| "-".repeat(x + 2))
                .collect::<Vec<_>>()
                .join("|")
        );
        let mut o = format!("{}\n", self.title);
        o.push_str(&line(&self.header));
        o.push_str(&sep);
        for r in &self.rows {
            o.push_str(&line(r));
        }
        if self.rows.iter().flatten().any(|c| c.contains(" ± ")) {
            o.push_str("(mean ± σ over the cell's trials; a value alone: one trial)\n");
        }
        o
    }
}

/// What a recipe found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub tables: Vec<Table>,
    /// The verdict on this kernel: `PRESENT`, `ABSENT` or `INCONCLUSIVE
    /// (reason)`.
    pub verdict: String,
    /// The sentence with the figures the verdict rests on.
    pub verdict_text: String,
    /// The seed's effect size the verdict was judged against, in % (ABSENT:
    /// the size its interval excludes).
    pub effect_pct: Option<f64>,
    /// The 95 % interval [lo, hi] of the change the verdict rests on, in %.
    pub interval_pct: Option<[f64; 2]>,
    /// `--control`: the control's verdict (PRESENT: detected); `None`
    /// without `--control`.
    pub control_verdict: Option<String>,
    pub control_text: String,
    /// What the seed reported, for the side-by-side.
    pub seed_reported: String,
    pub notes: Vec<String>,
}

/// A recipe's run: options, the scratch session, the cells run so far.
pub struct Ctx {
    pub quick: bool,
    /// `--profile`: every cell runs with `--profile` (quick or not).
    pub profile: bool,
    /// `--trials` as given (empty: the recipe's default).
    pub trials: String,
    pub session: Session,
    pub geometry: Vec<Geometry>,
    pub sweep: Sweep,
    /// Extra per-cell facts (e.g. memory used), by cell name.
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// `--control`: run the positive control after the cells.
    pub control: bool,
    /// The control's outcome, for the verdict (set before it).
    pub control_state: Control,
    /// `--cap-request-kb=N` (indirect-write): cap the request size of
    /// every layout's device, to show how a device limit masks the split.
    pub cap_request_kb: Option<u32>,
    /// `--contaminate` (pagecache-interference): a buffered reader on the
    /// device during every cell, the baseline's included.
    pub contaminate: bool,
    /// A full run's time budget for the trials (see [`Ctx::plan`]).
    budget: Option<Budget>,
    /// When the recipe started: its wall time in the result.
    pub started: std::time::Instant,
}

/// The time a full run's `trials=auto` cells may take together: what is
/// left is shared out evenly over the cells still to run (`--max-time` of
/// each), so a recipe ends within [`FULL_BUDGET_S`] plus its setup however
/// noisy the machine is.
struct Budget {
    deadline: std::time::Instant,
    cells_left: usize,
    /// Wall seconds per trial of the last auto cell, all included (layout,
    /// `--profile`'s perf start-up and `perf script`, which `--max-time`
    /// does not see): the next cell's `--max-trials` comes from it.
    per_trial_s: Option<f64>,
}

/// Seconds of trials a full run (`trials=auto`) may take in all; with
/// set-up and tear-down a recipe takes about three minutes.
const FULL_BUDGET_S: u64 = 150;

/// The least `--max-time` a cell gets, however late it comes (the first
/// trial always runs).
const MIN_CELL_S: u64 = 3;

/// A share of the budget below this runs [`MIN_TRIALS`] trials rather
/// than risk fewer (a trial that outlasts `--max-time` ends an auto cell).
const TIGHT_CELL_S: u64 = 10;

/// The least share with which the first auto cell (a trial's cost not yet
/// seen) runs `trials=auto`; below it, [`MIN_TRIALS`] fixed.
const FIRST_CELL_S: u64 = 30;

/// The fewest trials a full run's cell gets: the fewest with which the
/// verdict's U test has a 95 % interval (4 a side). With 2, a full run on a
/// busy machine ended "INCONCLUSIVE (too few trials)" where a quick run of
/// the same recipe decided.
const MIN_TRIALS: u32 = 4;

impl Ctx {
    pub fn new(recipe: &str, quick: bool, trials: &str) -> Ctx {
        let mut sweep = Sweep::new(
            vec![format!("recipe:{recipe}")],
            vec![Axis {
                option: "cell".into(),
                values: Vec::new(),
            }],
            Order::Given,
            0,
            trials.to_string(),
        );
        sweep.cells.clear();
        Ctx {
            quick,
            profile: false,
            trials: trials.to_string(),
            session: Session::new(),
            geometry: Vec::new(),
            sweep,
            extra: serde_json::Map::new(),
            control: false,
            control_state: Control::NotRun,
            cap_request_kb: None,
            contaminate: false,
            budget: None,
            started: std::time::Instant::now(),
        }
    }

    /// Declare how many `trials=auto` cells the recipe runs and about how
    /// many seconds its fixed-trial cells take: each auto cell gets an even
    /// share of what is left of [`FULL_BUDGET_S`] less `fixed_s` as its
    /// `--max-time` (the time fixed cells really take does not count).
    pub fn plan(&mut self, cells: usize, fixed_s: u64) {
        let s = FULL_BUDGET_S.saturating_sub(fixed_s).max(MIN_CELL_S);
        self.budget = Some(Budget {
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(s),
            cells_left: cells.max(1),
            per_trial_s: None,
        });
    }

    /// The trial arguments of the next cell (counted as started) and whether
    /// it is inside the budget. A `trials=auto` cell of a recipe that
    /// declared its cells gets its share of the time left as `--max-time`
    /// and, once a cell has shown what a trial really costs, `--max-trials`;
    /// when the share is under [`TIGHT_CELL_S`] or holds fewer than
    /// [`MIN_TRIALS`] + ½ trials it runs [`MIN_TRIALS`] trials, the fewest
    /// the verdict can judge (the budget is then overrun, not the verdict
    /// starved).
    fn budget_args(&mut self, trials: String) -> (Vec<String>, bool) {
        let Some(b) = self.budget.as_mut().filter(|_| trials == "--trials=auto") else {
            return (vec![trials], false);
        };
        let left = b
            .deadline
            .saturating_duration_since(std::time::Instant::now())
            .as_secs();
        let share = (left / b.cells_left.max(1) as u64).max(MIN_CELL_S);
        b.cells_left = b.cells_left.saturating_sub(1).max(1);
        // `--max-time` ends a cell after one trial when that trial outlasts
        // the share: a share under TIGHT_CELL_S, or under MIN_TRIALS + ½
        // trials of the last cell's cost, runs MIN_TRIALS fixed instead.
        // The first auto cell does not know a trial's cost yet: a share
        // under FIRST_CELL_S may hold fewer than MIN_TRIALS of them (a full
        // submit-cost run's first cell, 14 s for profiled 3 s trials, ran 3).
        let tight = share < TIGHT_CELL_S
            || match b.per_trial_s.filter(|t| *t > 0.0) {
                Some(t) => (share as f64) < (f64::from(MIN_TRIALS) + 0.5) * t,
                None => share < FIRST_CELL_S,
            };
        if tight {
            return (vec![format!("--trials={MIN_TRIALS}")], true);
        }
        let mut v = vec![format!("--max-time={share}")];
        if let Some(t) = b.per_trial_s.filter(|t| *t > 0.0) {
            let n = ((share as f64 / t).floor() as u32).clamp(MIN_TRIALS, 30);
            v.push(format!("--max-trials={n}"));
        }
        v.push(trials);
        (v, true)
    }

    /// Take a scratch item into the session and record its geometry.
    pub fn keep(&mut self, it: Item) -> Result<Item, Stop> {
        self.session.keep(&it);
        self.geometry.extend(it.geometry());
        Ok(it)
    }

    pub fn zram(&mut self, size: u64, fill: bool) -> Result<Item, Stop> {
        stop_check()?;
        let it = scratch::create_zram(size, fill)?;
        self.keep(it)
    }

    pub fn fs(&mut self, spec: &scratch::FsSpec) -> Result<Item, Stop> {
        stop_check()?;
        let it = scratch::create_fs(spec)?;
        self.keep(it)
    }

    pub fn loopdev(&mut self, spec: &scratch::LoopSpec) -> Result<Item, Stop> {
        stop_check()?;
        let it = scratch::create_loop(spec)?;
        self.keep(it)
    }

    /// The trials argument for a cell: the user's, else `default`.
    fn trials_arg(&self, default: &str) -> String {
        let t = if self.trials.is_empty() {
            default
        } else {
            &self.trials
        };
        format!("--trials={t}")
    }

    /// Run one cell: `args` are dioscope's/fio's options of the job(s);
    /// `default_trials` applies unless `--trials` was given. The cell's
    /// run carries the scratch geometry (its `scratch` section).
    pub fn cell(&mut self, name: &str, args: &[String], default_trials: &str) -> Result<(), Stop> {
        self.cell_with(name, args, default_trials, &mut crate::runner::NoHooks)
    }

    /// [`Ctx::cell`] with trial hooks of the recipe's own, called after
    /// dioscope's diagnosis hooks at each point of each trial (e.g. a
    /// buffered reader that comes for some trials and goes).
    pub fn cell_with(
        &mut self,
        name: &str,
        args: &[String],
        default_trials: &str,
        hooks: &mut dyn crate::runner::TrialHooks,
    ) -> Result<(), Stop> {
        let (trials, auto) = self.budget_args(self.trials_arg(default_trials));
        self.run_into(name, args, trials, auto, hooks)
    }

    /// Two cells whose runs alternate, one trial per run: A B A B …,
    /// `pairs` runs of each, every run appended to its cell (`a.0`, `b.0`;
    /// `a.1`, `b.1` their jobs' options), so the cells' trials interleave in
    /// time and drift and other load fall on both alike, as in `sweep
    /// --order=interleaved` and `compare --run`. [`Ctx::interleaved`] gives
    /// the trials back in the order they ran, for
    /// [`verdict::judge_alternating`]. Fixed trials: outside the budget
    /// (`--trials` does not apply).
    pub fn alternate(
        &mut self,
        a: (&str, &[String]),
        b: (&str, &[String]),
        pairs: usize,
    ) -> Result<(), Stop> {
        for _ in 0..pairs {
            for (name, args) in [a, b] {
                let one = vec!["--trials=1".to_string()];
                self.run_into(name, args, one, false, &mut crate::runner::NoHooks)?;
            }
        }
        Ok(())
    }

    /// Metric `k` of two cells that [`Ctx::alternate`] ran, in the order
    /// the trials ran (a₁ b₁ a₂ b₂ …); `None` when a run is missing a value.
    pub fn interleaved(&self, a: &str, b: &str, k: usize) -> Option<Vec<f64>> {
        // One value per run (a run without one: `None`), so that a missing
        // value cannot shift the pairs.
        let per_run = |name: &str| -> Option<Vec<f64>> {
            self.get(name)?
                .runs
                .iter()
                .map(|r| {
                    let mut s = crate::experiment::samples::SideSamples::default();
                    s.add(r);
                    let v = s.jobs.first()?.column(k);
                    (v.len() == 1).then(|| v[0])
                })
                .collect()
        };
        let (va, vb) = (per_run(a)?, per_run(b)?);
        if va.len() != vb.len() || va.is_empty() {
            return None;
        }
        Some(va.iter().zip(&vb).flat_map(|(x, y)| [*x, *y]).collect())
    }

    /// One run of cell `name` with the trial arguments `trials` (`auto`:
    /// inside the budget), appended to the cell (made on its first run).
    fn run_into(
        &mut self,
        name: &str,
        args: &[String],
        trials: Vec<String>,
        auto: bool,
        hooks: &mut dyn crate::runner::TrialHooks,
    ) -> Result<(), Stop> {
        stop_check()?;
        let mut full: Vec<String> = args.to_vec();
        // A cell of fixed trials is outside the budget (`plan`'s `fixed_s`):
        // the time it takes moves the deadline.
        let started = std::time::Instant::now();
        full.extend(trials);
        if self.profile && !args.iter().any(|a| a.starts_with("--profile")) {
            full.push("--profile=1".into());
        }
        full.push("--eta=never".into());
        full.push("--output-format=json".into());
        eprintln!("[recipe · {name}] dioscope {}", full.join(" "));
        let plan =
            crate::job::parse_args(&full).map_err(|e| Stop::Failed(format!("cell {name}: {e}")))?;
        let res = crate::pipeline::prepare(&plan)
            .map_err(|(msg, code)| {
                crate::console::eprint_err(&msg);
                code
            })
            .and_then(|(resolved, table)| {
                crate::pipeline::run_prepared(&plan, resolved, table, false, hooks)
            });
        let done = match res {
            Err(c) if c >= 128 => return Err(Stop::Interrupted),
            Err(_) => {
                return Err(Stop::Failed(format!(
                    "cell {name}: the run could not start"
                )))
            }
            Ok(d) => d,
        };
        if let Some(b) = self.budget.as_mut() {
            if !auto {
                b.deadline += started.elapsed();
            } else if let Some(n) = done.doc.dioscope_job(0).map(|j| j.trials.len()) {
                b.per_trial_s = Some(started.elapsed().as_secs_f64() / n.max(1) as f64);
            }
        }
        if done.result.interrupted || dioscope_sys::signal::stop_count() > 0 {
            return Err(Stop::Interrupted);
        }
        let mut doc = done.doc;
        if let Some(d) = doc.dioscope.as_mut() {
            let _ = d.set_section(
                "scratch",
                serde_json::to_value(&self.geometry).unwrap_or_default(),
            );
        }
        let errors = done.result.io_errors();
        let wall_s = started.elapsed().as_secs_f64();
        let in_trials: f64 = done
            .result
            .phases
            .iter()
            .flat_map(|g| g.trials.iter())
            .map(|t| t.wall_ns as f64 / 1e9)
            .sum();
        self.record(name, doc, errors, wall_s, in_trials.min(wall_s));
        if errors > 0 {
            return Err(Stop::Failed(format!("cell {name}: {errors} I/O error(s)")));
        }
        Ok(())
    }

    /// Append a run to cell `name` (a new cell on its first run).
    fn record(
        &mut self,
        name: &str,
        doc: crate::results::RunDoc,
        errors: u64,
        wall_s: f64,
        trials_s: f64,
    ) {
        let index = match self.sweep.cells.iter().position(|c| c.values[0] == name) {
            Some(i) => i,
            None => {
                self.sweep.axes[0].values.push(name.to_string());
                let index = self.sweep.cells.len();
                self.sweep.cells.push(SweepCell {
                    index,
                    values: vec![name.to_string()],
                    status: CellStatus::Done,
                    error: None,
                    runs: Vec::new(),
                    wall_s: 0.0,
                    trials_s: 0.0,
                });
                index
            }
        };
        let c = &mut self.sweep.cells[index];
        c.runs.push(doc);
        c.wall_s += wall_s;
        c.trials_s += trials_s;
        if errors > 0 {
            c.status = CellStatus::Failed;
            c.error = Some(format!("{errors} I/O error(s)"));
        }
    }

    pub fn get(&self, name: &str) -> Option<&SweepCell> {
        self.sweep.cells.iter().find(|c| c.values[0] == name)
    }

    /// Metric `k` of cell `name` (first job): mean and 95 % CI half-width.
    pub fn stat(&self, name: &str, k: usize) -> Option<CellStat> {
        self.get(name).and_then(|c| cell_stat(c, None, k))
    }

    /// Bytes per I/O of a cell (bandwidth ÷ IOPS).
    pub fn bytes_per_io(&self, name: &str) -> Option<f64> {
        let bw = self.stat(name, M::BW)?.mean;
        let iops = self.stat(name, M::IOPS)?.mean;
        (iops > 0.0).then(|| bw / iops)
    }

    /// Metric `k` of cell `name` (first job), one value per trial.
    pub fn trial_values(&self, name: &str, k: usize) -> Vec<f64> {
        self.get(name)
            .and_then(|c| c.samples().jobs.first().map(|j| j.column(k)))
            .unwrap_or_default()
    }

    /// Cell `b` against cell `a` in metric `k` as `compare` judges it
    /// ([`verdict::judge_trials`]).
    pub fn change(
        &self,
        a: &str,
        b: &str,
        k: usize,
    ) -> Option<crate::experiment::sequential::Judged> {
        verdict::judge_trials(&self.trial_values(a, k), &self.trial_values(b, k))
    }

    /// The evidence for the rule: `b` (the effect side) against `a` (the
    /// baseline) in metric `k`; the interference the baseline's findings
    /// show (page cache, other openers, other device I/O: the effect side
    /// may carry the effect itself, a cached page for instance) and the CPU
    /// contention of either; this run's control.
    pub fn evidence(&self, metric: &str, a: &str, b: &str, k: usize, size_pct: f64) -> Evidence {
        let (contaminated, mut contention) = verdict::interference(&self.findings(a));
        contention.extend(verdict::interference(&self.findings(b)).1);
        contention.dedup();
        Evidence {
            metric: metric.into(),
            change: self.change(a, b, k),
            size_pct,
            masked: None,
            contaminated,
            contention,
            control: self.control_state.clone(),
        }
    }

    /// The evidence of a positive control's cells: as [`Ctx::evidence`],
    /// but a control has no control of its own, and the contention its
    /// plant raises is the effect it plants, not a confound.
    pub fn control_evidence(
        &self,
        metric: &str,
        a: &str,
        b: &str,
        k: usize,
        size_pct: f64,
    ) -> Evidence {
        let mut e = self.evidence(metric, a, b, k, size_pct);
        e.control = Control::NotRun;
        e.contention.clear();
        e
    }

    /// Findings of a cell (kinds).
    pub fn findings(&self, name: &str) -> Vec<String> {
        self.get(name).map(|c| c.findings()).unwrap_or_default()
    }
}

/// Stop before the next step once a stop signal came.
pub fn stop_check() -> Result<(), Stop> {
    if dioscope_sys::signal::stop_count() > 0 {
        Err(Stop::Interrupted)
    } else {
        Ok(())
    }
}

/// `mean ± σ` of a statistic scaled by `f`, with `d` decimals (σ the
/// standard deviation over the trials, the convention of every output; one
/// trial: the value alone). [`Ctx::apart`] decides whether two cells differ.
pub fn pm(s: Option<CellStat>, f: f64, d: usize) -> String {
    match s {
        Some(s) => match s.sigma() {
            Some(sd) => format!("{:.d$} ± {:.d$}", s.mean * f, sd * f),
            None => format!("{:.d$}", s.mean * f),
        },
        None => "—".into(),
    }
}

/// A derived value `g(mean)` with its σ carried by the relative σ (first
/// order: good for the small spreads of trials).
pub fn derived(s: Option<CellStat>, g: impl Fn(f64) -> f64, d: usize) -> String {
    match s {
        Some(s) if s.mean != 0.0 => {
            let v = g(s.mean);
            match s.sigma() {
                Some(sd) => format!("{v:.d$} ± {:.d$}", (v * sd / s.mean).abs()),
                None => format!("{v:.d$}"),
            }
        }
        _ => "—".into(),
    }
}

/// Memory in use now (% of MemTotal, MemAvailable-based, as `sar -r`'s
/// %memused without buffers and cache).
pub fn mem_used_pct() -> f64 {
    let t = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let get = |k: &str| -> f64 {
        t.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let total = get("MemTotal:");
    if total == 0.0 {
        return 0.0;
    }
    (total - get("MemAvailable:")) / total * 100.0
}

/// `--name=N --opt=v…` from pairs.
pub fn job(name: &str, opts: &[(&str, String)]) -> Vec<String> {
    let mut v = vec![format!("--name={name}")];
    v.extend(opts.iter().map(|(k, x)| format!("--{k}={x}")));
    v
}

/// The CPUs this process may run on.
pub fn cpus() -> usize {
    dioscope_sys::proc::ncpus().max(1)
}

/// The kernel release (`uname -r`).
pub fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The whole JSON result: the sweep plus the `recipe` section.
pub fn result_json(recipe: &Recipe, ctx: &Ctx, out: &Outcome, interrupted: bool) -> String {
    let mut s = ctx.sweep.clone();
    s.account(ctx.started.elapsed().as_secs_f64(), 0.0);
    s.interrupted = interrupted;
    s.complete = !interrupted;
    let mut v = serde_json::to_value(&s).unwrap_or_default();
    v["recipe"] = serde_json::json!({
        "name": recipe.name,
        "seed": recipe.seed,
        "reproduces": recipe.reproduces,
        "quick": ctx.quick,
        "kernel": kernel(),
        "cpus": cpus(),
        "geometry": ctx.geometry,
        "tables": out.tables,
        "verdict": out.verdict,
        "verdict_text": out.verdict_text,
        "effect_pct": out.effect_pct,
        "interval_pct": out.interval_pct,
        "control": ctx.control,
        "control_verdict": out.control_verdict,
        "control_text": out.control_text,
        "seed_reported": out.seed_reported,
        "notes": out.notes,
        "extra": ctx.extra,
    });
    let mut t = serde_json::to_string_pretty(&v).unwrap_or_default();
    t.push('\n');
    t
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    /// However little of a full run's budget is left, a cell gets the
    /// trials the verdict needs (4 a side), never fewer.
    #[test]
    fn a_tight_budget_still_gives_the_verdict_its_trials() {
        let mut ctx = Ctx::new("x", false, "");
        // Nothing left for 10 auto cells.
        ctx.plan(10, FULL_BUDGET_S);
        let (v, auto) = ctx.budget_args("--trials=auto".into());
        assert!(auto);
        assert_eq!(v, vec![format!("--trials={MIN_TRIALS}")]);
        // The first cell, its trials' cost unknown, with a 15 s share.
        ctx.plan(10, 0);
        let (v, _) = ctx.budget_args("--trials=auto".into());
        assert_eq!(v, vec![format!("--trials={MIN_TRIALS}")]);
        // Room, but a trial costs more than the share can hold 4.5 times.
        ctx.plan(1, 0);
        ctx.budget.as_mut().unwrap().per_trial_s = Some(40.0);
        let (v, _) = ctx.budget_args("--trials=auto".into());
        assert_eq!(v, vec![format!("--trials={MIN_TRIALS}")]);
        // Room for many: auto within the share, at least MIN_TRIALS.
        ctx.plan(1, 0);
        ctx.budget.as_mut().unwrap().per_trial_s = Some(30.0);
        let (v, _) = ctx.budget_args("--trials=auto".into());
        let n: u32 = v
            .iter()
            .find_map(|a| a.strip_prefix("--max-trials="))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no --max-trials: {v:?}"));
        assert!((MIN_TRIALS..=5).contains(&n), "{v:?}");
        assert!(v.contains(&"--trials=auto".to_string()), "{v:?}");
        // A fixed count is the recipe's own.
        let (v, auto) = ctx.budget_args("--trials=16".into());
        assert!(!auto);
        assert_eq!(v, vec!["--trials=16".to_string()]);
    }
}
