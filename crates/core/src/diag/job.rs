//! Checks of a job against its target, before anything runs: buffered I/O,
//! sizes and offsets direct I/O cannot use, hipri without polled queues.

use crate::diag::findings::{BufferedIo, HipriWithoutPoll, Misaligned};
use crate::job::spec::{BlockSizes, JobSpec};
use crate::job::units::SizeOrPct;

use super::env::TargetEnv;
use super::findings::Finding;

/// The file-offset alignment direct I/O needs, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alignment {
    pub bytes: u64,
    pub source: String,
}

/// The offset/length alignment of a target: statx `STATX_DIOALIGN` when the
/// kernel reports it, else the logical block size of its device.
fn required_alignment(t: &TargetEnv) -> Option<Alignment> {
    if let Some((_, off)) = t.dio_align {
        if off > 0 {
            return Some(Alignment {
                bytes: off as u64,
                source: format!("direct-I/O alignment of {} from statx", t.path.display()),
            });
        }
    }
    let d = t.device.as_ref()?;
    let lbs = d.queue.logical_block_size?;
    (lbs > 0).then(|| Alignment {
        bytes: lbs as u64,
        source: format!("logical block size of {}", d.name),
    })
}

/// [`Finding::Misaligned`] when `value` is not a multiple of the alignment.
/// `zero_ok` for offsets (0 is aligned; sizes must be at least one unit).
fn check_value(option: &str, value: u64, a: &Alignment, zero_ok: bool) -> Option<Finding> {
    if a.bytes == 0 || (value.checked_rem(a.bytes) == Some(0) && (zero_ok || value > 0)) {
        return None;
    }
    let down = value / a.bytes * a.bytes;
    let lower = (down > 0 || zero_ok).then_some(down);
    Some(Finding::Misaligned(Misaligned {
        option: option.to_string(),
        value,
        alignment: a.bytes,
        source: a.source.clone(),
        lower,
        upper: down + a.bytes,
    }))
}

fn bs_option(b: &BlockSizes) -> &'static str {
    match b {
        BlockSizes::Fixed(_) => "bs",
        BlockSizes::Range(..) => "bsrange",
        BlockSizes::Split(_) => "bssplit",
    }
}

/// Every finding a job earns against one target before it runs.
pub fn job_findings(spec: &JobSpec, t: &TargetEnv) -> Vec<Finding> {
    let mut out = Vec::new();
    if !spec.direct {
        out.push(Finding::BufferedIo(BufferedIo {
            job: spec.name.clone(),
        }));
    }
    if spec.direct {
        if let Some(a) = required_alignment(t) {
            let mut dirs = Vec::new();
            if spec.rw.reads() {
                dirs.push(&spec.bs[0]);
            }
            if spec.rw.writes() {
                dirs.push(&spec.bs[1]);
            }
            let mut seen = Vec::new();
            for b in dirs {
                for v in b.all() {
                    if !seen.contains(&v) {
                        seen.push(v);
                        out.extend(check_value(bs_option(b), v, &a, false));
                    }
                }
            }
            if let SizeOrPct::Bytes(o) = spec.offset {
                out.extend(check_value("offset", o, &a, true));
            }
            out.extend(check_value(
                "offset_increment",
                spec.offset_increment,
                &a,
                true,
            ));
        }
    }
    if spec.hipri {
        if let Some(d) = &t.device {
            if d.queue.io_poll == Some(false) {
                out.push(Finding::HipriWithoutPoll(HipriWithoutPoll {
                    device: d.name.clone(),
                    requested: true,
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::env::{DeviceInfo, QueueLimits, TargetKind};
    use crate::job::spec::RwMode;
    use std::path::PathBuf;

    fn target(dio: Option<(u32, u32)>, lbs: u32, poll: bool) -> TargetEnv {
        TargetEnv {
            path: PathBuf::from("/dev/x"),
            kind: TargetKind::BlockDevice,
            fs: None,
            device: Some(DeviceInfo {
                name: "x".into(),
                queue: QueueLimits {
                    logical_block_size: Some(lbs),
                    io_poll: Some(poll),
                    ..Default::default()
                },
                ..Default::default()
            }),
            devices: Vec::new(),
            dio_align: dio,
        }
    }

    #[test]
    fn nearest_valid_values() {
        let a = Alignment {
            bytes: 4096,
            source: "t".into(),
        };
        assert_eq!(check_value("bs", 8192, &a, false), None);
        match check_value("bs", 6000, &a, false).unwrap() {
            Finding::Misaligned(Misaligned { lower, upper, .. }) => {
                assert_eq!((lower, upper), (Some(4096), 8192))
            }
            f => panic!("{f:?}"),
        }
        match check_value("bs", 100, &a, false).unwrap() {
            Finding::Misaligned(Misaligned { lower, upper, .. }) => {
                assert_eq!((lower, upper), (None, 4096))
            }
            f => panic!("{f:?}"),
        }
        assert!(check_value("bs", 0, &a, false).is_some());
        assert_eq!(check_value("offset", 0, &a, true), None);
        match check_value("offset", 100, &a, true).unwrap() {
            Finding::Misaligned(Misaligned { lower, .. }) => assert_eq!(lower, Some(0)),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn statx_alignment_wins_over_logical_block_size() {
        let t = target(Some((512, 4096)), 512, true);
        assert_eq!(required_alignment(&t).unwrap().bytes, 4096);
        let t = target(None, 512, true);
        assert_eq!(required_alignment(&t).unwrap().bytes, 512);
    }

    #[test]
    fn job_checks() {
        let t = target(None, 4096, false);
        let spec = JobSpec {
            name: "j".into(),
            direct: true,
            rw: RwMode::RandWrite,
            bs: [BlockSizes::Fixed(512), BlockSizes::Fixed(6144)],
            offset: SizeOrPct::Bytes(1000),
            hipri: true,
            ..Default::default()
        };
        let codes: Vec<(&str, String)> = job_findings(&spec, &t)
            .iter()
            .map(|f| {
                let opt = match f {
                    Finding::Misaligned(Misaligned { option, value, .. }) => {
                        format!("{option}={value}")
                    }
                    _ => String::new(),
                };
                (f.code(), opt)
            })
            .collect();
        // The read block size does not matter for a write-only job.
        assert_eq!(
            codes,
            vec![
                ("misaligned", "bs=6144".to_string()),
                ("misaligned", "offset=1000".to_string()),
                ("hipri_without_poll", String::new()),
            ]
        );
        let buffered = JobSpec {
            name: "b".into(),
            direct: false,
            bs: [BlockSizes::Fixed(100), BlockSizes::Fixed(100)],
            ..Default::default()
        };
        let f = job_findings(&buffered, &t);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code(), "buffered_io");
    }
}
