//! dioscope: benchmark and diagnose direct I/O on Linux files and block devices.
//!
//! The binary is thin: the commands, their table and the usage live in
//! `dioscope_core::commands`; this only hands it the arguments and exits
//! with its code (0 ok, 1 I/O errors, 2 bad input, 128+N interrupted by
//! signal N).

#![forbid(unsafe_code)]

fn main() {
    std::process::exit(dioscope_core::commands::main(
        std::env::args().skip(1).collect(),
    ));
}
