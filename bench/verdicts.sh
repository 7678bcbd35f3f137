#!/usr/bin/env bash
# compare --run on real devices: A/A (identical sides) and a planted −30 %,
# with and without a CPU hog (docs/STATISTICS.md, "On real devices").
#
#   bench/verdicts.sh [--runs N] [--max-trials M] [--sets LIST] [--out DIR]
#
# Sets: zram, zram-hog, ext4, ext4-hog (A/A; the hog runs on both sides),
# planted, planted-hog (B held by rate_iops at 70 % of A's free median; the
# hog runs during B's trials only, started and stopped by B's
# exec_prerun/exec_postrun). Every run is `compare --run a.fio b.fio` with
# 1 s trials (runtime=1) and at most M trials a side; its exit code, its
# verdict and the environment findings that differed are one line of
# DIR/runs.tsv, and the summary per set is printed at the end.
#
# Needs root (a zram device of its own, removed at exit) and a release build
# (target/release/dioscope). The ext4 sets use a 64 MiB file in DIR, on
# whatever file system DIR is on (say which in the notes). Run it on a quiet
# machine: a build next to it is a CPU hog on some trials and not others.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=20
MAX=8
SETS="zram zram-hog ext4 ext4-hog planted planted-hog"
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=$2; shift 2 ;;
        --runs=*) RUNS=${1#*=}; shift ;;
        --max-trials) MAX=$2; shift 2 ;;
        --max-trials=*) MAX=${1#*=}; shift ;;
        --sets) SETS=$2; shift 2 ;;
        --sets=*) SETS=${1#*=}; shift ;;
        --out) OUT=$2; shift 2 ;;
        --out=*) OUT=${1#*=}; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "verdicts.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
BIN=$PWD/target/release/dioscope
[ -x "$BIN" ] || { echo "verdicts.sh: build first: cargo build --release" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "verdicts.sh: needs root (zram)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /var/tmp/dioscope-verdicts.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

ZID=""
HOGS=()
cleanup() {
    pkill -TERM -P $$ 2>/dev/null && sleep 1
    for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -f "$OUT/hog.pid" ] && kill "$(cat "$OUT/hog.pid")" 2>/dev/null || true
    if [ -n "$ZID" ]; then
        echo 1 > "/sys/block/zram$ZID/reset" || true
        echo "$ZID" > /sys/class/zram-control/hot_remove || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ZID=$(cat /sys/class/zram-control/hot_add)
echo 64M > "/sys/block/zram$ZID/disksize"
head -c 64M /dev/urandom > "/dev/zram$ZID"
head -c 64M /dev/urandom > "$OUT/data.bin"
sync

# A busy loop on one CPU, started and stopped from B's job (the planted-hog set).
cat > "$OUT/hog-start.sh" <<EOF
#!/bin/sh
sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
echo \$! > "$OUT/hog.pid"
EOF
cat > "$OUT/hog-stop.sh" <<EOF
#!/bin/sh
kill "\$(cat "$OUT/hog.pid")" 2>/dev/null
rm -f "$OUT/hog.pid"
EOF
chmod +x "$OUT/hog-start.sh" "$OUT/hog-stop.sh"

job() { # file target extra
    printf '[rr]\nfilename=%s\nrw=randread\nbs=4k\nioengine=psync\ndirect=1\nsize=64m\nruntime=1\ntime_based\n%s' \
        "$2" "$3" > "$OUT/$1"
}

hog_on() { sh -c 'while :; do :; done' & HOGS+=($!); }
hog_off() { for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null || true; done; HOGS=(); }

one() { # set run
    local set=$1 i=$2 code
    set +e
    "$BIN" compare --run a.fio b.fio --max-trials="$MAX" $EXTRA \
        --output-format=json > "$OUT/$set.$i.json" 2> "$OUT/$set.$i.err"
    code=$?
    set -e
    python3 - "$OUT/$set.$i.json" "$set" "$i" "$code" >> "$OUT/runs.tsv" <<'PY'
import json, sys
path, s, i, code = sys.argv[1:]
try:
    v = json.load(open(path))
    m = v["jobs"][0]["metrics"][0]
    env = [f"{e['kind']}{'*' if e['differs'] else ''}({e['a_trials']}/{e['b_trials']})" for e in v.get("environment", [])]
    print(f"{s}\t{i}\t{code}\t{m.get('verdict')}\t{v['outcome']}\t{v['a']['trials']}\t{','.join(env)}")
except Exception as e:
    print(f"{s}\t{i}\t{code}\tunreadable\t\t\t{e}")
PY
    tail -1 "$OUT/runs.tsv"
}

free_rate() { # target: 70 % of A's median IOPS over 3 free trials
    job a.fio "$1" ""
    "$BIN" a.fio --trials=3 --output-format=json | python3 -c '
import json, sys
v = json.load(sys.stdin)
xs = sorted(t["iops"] for t in v["dioscope"]["jobs"][0]["trials"])
print(round(0.7 * xs[1]))'
}

cd "$OUT"
: > "$OUT/runs.tsv"
echo "out: $OUT  runs: $RUNS  max trials: $MAX  started $(date -u +%FT%TZ)"
for set in $SETS; do
    EXTRA=""
    case $set in
        zram|zram-hog) job a.fio "/dev/zram$ZID" ""; job b.fio "/dev/zram$ZID" "" ;;
        ext4|ext4-hog) job a.fio "$OUT/data.bin" ""; job b.fio "$OUT/data.bin" "" ;;
        planted|planted-hog)
            rate=$(free_rate "/dev/zram$ZID")
            extra="rate_iops=$rate"$'\n'
            if [ "$set" = planted-hog ]; then
                extra+="exec_prerun=$OUT/hog-start.sh"$'\n'"exec_postrun=$OUT/hog-stop.sh"$'\n'
            fi
            job b.fio "/dev/zram$ZID" "$extra"
            EXTRA="--expect-different=rate_iops,exec_prerun,exec_postrun"
            echo "$set: B at rate_iops=$rate" ;;
        *) echo "verdicts.sh: unknown set '$set'" >&2; exit 2 ;;
    esac
    case $set in *-hog) [ "$set" = planted-hog ] || hog_on ;; esac
    for i in $(seq 1 "$RUNS"); do one "$set" "$i"; done
    hog_off
done

echo
echo "finished $(date -u +%FT%TZ)"
python3 - "$OUT/runs.tsv" <<'PY'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = collections.OrderedDict()
for r in rows:
    by.setdefault(r[0], []).append(r)
print(f"{'set':<12} {'runs':>4} {'exit 0':>6} {'exit 1':>6} {'exit 4':>6} {'other':>5} {'worse':>5} {'trials':>6}  environment findings in runs (* differed)")
for s, rs in by.items():
    c = collections.Counter(r[2] for r in rs)
    worse = sum(r[3] == "worse" for r in rs)
    tr = [float(r[5]) for r in rs if r[5]]
    env = collections.Counter(e.split("(")[0] for r in rs for e in r[6].split(",") if e and r[3] != "unreadable")
    other = len(rs) - c["0"] - c["1"] - c["4"]
    print(f"{s:<12} {len(rs):>4} {c['0']:>6} {c['1']:>6} {c['4']:>6} {other:>5} {worse:>5} {sum(tr)/max(len(tr),1):>6.1f}  {dict(env)}")
PY
