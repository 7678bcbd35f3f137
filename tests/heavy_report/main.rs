//! The report as a person sees it: headless Chromium (Debian's `chromium`,
//! installed by scripts/install-deps.sh) opens each report from disk with
//! the network unreachable, logs no console message, and the rendered DOM
//! holds the expected charts; a screenshot is not blank.
//!
//! Heavy (a browser per page), so a test binary of its own with a time
//! budget per browser start. Missing Chromium skips locally and fails in CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Whole-test budget; each browser start has its own limit below.
const BUDGET: Duration = Duration::from_secs(240);

#[path = "../support/child.rs"]
mod child;

fn run(c: Command, limit: Duration) -> Output {
    let what = format!("{c:?}");
    child::run_within(c, limit, false)
        .unwrap_or_else(|| panic!("{what} did not finish within {limit:?}"))
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {b}"))
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn dioscope(dir: &Path, args: &[&str]) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dioscope"));
    c.args(args).current_dir(dir);
    let o = run(c, Duration::from_secs(120));
    assert!(
        o.status.success(),
        "dioscope {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Chromium, headless, offline: every host name fails to resolve and no
/// proxy is reachable, so a page that needed the network would show it.
fn browser(bin: &str, profile: &Path, extra: &[String], page: &Path) -> Output {
    let mut c = Command::new(bin);
    c.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=http://127.0.0.1:9",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(format!("file://{}", page.display()));
    run(c, Duration::from_secs(60))
}

/// Decode the PNG with python3's zlib (no image crate needed) and return
/// (distinct colours, share of non-white pixels).
fn png_stats(png: &Path) -> (usize, f64) {
    let script = r#"
import sys, zlib, struct
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'\x89PNG\r\n\x1a\n'
i, idat, w, h, ct = 8, b'', 0, 0, 0
while i < len(d):
    n, t = struct.unpack('>I4s', d[i:i+8]); body = d[i+8:i+8+n]; i += 12 + n
    if t == b'IHDR': w, h, bd, ct = struct.unpack('>IIBB', body[:10])
    elif t == b'IDAT': idat += body
bpp = {2: 3, 6: 4}[ct]
raw = zlib.decompress(idat); stride = w * bpp
prev = bytearray(stride); colours = set(); dark = 0; i = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i+1:i+1+stride]); i += 1 + stride
    for x in range(stride):
        a = line[x-bpp] if x >= bpp else 0; b = prev[x]; c = prev[x-bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p-a), abs(p-b), abs(p-c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 2: continue
    for x in range(0, stride, bpp * 2):
        px = bytes(line[x:x+3]); colours.add(px)
        if px != b'\xff\xff\xff': dark += 1
print(len(colours), dark / ((h // 2) * (w // 2)))
"#;
    let mut c = Command::new("python3");
    c.arg("-c").arg(script).arg(png);
    let o = run(c, Duration::from_secs(120));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    let mut it = s.split_whitespace();
    (
        it.next().unwrap().parse().unwrap(),
        it.next().unwrap().parse().unwrap(),
    )
}

/// Open `page`: no console message, the DOM has `ids`, the screenshot is
/// not blank. Returns the screenshot's path.
fn check_in_browser(bin: &str, dir: &Path, page: &Path, ids: &[&str]) -> PathBuf {
    let profile = dir.join(format!(
        "profile-{}",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let dom = browser(bin, &profile, &["--dump-dom".into()], page);
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(dom.status.success(), "chromium failed: {log}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom_text.contains("<h1>"), "empty DOM: {dom_text:.500}");
    for id in ids {
        assert!(
            dom_text.contains(&format!("<svg id=\"{id}\"")),
            "{}: chart {id} not in the rendered DOM",
            page.display()
        );
    }
    let shot = dir.join(format!(
        "{}.png",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let o = browser(
        bin,
        &profile,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2600".into(),
            // Half the pixels each way: a quarter of the decoding.
            "--force-device-scale-factor=0.5".into(),
        ],
        page,
    );
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (colours, ink) = png_stats(&shot);
    assert!(
        colours >= 8,
        "{}: {colours} colours: blank page?",
        shot.display()
    );
    assert!(
        ink > 0.02,
        "{}: {:.3} of the page is not white: blank?",
        shot.display(),
        ink
    );
    shot
}

#[test]
fn reports_open_in_chromium_offline() {
    let t0 = Instant::now();
    let Some(bin) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("CI must provide chromium; scripts/install-deps.sh installs it");
        }
        eprintln!("SKIPPED: needs chromium (scripts/install-deps.sh)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let run_args = |out: &str, rep: &str| {
        vec![
            "--name=mix".to_string(),
            "--ioengine=null".into(),
            "--rw=randrw".into(),
            "--bs=4k".into(),
            "--size=1g".into(),
            "--time_based".into(),
            "--runtime=2s".into(),
            "--ramp_time=1s".into(),
            "--trials=3".into(),
            "--output-format=json".into(),
            format!("--output={out}"),
            format!("--report={rep}"),
        ]
    };
    for (out, rep) in [("a.json", "run.html"), ("b.json", "b.html")] {
        let a = run_args(out, rep);
        dioscope(dir, &a.iter().map(String::as_str).collect::<Vec<_>>());
    }
    dioscope(dir, &["report", "a.json", "b.json", "-o", "compare.html"]);

    let run_ids = [
        "r1-iops-0",
        "r1-bw-0",
        "r1-latt-0",
        "r1-pct-0",
        "r1-hist-0-read",
        "r1-spread-iops",
        "r1-cpu-chart",
    ];
    let shot = check_in_browser(bin, dir, &dir.join("run.html"), &run_ids);
    check_in_browser(
        bin,
        dir,
        &dir.join("compare.html"),
        &["compare-iops", "r1-iops-0", "r2-iops-0", "r2-pct-0"],
    );
    // A comparison and a sweep.
    let o = {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dioscope"));
        c.current_dir(dir)
            .args(["compare", "a.json", "b.json", "--output-format=json"]);
        run(c, Duration::from_secs(60))
    };
    std::fs::write(dir.join("cmp.json"), &o.stdout).unwrap();
    std::fs::write(
        dir.join("j.fio"),
        "[j]\nioengine=null\nrw=randread\nsize=1g\ntime_based\nruntime=1s\n",
    )
    .unwrap();
    dioscope(
        dir,
        &[
            "sweep",
            "j.fio",
            "--vary",
            "iodepth=1|8",
            "--vary",
            "bs=4k|64k",
            "--trials=2",
            "--output=sw.json",
        ],
    );
    dioscope(dir, &["report", "cmp.json", "-o", "cmp.html"]);
    dioscope(dir, &["report", "sw.json", "-o", "sweep.html"]);
    // A comparison's report shows its runs too: each side's summary,
    // series, latency and findings (ids ca-… and cb-…).
    check_in_browser(
        bin,
        dir,
        &dir.join("cmp.html"),
        &[
            "cmp-change-0",
            "ca-iops-0",
            "ca-pct-0",
            "cb-iops-0",
            "cb-pct-0",
            "cb-spread-iops",
        ],
    );
    let cmp_page = std::fs::read_to_string(dir.join("cmp.html")).unwrap();
    for id in [
        "ca-summary-table",
        "cb-summary-table",
        "ca-findings",
        "cb-env",
    ] {
        assert!(
            cmp_page.contains(&format!("id=\"{id}")),
            "cmp.html lacks {id}"
        );
    }
    check_in_browser(
        bin,
        dir,
        &dir.join("sweep.html"),
        &["sweep-iops", "sweep-lat_p99"],
    );
    // fio's own JSON renders too.
    let fio = Command::new("sh").arg("-c").arg("command -v fio").output();
    if fio.is_ok_and(|o| o.status.success()) {
        let mut c = Command::new("fio");
        c.current_dir(dir).args([
            "--name=f",
            "--ioengine=null",
            "--rw=randread",
            "--size=64m",
            "--output-format=json+",
            "--output=fio.json",
        ]);
        assert!(run(c, Duration::from_secs(60)).status.success());
        dioscope(dir, &["report", "fio.json", "-o", "fio.html"]);
        check_in_browser(
            bin,
            dir,
            &dir.join("fio.html"),
            &["r1-pct-0", "r1-hist-0-read"],
        );
    } else if std::env::var_os("CI").is_some() {
        panic!("CI must provide fio");
    }
    // Keep the run's screenshot for a person to look at.
    if let Some(keep) = std::env::var_os("DIOSCOPE_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    assert!(
        t0.elapsed() < BUDGET,
        "took {:?}, budget {BUDGET:?}",
        t0.elapsed()
    );
}
