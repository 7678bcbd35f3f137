//! bpftrace's JSON output (`-f json`: one object per line; each map printed
//! at exit as `{"type": "map", "data": {"@name": {"k1,k2": n}}}`) read
//! into the stages of a [`StageDirection`].

use super::script::{bucket_bounds, Stage};
use crate::results::stages::{Stage as StageDoc, StageDirection};
use std::collections::BTreeMap;

/// The maps the program printed: name → key (comma-joined) → value.
#[derive(Debug, Default)]
pub struct Maps(BTreeMap<String, BTreeMap<String, u64>>);

impl Maps {
    /// Read bpftrace's output lines; lines that are not maps are skipped.
    pub fn read(lines: &[String]) -> Maps {
        let mut m = BTreeMap::new();
        let mut totals = Vec::new();
        for l in lines {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
                continue;
            };
            let kind = v.get("type").and_then(|t| t.as_str());
            if kind != Some("map") && kind != Some("stats") {
                continue;
            }
            let Some(data) = v.get("data").and_then(|d| d.as_object()) else {
                continue;
            };
            for (name, val) in data {
                let e: &mut BTreeMap<String, u64> = m.entry(name.clone()).or_default();
                match val {
                    serde_json::Value::Object(o) => {
                        for (k, n) in o {
                            // A `stats()` value: its count under the map's
                            // name, its total under NAME.total.
                            let field = |f: &str| n.get(f).and_then(|x| x.as_u64());
                            e.insert(k.clone(), field("count").or(n.as_u64()).unwrap_or(0));
                            if let Some(t) = field("total") {
                                totals.push((format!("{name}.total"), k.clone(), t));
                            }
                        }
                    }
                    n => {
                        e.insert(String::new(), n.as_u64().unwrap_or(0));
                    }
                }
            }
        }
        for (name, k, t) in totals {
            m.entry(name).or_insert_with(BTreeMap::new).insert(k, t);
        }
        Maps(m)
    }

    /// Set `name[key]` (the raw-tracepoint backend fills the maps so).
    pub fn set(&mut self, name: &str, key: &str, value: u64) {
        self.0
            .entry(name.to_string())
            .or_default()
            .insert(key.to_string(), value);
    }

    /// The value of `name[key]` (0 when absent).
    pub fn get(&self, name: &str, key: &str) -> u64 {
        self.0
            .get(name)
            .and_then(|m| m.get(key))
            .copied()
            .unwrap_or(0)
    }

    /// The histogram of (`dir`, `stage`) in `map`: (bucket, value), by
    /// bucket (`@h`: counts, `@h.total`: sums).
    fn hist(&self, map: &str, dir: u8, stage: Stage) -> Vec<(u64, u64)> {
        let prefix = format!("{dir},{},", stage as u8);
        let mut v: Vec<(u64, u64)> = self
            .0
            .get(map)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, n)| Some((k.strip_prefix(&prefix)?.parse().ok()?, *n)))
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable();
        v
    }

    /// This run's I/Os of `dir`: every request it submitted in a measured
    /// window (counted at submission, all of them, followed or not).
    pub fn tagged(&self, dir: u8) -> u64 {
        self.get("@n", &dir.to_string())
    }

    /// Count, sum (ns) and percentiles of (`dir`, `stage`).
    pub fn stat(&self, dir: u8, stage: Stage, pcts: &[f64]) -> (u64, u64, Vec<(f64, f64)>) {
        let h = self.hist("@h", dir, stage);
        let n: u64 = h.iter().map(|(_, c)| c).sum();
        let sum = self
            .hist("@h.total", dir, stage)
            .iter()
            .map(|(_, t)| t)
            .sum();
        (n, sum, percentiles(&h, n, pcts))
    }
}

/// Percentiles of a bucketed histogram, interpolated within the bucket
/// (error under half a bucket: 1/32 of the value).
pub fn percentiles(h: &[(u64, u64)], n: u64, pcts: &[f64]) -> Vec<(f64, f64)> {
    if n == 0 {
        return Vec::new();
    }
    pcts.iter()
        .map(|&p| {
            let rank = (p / 100.0 * n as f64).max(1.0);
            let mut below = 0u64;
            for &(k, c) in h {
                if (below + c) as f64 >= rank {
                    let (lo, w) = bucket_bounds(k);
                    let frac = (rank - below as f64) / c as f64;
                    return (p, lo as f64 + frac * w as f64);
                }
                below += c;
            }
            let (lo, w) = bucket_bounds(h.last().map(|x| x.0).unwrap_or(0));
            (p, (lo + w) as f64)
        })
        .collect()
}

/// What the direction's stages are built from.
pub struct DirInput<'a> {
    pub dir: u8,
    pub request_based: bool,
    pub dioscope_ios: u64,
    pub dioscope_lat_mean_ns: f64,
    pub pcts: &'a [f64],
}

/// A per-I/O stage's entry.
fn measured(
    maps: &Maps,
    i: &DirInput,
    stage: Stage,
    followed: u64,
    (name, span, how): (&str, &str, &str),
) -> StageDoc {
    let (n, sum, p) = maps.stat(i.dir, stage, i.pcts);
    StageDoc {
        name: name.into(),
        span: span.into(),
        // A join that never matched (every I/O punted to io-wq) says so,
        // rather than looking like a stage that took no time.
        how: if n > 0 {
            how.into()
        } else {
            format!("{how}; no I/O joined")
        },
        ios: n,
        mean_ns: (n > 0).then(|| sum as f64 / n as f64),
        contribution_ns: (followed > 0).then(|| sum as f64 / followed as f64),
        percentiles: p,
    }
}

/// A stage by mean difference.
fn derived(name: &str, span: &str, how: &str, ns: f64) -> StageDoc {
    StageDoc {
        name: name.into(),
        span: span.into(),
        how: how.into(),
        ios: 0,
        mean_ns: Some(ns),
        contribution_ns: Some(ns),
        percentiles: Vec::new(),
    }
}

/// The direction's stages: each measured stage's share of the mean is its
/// summed time ÷ the direction's followed requests (the count of the
/// traced total: one in the sample rate, as the bios each stage sums), so
/// the measured shares, the part of the traced total no per-I/O join
/// covered, and the delivery after the CQE add up to dioscope's mean.
pub fn direction(maps: &Maps, i: &DirInput) -> StageDirection {
    let d = i.dir.to_string();
    let followed = maps.stat(i.dir, Stage::Total, &[]).0;
    let total = measured(
        maps,
        i,
        Stage::Total,
        followed,
        (
            "traced total",
            "io_uring_submit_req → io_uring_complete",
            "measured, keyed by request",
        ),
    );
    let mut stages = vec![measured(
        maps,
        i,
        Stage::Submission,
        followed,
        (
            "submission",
            "submit_req → bio queued",
            "measured, joined by task: I/Os issued inline",
        ),
    )];
    if i.request_based {
        stages.push(measured(
            maps,
            i,
            Stage::Block,
            followed,
            (
                "block layer",
                "bio queued → request issued",
                "measured, keyed by sector",
            ),
        ));
    } else {
        stages.push(StageDoc {
            name: "block layer".into(),
            span: "bio-based device: no request".into(),
            how: "not applicable".into(),
            ..StageDoc::default()
        });
    }
    let (dev_span, post_span) = if i.request_based {
        (
            "request issued → completed",
            "request completed → CQE posted",
        )
    } else {
        ("bio queued → bio completed", "bio completed → CQE posted")
    };
    stages.push(measured(
        maps,
        i,
        Stage::Device,
        followed,
        ("device", dev_span, "measured, keyed by sector"),
    ));
    stages.push(measured(
        maps,
        i,
        Stage::Posting,
        followed,
        (
            "completion posting",
            post_span,
            "measured, joined by sector to the request",
        ),
    ));
    let total_mean = total.contribution_ns.unwrap_or(0.0);
    let covered: f64 = stages.iter().filter_map(|s| s.contribution_ns).sum();
    stages.push(derived(
        "not joined per I/O",
        "traced total − the stages above (I/Os punted to io-wq or merged carry no join)",
        "mean difference",
        total_mean - covered,
    ));
    stages.push(derived(
        "completion delivery",
        "CQE posted → reaped by dioscope (and its stamp → submit_req)",
        "mean difference: dioscope's mean − traced total",
        i.dioscope_lat_mean_ns - total_mean,
    ));
    StageDirection {
        direction: if i.dir == 0 { "read" } else { "write" }.into(),
        tagged_ios: maps.tagged(i.dir),
        dioscope_ios: i.dioscope_ios,
        other_device_ios: maps.get("@other", &d),
        punted_io_wq: maps.get("@punt", &d),
        dioscope_lat_mean_ns: i.dioscope_lat_mean_ns,
        traced_total: total,
        stages,
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::bucket_of;
    use super::*;

    /// bpftrace's output for histograms of (dir, stage, value) × count:
    /// each bucket a `stats()` of count and total; the run's requests
    /// (`@n`) are the total stage's count times `every` (one followed in
    /// `every`).
    fn out(h: &[((u8, Stage, u64), u64)], every: u64) -> Vec<String> {
        let n = |dir: u8| -> u64 {
            h.iter()
                .filter(|((d, st, _), _)| *d == dir && *st == Stage::Total)
                .map(|(_, c)| c * every)
                .sum()
        };
        let h: Vec<String> = h
            .iter()
            .map(|((d, st, v), n)| {
                format!(
                    "\"{d},{},{}\": {{\"count\": {n}, \"average\": {v}, \"total\": {}}}",
                    *st as u8,
                    bucket_of(*v),
                    n * v
                )
            })
            .collect();
        vec![
            "{\"type\": \"attached_probes\", \"data\": {\"probes\": 12}}".into(),
            "{\"type\": \"printf\", \"data\": \"dioscope-stages-ready\\n\"}".into(),
            format!(
                "{{\"type\": \"stats\", \"data\": {{\"@h\": {{{}}}}}}}",
                h.join(", ")
            ),
            "{\"type\": \"map\", \"data\": {\"@merge\": 3}}".into(),
            format!(
                "{{\"type\": \"map\", \"data\": {{\"@n\": {{\"0\": {}, \"1\": {}}}}}}}",
                n(0),
                n(1)
            ),
        ]
    }

    #[test]
    fn maps_are_read_and_percentiles_fall_in_their_bucket() {
        // 90 I/Os of 100 µs, 10 of 1 ms.
        let lines = out(
            &[
                ((0, Stage::Total, 100_000), 90),
                ((0, Stage::Total, 1_000_000), 10),
            ],
            1,
        );
        let m = Maps::read(&lines);
        assert_eq!(m.get("@merge", ""), 3);
        assert_eq!(m.tagged(0), 100);
        let (n, sum, p) = m.stat(0, Stage::Total, &[50.0, 99.0]);
        assert_eq!((n, sum), (100, 19_000_000));
        assert!((p[0].1 / 100_000.0 - 1.0).abs() < 0.07, "{p:?}");
        assert!((p[1].1 / 1_000_000.0 - 1.0).abs() < 0.07, "{p:?}");
    }

    #[test]
    fn stage_shares_and_the_differences_add_up_to_dioscopes_mean() {
        // 800 I/Os, one in 8 followed: 100 followed, total 100 µs each;
        // submission 2, block 10, device 60, posting 20 measured on 90 of
        // them (82.8 µs of each I/O's 100 on average: 17.2 not joined);
        // dioscope's mean 130 µs.
        let lines = out(
            &[
                ((0, Stage::Total, 100_000), 100),
                ((0, Stage::Submission, 2_000), 90),
                ((0, Stage::Block, 10_000), 90),
                ((0, Stage::Device, 60_000), 90),
                ((0, Stage::Posting, 20_000), 90),
            ],
            8,
        );
        let m = Maps::read(&lines);
        let d = direction(
            &m,
            &DirInput {
                dir: 0,
                request_based: true,
                dioscope_ios: 800,
                dioscope_lat_mean_ns: 130_000.0,
                pcts: &[50.0],
            },
        );
        // Every request counted, the shares from the ones followed.
        assert_eq!(d.tagged_ios, 800);
        assert_eq!(d.traced_total.ios, 100);
        let sum: f64 = d.stages.iter().filter_map(|s| s.contribution_ns).sum();
        assert!((sum - 130_000.0).abs() < 1.0, "{sum}");
        let by = |n: &str| d.stages.iter().find(|s| s.name == n).unwrap().clone();
        assert_eq!(by("device").mean_ns, Some(60_000.0));
        assert_eq!(by("device").contribution_ns, Some(54_000.0));
        assert!((by("not joined per I/O").mean_ns.unwrap() - 17_200.0).abs() < 1.0);
        assert_eq!(by("completion delivery").mean_ns, Some(30_000.0));
        // Bio-based: no block-layer stage.
        let z = direction(
            &m,
            &DirInput {
                dir: 0,
                request_based: false,
                dioscope_ios: 100,
                dioscope_lat_mean_ns: 130_000.0,
                pcts: &[50.0],
            },
        );
        assert_eq!(z.stages[1].how, "not applicable");
    }
}
