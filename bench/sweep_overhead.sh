#!/bin/sh
# Sweep overhead: the share of a sweep's wall time spent between cells
# (start-up, target opening and layout, environment, diagnosis, writing the
# sweep's JSON) rather than in the cells' ramps and measured trials.
#
#   bench/sweep_overhead.sh [DIOSCOPE] [RUNTIME] [TRIALS]
#
# DIOSCOPE defaults to target/release/dioscope (built if missing), RUNTIME
# to 1s per trial, TRIALS to 3. Two grids, 8 cells each:
#   1. the null engine (no I/O: everything measured is dioscope's own cost);
#   2. psync random reads on a 256 MiB file in the working directory, the
#      file laid out by the first cell and reused by the others.
# dioscope itself measures the split (wall_s, overhead_s, overhead_pct in
# the sweep's JSON: wall time minus, per cell, the trials' measured time
# and ramps); this script prints it. The goal (issue "Experiments"): at
# most 5 % of the wall time.
set -eu
BIN=${1:-target/release/dioscope}
RT=${2:-1s}
TRIALS=${3:-3}
if [ ! -x "$BIN" ]; then
    cargo build --release
fi
DIR=$(mktemp -d "${TMPDIR:-/tmp}/dioscope-sweep-bench.XXXXXX")
FILE=$(pwd)/dioscope-sweep-bench.dat
trap 'rm -rf "$DIR"; rm -f "$FILE"' EXIT INT TERM

report() {
    python3 - "$1" "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[2]))
cells = s["cells"]
per_cell = s["overhead_s"] / max(len(cells), 1)
print(f"{sys.argv[1]:<28} cells {len(cells):2}  wall {s['wall_s']:7.2f} s  "
      f"between cells {s['overhead_s']:6.2f} s = {s['overhead_pct']:4.1f} %  "
      f"({per_cell*1000:.0f} ms per cell)")
PY
}

"$BIN" sweep --name=null --ioengine=null --size=64m --runtime="$RT" --time_based \
    --trials="$TRIALS" --vary 'bs=4k|64k' --vary 'iodepth=1|8' --vary 'rw=randread|randwrite' \
    --output="$DIR/null.json" --eta=never >/dev/null
report "null engine" "$DIR/null.json"

"$BIN" sweep --name=file --filename="$FILE" --size=256m --direct=1 --ioengine=psync \
    --runtime="$RT" --time_based --trials="$TRIALS" \
    --vary 'bs=4k|64k' --vary 'rw=randread|read' --vary 'numjobs=1|2' \
    --output="$DIR/file.json" --eta=never >/dev/null
report "psync, file (laid out once)" "$DIR/file.json"
