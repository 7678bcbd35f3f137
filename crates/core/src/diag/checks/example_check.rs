//! A test-only check: docs/ARCHITECTURE.md's "Add a check", registered
//! through `checks!` like every check (under `cfg(test)`). After a run it
//! reports the test-only finding `ExampleFinding` for each job named
//! `planted-example`; it has no doctor side.

use super::{CheckDef, RunCtx};
use crate::diag::findings::{ExampleFinding, Finding};

pub const CHECK: CheckDef = CheckDef {
    name: "example",
    doctor: None,
    after_run: Some(after_run),
};

fn after_run(ctx: &RunCtx) -> Vec<Finding> {
    ctx.result
        .jobs
        .iter()
        .filter(|j| j.resolved.spec.name == "planted-example")
        .map(|j| {
            ExampleFinding {
                job: j.resolved.spec.name.clone(),
            }
            .into()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// The recipe's files are what this check took (the finding's test
    /// runs it through the run's findings pass).
    #[test]
    fn the_check_recipe_lists_what_this_check_took() {
        crate::recipe_check::recipe_took("Add a check", "my_check", "example_check");
    }
}
