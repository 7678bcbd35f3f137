#!/usr/bin/env bash
# dioscope vs fio, comparisons B1-B6 of BENCHMARKS.md. See bench/README.md.
# Usage: bench/run.sh [--rounds N] [--seconds S] [--only B1,B2] [--dioscope PATH]
#                     [--out FILE] [--no-dioscope-extras] [--fio PATH] [--b6-trials N]
set -euo pipefail
exec python3 "$(dirname "$(readlink -f "$0")")/bench.py" "$@"
