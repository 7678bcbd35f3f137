//! The bpftrace program `--stages` runs: generated for the run's process
//! and devices, aggregated in kernel maps, printed once at the end.
//!
//! Maps (all read by [`super::parse`]):
//! - `@h[dir, stage, bucket]`: per-I/O latency histograms, log-linear
//!   buckets (16 per power of two, so a bucket is at most 1/16 of its value
//!   wide: see [`bucket_bounds`]), each bucket a `stats()` (count and sum,
//!   ns: one per-CPU map update per stage and I/O). A direction's I/Os of
//!   this run are the count of its total stage (`io_uring_complete` of a
//!   request submitted in a measured window); `@other[dir]`: bios other
//!   processes queued on the devices, `@punt[dir]`: io_uring's hand-offs to
//!   io-wq (`io_uring_queue_async_work`), `@merge`, `@split`.
//! - In flight: `@q[req]` = (submitted, dir), `@cur[tid]` = (the thread's
//!   last request, its time), `@b[sector]` = (queued or issued, dir,
//!   request), `@dd[req]` = device done. One map update carries each
//!   I/O's state from one probe to the next.
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
    /// Follow one I/O in this many through the stages (1: every I/O);
    /// the count of the run's I/Os and of its punts stays exact.
    pub sample: u32,
}

/// Whether the I/O being submitted now is followed: a hash of the
/// nanosecond clock (Fibonacci hashing: the middle bits of the product),
/// so which I/Os are followed depends on nothing about them (not their
/// place in a batch, their request slot or their offset).
fn sampled(n: u32) -> String {
    if n <= 1 {
        "1".into()
    } else {
        format!("(((nsecs * 2654435761) >> 32) % {n} == 0)")
    }
}

/// The direction of an io_uring opcode in `$d` (0 read, 1 write, 2 other):
/// READV, READ_FIXED, READ; WRITEV, WRITE_FIXED, WRITE.
const OPCODE_DIR: &str = "  $d = 2;\n\
     \x20 if (args->opcode == 22 || args->opcode == 1 || args->opcode == 4) { $d = 0; }\n\
     \x20 if (args->opcode == 23 || args->opcode == 2 || args->opcode == 5) { $d = 1; }\n";

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

/// bpftrace code that adds `$v` to the histogram of (`$d`, `stage`): one
/// per-CPU map update (`stats()` keeps each bucket's count and sum).
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
         \x20   @h[$d, {s}, $k] = stats($v);\n",
        s = stage as u8
    )
}

/// `args->dev == A || args->dev == B`.
fn dev_filter(devs: &[u32]) -> String {
    let v: Vec<String> = devs.iter().map(|d| format!("args->dev == {d}")).collect();
    format!("({})", v.join(" || "))
}

/// The probes from the window mark to the bio queued: the count of the
/// run's requests per direction (`@n`, exact) and, for the requests
/// followed (one in `sample`), the submission time and direction
/// (`@q[req]`); the submitting thread's last request (`@cur[tid]` =
/// (request, time), or (0, time) when that request is not followed), and
/// per bio followed (`@b[sector]` = (time, direction, request or 0)).
///
/// Which bios are followed: the bio a thread queues after submitting a
/// followed request (joined to it by task); a bio a thread of the run
/// queues with no request of its own before it (an io-wq worker's: the
/// request was punted) is followed one time in `sample`, by the same
/// hash, without a request. Either way one bio in `sample`, so each
/// stage's summed time ÷ the requests followed is its share of the mean.
fn submit_probes(pid: u32, bio: &str, sample: u32) -> String {
    let follow = sampled(sample);
    format!(
        "tracepoint:syscalls:sys_enter_prctl /pid == {pid} && args->option == {MARK}/ {{\n\
         \x20 @on = (int64)args->arg2;\n}}\n\
         tracepoint:io_uring:io_uring_submit_req /pid == {pid} && @on/ {{\n\
         {OPCODE_DIR}\
         \x20 if ($d < 2) {{\n\
         \x20   @n[$d] = count();\n\
         \x20   if ({follow}) {{\n\
         \x20     @q[(uint64)args->req] = (nsecs, $d);\n\
         \x20     @cur[tid] = ((uint64)args->req, nsecs);\n\
         \x20   }} else {{\n\
         \x20     @cur[tid] = ((uint64)0, nsecs);\n\
         \x20   }}\n\
         \x20 }}\n}}\n\
         tracepoint:io_uring:io_uring_queue_async_work /pid == {pid} && @on/ {{\n\
         {OPCODE_DIR}\
         \x20 if ($d < 2) {{ @punt[$d] = count(); }}\n}}\n\
         tracepoint:block:block_bio_queue /{bio}/ {{\n\
         \x20 $d = 0; if (strncmp(args->rwbs, \"W\", 1) == 0) {{ $d = 1; }}\n\
         \x20 if (pid != {pid}) {{ @other[$d] = count(); }}\n\
         \x20 if (pid == {pid} && @on) {{\n\
         \x20   $c = @cur[tid];\n\
         \x20   if ($c.0) {{\n\
         \x20   $v = nsecs - $c.1;\n{sub}\
         \x20   @cur[tid] = ((uint64)0, (uint64)1);\n\
         \x20   @b[args->sector] = (nsecs, $d, $c.0);\n\
         \x20   }}\n\
         \x20   if (!$c.1 && {follow}) {{\n\
         \x20   @b[args->sector] = (nsecs, $d, (uint64)0);\n\
         \x20   }}\n\
         \x20 }}\n}}\n\
         tracepoint:block:block_bio_backmerge,tracepoint:block:block_bio_frontmerge \
         /{bio} && pid == {pid} && @on/ {{ @merge = count(); }}\n\
         tracepoint:block:block_split /{bio} && pid == {pid} && @on/ {{ @split = count(); }}\n",
        sub = record(Stage::Submission),
    )
}

/// The whole program. Its cost is in its map operations: an I/O followed
/// through the stages, issued inline on a request-based device, makes
/// about 20 (it made 43 before each I/O's state became one tuple per key
/// and each stage one `stats()`), which took its BPF time on a loop device
/// from 5.8 to 3.1–3.8 µs per I/O (`kernel.bpf_stats_enabled`, beside
/// other work); an I/O not followed makes one count, one update and four
/// lookups that find nothing.
pub fn generate(t: &Target) -> String {
    let pid = t.tgid;
    let bio = dev_filter(&t.bio_devs);
    let rq = dev_filter(&t.rq_devs);
    let mut s = submit_probes(pid, &bio, t.sample);
    let done = |probe: &str, filter: &str| {
        format!(
            "{probe} /{filter}/ {{\n\
             \x20 $e = @b[args->sector];\n\
             \x20 if ($e.0) {{\n\
             \x20 $v = nsecs - $e.0; $d = $e.1;\n{dev}\
             \x20 if ($e.2) {{ @dd[$e.2] = nsecs; }}\n\
             \x20 delete(@b[args->sector]);\n\
             \x20 }}\n}}\n",
            dev = record(Stage::Device),
        )
    };
    if t.request_based {
        s.push_str(&format!(
            "tracepoint:block:block_rq_issue /{rq}/ {{\n\
             \x20 $e = @b[args->sector];\n\
             \x20 if ($e.0) {{\n\
             \x20 $v = nsecs - $e.0; $d = $e.1;\n{blk}\
             \x20 @b[args->sector] = (nsecs, $d, $e.2);\n\
             \x20 }}\n}}\n",
            blk = record(Stage::Block),
        ));
        s.push_str(&done("tracepoint:block:block_rq_complete", &rq));
    } else {
        s.push_str(&done("tracepoint:block:block_bio_complete", &bio));
    }
    s.push_str(&format!(
        "tracepoint:io_uring:io_uring_complete {{\n\
         \x20 $q = @q[(uint64)args->req];\n\
         \x20 if ($q.0) {{\n\
         \x20 $d = $q.1;\n\
         \x20 $v = nsecs - $q.0;\n{total}\
         \x20 $t = @dd[(uint64)args->req];\n\
         \x20 if ($t) {{\n\
         \x20   $v = nsecs - $t;\n{post}\
         \x20   delete(@dd[(uint64)args->req]);\n\
         \x20 }}\n\
         \x20 delete(@q[(uint64)args->req]);\n\
         \x20 }}\n}}\n\
         BEGIN {{ printf(\"{READY}\\n\"); }}\n\
         END {{ clear(@q); clear(@cur); clear(@b); clear(@dd); clear(@on); }}\n",
        total = record(Stage::Total),
        post = record(Stage::Posting),
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
            sample: 1,
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
        // Every stage's record is one map update of count and sum.
        assert!(!s.contains("sum($v)") && s.contains("stats($v)"));
        assert!(s.contains(&format!("args->option == {MARK}")));
        assert!(s.contains("block_rq_issue") && s.contains("block_rq_complete"));
        assert!(!s.contains("block_bio_complete"));
        for st in Stage::ALL {
            assert!(
                s.contains(&format!("@h[$d, {}, $k] = stats($v)", st as u8)),
                "{st:?}"
            );
        }
        // A bio-based device has no request stage.
        let b = generate(&target(false));
        assert!(b.contains("block_bio_complete") && !b.contains("block_rq_issue"));
        assert!(!b.contains(&format!("@h[$d, {}, $k]", Stage::Block as u8)));
        assert!(!b.contains("block_rq_complete"));
    }
}
