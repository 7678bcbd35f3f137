//! Issue 23, principles 2, 4 and 7 for `--profile`: its working folder is
//! new (random name, mode 0700), never a folder or a link someone made
//! beforehand, and loses only what dioscope made in it; a TMPDIR it cannot
//! use is blamed before the run (exit 2); a perf that hangs and ignores
//! SIGTERM does not keep dioscope from stopping within a second of SIGINT.
//! perf is a fake one first on PATH (a shell script speaking perf's control
//! protocol), so these run without perf and are quick.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A perf that answers the control pipe, logs the folder it was given
/// (and its mode) into `$FAKE_PERF_LOG`, and drops a file of the "user"
/// into that folder, as someone sharing it would.
const WORKING_PERF: &str = r#"#!/bin/sh
case "$1" in
--version) echo 'perf version 9.9'; exit 0 ;;
record)
  out=''; prev=''
  for a in "$@"; do [ "$prev" = -o ] && out="$a"; prev="$a"; done
  d=$(dirname "$out")
  echo "$d" >> "$FAKE_PERF_LOG/dirs"
  stat -c %a "$d" >> "$FAKE_PERF_LOG/modes"
  [ -n "$FAKE_PERF_DROP" ] && echo 'a file of the user' > "$d/user-file"
  echo 'fake perf: chatter' >&2
  : > "$out"
  while read -r cmd; do printf 'ack\n'; [ "$cmd" = stop ] && exit 0; done
  exit 0 ;;
*) exit 0 ;;
esac
"#;

/// A perf that never answers and ignores SIGTERM.
const HANGING_PERF: &str =
    "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'perf version 9.9'; exit 0; }\n\
     echo $$ > \"$FAKE_PERF_LOG/pid\"\ntrap '' TERM\nexec sleep 120\n";

fn fake_perf(dir: &Path, script: &str) -> String {
    let b = dir.join("bin");
    std::fs::create_dir_all(&b).unwrap();
    let p = b.join("perf");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:/usr/bin:/bin", b.display())
}

const NULL_JOB: &[&str] = &[
    "--name=n",
    "--ioengine=null",
    "--rw=randread",
    "--size=16m",
    "--time_based",
    "--runtime=200ms",
    "--profile",
    "--output-format=json",
];

/// A folder named as the old code named it (`dioscope-profile.PID`, made
/// by `sh` before it `exec`s dioscope with the same pid), holding a user's
/// file and a link to another user file at perf's stderr name: neither is
/// written through, the folder is not used and not removed, and the folder
/// dioscope uses is new, 0700, and keeps a file the user put in it.
#[test]
fn profile_folder_is_new_private_and_loses_only_its_own_files() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    let log = d.path().join("log");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&log).unwrap();
    let victim = d.path().join("victim.txt");
    std::fs::write(&victim, "the user's data\n").unwrap();
    let path = fake_perf(d.path(), WORKING_PERF);
    let script = format!(
        "p=\"$TMPDIR/dioscope-profile.$$\"; mkdir \"$p\" && echo mine > \"$p/mine.txt\" && \
         ln -s '{}' \"$p/g0t0.err\" && ln -s '{}' \"$p/g0t0.data\" && exec '{}' \"$@\"",
        victim.display(),
        victim.display(),
        bin()
    );
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(&script)
        .arg("sh")
        .args(NULL_JOB)
        .env("TMPDIR", &tmp)
        .env("PATH", &path)
        .env("FAKE_PERF_LOG", &log)
        .env("FAKE_PERF_DROP", "1")
        .env_remove("DIOSCOPE_PROFILE_KEEP")
        .current_dir(d.path());
    let o = output_within(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's data\n",
        "written through a planted link"
    );
    let pre: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let premade = pre
        .iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("dioscope-profile.")
                && p.join("mine.txt").exists()
        })
        .unwrap_or_else(|| panic!("the user's folder was removed: {pre:?}"));
    assert_eq!(
        std::fs::read_to_string(premade.join("mine.txt")).unwrap(),
        "mine\n"
    );
    let dirs = std::fs::read_to_string(log.join("dirs")).unwrap();
    let modes = std::fs::read_to_string(log.join("modes")).unwrap();
    for (used, mode) in dirs.lines().zip(modes.lines()) {
        assert_ne!(
            Path::new(used),
            premade.as_path(),
            "the user's folder was used"
        );
        assert_eq!(mode, "700", "{used} is not private");
        // The user's file stays, and so does the folder holding it (said).
        assert_eq!(
            std::fs::read_to_string(Path::new(used).join("user-file")).unwrap(),
            "a file of the user\n",
            "a user's file in the working folder was removed"
        );
        let left: Vec<String> = std::fs::read_dir(used)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(
            left,
            vec!["user-file".to_string()],
            "dioscope's own files stay"
        );
    }
    assert!(!dirs.is_empty(), "perf never ran: {}", stderr(&o));
    assert!(stderr(&o).contains("user-file"), "not said: {}", stderr(&o));
}

/// An unusable TMPDIR (missing, or a file) is named before the run, exit 2,
/// and perf is not blamed.
#[test]
fn profile_with_an_unusable_tmpdir_blames_tmpdir_before_the_run() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("log");
    std::fs::create_dir_all(&log).unwrap();
    let path = fake_perf(d.path(), WORKING_PERF);
    let file = d.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    for bad in [d.path().join("missing"), file] {
        let mut c = Command::new(bin());
        c.args(NULL_JOB)
            .env("TMPDIR", &bad)
            .env("PATH", &path)
            .env("FAKE_PERF_LOG", &log)
            .current_dir(d.path());
        let o = output_within(c, Duration::from_secs(60));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "TMPDIR={}: {e}", bad.display());
        assert!(e.contains("TMPDIR"), "{e}");
        assert!(!e.contains("perf failed"), "{e}");
        assert!(stdout(&o).is_empty(), "it ran: {}", stdout(&o));
    }
}

/// perf that never answers and ignores SIGTERM: SIGINT stops dioscope
/// within about a second, and no perf of it is left.
#[test]
fn profile_stops_within_a_second_of_sigint_with_a_hanging_perf() {
    let d = tempfile::tempdir().unwrap();
    let path = fake_perf(d.path(), HANGING_PERF);
    let tmp = d.path().join("tmp");
    let log = d.path().join("log");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&log).unwrap();
    let mut child = Command::new(bin())
        .args([
            "--name=n",
            "--ioengine=null",
            "--rw=randread",
            "--size=16m",
            "--time_based",
            "--runtime=30s",
            "--profile",
            "--output-format=json",
        ])
        .env("PATH", &path)
        .env("TMPDIR", &tmp)
        .env("FAKE_PERF_LOG", &log)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // perf has started (and hangs) once it wrote its pid.
    let pidf = log.join("pid");
    let t0 = Instant::now();
    while !pidf.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let t1 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t1.elapsed() > Duration::from_secs(25) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t1.elapsed();
    // The fake perf (this test's own process) must not outlive dioscope.
    let perf_pid = std::fs::read_to_string(&pidf).unwrap_or_default();
    let perf_pid = perf_pid.trim();
    let lingering = !perf_pid.is_empty()
        && std::fs::read_to_string(format!("/proc/{perf_pid}/cmdline"))
            .is_ok_and(|c| c.starts_with("sleep\x00120"));
    if lingering {
        let _ = Command::new("kill").args(["-9", perf_pid]).status();
    }
    assert!(status.is_some(), "still running 25 s after SIGINT");
    assert!(!lingering, "perf (pid {perf_pid}) outlived dioscope");
    assert!(
        took < Duration::from_millis(1500),
        "took {took:?} to stop after SIGINT"
    );
}

/// A run killed with SIGKILL (perf hanging) leaves its working folder; the
/// next `--profile` run removes it — and leaves a look-alike folder of the
/// user's (`dioscope-profile.user`, mode 0755, no manifest) with its file.
#[test]
fn profile_folder_of_a_killed_run_is_removed_by_the_next_only_when_ours() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    let log = d.path().join("log");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&log).unwrap();
    let hanging = fake_perf(&d.path().join("hang"), HANGING_PERF);
    let mut child = Command::new(bin())
        .args(NULL_JOB)
        .args(["--runtime=30s"])
        .env("PATH", &hanging)
        .env("TMPDIR", &tmp)
        .env("FAKE_PERF_LOG", &log)
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pidf = log.join("pid");
    let t0 = Instant::now();
    while !pidf.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let perf_pid = std::fs::read_to_string(&pidf).unwrap_or_default();
    if !perf_pid.trim().is_empty() {
        let _ = Command::new("kill").args(["-9", perf_pid.trim()]).status();
    }
    let folders = |tmp: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(tmp)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("dioscope-profile.")
            })
            .collect()
    };
    let killed = folders(&tmp);
    assert_eq!(killed.len(), 1, "the killed run left no folder: {killed:?}");
    let user = tmp.join("dioscope-profile.user");
    std::fs::create_dir(&user).unwrap();
    std::fs::write(user.join("g0t0.err"), "the user's\n").unwrap();
    let working = fake_perf(&d.path().join("work"), WORKING_PERF);
    let mut c = Command::new(bin());
    c.args(NULL_JOB)
        .env("PATH", &working)
        .env("TMPDIR", &tmp)
        .env("FAKE_PERF_LOG", &log)
        .env_remove("DIOSCOPE_PROFILE_KEEP")
        .current_dir(d.path());
    let o = output_within(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!killed[0].exists(), "the killed run's folder stayed");
    assert_eq!(
        std::fs::read_to_string(user.join("g0t0.err")).unwrap(),
        "the user's\n"
    );
    assert_eq!(folders(&tmp), vec![user]);
}
