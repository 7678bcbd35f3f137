//! Every value parser in `job::units`, fed the same string. Each must return
//! Ok or Err; the checks below are the invariants the callers rely on.
#![no_main]

use dioscope_core::job::units::*;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = eval(s);
    let _ = parse_size(s);
    let _ = parse_int(s);
    let _ = parse_bool(s);
    if let Ok(v) = parse_float(s) {
        assert!(v.is_finite());
    }
    if let Ok(p) = parse_size_or_pct(s) {
        let _ = p.resolve(u64::MAX);
        let _ = p.resolve(0);
    }
    let _ = parse_time_us(s, 1);
    let _ = parse_time_us(s, 1_000_000);
    if let Ok((lo, hi)) = parse_range(s) {
        assert!(lo <= hi);
    }
    if let Ok(cpus) = parse_cpu_list(s) {
        assert!(!cpus.is_empty());
    }
});
