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
set -u
. "$HOME/fsbench-kernel-build.conf"
[ -z "${LOG_FILE:-}" ] || exec >> "$LOG_FILE" 2>&1
config=defconfig; jobs=cores
for arg in "$@"; do
    case "$arg" in
        --config=*) config="${arg#*=}" ;;
        --jobs=*) jobs="${arg#*=}" ;;
        *) echo "fsbench-kernel-build: unknown argument $arg; expected --config= --jobs=" >&2; exit 2 ;;
    esac
done
case "$config" in defconfig|tinyconfig|allnoconfig) ;; *) echo "fsbench-kernel-build: bad --config=$config" >&2; exit 2 ;; esac
[ "$jobs" != cores ] || jobs="${NUM_CPU_CORES:-$(nproc)}"

work="${FSBENCH_PTS_TARGET:-$HOME}/fsbench-kernel-build.$$"
cleanup() {
    status=$?
    rm -rf "$work"
    echo "$status" > "$HOME/test-exit-status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$work" || exit 1

make -s -C "$HOME/linux-src" O="$work" "$config" > /dev/null || exit 1
start="$(date +%s.%N)"
make -s -C "$HOME/linux-src" O="$work" -j "$jobs" > "$work/make.log" 2>&1
status=$?
end="$(date +%s.%N)"
tail -n 20 "$work/make.log"
[ "$status" -eq 0 ] || exit "$status"
awk -v s="$start" -v e="$end" 'BEGIN { printf "fsbench-kernel-build seconds: %.2f\n", e - s }'

if [ "$SYSTEM_TOOL" = 1 ]; then
    echo "$KERNEL_VERSION" > "$HOME/pts-test-version"
fi
SCRIPT
chmod +x fsbench-kernel-build
