#!/usr/bin/env bash
# The test command of the README: installs what the tests need (as root),
# then runs every test of the workspace. Tests that need root, loop devices
# or a tool probe for it; in CI (CI set) a missing prerequisite fails.
#
#   scripts/test.sh            everything (what .ci/run runs)
#   scripts/test.sh --quick    the quick local loop: unit tests and the main
#                              integration binary, without the heavy test
#                              binaries (race tests, browsers, MPI ranks,
#                              recipes, job-file corpora), and no installs
# Extra arguments go to cargo test (e.g. a test-name filter after --).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then
    shift
    exec cargo test --release --workspace --lib --bins --test integration "$@"
fi
scripts/install-deps.sh
# tests/mpi also launches a binary built *without* MPI under mpirun (it must
# refuse a world of 2): built first, kept beside the test's own.
cargo build --release --bin dioscope
cp target/release/dioscope target/release/dioscope-nompi
# bench/peak.py's own checks: its reading of t/io_uring's output and, by
# simulation, the coverage of the intervals it prints (a few seconds).
python3 bench/peak.py --self-test
# The mpi feature (multi-rank runs, tests/mpi) needs OpenMPI, installed above.
exec cargo test --release --workspace --features dioscope/mpi "$@"
