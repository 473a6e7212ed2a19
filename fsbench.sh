#!/usr/bin/env bash
# Set up this machine for fsbench (idempotently) and run it.
#   ./fsbench.sh bench [pytest args]   quick benchmark (dd) of every fs x layout this machine supports,
#                                      each under the host's kernel, or in a User-mode Linux guest where
#                                      only a guest kernel can run it (md RAID here); pytest args choose
#                                      other cases, e.g. benchmarks/ -m "not slow", or --kernel=host
#   ./fsbench.sh test  [pytest args]   fsbench's own tests
#   ./fsbench.sh setup                 only install what is missing
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(python3 python3-venv e2fsprogs xfsprogs btrfs-progs btrfs-compsize zfs-fuse mdadm
          util-linux fdisk fio bonnie++ time iozone3 dbench
          jfsutils reiserfsprogs user-mode-linux postgresql
          linux-source build-essential bc bison flex libelf-dev libssl-dev chromium)

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "fsbench.sh: run as root: fsbench builds filesystems on loop devices (losetup, mkfs, mount)" >&2
        exit 2
    fi
}

# iozone3 is in Debian's non-free component (Ubuntu: multiverse). Enable it by adding the
# component to the Components line of the distribution's existing sources entry.
enable_iozone_component() {
    local deb822=/etc/apt/sources.list.d/debian.sources ubuntu=/etc/apt/sources.list.d/ubuntu.sources
    if [ -f "$deb822" ] && ! grep -q '^Components:.*non-free\( \|$\)' "$deb822"; then
        sed -i '/^Components:/ { / non-free\( \|$\)/! s/$/ non-free/ }' "$deb822"
    elif [ -f "$ubuntu" ] && ! grep -q '^Components:.*multiverse' "$ubuntu"; then
        sed -i '/^Components:/ s/$/ multiverse/' "$ubuntu"
    elif [ -f /etc/apt/sources.list ] && grep -q '^deb .* main' /etc/apt/sources.list \
         && ! grep -q '^deb .* non-free\( \|$\)' /etc/apt/sources.list; then
        sed -i '/^deb .* main/ { / non-free\( \|$\)/! s/$/ non-free/ }' /etc/apt/sources.list
    fi
}

missing_packages() {
    local pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

setup() {
    need_root
    local missing
    missing=$(missing_packages)
    if [ -n "$missing" ]; then
        enable_iozone_component
        apt-get update -qq
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
    fi
    if [ ! -x .venv/bin/pytest ] || [ pyproject.toml -nt .venv/.installed ]; then
        python3 -m venv .venv
        .venv/bin/pip install -q --upgrade pip
        .venv/bin/pip install -q -e '.[test]'
        touch .venv/.installed
    fi
}

# the bench's cases: every fs x layout, each once (host+uml is no kernel A/B); an option the
# arguments give replaces the one here (pytest refuses an option of one value given twice)
BENCH_ARGS=(--fs=ext4,xfs,btrfs,zfs --layout=single,raid0,raid1,raid10,raid5 --kernel=host+uml)

bench_args() {  # BENCH_ARGS but for the options among "$@"
    local arg given keep
    for arg in "${BENCH_ARGS[@]}"; do
        keep=1
        for given in "$@"; do [ "${given%%=*}" = "${arg%%=*}" ] && keep=0; done
        [ "$keep" = 1 ] && printf '%s\n' "$arg"
    done
}

case "${1:-}" in
    setup) setup ;;
    bench) shift; setup
           # with no arguments, the quick dd cases; otherwise what the arguments select
           [ $# -gt 0 ] || set -- benchmarks/test_dd.py
           mapfile -t chosen < <(bench_args "$@")
           exec .venv/bin/pytest "${chosen[@]}" "$@" ;;
    test)  shift; setup
           exec .venv/bin/pytest tests "$@" ;;
    *) echo "usage: $0 bench|test|setup [pytest args]" >&2; exit 2 ;;
esac
