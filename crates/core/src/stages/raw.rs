//! The raw-tracepoint backend of `--stages`: the BPF program of
//! `bpf/stages.bpf.c` (compiled by build.rs with clang, embedded here),
//! loaded through the system's libbpf (`dioscope_sys::bpf`) with the run's
//! process, devices and sample rate in its `.rodata`, attached to the raw
//! tracepoints, and read at the end into the same [`parse::Maps`] the
//! bpftrace backend's output fills, so everything downstream is shared.
//!
//! Why: a classic tracepoint builds its perf-event record before a program
//! runs (about 200 ns an event on this project's machine: five empty
//! bpftrace programs cost 22 % of 415k IOPS); a raw tracepoint calls the
//! program with the tracepoint's arguments and costs nothing measurable
//! empty. The measured window is the `on` array map, written from here
//! (no `prctl` to trace).

use super::parse::Maps;
use super::script::{Stage, Target};
use crate::runner::worker::delivery::{DeliveryBoard, PARTS, SLOTS};
use dioscope_sys::bpf::{self, Object, Posts};

#[cfg(dioscope_rawtp)]
const OBJECT: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/stages.bpf.o")));
#[cfg(not(dioscope_rawtp))]
const OBJECT: Option<&[u8]> = None;

/// The devices the program's configuration holds (`MAX_DEVS`).
const MAX_DEVS: usize = 8;
/// Histogram buckets per (direction, stage) (`NB`: bucket_of(u64::MAX) + 1).
const NB: u32 = 976;
/// The counters (`cnt`): n, punt, other per direction, merges, splits.
const COUNTERS: [(&str, &str); 12] = [
    ("@n", "0"),
    ("@n", "1"),
    ("@punt", "0"),
    ("@punt", "1"),
    ("@other", "0"),
    ("@other", "1"),
    ("@merge", ""),
    ("@split", ""),
    ("@bytes", "0"),
    ("@bytes", "1"),
    ("@obytes", "0"),
    ("@obytes", "1"),
];

/// The first byte counter in `cnt` (`C_BYTES`: this run's read, write,
/// then other processes' read, write).
const C_BYTES: u32 = 8;

/// Whether this build carries the program.
pub fn built() -> bool {
    OBJECT.is_some()
}

/// The loaded and attached program, and its `post` array mapped for the
/// workers (completion delivery per I/O).
pub struct Raw {
    obj: Object,
    board: DeliveryBoard,
}

/// `struct config` of the program, in its layout (u32s, native order).
fn config(t: &Target) -> Result<Vec<u8>, String> {
    if t.bio_devs.len() > MAX_DEVS || t.rq_devs.len() > MAX_DEVS {
        return Err(format!(
            "the raw-tracepoint program traces at most {MAX_DEVS} devices"
        ));
    }
    let mut words = vec![
        t.tgid,
        t.sample.max(1),
        t.bio_devs.len() as u32,
        t.rq_devs.len() as u32,
    ];
    for devs in [&t.bio_devs, &t.rq_devs] {
        let mut d = devs.clone();
        d.resize(MAX_DEVS, 0);
        words.extend(d);
    }
    words.push(u32::from(t.pos_is_sector));
    Ok(words.iter().flat_map(|w| w.to_ne_bytes()).collect())
}

/// Open, configure, load and attach the program for `t`; an error says
/// which step failed and why (libbpf's last message).
pub fn start(t: &Target) -> Result<Raw, String> {
    let image = OBJECT.ok_or("this dioscope was built without clang")?;
    let why = |step: &str, e: std::io::Error| {
        let log = bpf::take_log();
        let last = log
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        format!(
            "{step}: {e}{}",
            if last.is_empty() {
                String::new()
            } else {
                format!(" ({})", last.trim())
            }
        )
    };
    let mut obj = Object::open(image).map_err(|e| why("opening the BPF object", e))?;
    obj.set_rodata(&config(t)?)
        .map_err(|e| why("configuring the BPF object", e))?;
    let unused: &[&str] = if t.request_based {
        &["bio_complete"]
    } else {
        &["rq_issue", "rq_complete"]
    };
    for p in unused {
        obj.set_autoload(p, false)
            .map_err(|e| why("configuring the BPF object", e))?;
    }
    obj.load().map_err(|e| why("loading the BPF program", e))?;
    let posts = obj
        .map("post")
        .and_then(|m| m.mmap_array((PARTS * SLOTS) as usize, 16))
        .and_then(|m| Posts::new(m, PARTS, SLOTS))
        .map_err(|e| why("mapping the BPF program's post array", e))?;
    obj.attach_all()
        .map_err(|e| why("attaching the raw tracepoints", e))?;
    Ok(Raw {
        obj,
        board: DeliveryBoard::new(posts),
    })
}

impl Raw {
    /// Where the workers record each completion's delivery.
    pub fn board(&self) -> &DeliveryBoard {
        &self.board
    }

    /// Open or close the measured window.
    pub fn mark(&self, on: bool) -> std::io::Result<()> {
        self.obj
            .map("on")?
            .update(&0u32.to_ne_bytes(), &u32::from(on).to_ne_bytes())
    }

    /// The bytes of this run's bios (read, write) and of other processes'
    /// (read, write) so far: the `cnt` map's byte counters, summed over
    /// the CPUs (read at each window's ends for the per-trial bytes).
    pub fn bytes(&self) -> std::io::Result<[u64; 4]> {
        let cpus = bpf::possible_cpus()?;
        let cnt = self.obj.map("cnt")?;
        let mut buf = vec![0u8; 8 * cpus];
        let mut out = [0u64; 4];
        for (o, i) in out.iter_mut().zip(C_BYTES..C_BYTES + 4) {
            cnt.lookup_per_cpu(&i.to_ne_bytes(), &mut buf)?;
            *o = sum_u64(&buf, 8, 0);
        }
        Ok(out)
    }

    /// The program's maps, summed over the CPUs, as the bpftrace
    /// backend's output would give them (`@h` counts, `@h.total` sums,
    /// `@n`, `@punt`, `@other`, `@merge`, `@split`).
    pub fn read(&self) -> std::io::Result<Maps> {
        let mut m = Maps::default();
        let cpus = bpf::possible_cpus()?;
        let cnt = self.obj.map("cnt")?;
        let mut buf = vec![0u8; 8 * cpus];
        for (i, (name, key)) in COUNTERS.iter().enumerate() {
            cnt.lookup_per_cpu(&(i as u32).to_ne_bytes(), &mut buf)?;
            m.set(name, key, sum_u64(&buf, 8, 0));
        }
        let hist = self.obj.map("hist")?;
        let stride = hist.value_size().next_multiple_of(8);
        let mut buf = vec![0u8; stride * cpus];
        for dir in 0..2u32 {
            for st in Stage::ALL {
                for k in 0..NB {
                    let i = (dir * Stage::ALL.len() as u32 + st as u32) * NB + k;
                    hist.lookup_per_cpu(&i.to_ne_bytes(), &mut buf)?;
                    let n = sum_u64(&buf, stride, 0);
                    if n > 0 {
                        let key = format!("{dir},{},{k}", st as u8);
                        m.set("@h.total", &key, sum_u64(&buf, stride, 8));
                        m.set("@h", &key, n);
                    }
                }
            }
        }
        Ok(m)
    }
}

/// The sum over CPUs of the u64 at `at` in each `stride`-byte value.
fn sum_u64(buf: &[u8], stride: usize, at: usize) -> u64 {
    buf.chunks_exact(stride)
        .map(|c| u64::from_ne_bytes(c[at..at + 8].try_into().expect("8 bytes")))
        .fold(0u64, u64::wrapping_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_counters_are_where_bytes_reads_them() {
        let at = C_BYTES as usize;
        assert_eq!(
            COUNTERS[at..at + 4],
            [
                ("@bytes", "0"),
                ("@bytes", "1"),
                ("@obytes", "0"),
                ("@obytes", "1")
            ]
        );
    }

    #[test]
    fn the_configuration_has_the_programs_layout() {
        let t = Target {
            tgid: 7,
            bio_devs: vec![1, 2],
            rq_devs: vec![3],
            request_based: true,
            sample: 0,
            kind: crate::engines::Traced::Uring,
            pos_is_sector: true,
        };
        let c = config(&t).unwrap();
        assert_eq!(c.len(), 4 * (5 + 2 * MAX_DEVS));
        let w = |i: usize| u32::from_ne_bytes(c[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((w(0), w(1), w(2), w(3)), (7, 1, 2, 1));
        assert_eq!((w(4), w(5), w(6), w(12)), (1, 2, 0, 3));
        assert_eq!(w(4 + 2 * MAX_DEVS), 1);
        let many = Target {
            bio_devs: vec![1; 9],
            ..t
        };
        assert!(config(&many).is_err());
    }

    #[test]
    fn per_cpu_values_are_summed() {
        let mut b = Vec::new();
        for (n, s) in [(1u64, 10u64), (2, 20)] {
            b.extend(n.to_ne_bytes());
            b.extend(s.to_ne_bytes());
        }
        assert_eq!(sum_u64(&b, 16, 0), 3);
        assert_eq!(sum_u64(&b, 16, 8), 30);
    }

    #[test]
    fn the_last_bucket_fits() {
        assert_eq!(super::super::script::bucket_of(u64::MAX), u64::from(NB) - 1);
    }
}
