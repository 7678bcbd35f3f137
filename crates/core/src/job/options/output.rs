//! Options about units and how a job is described and reported:
//! `description`, `kb_base`, `unit_base`, `unified_rw_reporting`.

use super::*;

/// `unified_rw_reporting`: how the fio-format outputs show the directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnifiedRw {
    /// Read, write and trim apart (`none`, `0`).
    #[default]
    None,
    /// One `mixed` direction summing them, in their place (`mixed`, `1`).
    Mixed,
    /// The three apart, then `mixed` (`both`, `2`).
    Both,
}

pub(super) static OUTPUT: &[OptDef] = &[
    OptDef {
        name: "description",
        aliases: &[],
        kind: Kind::Str,
        creates: Creates::Nothing,
        default: None,
        range: None,
        category: Category::Jobs,
        example: "4k random reads at QD32",
        help: "Free text about the job, shown in the result (JSON desc, the terse line)",
        apply: job!(|j, v| {
            j.description = opt_str(v);
            Ok(())
        }),
    },
    OptDef {
        name: "kb_base",
        aliases: &[],
        kind: Kind::Choice(&["1024", "1000"]),
        creates: Creates::Nothing,
        default: Some("1024"),
        range: None,
        category: Category::Output,
        example: "1000",
        help: "Unit prefixes of the job's sizes: 1024 (fio's default: 4k = 4096, 4KiB = 4000) \
               or 1000 (SI: 4k = 4000, 4KiB = 4096)",
        // Read where the job's sizes are parsed (parse.rs, with_kb_base),
        // wherever in the job it is given; here it is checked.
        apply: job!(|_, v| match v.trim() {
            "1024" | "1000" => Ok(()),
            o => Err(format!("'{o}' is not 1024 or 1000")),
        }),
    },
    OptDef {
        name: "unit_base",
        aliases: &[],
        kind: Kind::Choice(&["0", "8", "1"]),
        creates: Creates::Nothing,
        default: Some("0"),
        range: None,
        category: Category::Output,
        example: "8",
        help: "Units of the reports: 0 (auto) and 8 are bytes, what dioscope reports; \
               1 (bits) is not supported",
        apply: job!(|_, v| match v.trim() {
            "0" | "8" => Ok(()),
            "1" => Err(
                "bit-based reports are not supported by dioscope (it reports bytes: unit_base=8)"
                    .into()
            ),
            o => Err(format!("'{o}' is not 0, 8 or 1")),
        }),
    },
    OptDef {
        name: "unified_rw_reporting",
        aliases: &[],
        kind: Kind::Choice(&["none", "0", "mixed", "1", "both", "2"]),
        creates: Creates::Nothing,
        default: Some("none"),
        range: None,
        category: Category::Output,
        example: "mixed",
        help: "How fio's outputs (JSON, terse, text) show the directions: none (0) reads, \
               writes and trims apart; mixed (1) one \"mixed\" direction summing them, in \
               their place; both (2) apart, then mixed",
        apply: job!(|j, v| {
            j.unified_rw = match v.trim() {
                "none" | "0" => UnifiedRw::None,
                "mixed" | "1" => UnifiedRw::Mixed,
                "both" | "2" => UnifiedRw::Both,
                o => return Err(format!("'{o}' is not none, mixed or both (0, 1, 2)")),
            };
            Ok(())
        }),
    },
];
