#!/usr/bin/env python3
"""B7: dioscope's defaults against fio's t/io_uring, the tool kernel developers
quote for peak IOPS (issue #31), with fio beside them for the user-time goal.

    sudo bench/peak.py                        # io_uring, libaio, psync; 10 rounds × 5 s
    bench/peak.py --modes io_uring --rounds 3 --seconds 2    # a quick look
    bench/peak.py --t-io-uring PATH --dioscope PATH --fio PATH

t/io_uring is built from fio's source by bench/build-t-io_uring.sh (nothing of
fio is kept here). Its best configuration is chosen first, from a stated grid:
batch submit = batch complete ∈ {1, 8, 16, 32} × registered ring on/off (io_uring;
libaio: the batch sizes only), always -p0 (zram cannot poll), fixed buffers and
registered files on, QD 32, 2 rounds of --grid-seconds each. Then --rounds
interleaved rounds (the order rotates every round) of t/io_uring's winner,
dioscope with no tuning option and fio, on a zram device filled with random data.

Per run: IOPS (dioscope and fio: the JSON; t/io_uring: the mean of its
per-second lines), CPU per I/O = the whole process's user+sys time (wait4: every
thread, io-wq workers included) ÷ (IOPS × wall time), and the per-step split of
that CPU: the tool's own threads in user space, in the kernel, and io_uring's
io-wq workers (`iou-wrk-*` threads, sampled from /proc every 50 ms).

Ratios are dioscope ÷ t/io_uring of the medians over rounds, each with a 95 %
bootstrap interval (rounds resampled as pairs, 4000 resamples, fixed seed).
Standard library only; exit 0 done, 1 setup failure, 2 some runs failed.
"""

import argparse
import datetime
import json
import os
import random
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Zram, tool set-up, machine facts)

REPO = bench.REPO
CLK_TCK = os.sysconf("SC_CLK_TCK")
DEPTH = 32
GRID_BATCH = [1, 8, 16, 32]
GOALS = {"iops": 0.98, "cpu": 1.02, "user_vs_fio": 0.1}

# t/io_uring's mode and dioscope's engine for each comparison.
MODES = {
    "io_uring": {"t": [], "engine": "io_uring", "depth": DEPTH, "grid_ring": True},
    "libaio": {"t": ["-a1", "-B0", "-F0", "-X0"], "engine": "libaio", "depth": DEPTH,
               "grid_ring": False},
    # preadv2, one I/O at a time: no batch to choose.
    "psync": {"t": ["-S1", "-B0", "-F0", "-X0", "-s1", "-c1"], "engine": "psync", "depth": 1,
              "grid_ring": None},
}


def log(msg):
    bench.log(msg)


# ---------------------------------------------------------------- one run

class ThreadSampler:
    """CPU ticks of each thread of `pid`, the last value seen per thread
    (threads that exit keep their last sample)."""

    def __init__(self, pid):
        self.pid = pid
        self.seen = {}          # tid -> (comm, utime, stime)
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def sample(self):
        base = f"/proc/{self.pid}/task"
        try:
            tids = os.listdir(base)
        except OSError:
            return
        for tid in tids:
            try:
                with open(f"{base}/{tid}/stat") as f:
                    s = f.read()
            except OSError:
                continue
            comm = s[s.index("(") + 1:s.rindex(")")]
            rest = s[s.rindex(")") + 2:].split()
            # fields 14 and 15 (utime, stime) are rest[11], rest[12]
            self.seen[tid] = (comm, int(rest[11]), int(rest[12]))

    def loop(self):
        while not self.stop.wait(0.05):
            self.sample()

    def finish(self):
        self.stop.set()
        self.t.join()
        iowq = sum(u + s for c, u, s in self.seen.values() if c.startswith("iou-wrk"))
        return iowq / CLK_TCK


T_LINE = re.compile(r"^IOPS=([0-9.]+)([KM]?),")


def parse_t_io_uring(stdout):
    vals = []
    for line in stdout.splitlines():
        m = T_LINE.match(line.strip())
        if m:
            v = float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6}[m.group(2)]
            vals.append(v)
    return vals


def run_one(kind, argv, seconds):
    """One run of a tool; a dict with IOPS, CPU per I/O and its split."""
    rec = {"tool": kind, "argv": argv, "ok": False}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        sampler = ThreadSampler(proc.pid)
        timer = threading.Timer(seconds + 60, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        iowq = sampler.finish()
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    rec.update(wall_s=wall, user_s=ru.ru_utime, sys_s=ru.ru_stime, iowq_s=iowq, exit=code)
    if code != 0:
        rec["error"] = f"exit {code}: " + bench._tail(stderr or stdout)
        return rec
    if kind == "t/io_uring":
        per_s = parse_t_io_uring(stdout)
        if not per_s:
            rec["error"] = "no IOPS lines: " + bench._tail(stdout + stderr)
            return rec
        rec["iops"] = statistics.mean(per_s)
        # Its lines cover all but the last second; the run's I/Os at its mean rate.
        rec["ios"] = rec["iops"] * wall
    else:
        try:
            doc, _ = json.JSONDecoder().raw_decode(stdout[stdout.index("{"):])
            job = doc["jobs"][0]["read"]
            rec["iops"] = float(job["iops"])
            rec["ios"] = int(job["total_ios"])
        except (ValueError, KeyError, IndexError) as e:
            rec["error"] = f"cannot read JSON ({e}): " + bench._tail(stdout + stderr)
            return rec
    if rec["ios"] <= 0:
        rec["error"] = "no I/O"
        return rec
    n = rec["ios"]
    rec["cpu_us_per_io"] = (ru.ru_utime + ru.ru_stime) * 1e6 / n
    rec["user_ns_per_io"] = ru.ru_utime * 1e9 / n
    # io-wq workers run in the kernel only: their time is part of sys.
    rec["sys_tool_ns_per_io"] = max(ru.ru_stime - iowq, 0.0) * 1e9 / n
    rec["iowq_ns_per_io"] = iowq * 1e9 / n
    rec["ok"] = True
    return rec


# ---------------------------------------------------------------- command lines

def t_argv(t_bin, mode, dev, seconds, batch=None, ring=None):
    m = MODES[mode]
    argv = [t_bin, f"-d{m['depth']}", "-p0", "-O1", f"-r{seconds}"]
    if mode == "io_uring":
        argv += ["-B1", "-F1"]
    argv += m["t"]
    if batch is not None:
        argv += [f"-s{batch}", f"-c{batch}"]
    if ring is not None:
        argv += [f"-X{int(ring)}"]
    return argv + [dev]


def job_argv(tool, mode, dev, seconds):
    m = MODES[mode]
    opts = [f"--name=b7-{mode}", f"--filename={dev}", "--direct=1", "--rw=randread",
            "--bs=4k", f"--ioengine={m['engine']}", f"--iodepth={m['depth']}",
            "--time_based", f"--runtime={seconds}", "--output-format=json"]
    return [tool] + opts + (["--trials=1"] if tool.endswith("dioscope") else [])


def grid(mode):
    m = MODES[mode]
    if m["grid_ring"] is None:
        return [(None, None)]
    rings = [True, False] if m["grid_ring"] else [None]
    return [(b, r) for b in GRID_BATCH for r in rings]


def choose_t_config(t_bin, mode, dev, seconds, rounds):
    """The grid's best configuration by median IOPS; every run is kept."""
    cells = grid(mode)
    runs = {c: [] for c in cells}
    for r in range(rounds):
        order = cells if r % 2 == 0 else list(reversed(cells))
        for c in order:
            rec = run_one("t/io_uring", t_argv(t_bin, mode, dev, seconds, *c), seconds)
            runs[c].append(rec)
            log(f"grid {mode} s=c={c[0]} ring={c[1]}: "
                + (f"{rec['iops']:.0f} IOPS" if rec["ok"] else rec["error"][:200]))
    med = {c: statistics.median([x["iops"] for x in rs if x["ok"]] or [0]) for c, rs in runs.items()}
    best = max(cells, key=lambda c: med[c])
    table = [{"batch": c[0], "register_ring": c[1], "iops_median": med[c],
              "argv": shlex.join(t_argv(t_bin, mode, dev, seconds, *c))} for c in cells]
    return best, table


# ---------------------------------------------------------------- statistics

def ratio_ci(pairs, key, resamples=4000, seed=7):
    """Ratio of medians dioscope ÷ t/io_uring and its 95 % bootstrap interval,
    the rounds resampled as (t, dioscope) pairs."""
    pairs = [(a[key], b[key]) for a, b in pairs]
    if not pairs:
        return None, None, None
    point = statistics.median(b for _, b in pairs) / statistics.median(a for a, _ in pairs)
    rng = random.Random(seed)
    boots = []
    for _ in range(resamples):
        s = [rng.choice(pairs) for _ in pairs]
        boots.append(statistics.median(b for _, b in s) / statistics.median(a for a, _ in s))
    boots.sort()
    return point, boots[int(0.025 * resamples)], boots[int(0.975 * resamples) - 1]


def measure_mode(mode, args, tools, dev):
    log(f"{mode}: choosing t/io_uring's configuration")
    best, table = choose_t_config(tools["t"], mode, dev, args.grid_seconds, args.grid_rounds)
    # A t/io_uring without this mode (built without libaio's headers, its
    # lines say 0 IOPS): fio is the reference instead, and the report says so.
    has_t = max(g["iops_median"] for g in table) > 0
    ref = "t/io_uring" if has_t else "fio"
    cmds = {
        "t/io_uring": t_argv(tools["t"], mode, dev, args.seconds, *best),
        "dioscope": job_argv(tools["dioscope"], mode, dev, args.seconds),
        "fio": job_argv(tools["fio"], mode, dev, args.seconds),
    }
    if not has_t:
        log(f"{mode}: t/io_uring did no I/O in this mode; fio is the reference")
        del cmds["t/io_uring"]
    names = list(cmds)
    runs = {k: [] for k in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            rec = run_one(k, cmds[k], args.seconds)
            rec["round"] = r
            runs[k].append(rec)
            log(f"{mode} round {r + 1}/{args.rounds} {k:10s} "
                + (f"{rec['iops']:10.0f} IOPS {rec['cpu_us_per_io']:6.3f} µs CPU/IO"
                   if rec["ok"] else "FAILED " + rec["error"][:200]))
    pairs = [(a, b) for a, b in zip(runs[ref], runs["dioscope"]) if a["ok"] and b["ok"]]
    fio_pairs = [(a, b) for a, b in zip(runs["fio"], runs["dioscope"]) if a["ok"] and b["ok"]]
    summary = {
        "iops": ratio_ci(pairs, "iops"),
        "cpu": ratio_ci(pairs, "cpu_us_per_io"),
        "user_vs_fio": ratio_ci(fio_pairs, "user_ns_per_io"),
    }
    med = {k: {f: statistics.median([x[f] for x in rs if x["ok"]] or [float("nan")])
               for f in ("iops", "cpu_us_per_io", "user_ns_per_io", "sys_tool_ns_per_io",
                         "iowq_ns_per_io")}
           for k, rs in runs.items()}
    complete = all(x["ok"] for rs in runs.values() for x in rs)
    return {"reference": ref, "grid": table, "best": {"batch": best[0], "register_ring": best[1]},
            "commands": {k: shlex.join(v) for k, v in cmds.items()},
            "runs": runs, "medians": med, "summary": summary, "complete": complete}


# ---------------------------------------------------------------- report

def fmt_ci(t):
    p, lo, hi = t
    return "–" if p is None else f"{p:.3f} [{lo:.3f}, {hi:.3f}]"


def verdict(key, t):
    p = t[0]
    if p is None:
        return "no result"
    ok = p >= GOALS[key] if key == "iops" else p <= GOALS[key]
    return "met" if ok else "not met"


def render(rep):
    m = rep["machine"]
    L = ["# B7: dioscope's defaults vs t/io_uring", "",
         f"- date: {rep['date']}; command: `{rep['command']}`",
         f"- machine: {m['cpu_model']}, {m['cores']} CPUs; kernel {m['kernel']}",
         f"- t/io_uring: `{rep['tools']['t']}` ({rep['tools']['t_version']}); "
         f"fio: {rep['tools']['fio_version']}; dioscope: {rep['tools']['dioscope_version']} "
         f"at {rep['git_rev']}",
         f"- target: {rep['target']}; {rep['rounds']} interleaved rounds × {rep['seconds']} s; "
         f"load {rep['loadavg_start']} → {rep['loadavg_end']}", "",
         "Ratios are dioscope ÷ t/io_uring of the medians, with 95 % bootstrap intervals; "
         f"goals: IOPS ≥ {GOALS['iops']}, CPU per I/O ≤ {GOALS['cpu']}, dioscope's user "
         f"time per I/O ≤ {GOALS['user_vs_fio']}× fio's.", "",
         "| mode | t/io_uring IOPS | dioscope IOPS | fio IOPS | IOPS ratio | CPU/IO ratio "
         "| user/IO vs fio | result |",
         "| --- | ---: | ---: | ---: | --- | --- | --- | --- |"]
    for mode, r in rep["modes"].items():
        s, md = r["summary"], r["medians"]
        res = ", ".join(f"{k} {verdict(k, s[k])}" for k in ("iops", "cpu", "user_vs_fio"))
        t_iops = md["t/io_uring"]["iops"] if "t/io_uring" in md else float("nan")
        ref = "" if r["reference"] == "t/io_uring" else " (reference: fio)"
        L.append(f"| {mode}{ref} | {t_iops:,.0f} | {md['dioscope']['iops']:,.0f} "
                 f"| {md['fio']['iops']:,.0f} | {fmt_ci(s['iops'])} | {fmt_ci(s['cpu'])} "
                 f"| {fmt_ci(s['user_vs_fio'])} | {res} |")
    L += ["", "CPU per I/O by step (medians, ns per I/O): the tool's threads in user space, "
          "in the kernel, and io_uring's io-wq workers (`iou-wrk-*`).", "",
          "| mode | tool | user | kernel (tool's threads) | io-wq workers | total |",
          "| --- | --- | ---: | ---: | ---: | ---: |"]
    for mode, r in rep["modes"].items():
        for k, md in r["medians"].items():
            L.append(f"| {mode} | {k} | {md['user_ns_per_io']:.0f} | "
                     f"{md['sys_tool_ns_per_io']:.0f} | {md['iowq_ns_per_io']:.0f} | "
                     f"{md['cpu_us_per_io'] * 1000:.0f} |")
    L += ["", "Commands (round length as run):", ""]
    for mode, r in rep["modes"].items():
        for k, c in r["commands"].items():
            L.append(f"- {mode}, {k}: `{c}`")
    L += ["", "t/io_uring's grid (median IOPS of the grid rounds; the winner is used above):", "",
          "| mode | batch (-s = -c) | register ring (-X) | IOPS |", "| --- | ---: | --- | ---: |"]
    for mode, r in rep["modes"].items():
        for g in r["grid"]:
            ring = "–" if g["register_ring"] is None else ("on" if g["register_ring"] else "off")
            win = " **(best)**" if (g["batch"], g["register_ring"]) == (
                r["best"]["batch"], r["best"]["register_ring"]) else ""
            b = "–" if g["batch"] is None else g["batch"]
            L.append(f"| {mode} | {b} | {ring} | {g['iops_median']:,.0f}{win} |")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- main

def ensure_t(path):
    if path:
        return path
    cached = os.path.join(REPO, "bench", ".cache", "t-io_uring")
    if os.access(cached, os.X_OK):
        return cached
    log("building t/io_uring from fio's source (bench/build-t-io_uring.sh)")
    r = subprocess.run([os.path.join(REPO, "bench", "build-t-io_uring.sh")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise bench.SetupError("bench/build-t-io_uring.sh failed: " + r.stderr.strip()[-500:])
    return r.stdout.strip().splitlines()[-1]


def self_test():
    """The parts a run cannot check on itself: t/io_uring's lines are read
    right, and the interval covers the true ratio as often as it says, by
    simulation of `ratio_ci` on rounds with a known ratio (no change and a
    10 % loss), noise like these machines' (lognormal, 15 % per run, a
    shared per-round load factor). Exit 1 on a failure."""
    out = "IOPS=268.05K, BW=1047MiB/s, IOS/call=8/7\nIOPS=1.20M, BW=4GiB/s\nIOPS=95000, BW=1\n"
    assert parse_t_io_uring(out) == [268050.0, 1.2e6, 95000.0], parse_t_io_uring(out)
    rng = random.Random(1)
    for true in (1.0, 0.9):
        hits, n_exp = 0, 300
        for e in range(n_exp):
            pairs = []
            for _ in range(10):
                load = rng.lognormvariate(0, 0.10)
                a = {"x": 400e3 * load * rng.lognormvariate(0, 0.15)}
                b = {"x": 400e3 * true * load * rng.lognormvariate(0, 0.15)}
                pairs.append((a, b))
            _, lo, hi = ratio_ci(pairs, "x", resamples=500, seed=e)
            hits += lo <= true <= hi
        cover = hits / n_exp
        print(f"ratio {true}: the 95 % interval covered it in {cover:.1%} of {n_exp} experiments")
        # A percentile bootstrap of a median over 10 rounds undercovers a
        # little; below 88 % the printed intervals would mislead.
        if cover < 0.88:
            print("FAILED: the interval is too narrow")
            return 1
    print("self-test passed")
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(description="B7: dioscope vs t/io_uring (and fio).")
    p.add_argument("--modes", default="io_uring,libaio,psync")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--grid-rounds", type=int, default=2)
    p.add_argument("--grid-seconds", type=int, default=2)
    p.add_argument("--t-io-uring", default=None, help="t/io_uring binary (default: build it)")
    p.add_argument("--dioscope", default=None)
    p.add_argument("--fio", default="fio")
    p.add_argument("--zram-size", default="4G")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "peak.md"))
    a = p.parse_args(argv)
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    bad = [m for m in a.modes if m not in MODES]
    if bad:
        p.error(f"unknown mode(s) {bad}: choose from {', '.join(MODES)}")
    if a.rounds < 2 or a.seconds < 2 or a.grid_seconds < 2:
        p.error("--rounds ≥ 2, --seconds and --grid-seconds ≥ 2 (t/io_uring prints per second)")
    return a


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    args = parse_args(argv)
    if os.geteuid() != 0:
        log("B7 needs root (a zram device)")
        return 1
    zram = None
    try:
        tools = {"t": ensure_t(args.t_io_uring), "fio": bench.ensure_fio(args.fio),
                 "dioscope": args.dioscope or bench.build_dioscope()}
        zram = bench.Zram(bench.parse_size(args.zram_size))
        zram.setup()
        t_version = "unknown"
        vf = tools["t"] + ".version"
        if os.path.exists(vf):
            t_version = open(vf).read().strip()
        rep = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "command": shlex.join(["bench/peak.py"] + argv), "machine": bench.machine_info(),
               "git_rev": bench.git_rev(),
               "tools": {"t": tools["t"], "t_version": t_version,
                         "fio_version": bench.tool_version(tools["fio"]),
                         "dioscope_version": bench.tool_version(tools["dioscope"])},
               "target": f"{zram.dev} ({args.zram_size} zram, filled from /dev/urandom)",
               "rounds": args.rounds, "seconds": args.seconds,
               "loadavg_start": "%.2f" % os.getloadavg()[0], "modes": {}}
        for mode in args.modes:
            rep["modes"][mode] = measure_mode(mode, args, tools, zram.dev)
        rep["loadavg_end"] = "%.2f" % os.getloadavg()[0]
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        md = render(rep)
        with open(args.out, "w") as f:
            f.write(md)
        with open(args.out[:-3] + ".json" if args.out.endswith(".md") else args.out + ".json",
                  "w") as f:
            json.dump(rep, f, indent=1, default=str)
        print(md)
        return 0 if all(r["complete"] for r in rep["modes"].values()) else 2
    except bench.SetupError as e:
        log(f"setup failed: {e}")
        return 1
    finally:
        if zram:
            zram.remove()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
