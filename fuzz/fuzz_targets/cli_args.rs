//! Fuzz input split into command-line words for `parse_args`.
//!
//! Words that do not start with `--` are dropped: `parse_args` treats them as
//! job-file paths and would read whatever file the fuzzer names. Values still
//! reach options through `--key=value`; the `--key value` form is exercised
//! only when the next word is itself an option, which is the case that matters
//! (it must not be eaten as a value).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let args: Vec<&str> = text
        .split(['\n', '\0'])
        .filter(|a| a.starts_with("--"))
        .collect();
    if let Err(e) = dioscope_core::job::parse_args(&args) {
        assert!(!e.to_string().is_empty());
    }
});
