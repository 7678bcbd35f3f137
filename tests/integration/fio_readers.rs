//! The programs people feed fio's output to, run against dioscope as if
//! it were fio: fio-plot's bench-fio (which first checks `fio --version`)
//! drives a small grid and fio-plot draws its results. Installed by
//! scripts/install-deps.sh into /opt/dioscope-tests/fio-plot (pinned).

use crate::common::*;
use std::path::Path;
use std::process::Command;

const VENV: &str = "/opt/dioscope-tests/fio-plot";

#[test]
fn bench_fio_runs_a_grid_and_fio_plot_draws_it() {
    let venv = std::env::var("FIO_PLOT_VENV").unwrap_or_else(|_| VENV.into());
    let bench = Path::new(&venv).join("bin/bench-fio");
    if !can_run(
        "fio-plot's bench-fio (scripts/install-deps.sh)",
        bench.exists(),
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // dioscope under fio's name, first on PATH.
    let bin_dir = d.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    std::os::unix::fs::symlink(std::fs::canonicalize(bin()).unwrap(), bin_dir.join("fio")).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let target = d.path().join("target.dat");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let out = d.path().join("out");
    let o = Command::new(&bench)
        .env("PATH", &path)
        .current_dir(d.path())
        .args(["-d", target.to_str().unwrap(), "-t", "file", "-s", "32M"])
        .args([
            "-o",
            out.to_str().unwrap(),
            "-b",
            "4k",
            "--iodepth",
            "1",
            "4",
        ])
        .args([
            "--numjobs",
            "1",
            "--runtime",
            "1",
            "-m",
            "randread",
            "-e",
            "psync",
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "bench-fio failed: {text}");
    assert!(!text.contains("Could not detect"), "{text}");
    // One JSON per cell of the grid, each fio's layout with fio's version form.
    let cells = out.join("target.dat/4k");
    for depth in [1, 4] {
        let f = cells.join(format!("randread-{depth}-1.json"));
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}: {text}", f.display())),
        )
        .unwrap();
        assert!(
            v["fio version"].as_str().unwrap().starts_with("fio-3"),
            "{v}"
        );
        assert!(v["jobs"][0]["read"]["iops"].as_f64().unwrap() > 0.0, "{v}");
        assert_eq!(
            v["jobs"][0]["job options"]["iodepth"],
            depth.to_string(),
            "{v}"
        );
    }
    // fio-plot reads them and draws the IOPS/latency chart.
    let png = d.path().join("plot.png");
    let o = Command::new(Path::new(&venv).join("bin/fio-plot"))
        .args([
            "-i",
            cells.to_str().unwrap(),
            "-T",
            "t",
            "-l",
            "-r",
            "randread",
        ])
        .args(["-o", png.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fio-plot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
}
