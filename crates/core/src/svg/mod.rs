//! Small SVG charts, written by hand (a leaf module: it depends on nothing
//! of the crate; render/ and profile/ draw with it): line charts (linear or log y, shaded
//! spans, optional error bars), dot plots of trials with mean and CI,
//! histograms and horizontal bars. No JavaScript: each point carries a
//! `<title>` the browser shows on hover, and each chart a `<title>` and
//! `<desc>` for screen readers.
//!
//! Hand-written rather than plotters: the handful of chart kinds the report
//! needs is a few hundred lines, the output is byte-stable for snapshot
//! tests, and the binary gains no dependency.
//!
//! Colours are the Okabe–Ito palette (distinguishable with the common
//! colour-vision deficiencies); series also differ by dash pattern and
//! marker so the charts survive grey-scale printing.

use std::fmt::Write;

/// Okabe–Ito: blue, orange, bluish green, reddish purple, sky blue,
/// vermillion, black (its yellow is left out: too pale on white).
const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000",
];
/// Solid, dashed, dotted, dash-dot.
const DASHES: [&str; 4] = ["", "6 3", "2 3", "8 3 2 3"];

const W: f64 = 720.0;
const H: f64 = 300.0;
const ML: f64 = 78.0;
const MR: f64 = 16.0;
const MT: f64 = 34.0;
const MB: f64 = 48.0;
/// Points drawn per line at most; longer series are averaged into this many.
const MAX_POINTS: usize = 400;

/// One line of a line chart.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Per point: (low, high) of an error bar.
    pub err: Vec<(f64, f64)>,
    /// Index into [`PALETTE`].
    pub color: usize,
    /// Index into [`DASHES`].
    pub dash: usize,
    /// Draw markers at the points.
    pub markers: bool,
    /// Markers (and error bars) only, no connecting line: for categories
    /// that are not a sequence.
    pub dots_only: bool,
}

/// A line chart's description.
#[derive(Debug, Clone)]
pub struct LineChart<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_y: bool,
    /// Shaded x spans with their label (the ramp).
    pub shade: Vec<(f64, f64, &'a str)>,
    pub lines: Vec<Line>,
    /// Format of a y value in hover text and tick labels.
    pub fmt_y: fn(f64) -> String,
    pub fmt_x: fn(f64) -> String,
    /// Category names for an x axis of categories (x = index).
    pub x_categories: Vec<String>,
    /// The values can be negative (a change, a difference); otherwise the
    /// metric is non-negative (IOPS, bandwidth, CPU, latency): its linear
    /// axis starts at 0 and an interval reaching below 0 is drawn
    /// open-ended down to the axis, labelled "interval reaches 0".
    pub signed: bool,
}

impl Default for LineChart<'_> {
    fn default() -> Self {
        LineChart {
            id: "",
            title: "",
            x_label: "",
            y_label: "",
            log_y: false,
            shade: Vec::new(),
            lines: Vec::new(),
            fmt_y: num,
            fmt_x: num,
            x_categories: Vec::new(),
            signed: false,
        }
    }
}

/// Escape text for SVG/HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Compact number: 3 significant digits.
pub fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.3}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Latency in ns as human text (ns, µs, ms, s), 3 significant digits.
pub fn ns(x: f64) -> String {
    let (v, u) = if x < 1e3 {
        (x, "ns")
    } else if x < 1e6 {
        (x / 1e3, "µs")
    } else if x < 1e9 {
        (x / 1e6, "ms")
    } else {
        (x / 1e9, "s")
    };
    let d = if v >= 100.0 || u == "ns" {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.d$} {u}")
}

/// Round coordinates to 0.1 px: smaller files, stable snapshots.
fn c(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// A "nice" step (1, 2, 2.5, 5 × 10^k) giving at most 6 ticks over `span`.
fn tick_step(span: f64) -> f64 {
    let span = span.max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag)
}

/// "Nice" linear ticks covering [lo, hi].
fn lin_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let step = tick_step(hi - lo);
    let mut t = (lo / step).floor() * step;
    let mut v = Vec::new();
    while t <= hi + step * 1e-9 {
        v.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    v
}

/// One scale: data → pixels.
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn new(lo: f64, hi: f64, log: bool, p0: f64, p1: f64) -> Scale {
        let (mut lo, mut hi) = (lo, hi);
        if log {
            lo = lo.max(1e-9).log10().floor();
            hi = hi.max(1e-9).log10().ceil();
            if hi <= lo {
                hi = lo + 1.0;
            }
        } else {
            if hi <= lo {
                hi = lo + 1.0;
            }
            // End the axis on ticks, so the extremes sit inside it.
            let step = tick_step(hi - lo);
            lo = (lo / step + 1e-9).floor() * step;
            hi = (hi / step - 1e-9).ceil() * step;
        }
        Scale {
            lo,
            hi,
            log,
            p0,
            p1,
        }
    }
    /// A scale over exactly [lo, hi] (categories, time): no rounding.
    fn fixed(lo: f64, hi: f64, p0: f64, p1: f64) -> Scale {
        Scale {
            lo,
            hi: if hi <= lo { lo + 1.0 } else { hi },
            log: false,
            p0,
            p1,
        }
    }
    fn px(&self, v: f64) -> f64 {
        let v = if self.log { v.max(1e-9).log10() } else { v };
        self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }
    fn ticks(&self) -> Vec<f64> {
        if self.log {
            (self.lo as i32..=self.hi as i32)
                .map(|e| 10f64.powi(e))
                .collect()
        } else {
            lin_ticks(self.lo, self.hi)
        }
    }
}

/// Average a long series down to at most `max` points (mean of x and y per
/// bucket), so a day-long run does not make a multi-megabyte page.
fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let per = points.len().div_ceil(max);
    points
        .chunks(per)
        .map(|ch| {
            let n = ch.len() as f64;
            (
                ch.iter().map(|p| p.0).sum::<f64>() / n,
                ch.iter().map(|p| p.1).sum::<f64>() / n,
            )
        })
        .collect()
}

fn open_svg(o: &mut String, id: &str, title: &str, desc: &str, h: f64) {
    let _ = write!(
        o,
        "<svg id=\"{id}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {h}\" \
         width=\"{W}\" height=\"{h}\" role=\"img\" aria-labelledby=\"{id}-t {id}-d\">\
         <title id=\"{id}-t\">{}</title><desc id=\"{id}-d\">{}</desc>\
         <text x=\"{}\" y=\"20\" class=\"ct\">{}</text>",
        esc(title),
        esc(desc),
        ML,
        esc(title)
    );
}

/// Category labels wrapped to their slot: the lines of each label and
/// every how many-th label is drawn (1: all; more when even one word is
/// wider than its slot).
fn category_layout(cats: &[String]) -> (Vec<Vec<String>>, usize) {
    let slot = (W - MR - ML) / cats.len().max(1) as f64;
    let per_line = ((slot - 6.0) / CHAR_W).floor().max(1.0) as usize;
    let wrapped: Vec<Vec<String>> = cats.iter().map(|c| wrap(c, per_line)).collect();
    let widest = wrapped
        .iter()
        .flatten()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0) as f64
        * CHAR_W;
    let every = ((widest + 6.0) / slot).ceil().max(1.0) as usize;
    (wrapped, every)
}

/// Words of `s` in lines of at most `n` characters (a longer word alone).
fn wrap(s: &str, n: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for w in s.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + w.chars().count() <= n => {
                l.push(' ');
                l.push_str(w);
            }
            _ => lines.push(w.to_string()),
        }
    }
    lines
}

/// Rough width of a character of the 11 px tick font (a generous bound).
const CHAR_W: f64 = 6.6;

/// Extra bottom margin the wrapped category labels need.
fn category_extra(cats: &[String]) -> f64 {
    if cats.is_empty() {
        return 0.0;
    }
    let (wrapped, _) = category_layout(cats);
    let lines = wrapped.iter().map(Vec::len).max().unwrap_or(1).max(1);
    (lines - 1) as f64 * 13.0
}

fn axes(o: &mut String, xs: &Scale, ys: &Scale, ch: &LineChart, top: f64) {
    let (x0, x1) = (ML, W - MR);
    let (y0, y1) = (ys.p0, top);
    let _ = write!(
        o,
        "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
        c(x0),
        c(y1),
        c(x1 - x0),
        c(y0 - y1)
    );
    for t in ys.ticks() {
        let y = ys.px(t);
        if y < y1 - 0.5 || y > y0 + 0.5 {
            continue;
        }
        let _ = write!(
            o,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"grid\"/>\
             <text x=\"{}\" y=\"{}\" class=\"yt\">{}</text>",
            c(x0),
            c(x1),
            c(y),
            c(y),
            c(x0 - 6.0),
            c(y + 4.0),
            esc(&(ch.fmt_y)(t))
        );
    }
    if ch.x_categories.is_empty() {
        for t in xs.ticks() {
            let x = xs.px(t);
            if x < x0 - 0.5 || x > x1 + 0.5 {
                continue;
            }
            let _ = write!(
                o,
                "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"tick\"/>\
                 <text x=\"{}\" y=\"{}\" class=\"xt\">{}</text>",
                c(x),
                c(x),
                c(y0),
                c(y0 + 4.0),
                c(x),
                c(y0 + 18.0),
                esc(&(ch.fmt_x)(t))
            );
        }
    } else {
        let (wrapped, every) = category_layout(&ch.x_categories);
        for (i, lines) in wrapped.iter().enumerate() {
            if i % every != 0 {
                continue;
            }
            let x = c(xs.px(i as f64));
            let _ = write!(o, "<text x=\"{x}\" y=\"{}\" class=\"xt\">", c(y0 + 18.0));
            for (k, l) in lines.iter().enumerate() {
                let _ = write!(
                    o,
                    "<tspan x=\"{x}\" dy=\"{}\">{}</tspan>",
                    if k == 0 { 0 } else { 13 },
                    esc(l)
                );
            }
            let _ = write!(o, "<title>{}</title></text>", esc(&ch.x_categories[i]));
        }
    }
    let _ = write!(
        o,
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"axis\"/>\
         <line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"axis\"/>\
         <text x=\"{}\" y=\"{}\" class=\"xl\">{}</text>\
         <text transform=\"translate(14 {}) rotate(-90)\" class=\"yl\">{}</text>",
        c(x0),
        c(x1),
        c(y0),
        c(y0),
        c(x0),
        c(x0),
        c(y0),
        c(y1),
        c((x0 + x1) / 2.0),
        c(y0 + MB - 10.0 + category_extra(&ch.x_categories)),
        esc(ch.x_label),
        c((y0 + y1) / 2.0),
        esc(ch.y_label)
    );
}

/// Legend rows under the title; returns the height they take.
fn legend(o: &mut String, lines: &[Line]) -> f64 {
    if lines.len() < 2 {
        return 0.0;
    }
    let mut x = ML;
    let mut y = 36.0;
    for l in lines {
        let w = 34.0 + 6.5 * l.name.chars().count() as f64;
        if x + w > W - MR {
            x = ML;
            y += 14.0;
        }
        let _ = write!(
            o,
            "<g class=\"lg\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-dasharray=\"{}\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"{}\">{}</text></g>",
            c(x),
            c(x + 20.0),
            c(y),
            c(y),
            PALETTE[l.color % PALETTE.len()],
            DASHES[l.dash % DASHES.len()],
            c(x + 24.0),
            c(y + 4.0),
            esc(&l.name)
        );
        x += w;
    }
    y - 36.0 + 16.0
}

/// A line chart (time series, percentile curves, sweeps).
pub fn line_chart(ch: &LineChart) -> String {
    let h = H;
    let mut o = String::new();
    let pts: Vec<Vec<(f64, f64)>> = ch
        .lines
        .iter()
        .map(|l| {
            let p: Vec<(f64, f64)> = l
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite() && p.1.is_finite() && (!ch.log_y || p.1 > 0.0))
                .collect();
            if l.err.is_empty() {
                downsample(&p, MAX_POINTS)
            } else {
                p
            }
        })
        .collect();
    let (mut xlo, mut xhi, mut ylo, mut yhi) = bounds(ch, &pts);
    let n = pts.iter().map(Vec::len).sum::<usize>();
    let desc = format!(
        "{} line(s), {} point(s); x: {}, y: {}{}",
        ch.lines.len(),
        n,
        ch.x_label,
        ch.y_label,
        if ch.log_y { " (log scale)" } else { "" }
    );
    open_svg(&mut o, ch.id, ch.title, &desc, h);
    if n == 0 {
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" class=\"empty\">no data</text></svg>",
            W / 2.0,
            h / 2.0
        );
        return o;
    }
    if !ch.x_categories.is_empty() {
        xlo = -0.5;
        xhi = ch.x_categories.len() as f64 - 0.5;
    }
    if ch.signed && !ch.log_y {
        // A change: 0 in view, room on both sides of the largest ones.
        ylo = ylo.min(0.0);
        yhi = yhi.max(0.0);
        let pad = (yhi - ylo).max(1e-9) * 0.05;
        ylo -= pad;
        yhi += pad;
    } else if !ch.log_y {
        ylo = ylo.min(0.0);
        yhi *= 1.05;
    }
    let open = ch.lines.iter().any(|l| {
        l.err
            .iter()
            .any(|&(lo, hi)| hi.is_finite() && reaches_zero(ch, lo))
    });
    let lg = legend(&mut o, &ch.lines);
    let extra = category_extra(&ch.x_categories) + if open { 16.0 } else { 0.0 };
    let h = h + lg + extra;
    let top = MT + lg;
    o = o.replacen(
        &format!("viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\""),
        &format!("viewBox=\"0 0 {W} {h}\" width=\"{W}\" height=\"{h}\""),
        1,
    );
    let xs = Scale::fixed(xlo, xhi, ML, W - MR);
    let ys = Scale::new(ylo, yhi, ch.log_y, h - MB - extra, top);
    if open {
        open_note(&mut o, h);
    }
    for &(a, b, label) in &ch.shade {
        let _ = write!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"shade\"><title>{}</title></rect>\
             <text x=\"{}\" y=\"{}\" class=\"st\">{}</text>",
            c(xs.px(a)),
            c(top),
            c((xs.px(b) - xs.px(a)).max(0.0)),
            c(h - MB - top),
            esc(label),
            c(xs.px(a) + 4.0),
            c(top + 12.0),
            esc(label)
        );
    }
    axes(&mut o, &xs, &ys, ch, top);
    for (l, p) in ch.lines.iter().zip(&pts) {
        series(&mut o, ch, l, p, &xs, &ys);
    }
    o.push_str("</svg>");
    o
}

/// An interval whose low end the axis cannot show: at or below 0 on a log
/// scale, below 0 for a non-negative metric. It is drawn open-ended.
fn reaches_zero(ch: &LineChart, lo: f64) -> bool {
    !lo.is_nan() && ((ch.log_y && lo <= 0.0) || (!ch.signed && lo < 0.0))
}

/// The key to open-ended bars, under the x axis label.
fn open_note(o: &mut String, h: f64) {
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" class=\"note\">▼ dashed bar: its interval reaches 0 (open-ended, below the axis)</text>",
        c(ML),
        c(h - 4.0)
    );
}

/// The extent of the data: the points, their error bars (a bar's low end
/// only where the scale can draw it) and the shaded spans.
fn bounds(ch: &LineChart, pts: &[Vec<(f64, f64)>]) -> (f64, f64, f64, f64) {
    let (mut xlo, mut xhi, mut ylo, mut yhi) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts.iter().flatten() {
        xlo = xlo.min(x);
        xhi = xhi.max(x);
        ylo = ylo.min(y);
        yhi = yhi.max(y);
    }
    for l in &ch.lines {
        for &(lo, hi) in &l.err {
            if lo.is_finite() && !reaches_zero(ch, lo) {
                ylo = ylo.min(lo);
            }
            if hi.is_finite() {
                yhi = yhi.max(hi);
            }
        }
    }
    for &(a, b, _) in &ch.shade {
        xlo = xlo.min(a);
        xhi = xhi.max(b);
    }
    (xlo, xhi, ylo, yhi)
}

/// One line of a line chart: its polyline, error bars and markers.
fn series(o: &mut String, ch: &LineChart, l: &Line, p: &[(f64, f64)], xs: &Scale, ys: &Scale) {
    let color = PALETTE[l.color % PALETTE.len()];
    let dash = DASHES[l.dash % DASHES.len()];
    let _ = write!(o, "<g class=\"series\" data-name=\"{}\">", esc(&l.name));
    if !p.is_empty() && !l.dots_only {
        let path: Vec<String> = p
            .iter()
            .map(|&(x, y)| format!("{},{}", c(xs.px(x)), c(ys.px(y))))
            .collect();
        let _ = write!(
            o,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.8\" stroke-dasharray=\"{dash}\"/>",
            path.join(" ")
        );
    }
    for (i, &(lo, hi)) in l.err.iter().enumerate() {
        let Some(&(x, _)) = l.points.get(i) else {
            continue;
        };
        if lo.is_nan() || !hi.is_finite() {
            continue;
        }
        let span = format!("[{}, {}]", (ch.fmt_y)(lo), (ch.fmt_y)(hi));
        if reaches_zero(ch, lo) {
            open_bar(o, xs.px(x), ys.px(hi), ys.p0, color, &span);
            continue;
        }
        let px = c(xs.px(x));
        let _ = write!(
            o,
            "<path d=\"M{px} {a}V{b}M{l1} {a}H{r1}M{l1} {b}H{r1}\" stroke=\"{color}\" fill=\"none\" class=\"err\"><title>interval {}</title></path>",
            esc(&span),
            a = c(ys.px(lo)),
            b = c(ys.px(hi)),
            l1 = c(xs.px(x) - 4.0),
            r1 = c(xs.px(x) + 4.0)
        );
    }
    if l.markers || p.len() == 1 {
        for &(x, y) in p {
            let xl = if ch.x_categories.is_empty() {
                (ch.fmt_x)(x)
            } else {
                ch.x_categories.get(x as usize).cloned().unwrap_or_default()
            };
            let _ = write!(
                o,
                "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{color}\"><title>{}: {} at {}</title></circle>",
                c(xs.px(x)),
                c(ys.px(y)),
                esc(&l.name),
                esc(&(ch.fmt_y)(y)),
                esc(&xl)
            );
        }
    }
    o.push_str("</g>");
}

/// An interval drawn open-ended: dashed from its high end `top` down to the
/// axis at `bottom`, an arrowhead there; its hover text says it reaches 0.
fn open_bar(o: &mut String, x: f64, top: f64, bottom: f64, color: &str, span: &str) {
    let _ = write!(
        o,
        "<path d=\"M{px} {t}V{b}M{l1} {t}H{r1}\" stroke=\"{color}\" stroke-dasharray=\"4 2\" fill=\"none\" class=\"err open\">\
         <title>interval reaches 0: {}</title></path>\
         <path d=\"M{l1} {a}L{px} {b}L{r1} {a}\" stroke=\"{color}\" fill=\"none\" class=\"err open\"/>",
        esc(span),
        px = c(x),
        t = c(top),
        b = c(bottom),
        a = c(bottom - 6.0),
        l1 = c(x - 4.0),
        r1 = c(x + 4.0)
    );
}

/// One category of a dot plot: each trial a dot, the mean a bar, the CI a
/// whisker.
#[derive(Debug, Clone, Default)]
pub struct DotGroup {
    pub name: String,
    pub values: Vec<f64>,
    pub mean: f64,
    pub ci: (f64, f64),
}

/// Spread of trials: one column per group.
pub fn dot_plot(
    id: &str,
    title: &str,
    y_label: &str,
    fmt: fn(f64) -> String,
    groups: &[DotGroup],
) -> String {
    let h = H;
    let mut o = String::new();
    let n: usize = groups.iter().map(|g| g.values.len()).sum();
    open_svg(
        &mut o,
        id,
        title,
        &format!("{} group(s), {n} trial(s): each trial a dot, the mean a bar, the 95 % CI a whisker; y: {y_label}", groups.len()),
        h,
    );
    let mut yhi = f64::MIN;
    for g in groups {
        for &v in g.values.iter().chain([g.ci.1, g.mean].iter()) {
            if v.is_finite() {
                yhi = yhi.max(v);
            }
        }
    }
    if n == 0 || yhi <= 0.0 {
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" class=\"empty\">no data</text></svg>",
            W / 2.0,
            h / 2.0
        );
        return o;
    }
    let ch = LineChart {
        y_label,
        x_label: "",
        fmt_y: fmt,
        fmt_x: num,
        x_categories: groups.iter().map(|g| g.name.clone()).collect(),
        ..Default::default()
    };
    let open = groups
        .iter()
        .any(|g| g.values.len() > 1 && g.ci.1.is_finite() && g.ci.0 < 0.0);
    let extra = category_extra(&ch.x_categories) + if open { 16.0 } else { 0.0 };
    let h = h + extra;
    o = o.replacen(
        &format!("viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\""),
        &format!("viewBox=\"0 0 {W} {h}\" width=\"{W}\" height=\"{h}\""),
        1,
    );
    let xs = Scale::fixed(-0.5, groups.len() as f64 - 0.5, ML, W - MR);
    let ys = Scale::new(0.0, yhi * 1.08, false, h - MB - extra, MT);
    axes(&mut o, &xs, &ys, &ch, MT);
    if open {
        open_note(&mut o, h);
    }
    // Offsets from a column's centre shrink with narrow columns.
    let f = ((W - MR - ML) / groups.len() as f64 / 80.0).min(1.0);
    for (i, g) in groups.iter().enumerate() {
        dot_group(&mut o, i, g, &xs, &ys, fmt, f);
    }
    o.push_str("</svg>");
    o
}

/// One column of a dot plot: its trials, CI whisker and mean; offsets
/// scaled by `f`.
fn dot_group(
    o: &mut String,
    i: usize,
    g: &DotGroup,
    xs: &Scale,
    ys: &Scale,
    fmt: fn(f64) -> String,
    f: f64,
) {
    let color = PALETTE[i % PALETTE.len()];
    let cx = xs.px(i as f64);
    let k = g.values.len().max(1) as f64;
    for (j, &v) in g.values.iter().enumerate() {
        // Spread the dots sideways a little so equal values stay visible.
        let dx = (j as f64 - (k - 1.0) / 2.0) * (40.0 * f / k).min(8.0 * f);
        let _ = write!(
            o,
            "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{color}\" fill-opacity=\"0.75\" class=\"trial\"><title>{} trial {}: {}</title></circle>",
            c(cx + dx),
            c(ys.px(v)),
            esc(&g.name),
            j + 1,
            esc(&fmt(v))
        );
    }
    let wx = cx + 34.0 * f;
    if g.ci.0.is_finite() && g.ci.1.is_finite() && g.values.len() > 1 {
        let span = format!("95 % CI [{}, {}]", fmt(g.ci.0), fmt(g.ci.1));
        if g.ci.0 < 0.0 {
            open_bar(o, wx, ys.px(g.ci.1), ys.p0, "#000", &span);
        } else {
            let _ = write!(
                o,
                "<path d=\"M{} {}V{}M{} {}H{}M{} {}H{}\" stroke=\"#000\" fill=\"none\" class=\"ci\"><title>{}</title></path>",
                c(wx),
                c(ys.px(g.ci.0)),
                c(ys.px(g.ci.1)),
                c(wx - 4.0),
                c(ys.px(g.ci.0)),
                c(wx + 4.0),
                c(wx - 4.0),
                c(ys.px(g.ci.1)),
                c(wx + 4.0),
                esc(&span)
            );
        }
    }
    let _ = write!(
        o,
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"2\" class=\"mean\"><title>mean {}</title></line>",
        c(cx - 24.0 * f),
        c(cx + 40.0 * f),
        c(ys.px(g.mean)),
        c(ys.px(g.mean)),
        esc(&fmt(g.mean))
    );
}

/// A latency histogram: bars over a log-scaled latency axis (x) with the
/// share of I/Os (y, %).
pub fn histogram(id: &str, title: &str, bins: &[(u64, u64)]) -> String {
    let h = H;
    let mut o = String::new();
    let total: u64 = bins.iter().map(|b| b.1).sum();
    open_svg(
        &mut o,
        id,
        title,
        &format!(
            "{} bins, {total} I/Os; x: latency (log scale), y: share of I/Os in %",
            bins.len()
        ),
        h,
    );
    if total == 0 {
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" class=\"empty\">no data</text></svg>",
            W / 2.0,
            h / 2.0
        );
        return o;
    }
    // Regroup the fine buckets into 10 bars per decade.
    let mut bars: Vec<(f64, u64)> = Vec::new();
    for &(v, n) in bins {
        let key = ((v.max(1) as f64).log10() * 10.0).floor() / 10.0;
        match bars.last_mut() {
            Some(b) if (b.0 - key).abs() < 1e-9 => b.1 += n,
            _ => bars.push((key, n)),
        }
    }
    let ymax = bars.iter().map(|b| b.1).max().unwrap_or(1) as f64 * 100.0 / total as f64;
    let lo = bars.first().map(|b| b.0).unwrap_or(0.0).floor();
    let hi = bars.last().map(|b| b.0 + 0.1).unwrap_or(1.0).ceil();
    let xs = Scale::fixed(lo, hi, ML, W - MR);
    let ys = Scale::new(0.0, ymax * 1.08, false, h - MB, MT);
    let ch = LineChart {
        x_label: "latency (log scale)",
        y_label: "share of I/Os (%)",
        fmt_y: |v| format!("{v:.0} %"),
        fmt_x: |e| ns(10f64.powf(e)),
        ..Default::default()
    };
    // Decade ticks only.
    let mut axes_o = String::new();
    axes(&mut axes_o, &xs, &ys, &ch, MT);
    o.push_str(&axes_o);
    for &(k, n) in &bars {
        let x0 = xs.px(k);
        let x1 = xs.px(k + 0.1);
        let pct = n as f64 * 100.0 / total as f64;
        let y = ys.px(pct);
        let _ = write!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" class=\"bar\"><title>{} – {}: {:.2} % ({n} I/Os)</title></rect>",
            c(x0 + 0.5),
            c(y),
            c((x1 - x0 - 1.0).max(1.0)),
            c(h - MB - y),
            PALETTE[0],
            esc(&ns(10f64.powf(k))),
            esc(&ns(10f64.powf(k + 0.1))),
            pct
        );
    }
    o.push_str("</svg>");
    o
}

/// One horizontal bar with stacked parts (name, value, palette index).
#[derive(Debug, Clone, Default)]
pub struct BarRow {
    pub name: String,
    pub parts: Vec<(String, f64, usize)>,
}

/// A bar chart's legend: its keys (name, palette index) in the order the
/// bars meet them, each with its x and its line's y offset, wrapped into
/// lines at the right margin; and the number of lines after the first.
fn bar_legend(rows: &[BarRow], left: f64) -> (Vec<(String, usize, f64, f64)>, f64) {
    let mut keys: Vec<(String, usize, f64, f64)> = Vec::new();
    let (mut x, mut line) = (left, 0.0);
    for (name, _, style) in rows.iter().flat_map(|r| &r.parts) {
        if keys.iter().any(|k| &k.0 == name) {
            continue;
        }
        let w = 30.0 + 6.5 * name.chars().count() as f64;
        if x + w > W - MR && x > left {
            x = left;
            line += 1.0;
        }
        keys.push((name.clone(), *style, x, 14.0 * line));
        x += w;
    }
    (keys, line)
}

/// Horizontal stacked bars, one row per entry.
pub fn bars(
    id: &str,
    title: &str,
    x_label: &str,
    fmt: fn(f64) -> String,
    rows: &[BarRow],
) -> String {
    let row_h = 26.0;
    let left = 170.0;
    let (legend, lines) = bar_legend(rows, left);
    let top = MT + 8.0 + 14.0 * lines;
    let h = top + MB + row_h * rows.len().max(1) as f64;
    let mut o = String::new();
    open_svg(
        &mut o,
        id,
        title,
        &format!("{} bar(s); x: {x_label}", rows.len()),
        h,
    );
    let xmax = rows
        .iter()
        .map(|r| r.parts.iter().map(|p| p.1.max(0.0)).sum::<f64>())
        .fold(0.0, f64::max);
    if rows.is_empty() || xmax <= 0.0 {
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" class=\"empty\">no data</text></svg>",
            W / 2.0,
            h / 2.0
        );
        return o;
    }
    let xs = Scale::new(0.0, xmax * 1.1, false, left, W - MR);
    let _ = write!(
        o,
        "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
        c(left),
        c(top),
        c(W - MR - left),
        c(h - MB - top)
    );
    bar_axis(&mut o, &xs, h, top, left, x_label, fmt);
    for (i, r) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h + 3.0;
        let fit = ((left - 10.0) / CHAR_W) as usize;
        let shown: String = if r.name.chars().count() > fit {
            r.name.chars().take(fit - 1).chain(['…']).collect()
        } else {
            r.name.clone()
        };
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" class=\"yt\">{}<title>{}</title></text>",
            c(left - 6.0),
            c(y + 14.0),
            esc(&shown),
            esc(&r.name)
        );
        let mut x = 0.0;
        for (name, v, style) in &r.parts {
            let v = v.max(0.0);
            let _ = write!(
                o,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" class=\"bar\"><title>{}, {}: {}</title></rect>",
                c(xs.px(x)),
                c(y),
                c(xs.px(x + v) - xs.px(x)),
                c(row_h - 6.0),
                PALETTE[style % PALETTE.len()],
                esc(&r.name),
                esc(name),
                esc(&fmt(v))
            );
            x += v;
        }
    }
    for (name, style, x, dy) in &legend {
        let _ = write!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" class=\"lgt\">{}</text>",
            c(*x),
            c(27.0 + dy),
            PALETTE[*style % PALETTE.len()],
            c(x + 16.0),
            c(36.0 + dy),
            esc(name)
        );
    }
    o.push_str("</svg>");
    o
}

/// The value axis of a bar chart: grid lines, tick labels and its label.
fn bar_axis(
    o: &mut String,
    xs: &Scale,
    h: f64,
    top: f64,
    left: f64,
    x_label: &str,
    fmt: fn(f64) -> String,
) {
    for t in xs.ticks() {
        let x = xs.px(t);
        if x > W - MR + 0.5 {
            continue;
        }
        let _ = write!(
            o,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"grid\"/><text x=\"{}\" y=\"{}\" class=\"xt\">{}</text>",
            c(x),
            c(x),
            c(top),
            c(h - MB),
            c(x),
            c(h - MB + 16.0),
            esc(&fmt(t))
        );
    }
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" class=\"xl\">{}</text>",
        c((left + W - MR) / 2.0),
        c(h - 10.0),
        esc(x_label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A legend wider than the chart wraps onto a second line, and the
    /// bars move down by that line instead of being drawn over it.
    #[test]
    fn a_wide_bar_legend_wraps_above_the_bars() {
        let parts: Vec<(String, f64, usize)> = (0..6)
            .map(|i| (format!("a fairly long stage name {i}"), 1.0, i))
            .collect();
        let rows = [BarRow {
            name: "read".into(),
            parts,
        }];
        let (keys, lines) = bar_legend(&rows, 170.0);
        assert_eq!(keys.len(), 6);
        assert!(lines >= 1.0, "{keys:?}");
        for k in &keys {
            assert!(k.2 + 30.0 + 6.5 * k.0.chars().count() as f64 <= W - MR || k.2 == 170.0);
        }
        let one = bars("x", "t", "x", num, &rows[..0]);
        let svg = bars("x", "t", "x", num, &rows);
        let first_bar_y = |s: &str| -> f64 {
            let i = s.find("class=\"bar\"").unwrap();
            let r = &s[s[..i].rfind("<rect").unwrap()..i];
            let y = r.split("y=\"").nth(1).unwrap().split('"').next().unwrap();
            y.parse().unwrap()
        };
        assert!(first_bar_y(&svg) >= MT + 8.0 + 14.0, "{svg}");
        assert!(!one.is_empty());
    }

    #[test]
    fn ticks_are_nice_and_cover() {
        assert_eq!(lin_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = lin_ticks(0.0, 1234.0);
        assert!(
            t.first() == Some(&0.0) && *t.last().unwrap() >= 1000.0,
            "{t:?}"
        );
    }

    #[test]
    fn downsample_keeps_the_mean_and_bounds_size() {
        let p: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 5.0)).collect();
        let d = downsample(&p, 400);
        assert!(d.len() <= 400);
        assert!(d.iter().all(|q| q.1 == 5.0));
    }

    #[test]
    fn text_is_escaped() {
        let s = line_chart(&LineChart {
            id: "x",
            title: "a<b & \"c\"",
            fmt_y: num,
            fmt_x: num,
            lines: vec![Line {
                name: "<script>".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
                ..Default::default()
            }],
            ..Default::default()
        });
        assert!(!s.contains("<script>") && s.contains("a&lt;b &amp; &quot;c&quot;"));
    }

    #[test]
    fn log_scale_drops_non_positive_points() {
        let s = line_chart(&LineChart {
            id: "l",
            title: "t",
            log_y: true,
            fmt_y: ns,
            fmt_x: num,
            lines: vec![Line {
                name: "a".into(),
                points: vec![(0.0, 0.0), (1.0, 100.0), (2.0, 1000.0)],
                markers: true,
                ..Default::default()
            }],
            ..Default::default()
        });
        assert_eq!(s.matches("<circle").count(), 2, "{s}");
    }
}

/// Snapshot tests: fixed inputs, the SVG compared byte for byte with the
/// file in `svg/snapshots/`. After an intended change, rerun with
/// `UPDATE_SNAPSHOTS=1` and review the diff of the .svg files.
#[cfg(test)]
mod snapshots {
    use super::*;

    fn check(name: &str, svg: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/svg/snapshots")
            .join(format!("{name}.svg"));
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, svg).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e}; create it with UPDATE_SNAPSHOTS=1", path.display())
        });
        assert!(
            want == svg,
            "{name}: the SVG changed; if intended, UPDATE_SNAPSHOTS=1 and review.\n--- want\n{want}\n--- got\n{svg}"
        );
    }

    #[test]
    fn time_series_with_ramp() {
        let line = |t: usize, f: f64| Line {
            name: format!("trial {t}"),
            points: (1..=6)
                .map(|i| (i as f64, f * (1000.0 + 50.0 * (i % 3) as f64)))
                .collect(),
            color: t - 1,
            markers: true,
            ..Default::default()
        };
        check(
            "time_series",
            &line_chart(&LineChart {
                id: "ts",
                title: "IOPS per interval",
                x_label: "time (s)",
                y_label: "IOPS",
                shade: vec![(0.0, 2.0, "ramp")],
                lines: vec![line(1, 1.0), line(2, 1.1)],
                ..Default::default()
            }),
        );
    }

    #[test]
    fn log_scale_percentiles_with_error_bars() {
        check(
            "log_errbars",
            &line_chart(&LineChart {
                id: "le",
                title: "IOPS vs iodepth",
                x_label: "iodepth",
                y_label: "latency",
                log_y: true,
                fmt_y: ns,
                lines: vec![Line {
                    name: "randread".into(),
                    points: vec![(1.0, 80_000.0), (4.0, 95_000.0), (16.0, 250_000.0)],
                    err: vec![
                        (75_000.0, 85_000.0),
                        (90_000.0, 99_000.0),
                        (200_000.0, 300_000.0),
                    ],
                    markers: true,
                    ..Default::default()
                }],
                ..Default::default()
            }),
        );
    }

    #[test]
    fn dots_histogram_bars() {
        check(
            "dots",
            &dot_plot(
                "d",
                "IOPS per trial",
                "IOPS",
                num,
                &[DotGroup {
                    name: "job".into(),
                    values: vec![100.0, 110.0, 105.0],
                    mean: 105.0,
                    ci: (92.6, 117.4),
                }],
            ),
        );
        check(
            "histogram",
            &histogram(
                "h",
                "latency histogram",
                &[(900, 5), (1_000, 50), (1_100, 40), (50_000, 5)],
            ),
        );
        check(
            "bars",
            &bars(
                "b",
                "CPU per I/O",
                "µs",
                num,
                &[BarRow {
                    name: "job".into(),
                    parts: vec![("user".into(), 1.5, 0), ("system".into(), 3.0, 1)],
                }],
            ),
        );
    }
}
