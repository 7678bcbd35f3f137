#!/usr/bin/env python3
"""User-space CPU per I/O by what the code does, from a `perf record` of one run.

    perf record -e cpu-clock:u -c 50000 -o b2.perf -- target/release/dioscope <job> --output-format=json > r.json
    bench/breakdown.py b2.perf target/release/dioscope IOS 50000

IOS: the I/Os of the run (jobs[0].read.total_ios); 50000: the sampling period in ns (-c).
Each sample in the dioscope binary is mapped to its chain of inlined functions
(`addr2line -i`) and charged to the innermost frame that names a step of the worker
loop (clock reads, histograms, offsets, SQE preparation, reaping, ...): with
everything inlined into one function, a plain per-symbol report cannot split it.
Samples outside the worker loop count as start-up. Samples on the instruction after a `syscall` are the kernel's exit
charged to user (timer interrupts held while it ran with interrupts off).
Standard library only, plus perf, readelf, objdump and addr2line.
"""
import subprocess, sys, re, collections, os
if len(sys.argv) != 5:
    sys.exit(__doc__)
data, binpath, ios, period = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
base = os.path.basename(binpath)
mm = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events"], capture_output=True, text=True).stdout
maps = []
for l in mm.split("\n"):
    m = re.search(r"\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0) .*\]: r-xp .*" + re.escape(base), l)
    if m: maps.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)))
ph = subprocess.run(["readelf", "-lW", binpath], capture_output=True, text=True).stdout
seg = [l.split() for l in ph.split("\n") if "LOAD" in l and "R E" in l][0]
delta = int(seg[2], 16) - int(seg[1], 16)  # vaddr - offset
samples = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym,dso"], capture_output=True, text=True).stdout
cnt = collections.Counter(); other = collections.Counter()
for l in samples.split("\n"):
    l = l.strip()
    if not l: continue
    if base in l:
        ip = int(l.split()[0], 16)
        for s, ln, off in maps:
            if s <= ip < s + ln:
                cnt[ip - s + off + delta] += 1; break
    elif "libc" in l:
        other["syscall: io_uring_enter's return, charged to user" if re.search(r"\ssyscall\b", l) else "libc: other"] += 1
    elif "vdso" in l: other["startup and set-up (once per run)"] += 1
    else: other["other objects"] += 1
addrs = sorted(cnt)
out = subprocess.run(["addr2line", "-i", "-f", "-C", "-a", "-e", binpath] + [hex(a) for a in addrs], capture_output=True, text=True).stdout.split("\n")
chains = {}; cur = None; lines = []
i = 0
while i < len(out):
    l = out[i]
    if l.startswith("0x"):
        if cur is not None: chains[cur] = lines
        cur = int(l, 16); lines = []; i += 1; continue
    if i + 1 < len(out):
        lines.append((l, out[i + 1])); i += 2
    else: i += 1
if cur is not None: chains[cur] = lines
WF = [("stage_batch", "offsets and staging"), ("stage_plain", "offsets and staging"), ("within_size", "offsets and staging"),
      ("stage_one", "slot and SQE preparation"), ("stage_at", "slot and SQE preparation"), ("put", "slot and SQE preparation"),
      ("commit", "commit (stamps, wait decision)"), ("read_clock_reduced", "clock reads"),
      ("reap_and_account", "completion reaping and queue-depth stats"), ("record_some", "latency histograms"),
      ("complete", "per-I/O accounting (counters, slots)"), ("advance_timeline", "progress and timeline"), ("timeline_event", "progress and timeline"),
      ("publish", "progress and timeline"), ("check_stop", "stop checks"), ("maybe_sync", "loop bookkeeping"), ("run_with_hook", "loop bookkeeping")]
def categorize(chain):
    for fn, loc in chain:
        f = os.path.basename(loc.split(":")[0])
        if f in ("rdtsc.rs", "clock.rs"): return "clock reads"
        if f == "histogram.rs": return "latency histograms"
        if f == "offsets.rs" or "OffsetGen" in fn or "BsPicker" in fn: return "offsets and staging"
        if f in ("squeue.rs", "opcode.rs") or "UringQueue::stage" in fn or ("null.rs" in loc and "stage" in fn): return "slot and SQE preparation"
        if f == "cqueue.rs" or "UringQueue::reap" in fn or ("null.rs" in loc and "reap" in fn): return "completion reaping and queue-depth stats"
        if f == "submit.rs" or "UringQueue::commit" in fn or ("null.rs" in loc and "commit" in fn): return "io_uring_enter call (user side)"
        if f == "worker.rs":
            if "LatRun" in fn: return "latency histograms"
            for k, c in WF:
                if re.search(r"::%s(<|$|\b)" % k, fn): return c
            return "loop bookkeeping"
        if any(k in fn for k in ("calibrate", "ClockInfo", "diag::", "safety::", "render", "serde", "job::", "Snapshot", "profile", "targets::", "results::", "commands::", "stats::", "std::fs", "main")):
            return "startup and set-up (once per run)"
    return "startup and set-up (once per run)" if chain and "worker" not in " ".join(fn for fn, _ in chain) else "loop bookkeeping"
# The instruction after a `syscall` (2 bytes: 0f 05) is where the kernel's
# exit path lands the timer interrupts that came due while it ran with
# interrupts off: time the kernel spent, charged to user.
dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binpath], capture_output=True, text=True).stdout
after_sc = {int(m.group(1), 16) + 2 for m in re.finditer(r"^\s*([0-9a-f]+):\s+syscall\s*$", dis, re.M)}
cats = collections.Counter(other)
for a, n in cnt.items():
    cats["syscall: io_uring_enter's return, charged to user" if a in after_sc else categorize(chains.get(a, []))] += n
tot = sum(cats.values())
print(f"{os.path.basename(data)}: {tot} samples × {period/1000:.0f} µs = {tot*period/1e6:.1f} ms of user time; {ios} I/Os -> {tot*period/ios:.1f} ns/IO")
for c, n in cats.most_common():
    print(f"  {c:52s} {n*period/ios:7.1f} ns/IO  {100*n/tot:5.1f}%")
