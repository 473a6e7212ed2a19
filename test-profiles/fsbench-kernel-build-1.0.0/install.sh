#!/bin/sh
# Unpacks the pinned kernel release (downloads.xml). With FSBENCH_PTS_SYSTEM_TOOLS=1 a kernel
# source tarball the distribution installed (/usr/src/linux-source-*.tar.*, e.g. Debian's
# linux-source) is used instead, and the result says so.
set -u
pinned=linux-6.8
rm -rf linux-src

if [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ] && ls /usr/src/linux-source-*.tar.* > /dev/null 2>&1; then
    tarball="$(ls /usr/src/linux-source-*.tar.* | sort -V | tail -n 1)"
    mkdir linux-src && tar -xf "$tarball" -C linux-src --strip-components=1 || exit 1
    kernel_version="$(make -s -C linux-src kernelversion 2>/dev/null)"
    echo "system kernel source $tarball ($kernel_version), not the pinned $pinned release" > "$INSTALL_FOOTNOTE"
elif [ -f "$pinned.tar.xz" ]; then
    mkdir linux-src && tar -xf "$pinned.tar.xz" -C linux-src --strip-components=1 || exit 1
    kernel_version=6.8
elif [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ]; then
    echo "fsbench-kernel-build: FSBENCH_PTS_SYSTEM_TOOLS=1, but there is no /usr/src/linux-source-*.tar.*; install it (Debian package: linux-source)" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
else
    echo "fsbench-kernel-build: $pinned.tar.xz was not downloaded; check the network or the download cache," \
         "or set FSBENCH_PTS_SYSTEM_TOOLS=1 to use /usr/src/linux-source-*.tar.*" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
fi

{
    printf 'KERNEL_VERSION=%s\n' "'$kernel_version'"
    printf 'SYSTEM_TOOL=%s\n' "${FSBENCH_PTS_SYSTEM_TOOLS:-0}"
} > fsbench-kernel-build.conf

cat > fsbench-kernel-build <<'SCRIPT'
#!/bin/sh
# fsbench-kernel-build --config=defconfig|tinyconfig|allnoconfig --jobs=N|cores
fsbench_name=fsbench-kernel-build
. "${TEST_EXTENDS:?is not set: PTS sets it for a profile that extends fsbench-base}/fsbench-run.sh"
config=defconfig; jobs=cores
fsbench_arguments "config jobs" "$@"
case "$config" in defconfig|tinyconfig|allnoconfig) ;; *) echo "fsbench-kernel-build: bad --config=$config" >&2; exit 2 ;; esac
[ "$jobs" != cores ] || jobs="${NUM_CPU_CORES:-$(nproc)}"

fsbench_workdir

make -s -C "$HOME/linux-src" O="$work" "$config" > /dev/null || exit 1
start="$(date +%s.%N)"
make -s -C "$HOME/linux-src" O="$work" -j "$jobs" > "$work/make.log" 2>&1
status=$?
end="$(date +%s.%N)"
tail -n 20 "$work/make.log"
[ "$status" -eq 0 ] || exit "$status"
awk -v s="$start" -v e="$end" 'BEGIN { printf "fsbench-kernel-build seconds: %.2f\n", e - s }'

fsbench_tool_version "$KERNEL_VERSION"
SCRIPT
chmod +x fsbench-kernel-build
