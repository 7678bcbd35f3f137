//! The bpftrace program `--stages` runs: generated for the run's process
//! and devices, aggregated in kernel maps, printed once at the end.
//!
//! Maps (all read by [`super::parse`]):
//! - `@h[dir, stage, bucket]`: per-I/O latency histograms, log-linear
//!   buckets (16 per power of two, so a bucket is at most 1/16 of its value
//!   wide: see [`bucket_bounds`]); `@s[dir, stage]`: their sums (ns);
//! - `@tagged[dir]`: this run's I/Os completed (io_uring_complete of a
//!   request submitted in a measured window), `@other[dir]`: bios other
//!   processes queued on the devices, `@punt[dir]`: io_uring's hand-offs to
//!   io-wq (`io_uring_queue_async_work`), `@merge`, `@split`.
//!
//! Stages ([`Stage`]): total is `io_uring_submit_req → io_uring_complete`
//! keyed by the request; submission is `submit_req → block_bio_queue` joined
//! by task (the next bio the submitting thread queues: exact for I/O issued
//! inline, absent for I/O punted to io-wq); block layer `bio_queue →
//! rq_issue` and device `rq_issue → rq_complete` keyed by sector (on a
//! bio-based device, device is `bio_queue → bio_complete`); posting is
//! `rq_complete` (or `bio_complete`) `→ io_uring_complete`, joined through
//! the sector to the request the submitting thread's bio carried.
//!
//! The measured window: `@on`, set and cleared by the run's own
//! `prctl(MARK, 1|0)` ([`MARK`]); only requests submitted while it is set
//! are tagged (their completions are counted whenever they come).

/// The `prctl` option that marks the window (`"dios"`, unknown to the kernel).
pub const MARK: u32 = 0x6469_6f73;

/// What the script is written for.
pub struct Target {
    /// The run's process id (its thread group: io-wq workers are its threads).
    pub tgid: u32,
    /// The kernel's dev_t (`major << 20 | minor`) of the devices bios are
    /// queued on (a partition's own number).
    pub bio_devs: Vec<u32>,
    /// The dev_t of the disks requests are issued to (whole disks).
    pub rq_devs: Vec<u32>,
    /// Request-based (a blk-mq queue) or bio-based (zram, device mapper).
    pub request_based: bool,
}

/// The stages, in the order of an I/O's life (the `stage` map key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Total = 0,
    Submission = 1,
    Block = 2,
    Device = 3,
    Posting = 4,
}

impl Stage {
    pub const ALL: [Stage; 5] = [
        Stage::Total,
        Stage::Submission,
        Stage::Block,
        Stage::Device,
        Stage::Posting,
    ];
}

/// The kernel's dev_t of a (major, minor) pair, as tracepoints show it.
pub fn kdev(major: u32, minor: u32) -> u32 {
    (major << 20) | minor
}

/// The lowest value and the width (ns) of a histogram bucket: values under
/// 16 have a bucket each; above, bucket `k` is in octave `k / 16 + 3` and
/// splits it in 16.
pub fn bucket_bounds(k: u64) -> (u64, u64) {
    if k < 16 {
        return (k, 1);
    }
    let l = k / 16 + 3;
    let sub = k % 16;
    ((16 + sub) << (l - 4), 1 << (l - 4))
}

/// The bucket of `v` (the script computes the same in the kernel).
#[cfg(test)]
pub fn bucket_of(v: u64) -> u64 {
    if v < 16 {
        return v;
    }
    let l = 63 - u64::from(v.leading_zeros());
    (l - 3) * 16 + ((v >> (l - 4)) & 15)
}

/// bpftrace code that adds `$v` to the histogram of (`$d`, `stage`).
fn record(stage: Stage) -> String {
    format!(
        "    $l = (uint64)0; $x = $v;\n\
         \x20   if ($x >= 4294967296) {{ $x = $x >> 32; $l = $l + 32; }}\n\
         \x20   if ($x >= 65536) {{ $x = $x >> 16; $l = $l + 16; }}\n\
         \x20   if ($x >= 256) {{ $x = $x >> 8; $l = $l + 8; }}\n\
         \x20   if ($x >= 16) {{ $x = $x >> 4; $l = $l + 4; }}\n\
         \x20   if ($x >= 4) {{ $x = $x >> 2; $l = $l + 2; }}\n\
         \x20   if ($x >= 2) {{ $l = $l + 1; }}\n\
         \x20   $k = $v;\n\
         \x20   if ($l >= 4) {{ $k = ($l - 3) * 16 + (($v >> ($l - 4)) & 15); }}\n\
         \x20   @h[$d, {s}, $k] = count();\n\
         \x20   @s[$d, {s}] = sum($v);\n",
        s = stage as u8
    )
}

/// `args->dev == A || args->dev == B`.
fn dev_filter(devs: &[u32]) -> String {
    let v: Vec<String> = devs.iter().map(|d| format!("args->dev == {d}")).collect();
    format!("({})", v.join(" || "))
}

/// The whole program.
pub fn generate(t: &Target) -> String {
    let pid = t.tgid;
    let bio = dev_filter(&t.bio_devs);
    let rq = dev_filter(&t.rq_devs);
    let mut s = String::new();
    s.push_str(&format!(
        "tracepoint:syscalls:sys_enter_prctl /pid == {pid} && args->option == {MARK}/ {{\n\
         \x20 @on = (int64)args->arg2;\n}}\n\
         tracepoint:io_uring:io_uring_submit_req /pid == {pid} && @on/ {{\n\
         \x20 $d = 2;\n\
         \x20 if (args->opcode == 22 || args->opcode == 1 || args->opcode == 4) {{ $d = 0; }}\n\
         \x20 if (args->opcode == 23 || args->opcode == 2 || args->opcode == 5) {{ $d = 1; }}\n\
         \x20 if ($d < 2) {{\n\
         \x20   @sq[(uint64)args->req] = nsecs; @sd[(uint64)args->req] = $d;\n\
         \x20   @cur[tid] = (uint64)args->req; @curt[tid] = nsecs;\n\
         \x20 }}\n}}\n\
         tracepoint:io_uring:io_uring_queue_async_work /@sq[(uint64)args->req]/ {{\n\
         \x20 @punt[@sd[(uint64)args->req]] = count();\n}}\n\
         tracepoint:block:block_bio_queue /{bio}/ {{\n\
         \x20 $d = 0; if (strncmp(args->rwbs, \"W\", 1) == 0) {{ $d = 1; }}\n\
         \x20 if (pid != {pid}) {{ @other[$d] = count(); }}\n\
         \x20 if (pid == {pid} && @on) {{\n\
         \x20   @bq[args->sector] = nsecs; @bd[args->sector] = $d;\n\
         \x20   $r = @cur[tid];\n\
         \x20   if ($r) {{\n\
         \x20   $v = nsecs - @curt[tid];\n{sub}\
         \x20   @br[args->sector] = $r;\n\
         \x20   delete(@cur[tid]); delete(@curt[tid]);\n\
         \x20   }}\n\
         \x20 }}\n}}\n\
         tracepoint:block:block_bio_backmerge,tracepoint:block:block_bio_frontmerge \
         /{bio} && pid == {pid} && @on/ {{ @merge = count(); }}\n\
         tracepoint:block:block_split /{bio} && pid == {pid} && @on/ {{ @split = count(); }}\n",
        sub = record(Stage::Submission),
    ));
    let done = |probe: &str, from: &str, filter: &str| {
        format!(
            "{probe} /{filter} && @{from}[args->sector]/ {{\n\
             \x20 $v = nsecs - @{from}[args->sector]; $d = @bd[args->sector];\n{dev}\
             \x20 delete(@{from}[args->sector]); delete(@bd[args->sector]);\n\
             \x20 $r = @br[args->sector];\n\
             \x20 if ($r) {{ @dd[$r] = nsecs; delete(@br[args->sector]); }}\n}}\n",
            dev = record(Stage::Device),
        )
    };
    if t.request_based {
        s.push_str(&format!(
            "tracepoint:block:block_rq_issue /{rq} && @bq[args->sector]/ {{\n\
             \x20 $v = nsecs - @bq[args->sector]; $d = @bd[args->sector];\n{blk}\
             \x20 @ri[args->sector] = nsecs; delete(@bq[args->sector]);\n}}\n",
            blk = record(Stage::Block),
        ));
        s.push_str(&done("tracepoint:block:block_rq_complete", "ri", &rq));
    } else {
        s.push_str(&done("tracepoint:block:block_bio_complete", "bq", &bio));
    }
    s.push_str(&format!(
        "tracepoint:io_uring:io_uring_complete /@sq[(uint64)args->req]/ {{\n\
         \x20 $d = @sd[(uint64)args->req];\n\
         \x20 $v = nsecs - @sq[(uint64)args->req];\n\
         \x20 @tagged[$d] = count();\n{total}\
         \x20 $t = @dd[(uint64)args->req];\n\
         \x20 if ($t) {{\n\
         \x20   $v = nsecs - $t;\n{post}\
         \x20   delete(@dd[(uint64)args->req]);\n\
         \x20 }}\n\
         \x20 delete(@sq[(uint64)args->req]); delete(@sd[(uint64)args->req]);\n}}\n\
         BEGIN {{ printf(\"{READY}\\n\"); }}\n\
         END {{ clear(@sq); clear(@sd); clear(@cur); clear(@curt); clear(@bq); clear(@bd); \
         clear(@br); clear(@dd); clear(@on);{ri} }}\n",
        total = record(Stage::Total),
        post = record(Stage::Posting),
        ri = if t.request_based { " clear(@ri);" } else { "" },
    ));
    s
}

/// What the program prints once its probes are attached.
pub const READY: &str = "dioscope-stages-ready";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_once_and_are_narrow() {
        let mut last = (0, 0);
        for v in (0..5000u64).chain([1 << 20, (1 << 33) + 12345, u64::MAX >> 2]) {
            let k = bucket_of(v);
            let (lo, w) = bucket_bounds(k);
            assert!(
                lo <= v && v < lo + w,
                "{v} in bucket {k} = [{lo}, {})",
                lo + w
            );
            assert!(
                v < 16 || w * 16 <= lo,
                "{v}: bucket width {w} too wide for {lo}"
            );
            if v < 5000 {
                assert!(k >= last.0, "buckets grow with the value");
                last = (k, v);
            }
        }
    }

    fn target(request_based: bool) -> Target {
        Target {
            tgid: 4242,
            bio_devs: vec![kdev(7, 3)],
            rq_devs: vec![kdev(7, 3)],
            request_based,
        }
    }

    #[test]
    fn the_program_tags_by_the_process_and_the_device() {
        let s = generate(&target(true));
        assert_eq!(kdev(7, 3), 7340035);
        assert!(
            s.contains("io_uring_submit_req /pid == 4242 && @on/"),
            "{s}"
        );
        assert!(
            s.contains("block_bio_queue /(args->dev == 7340035)/"),
            "{s}"
        );
        assert!(
            s.contains("if (pid != 4242) { @other[$d] = count(); }"),
            "{s}"
        );
        assert!(s.contains(&format!("args->option == {MARK}")));
        assert!(s.contains("block_rq_issue") && s.contains("block_rq_complete"));
        assert!(!s.contains("block_bio_complete"));
        for st in Stage::ALL {
            assert!(s.contains(&format!("@h[$d, {}, $k]", st as u8)), "{st:?}");
        }
        // A bio-based device has no request stage.
        let b = generate(&target(false));
        assert!(b.contains("block_bio_complete") && !b.contains("block_rq_issue"));
        assert!(!b.contains(&format!("@h[$d, {}, $k]", Stage::Block as u8)));
        assert!(!b.contains("@ri"));
    }
}
