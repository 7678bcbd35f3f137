//! A sweep as tables shaped like seed 002: with `--pivot ROW,COL` one
//! table per job (and per combination of the other varied options), rows
//! and columns the two options' values, each cell `mean ± σ [95 % CI low,
//! high] (n)` per metric (one trial: the value alone) and its findings
//! count; without a pivot one row per cell.

use super::Exporter;
use crate::experiment::samples::{metric_index, METRICS};
use crate::experiment::show;
use crate::experiment::sweep::{cell_stat, job_names, CellStat, CellStatus, Sweep, SweepCell};

pub struct SweepText;

/// The metrics the table shows (IOPS and bandwidth unless chosen).
pub fn table_metrics(s: &Sweep) -> Vec<usize> {
    let v: Vec<usize> = s
        .table_metrics
        .iter()
        .filter_map(|k| metric_index(k))
        .collect();
    if v.is_empty() {
        vec![0, 1]
    } else {
        v
    }
}

/// `mean ± σ [low, high] (n)` of a cell's statistic in unit `u` (the
/// interval is the 95 % CI of the mean); `mean (1)` for one trial.
fn stat_text(u: &str, st: &CellStat) -> String {
    match st.sigma() {
        Some(sd) => format!(
            "{} ± {} [{}, {}] ({})",
            show(u, st.mean),
            show(u, sd),
            show(u, st.mean - st.half),
            show(u, st.mean + st.half),
            st.n
        ),
        None => format!("{} ({})", show(u, st.mean), st.n),
    }
}

/// [`stat_text`] of metric `k`, with the findings count.
fn cell_text(c: &SweepCell, job: &str, ks: &[usize]) -> String {
    match c.status {
        CellStatus::Pending => return "(not run)".into(),
        CellStatus::Failed => return "FAILED".into(),
        CellStatus::Done => {}
    }
    let mut parts: Vec<String> = ks
        .iter()
        .map(|&k| match cell_stat(c, Some(job), k) {
            Some(st) => stat_text(METRICS[k].unit, &st),
            None => "-".into(),
        })
        .collect();
    let f = c.findings().len();
    if f > 0 {
        parts.push(format!("[{f} finding{}]", if f == 1 { "" } else { "s" }));
    }
    parts.join(" · ")
}

fn grid(rows: &[Vec<String>]) -> String {
    let ncol = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let mut w = vec![0usize; ncol];
    for r in rows {
        for (i, x) in r.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::from(" ");
        for (i, x) in r.iter().enumerate() {
            line.push_str(&format!(" {x}{}  ", " ".repeat(w[i] - x.chars().count())));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

impl Exporter<Sweep> for SweepText {
    fn render(&self, s: &Sweep) -> String {
        let ks = table_metrics(s);
        let mut out = header(s, &ks);
        let axis = |name: &str| s.axes.iter().position(|a| a.option == name);
        for job in &job_names(s) {
            match s
                .pivot
                .as_ref()
                .and_then(|(r, c)| Some((axis(r)?, axis(c)?)))
            {
                Some((ri, ci)) => out.push_str(&pivot_tables(s, job, &ks, ri, ci)),
                None => out.push_str(&flat_table(s, job, &ks)),
            }
        }
        out.push_str(&cell_errors(s));
        out.push_str("\nmean ± σ [95 % CI low, high] (trials; one trial: no spread, no interval); [n findings]: see the cell's result in the JSON\n");
        out
    }
}

/// The sweep's two first lines: its arguments, cells, order and trials;
/// the metrics shown and the time spent.
fn header(s: &Sweep, ks: &[usize]) -> String {
    let done = s
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Done)
        .count();
    let mut out = format!(
        "dioscope sweep {}: {} cells ({} done{}), order {}, trials {}\n",
        s.base_args.join(" "),
        s.cells.len(),
        done,
        if s.interrupted {
            ", interrupted: resume with --resume"
        } else {
            ""
        },
        s.order.word(),
        if s.trials.is_empty() {
            "as in the job"
        } else {
            &s.trials
        }
    );
    out.push_str(&format!(
        "cells: {} · wall {:.1} s, between cells {:.2} s ({:.1} %)\n",
        ks.iter()
            .map(|&k| METRICS[k].label)
            .collect::<Vec<_>>()
            .join(" · "),
        s.wall_s,
        s.overhead_s,
        s.overhead_pct
    ));
    out
}

/// `--pivot=ROW,COL`: one table of `job` per combination of the other axes.
fn pivot_tables(s: &Sweep, job: &str, ks: &[usize], ri: usize, ci: usize) -> String {
    let others: Vec<usize> = (0..s.axes.len()).filter(|&i| i != ri && i != ci).collect();
    let mut combos: Vec<Vec<String>> = Vec::new();
    for c in &s.cells {
        let key: Vec<String> = others.iter().map(|&i| c.values[i].clone()).collect();
        if !combos.contains(&key) {
            combos.push(key);
        }
    }
    let mut out = String::new();
    for key in combos {
        let label: Vec<String> = others
            .iter()
            .zip(&key)
            .map(|(&i, v)| format!("{}={v}", s.axes[i].option))
            .collect();
        out.push_str(&format!(
            "\nJob '{job}'{}\n",
            if label.is_empty() {
                String::new()
            } else {
                format!(", {}", label.join(" "))
            }
        ));
        out.push_str(&pivot_grid(s, job, ks, (ri, ci), (&others, &key)));
    }
    out
}

/// One pivot table: rows are the values of axis `ri`, columns those of
/// `ci`, over the cells whose `others` axes have the values `key`.
fn pivot_grid(
    s: &Sweep,
    job: &str,
    ks: &[usize],
    (ri, ci): (usize, usize),
    (others, key): (&[usize], &[String]),
) -> String {
    let mut rows = vec![{
        let mut h = vec![format!("{} \\ {}", s.axes[ri].option, s.axes[ci].option)];
        h.extend(s.axes[ci].values.iter().cloned());
        h
    }];
    for rv in &s.axes[ri].values {
        let mut row = vec![rv.clone()];
        for cv in &s.axes[ci].values {
            let cell = s.cells.iter().find(|c| {
                &c.values[ri] == rv
                    && &c.values[ci] == cv
                    && others.iter().zip(key).all(|(&i, v)| &c.values[i] == v)
            });
            row.push(cell.map(|c| cell_text(c, job, ks)).unwrap_or_default());
        }
        rows.push(row);
    }
    grid(&rows)
}

/// Without a pivot: one row per cell, its axis values then `job`'s result.
fn flat_table(s: &Sweep, job: &str, ks: &[usize]) -> String {
    let mut out = format!("\nJob '{job}'\n");
    let mut h: Vec<String> = s.axes.iter().map(|a| a.option.clone()).collect();
    h.push("result".into());
    let mut rows = vec![h];
    for c in &s.cells {
        let mut r = c.values.clone();
        r.push(cell_text(c, job, ks));
        rows.push(r);
    }
    out.push_str(&grid(&rows));
    out
}

/// One line per cell that failed: its values and the error.
fn cell_errors(s: &Sweep) -> String {
    s.cells
        .iter()
        .filter(|c| c.error.is_some())
        .map(|c| {
            format!(
                "cell {}: {}\n",
                c.values.join(" "),
                c.error.as_deref().unwrap_or("")
            )
        })
        .collect()
}
