//! fio's value syntax: sizes, times, booleans, ranges, arithmetic.
//!
//! Sizes follow fio's default `kb_base=1024`: `4k` = `4kb` = 4096, `1m` = 1 MiB,
//! suffixes case-insensitive; the `Ki`/`Mi`/... forms are the 1000-based ones
//! (fio's compatibility mode, which is backwards but is what job files mean).
//! A parenthesised arithmetic expression such as `(1024*4)` may stand for the
//! number. Times default to seconds unless the option says otherwise.

/// Why a value did not parse; the caller adds the option name and an example.
pub type UnitError = String;

fn split_number(s: &str) -> (&str, &str) {
    let idx = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    (&s[..idx], &s[idx..])
}

/// Evaluate a leading parenthesised arithmetic expression, returning the value
/// and the rest of the string (e.g. a unit suffix).
fn leading_expr(s: &str) -> Result<(f64, &str), UnitError> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    let v = eval(&s[1..i])?;
                    return Ok((v, &s[i + 1..]));
                }
            }
            _ => {}
        }
    }
    Err(format!("unbalanced parentheses in '{s}'"))
}

/// How deeply parentheses, unary minus and `^` may nest in [`eval`]. Each
/// level is a few stack frames, and job files and arguments have no length
/// limit, so without a bound `((((...1))))` overflows the stack.
const MAX_EXPR_DEPTH: usize = 64;

/// The state of [`eval`]: the expression, where it is, how deeply it nests.
struct Expr<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}
impl Expr<'_> {
    /// Run `f` one nesting level deeper, refusing past [`MAX_EXPR_DEPTH`].
    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<f64, UnitError>,
    ) -> Result<f64, UnitError> {
        if self.depth >= MAX_EXPR_DEPTH {
            return Err(format!("expression nests more than {MAX_EXPR_DEPTH} deep"));
        }
        self.depth += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }
    fn sum(&mut self) -> Result<f64, UnitError> {
        let mut v = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if c == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<f64, UnitError> {
        let mut v = self.power()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.power()?;
            v = match c {
                b'*' => v * r,
                b'/' if r == 0.0 => return Err("division by zero".into()),
                b'/' => v / r,
                _ if r == 0.0 => return Err("modulo by zero".into()),
                _ => v % r,
            };
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, UnitError> {
        let b = self.atom()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let e = self.nested(Self::power)?;
            return Ok(b.powf(e));
        }
        Ok(b)
    }
    fn atom(&mut self) -> Result<f64, UnitError> {
        match self.peek() {
            Some(b'(') => {
                self.i += 1;
                let v = self.nested(Self::sum)?;
                if self.peek() != Some(b')') {
                    return Err("missing ')'".into());
                }
                self.i += 1;
                Ok(v)
            }
            Some(b'-') => {
                self.i += 1;
                Ok(-self.nested(Self::atom)?)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            _ => Err(format!(
                "unexpected '{}' in expression",
                std::str::from_utf8(&self.b[self.i..]).unwrap_or("?")
            )),
        }
    }
    /// A number with an optional size suffix (`4k`, `1.5`).
    fn number(&mut self) -> Result<f64, UnitError> {
        let st = self.i;
        while self.i < self.b.len()
            && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'.')
        {
            self.i += 1;
        }
        let tok = std::str::from_utf8(&self.b[st..self.i]).unwrap();
        parse_size(tok).map(|v| v as f64).or_else(|_| {
            tok.parse::<f64>()
                .map_err(|_| format!("'{tok}' is not a number"))
        })
    }
}

/// A tiny recursive-descent evaluator for + - * / % ^ and parentheses.
fn eval(expr: &str) -> Result<f64, UnitError> {
    let mut p = Expr {
        b: expr.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.sum()?;
    if p.peek().is_some() {
        return Err(format!("trailing text in expression '{expr}'"));
    }
    Ok(v)
}

thread_local! {
    /// fio's `kb_base` for the sizes parsed on this thread (1024 or 1000).
    static KB_BASE: std::cell::Cell<u64> = const { std::cell::Cell::new(1024) };
}

thread_local! {
    /// Trailing characters a size ignored on this thread (see [`parse_size`]),
    /// for the job parser to warn about.
    static IGNORED_TAILS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The trailing characters sizes ignored since the last call, oldest first.
pub fn take_ignored_tails() -> Vec<String> {
    IGNORED_TAILS.with(|t| std::mem::take(&mut *t.borrow_mut()))
}

/// Splits a size's suffix into its unit and trailing punctuation
/// (`k)` → `k`, `)`): fio reads a size's unit by its leading letters and
/// ignores what follows (fio's own t/strided.py passes `--filesize=65536)`).
/// Letters and digits stay in the unit, so a mistyped unit (`4q`) is
/// still an error, and so does anything after it that is not ASCII
/// punctuation.
fn split_tail(suffix: &str) -> (&str, &str) {
    let t = suffix.trim();
    let end = t
        .char_indices()
        .rev()
        .find(|&(_, c)| c.is_alphanumeric() || c == '%')
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(0);
    // Only ASCII punctuation is a tail: any other character stays in the
    // unit, which is then refused by name.
    if t[end..].chars().all(|c| c.is_ascii_punctuation()) {
        (&t[..end], &t[end..])
    } else {
        (t, "")
    }
}

/// Run `f` with fio's `kb_base` in force for the sizes it parses: 1024
/// (the default, fio's compatibility mode: `4k` = 4096, `4Ki` = 4000) or
/// 1000 (SI: `4k` = 4000, `4KiB` = 4096).
pub fn with_kb_base<R>(base: u64, f: impl FnOnce() -> R) -> R {
    let before = KB_BASE.with(|b| b.replace(base));
    // Restored on unwind too: a panic must not leave SI units behind.
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            KB_BASE.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

fn size_multiplier(suffix: &str) -> Option<u64> {
    let s = suffix.trim();
    if s.is_empty() {
        return Some(1);
    }
    let lower = s.to_ascii_lowercase();
    // Split by chars, not bytes: the suffix may start with a multi-byte character.
    let mut chars = lower.chars();
    let unit = chars.next()?;
    // "Ki", "KiB", "Mi", ...: 1000-based in fio's default compatibility mode.
    let (decimal, rest) = match chars.as_str().strip_prefix('i') {
        Some(rest) => (true, rest),
        None => (false, chars.as_str()),
    };
    if !(rest.is_empty() || rest == "b") {
        return None;
    }
    // kb_base=1000 swaps them: SI prefixes are powers of 10, IEC of 2.
    let si = KB_BASE.with(|b| b.get()) == 1000;
    let base: u64 = if decimal != si { 1000 } else { 1024 };
    let exp = match unit {
        'b' if lower == "b" => 0,
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    Some(base.pow(exp))
}

/// Parse a size in bytes: `4096`, `4k`, `1.5m`, `0x1000`, `(1024*4)k`.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty size".into());
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| format!("'{s}' is not a hex number"));
    }
    let (num, suffix) = if s.starts_with('(') {
        leading_expr(s)?
    } else {
        let (n, suf) = split_number(s);
        if n.is_empty() || n == "-" || n == "+" {
            return Err(format!("'{s}' is not a size"));
        }
        (
            n.parse::<f64>()
                .map_err(|_| format!("'{s}' is not a size"))?,
            suf,
        )
    };
    if num < 0.0 {
        return Err(format!("'{s}' is negative"));
    }
    let (suffix, tail) = split_tail(suffix);
    let mult =
        size_multiplier(suffix).ok_or_else(|| format!("'{s}' has an unknown unit '{suffix}'"))?;
    if !tail.is_empty() {
        IGNORED_TAILS.with(|t| t.borrow_mut().push(format!("'{s}': the trailing '{tail}'")));
    }
    let v = num * mult as f64;
    // u64::MAX as f64 rounds up to 2^64, which does not fit: hence >=.
    if !v.is_finite() || v >= u64::MAX as f64 {
        return Err(format!("'{s}' is too large"));
    }
    Ok(v.round() as u64)
}

/// A size that may be given as a percentage of the target (`size=50%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeOrPct {
    Bytes(u64),
    Percent(f64),
}

impl SizeOrPct {
    /// Resolve against a target size.
    pub fn resolve(&self, whole: u64) -> u64 {
        match *self {
            SizeOrPct::Bytes(b) => b,
            SizeOrPct::Percent(p) => (whole as f64 * p / 100.0) as u64,
        }
    }
}

pub fn parse_size_or_pct(s: &str) -> Result<SizeOrPct, UnitError> {
    let s = s.trim();
    if let Some(p) = s.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("'{s}' is not a percentage"))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(format!("'{s}' is not between 0% and 100%"));
        }
        return Ok(SizeOrPct::Percent(v));
    }
    parse_size(s).map(SizeOrPct::Bytes)
}

/// Parse a time into microseconds. `default_unit_us` is what a bare number
/// means (1_000_000 for runtime/ramp_time/startdelay).
pub fn parse_time_us(s: &str, default_unit_us: u64) -> Result<u64, UnitError> {
    let s = s.trim();
    let (num, suffix) = if s.starts_with('(') {
        leading_expr(s)?
    } else {
        let (n, suf) = split_number(s);
        if n.is_empty() {
            return Err(format!("'{s}' is not a time"));
        }
        (
            n.parse::<f64>()
                .map_err(|_| format!("'{s}' is not a time"))?,
            suf,
        )
    };
    if num < 0.0 {
        return Err(format!("'{s}' is negative"));
    }
    let mult = match suffix.trim().to_ascii_lowercase().as_str() {
        "" => default_unit_us,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" | "sec" => 1_000_000,
        "m" | "min" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        other => return Err(format!("'{s}' has an unknown time unit '{other}'")),
    };
    let v = (num * mult as f64).round();
    // `as u64` would quietly turn NaN into 0 and anything huge into u64::MAX.
    if !v.is_finite() || v >= u64::MAX as f64 {
        return Err(format!("'{s}' is too large"));
    }
    Ok(v as u64)
}

/// fio booleans: 1/0, true/false, yes/no, on/off; an empty value (bare flag) is true.
pub fn parse_bool(s: &str) -> Result<bool, UnitError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("'{s}' is not a boolean")),
    }
}

/// A non-negative integer, with size suffixes and arithmetic allowed (`iodepth=(16*2)`).
pub fn parse_int(s: &str) -> Result<u64, UnitError> {
    parse_size(s).map_err(|_| format!("'{}' is not a whole number", s.trim()))
}

/// A float such as a percentile.
pub fn parse_float(s: &str) -> Result<f64, UnitError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("'{}' is not a number", s.trim()))
}

/// A size range `1k-4k` or `1k:4k`.
pub fn parse_range(s: &str) -> Result<(u64, u64), UnitError> {
    let s = s.trim();
    let (a, b) = s
        .split_once('-')
        .or_else(|| s.split_once(':'))
        .ok_or_else(|| format!("'{s}' is not a range"))?;
    let (lo, hi) = (parse_size(a)?, parse_size(b)?);
    if lo > hi {
        return Err(format!("'{s}' has its low end above its high end"));
    }
    Ok((lo, hi))
}

/// The most CPUs a `cpu_set_t` (what `sched_setaffinity` takes) can name.
const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

/// A CPU list `0-3,6,8-9`. CPU numbers are below [`MAX_CPUS`], which also
/// keeps a range such as `0-99999999999` from expanding into a huge list.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, UnitError> {
    let cpu = |t: &str, part: &str, what: &str| -> Result<usize, UnitError> {
        let c: usize = t
            .trim()
            .parse()
            .map_err(|_| format!("'{part}' is not a CPU {what}"))?;
        if c >= MAX_CPUS {
            return Err(format!(
                "CPU {c} in '{part}' is beyond the {MAX_CPUS} CPUs an affinity mask can hold"
            ));
        }
        Ok(c)
    };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (cpu(a, part, "range")?, cpu(b, part, "range")?);
            if a > b {
                return Err(format!("'{part}' is not a CPU range"));
            }
            out.extend(a..=b);
        } else {
            out.push(cpu(part, part, "number")?);
        }
    }
    if out.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn trailing_punctuation_after_a_size_is_ignored_and_reported() {
        take_ignored_tails();
        assert_eq!(parse_size("65536)").unwrap(), 65536);
        assert_eq!(parse_size("4k)").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(take_ignored_tails().len(), 2);
        assert!(take_ignored_tails().is_empty());
        // A mistyped unit is still an error.
        assert!(parse_size("4q").is_err());
        assert!(parse_size("4kq)").is_err());
    }

    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4kb").unwrap(), 4096);
        assert_eq!(parse_size("4KB").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("2t").unwrap(), 2 << 40);
        assert_eq!(parse_size("1.5m").unwrap(), 3 << 19);
        assert_eq!(parse_size("0x1000").unwrap(), 4096);
        // kb_base=1000: SI prefixes are decimal, IEC binary; then back.
        with_kb_base(1000, || {
            assert_eq!(parse_size("4k").unwrap(), 4000);
            assert_eq!(parse_size("4KiB").unwrap(), 4096);
            assert_eq!(parse_size("1m").unwrap(), 1_000_000);
        });
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4Ki").unwrap(), 4000);
        assert_eq!(parse_size("4Ki").unwrap(), 4000);
        assert_eq!(parse_size("1MiB").unwrap(), 1_000_000);
        assert_eq!(parse_size("512b").unwrap(), 512);
        assert_eq!(parse_size("(1024*4)").unwrap(), 4096);
        assert_eq!(parse_size("(2+2)k").unwrap(), 4096);
        assert!(parse_size("banana").is_err());
        assert!(parse_size("4q").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-4k").is_err());
    }

    #[test]
    fn percent() {
        assert_eq!(parse_size_or_pct("50%").unwrap(), SizeOrPct::Percent(50.0));
        assert_eq!(SizeOrPct::Percent(50.0).resolve(1000), 500);
        assert!(parse_size_or_pct("150%").is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_us("10", 1_000_000).unwrap(), 10_000_000);
        assert_eq!(parse_time_us("10s", 1_000_000).unwrap(), 10_000_000);
        assert_eq!(parse_time_us("250ms", 1_000_000).unwrap(), 250_000);
        assert_eq!(parse_time_us("250msec", 1_000_000).unwrap(), 250_000);
        assert_eq!(parse_time_us("5us", 1_000_000).unwrap(), 5);
        assert_eq!(parse_time_us("2m", 1_000_000).unwrap(), 120_000_000);
        assert_eq!(parse_time_us("1h", 1_000_000).unwrap(), 3_600_000_000);
        assert_eq!(parse_time_us("1d", 1_000_000).unwrap(), 86_400_000_000);
        assert!(parse_time_us("1y", 1_000_000).is_err());
    }

    #[test]
    fn bools_ranges_cpus() {
        assert!(parse_bool("").unwrap());
        assert!(!parse_bool("0").unwrap());
        assert!(parse_bool("yes").unwrap());
        assert!(parse_bool("maybe").is_err());
        assert_eq!(parse_range("1k-4k").unwrap(), (1024, 4096));
        assert_eq!(parse_range("1k:4k").unwrap(), (1024, 4096));
        assert!(parse_range("4k-1k").is_err());
        assert_eq!(parse_cpu_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(eval("(2+3)*4").unwrap(), 20.0);
        assert_eq!(eval("2^10").unwrap(), 1024.0);
    }
}

#[cfg(test)]
mod fuzz_regressions {
    //! Inputs found by `cargo fuzz` (see fuzz/README.md) or by reading the code
    //! while writing the targets; each once panicked, overflowed or hung.
    use super::*;

    #[test]
    fn deep_expressions_are_errors_not_stack_overflows() {
        let n = 200_000;
        let parens = format!("{}1{}", "(".repeat(n), ")".repeat(n));
        assert!(eval(&parens).is_err());
        assert!(parse_size(&parens).is_err());
        assert!(eval(&format!("{}1", "-".repeat(n))).is_err());
        assert!(eval(&format!("{}2", "2^".repeat(n))).is_err());
        // Reasonable nesting still works.
        assert_eq!(eval("((((2))))*-(-3)").unwrap(), 6.0);
        assert_eq!(eval("2^3^2").unwrap(), 512.0);
    }

    #[test]
    fn multibyte_unit_suffix_is_an_error_not_a_panic() {
        // Found by the `units` target: the suffix was sliced at byte 1.
        assert!(parse_size("4\u{5a1}").is_err());
        assert!(parse_size("1é").is_err());
        assert!(parse_size("1ıb").is_err());
        assert!(parse_time_us("1é", 1).is_err());
        assert!(parse_range("1é-2").is_err());
    }

    #[test]
    fn huge_cpu_ranges_are_refused() {
        // Found by the `units` target: `0-344444444444444` tried to build a
        // list of 3e14 CPUs. CPU numbers past the affinity mask would also
        // have panicked in libc::CPU_SET later.
        assert!(parse_cpu_list("0-344444444444444,-9").is_err());
        assert!(parse_cpu_list(&format!("0-{MAX_CPUS}")).is_err());
        assert_eq!(
            parse_cpu_list(&format!("0-{}", MAX_CPUS - 1))
                .unwrap()
                .len(),
            MAX_CPUS
        );
    }

    #[test]
    fn out_of_range_numbers_are_errors() {
        // 2^64 and up used to saturate to u64::MAX, NaN to 0.
        assert!(parse_size("18446744073709551616").is_err());
        assert!(parse_size("1000000000p").is_err());
        assert!(parse_size("(2^99999)").is_err());
        assert!(parse_time_us("99999999999999999999d", 1_000_000).is_err());
        assert!(parse_time_us("(2^99999)", 1_000_000).is_err());
        assert!(parse_time_us("(2^99999-2^99999)", 1_000_000).is_err());
        assert_eq!(parse_size("16383p").unwrap(), 16383 << 50);
    }
}
