#!/usr/bin/env bash
# Set up this machine for fsbench (idempotently) and run it.
#   ./fsbench.sh bench [pytest args]   quick benchmark (dd) of every fs x layout this machine supports,
#                                      each under the host's kernel, or in a User-mode Linux guest where
#                                      only a guest kernel can run it (md RAID here); pytest args choose
#                                      other cases, e.g. benchmarks/ -m "not slow", or --kernel=host.
#                                      Installs only what the bench needs (the workloads' tools when
#                                      args are given, the virtual machine's packages for --kernel=vm)
#   ./fsbench.sh test  [pytest args]   fsbench's own tests (installs everything first, as setup --kernel=vm)
#   ./fsbench.sh setup [--kernel=vm]   only install what is missing: the workloads' tools and the tests';
#                                      with --kernel=vm also the virtual machine's (OpenZFS built for its
#                                      kernel by zfs-dkms: minutes of a fresh machine's setup)
#   ./fsbench.sh packages bench|test   the Debian packages that command installs (nothing is installed)
set -euo pipefail
cd "$(dirname "$0")"

# what the quick bench needs: the filesystems' tools and the User-mode Linux guest (md RAID)
BENCH_PACKAGES=(python3 python3-venv e2fsprogs xfsprogs btrfs-progs btrfs-compsize zfs-fuse mdadm
                util-linux fdisk user-mode-linux kmod)
# the other workloads' tools (a bench given other cases may run them)
WORKLOAD_PACKAGES=(fio bonnie++ time iozone3 dbench jfsutils reiserfsprogs
                   linux-source build-essential bc bison flex libelf-dev libssl-dev)
# only fsbench's own tests need these: the team store, the report's browser test, the fleet
PACKAGES=("${BENCH_PACKAGES[@]}" "${WORKLOAD_PACKAGES[@]}" postgresql chromium
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

# install_packages VM PACKAGE...: the packages missing; with VM=vm also the virtual machine's
# (QEMU, the kernel and its headers, zfs-dkms and the module it builds, OpenZFS's userland)
install_packages() {
    need_root
    local vm=$1 missing vm_missing=""
    shift
    missing=$(missing_packages "$@")
    if [ "$vm" = vm ]; then
        # shellcheck disable=SC2046
        vm_missing=$(missing_packages "${VM_PACKAGES[@]}" $(kernel_packages))
    fi
    if [ -n "$missing" ] || [ -n "$vm_missing" ]; then
        enable_component non-free multiverse
        enable_component contrib universe
        apt-get update -qq
    fi
    if [ -n "$missing" ]; then
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${APT_RECOMMENDS:-} $missing
    fi
    if [ -n "$vm_missing" ]; then
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $vm_missing
    fi
    if [ "$vm" = vm ]; then
        build_zfs_module
        extract_openzfs_userland
    fi
}

# install_venv EXTRAS MARKER: fsbench in .venv with those extras, once per change of pyproject.toml;
# a bench's venv (no extras) is completed by setup, and a full one serves the bench as it is
install_venv() {
    local extras=$1 marker=$2
    if [ "$marker" != .venv/.installed ] && [ -f .venv/.installed ] && [ ! pyproject.toml -nt .venv/.installed ]; then
        return 0
    fi
    if [ ! -x .venv/bin/pytest ] || [ ! -f "$marker" ] || [ pyproject.toml -nt "$marker" ]; then
        python3 -m venv .venv
        .venv/bin/pip install -q --upgrade pip
        # setuptools says "Editable installation." (mind folders named like the package in the
        # working directory) on every editable install of a package with a package-dir mapping
        # (the benchmarks ship as pytest_fsbench.benchmarks); here that folder is the package
        # itself: only that one notice is silenced, every other warning and error is shown
        PYTHONWARNINGS="ignore:Editable installation:UserWarning" .venv/bin/pip install -q -e ".$extras"
        touch "$marker"
    fi
}

setup() {  # [--kernel=vm]
    local vm=- arg
    for arg in "$@"; do
        case "$arg" in --kernel=*vm*) vm=vm ;; *) echo "usage: $0 setup [--kernel=vm]" >&2; exit 2 ;; esac
    done
    install_packages "$vm" "${PACKAGES[@]}"
    install_venv '[test,vm,docs,storage]' .venv/.installed
}

# names_tests [pytest args]: whether the arguments name tests (a path, path::test, or --pyargs);
# options alone (--store=..., -k write, --fs=xfs) keep the bench's own dd cases
names_tests() {
    local arg
    for arg in "$@"; do
        case "$arg" in --pyargs) return 0 ;; -*) continue ;; esac
        [ -e "${arg%%::*}" ] && return 0
    done
    return 1
}

# bench_needs [pytest args]: what the bench needs, as "vm|- PACKAGE...": the workloads' tools when
# arguments name other tests, the virtual machine's packages when they ask for --kernel=vm
bench_needs() {
    local vm=- arg packages=("${BENCH_PACKAGES[@]}")
    for arg in "$@"; do
        case "$arg" in --kernel=*vm*) vm=vm ;; esac
    done
    if names_tests "$@"; then packages+=("${WORKLOAD_PACKAGES[@]}"); fi
    echo "$vm" "${packages[@]}"
}

bench_setup() {
    local needs
    read -r -a needs < <(bench_needs "$@")
    # the bench's packages alone, not what they recommend (mdadm's: a mail server and cron)
    APT_RECOMMENDS=--no-install-recommends install_packages "${needs[@]}"
    if [ "${needs[0]}" = vm ]; then install_venv '[vm,storage]' .venv/.installed-vm; else install_venv '[storage]' .venv/.installed-bench; fi
}

# what a command would install, without installing it: ./fsbench.sh packages bench|test [pytest args]
list_packages() {
    local needs
    case "${1:-}" in
        bench) shift; read -r -a needs < <(bench_needs "$@") ;;
        test) needs=(vm "${PACKAGES[@]}") ;;
        setup) shift; needs=(- "${PACKAGES[@]}")
               case "${1:-}" in --kernel=*vm*) needs[0]=vm ;; esac ;;
        *) echo "usage: $0 packages bench|test|setup [pytest args]" >&2; exit 2 ;;
    esac
    printf '%s\n' "${needs[@]:1}"
    # shellcheck disable=SC2046
    [ "${needs[0]}" != vm ] || printf '%s\n' "${VM_PACKAGES[@]}" $(kernel_packages)
}

# the bench's cases: every fs x layout, each once (host+uml is no kernel A/B), 3 runs of 64M after
# a warm-up (a quick look: 10 runs of 256M took 18 min on a loaded 2-CPU machine; 3 of 64M take 3 min 31 s
# on an idle one, 6 min 14 s beside other jobs);
# an option the arguments give replaces the one here (pytest refuses an option given twice)
BENCH_ARGS=(--fs=ext4,xfs,btrfs,zfs --layout=single,raid0,raid1,raid10,raid5 --kernel=host+uml --runs=3 --dd-size=64M)

bench_args() {  # BENCH_ARGS but for the options among "$@"
    local arg given keep
    for arg in "${BENCH_ARGS[@]}"; do
        keep=1
        for given in "$@"; do [ "${given%%=*}" = "${arg%%=*}" ] && keep=0; done
        [ "$keep" = 1 ] && printf '%s\n' "$arg"
    done
}

case "${1:-}" in
    setup) shift; setup "$@" ;;
    bench) shift; bench_setup "$@"
           # the quick dd cases, unless the arguments name other tests
           names_tests "$@" || set -- benchmarks/test_dd.py "$@"
           mapfile -t chosen < <(bench_args "$@")
           exec .venv/bin/pytest "${chosen[@]}" "$@" ;;
    test)  shift; setup --kernel=vm
           exec .venv/bin/pytest tests "$@" ;;
    packages) shift; list_packages "$@" ;;
    *) echo "usage: $0 bench|test|setup [pytest args], or packages bench|test [pytest args]" >&2; exit 2 ;;
esac
