#!/usr/bin/env python3
"""dioscope vs fio: the comparisons B1-B6 of /work/shared/BENCHMARKS.md.

Both tools get the same fio-style command line, run interleaved (round r runs
fio then dioscope, the next round the other way round), and the report gives
ratios of medians. CPU per I/O is the whole process tree's user+sys time (from
os.wait4) divided by the I/Os it reports. Standard library only.

Exit status: 0 all runs done, 2 some tool runs failed (the report says which),
1 setup failure (build, fio install, zram, test file), 130 interrupted.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20
GiB = 1 << 30
FILE_SIZE = 1 * GiB          # B5 (and B2-B4, B6 when not root)
DATA_FILE = "dioscope-bench.dat"
ALL_IDS = ["B1", "B2", "B3", "B4", "B5", "B6"]

# Options fio 3.33 accepts on its command line that tune its io_uring engine (B3).
FIO_TUNING = ["--fixedbufs", "--registerfiles",
              "--iodepth_batch_submit=8", "--iodepth_batch_complete_min=8"]


class SetupError(Exception):
    pass


class Interrupted(Exception):
    pass


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- comparisons

# --engines: one comparison per engine, "E-<engine>", on a page-cached file.
ENGINE_PREFIX = "E-"
ENGINE_FILE_SIZE = 256 * MiB
ENGINE_DEPTH = 8
# Engines whose reads fail by design (fio's ftruncate acts on writes only).
# falloc's reads are fallocate(KEEP_SIZE), which dioscope refuses on a read-only job.
ENGINE_RW = {"ftruncate": "randwrite", "falloc": "randwrite"}
# Metadata engines (engines/meta.rs): one operation per file, so one pass
# over many small files in a directory beside the engine file, not a time
# limit (a delete engine runs out of names); unlink=1 leaves the directory
# empty for the next round.
ENGINE_META = {"filecreate", "filestat", "filedelete", "dircreate", "dirstat",
               "dirdelete", "filesetxattr", "filelistxattr"}
ENGINE_META_FILES = 10000
ENGINE_RW = {"ftruncate": "randwrite", "falloc": "randwrite", "e4defrag": "randwrite"}
# Engines with a mandatory option of their own (fio's and dioscope's alike).
# cpuio and exec do no I/O: their line is the cost of one cycle/poll; e4defrag
# needs the engine file on ext4 (its donor sits beside it).
ENGINE_EXTRA = {
    "cpuio": lambda target: ["--cpuload=100", "--cpuchunks=100"],
    "exec": lambda target: ["--program=/bin/true", "--std_redirect=0"],
    "e4defrag": lambda target: [f"--donorname={target}.donor"],
}


def engine_of(cid):
    return cid[len(ENGINE_PREFIX):] if cid.startswith(ENGINE_PREFIX) else None


def dioscope_engines(dio):
    """The engines the binary has, from the choices of --ioengine in its
    --help (generated from its engine list: a new engine is measured here
    with no edit to this script)."""
    r = subprocess.run([dio, "--help"], capture_output=True, text=True, timeout=60)
    for line in r.stdout.splitlines():
        m = re.match(r"\s*--ioengine=\S+\s+.*\(([^)]*)\)\s*$", line)
        if m:
            return [e.strip() for e in m.group(1).split(",") if e.strip()]
    raise SetupError("cannot find the --ioengine choices in `dioscope --help`")


def fio_engines(fio):
    """The engines this fio was built with (`fio --enghelp`)."""
    r = subprocess.run([fio, "--enghelp"], capture_output=True, text=True, timeout=60)
    return {l.strip() for l in r.stdout.splitlines()[1:] if l.strip()}


def job_options(cid, target, seconds):
    """The fio-style options shared by both tools for comparison `cid`."""
    timed = ["--time_based", f"--runtime={seconds}", "--output-format=json"]
    engine = engine_of(cid)
    if engine in ENGINE_META:
        d = os.path.join(os.path.dirname(target), f"dioscope-bench-meta.{os.getpid()}")
        os.makedirs(d, exist_ok=True)
        return [f"--name=e-{engine}", f"--directory={d}", f"--nrfiles={ENGINE_META_FILES}",
                "--filesize=4k", "--bs=4k", "--openfiles=1", "--unlink=1", "--rw=read",
                f"--ioengine={engine}", "--output-format=json"]
    if engine:
        # B1's job on a page-cached file: the device is out of the picture,
        # what differs between the tools is each one's engine path.
        return ([f"--name=e-{engine}", f"--filename={target}", "--direct=0",
                 "--invalidate=0", f"--rw={ENGINE_RW.get(engine, 'randread')}", "--bs=4k",
                 f"--size={ENGINE_FILE_SIZE}", f"--ioengine={engine}",
                 f"--iodepth={ENGINE_DEPTH}"]
                + ENGINE_EXTRA.get(engine, lambda t: [])(target) + timed)
    if cid == "B1":
        return (["--name=b1", "--ioengine=null", "--rw=randread", "--bs=4k",
                 "--size=100g"] + timed)
    if cid in ("B2", "B3", "B4", "B6"):
        engine = "libaio" if cid == "B4" else "io_uring"
        return ([f"--name={cid.lower()}", f"--filename={target}", "--direct=1",
                 "--rw=randread", "--bs=4k", f"--ioengine={engine}", "--iodepth=32"]
                + timed)
    if cid == "B5":
        return (["--name=b5", f"--filename={target}", "--direct=1", "--rw=randread",
                 "--bs=4k", "--ioengine=psync", "--iodepth=1"] + timed)
    raise ValueError(cid)


JOB_TEXT = {
    "B1": "tool overhead: ioengine=null randread 4k, latency stats on",
    "B2": "defaults: {dev} direct randread 4k io_uring qd32",
    "B3": "tuned peer: B2, fio + fixedbufs registerfiles batch 8/8",
    "B4": "libaio: {dev} direct randread 4k libaio qd32",
    "B5": "sync: 1 GiB file in cwd, direct randread 4k psync qd1",
    "B6": "consistency: B2's job, {trials} trials each",
}

GOAL_TEXT = {
    "B1": "IOPS ≥ 3×",
    "B2": "IOPS ≥ 1.5×; CPU/IO ≤ 0.6×",
    "B3": "IOPS ≥ 1.0×; CPU/IO ≤ 1.0×",
    "B4": "IOPS ≥ 1.2×",
    "B5": "IOPS within ±5 %",
    "B6": "CV of IOPS ≤ fio's",
}


def job_text(cid, **kw):
    e = engine_of(cid)
    if e in ENGINE_META:
        return f"overhead: ioengine={e}, one operation on each of {ENGINE_META_FILES} 4k files"
    if e:
        return (f"overhead: ioengine={e} page-cached {ENGINE_RW.get(e, 'randread')} 4k "
                f"qd{ENGINE_DEPTH} "
                "(sync engines run qd1)")
    return JOB_TEXT[cid].format(**kw)


def goal_text(cid):
    return "– (measured, no goal)" if engine_of(cid) else GOAL_TEXT[cid]


def goal_met(cid, iops_ratio, cpu_ratio, cv_fio=None, cv_dio=None):
    """True/False, or None when a needed number is missing."""
    r, c = iops_ratio, cpu_ratio
    if engine_of(cid):
        return None
    if cid == "B1":
        return None if r is None else r >= 3.0
    if cid == "B2":
        return None if r is None or c is None else (r >= 1.5 and c <= 0.6)
    if cid == "B3":
        return None if r is None or c is None else (r >= 1.0 and c <= 1.0)
    if cid == "B4":
        return None if r is None else r >= 1.2
    if cid == "B5":
        return None if r is None else 0.95 <= r <= 1.05
    if cid == "B6":
        return None if cv_fio is None or cv_dio is None else cv_dio <= cv_fio
    raise ValueError(cid)


# ---------------------------------------------------------------- running one tool

_current_child = None   # pid of the running tool, killed on interrupt


def kill_child():
    pid = _current_child
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def run_tool(argv, timeout):
    """Run one tool; return a dict with IOPS, I/Os, CPU seconds, or an error."""
    global _current_child
    rec = {"argv": argv, "ok": False}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            rec["error"] = f"cannot start: {e}"
            return rec
        _current_child = proc.pid
        timed_out = threading.Event()

        def on_timeout():
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, on_timeout)
        timer.start()
        try:
            # wait4 gives the rusage of this child and every descendant it reaped
            # (fio's job processes, io_uring workers), i.e. the whole process.
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        _current_child = None
        proc.returncode = os.waitstatus_to_exitcode(status)
        rec["wall_s"] = round(time.monotonic() - t0, 3)
        rec["exit"] = proc.returncode
        rec["cpu_user_s"] = ru.ru_utime
        rec["cpu_sys_s"] = ru.ru_stime
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")

    if stderr.strip():
        rec["stderr_tail"] = stderr.strip()[-2000:]
    if timed_out.is_set():
        rec["error"] = f"timed out after {timeout} s (killed)"
        return rec
    if proc.returncode != 0:
        rec["error"] = f"exit status {proc.returncode}: " + _tail(stderr or stdout)
        return rec
    try:
        start = stdout.index("{")
        doc, _ = json.JSONDecoder().raw_decode(stdout[start:])
        job = doc["jobs"][0]
        # Reads and writes (an engine comparison may write; B1-B6 only read).
        rec["iops"] = sum(float(job[d]["iops"]) for d in ("read", "write"))
        rec["total_ios"] = sum(int(job[d]["total_ios"]) for d in ("read", "write"))
        rec["job_error"] = job.get("error", 0)
        # The tool's own view of its job's CPU, kept for cross-checking only.
        for k in ("job_runtime", "usr_cpu", "sys_cpu"):
            rec["json_" + k] = job.get(k)
        rec["tool_version"] = doc.get("fio version")
    except (ValueError, KeyError, IndexError, TypeError) as e:
        rec["error"] = (f"cannot read JSON ({type(e).__name__}: {e}): "
                        + _tail(stdout or stderr))
        return rec
    if rec["job_error"]:
        rec["error"] = f"job error {rec['job_error']}: " + _tail(stderr)
        return rec
    if rec["total_ios"] <= 0:
        rec["error"] = "no I/O done (total_ios = 0)"
        return rec
    cpu = rec["cpu_user_s"] + rec["cpu_sys_s"]
    rec["cpu_us_per_io"] = cpu * 1e6 / rec["total_ios"]
    # The tool's own code: user time only (io_uring's workers and the
    # device's work are kernel time), as issue 17 compares the tools.
    rec["user_ns_per_io"] = rec["cpu_user_s"] * 1e9 / rec["total_ios"]
    rec["ok"] = True
    return rec


def _tail(text, n=400):
    text = " ".join(text.strip().split())
    return text[-n:] if text else "(no output)"


# ---------------------------------------------------------------- setup

def sh(argv, what, cwd=None):
    log(f"{what}: {shlex.join(argv)}")
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, cwd=cwd)
    if r.returncode != 0:
        raise SetupError(f"{what} failed (exit {r.returncode}): {shlex.join(argv)}")


def build_dioscope():
    sh(["cargo", "build", "--release", "--bin", "dioscope"], "building dioscope", cwd=REPO)
    path = os.path.join(REPO, "target", "release", "dioscope")
    if not os.access(path, os.X_OK):
        raise SetupError(f"build produced no binary at {path}")
    return path


def ensure_fio(fio):
    if shutil.which(fio):
        return shutil.which(fio)
    if os.geteuid() != 0:
        raise SetupError(f"{fio} not found and not root to apt-get install it")
    sh(["apt-get", "update"], "installing fio")
    env_apt = ["env", "DEBIAN_FRONTEND=noninteractive"]
    sh(env_apt + ["apt-get", "install", "-y", "fio"], "installing fio")
    path = shutil.which(fio) or shutil.which("fio")
    if not path:
        raise SetupError("fio still not found after apt-get install")
    return path


def tool_version(path):
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True,
                           timeout=10, stdin=subprocess.DEVNULL)
        return (r.stdout.strip() or r.stderr.strip()).splitlines()[0][:200]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def write_sys(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def read_sys(path):
    with open(path) as f:
        return f.read().strip()


class Zram:
    """A zram device filled with random data; `remove()` undoes everything."""

    CONTROL = "/sys/class/zram-control"

    def __init__(self, size):
        self.size = size
        self.num = None
        self.added = False
        self.dev = None
        self.made_node = False

    def setup(self):
        if os.path.exists(f"{self.CONTROL}/hot_add"):
            try:
                self.num = int(read_sys(f"{self.CONTROL}/hot_add"))
                self.added = True
            except (OSError, ValueError) as e:
                log(f"zram hot_add failed ({e}); trying zram0")
        if self.num is None:
            if not os.path.exists("/sys/block/zram0"):
                raise SetupError("no zram: neither zram-control/hot_add nor zram0")
            if read_sys("/sys/block/zram0/disksize") != "0":
                raise SetupError("zram0 is in use (disksize != 0) and hot_add failed")
            self.num = 0
        sysd = f"/sys/block/zram{self.num}"
        self.dev = f"/dev/zram{self.num}"
        log(f"zram: using {self.dev} ({'hot-added' if self.added else 'reused'})")
        try:
            write_sys(f"{sysd}/reset", 1)
            write_sys(f"{sysd}/disksize", self.size)
        except OSError as e:
            raise SetupError(f"zram{self.num}: reset/disksize failed: {e}")
        self._ensure_node(sysd)
        self._fill()
        # mm_stat: orig_data_size compr_data_size mem_used_total mem_limit
        #          mem_used_max same_pages pages_compacted huge_pages ...
        mm = read_sys(f"{sysd}/mm_stat").split()
        orig, compr, same = int(mm[0]), int(mm[1]), int(mm[5])
        self.stats = {"orig_data_size": orig, "compr_data_size": compr,
                      "same_pages": same}
        log(f"zram filled: orig {orig >> 20} MiB, compressed {compr >> 20} MiB, "
            f"same-filled pages {same}")
        if orig < self.size * 0.99 or same > 256:
            raise SetupError(f"zram{self.num} not filled with random data: {self.stats}")

    def _ensure_node(self, sysd):
        for _ in range(50):                      # udev may be creating it
            if os.path.exists(self.dev):
                return
            time.sleep(0.1)
        major, minor = map(int, read_sys(f"{sysd}/dev").split(":"))
        os.mknod(self.dev, 0o600 | stat.S_IFBLK, os.makedev(major, minor))
        self.made_node = True

    def _fill(self):
        count = self.size // MiB
        log(f"zram: filling {self.dev} with {count} MiB of /dev/urandom")
        r = subprocess.run(["dd", "if=/dev/urandom", f"of={self.dev}", "bs=1M",
                            f"count={count}", "oflag=direct", "status=none"],
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise SetupError(f"filling {self.dev} failed (dd exit {r.returncode})")

    def remove(self):
        if self.num is None:
            return
        sysd = f"/sys/block/zram{self.num}"
        for attempt in range(20):                # EBUSY while a killed tool exits
            try:
                write_sys(f"{sysd}/reset", 1)
                break
            except OSError as e:
                if attempt == 19:
                    log(f"zram{self.num}: reset failed: {e}")
                time.sleep(0.25)
        if self.made_node:
            try:
                os.unlink(self.dev)
            except OSError:
                pass
        if self.added:
            try:
                write_sys(f"{self.CONTROL}/hot_remove", self.num)
            except OSError as e:
                log(f"zram{self.num}: hot_remove failed: {e}")
        log(f"zram{self.num}: removed")
        self.num = None


def make_random_file(path, size):
    log(f"creating {path} ({size >> 20} MiB of random data)")
    try:
        with open(path, "wb") as f:
            for _ in range(size // MiB):
                f.write(os.urandom(MiB))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise SetupError(f"cannot create {path}: {e}")


# ---------------------------------------------------------------- measuring

def median_or_none(xs):
    return statistics.median(xs) if xs else None


def cv(xs):
    # No spread to speak of without two runs, nor relative to a mean of 0
    # (fio's cpuio counts no I/Os).
    if len(xs) < 2 or statistics.mean(xs) == 0:
        return None
    return statistics.stdev(xs) / statistics.mean(xs)


def summarize(cid, runs):
    s = {}
    for tool in ("fio", "dioscope"):
        ok = [r for r in runs[tool] if r["ok"]]
        s[tool] = {
            "runs": len(runs[tool]),
            "ok": len(ok),
            "iops_median": median_or_none([r["iops"] for r in ok]),
            "cpu_us_per_io_median": median_or_none([r["cpu_us_per_io"] for r in ok]),
            "user_ns_per_io_median": median_or_none([r["user_ns_per_io"] for r in ok]),
            "iops_cv": cv([r["iops"] for r in ok]),
            "errors": sorted({r["error"] for r in runs[tool] if not r["ok"]}),
        }
    f, d = s["fio"], s["dioscope"]

    def ratio(a, b):
        return b / a if a and b is not None else None

    s["iops_ratio"] = ratio(f["iops_median"], d["iops_median"])
    # A tool that reports 0 IOPS (fio's cpuio and exec count cycles, not
    # I/Os per second) has no per-I/O cost to compare.
    counted = bool(f["iops_median"]) and bool(d["iops_median"])
    s["cpu_ratio"] = (ratio(f["cpu_us_per_io_median"], d["cpu_us_per_io_median"])
                      if counted else None)
    s["user_ratio"] = (ratio(f["user_ns_per_io_median"], d["user_ns_per_io_median"])
                       if counted else None)
    complete = f["ok"] == f["runs"] and d["ok"] == d["runs"]
    s["complete"] = complete
    s["met"] = goal_met(cid, s["iops_ratio"], s["cpu_ratio"], f["iops_cv"], d["iops_cv"])
    return s


def run_comparison(cid, args, target, tools):
    """Interleaved runs of both tools; returns (runs, command lines)."""
    opts = job_options(cid, target, args.seconds)
    cmd = {
        "fio": [tools["fio"]] + opts + (FIO_TUNING if cid == "B3" else []),
        "dioscope": [tools["dioscope"]] + opts + tools["dioscope_extras"],
    }
    n = args.b6_trials if cid == "B6" else args.rounds
    word = "trial" if cid == "B6" else "round"
    timeout = args.seconds + 60
    runs = {"fio": [], "dioscope": []}
    for r in range(n):
        order = ("fio", "dioscope") if r % 2 == 0 else ("dioscope", "fio")
        for tool in order:
            rec = run_tool(cmd[tool], timeout)
            rec["round"] = r
            runs[tool].append(rec)
            if rec["ok"]:
                log(f"{cid} {word} {r + 1}/{n} {tool:8s} {rec['iops']:12.0f} IOPS "
                    f"{rec['cpu_us_per_io']:7.3f} µs CPU/IO")
            else:
                log(f"{cid} {word} {r + 1}/{n} {tool:8s} FAILED: {rec['error'][:300]}")
    return runs, {t: shlex.join(c) for t, c in cmd.items()}


# ---------------------------------------------------------------- report

def machine_info():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        mem = None
    return {"cpu_model": model, "cores": os.cpu_count(), "mem_bytes": mem,
            "kernel": platform.release(), "os": platform.platform()}


def git_rev():
    try:
        r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def fmt(x, spec):
    return "–" if x is None else format(x, spec)


def render(report):
    L = []
    m = report["machine"]
    L.append("# dioscope vs fio")
    L.append("")
    L.append(f"- date: {report['date']}")
    L.append(f"- machine: {m['cpu_model']}, {m['cores']} cores"
             + (f", {m['mem_bytes'] / GiB:.0f} GiB RAM" if m["mem_bytes"] else ""))
    L.append(f"- kernel: {m['kernel']}")
    L.append(f"- fio: `{report['tools']['fio']}` ({report['tools']['fio_version']})")
    L.append(f"- dioscope: `{report['tools']['dioscope']}` "
             f"({report['tools']['dioscope_version']}), repo at {report['git_rev'] or 'unknown'}")
    L.append(f"- target: {report['target_note']}")
    b6 = (f" (B6: {report['b6_trials']} trials each)"
          if "B6" in report["comparisons"] else "")
    L.append(f"- rounds: {report['rounds']} × {report['seconds']} s per tool, "
             f"interleaved{b6}; "
             f"load average at start {report['loadavg_start']}, "
             f"end {report.get('loadavg_end', '–')}")
    L.append(f"- reproduce: `{report['command']}`")
    L.append("")
    L.append("Ratios are dioscope ÷ fio of the medians. CPU is user+sys of the whole "
             "process per I/O. IOPS ratio > 1 and CPU ratio < 1 favour dioscope.")
    L.append("")
    L.append("| id | job | fio IOPS | dioscope IOPS | ratio | fio CPU µs/IO | "
             "dioscope CPU µs/IO | ratio | goal | result |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for cid, c in report["comparisons"].items():
        s = c["summary"]
        f, d = s["fio"], s["dioscope"]
        met = {True: "met", False: "not met", None: "no result"}[s["met"]]
        if engine_of(cid) and s["complete"]:
            met = "measured"
        if cid == "B6":
            met += (f" (CV fio {fmt(pct(f['iops_cv']), '.2f')} %, "
                    f"dioscope {fmt(pct(d['iops_cv']), '.2f')} %)")
        if not s["complete"]:
            failed = (f["runs"] - f["ok"]) + (d["runs"] - d["ok"])
            met += f" ⚠ {failed} run(s) failed"
        L.append(f"| {cid} | {c['job']} | {fmt(f['iops_median'], ',.0f')} | "
                 f"{fmt(d['iops_median'], ',.0f')} | {fmt(s['iops_ratio'], '.2f')} | "
                 f"{fmt(f['cpu_us_per_io_median'], '.3f')} | "
                 f"{fmt(d['cpu_us_per_io_median'], '.3f')} | "
                 f"{fmt(s['cpu_ratio'], '.2f')} | {goal_text(cid)} | {met} |")
    L.extend(render_user_cpu(report))
    L.append("")
    L.append("## Command lines")
    L.append("")
    for cid, c in report["comparisons"].items():
        for tool in ("fio", "dioscope"):
            L.append(f"- {cid} {tool}: `{c['commands'][tool]}`")
    errs = [(cid, tool, e) for cid, c in report["comparisons"].items()
            for tool in ("fio", "dioscope") for e in c["summary"][tool]["errors"]]
    if errs:
        L.append("")
        L.append("## Errors")
        L.append("")
        for cid, tool, e in errs:
            L.append(f"- {cid} {tool}: {e}")
    if report.get("interrupted"):
        L.append("")
        L.append("**Interrupted: the table is partial.**")
    L.append("")
    return "\n".join(L)


def pct(x):
    return None if x is None else 100 * x


# ---------------------------------------------------------------- user-space CPU per I/O (issue 17)

USER_GOAL = {"B2": 0.1}     # dioscope's user time per I/O ≤ 0.1× fio's on B2


def render_user_cpu(report):
    """The tools' own code per I/O: user time from wait4 ÷ I/Os, medians."""
    L = ["", "User-space CPU per I/O (user time from `wait4` ÷ I/Os; the tool's own "
         "code — the kernel's and the device's work is system time):", "",
         "| id | fio ns/IO | dioscope ns/IO | ratio | goal |",
         "| --- | ---: | ---: | ---: | --- |"]
    for cid, c in report["comparisons"].items():
        s = c["summary"]
        f, d = s["fio"], s["dioscope"]
        r = s.get("user_ratio")
        g = USER_GOAL.get(cid)
        goal = "–" if g is None else (f"≤ {g}×: " + ("no result" if r is None else
                                                     ("met" if r <= g else "not met")))
        L.append(f"| {cid} | {fmt(f.get('user_ns_per_io_median'), '.1f')} | "
                 f"{fmt(d.get('user_ns_per_io_median'), '.1f')} | {fmt(r, '.3f')} | {goal} |")
    return L


# ---------------------------------------------------------------- scaling (issue 17)

def scaling_options(threads, seconds):
    """B1's job (null engine) on `threads` threads, reported as one group."""
    return ["--name=scale", "--ioengine=null", "--rw=randread", "--bs=4k", "--size=100g",
            "--time_based", f"--runtime={seconds}", f"--numjobs={threads}",
            "--group_reporting", "--output-format=json"]


def run_scaling(args, tools):
    """Null engine from 1 to --max-threads threads, both tools interleaved."""
    cpus = os.cpu_count() or 1
    top = args.max_threads or 2 * cpus
    rows = []
    for n in range(1, top + 1):
        opts = scaling_options(n, args.seconds)
        cmd = {"fio": [tools["fio"]] + opts + ["--thread"],
               "dioscope": [tools["dioscope"]] + opts + tools["dioscope_extras"]}
        runs = {"fio": [], "dioscope": []}
        for r in range(args.rounds):
            order = ("fio", "dioscope") if (r + n) % 2 == 0 else ("dioscope", "fio")
            for tool in order:
                rec = run_tool(cmd[tool], args.seconds + 60)
                rec["round"] = r
                runs[tool].append(rec)
                if rec["ok"]:
                    log(f"scaling {n} thread(s) round {r + 1}/{args.rounds} {tool:8s} "
                        f"{rec['iops']:12.0f} IOPS {rec['cpu_us_per_io']:7.3f} µs CPU/IO")
                else:
                    log(f"scaling {n} thread(s) {tool} FAILED: {rec['error'][:300]}")
        row = {"threads": n, "commands": {t: shlex.join(c) for t, c in cmd.items()},
               "runs": runs}
        for tool in ("fio", "dioscope"):
            ok = [r for r in runs[tool] if r["ok"]]
            row[tool] = {"iops_median": median_or_none([r["iops"] for r in ok]),
                         "cpu_us_per_io_median":
                             median_or_none([r["cpu_us_per_io"] for r in ok]),
                         "ok": len(ok), "runs": len(runs[tool])}
        rows.append(row)
    # Scaling against one thread: linear is min(n, CPUs) × the 1-thread IOPS
    # (past the CPUs, threads share them).
    for tool in ("fio", "dioscope"):
        one = rows[0][tool]["iops_median"]
        for row in rows:
            x = row[tool]["iops_median"]
            n = row["threads"]
            row[tool]["per_thread"] = None if x is None else x / n
            row[tool]["speedup"] = None if x is None or not one else x / one
            row[tool]["of_linear"] = (None if x is None or not one
                                      else x / (one * min(n, cpus)))
    return {"cpus": cpus, "rows": rows}


def render_scaling(report):
    sc = report["scaling"]
    m = report["machine"]
    L = ["# Scaling: null engine, 1 to %d threads" % len(sc["rows"]), "",
         f"- date: {report['date']}",
         f"- machine: {m['cpu_model']}, {m['cores']} cores; kernel {m['kernel']}",
         f"- fio: `{report['tools']['fio']}` ({report['tools']['fio_version']}), "
         f"with `--thread`; dioscope: `{report['tools']['dioscope']}` "
         f"({report['tools']['dioscope_version']}), repo at {report['git_rev'] or 'unknown'}",
         f"- {report['rounds']} rounds × {report['seconds']} s per tool and thread count, "
         f"interleaved; medians; load average at start {report['loadavg_start']}, "
         f"end {report.get('loadavg_end', '–')}",
         f"- reproduce: `{report['command']}`", "",
         "of linear = IOPS ÷ (1-thread IOPS × min(threads, CPUs)); goal: dioscope ≥ 0.95 "
         "and ≥ fio's up to the number of CPUs.", "",
         "| threads | fio IOPS | fio per thread | fio of linear | dioscope IOPS | "
         "dioscope per thread | dioscope of linear | fio CPU µs/IO | dioscope CPU µs/IO |",
         "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in sc["rows"]:
        f, d = row["fio"], row["dioscope"]
        L.append(f"| {row['threads']} | {fmt(f['iops_median'], ',.0f')} | "
                 f"{fmt(f['per_thread'], ',.0f')} | {fmt(f['of_linear'], '.2f')} | "
                 f"{fmt(d['iops_median'], ',.0f')} | {fmt(d['per_thread'], ',.0f')} | "
                 f"{fmt(d['of_linear'], '.2f')} | {fmt(f['cpu_us_per_io_median'], '.3f')} | "
                 f"{fmt(d['cpu_us_per_io_median'], '.3f')} |")
    within = [r for r in sc["rows"] if r["threads"] <= sc["cpus"]]
    dl = [r["dioscope"]["of_linear"] for r in within]
    fl = [r["fio"]["of_linear"] for r in within]
    if within and None not in dl and None not in fl:
        met = min(dl) >= 0.95 and all(d >= f for d, f in zip(dl, fl))
        L += ["", f"Up to {sc['cpus']} threads: dioscope at {min(dl):.2f} of linear or better, "
              f"fio at {min(fl):.2f}: goal {'met' if met else 'not met'}."]
    L.append("")
    return "\n".join(L)


def main_scaling(args, argv):
    status = 0
    report = None
    try:
        fio = ensure_fio(args.fio)
        dio = args.dioscope or build_dioscope()
        tools = {"fio": fio, "dioscope": dio,
                 "dioscope_extras": [] if args.no_dioscope_extras else ["--trials=1"]}
        report = {
            "date": datetime.datetime.now(datetime.timezone.utc)
                    .strftime("%Y-%m-%d %H:%M:%S UTC"),
            "command": shlex.join(["bench/run.sh"] + argv),
            "machine": machine_info(), "git_rev": git_rev(),
            "tools": {"fio": fio, "fio_version": tool_version(fio),
                      "dioscope": dio, "dioscope_version": tool_version(dio)},
            "rounds": args.rounds, "seconds": args.seconds,
            "loadavg_start": "%.2f %.2f %.2f" % os.getloadavg(),
        }
        report["scaling"] = run_scaling(args, tools)
        report["loadavg_end"] = "%.2f %.2f %.2f" % os.getloadavg()
        rows = report["scaling"]["rows"]
        if any(r[t]["ok"] < r[t]["runs"] for r in rows for t in ("fio", "dioscope")):
            status = 2
        write_report(report, args.out, render_scaling)
    except SetupError as e:
        log(f"setup failed: {e}")
        status = 1
    except Interrupted as e:
        log(f"interrupted ({e})")
        kill_child()
        status = 130
    finally:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        kill_child()
    return status


def write_report(report, out, render_fn):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    md = render_fn(report)
    with open(out, "w") as f:
        f.write(md)
    base = out[:-3] if out.endswith(".md") else out
    with open(base + ".json", "w") as f:
        json.dump(report, f, indent=1)
    print(md)
    log(f"wrote {out} and {base}.json")


# ---------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description="Benchmark dioscope against fio (B1-B6).")
    p.add_argument("--rounds", type=int, default=5, help="rounds per comparison (5)")
    p.add_argument("--seconds", type=int, default=5, help="runtime of each run (5)")
    p.add_argument("--only", default=None, help="e.g. B1,B2 (default: all, or none with --engines)")
    p.add_argument("--engines", nargs="?", const="all", default=None,
                   help="also measure each engine's overhead (E-<engine>: B1's job on a "
                        "page-cached file, fio vs dioscope); a list such as psync,mmap, "
                        "or all the engines both tools have")
    p.add_argument("--dioscope", help="binary to test (default: cargo build --release)")
    p.add_argument("--fio", default="fio", help="fio binary (default: fio on PATH)")
    p.add_argument("--no-dioscope-extras", action="store_true",
                   help="don't pass --trials=1 to the dioscope binary (e.g. it is fio)")
    p.add_argument("--b6-trials", type=int, default=10, help="trials per tool in B6 (10)")
    p.add_argument("--zram-size", default="4G", help="zram disksize (4G)")
    p.add_argument("--out", default=None,
                   help="Markdown report; raw numbers go next to it as .json "
                        "(default bench/results/latest.md, with --scaling scaling.md)")
    p.add_argument("--scaling", action="store_true",
                   help="instead of B1-B6: the null engine on 1 to --max-threads threads")
    p.add_argument("--max-threads", type=int, default=0,
                   help="with --scaling: up to this many threads (default 2 × CPUs)")
    a = p.parse_args(argv)
    if a.only is None:
        a.only = "" if a.engines else ",".join(ALL_IDS)
    a.only = [x.strip().upper() for x in a.only.split(",") if x.strip()]
    bad = [x for x in a.only if x not in ALL_IDS]
    if bad:
        p.error(f"unknown comparison(s): {', '.join(bad)}")
    if a.out is None:
        a.out = os.path.join(REPO, "bench", "results",
                             "scaling.md" if a.scaling else "latest.md")
    if a.max_threads < 0:
        p.error("--max-threads must be ≥ 1")
    if a.rounds < 1 or a.seconds < 1 or a.b6_trials < 2:
        p.error("--rounds and --seconds must be ≥ 1, --b6-trials ≥ 2")
    return a


def parse_size(text):
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(t[:-1]) * mult[t[-1]] if t[-1] in mult else int(t)


def write_outputs(report, out):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    md = render(report)
    with open(out, "w") as f:
        f.write(md)
    base = out[:-3] if out.endswith(".md") else out
    with open(base + ".json", "w") as f:
        json.dump(report, f, indent=1)
    print(md)
    log(f"wrote {out} and {base}.json")


def on_signal(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def main(argv):
    args = parse_args(argv)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)
    if args.scaling:
        return main_scaling(args, argv)

    root = os.geteuid() == 0
    zram = None
    data_file = None
    engine_file = None
    report = None
    status = 0
    try:
        fio = ensure_fio(args.fio)
        dio = args.dioscope or build_dioscope()
        if not shutil.which(dio) and not os.access(dio, os.X_OK):
            raise SetupError(f"dioscope binary not executable: {dio}")
        tools = {"fio": fio, "dioscope": dio,
                 "dioscope_extras": [] if args.no_dioscope_extras else ["--trials=1"]}

        engine_ids = []
        engine_file = None
        if args.engines:
            have = dioscope_engines(dio)
            fio_has = fio_engines(fio)
            wanted = have if args.engines == "all" else [
                e.strip() for e in args.engines.split(",") if e.strip()]
            for e in wanted:
                if e not in have:
                    raise SetupError(f"--engines: dioscope has no engine {e} "
                                     f"(it has {', '.join(have)})")
                if fio_has and e not in fio_has:
                    log(f"--engines: skipping {e}: this fio was built without it")
                    continue
                engine_ids.append(ENGINE_PREFIX + e)
            # tmpfs when there is one: cached by construction, no device below.
            shm = "/dev/shm"
            base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else os.getcwd()
            engine_file = os.path.join(base, f"dioscope-bench-engines.{os.getpid()}.dat")
            make_random_file(engine_file, ENGINE_FILE_SIZE)
            with open(engine_file, "rb") as f:
                while f.read(8 * MiB):
                    pass

        need_dev = any(c in args.only for c in ("B2", "B3", "B4", "B6"))
        need_file = "B5" in args.only or (need_dev and not root)
        if need_file:
            data_file = os.path.abspath(DATA_FILE)
            make_random_file(data_file, FILE_SIZE)
        if need_dev and root:
            zram = Zram(parse_size(args.zram_size))
            zram.setup()
            dev_target = zram.dev
            target_note = (f"B2–B4, B6: {zram.dev} ({args.zram_size} zram, filled "
                           f"from /dev/urandom); B5: {data_file or '–'}")
        elif need_dev:
            dev_target = data_file
            target_note = (f"not root, so no zram: B2–B4, B6 use the 1 GiB file "
                           f"{data_file} with direct=1; B5 too")
        else:
            dev_target = None
            target_note = f"B5: {data_file}" if data_file else "B1 only (null engine)"

        report = {
            "date": datetime.datetime.now(datetime.timezone.utc)
                    .strftime("%Y-%m-%d %H:%M:%S UTC"),
            "command": shlex.join(["bench/run.sh"] + argv),
            "machine": machine_info(),
            "git_rev": git_rev(),
            "tools": {"fio": fio, "fio_version": tool_version(fio),
                      "dioscope": dio, "dioscope_version": tool_version(dio),
                      "dioscope_extras": tools["dioscope_extras"]},
            "root": root,
            "target_note": target_note,
            "zram": getattr(zram, "stats", None),
            "rounds": args.rounds, "seconds": args.seconds,
            "b6_trials": args.b6_trials,
            "loadavg_start": "%.2f %.2f %.2f" % os.getloadavg(),
            "comparisons": {},
        }

        if engine_file:
            report["target_note"] += (f"; engines: {engine_file} "
                                      f"({ENGINE_FILE_SIZE // MiB} MiB, page-cached)")
        for cid in [c for c in ALL_IDS if c in args.only] + engine_ids:
            target = (data_file if cid == "B5"
                      else engine_file if engine_of(cid) else dev_target)
            n = f"{args.b6_trials} trials" if cid == "B6" else f"{args.rounds} rounds"
            log(f"{cid}: {n} × {args.seconds} s per tool")
            runs, commands = run_comparison(cid, args, target, tools)
            dev_name = os.path.basename(dev_target) if dev_target else ""
            report["comparisons"][cid] = {
                "job": job_text(cid, dev=dev_name, trials=args.b6_trials),
                "commands": commands,
                "runs": runs,
                "summary": summarize(cid, runs),
            }
            if not report["comparisons"][cid]["summary"]["complete"]:
                status = 2
        report["loadavg_end"] = "%.2f %.2f %.2f" % os.getloadavg()
        write_outputs(report, args.out)
    except SetupError as e:
        log(f"setup failed: {e}")
        status = 1
    except Interrupted as e:
        log(f"interrupted ({e}); cleaning up")
        kill_child()
        if report and report["comparisons"]:
            report["interrupted"] = True
            write_outputs(report, args.out)
        status = 130
    finally:
        # No more interruptions while undoing the setup.
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        kill_child()
        if zram:
            zram.remove()
        for f in (data_file, engine_file):
            if f and os.path.exists(f):
                os.unlink(f)
                log(f"removed {f}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
