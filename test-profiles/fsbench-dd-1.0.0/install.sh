#!/bin/sh
# Builds dd from the pinned GNU coreutils release (downloads.xml). With FSBENCH_PTS_SYSTEM_TOOLS=1
# the system's dd is used instead, and the result says so.
set -u
pinned=coreutils-9.1

if [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ] && command -v dd >/dev/null 2>&1; then
    dd_bin="$(command -v dd)"
    dd_version="$("$dd_bin" --version | head -n 1)"
    echo "system $dd_version ($dd_bin), not the pinned $pinned build" > "$INSTALL_FOOTNOTE"
elif [ -f "$pinned.tar.xz" ]; then
    rm -rf "$pinned"
    tar -xf "$pinned.tar.xz" || exit 1
    (
        cd "$pinned" &&
        FORCE_UNSAFE_CONFIGURE=1 ./configure --quiet --disable-nls &&
        make -j "${NUM_CPU_CORES:-1}" >/dev/null
    ) || { echo 1 > "$HOME/install-exit-status"; exit 1; }
    mkdir -p bin && cp "$pinned/src/dd" bin/dd || exit 1
    rm -rf "$pinned"
    dd_bin="$HOME/bin/dd"
    dd_version="$("$dd_bin" --version | head -n 1)"
elif [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ]; then
    echo "fsbench-dd: FSBENCH_PTS_SYSTEM_TOOLS=1, but there is no dd on PATH ($PATH); install it (Debian package: coreutils)" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
else
    echo "fsbench-dd: $pinned.tar.xz was not downloaded; check the network or the download cache," \
         "or set FSBENCH_PTS_SYSTEM_TOOLS=1 to use the system's dd" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
fi

{
    printf 'DD=%s\n' "'$dd_bin'"
    printf 'DD_VERSION=%s\n' "'$dd_version'"
    printf 'SYSTEM_TOOL=%s\n' "${FSBENCH_PTS_SYSTEM_TOOLS:-0}"
} > fsbench-dd.conf

cat > fsbench-dd <<'SCRIPT'
#!/bin/sh
# fsbench-dd --test=write|read --bs=BYTES --size-mib=N --data=zeros|random --cache=drop|direct
fsbench_name=fsbench-dd
. "${TEST_EXTENDS:?is not set: PTS sets it for a profile that extends fsbench-base}/fsbench-run.sh"
test=write; bs=1048576; size_mib=1024; data=zeros; cache=drop
fsbench_arguments "test bs size-mib data cache" "$@"
case "$test/$data/$cache" in
    write/zeros/drop|write/zeros/direct|write/random/drop|write/random/direct) ;;
    read/zeros/drop|read/zeros/direct|read/random/drop|read/random/direct) ;;
    *) echo "fsbench-dd: bad --test=$test, --data=$data or --cache=$cache" >&2; exit 2 ;;
esac
count=$((size_mib * 1048576 / bs))
[ "$count" -gt 0 ] || { echo "fsbench-dd: --size-mib=$size_mib is smaller than --bs=$bs" >&2; exit 2; }

fsbench_workdir
source_file=/dev/zero

if [ "$data" = random ]; then
    available_kib="$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)"
    if [ "$((size_mib * 1024 * 2))" -gt "$available_kib" ]; then
        echo "fsbench-dd: random data of ${size_mib} MiB is staged in /dev/shm and needs twice that in free RAM; choose a smaller file size" >&2
        exit 2
    fi
    staged="/dev/shm/fsbench-dd.$$"
    fsbench_remove="$staged"
    head -c "$((size_mib * 1048576))" /dev/urandom > "$staged" || exit 1
    source_file="$staged"
fi

oflag=""; iflag=""
if [ "$cache" = direct ]; then oflag="oflag=direct"; iflag="iflag=direct"; fi

run_dd() {
    # dd's last stderr line: "<bytes> bytes (...) copied, <seconds> s, <rate>"
    "$DD" "$@" 2> "$work/dd.err"
    status=$?
    cat "$work/dd.err"
    [ "$status" -eq 0 ] || exit "$status"
}

if [ "$test" = write ]; then
    run_dd if="$source_file" of="$work/file" bs="$bs" count="$count" conv=fdatasync $oflag
else
    "$DD" if="$source_file" of="$work/file" bs="$bs" count="$count" conv=fdatasync 2>/dev/null || exit 1
    if [ "$cache" = drop ]; then
        sync
        echo 3 > /proc/sys/vm/drop_caches || { echo "fsbench-dd: cannot drop the page cache (not root?); use --cache=direct" >&2; exit 1; }
    fi
    run_dd if="$work/file" of=/dev/null bs="$bs" $iflag
fi
awk '/ copied, / { for (i = 1; i < NF; i++) if ($(i + 1) == "s,") secs = $i; bytes = $1 }
     END { if (secs > 0) printf "fsbench-dd throughput: %.1f MB/s\n", bytes / secs / 1000000 }' "$work/dd.err"

fsbench_tool_version "$(echo "$DD_VERSION" | awk '{print $NF}')"
SCRIPT
chmod +x fsbench-dd
