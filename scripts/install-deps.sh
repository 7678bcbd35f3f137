#!/usr/bin/env bash
# Installs what dioscope's tests and benchmarks need on a fresh Debian machine.
# Idempotent: does nothing when everything is present. Needs root to install.
set -euo pipefail

need=()
command -v fio >/dev/null || need+=(fio)
command -v fio_jsonplus_clat2csv >/dev/null || need+=(fio)
command -v mkfs.xfs >/dev/null || need+=(xfsprogs)
command -v mkfs.btrfs >/dev/null || need+=(btrfs-progs)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v losetup >/dev/null || need+=(mount)
command -v mount >/dev/null || need+=(mount)
# Fault tests (docs/RELIABILITY.md): shut down a filesystem under a loop
# device, freeze one, run as an unprivileged user.
command -v xfs_io >/dev/null || need+=(xfsprogs)
command -v fsfreeze >/dev/null || need+=(util-linux)
command -v setpriv >/dev/null || need+=(util-linux)
command -v kill >/dev/null || need+=(procps)
command -v blkid >/dev/null || need+=(util-linux)
command -v sfdisk >/dev/null || need+=(fdisk)
command -v partx >/dev/null || need+=(util-linux)
command -v taskset >/dev/null || need+=(util-linux)
command -v dd >/dev/null || need+=(coreutils)
# The guard's signature tests (crates/core/tests/safety.rs, tests/integration/safety2.rs)
# make each format with its real tool: FAT, exFAT, NTFS, squashfs, ISO 9660,
# LUKS, LVM2, md, bcache, GPT.
command -v mkfs.vfat >/dev/null || need+=(dosfstools)
command -v mkfs.exfat >/dev/null || need+=(exfatprogs)
command -v mkntfs >/dev/null || need+=(ntfs-3g)
command -v mksquashfs >/dev/null || need+=(squashfs-tools)
command -v genisoimage >/dev/null || need+=(genisoimage)
command -v cryptsetup >/dev/null || need+=(cryptsetup-bin)
command -v pvcreate >/dev/null || need+=(lvm2)
command -v mdadm >/dev/null || need+=(mdadm)
command -v make-bcache >/dev/null || need+=(bcache-tools)
command -v sgdisk >/dev/null || need+=(gdisk)
command -v python3 >/dev/null || need+=(python3)
# --profile's tests record with perf (Debian's linux-perf: one perf for all
# kernels; its version need not match the running kernel's).
command -v perf >/dev/null || need+=(linux-perf)
# --stages traces the io_uring and block tracepoints with bpftrace
# (tests/stages).
command -v bpftrace >/dev/null || need+=(bpftrace)
# Its default backend, raw tracepoints: crates/core/build.rs compiles
# src/stages/bpf/stages.bpf.c with clang against libbpf's BPF headers and
# the kernel UAPI headers; dioscope loads it through libbpf.so.1 (libbpf1,
# a dependency of libbpf-dev) at run time. Without them the build goes on
# and --stages uses bpftrace.
command -v clang >/dev/null || need+=(clang)
[ -f /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
[ -f /usr/include/linux/bpf.h ] || need+=(linux-libc-dev)
# The report test (tests/heavy_report) opens reports in headless Chromium;
# fio_generate_plots and fio2gnuplot (the log tests) need gnuplot.
command -v chromium >/dev/null || need+=(chromium)
command -v gnuplot >/dev/null || need+=(gnuplot-nox)
# Shell completions and man pages (tests/integration/citizen.rs): zsh and
# fish load the generated scripts; man-db and groff render the pages.
command -v zsh >/dev/null || need+=(zsh)
command -v fish >/dev/null || need+=(fish)
command -v man >/dev/null || need+=(man-db)
command -v groff >/dev/null || need+=(groff-base)
# The .deb (scripts/build-deb.sh, run by .ci/run) is built with dpkg-deb.
command -v dpkg-deb >/dev/null || need+=(dpkg)
# fio_jsonplus_clat2csv runs under Debian's python3 in the tests and needs six.
/usr/bin/python3 -c 'import six' 2>/dev/null || need+=(python3-six)
# fio's fiologparser_hist.py (the histogram-log test) needs pandas and numpy.
/usr/bin/python3 -c 'import pandas, numpy' 2>/dev/null || need+=(python3-pandas python3-numpy)
# fio-plot's bench-fio and fio-plot (the readers-of-fio's-output test) come
# from PyPI into their own virtual environment, below.
/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
# fio's own t/*.py scripts (tests/fio_tscripts): steadystate_tests.py needs
# scipy; `apt-get source` needs dpkg-source.
/usr/bin/python3 -c 'import scipy' 2>/dev/null || need+=(python3-scipy)
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
# Multi-rank runs (the mpi feature, tests/mpi): OpenMPI to build against and
# run under, and libclang for the bindings (docs/DISTRIBUTED.md).
command -v mpirun >/dev/null || need+=(openmpi-bin)
dpkg-query -W -f='${Status}' libopenmpi-dev 2>/dev/null | grep -q 'ok installed' || need+=(libopenmpi-dev)
dpkg-query -W -f='${Status}' libclang-dev 2>/dev/null | grep -q 'ok installed' || need+=(libclang-dev)

# fio-plot (bench-fio, fio-plot) for tests/integration/fio_readers.rs, pinned,
# in a virtual environment of its own (FIO_PLOT_VENV in the tests).
fio_plot_venv() {
    local venv=/opt/dioscope-tests/fio-plot
    [ -x "$venv/bin/bench-fio" ] && return 0
    [ "$(id -u)" -eq 0 ] || { echo "install-deps: run as root to install fio-plot" >&2; return 0; }
    mkdir -p /opt/dioscope-tests
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'fio-plot==1.1.21'
}

# cargo-machete (.ci/run: no declared dependency goes unused), from
# crates.io, pinned; it runs on stable Rust.
cargo_tools() {
    command -v cargo-machete >/dev/null && return 0
    command -v cargo >/dev/null || return 0
    cargo install -q --locked cargo-machete@0.9.2
}

# fio 3.33's source (its t/*.py test scripts and t/jobs) for
# tests/fio_tscripts, from Debian's source package of the installed fio:
# enables the deb-src entries (deb822 debian.sources or the one-line
# sources.list, whichever is there), then `apt-get source fio` into a fixed
# directory. Nothing of fio is kept in the repository.
FIO_SRC=/opt/dioscope-tests/fio-src
enable_deb_src() {
    local f=/etc/apt/sources.list.d/debian.sources changed=0
    if [ -f "$f" ] && grep -q '^Types: deb$' "$f"; then
        sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
        changed=1
    fi
    f=/etc/apt/sources.list
    if [ -f "$f" ] && grep -q '^deb ' "$f"; then
        local line
        while IFS= read -r line; do
            grep -qxF "deb-src ${line#deb }" "$f" || { echo "deb-src ${line#deb }" >>"$f"; changed=1; }
        done < <(grep '^deb ' "$f")
    fi
    [ "$changed" -eq 0 ] || apt-get update -qq
}
fio_source() {
    ls -d "$FIO_SRC"/fio-*/t/run-fio-tests.py >/dev/null 2>&1 && return 0
    [ "$(id -u)" -eq 0 ] || { echo "install-deps: run as root to fetch fio's source" >&2; return 0; }
    enable_deb_src
    rm -rf "$FIO_SRC.part"
    mkdir -p "$FIO_SRC.part"
    (cd "$FIO_SRC.part" && apt-get source -qq fio >/dev/null)
    rm -rf "$FIO_SRC"
    mv "$FIO_SRC.part" "$FIO_SRC"
}

if [ ${#need[@]} -eq 0 ]; then
    fio_plot_venv
    cargo_tools
    fio_source
    exit 0
fi
# Deduplicate.
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing ${need[*]}; run as root to install them (tests that need them will skip)" >&2
    exit 0
fi
echo "install-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fio_plot_venv
cargo_tools
fio_source
