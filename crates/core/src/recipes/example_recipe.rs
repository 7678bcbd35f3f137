//! A test-only recipe: docs/ARCHITECTURE.md's "Add a recipe", registered
//! through `recipes!` like every recipe (under `cfg(test)`). Its one cell
//! runs the null engine, so it needs no scratch device and no root.

use super::{job, pm, run_steps, Ctx, Recipe, Said, Steps, Stop, Table, Verdict};
use crate::experiment::samples::M;

pub const RECIPE: Recipe = Recipe {
    name: "example-recipe",
    seed: "999",
    reproduces: "the null engine's IOPS (a test of the recipe table)",
    run: run_steps::<Example>,
};

struct Example;

impl Steps for Example {
    type Setup = ();
    const SEED_REPORTED: &'static str = "nothing: a test";

    fn setup(_: &mut Ctx) -> Result<(), Stop> {
        Ok(())
    }

    fn cells(ctx: &mut Ctx, _: &()) -> Result<(), Stop> {
        let o: Vec<(&str, String)> = vec![("ioengine", "null".into()), ("size", "4m".into())];
        ctx.cell("null", &job("n", &o), "2")
    }

    fn tables(ctx: &Ctx, _: &()) -> Vec<Table> {
        let mut t = Table::new("the null engine", &["cell", "kIOPS"]);
        t.rows.push(vec!["null".into(), pm(ctx.stat("null", M::IOPS), 1e-3, 0)]);
        vec![t]
    }

    fn verdict(ctx: &Ctx, _: &()) -> Said {
        match ctx.stat("null", M::IOPS) {
            Some(s) if s.mean > 0.0 => Said::new(Verdict::Present, "the null engine ran".into()),
            _ => Said::missing(),
        }
    }

    fn control(_: &mut Ctx, _: &()) -> Result<Said, Stop> {
        Ok(Said::new(
            Verdict::Inconclusive("a test recipe has no control".into()),
            String::new(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/ARCHITECTURE.md's "Add a recipe": this file (one file) and its
    /// name in `recipes!` (one line) make a recipe that `recipe list` shows,
    /// `find` finds and that runs its steps through the run pipeline to a
    /// result document. When a recipe needs one more registration, this
    /// test fails.
    #[test]
    fn adding_a_recipe_is_one_file_and_one_line() {
        let r = super::super::find("example-recipe").expect("registered by its one line");
        assert!(super::super::RECIPES.iter().any(|x| x.name == r.name));
        let mut ctx = Ctx::new(r.name, true, "");
        let out = (r.run)(&mut ctx).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out.verdict, "PRESENT");
        assert_eq!(out.verdict_text, "the null engine ran");
        assert_eq!(out.tables[0].rows.len(), 1);
        let json = super::super::result_json(r, &ctx, &out, false);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(v.to_string().contains("example-recipe"), "{json}");
    }

    /// The recipe's files are what this recipe took.
    #[test]
    fn the_recipe_recipe_lists_what_this_recipe_took() {
        crate::recipe_check::recipe_took("Add a recipe", "my_recipe", "example_recipe");
    }
}
