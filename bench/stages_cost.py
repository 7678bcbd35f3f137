#!/usr/bin/env python3
"""B8: what `--stages` costs in IOPS (issue #32), against the same run without it.

    sudo bench/stages_cost.py                    # every target, 6 rounds × 4 s
    bench/stages_cost.py --targets loop-disk --rounds 3 --seconds 3
    bench/stages_cost.py --samples 8,1          # the default and following every I/O
    bench/stages_cost.py --backends raw,bpftrace  # both backends of --stages

Targets, each made here and removed after (the ext4 files are written in full
first, so reads go to the disk and not to a file's holes):

- loop-disk: a loop device (`--direct-io=on`) over a 1 GiB file on the file
  system that holds this checkout (the machine's disk);
- ext4-file: a 1 GiB file on that file system (it must be ext4), read directly;
- loop-cache: a loop device over a sparse file (reads of holes: no disk, the
  device is as fast as the CPU lets it be: the worst case for tracing);
- zram: a zram device filled with random data (bio-based, every read punted to
  io-wq).

Each round runs, in an order that alternates, dioscope without `--stages` and
with it at each `--samples` rate and each `--backends` backend
(DIOSCOPE_STAGES_BACKEND: `raw` the raw-tracepoint program, `bpftrace` the
bpftrace one; a run whose result names another backend fails) (4 KiB random reads, io_uring, QD 32, one
trial of --seconds after a 1 s ramp). Cost = 1 − median IOPS with ÷ median
without, with a 95 % bootstrap interval (rounds resampled as tuples). The
goal (issue #32): at most 5 % on a loop device and on an ext4 file.

Standard library only; exit 0 done, 1 setup failure, 2 some runs failed.
"""

import argparse
import datetime
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Zram, machine facts)

REPO = bench.REPO
MiB = 1 << 20
GOAL = 0.05
TARGETS = ["loop-disk", "ext4-file", "loop-cache", "zram"]


def log(msg):
    print(f"[stages-cost {datetime.datetime.now():%H:%M:%S}] {msg}", flush=True)


def fs_type(path):
    r = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return r.stdout.strip()


class Target:
    """A device or file to read, made by `setup()` and undone by `remove()`."""

    def __init__(self, kind, workdir):
        self.kind = kind
        self.workdir = workdir
        self.path = None
        self.loop = None
        self.file = None
        self.zram = None

    def _file(self, name, size, written):
        self.file = os.path.join(self.workdir, name)
        if written:
            bench.make_random_file(self.file, size)
        else:
            with open(self.file, "wb") as f:
                f.truncate(size)

    def _attach(self, direct):
        r = subprocess.run(["losetup", "--find", "--show", f"--direct-io={direct}", self.file],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise bench.SetupError(f"losetup failed: {r.stderr.strip()}")
        self.loop = r.stdout.strip()
        self.path = self.loop

    def setup(self):
        if self.kind == "loop-disk":
            self._file("stages-cost-disk.img", 1024 * MiB, True)
            self._attach("on")
        elif self.kind == "ext4-file":
            if fs_type(self.workdir) != "ext2/ext3":
                raise bench.SetupError(f"{self.workdir} is not on ext4 ({fs_type(self.workdir)})")
            self._file("stages-cost-ext4.dat", 1024 * MiB, True)
            self.path = self.file
        elif self.kind == "loop-cache":
            self._file("stages-cost-sparse.img", 1024 * MiB, False)
            self._attach("on")
        elif self.kind == "zram":
            self.zram = bench.Zram(1024 * MiB)
            self.zram.setup()
            self.path = self.zram.dev
        else:
            raise bench.SetupError(f"no target {self.kind}")
        return self

    def remove(self):
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], capture_output=True)
        if self.file and os.path.exists(self.file):
            os.unlink(self.file)
        if self.zram:
            self.zram.remove()


def run_one(dio, path, seconds, variant):
    """IOPS of one run; `variant` (backend, sample), None = no --stages."""
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    argv = [dio, "run", "--name=cost", f"--filename={path}", "--rw=randread", "--bs=4k",
            "--ioengine=io_uring", "--iodepth=32", "--direct=1", "--size=1g",
            "--time_based", f"--runtime={seconds}", "--ramp_time=1", "--trials=1",
            "--output-format=json", f"--output={out}"]
    env = dict(os.environ)
    if variant is not None:
        backend, sample = variant
        argv += ["--stages", f"--stages_sample={sample}"]
        env["DIOSCOPE_STAGES_BACKEND"] = backend
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=seconds * 10 + 60,
                           env=env)
        if r.returncode != 0:
            log(f"run failed ({r.returncode}): {r.stderr.strip()[-300:]}")
            return None
        with open(out) as f:
            doc = json.load(f)
        st = (doc.get("dioscope") or {}).get("stages") or {}
        if variant is not None and st.get("status") != "measured":
            log(f"--stages did not measure: {st.get('message')}")
            return None
        if variant is not None and not st.get("backend", "bpftrace").startswith(variant[0]):
            log(f"--stages ran on {st.get('backend')}, not {variant[0]}")
            return None
        return doc["jobs"][0]["read"]["iops"]
    finally:
        os.unlink(out)


def cost_ci(rounds, key, resamples=4000, seed=7):
    """1 − median(with) ÷ median(without), and its 95 % bootstrap interval."""
    pairs = [(r[None], r[key]) for r in rounds if r.get(None) and r.get(key)]
    if not pairs:
        return None, None, None

    def cost(ps):
        return 1 - statistics.median(b for _, b in ps) / statistics.median(a for a, _ in ps)

    rng = random.Random(seed)
    boots = sorted(cost([rng.choice(pairs) for _ in pairs]) for _ in range(resamples))
    return cost(pairs), boots[int(0.025 * resamples)], boots[int(0.975 * resamples) - 1]


def measure(dio, kind, args, samples):
    t = Target(kind, args.workdir)
    try:
        t.setup()
        log(f"{kind}: {t.path}")
        variants = [None] + samples
        rounds = []
        for i in range(args.rounds):
            order = variants if i % 2 == 0 else list(reversed(variants))
            r = {}
            for s in order:
                r[s] = run_one(dio, t.path, args.seconds, s)
                label = "without" if s is None else f"{s[0]} 1 in {s[1]}"
                log(f"{kind} round {i + 1}/{args.rounds} {label:<18} {r[s] or 0:>10.0f} IOPS")
            rounds.append(r)
        res = {"target": kind, "path": t.path, "rounds": [{str(k): v for k, v in r.items()}
                                                           for r in rounds]}
        res["without"] = statistics.median(r[None] for r in rounds if r.get(None))
        res["with"] = {}
        for s in samples:
            c, lo, hi = cost_ci(rounds, s)
            res["with"][f"{s[0]} 1 in {s[1]}"] = {
                "iops": statistics.median(r[s] for r in rounds if r.get(s)),
                "cost": c, "lo": lo, "hi": hi,
            }
        return res
    finally:
        t.remove()


def render(rep):
    lines = [f"# B8: the cost of `--stages` ({rep['date']})", "",
             f"Machine: {rep['machine']['cpu_model']}, {rep['machine']['cores']} CPUs, kernel "
             f"{rep['machine']['kernel']}; dioscope {rep['rev']}; {rep['rounds']} rounds × "
             f"{rep['seconds']} s, 4 KiB random reads, io_uring, QD 32. Cost = 1 − median IOPS "
             "with ÷ without, 95 % bootstrap interval.", "",
             "| target | without (IOPS) | backend, sample | with (IOPS) | cost | goal ≤ 5 % |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for t in rep["targets"]:
        for s, w in t["with"].items():
            c = w["cost"]
            met = "—" if t["target"] in ("loop-cache", "zram") else (
                "met" if c is not None and c <= GOAL else "not met")
            lines.append(f"| {t['target']} | {t['without']:.0f} | {s} | {w['iops']:.0f} | "
                         f"{100 * c:.1f} % [{100 * w['lo']:.1f}, {100 * w['hi']:.1f}] | {met} |")
    lines.append("")
    lines.append("Command: `" + rep["command"] + "`")
    return "\n".join(lines) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--samples", default="8,1", help="--stages_sample rates to measure")
    p.add_argument("--backends", default="raw", help="--stages backends to measure "
                   "(DIOSCOPE_STAGES_BACKEND): raw, bpftrace")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=int, default=4)
    p.add_argument("--dioscope", default=os.path.join(REPO, "target", "release", "dioscope"))
    p.add_argument("--workdir", default=REPO, help="where the files are made (its file system "
                   "is the disk measured)")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "stages-cost.md"))
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("stages_cost.py needs root (loop devices, zram, bpftrace)", file=sys.stderr)
        return 1
    samples = [(b, int(s)) for b in args.backends.split(",") if b
               for s in args.samples.split(",") if s]
    rep = {"date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
           "machine": bench.machine_info(), "rev": bench.git_rev(), "rounds": args.rounds,
           "seconds": args.seconds, "command": " ".join(["bench/stages_cost.py"] + argv),
           "targets": []}
    failed = False
    try:
        for kind in args.targets.split(","):
            res = measure(args.dioscope, kind, args, samples)
            failed |= any(v is None for r in res["rounds"] for v in r.values())
            rep["targets"].append(res)
    except bench.SetupError as e:
        print(f"stages_cost.py: {e}", file=sys.stderr)
        return 1
    text = render(rep)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(rep, f, indent=1)
    print(text)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
