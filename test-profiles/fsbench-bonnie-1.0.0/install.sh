#!/bin/sh
# Builds bonnie++ from the pinned release (downloads.xml). With FSBENCH_PTS_SYSTEM_TOOLS=1 the
# system's bonnie++ is used instead, and the result says so.
set -u
pinned=bonnie++-2.00a
PATH="$PATH:/usr/sbin:/sbin"

if [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ] && command -v bonnie++ >/dev/null 2>&1; then
    bonnie_bin="$(command -v bonnie++)"
    bonnie_version="$("$bonnie_bin" 2>&1 | awk '/^Version:/ {print $2; exit}')"
    echo "system bonnie++ ${bonnie_version:-?} ($bonnie_bin), not the pinned $pinned build" > "$INSTALL_FOOTNOTE"
elif [ -f "$pinned.tgz" ]; then
    rm -rf "$pinned"
    tar -xzf "$pinned.tgz" || exit 1
    (cd "$pinned" && ./configure --quiet && make -j "${NUM_CPU_CORES:-1}" bonnie++) > /dev/null ||
        { echo 1 > "$HOME/install-exit-status"; exit 1; }
    mkdir -p bin && cp "$pinned/bonnie++" bin/bonnie++ || exit 1
    rm -rf "$pinned"
    bonnie_bin="$HOME/bin/bonnie++"
    bonnie_version=2.00a
elif [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ]; then
    echo "fsbench-bonnie: FSBENCH_PTS_SYSTEM_TOOLS=1, but there is no bonnie++ on PATH ($PATH); install it (Debian package: bonnie++)" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
else
    echo "fsbench-bonnie: $pinned.tgz was not downloaded; check the network or the download cache," \
         "or set FSBENCH_PTS_SYSTEM_TOOLS=1 to use the system's bonnie++" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
fi

{
    printf 'BONNIE=%s\n' "'$bonnie_bin'"
    printf 'BONNIE_VERSION=%s\n' "'$bonnie_version'"
    printf 'SYSTEM_TOOL=%s\n' "${FSBENCH_PTS_SYSTEM_TOOLS:-0}"
} > fsbench-bonnie.conf

cat > fsbench-bonnie <<'SCRIPT'
#!/bin/sh
# fsbench-bonnie --size-mib=N|2xram --files-k=N
fsbench_name=fsbench-bonnie
. "${TEST_EXTENDS:?is not set: PTS sets it for a profile that extends fsbench-base}/fsbench-run.sh"
size_mib=2xram; files_k=16
fsbench_arguments "size-mib files-k" "$@"
ram_mib="$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)"
[ "$size_mib" != 2xram ] || size_mib=$((ram_mib * 2))

fsbench_workdir

# -r: the RAM bonnie++ assumes; it refuses a file smaller than twice that, so a smaller size
# chosen on purpose states half of it
ram_arg=$((size_mib / 2))
[ "$ram_arg" -lt "$ram_mib" ] || ram_arg="$ram_mib"
"$BONNIE" -d "$work" -s "$size_mib" -r "$ram_arg" -n "$files_k" -m fsbench -u root -q > "$work/bonnie.csv" || exit 1
cat "$work/bonnie.csv"
# CSV columns (1-based): 12 block write, 14 rewrite, 18 block read (K/sec), 20 seeks/s,
# 27 sequential create, 31 sequential delete, 33 random create, 37 random delete (files/s)
awk -F, '
    function kib(name, v) { if (v ~ /^[0-9]+$/) printf "fsbench-bonnie %s: %.1f\n", name, v * 1.024 / 1000 }
    function ops(name, v) { if (v ~ /^[0-9.]+$/) printf "fsbench-bonnie %s: %s\n", name, v }
    NF >= 37 {
        kib("sequential-block-write", $12); kib("sequential-rewrite", $14); kib("sequential-block-read", $18)
        ops("random-seeks", $20); ops("sequential-create", $27); ops("sequential-delete", $31)
        ops("random-create", $33); ops("random-delete", $37)
    }' "$work/bonnie.csv"

fsbench_tool_version "$BONNIE_VERSION"
SCRIPT
chmod +x fsbench-bonnie
