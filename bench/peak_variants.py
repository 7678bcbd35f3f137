#!/usr/bin/env python3
"""Issue #31's table: t/io_uring's best io_uring configuration against dioscope's
defaults, two dioscope tunings and fio's best-tuned io_uring job, interleaved.

    sudo bench/peak_variants.py                          # 10 rounds × 4 s
    bench/peak_variants.py --rounds 3 --seconds 2 --t-batch 8 --t-ring 1

Target: a zram device filled with random data (bench.Zram), 4 KiB random reads,
QD 32, direct. Rows (each the command printed in the report):

- t/io_uring `-d32 -s8 -c8 -B1 -F1 -O1 -p0` and `-X` as --t-ring (its best grid
  point on this machine: `bench/peak.py` chooses it; --t-batch overrides);
- dioscope with no tuning option (every I/O timed into its histograms);
- dioscope `iodepth_batch_submit=8 iodepth_batch_complete_min=8`;
- dioscope `iodepth_batch_complete_min=0` (polls the completion queue);
- fio `fixedbufs registerfiles iodepth_batch_submit=8 iodepth_batch_complete_min=8`.

Per row: median IOPS and CPU per I/O (whole process, io-wq workers included:
wait4) over the rounds, and each as a ratio to t/io_uring's with a 95 % bootstrap
interval (rounds resampled as tuples). Standard library only, with bench/peak.py's
run_one. Exit 0 done, 1 setup failure, 2 some runs failed.
"""

import argparse
import datetime
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import peak  # noqa: E402


def rows(args, t_bin, dio, fio, dev):
    s = args.seconds
    common = [f"--filename={dev}", "--direct=1", "--rw=randread", "--bs=4k",
              "--ioengine=io_uring", "--iodepth=32", "--time_based", f"--runtime={s}",
              "--output-format=json"]
    t = [t_bin, "-d32", f"-s{args.t_batch}", f"-c{args.t_batch}", "-B1", "-F1", "-O1",
         "-p0", f"-X{args.t_ring}", f"-r{s}", dev]
    return [
        ("t/io_uring", f"t/io_uring -d32 -s{args.t_batch} -c{args.t_batch} -B1 -F1 -O1 -p0 "
         f"-X{args.t_ring}", t),
        ("dioscope", "dioscope defaults", [dio, "--name=v"] + common + ["--trials=1"]),
        ("dioscope", "dioscope `iodepth_batch_submit=8 iodepth_batch_complete_min=8`",
         [dio, "--name=v"] + common + ["--trials=1", "--iodepth_batch_submit=8",
                                       "--iodepth_batch_complete_min=8"]),
        ("dioscope", "dioscope `iodepth_batch_complete_min=0` (polling)",
         [dio, "--name=v"] + common + ["--trials=1", "--iodepth_batch_complete_min=0"]),
        ("fio", "fio, fixedbufs registerfiles batch 8/8",
         [fio, "--name=v"] + common + ["--fixedbufs=1", "--registerfiles=1",
                                       "--iodepth_batch_submit=8",
                                       "--iodepth_batch_complete_min=8"]),
    ]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seconds", type=int, default=4)
    p.add_argument("--t-batch", type=int, default=8)
    p.add_argument("--t-ring", type=int, default=1, choices=[0, 1])
    p.add_argument("--t-io-uring", default=os.path.join(bench.REPO, "bench", ".cache",
                                                        "t-io_uring"))
    p.add_argument("--dioscope", default=os.path.join(bench.REPO, "target", "release",
                                                      "dioscope"))
    p.add_argument("--fio", default="fio")
    p.add_argument("--zram-size", default="4G")
    args = p.parse_args(argv)
    for b in (args.t_io_uring, args.dioscope):
        if not os.access(b, os.X_OK):
            print(f"{b}: not found (bench/build-t-io_uring.sh; cargo build --release)",
                  file=sys.stderr)
            return 1
    z = bench.Zram(bench.parse_size(args.zram_size))
    failed = 0
    try:
        try:
            z.setup()
        except bench.SetupError as e:
            print(f"zram: {e}", file=sys.stderr)
            return 1
        table = rows(args, args.t_io_uring, args.dioscope, args.fio, z.dev)
        runs = [[] for _ in table]
        for r in range(args.rounds):
            order = list(range(len(table)))
            order = order[r % len(order):] + order[:r % len(order)]
            for i in order:
                kind, label, argv_ = table[i]
                rec = peak.run_one(kind, argv_, args.seconds)
                if not rec.get("ok"):
                    failed += 1
                    bench.log(f"{label}: {rec.get('error', '')[:200]}")
                    continue
                runs[i].append((r, rec))
                bench.log(f"round {r + 1}/{args.rounds} {label}: {rec['iops']:.0f} IOPS "
                          f"{rec['cpu_us_per_io']:.3f} µs CPU/IO")
        print(report(args, table, runs))
    finally:
        z.remove()
    return 2 if failed else 0


def report(args, table, runs):
    ref = {r: rec for r, rec in runs[0]}
    m = bench.machine_info()
    out = [f"# Issue #31's table ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC)", "",
           f"Machine: {m['cpu_model']}, {m['cores']} CPUs, kernel {m['kernel']}; "
           f"dioscope at {bench.git_rev()}; "
           f"zram {args.zram_size} filled with random data; 4 KiB random reads, QD 32; "
           f"{args.rounds} interleaved rounds × {args.seconds} s; medians, 95 % bootstrap "
           "intervals (rounds resampled as pairs with t/io_uring's run of the same round).",
           "", "| tool | IOPS | IOPS vs t/io_uring | CPU µs per I/O | CPU per I/O vs t/io_uring |",
           "| --- | ---: | --- | ---: | --- |"]
    for (kind, label, _), rs in zip(table, runs):
        if not rs:
            out.append(f"| {label} | – | – | – | – |")
            continue
        pairs = [(ref[r], rec) for r, rec in rs if r in ref]
        iops = statistics.median(rec["iops"] for _, rec in rs)
        cpu = statistics.median(rec["cpu_us_per_io"] for _, rec in rs)
        ri = peak.ratio_ci(pairs, "iops")
        rc = peak.ratio_ci(pairs, "cpu_us_per_io")
        f = lambda c: f"{c[0]:.2f} [{c[1]:.2f}, {c[2]:.2f}]" if c[0] else "–"  # noqa: E731
        out.append(f"| {label} | {iops:,.0f} | {f(ri)} | {cpu:.3f} | {f(rc)} |")
    out += ["", "Commands (one round):", ""]
    for _, label, argv_ in table:
        out.append(f"- {label}: `{' '.join(argv_)}`")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
