//! `doctor --peak` on a real device: a zram of its own (filled, then reset
//! and removed on drop). zram takes no non-blocking reads, so io_uring hands
//! every read to io-wq: the probe must name it; this VM has no cpufreq and
//! zram no poll queues: both must read "not available", not "not optimal".
//! The recorded NVMe-host trees are in diag::peak's unit tests.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn filled_zram() -> Zram {
    let z = Zram::new(32 << 20).expect("zram hot_add and disksize");
    let st = Command::new("dd")
        .args([
            "if=/dev/urandom",
            &format!("of={}", z.dev()),
            "bs=1M",
            "count=32",
            "oflag=direct",
            "status=none",
        ])
        .status()
        .expect("dd");
    assert!(st.success(), "filling {} failed", z.dev());
    z
}

fn peak_of<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["peak"]
        .as_array()
        .expect("a peak array")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no peak check {name}: {:#}", j["peak"]))
}

#[test]
fn doctor_peak_on_zram_names_io_wq_punting_and_what_is_not_available() {
    let ok = is_root() && Path::new("/sys/class/zram-control/hot_add").exists();
    if !can_run("root and zram", ok) {
        return;
    }
    let z = filled_zram();
    let dev = z.dev();
    let name = dev.trim_start_matches("/dev/");

    let o = Command::new(bin())
        .args(["doctor", "--peak", "--output-format=json", &dev])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).expect("doctor --peak JSON parses");
    let punt = peak_of(&j, "io_uring io-wq punting");
    assert_eq!(punt["state"], "not_optimal", "{punt:#}");
    let v = punt["value"].as_str().unwrap();
    assert!(v.contains("io-wq workers on this device"), "{v}");
    if Path::new("/sys/kernel/btf/vmlinux").exists() {
        // Where BPF works the hand-offs are counted, not guessed from CPU:
        // the raw-tracepoint program needs root and BTF, not bpftrace or
        // a mounted tracefs (a fresh machine has neither mounted).
        assert!(
            v.contains("counted by the --stages tracer") && v.contains("requests (100 %)"),
            "{v}"
        );
    }
    assert!(
        punt["fix"].as_str().unwrap().contains("--ioengine=libaio"),
        "{punt:#}"
    );
    let polls = peak_of(&j, "poll queues");
    assert_eq!(polls["state"], "not_available", "{polls:#}");
    let no_governor = !Path::new("/sys/devices/system/cpu/cpu0/cpufreq").exists();
    if no_governor {
        let g = peak_of(&j, "cpu governor");
        assert_eq!(g["state"], "not_available", "{g:#}");
    }
    // A bio-based device has no scheduler to switch: said, not "fixed".
    let s = peak_of(&j, "scheduler");
    assert_eq!(
        (&s["state"], &s["fix"]),
        (&Value::from("not_available"), &Value::Null)
    );
    // nomerges is a real attribute of zram's queue: its fix names this device.
    let m = peak_of(&j, "queue/nomerges");
    if m["state"] == "not_optimal" {
        let want = format!("echo 2 > /sys/block/{name}/queue/nomerges");
        assert_eq!(m["fix"], want.as_str(), "{m:#}");
    }

    // The text says the same, under its own heading; without --peak there
    // is no peak section (and no probe run).
    let t = Command::new(bin())
        .args(["doctor", "--peak", &dev])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&t.stdout);
    assert!(text.contains("Peak IOPS"), "{text}");
    assert!(text.contains("io-wq workers on this device"), "{text}");
    let plain = Command::new(bin())
        .args(["doctor", "--output-format=json", &dev])
        .output()
        .unwrap();
    let pj: Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(pj.get("peak").is_none(), "{pj:#}");
}
