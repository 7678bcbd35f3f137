#!/bin/sh
# Run each fuzz target for SECONDS (default 300), one after the other, one
# process at a time. New inputs go to corpus/<target>; hand-written seeds are
# read from seeds/<target>. libFuzzer's output is kept in logs/<target>.log.
#
# cargo-fuzz needs -Z flags; on a stable toolchain RUSTC_BOOTSTRAP=1 lets
# rustc accept them (set it to 0 to refuse, or use `cargo +nightly`).
set -eu
secs=${1:-300}
shift 2>/dev/null || true
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP="${RUSTC_BOOTSTRAP:-1}"
mkdir -p logs
for t in ${TARGETS:-job_file cli_args units}; do
    mkdir -p "corpus/$t"
    echo "== $t for ${secs}s"
    cargo fuzz run "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -dict=options.dict -max_len=4096 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@" \
        2>&1 | tee "logs/$t.log" | grep -E '^#[0-9]+ +(DONE|INITED)|^(stat|SUMMARY|Done)|panicked|ERROR' || true
done
