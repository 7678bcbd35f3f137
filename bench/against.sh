#!/usr/bin/env bash
# Old dioscope against new, in one interleaved run: builds REV in its own worktree and puts
# it in fio's seat of bench/run.sh (with --trials=1, as the dioscope seat gets).
# Usage: bench/against.sh REV [bench/run.sh options, e.g. --only B1,B2,B4 --rounds 5]
# In the report, "fio" is REV and "dioscope" is the working tree's release build.
set -euo pipefail
rev=${1:?usage: bench/against.sh REV [bench/run.sh options]}; shift
root=$(git rev-parse --show-toplevel)
sha=$(git -C "$root" rev-parse --short "$rev")
wt="$root/target/against/$sha"
if [ ! -d "$wt" ]; then
  git -C "$root" worktree add --detach "$wt" "$sha" >/dev/null
fi
(cd "$wt" && cargo build --release --quiet)
(cd "$root" && cargo build --release --quiet)
wrap="$wt/seat.sh"
printf '#!/bin/sh\nexec %q "$@" --trials=1\n' "$wt/target/release/dioscope" > "$wrap"
chmod +x "$wrap"
exec "$root/bench/run.sh" --fio "$wrap" --dioscope "$root/target/release/dioscope" \
  --out "$root/bench/results/against-$sha.md" "$@"
