//! Compiles `--stages`' raw-tracepoint program (src/stages/bpf/stages.bpf.c)
//! with clang into OUT_DIR, where src/stages/raw.rs embeds it with
//! `include_bytes!` and the `dioscope_rawtp` cfg says it is there.
//!
//! Compiled at build time rather than committed as an object: the object
//! always matches its source, and nothing binary is reviewed by eye. The
//! program is portable across kernels without a rebuild: its field reads
//! are CO-RE relocations that libbpf resolves at load time against the
//! running kernel's BTF.
//!
//! Without clang (or libbpf's BPF headers, libbpf-dev) the build goes on
//! without the program, and `--stages` runs on bpftrace as before
//! (docs/STAGES.md); a clang that fails is a cargo warning, not an error.

use std::path::PathBuf;
use std::process::Command;

const SRC: &str = "src/stages/bpf/stages.bpf.c";

fn main() {
    println!("cargo:rustc-check-cfg=cfg(dioscope_rawtp)");
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-env-changed=DIOSCOPE_CLANG");
    let clang = std::env::var("DIOSCOPE_CLANG").unwrap_or_else(|_| "clang".into());
    if clang.is_empty() {
        return;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let obj = out.join("stages.bpf.o");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    // The UAPI headers' asm/ directory (Debian's multiarch layout).
    let multiarch = format!("-I/usr/include/{arch}-linux-gnu");
    let run = Command::new(&clang)
        .args([
            "-O2", "-g", "-Wall", "-target", "bpf", &multiarch, "-c", SRC, "-o",
        ])
        .arg(&obj)
        .output();
    match run {
        Err(_) => {} // no clang: the bpftrace backend only
        Ok(o) if o.status.success() => println!("cargo:rustc-cfg=dioscope_rawtp"),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let first = err.lines().find(|l| l.contains("error")).unwrap_or("");
            println!(
                "cargo:warning=--stages' raw-tracepoint program did not compile ({first}); \
                 --stages will use bpftrace. Install clang and libbpf-dev \
                 (scripts/install-deps.sh)"
            );
        }
    }
}
