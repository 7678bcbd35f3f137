#!/usr/bin/env python3
"""User-space CPU per I/O of two or more builds (and fio), interleaved.

    bench/ab_user.py --rounds 5 main=/tmp/dioscope-main branch=target/release/dioscope \
        fio=/usr/bin/fio -- --name=b2 --filename=/dev/zramN --direct=1 --rw=randread --bs=4k \
        --ioengine=io_uring --iodepth=32 --time_based --runtime=5

Each round runs every tool once, in an order that rotates from round to round;
per run: user time from `wait4` ÷ the I/Os of the run (`jobs[0]` read + write
`total_ios`), and system time the same way. A tool named `fio` (its path ends in
`fio`) gets the job alone; the others also get `--trials=1`. Prints every run
and the medians; ratios are against the first tool. Standard library only.
For A/B of code changes on a shared machine, where only runs taken side by side
compare (docs/PERFORMANCE.md, "Round four").
"""
import json, os, statistics, subprocess, sys


def main(argv):
    rounds = 5
    if "--" not in argv:
        sys.exit(__doc__)
    k = argv.index("--")
    tools, job = argv[:k], argv[k + 1:]
    if tools[:1] == ["--rounds"]:
        rounds, tools = int(tools[1]), tools[2:]
    tools = [t.split("=", 1) for t in tools]
    res = {name: [] for name, _ in tools}
    for r in range(rounds):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for name, path in order:
            argv = [path] + job + ["--output-format=json"]
            if not os.path.basename(path).endswith("fio"):
                argv.append("--trials=1")
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            # wait4 on this child alone: its rusage covers every thread
            # (io-wq workers included) and nothing else.
            out = p.stdout.read()
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                print(f"round {r + 1} {name}: exit {p.returncode}", file=sys.stderr)
                continue
            j = json.loads(out[out.index(b"{"):])["jobs"][0]
            ios = sum(j[d]["total_ios"] for d in ("read", "write") if d in j)
            res[name].append((ru.ru_utime * 1e9 / ios, ru.ru_stime * 1e9 / ios, ios))
            u, s_, _ = res[name][-1]
            print(f"round {r + 1} {name:10s} {ios:>10,} I/Os  user {u:8.1f} ns/IO  sys {s_:8.1f} ns/IO", flush=True)
    print(f"\nmedians of {rounds} rounds (load {os.getloadavg()[0]:.2f} at the end):")
    base = None
    for name, _ in tools:
        if not res[name]:
            continue
        u = statistics.median(x[0] for x in res[name])
        s_ = statistics.median(x[1] for x in res[name])
        io = statistics.median(x[2] for x in res[name])
        base = base or u
        print(f"  {name:10s} user {u:8.1f} ns/IO ({u / base:.3f}× the first)  sys {s_:8.1f} ns/IO  {io:,.0f} I/Os")


if __name__ == "__main__":
    main(sys.argv[1:])
