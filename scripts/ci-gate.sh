#!/usr/bin/env bash
# The merge gate of docs/CI.md: compares a change's saved result with the
# base's and turns compare's exit code into a CI decision.
#
#   scripts/ci-gate.sh BASE.json NEW.json [compare flags, e.g. --gate=iops,lat_p99]
#
# Exit 0: no significant regression (pass). 1: a significant regression
# beyond --threshold (fail the merge). 4: a significant change measured
# while the two sides' environments differed (CPU contention, other I/O on
# the device, page cache ...): not a verdict on the change; rerun both on a
# quiet machine. 2: the results cannot be compared (different jobs or
# options; the message says which). DIOSCOPE names the binary (default:
# dioscope on PATH).
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: scripts/ci-gate.sh BASE.json NEW.json [compare flags]" >&2
    exit 2
fi
dioscope=${DIOSCOPE:-dioscope}
base=$1
new=$2
shift 2
"$dioscope" compare "$base" "$new" "$@"
code=$?
case $code in
    0) echo "ci-gate: PASS: no significant regression of $new against $base" ;;
    1) echo "ci-gate: FAIL: a significant regression of $new against $base (the table above)" ;;
    4) echo "ci-gate: RERUN: the change is confounded with a difference in the environment (the table above names it); this is a measurement to repeat on a quiet machine, not a pass" ;;
    2) echo "ci-gate: ERROR: $base and $new cannot be compared (above)" ;;
    *) echo "ci-gate: ERROR: dioscope compare exited $code" ;;
esac
exit $code
