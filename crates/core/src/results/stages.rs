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
    /// What was traced: which I/Os, over which time.
    #[serde(default)]
    pub window: String,
    /// The traced devices (`/dev/loop0 (request-based)`).
    #[serde(default)]
    pub devices: Vec<String>,
    /// Block-layer merges and splits of this run's bios.
    #[serde(default)]
    pub merges: u64,
    #[serde(default)]
    pub splits: u64,
    #[serde(default)]
    pub directions: Vec<StageDirection>,
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
    /// Percentiles (the run's percentile list) of the I/Os measured, ns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles: Vec<(f64, f64)>,
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
    s.push_str(&format!(
        "  traced: {}; {}\n  block layer: {} merges, {} splits of this run's bios\n",
        r.devices.join(", "),
        r.window,
        r.merges,
        r.splits
    ));
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
        for st in std::iter::once(&d.traced_total).chain(&d.stages) {
            let share = st
                .contribution_ns
                .filter(|_| d.dioscope_lat_mean_ns > 0.0)
                .map(|c| format!("{:>10} {:>5.1}%", us(c), 100.0 * c / d.dioscope_lat_mean_ns))
                .unwrap_or_else(|| format!("{:>17}", "-"));
            s.push_str(&format!(
                "    {:<20} {share}  {} ({}{})\n",
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
                    "    {:<20} mean {} {}\n",
                    "",
                    us(m),
                    pct_list(&st.percentiles)
                ));
            }
        }
    }
    s
}
