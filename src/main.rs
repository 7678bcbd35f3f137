//! dioscope: benchmark and diagnose direct I/O on Linux files and block devices.
//!
//! The binary is thin: the commands, their table and the usage live in
//! `dioscope_core::commands`; this only hands it the arguments and exits
//! with its code (0 ok, 1 I/O errors, 2 bad input, 128+N interrupted by
//! signal N).

#![forbid(unsafe_code)]

fn main() {
    // Arguments are bytes (a file name need not be UTF-8): taken in
    // losslessly (dioscope_core::osstr), never a panic.
    std::process::exit(dioscope_core::commands::main(
        std::env::args_os()
            .skip(1)
            .map(|a| dioscope_core::osstr::escape(&a))
            .collect(),
    ));
}
