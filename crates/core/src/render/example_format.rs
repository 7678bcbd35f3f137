//! A test-only run format: docs/ARCHITECTURE.md's "Add a format",
//! registered through `run_formats!` like every format (under `cfg(test)`).

use super::{Exporter, Format};
use crate::results::RunDoc;

pub const FORMAT: Format<RunDoc> = Format {
    name: "example",
    aliases: &["ex"],
    help: "each job's name and IOPS, one line each",
    exporter: &Example,
};

pub struct Example;

impl Exporter<RunDoc> for Example {
    fn render(&self, doc: &RunDoc) -> String {
        doc.jobs
            .iter()
            .map(|j| format!("{} {:.0}\n", j.jobname, j.read.iops + j.write.iops))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    /// docs/ARCHITECTURE.md's "Add a format": this file and its line in
    /// `run_formats!` make a format that `--output-format` takes (by name
    /// and alias), `--help` lists, and a run renders. When a format needs
    /// one more registration, this test fails.
    #[test]
    fn adding_a_format_is_one_file_and_one_line() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for name in ["example", "ex"] {
            let f = format!("--output-format={name}");
            let (plan, formats) =
                crate::pipeline::validate(&a(&["--name=x", "--ioengine=null", "--size=1m", &f]))
                    .unwrap();
            assert_eq!(formats.names(), ["example"]);
            let done = crate::pipeline::execute(&plan).unwrap_or_else(|c| panic!("exit {c}"));
            let text = formats.render(&done.doc);
            assert!(text.starts_with("x "), "{text}");
        }
        assert!(crate::commands::usage().contains("  example"));
    }
}
