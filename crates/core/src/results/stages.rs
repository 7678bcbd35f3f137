//! `--stages`' result (`dioscope.stages`): per direction, where the
//! latency of the run's I/Os went, stage by stage, from kernel tracepoints
//! (crate::stages fills it); plain data and its text section.

use serde::{Deserialize, Serialize};

/// The JSON key of the section.
pub const KEY: &str = "stages";

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StagesResult {
    /// `measured`, `unavailable` (a missing capability: `message`, `fix`)
    /// or `failed` (the tracer started but gave nothing usable).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// What traced the run: `raw_tracepoint` (the BPF program of
    /// stages/bpf/stages.bpf.c on raw tracepoints) or `bpftrace` (the
    /// generated bpftrace program on the classic tracepoints).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub backend: String,
    /// What was traced: which I/Os, over which time.
    #[serde(default)]
    pub window: String,
    /// The traced devices (`/dev/loop0 (request-based)`).
    #[serde(default)]
    pub devices: Vec<String>,
    /// One request in this many was followed through the stages (1: all;
    /// `--stages_sample`); `tagged_ios` and `punted_io_wq` count every one.
    #[serde(default = "one")]
    pub sample_every: u32,
    /// Block-layer merges and splits of this run's bios.
    #[serde(default)]
    pub merges: u64,
    #[serde(default)]
    pub splits: u64,
    #[serde(default)]
    pub directions: Vec<StageDirection>,
    /// Per trial, the bytes of this run's bios and of other processes'
    /// (raw backend: its counters read as each measured window opens and
    /// closes; bpftrace gives its maps once, at the end: empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trial_bytes: Vec<TrialBios>,
}

/// One trial's bios on the traced devices, tagged at `block_bio_queue`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TrialBios {
    pub group: u32,
    /// From 1, as `amplification.trials`.
    pub trial: u32,
    /// This run's bios' bytes, read and write.
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Other processes' bios' bytes meanwhile.
    pub other_read_bytes: u64,
    pub other_write_bytes: u64,
}

fn one() -> u32 {
    1
}

/// One direction's stages.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StageDirection {
    /// `read` or `write`.
    pub direction: String,
    /// This run's I/Os the tracer saw complete (tagged at submission).
    pub tagged_ios: u64,
    /// The I/Os dioscope counted (its `total_ios`).
    pub dioscope_ios: u64,
    /// Bios other processes queued on the devices meanwhile.
    pub other_device_ios: u64,
    /// I/Os io_uring handed to its io-wq workers (`io_uring_queue_async_work`).
    pub punted_io_wq: u64,
    /// Bytes of this run's bios on the devices (tagged at `block_bio_queue`,
    /// the measured windows), of the other processes' bios (whole run), and
    /// what dioscope's jobs transferred.
    #[serde(default)]
    pub device_bytes: u64,
    #[serde(default)]
    pub other_device_bytes: u64,
    #[serde(default)]
    pub job_bytes: u64,
    /// dioscope's own mean total latency (submission + completion).
    pub dioscope_lat_mean_ns: f64,
    /// `io_uring_submit_req → io_uring_complete`, per I/O.
    pub traced_total: Stage,
    /// The stages, in order; their `contribution_ns` add up to
    /// `dioscope_lat_mean_ns`.
    pub stages: Vec<Stage>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Stage {
    /// `submission`, `block layer`, `device`, `completion posting`,
    /// `not joined per I/O`, `completion delivery`.
    pub name: String,
    /// The events it spans.
    pub span: String,
    /// `measured` (per I/O, with how it was keyed), `mean difference`, or
    /// `not applicable`.
    pub how: String,
    /// I/Os measured (0 for a mean difference).
    pub ios: u64,
    /// Mean over the I/Os measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ns: Option<f64>,
    /// Its share of the mean latency of every I/O of the direction (the
    /// stage's time summed over its I/Os ÷ all the direction's I/Os).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contribution_ns: Option<f64>,
    /// Where one I/O in N > 1 was followed: the half-width of the 95 %
    /// interval of `contribution_ns` from that sampling (the followed I/Os'
    /// spread ÷ √followed, with the finite-population factor; for a mean
    /// difference, combined from the stages it subtracts). Absent when every
    /// I/O was followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_ci95_ns: Option<f64>,
    /// Percentiles (the run's percentile list) of the I/Os measured, ns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles: Vec<(f64, f64)>,
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / 1048576.0)
}

impl StageDirection {
    /// This run's own bios' bytes against its jobs' (write or read
    /// amplification from the tagged I/O alone), and the other processes'
    /// bios meanwhile (a file system's journal, writeback: not counted as
    /// ours, said beside it). `None` when nothing was transferred.
    pub fn bytes_line(&self) -> Option<String> {
        if self.job_bytes == 0 && self.device_bytes == 0 {
            return None;
        }
        let ratio = if self.job_bytes > 0 {
            format!(
                " = {:.2}× the jobs' {}",
                self.device_bytes as f64 / self.job_bytes as f64,
                mib(self.job_bytes)
            )
        } else {
            String::new()
        };
        Some(format!(
            "bytes: this run's bios {}{ratio}; other processes' bios on the devices {} \
             (a journal or writeback is theirs, not the run's)",
            mib(self.device_bytes),
            mib(self.other_device_bytes)
        ))
    }

    /// When far fewer of the direction's I/Os reached the device than were
    /// traced (page-cache hits of buffered I/O, bios merged into others, bios
    /// blk-throttle released from its worker), what that means for the block
    /// stages; `None` when most did.
    pub fn device_coverage_note(&self) -> Option<String> {
        let dev = self.stages.iter().find(|s| s.name == "device")?;
        // Both counts are of the I/Os followed (one in the sample rate).
        let traced = self.traced_total.ios;
        if traced == 0 || dev.ios as f64 >= 0.9 * traced as f64 {
            return None;
        }
        // blk-throttle (io.max) holds a bio before `block_bio_queue` and
        // queues it again from its own kernel worker, not a thread of the
        // run: such bios are counted as other processes' I/O.
        let throttled = if self.other_device_ios > 0 {
            format!(
                ", or bios of the run held by blk-throttle (io.max) and queued again by its \
                 kernel worker, which count as other processes' I/O ({} here)",
                self.other_device_ios
            )
        } else {
            String::new()
        };
        Some(format!(
            "only {} of the {} traced I/Os reached the device ({:.1} %: page-cache hits of \
             buffered I/O, bios merged into others{throttled}): the block-layer and device \
             stages describe those, and their contribution is spread over all the \
             direction's I/Os",
            dev.ios,
            traced,
            100.0 * dev.ios as f64 / traced as f64
        ))
    }
}

fn us(ns: f64) -> String {
    if ns.abs() >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}µs", ns / 1e3)
    }
}

fn pct_list(p: &[(f64, f64)]) -> String {
    p.iter()
        .map(|(q, v)| format!("p{}={}", q, us(*v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text section.
pub fn render_text(r: &StagesResult) -> String {
    let mut s = String::from("Latency by stage (--stages):\n");
    if r.status != "measured" {
        s.push_str(&format!(
            "  not measured: {}{}\n",
            r.message.as_deref().unwrap_or("no reason given"),
            r.fix
                .as_deref()
                .map(|f| format!("; {f}"))
                .unwrap_or_default()
        ));
        return s;
    }
    let by = match r.backend.as_str() {
        "" => String::new(),
        "raw_tracepoint" => " (raw tracepoints)".to_string(),
        b => format!(" ({b})"),
    };
    s.push_str(&format!(
        "  traced{by}: {}; {}\n  block layer: {} merges, {} splits of this run's bios\n",
        r.devices.join(", "),
        r.window,
        r.merges,
        r.splits
    ));
    if r.sample_every > 1 {
        s.push_str(&format!(
            "  stages from one I/O in {} (every I/O counted; ± is the 95 % interval of that \
             sampling; --stages_sample=1 follows all)\n",
            r.sample_every
        ));
    }
    for d in &r.directions {
        s.push_str(&format!(
            "  {}: {} I/Os of this run traced (dioscope counted {}), {} other I/Os on the \
             device, {} punted to io-wq; dioscope's mean latency {}\n",
            d.direction,
            d.tagged_ios,
            d.dioscope_ios,
            d.other_device_ios,
            d.punted_io_wq,
            us(d.dioscope_lat_mean_ns)
        ));
        if let Some(n) = d.bytes_line() {
            s.push_str(&format!("    {n}\n"));
        }
        if let Some(n) = d.device_coverage_note() {
            s.push_str(&format!("    note: {n}\n"));
        }
        for st in std::iter::once(&d.traced_total).chain(&d.stages) {
            let share = st
                .contribution_ns
                .filter(|_| d.dioscope_lat_mean_ns > 0.0)
                .map(|c| format!("{:>10} {:>5.1}%", us(c), 100.0 * c / d.dioscope_lat_mean_ns))
                .unwrap_or_else(|| format!("{:>17}", "-"));
            let share = match st.sampling_ci95_ns {
                Some(h) => format!("{share} ±{:<9}", us(h)),
                None if r.sample_every > 1 => format!("{share} {:10}", ""),
                None => share,
            };
            s.push_str(&format!(
                "    {:<23} {share}  {} ({}{})\n",
                st.name,
                st.span,
                st.how,
                if st.ios > 0 {
                    format!(", {} I/Os", st.ios)
                } else {
                    String::new()
                }
            ));
            if let Some(m) = st.mean_ns.filter(|_| !st.percentiles.is_empty()) {
                s.push_str(&format!(
                    "    {:<23} mean {} {}\n",
                    "",
                    us(m),
                    pct_list(&st.percentiles)
                ));
            }
        }
    }
    s
}

/// A run's stages section, when it has one that parses.
pub fn parse(v: Option<&serde_json::Value>) -> Option<StagesResult> {
    v.and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// The name of the row that carries dioscope's own mean latency in a
/// comparison (the stages' contributions add up to it).
pub const LATENCY_ROW: &str = "dioscope's mean latency";

/// One stage of one direction on both sides of a comparison: its
/// contribution to the mean latency (the stage's time over all the
/// direction's I/Os), the mean over each side's runs, with the smallest and
/// largest run when a side has more than one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageDelta {
    pub direction: String,
    pub stage: String,
    /// How the stage was measured on side A (B's when A lacks it).
    pub how: String,
    pub a_ns: Option<f64>,
    pub b_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_range_ns: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_range_ns: Option<(f64, f64)>,
}

impl StageDelta {
    /// B − A, when both sides have the stage.
    pub fn delta_ns(&self) -> Option<f64> {
        Some(self.b_ns? - self.a_ns?)
    }

    /// B against A in %, when A's is not zero.
    pub fn change_pct(&self) -> Option<f64> {
        let (a, b) = (self.a_ns?, self.b_ns?);
        (a.abs() > 0.0).then(|| 100.0 * (b - a) / a)
    }
}

/// `--stages` on both sides of a comparison: where the mean latency
/// changed, stage by stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagesComparison {
    /// Runs with measured stages per side.
    pub a_runs: usize,
    pub b_runs: usize,
    pub rows: Vec<StageDelta>,
    /// What the figures are and what they are not.
    pub note: String,
}

/// The stage rows of one direction of one run: dioscope's mean latency,
/// the traced total and each stage's contribution.
fn direction_rows(d: &StageDirection) -> Vec<(String, String, Option<f64>)> {
    let mut v = vec![(
        LATENCY_ROW.to_string(),
        "dioscope's own clock".to_string(),
        Some(d.dioscope_lat_mean_ns),
    )];
    for st in std::iter::once(&d.traced_total).chain(&d.stages) {
        v.push((st.name.clone(), st.how.clone(), st.contribution_ns));
    }
    v
}

/// Compare the measured stages of A's runs with B's. `None` when a side
/// has none measured.
pub fn compare(a: &[StagesResult], b: &[StagesResult]) -> Option<StagesComparison> {
    let measured = |s: &[StagesResult]| -> Vec<StagesResult> {
        s.iter()
            .filter(|r| r.status == "measured")
            .cloned()
            .collect()
    };
    let (a, b) = (measured(a), measured(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    // Rows in A's order, then B's rows A lacks.
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in a.iter().chain(&b) {
        for d in &r.directions {
            for (name, how, _) in direction_rows(d) {
                if !keys.iter().any(|k| k.0 == d.direction && k.1 == name) {
                    keys.push((d.direction.clone(), name, how));
                }
            }
        }
    }
    let side = |runs: &[StagesResult], dir: &str, name: &str| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| r.directions.iter().find(|d| d.direction == dir))
            .filter_map(|d| {
                direction_rows(d)
                    .into_iter()
                    .find(|x| x.0 == name)
                    .and_then(|x| x.2)
            })
            .collect()
    };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let range = |v: &[f64]| {
        (v.len() > 1).then(|| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo, hi)
        })
    };
    let rows = keys
        .into_iter()
        .map(|(dir, stage, how)| {
            let (va, vb) = (side(&a, &dir, &stage), side(&b, &dir, &stage));
            StageDelta {
                a_ns: mean(&va),
                b_ns: mean(&vb),
                a_range_ns: range(&va),
                b_range_ns: range(&vb),
                direction: dir,
                stage,
                how,
            }
        })
        .collect();
    let note = format!(
        "each stage's contribution to the mean latency (its time over all the direction's I/Os; \
         the stages add up to dioscope's mean latency), the mean over {} run(s) of A and {} of \
         B, every trial of a run summed. No interval: a run's stages are one figure, so only \
         repeated runs (compare A1.json A2.json … against B…) show their spread, as the \
         smallest and largest run",
        a.len(),
        b.len()
    );
    Some(StagesComparison {
        a_runs: a.len(),
        b_runs: b.len(),
        rows,
        note,
    })
}

fn opt_us(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), us)
}

/// The comparison's text section.
pub fn render_compare_text(c: &StagesComparison) -> String {
    let mut s = format!(
        "\nLatency by stage: B against A (--stages on both)\n  {}\n",
        c.note
    );
    let mut dir = "";
    for r in &c.rows {
        if r.direction != dir {
            dir = &r.direction;
            s.push_str(&format!(
                "  {:<26} {:>10} {:>10} {:>10} {:>8}\n",
                r.direction, "A", "B", "B - A", "change"
            ));
        }
        let range = |x: Option<(f64, f64)>| {
            x.map(|(lo, hi)| format!(" [{} – {}]", us(lo), us(hi)))
                .unwrap_or_default()
        };
        s.push_str(&format!(
            "    {:<24} {:>10} {:>10} {:>10} {:>8}{}{}\n",
            r.stage,
            opt_us(r.a_ns),
            opt_us(r.b_ns),
            r.delta_ns().map_or_else(
                || "-".into(),
                |d| format!("{}{}", if d >= 0.0 { "+" } else { "" }, us(d))
            ),
            r.change_pct()
                .map_or_else(|| "-".into(), |p| format!("{p:+.1}%")),
            range(r.a_range_ns).replace(" [", " A ["),
            range(r.b_range_ns).replace(" [", " B ["),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lat: f64, device: f64, delivery: f64) -> StagesResult {
        let st = |name: &str, c: f64| Stage {
            name: name.into(),
            how: "measured".into(),
            contribution_ns: Some(c),
            ..Default::default()
        };
        StagesResult {
            status: "measured".into(),
            directions: vec![StageDirection {
                direction: "read".into(),
                dioscope_lat_mean_ns: lat,
                traced_total: st("traced total", lat - delivery),
                stages: vec![st("device", device), st("completion delivery", delivery)],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_comparison_says_where_the_latency_moved() {
        let a = [run(100_000.0, 80_000.0, 20_000.0)];
        let b = [
            run(150_000.0, 80_000.0, 70_000.0),
            run(170_000.0, 80_000.0, 90_000.0),
        ];
        let c = compare(&a, &b).expect("both measured");
        assert_eq!((c.a_runs, c.b_runs), (1, 2));
        let row = |n: &str| c.rows.iter().find(|r| r.stage == n).unwrap();
        assert_eq!(row(LATENCY_ROW).delta_ns(), Some(60_000.0));
        assert_eq!(row("device").delta_ns(), Some(0.0));
        let d = row("completion delivery");
        assert_eq!(d.b_ns, Some(80_000.0));
        assert_eq!(d.b_range_ns, Some((70_000.0, 90_000.0)));
        assert_eq!(d.a_range_ns, None);
        assert_eq!(d.change_pct(), Some(300.0));
        let t = render_compare_text(&c);
        assert!(t.contains("completion delivery"), "{t}");
        assert!(t.contains("+300.0%"), "{t}");
        assert!(t.contains("No interval"), "{t}");
    }

    #[test]
    fn the_text_names_the_backend() {
        let mut r = run(10_000.0, 5_000.0, 1_000.0);
        assert!(render_text(&r).contains("  traced: "));
        r.backend = "raw_tracepoint".into();
        assert!(render_text(&r).contains("  traced (raw tracepoints): "));
        r.backend = "bpftrace".into();
        assert!(render_text(&r).contains("  traced (bpftrace): "));
    }

    #[test]
    fn the_runs_bytes_are_set_against_the_jobs() {
        let mut r = run(10_000.0, 5_000.0, 1_000.0);
        let d = &mut r.directions[0];
        d.job_bytes = 8 << 20;
        d.device_bytes = 9 << 20;
        d.other_device_bytes = 3 << 20;
        let t = render_text(&r);
        assert!(
            t.contains(
                "bytes: this run's bios 9.0 MiB = 1.12× the jobs' 8.0 MiB; other processes' \
                 bios on the devices 3.0 MiB"
            ),
            "{t}"
        );
        r.directions[0].job_bytes = 0;
        r.directions[0].device_bytes = 0;
        assert!(!render_text(&r).contains("bytes:"));
    }

    #[test]
    fn few_ios_at_the_device_are_said() {
        let mut r = run(10_000.0, 5_000.0, 1_000.0);
        let d = &mut r.directions[0];
        // 8000 requests, one in 8 followed: the note compares the followed
        // ones with the device stage's I/Os (both sampled alike).
        d.tagged_ios = 8000;
        d.traced_total.ios = 1000;
        d.stages[0].ios = 80;
        let n = d.device_coverage_note().expect("a note");
        assert!(n.contains("only 80 of the 1000 traced I/Os"), "{n}");
        assert!(render_text(&r).contains("note: only 80 of the 1000"));
        assert!(!n.contains("blk-throttle"), "{n}");
        // Bios a throttle released come from its kernel worker: other I/O.
        r.directions[0].other_device_ios = 160;
        let n = r.directions[0].device_coverage_note().expect("a note");
        assert!(
            n.contains("blk-throttle (io.max)") && n.contains("(160 here)"),
            "{n}"
        );
        r.directions[0].stages[0].ios = 950;
        assert_eq!(r.directions[0].device_coverage_note(), None);
    }

    #[test]
    fn no_comparison_without_stages_on_both_sides() {
        let mut off = run(1.0, 1.0, 0.0);
        off.status = "unavailable".into();
        assert!(compare(&[run(1.0, 1.0, 0.0)], &[off]).is_none());
        assert!(compare(&[], &[run(1.0, 1.0, 0.0)]).is_none());
    }
}
