//! A comparison as Markdown, for a pull request or a mailing-list post.

use super::compare_text::{environment_lines, legend, outcome_line, row, HEADER};
use super::Exporter;
use crate::experiment::compare::Comparison;

pub struct CompareMarkdown;

impl Exporter<Comparison> for CompareMarkdown {
    fn render(&self, c: &Comparison) -> String {
        let mut out = format!(
            "### dioscope compare\n\n**A**: {} ({} trials) · **B**: {} ({} trials)\n\n",
            c.a.files.join(" "),
            c.a.trials,
            c.b.files.join(" "),
            c.b.trials
        );
        out.push_str(&format!("**{}**\n\n", outcome_line(c)));
        if !c.differences.is_empty() {
            out.push_str("| differs | A | B | named |\n|---|---|---|---|\n");
            for d in &c.differences {
                out.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    d.what,
                    d.a,
                    d.b,
                    if d.expected { "yes" } else { "**no**" }
                ));
            }
            out.push('\n');
        }
        if !c.environment.is_empty() {
            out.push_str("Environment (findings per side, trials they touched):\n\n");
            for l in environment_lines(c) {
                out.push_str(&format!("- `{l}`\n"));
            }
            out.push('\n');
        }
        for j in &c.jobs {
            out.push_str(&format!("#### job `{}` (group {})\n\n", j.name, j.group));
            out.push_str(&format!("| {} |\n", HEADER.join(" | ")));
            out.push_str("|---|---:|---:|---:|---:|---|\n");
            for m in &j.metrics {
                out.push_str(&format!("| {} |\n", row(m).join(" | ")));
            }
            out.push('\n');
        }
        out.push_str(&format!("\\{}\n", legend(c)));
        for n in &c.notes {
            out.push_str(&format!("\n> {n}\n"));
        }
        if let Some(p) = &c.profile {
            out.push_str(&crate::profile::compare::render_markdown(p));
        }
        if let Some(st) = &c.stages {
            out.push_str("\n```\n");
            out.push_str(crate::results::stages::render_compare_text(st).trim_start());
            out.push_str("```\n");
        }
        out
    }
}
