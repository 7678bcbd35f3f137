//! A test-only finding: docs/ARCHITECTURE.md's "Add a finding", registered
//! through `findings!` like every finding (under `cfg(test)`). The
//! test-only check `checks/example_check.rs` produces it after a run whose
//! job is named `planted-example`.

use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Describe, Severity};

/// A job named `planted-example` ran: the condition a test plants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExampleFinding {
    pub job: String,
}

impl Describe for ExampleFinding {
    fn severity(&self) -> Severity {
        Severity::Info
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "job {} has the name a test plants to see the findings table at work; \
             its numbers are as good as without it. Use another name= for no finding.",
            self.job
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> super::Finding {
    ExampleFinding { job: "j".into() }.into()
}

#[cfg(test)]
mod tests {
    /// docs/ARCHITECTURE.md's "Add a finding": this file and its line in
    /// `findings!` make a finding that the run's findings pass reports
    /// (through the test-only check that plants it), that every format
    /// renders, whose JSON reads back, and that the text rules of
    /// findings/mod.rs hold (its `example()` is among theirs).
    #[test]
    fn adding_a_finding_is_one_file_and_one_line() {
        assert!(super::super::CODES.contains(&"example_finding"));
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (name, found) in [("planted-example", true), ("other", false)] {
            let (plan, formats) = crate::pipeline::validate(&a(&[
                &format!("--name={name}"),
                "--ioengine=null",
                "--size=1m",
                "--output-format=normal,json",
            ]))
            .unwrap();
            let done = crate::pipeline::execute(&plan).unwrap_or_else(|c| panic!("exit {c}"));
            let findings = &done.doc.dioscope.as_ref().unwrap().findings;
            let kinds: Vec<&str> = findings.iter().map(|f| f.kind()).collect();
            assert_eq!(kinds.contains(&"example_finding"), found, "{kinds:?}");
            let out = formats.render(&done.doc);
            assert_eq!(out.contains("the findings table at work"), found, "{out}");
            if found {
                let json = done.doc.to_json(false);
                let back = crate::results::RunDoc::from_json(&json).unwrap();
                assert_eq!(&back.dioscope.unwrap().findings, findings);
            }
        }
    }

    /// The recipe's files are what this finding took.
    #[test]
    fn the_finding_recipe_lists_what_this_finding_took() {
        crate::recipe_check::recipe_took("Add a finding", "my_finding", "example_finding");
    }
}
