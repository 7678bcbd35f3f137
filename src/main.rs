//! dioscope: benchmark and diagnose direct I/O on Linux files and block devices.
//!
//! The binary is thin: it parses the command line, hands the plan to
//! `dioscope_core`, renders the result and chooses the exit code
//! (0 ok, 1 I/O errors, 2 bad input, 128+N interrupted by signal N).

mod cli;

fn main() {
    std::process::exit(cli::main(std::env::args().skip(1).collect()));
}
