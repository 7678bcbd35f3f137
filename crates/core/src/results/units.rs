//! Units and human formatting: the one place numbers become text, so the
//! summary, the findings, the progress line and the doctor all say `4.00 KiB`
//! the same way.

/// `12.3k`, `1.20M`: a count or a rate, about four significant digits.
pub fn human_count(v: f64) -> String {
    // A confidence bound can fall below zero (a t interval over a wide
    // spread): keep the sign, scale the magnitude.
    if v < 0.0 {
        return format!("-{}", human_count(-v));
    }
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// The conventions every output follows (docs/STATISTICS.md): `±` is the
/// standard deviation (mean ± σ), and an interval is `LEVEL [low, high]`,
/// e.g. `95 % CI [9.80k, 10.2k]`, never a bare `±` half-width.
pub fn interval(level: &str, low: &str, high: &str) -> String {
    format!("{level} [{low}, {high}]")
}

/// The 95 % confidence interval of a mean, in the convention of [`interval`].
pub fn ci95(low: &str, high: &str) -> String {
    interval("95 % CI", low, high)
}

/// Bytes in binary units with three significant digits: `512 B`,
/// `4.00 KiB`, `64.0 KiB`, `482 MiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", UNITS[u])
    } else if v >= 10.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// A byte rate (bytes per second, fractional) as [`human_bytes`].
pub fn human_rate(bytes_per_s: f64) -> String {
    human_bytes(bytes_per_s.max(0.0).round() as u64)
}

/// Nanoseconds in a readable unit.
pub fn human_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// `Fri Nov 20 22:34:21 2026` (UTC) from seconds since the epoch, as fio's
/// `time` field.
pub fn ctime(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        WD[days.rem_euclid(7) as usize],
        MON[(m - 1) as usize],
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        y
    )
}

/// Text wrapped at 100 columns, continuation lines indented by `indent`
/// (the findings in the summary and the doctor's checklist).
pub fn wrap(text: &str, indent: usize) -> String {
    let width = 100usize.saturating_sub(indent).max(40);
    let mut out = String::new();
    let mut line = 0;
    for w in text.split_whitespace() {
        if line > 0 && line + 1 + w.chars().count() > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(w);
        line += w.chars().count();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(human_count(123_456.0), "123.5k");
        assert_eq!(human_count(1_234_567.0), "1.23M");
        assert_eq!(human_count(-2_058_004.0), "-2.06M");
        assert_eq!(human_bytes(482 * 1024 * 1024), "482 MiB");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(4096), "4.00 KiB");
        assert_eq!(human_bytes(100 << 20), "100 MiB");
        assert_eq!(human_bytes(25 * 4096), "100 KiB");
        assert_eq!(human_bytes(64 << 10), "64.0 KiB");
        assert_eq!(human_rate(1536.4), "1.50 KiB");
        assert_eq!(human_ns(1500.0), "1.5µs");
    }

    #[test]
    fn ctime_known_dates() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_795_732_461), "Thu Nov 26 22:34:21 2026");
    }
}
