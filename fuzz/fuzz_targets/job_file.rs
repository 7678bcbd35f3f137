//! Arbitrary UTF-8 text as a job file. `parse_job_text` never reads files
//! (`include` is only followed by `parse_job_file`), so any input is safe.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(e) = dioscope_core::job::parse_job_text(text) {
        assert!(!e.to_string().is_empty());
    }
});
