//! A sweep as CSV: one row per cell and job; the varied options, then per
//! metric its mean, 95 % CI bounds and trials, then the findings.

use super::Exporter;
use crate::experiment::samples::METRICS;
use crate::experiment::sweep::{cell_stat, CellStatus, Sweep};

pub struct SweepCsv;

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Exporter<Sweep> for SweepCsv {
    fn render(&self, s: &Sweep) -> String {
        let mut h: Vec<String> = s.axes.iter().map(|a| field(&a.option)).collect();
        h.extend(["job", "status"].map(String::from));
        for m in METRICS {
            for suffix in ["mean", "ci_low", "ci_high", "n"] {
                h.push(format!("{}_{suffix}", m.key));
            }
        }
        h.push("findings".into());
        let mut out = h.join(",") + "\n";
        for c in &s.cells {
            let samples = c.samples();
            let names: Vec<String> = if samples.jobs.is_empty() {
                vec![String::new()]
            } else {
                samples.jobs.iter().map(|j| j.name.clone()).collect()
            };
            for job in names {
                let mut r: Vec<String> = c.values.iter().map(|v| field(v)).collect();
                r.push(field(&job));
                r.push(
                    match c.status {
                        CellStatus::Done => "done",
                        CellStatus::Failed => "failed",
                        CellStatus::Pending => "pending",
                    }
                    .into(),
                );
                for k in 0..METRICS.len() {
                    match cell_stat(c, Some(&job), k) {
                        Some(st) => r.extend([
                            format!("{}", st.mean),
                            format!("{}", st.mean - st.half),
                            format!("{}", st.mean + st.half),
                            st.n.to_string(),
                        ]),
                        None => r.extend(std::iter::repeat_n(String::new(), 4)),
                    }
                }
                r.push(field(&c.findings().join(" ")));
                out.push_str(&(r.join(",") + "\n"));
            }
        }
        out
    }
}
