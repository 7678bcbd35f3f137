#!/usr/bin/env bash
# The test command of the README: installs what the tests need (as root),
# then runs every test of the workspace. Tests that need root, loop devices
# or a tool probe for it; in CI (CI set) a missing prerequisite fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The mpi feature (multi-rank runs, tests/mpi) needs OpenMPI, installed above.
exec cargo test --release --workspace --features dioscope/mpi "$@"
