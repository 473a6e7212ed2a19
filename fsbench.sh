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
          linux-source build-essential bc bison flex libelf-dev libssl-dev chromium
          slurmctld slurmd slurm-client munge)

# --kernel=vm: QEMU, the distribution's kernel with its headers, OpenZFS's module built for it by
# zfs-dkms, and busybox (virtme-ng builds the guest's boot image with it). zfs-dkms comes from
# Debian's contrib (2.1.11), not bookworm-backports (2.3): it is built and tested against the
# same release's kernel, needs no extra sources entry or pinning, and gets the release's security
# updates; 2.1 has lz4, zstd, 16M records (with zfs_max_recordsize, which fsbench sets) and
# log/cache/special/dedup vdevs (blake3 checksums need 2.2). These are installed without
# recommends: zfs-dkms recommends zfsutils-linux, which conflicts with zfs-fuse (apt would remove
# zfs-fuse, which --kernel=host uses); the OpenZFS userland goes to OPENZFS_USERLAND instead.
VM_PACKAGES=(qemu-system-x86 busybox-static zfs-dkms)
OPENZFS_USERLAND=/var/lib/fsbench/openzfs

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "fsbench.sh: run as root: fsbench builds filesystems on loop devices (losetup, mkfs, mount)" >&2
        exit 2
    fi
}

# iozone3 is in Debian's non-free component (Ubuntu: multiverse), zfs-dkms in contrib (Ubuntu:
# universe). Enable them by adding the components to the Components lines of the distribution's
# existing sources entries.
enable_component() {  # debian-component ubuntu-component
    local deb822=/etc/apt/sources.list.d/debian.sources ubuntu=/etc/apt/sources.list.d/ubuntu.sources
    if [ -f "$deb822" ] && grep -q '^Components:' "$deb822"; then
        sed -i "/^Components:/ { / $1\\( \\|\$\\)/! s/\$/ $1/ }" "$deb822"
    elif [ -f "$ubuntu" ] && grep -q '^Components:' "$ubuntu"; then
        sed -i "/^Components:/ { / $2\\( \\|\$\\)/! s/\$/ $2/ }" "$ubuntu"
    elif [ -f /etc/apt/sources.list ] && grep -q '^deb .* main' /etc/apt/sources.list; then
        sed -i "/^deb .* main/ { / $1\\( \\|\$\\)/! s/\$/ $1/ }" /etc/apt/sources.list
    fi
}

# the guest's kernel: Debian's or Ubuntu's packaged one, with the headers zfs-dkms builds against
kernel_packages() {
    if grep -q '^ID=ubuntu' /etc/os-release 2>/dev/null; then
        echo linux-image-generic linux-headers-generic
    else
        echo "linux-image-$(dpkg --print-architecture)" "linux-headers-$(dpkg --print-architecture)"
    fi
}

missing_packages() {  # package...
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

# the newest installed kernel release that has headers (the one --kernel=vm boots)
vm_kernel_release() {
    local image release newest=""
    for image in /boot/vmlinuz-*; do
        release=${image#/boot/vmlinuz-}
        [ -d "/lib/modules/$release/build" ] && newest=$(printf '%s\n%s\n' "$newest" "$release" | sort -V | tail -1)
    done
    echo "$newest"
}

# OpenZFS's module, built by dkms once per kernel (apt's hooks build it when the kernel or
# zfs-dkms is installed; this catches a kernel installed while dkms could not build)
build_zfs_module() {
    local release
    release=$(vm_kernel_release)
    [ -n "$release" ] || return 0
    dkms status -m zfs -k "$release" 2>/dev/null | grep -q installed || dkms autoinstall -k "$release"
}

# the OpenZFS userland of zfs-dkms's version (zfsutils-linux and the libraries it needs),
# extracted from its packages into OPENZFS_USERLAND, which only the guest puts on its PATH
extract_openzfs_userland() {
    local version libs tmp deb
    version=$(dpkg-query -W -f='${Version}' zfs-dkms)
    [ "$(cat "$OPENZFS_USERLAND/version" 2>/dev/null)" = "$version" ] && return 0
    libs=$(apt-cache show "zfsutils-linux=$version" | sed -n 's/^Depends: //p' | head -1 | tr ',' '\n' \
           | sed -n 's/^ *\(lib[a-z0-9]*linux\) .*/\1/p')
    tmp=$(mktemp -d)
    # shellcheck disable=SC2046
    (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "zfsutils-linux=$version" \
        $(for lib in $libs; do echo "$lib=$version"; done))
    rm -rf "$OPENZFS_USERLAND.new"
    mkdir -p "$OPENZFS_USERLAND.new"
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$OPENZFS_USERLAND.new"; done
    echo "$version" > "$OPENZFS_USERLAND.new/version"
    rm -rf "$OPENZFS_USERLAND" "$tmp"
    mv "$OPENZFS_USERLAND.new" "$OPENZFS_USERLAND"
}

setup() {
    need_root
    local missing vm_missing
    # shellcheck disable=SC2046
    missing=$(missing_packages "${PACKAGES[@]}")
    # shellcheck disable=SC2046
    vm_missing=$(missing_packages "${VM_PACKAGES[@]}" $(kernel_packages))
    if [ -n "$missing" ] || [ -n "$vm_missing" ]; then
        enable_component non-free multiverse
        enable_component contrib universe
        apt-get update -qq
    fi
    if [ -n "$missing" ]; then
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
    fi
    if [ -n "$vm_missing" ]; then
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $vm_missing
    fi
    build_zfs_module
    extract_openzfs_userland
    if [ ! -x .venv/bin/pytest ] || [ pyproject.toml -nt .venv/.installed ]; then
        python3 -m venv .venv
        .venv/bin/pip install -q --upgrade pip
        .venv/bin/pip install -q -e '.[test,vm,docs]'
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
