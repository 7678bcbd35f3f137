//! The report's `--stages` sections: one run's latency by stage (a stacked
//! bar of each direction's stage contributions, the stages' percentiles in
//! a table) and a comparison's stage changes (A and B bars, a table of
//! B − A). Chart ids: `P-stages-chart`, `ID-stages-chart`.

use crate::results::stages::{StageDirection, StagesComparison, StagesResult, LATENCY_ROW};
use crate::svg::{self, esc, ns, BarRow};
use std::fmt::Write;

/// A direction's stages as bar parts (palette index by stage position);
/// stages of zero or less (a mean difference can be) are left out of the
/// bar and named.
fn parts(d: &StageDirection) -> (Vec<(String, f64, usize)>, Vec<String>) {
    let mut out = Vec::new();
    let mut negative = Vec::new();
    for (i, st) in d.stages.iter().enumerate() {
        match st.contribution_ns {
            Some(c) if c > 0.0 => out.push((st.name.clone(), c, i)),
            Some(c) if c < 0.0 => negative.push(format!("{} {}", st.name, ns(c))),
            _ => {}
        }
    }
    (out, negative)
}

fn negatives_note(o: &mut String, negative: &[String]) {
    if !negative.is_empty() {
        let _ = write!(
            o,
            "<p class=\"muted\">Left out of the bars (a mean difference below zero: the two \
             clocks it subtracts disagree by that much): {}.</p>",
            esc(&negative.join(", "))
        );
    }
}

/// One run's section (nothing when the run has no stages section).
pub fn run_section(o: &mut String, p: &str, st: Option<&StagesResult>) {
    let Some(st) = st else {
        return;
    };
    let _ = write!(o, "<h2 id=\"{p}-stages\">Latency by stage</h2>");
    if st.status != "measured" {
        let _ = write!(
            o,
            "<p class=\"muted\">Not measured: {}{}</p>",
            esc(st.message.as_deref().unwrap_or("no reason given")),
            st.fix
                .as_deref()
                .map(|f| format!("; {}", esc(f)))
                .unwrap_or_default()
        );
        return;
    }
    let _ = write!(
        o,
        "<p class=\"muted\">traced: {}; {}. Block layer: {} merges, {} splits of this run's bios.</p>",
        esc(&st.devices.join(", ")),
        esc(&st.window),
        st.merges,
        st.splits
    );
    if st.sample_every > 1 {
        let _ = write!(
            o,
            "<p class=\"muted\">Stages from one I/O in {} (every I/O counted); ± is the 95 % \
             interval of that sampling (--stages_sample=1 follows all).</p>",
            st.sample_every
        );
    }
    let mut rows = Vec::new();
    let mut negative = Vec::new();
    for d in &st.directions {
        let (p, n) = parts(d);
        rows.push(BarRow {
            name: format!("{} (mean {})", d.direction, ns(d.dioscope_lat_mean_ns)),
            parts: p,
        });
        negative.extend(n.into_iter().map(|x| format!("{}: {x}", d.direction)));
    }
    o.push_str(&svg::bars(
        &format!("{p}-stages-chart"),
        "Where the mean latency went, stage by stage",
        "contribution to the mean latency",
        ns,
        &rows,
    ));
    negatives_note(o, &negative);
    for d in &st.directions {
        direction_table(o, p, d);
    }
}

/// The percentiles a stage table shows, of those the run measured.
const SHOWN: [f64; 5] = [1.0, 50.0, 90.0, 99.0, 99.9];

/// A direction's stages: span, how, I/Os, mean, contribution and every
/// percentile.
fn direction_table(o: &mut String, p: &str, d: &StageDirection) {
    let qs: Vec<f64> = d
        .stages
        .iter()
        .chain(std::iter::once(&d.traced_total))
        .find(|s| !s.percentiles.is_empty())
        .map(|s| s.percentiles.iter().map(|x| x.0).collect())
        .unwrap_or_default();
    // The table shows the middle and the tail (the JSON has the whole list).
    let shown: Vec<f64> = qs.iter().copied().filter(|q| SHOWN.contains(q)).collect();
    let qs = if shown.is_empty() { qs } else { shown };
    let _ = write!(
        o,
        "<h3>{}: {} I/Os traced (dioscope counted {}), {} other I/Os on the device, {} punted to io-wq</h3>\
         <table id=\"{p}-stages-{}\"><tr><th class=\"l\">stage</th><th class=\"l\">span</th><th class=\"l\">how</th><th>I/Os</th><th>mean</th><th>contribution</th>",
        esc(&d.direction),
        d.tagged_ios,
        d.dioscope_ios,
        d.other_device_ios,
        d.punted_io_wq,
        esc(&d.direction)
    );
    for q in &qs {
        let _ = write!(o, "<th>p{q}</th>");
    }
    o.push_str("</tr>");
    for st in std::iter::once(&d.traced_total).chain(&d.stages) {
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&st.name),
            esc(&st.span),
            esc(&st.how),
            st.ios,
            st.mean_ns.map_or("–".into(), ns),
            st.contribution_ns.map_or("–".into(), |c| match st.sampling_ci95_ns {
                Some(h) => format!("{} ± {}", ns(c), ns(h)),
                None => ns(c),
            }),
        );
        for q in &qs {
            let v = st.percentiles.iter().find(|x| x.0 == *q).map(|x| x.1);
            let _ = write!(o, "<td>{}</td>", v.map_or("–".into(), ns));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
    if let Some(n) = d.bytes_line() {
        let _ = write!(o, "<p class=\"muted\">{}.</p>", esc(&n));
    }
    if let Some(n) = d.device_coverage_note() {
        let _ = write!(o, "<p class=\"muted\">Note: {}.</p>", esc(&n));
    }
}

/// A comparison's stage changes: A's and B's bars per direction, and the
/// table of B − A.
pub fn comparison(o: &mut String, c: &StagesComparison, id: &str) {
    let _ = write!(
        o,
        "<section id=\"{id}-stages\"><h2>Latency by stage: B against A (--stages)</h2>\
         <p class=\"muted\">{}</p>",
        esc(&c.note)
    );
    let mut dirs: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !dirs.contains(&r.direction.as_str()) {
            dirs.push(&r.direction);
        }
    }
    let mut rows = Vec::new();
    for dir in &dirs {
        for (side, pick) in [("A", 0usize), ("B", 1)] {
            let parts = c
                .rows
                .iter()
                .filter(|r| r.direction == *dir && r.stage != LATENCY_ROW)
                .filter(|r| r.stage != "traced total")
                .enumerate()
                .filter_map(|(i, r)| {
                    let v = if pick == 0 { r.a_ns } else { r.b_ns }?;
                    (v > 0.0).then(|| (r.stage.clone(), v, i))
                })
                .collect();
            rows.push(BarRow {
                name: format!("{side} {dir}"),
                parts,
            });
        }
    }
    o.push_str(&svg::bars(
        &format!("{id}-stages-chart"),
        "Stage contributions to the mean latency, A and B",
        "contribution to the mean latency",
        ns,
        &rows,
    ));
    let _ = write!(
        o,
        "<table id=\"{id}-stages-table\"><tr><th class=\"l\">direction</th><th class=\"l\">stage</th><th>A</th><th>B</th><th>B − A</th><th>change</th><th class=\"l\">runs' range</th></tr>"
    );
    for r in &c.rows {
        let range = |side: &str, x: Option<(f64, f64)>| {
            x.map(|(lo, hi)| format!("{side} {} – {} ", ns(lo), ns(hi)))
                .unwrap_or_default()
        };
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(&r.direction),
            esc(&r.stage),
            r.a_ns.map_or("–".into(), ns),
            r.b_ns.map_or("–".into(), ns),
            r.delta_ns().map_or("–".into(), |d| format!("{}{}", if d >= 0.0 { "+" } else { "" }, ns(d))),
            r.change_pct().map_or("–".into(), |p| format!("{p:+.1} %")),
            esc(&format!("{}{}", range("A", r.a_range_ns), range("B", r.b_range_ns))),
        );
    }
    o.push_str("</table></section>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::stages::{compare, Stage};

    fn result(delivery: f64) -> StagesResult {
        let st = |name: &str, c: f64| Stage {
            name: name.into(),
            span: format!("{name} span"),
            how: "measured".into(),
            ios: 10,
            mean_ns: Some(c),
            contribution_ns: Some(c),
            sampling_ci95_ns: None,
            percentiles: vec![(1.0, c / 2.0), (50.0, c), (99.0, 2.0 * c), (99.5, 3.0 * c)],
        };
        StagesResult {
            status: "measured".into(),
            devices: vec!["/dev/loop9 (request-based)".into()],
            directions: vec![StageDirection {
                direction: "read".into(),
                tagged_ios: 10,
                dioscope_ios: 10,
                dioscope_lat_mean_ns: 30_000.0 + delivery,
                traced_total: st("traced total", 30_000.0),
                stages: vec![
                    st("device", 31_000.0),
                    st("not joined per I/O", -1_000.0),
                    st("completion delivery", delivery),
                ],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_run_section_draws_positive_stages_and_names_the_negative_ones() {
        let mut o = String::new();
        run_section(&mut o, "r1", Some(&result(5_000.0)));
        assert!(o.contains("id=\"r1-stages\""), "{o}");
        assert!(o.contains("id=\"r1-stages-chart\""), "{o}");
        // The bar has device and delivery, not the negative mean difference.
        assert!(o.contains("read (mean 35.0 µs), device"), "{o}");
        assert!(
            o.contains("read (mean 35.0 µs), completion delivery"),
            "{o}"
        );
        assert!(
            !o.contains("read (mean 35.0 µs), not joined per I/O"),
            "{o}"
        );
        assert!(o.contains("Left out of the bars"), "{o}");
        // The table: the shown percentiles the run measured (not p99.5).
        assert!(
            o.contains("<th>p1</th><th>p50</th><th>p99</th></tr>"),
            "{o}"
        );
        assert!(!o.contains("p99.5"), "{o}");
        // Sampling and the tagged bytes are said when there are some.
        assert!(!o.contains("one I/O in") && !o.contains("bytes: "), "{o}");
        let mut r = result(5_000.0);
        r.sample_every = 8;
        r.directions[0].job_bytes = 4 << 20;
        r.directions[0].device_bytes = 4 << 20;
        r.directions[0].stages[0].sampling_ci95_ns = Some(1_500.0);
        let mut o = String::new();
        run_section(&mut o, "r1", Some(&r));
        assert!(o.contains("Stages from one I/O in 8"), "{o}");
        assert!(
            o.contains("bytes: this run&#39;s bios 4.0 MiB = 1.00×"),
            "{o}"
        );
        assert!(o.contains("31.0 µs ± 1.50 µs"), "{o}");
        let mut none = String::new();
        run_section(&mut none, "r1", None);
        assert!(none.is_empty());
        let mut off = String::new();
        let r = StagesResult {
            status: "unavailable".into(),
            message: Some("bpftrace is not installed".into()),
            fix: Some("apt-get install bpftrace".into()),
            ..Default::default()
        };
        run_section(&mut off, "r1", Some(&r));
        assert!(off.contains("Not measured: bpftrace is not installed; apt-get install bpftrace"));
    }

    #[test]
    fn a_comparison_shows_both_sides_and_the_change() {
        let c = compare(&[result(5_000.0)], &[result(25_000.0)]).unwrap();
        let mut o = String::new();
        comparison(&mut o, &c, "cmp");
        assert!(o.contains("id=\"cmp-stages-table\""), "{o}");
        assert!(o.contains(">A read<") || o.contains("A read"), "{o}");
        assert!(o.contains("B read"), "{o}");
        // completion delivery: 5 µs → 25 µs, +20 µs, +400 %.
        assert!(o.contains("<td>+20.0 µs</td><td>+400.0 %</td>"), "{o}");
    }
}
