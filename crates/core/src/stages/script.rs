//! The bpftrace program `--stages` runs: generated for the run's process
//! and devices, aggregated in kernel maps, printed once at the end.
//!
//! Maps (all read by [`super::parse`]):
//! - `@h[dir, stage, bucket]`: per-I/O latency histograms, log-linear
//!   buckets (16 per power of two, so a bucket is at most 1/16 of its value
//!   wide: see [`bucket_bounds`]), each bucket a `stats()` (count and sum,
//!   ns: one per-CPU map update per stage and I/O), over the I/Os followed
//!   (one in the sample rate). `@n[dir]`: every I/O of the run opened in a
//!   measured window (exact); `@f[dir]`: libaio's followed bios;
//!   `@other[dir]`: bios other processes queued on the devices (`@obytes`
//!   their bytes; `@bytes` the run's bios' bytes);
//!   `@punt[dir]`: io_uring's hand-offs to io-wq
//!   (`io_uring_queue_async_work`); `@merge`, `@split`.
//! - In flight: `@q[key]` = (opened, dir), `@cur[tid]` = (the thread's
//!   open I/O's key, its time), `@b[sector]` = (queued or issued, dir,
//!   key), `@dd[key]` = device done. One map update carries each I/O's
//!   state from one probe to the next.
//!
//! An I/O's key and its opening and closing tracepoints depend on the
//! engine ([`Traced`]): io_uring's request (`io_uring_submit_req →
//! io_uring_complete`), a blocking call's thread (`sys_enter_pread64 →
//! sys_exit_pread64`, and the vectored calls), or, for libaio, none: its
//! bios are followed from the `io_submit` entry to the device's completion.
//!
//! Stages ([`Stage`]): total is open → close, keyed; submission is open →
//! `block_bio_queue` joined by task (the next bio the opening thread
//! queues: exact for I/O issued inline, absent for I/O punted to io-wq);
//! block layer `bio_queue → rq_issue` and device `rq_issue → rq_complete`
//! keyed by sector (on a bio-based device, device is `bio_queue →
//! bio_complete`); posting is `rq_complete` (or `bio_complete`) → close,
//! joined through the sector to the key the opening thread's bio carried.
//!
//! The measured window: `@on`, set and cleared by the run's own
//! `prctl(MARK, 1|0)` ([`MARK`]); only requests submitted while it is set
//! are tagged (their completions are counted whenever they come).

/// The `prctl` option that marks the window (`"dios"`, unknown to the kernel).
pub const MARK: u32 = 0x6469_6f73;

use crate::engines::Traced;

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
    /// The engine's kind of I/O: which tracepoints open and close an I/O.
    pub kind: Traced,
    /// Every target is a whole block device (an I/O's offset ÷ 512 is its
    /// bio's sector): the raw program then joins an I/O handed to io-wq to
    /// the bio the io-wq worker queues.
    pub pos_is_sector: bool,
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
    /// Handed to io-wq → the io-wq worker queued the bio (raw backend).
    Handoff = 5,
}

impl Stage {
    pub const ALL: [Stage; 6] = [
        Stage::Total,
        Stage::Submission,
        Stage::Block,
        Stage::Device,
        Stage::Posting,
        Stage::Handoff,
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

/// The window mark: `@on`, set and cleared by the run's own `prctl`.
fn mark_probe(pid: u32) -> String {
    format!(
        "tracepoint:syscalls:sys_enter_prctl /pid == {pid} && args->option == {MARK}/ {{\n\
         \x20 @on = (int64)args->arg2;\n}}\n"
    )
}

/// An I/O opens (`$d` set, `$key` its key): counted in `@n` (exact), and
/// followed one time in `sample` (`@q[key]` = (time, dir); the thread's
/// last I/O in `@cur[tid]` = (key, time), or (0, time) when not followed,
/// so that its bio is not joined to an earlier one).
fn open_io(follow: &str) -> String {
    format!(
        "\x20 if ($d < 2) {{\n\
         \x20   @n[$d] = count();\n\
         \x20   if ({follow}) {{\n\
         \x20     @q[$key] = (nsecs, $d);\n\
         \x20     @cur[tid] = ($key, nsecs);\n\
         \x20   }} else {{\n\
         \x20     @cur[tid] = ((uint64)0, nsecs);\n\
         \x20   }}\n\
         \x20 }}\n"
    )
}

/// io_uring: a request opens at `io_uring_submit_req` (keyed by request);
/// its hand-off to io-wq is counted by opcode.
fn uring_open(pid: u32, follow: &str) -> String {
    format!(
        "tracepoint:io_uring:io_uring_submit_req /pid == {pid} && @on/ {{\n\
         {OPCODE_DIR}\
         \x20 $key = (uint64)args->req;\n{open}}}\n\
         tracepoint:io_uring:io_uring_queue_async_work /pid == {pid} && @on/ {{\n\
         {OPCODE_DIR}\
         \x20 if ($d < 2) {{ @punt[$d] = count(); }}\n}}\n",
        open = open_io(follow)
    )
}

/// A blocking call opens at its `sys_enter` (keyed by thread).
fn syscall_open(pid: u32, read: &str, write: &str, follow: &str) -> String {
    let one = |call: &str, d: u8| {
        format!(
            "tracepoint:syscalls:sys_enter_{call} /pid == {pid} && @on/ {{\n\
             \x20 $d = {d}; $key = (uint64)tid;\n{open}}}\n",
            open = open_io(follow)
        )
    };
    format!("{}{}", one(read, 0), one(write, 1))
}

/// The bio queued: another process's is other I/O; one of the run's is
/// joined by task to the thread's open I/O when that is followed
/// (submission stage; `@b[sector]` = (time, dir, key)), or, queued by a
/// thread of the run with no I/O of its own open (an io-wq worker's: the
/// request was punted), followed by its own draw without a key. Either way
/// one bio in `sample`, as the I/Os followed. A bio of the run that is not
/// followed deletes its sector's entry: one left by a bio that never
/// reached a request at that sector (merged at the front, failed with
/// EAGAIN) would otherwise be found by the next request there, and its age
/// taken for that request's block-layer time.
fn joined_bio_queue(pid: u32, bio: &str, follow: &str) -> String {
    format!(
        "tracepoint:block:block_bio_queue /{bio}/ {{\n\
         \x20 $d = 0; if (strncmp(args->rwbs, \"W\", 1) == 0) {{ $d = 1; }}\n\
         \x20 if (pid != {pid}) {{ @other[$d] = count(); }}\n\
         \x20 if (pid != {pid}) {{ @obytes[$d] = sum(args->nr_sector * 512); }}\n\
         \x20 if (pid == {pid} && @on) {{\n\
         \x20   @bytes[$d] = sum(args->nr_sector * 512);\n\
         \x20   $c = @cur[tid];\n\
         \x20   if ($c.0) {{\n\
         \x20   $v = nsecs - $c.1;\n{sub}\
         \x20   @cur[tid] = ((uint64)0, (uint64)1);\n\
         \x20   @b[args->sector] = (nsecs, $d, $c.0);\n\
         \x20   }} else {{\n\
         \x20   if (!$c.1 && {follow}) {{\n\
         \x20   @b[args->sector] = (nsecs, $d, (uint64)0);\n\
         \x20   }} else {{\n\
         \x20   delete(@b[args->sector]);\n\
         \x20   }}\n\
         \x20   }}\n\
         \x20 }}\n}}\n",
        sub = record(Stage::Submission),
    )
}

/// libaio: `io_submit` queues its I/Os' bios in the caller's context, so
/// each bio of the run is an I/O (`@n`), followed by its own draw (`@f`),
/// its submission measured from the `io_submit` entry (`@cur[tid]`); no
/// tracepoint ends an aio I/O, so nothing is keyed past the device.
fn aio_open(pid: u32, bio: &str, follow: &str) -> String {
    format!(
        "tracepoint:syscalls:sys_enter_io_submit /pid == {pid}/ {{\n\
         \x20 @cur[tid] = ((uint64)1, nsecs);\n}}\n\
         tracepoint:syscalls:sys_exit_io_submit /pid == {pid}/ {{\n\
         \x20 delete(@cur[tid]);\n}}\n\
         tracepoint:block:block_bio_queue /{bio}/ {{\n\
         \x20 $d = 0; if (strncmp(args->rwbs, \"W\", 1) == 0) {{ $d = 1; }}\n\
         \x20 if (pid != {pid}) {{ @other[$d] = count(); }}\n\
         \x20 if (pid != {pid}) {{ @obytes[$d] = sum(args->nr_sector * 512); }}\n\
         \x20 if (pid == {pid} && @on) {{\n\
         \x20   @bytes[$d] = sum(args->nr_sector * 512);\n\
         \x20   @n[$d] = count();\n\
         \x20   if ({follow}) {{\n\
         \x20   @f[$d] = count();\n\
         \x20   $c = @cur[tid];\n\
         \x20   if ($c.1) {{\n\
         \x20   $v = nsecs - $c.1;\n{sub}\
         \x20   }}\n\
         \x20   @b[args->sector] = (nsecs, $d, (uint64)0);\n\
         \x20   }} else {{\n\
         \x20   delete(@b[args->sector]);\n\
         \x20   }}\n\
         \x20 }}\n}}\n",
        sub = record(Stage::Submission),
    )
}

/// The block layer and the device: `@b[sector]` from queued to issued to
/// completed (block layer, device), the device's completion time kept for
/// the I/O's key (`@dd[key]`) when the bio was joined to one.
fn device_probes(t: &Target, bio: &str) -> String {
    let rq = dev_filter(&t.rq_devs);
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
    if !t.request_based {
        return done("tracepoint:block:block_bio_complete", bio);
    }
    format!(
        "tracepoint:block:block_rq_issue /{rq}/ {{\n\
         \x20 $e = @b[args->sector];\n\
         \x20 if ($e.0) {{\n\
         \x20 $v = nsecs - $e.0; $d = $e.1;\n{blk}\
         \x20 @b[args->sector] = (nsecs, $d, $e.2);\n\
         \x20 }}\n}}\n{done}",
        blk = record(Stage::Block),
        done = done("tracepoint:block:block_rq_complete", &rq),
    )
}

/// An I/O closes (`$key` its key): its total, and its posting from the
/// device's completion (`@dd[key]`).
fn close_io() -> String {
    format!(
        "\x20 $q = @q[$key];\n\
         \x20 if ($q.0) {{\n\
         \x20 $d = $q.1;\n\
         \x20 $v = nsecs - $q.0;\n{total}\
         \x20 $t = @dd[$key];\n\
         \x20 if ($t) {{\n\
         \x20   $v = nsecs - $t;\n{post}\
         \x20   delete(@dd[$key]);\n\
         \x20 }}\n\
         \x20 delete(@q[$key]);\n\
         \x20 }}\n",
        total = record(Stage::Total),
        post = record(Stage::Posting),
    )
}

/// The whole program for the engine's kind of I/O ([`Traced`]). Its cost
/// is in its map operations: an I/O followed through the stages, issued
/// inline on a request-based device, makes about 20 (it made 43 before
/// each I/O's state became one tuple per key and each stage one `stats()`),
/// which took its BPF time on a loop device from 5.8 to 3.1–3.8 µs per I/O
/// (`kernel.bpf_stats_enabled`, beside other work); an I/O not followed
/// makes one count, one update and three lookups that find nothing. The
/// floor is the tracepoints themselves (docs/STAGES.md, Cost).
pub fn generate(t: &Target) -> String {
    let pid = t.tgid;
    let bio = dev_filter(&t.bio_devs);
    let follow = sampled(t.sample);
    let mut s = mark_probe(pid);
    match t.kind {
        Traced::Uring => {
            s.push_str(&uring_open(pid, &follow));
            s.push_str(&joined_bio_queue(pid, &bio, &follow));
        }
        Traced::Syscall { read, write } => {
            s.push_str(&syscall_open(pid, read, write, &follow));
            s.push_str(&joined_bio_queue(pid, &bio, &follow));
        }
        Traced::Aio | Traced::No => s.push_str(&aio_open(pid, &bio, &follow)),
    }
    // A bio merged into another's request is never issued at its own
    // sector: its entry goes, and so, on a front merge, does the entry of
    // the request it now starts (issued at the merged bio's sector).
    s.push_str(&format!(
        "tracepoint:block:block_bio_backmerge,tracepoint:block:block_bio_frontmerge \
         /{bio} && pid == {pid} && @on/ {{ @merge = count(); delete(@b[args->sector]); }}\n\
         tracepoint:block:block_bio_frontmerge /{bio} && pid == {pid} && @on/ {{\n\
         \x20 delete(@b[args->sector + args->nr_sector]);\n}}\n\
         tracepoint:block:block_split /{bio} && pid == {pid} && @on/ {{ @split = count(); }}\n"
    ));
    s.push_str(&device_probes(t, &bio));
    match t.kind {
        Traced::Uring => s.push_str(&format!(
            "tracepoint:io_uring:io_uring_complete /pid == {pid}/ {{\n\
             \x20 $key = (uint64)args->req;\n{close}}}\n",
            close = close_io()
        )),
        Traced::Syscall { read, write } => s.push_str(&format!(
            "tracepoint:syscalls:sys_exit_{read},tracepoint:syscalls:sys_exit_{write} \
             /pid == {pid}/ {{\n\
             \x20 $key = (uint64)tid;\n{close}}}\n",
            close = close_io()
        )),
        Traced::Aio | Traced::No => {}
    }
    // The in-flight maps are cleared so that only the results print.
    let keyed = if matches!(t.kind, Traced::Aio | Traced::No) {
        ""
    } else {
        "clear(@q); "
    };
    s.push_str(&format!(
        "BEGIN {{ printf(\"{READY}\\n\"); }}\n\
         END {{ {keyed}clear(@cur); clear(@b); clear(@dd); clear(@on); }}\n"
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
            sample: 8,
            kind: Traced::Uring,
            pos_is_sector: false,
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
        // The hand-off to io-wq is joined by the raw program only.
        for st in Stage::ALL
            .into_iter()
            .filter(|s| !matches!(s, Stage::Handoff))
        {
            assert!(
                s.contains(&format!("@h[$d, {}, $k] = stats($v)", st as u8)),
                "{st:?}"
            );
        }
        // Every request and punt is counted; one request in 8 followed,
        // by a hash of the clock; a punted request's bio by its own draw.
        assert!(s.contains("@n[$d] = count();"), "{s}");
        assert!(s.contains("if ($d < 2) { @punt[$d] = count(); }"), "{s}");
        assert!(s.contains("(((nsecs * 2654435761) >> 32) % 8 == 0)"), "{s}");
        assert!(s.contains("if (!$c.1 && (((nsecs"), "{s}");
        let all = generate(&Target {
            sample: 1,
            ..target(true)
        });
        assert!(
            !all.contains("nsecs * 2654435761") && all.contains("if (1)"),
            "{all}"
        );
        // A bio-based device has no request stage.
        let b = generate(&target(false));
        assert!(b.contains("block_bio_complete") && !b.contains("block_rq_issue"));
        assert!(!b.contains(&format!("@h[$d, {}, $k]", Stage::Block as u8)));
        assert!(!b.contains("block_rq_complete"));
    }

    #[test]
    fn blocking_calls_and_libaio_open_and_close_where_their_io_does() {
        let ps = generate(&Target {
            kind: Traced::Syscall {
                read: "pread64",
                write: "pwrite64",
            },
            ..target(true)
        });
        assert!(
            ps.contains("sys_enter_pread64 /pid == 4242 && @on/"),
            "{ps}"
        );
        assert!(ps.contains("$d = 1; $key = (uint64)tid;"), "{ps}");
        assert!(
            ps.contains("sys_exit_pread64,tracepoint:syscalls:sys_exit_pwrite64 /pid == 4242/"),
            "{ps}"
        );
        assert!(!ps.contains("io_uring"), "{ps}");
        // The bucket of a record is `$k`: the key must not be it.
        assert!(ps.contains("$t = @dd[$key];") && ps.contains("delete(@q[$key]);"));
        let aio = generate(&Target {
            kind: Traced::Aio,
            ..target(true)
        });
        assert!(aio.contains("sys_enter_io_submit /pid == 4242/"), "{aio}");
        assert!(aio.contains("@f[$d] = count();"), "{aio}");
        assert!(!aio.contains("@q[") && !aio.contains("clear(@q)"), "{aio}");
    }
}
