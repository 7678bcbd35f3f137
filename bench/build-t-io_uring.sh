#!/bin/bash
# Build fio's t/io_uring (Jens Axboe's peak-IOPS tool) from fio's source, for
# bench/peak.py. Nothing of fio is kept in this repository: the source is
# fetched or unpacked into a temporary directory and only the binary is kept,
# at bench/.cache/t-io_uring (git-ignored).
#
#   bench/build-t-io_uring.sh                 # Debian's fio source: the tree
#                                             # scripts/install-deps.sh unpacked, else apt-get source fio
#   bench/build-t-io_uring.sh /path/to/fio    # a fio tree, or a bare git repository of it
#
# Prints the binary's path on its last line. Needs gcc, make and libaio's
# headers (installed here with apt-get when missing and root: without them
# t/io_uring's libaio mode does nothing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/.cache/t-io_uring"
src="${1:-}"
work=$(mktemp -d /tmp/dioscope-t-io_uring.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ ! -f /usr/include/libaio.h ] && [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libaio-dev >/dev/null
fi
[ -f /usr/include/libaio.h ] || echo "build-t-io_uring: no libaio.h (apt-get install libaio-dev): t/io_uring's -a1 mode will do no I/O" >&2
if [ -z "$src" ]; then
    src=$(ls -d /opt/dioscope-tests/fio-src/fio-*/ 2>/dev/null | head -1)
fi
if [ -z "$src" ]; then
    (cd "$work" && apt-get source -qq fio >/dev/null 2>&1) || {
        echo "build-t-io_uring: 'apt-get source fio' failed: enable deb-src (scripts/install-deps.sh does) or pass a fio tree" >&2
        exit 1
    }
    tree=$(find "$work" -maxdepth 1 -mindepth 1 -type d -name 'fio-*' | head -1)
elif [ -f "$src/t/io_uring.c" ]; then
    tree="$work/fio"
    cp -a "$src" "$tree"
elif git --git-dir="$src" rev-parse HEAD >/dev/null 2>&1; then
    tree="$work/fio"
    mkdir "$tree"
    git --git-dir="$src" archive HEAD | tar -x -C "$tree"
else
    echo "build-t-io_uring: $src is neither a fio tree (no t/io_uring.c) nor a git repository of one" >&2
    exit 1
fi
[ -f "$tree/t/io_uring.c" ] || { echo "build-t-io_uring: no t/io_uring.c under $tree" >&2; exit 1; }
(cd "$tree" && ./configure >"$work/configure.log" 2>&1 && make -j"$(nproc)" t/io_uring >"$work/make.log" 2>&1) || {
    echo "build-t-io_uring: the build failed; last lines:" >&2
    tail -20 "$work/configure.log" "$work/make.log" >&2 || true
    exit 1
}
mkdir -p "$(dirname "$out")"
cp "$tree/t/io_uring" "$out"
version=$(cd "$tree" && { git describe --tags 2>/dev/null || sed "s/^FIO_VERSION = //" FIO-VERSION-FILE 2>/dev/null || basename "$tree"; })
echo "$version" > "$out.version"
echo "$out"
