//! Write (and read) amplification as plain data: bytes a device transferred
//! ÷ bytes the benchmark's jobs transferred, per direction, per trial and for
//! the run (`"dioscope": {"amplification": …}`). The diagnosis
//! (`diag::amplification`) fills the inputs from the trial records' device
//! counters; the arithmetic lives here.

use super::environment::DevRole;
use serde::{Deserialize, Serialize};

/// Where the device's bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AmpSource {
    /// `/sys/block/DEV/stat` sectors × 512 between the device snapshots that
    /// bracket the trial's measured interval: every I/O on the device,
    /// whoever issued it.
    DeviceCounters,
    /// `--stages` (raw backend): the bytes of this run's own bios, tagged
    /// at `block_bio_queue` by the run's thread group in the measured
    /// window. Never another process's I/O, so never qualified, and never a
    /// journal or writeback either (their bios are the kernel threads'):
    /// the device counters stay beside it.
    TaggedBios,
}

impl AmpSource {
    pub fn as_str(self) -> &'static str {
        match self {
            AmpSource::DeviceCounters => "device counters",
            AmpSource::TaggedBios => "this run's tagged bios, --stages",
        }
    }
}

/// One direction's amplification on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirAmp {
    pub device_bytes: u64,
    /// `None` when the jobs' bytes cannot be compared (buffered I/O).
    pub job_bytes: Option<u64>,
    /// device_bytes ÷ job_bytes; `None` with `note` saying why.
    pub ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl DirAmp {
    /// The ratio of `device` to `job` bytes: none without job bytes (`what`
    /// names the direction: "no writes").
    pub fn new(device: u64, job: Option<u64>, what: &str) -> DirAmp {
        let (ratio, note) = match job {
            None => (
                None,
                Some(
                    "not available: buffered I/O (the page cache decides what reaches the device)"
                        .to_string(),
                ),
            ),
            Some(0) => (None, Some(format!("no {what}"))),
            Some(j) => (Some(device as f64 / j as f64), None),
        };
        DirAmp {
            device_bytes: device,
            job_bytes: job,
            ratio,
            note,
        }
    }

    /// The ratio as text: `1.00×` or the note.
    pub fn text(&self) -> String {
        match (self.ratio, &self.note) {
            (Some(r), _) => format!("{r:.2}×"),
            (None, Some(n)) => n.clone(),
            (None, None) => "–".into(),
        }
    }
}

/// One device's amplification over a trial or the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceAmp {
    pub device: String,
    pub role: DevRole,
    pub source: AmpSource,
    pub read: DirAmp,
    pub write: DirAmp,
    /// The device's bytes include other processes' I/O (`other_device_io`
    /// saw it in this trial, or in one of the run's trials).
    pub qualified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One trial's amplification, per device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialAmp {
    pub group: u32,
    pub trial: u32,
    pub devices: Vec<DeviceAmp>,
    /// Why there are no devices: no block device, or unreadable counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_available: Option<String>,
}

/// `"dioscope": {"amplification": …}`: per trial, and per device over the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Amplification {
    pub trials: Vec<TrialAmp>,
    pub run: Vec<DeviceAmp>,
}

/// One device's bytes in one trial: the input of [`Amplification::build`].
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceBytes {
    pub device: String,
    pub role: DevRole,
    pub read: u64,
    pub write: u64,
    /// Why this device's bytes include other I/O when the trial's rule
    /// (`TrialBytes::other_io`) does not cover it (a device under a loop's
    /// backing file is shared with the rest of the system).
    pub other_io: Option<String>,
}

/// One trial's input: its devices' bytes, the jobs' bytes (read, write;
/// `None` for buffered I/O), and why the device bytes include other I/O.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialBytes {
    pub group: u32,
    pub trial: u32,
    pub devices: Vec<DeviceBytes>,
    pub jobs: Option<(u64, u64)>,
    pub other_io: Option<String>,
}

/// Why a trial has no device counters.
pub const NO_COUNTERS: &str = "not available: no block device under the target, or its counters \
     (/sys/block/DEV/stat) could not be read";

fn device_amp(d: &DeviceBytes, jobs: Option<(u64, u64)>, other: &Option<String>) -> DeviceAmp {
    let other = other.as_ref().or(d.other_io.as_ref());
    DeviceAmp {
        device: d.device.clone(),
        role: d.role,
        source: AmpSource::DeviceCounters,
        read: DirAmp::new(d.read, jobs.map(|j| j.0), "reads"),
        write: DirAmp::new(d.write, jobs.map(|j| j.1), "writes"),
        qualified: other.is_some(),
        reason: other.cloned(),
    }
}

impl Amplification {
    /// Per trial, and per device summed over the trials it served (a
    /// device's run ratio is its bytes over all trials ÷ the jobs' bytes in
    /// those trials, not a mean of ratios).
    pub fn build(trials: &[TrialBytes]) -> Amplification {
        let mut out = Amplification::default();
        // device, role, dev (r, w), jobs (r, w) or None, qualified trials.
        type Acc = (String, DevRole, (u64, u64), Option<(u64, u64)>, Vec<u32>);
        let mut acc: Vec<Acc> = Vec::new();
        for t in trials {
            out.trials.push(TrialAmp {
                group: t.group,
                trial: t.trial,
                devices: t
                    .devices
                    .iter()
                    .map(|d| device_amp(d, t.jobs, &t.other_io))
                    .collect(),
                not_available: t.devices.is_empty().then(|| NO_COUNTERS.to_string()),
            });
            for d in &t.devices {
                let i = match acc.iter().position(|a| a.0 == d.device) {
                    Some(i) => i,
                    None => {
                        acc.push((d.device.clone(), d.role, (0, 0), Some((0, 0)), Vec::new()));
                        acc.len() - 1
                    }
                };
                let a = &mut acc[i];
                a.2 .0 += d.read;
                a.2 .1 += d.write;
                a.3 = match (a.3, t.jobs) {
                    (Some(x), Some(y)) => Some((x.0 + y.0, x.1 + y.1)),
                    _ => None,
                };
                if (t.other_io.is_some() || d.other_io.is_some()) && !a.4.contains(&t.trial) {
                    a.4.push(t.trial);
                }
            }
        }
        out.run = acc
            .into_iter()
            .map(|(device, role, (r, w), jobs, q)| {
                let reason = (!q.is_empty()).then(|| {
                    let list: Vec<String> = q.iter().map(u32::to_string).collect();
                    format!(
                        "includes other processes' I/O (other_device_io in trial {})",
                        list.join(", ")
                    )
                });
                device_amp(
                    &DeviceBytes {
                        device,
                        role,
                        read: r,
                        write: w,
                        other_io: None,
                    },
                    jobs,
                    &reason,
                )
            })
            .collect();
        out
    }
}

impl Amplification {
    /// Add `--stages`' tagged bytes: per trial, an entry beside the
    /// trial's data device (the target or the file system under it: where
    /// the bios were tagged) against the same job bytes, and one for the
    /// run summed over those trials. A trial without device counters has
    /// no job bytes here and gets none.
    pub fn add_tagged(&mut self, tagged: &[super::stages::TrialBios]) {
        // device, role, tagged (r, w), jobs (r, w) or None.
        type Acc = (String, DevRole, (u64, u64), Option<(u64, u64)>);
        let mut run: Option<Acc> = None;
        for t in tagged {
            let Some(ta) = self
                .trials
                .iter_mut()
                .find(|x| (x.group, x.trial) == (t.group, t.trial))
            else {
                continue;
            };
            let Some(d) = ta
                .devices
                .iter()
                .find(|d| matches!(d.role, DevRole::Target | DevRole::Filesystem))
            else {
                continue;
            };
            let jobs = d.read.job_bytes.zip(d.write.job_bytes);
            let entry = tagged_amp(&d.device, d.role, (t.read_bytes, t.write_bytes), jobs);
            let r = run.get_or_insert((d.device.clone(), d.role, (0, 0), Some((0, 0))));
            r.2 = (r.2 .0 + t.read_bytes, r.2 .1 + t.write_bytes);
            r.3 = r.3.zip(jobs).map(|(a, b)| (a.0 + b.0, a.1 + b.1));
            ta.devices.push(entry);
        }
        if let Some((device, role, bytes, jobs)) = run {
            self.run.push(tagged_amp(&device, role, bytes, jobs));
        }
    }
}

fn tagged_amp(
    device: &str,
    role: DevRole,
    (r, w): (u64, u64),
    jobs: Option<(u64, u64)>,
) -> DeviceAmp {
    DeviceAmp {
        device: device.to_string(),
        role,
        source: AmpSource::TaggedBios,
        read: DirAmp::new(r, jobs.map(|j| j.0), "reads"),
        write: DirAmp::new(w, jobs.map(|j| j.1), "writes"),
        qualified: false,
        reason: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str, r: u64, w: u64) -> DeviceBytes {
        DeviceBytes {
            device: name.into(),
            role: DevRole::Target,
            read: r,
            write: w,
            other_io: None,
        }
    }

    /// `--stages`' tagged bytes sit beside each trial's data device, with
    /// the trial's job bytes, and sum over the run; the device counters'
    /// entries and the ratio they give (a journal's 1.5×) are left as
    /// they are.
    #[test]
    fn tagged_bytes_are_added_per_trial_and_for_the_run() {
        let m = 1 << 20;
        let mut a = Amplification::build(&[
            trial(1, vec![dev("loop0", 0, 6 * m)], Some((0, 4 * m))),
            trial(2, vec![dev("loop0", 0, 3 * m)], Some((0, 2 * m))),
            trial(3, vec![], Some((0, 2 * m))),
        ]);
        let bios = |trial, write_bytes| crate::results::stages::TrialBios {
            trial,
            write_bytes,
            other_write_bytes: m,
            ..Default::default()
        };
        a.add_tagged(&[bios(1, 4 * m), bios(2, 2 * m + m / 2), bios(3, 2 * m)]);
        let t1 = &a.trials[0].devices;
        assert_eq!(t1.len(), 2);
        assert_eq!(t1[1].source, AmpSource::TaggedBios);
        assert_eq!(
            (t1[1].device.as_str(), t1[1].role),
            ("loop0", DevRole::Target)
        );
        assert_eq!(t1[1].write.ratio, Some(1.0));
        assert_eq!(t1[0].write.ratio, Some(1.5));
        assert_eq!(a.trials[1].devices[1].write.ratio, Some(1.25));
        // No device counters in trial 3: no job bytes to set it against.
        assert!(a.trials[2].devices.is_empty());
        let run: Vec<_> = a.run.iter().map(|d| (d.source, d.write.ratio)).collect();
        assert_eq!(
            run,
            [
                (AmpSource::DeviceCounters, Some(1.5)),
                (AmpSource::TaggedBios, Some(6.5 / 6.0))
            ]
        );
        assert_eq!(a.run[1].read.note.as_deref(), Some("no reads"));
        assert!(!a.run[1].qualified);
    }

    fn trial(n: u32, devices: Vec<DeviceBytes>, jobs: Option<(u64, u64)>) -> TrialBytes {
        TrialBytes {
            group: 0,
            trial: n,
            devices,
            jobs,
            other_io: None,
        }
    }

    #[test]
    fn zero_job_bytes_is_no_ratio_not_a_division_by_zero() {
        let a = Amplification::build(&[trial(1, vec![dev("loop9", 4096, 8192)], Some((0, 4096)))]);
        let d = &a.trials[0].devices[0];
        assert_eq!(d.read.ratio, None);
        assert_eq!(d.read.text(), "no reads");
        assert_eq!(d.write.ratio, Some(2.0));
        assert_eq!(d.write.text(), "2.00×");
        let w = DirAmp::new(0, Some(0), "writes");
        assert_eq!((w.ratio, w.text().as_str()), (None, "no writes"));
        // Buffered: the jobs' bytes are not comparable.
        let b = DirAmp::new(100, None, "writes");
        assert_eq!(b.ratio, None);
        assert!(
            b.text().starts_with("not available: buffered"),
            "{}",
            b.text()
        );
    }

    #[test]
    fn the_run_ratio_sums_bytes_over_trials_not_ratios() {
        // Trial 1: 1 MiB device / 1 MiB job (1.0); trial 2: 6 MiB / 2 MiB (3.0).
        // Mean of ratios would be 2.0; bytes give 7/3.
        let m = 1 << 20;
        let a = Amplification::build(&[
            trial(1, vec![dev("sdz", 0, m)], Some((0, m))),
            trial(2, vec![dev("sdz", 0, 6 * m)], Some((0, 2 * m))),
        ]);
        assert_eq!(a.trials.len(), 2);
        assert_eq!(a.trials[0].devices[0].write.ratio, Some(1.0));
        assert_eq!(a.trials[1].devices[0].write.ratio, Some(3.0));
        assert_eq!(a.run.len(), 1);
        let w = &a.run[0].write;
        assert_eq!((w.device_bytes, w.job_bytes), (7 * m, Some(3 * m)));
        assert!((w.ratio.unwrap() - 7.0 / 3.0).abs() < 1e-12);
        assert!(!a.run[0].qualified);
    }

    #[test]
    fn other_io_in_one_trial_qualifies_that_trial_and_the_run() {
        let mut t2 = trial(2, vec![dev("sdz", 0, 30)], Some((0, 10)));
        t2.other_io = Some("includes other processes' I/O: pid 7 (dd)".into());
        let a = Amplification::build(&[trial(1, vec![dev("sdz", 0, 10)], Some((0, 10))), t2]);
        assert!(!a.trials[0].devices[0].qualified);
        assert!(a.trials[1].devices[0].qualified);
        assert!(a.trials[1].devices[0]
            .reason
            .as_ref()
            .unwrap()
            .contains("dd"));
        assert!(a.run[0].qualified);
        let r = a.run[0].reason.as_ref().unwrap();
        assert!(
            r.contains("other processes' I/O") && r.contains("trial 2"),
            "{r}"
        );
        assert_eq!(a.run[0].write.ratio, Some(2.0));
        // A shared device's own reason qualifies it alone.
        let mut shared = dev("vda", 0, 90);
        shared.other_io = Some("includes other processes' I/O (vda is shared)".into());
        let a = Amplification::build(&[trial(1, vec![dev("loop1", 0, 10), shared], Some((0, 10)))]);
        assert!(!a.run[0].qualified && a.run[1].qualified, "{a:?}");
        assert!(a.trials[0].devices[1]
            .reason
            .as_ref()
            .unwrap()
            .contains("shared"));
    }

    #[test]
    fn a_trial_without_counters_says_not_available_and_a_buffered_one_has_no_run_ratio() {
        let a = Amplification::build(&[
            trial(1, vec![], Some((0, 10))),
            trial(2, vec![dev("sdz", 5, 5)], None),
        ]);
        assert_eq!(a.trials[0].not_available.as_deref(), Some(NO_COUNTERS));
        assert_eq!(a.trials[1].not_available, None);
        assert_eq!(a.run[0].write.ratio, None);
        assert_eq!(a.run[0].write.job_bytes, None);
        // The JSON reads back.
        let v = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Amplification>(&v).unwrap(), a);
        assert!(v.contains("\"source\":\"device_counters\""), "{v}");
    }
}
