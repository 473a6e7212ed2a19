#!/bin/sh
# Builds IOzone from the pinned release (downloads.xml). With FSBENCH_PTS_SYSTEM_TOOLS=1 the
# system's iozone is used instead, and the result says so.
set -u
pinned=iozone3_465

if [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ] && command -v iozone >/dev/null 2>&1; then
    iozone_bin="$(command -v iozone)"
    iozone_version="$("$iozone_bin" -v | awk '/Version \$Revision/ {print $3}')"
    echo "system iozone $iozone_version ($iozone_bin), not the pinned $pinned build" > "$INSTALL_FOOTNOTE"
elif [ -f "$pinned.tar" ]; then
    case "$(uname -m)" in
        x86_64) make_target=linux-AMD64 ;;
        aarch64) make_target=linux-arm ;;
        ppc64le) make_target=linux-powerpc64 ;;
        *) make_target=linux ;;
    esac
    rm -rf "$pinned"
    tar -xf "$pinned.tar" || exit 1
    (cd "$pinned/src/current" && make "$make_target" CFLAGS="-fcommon") > /dev/null ||
        { echo 1 > "$HOME/install-exit-status"; exit 1; }
    mkdir -p bin && cp "$pinned/src/current/iozone" bin/iozone || exit 1
    rm -rf "$pinned"
    iozone_bin="$HOME/bin/iozone"
    iozone_version=3.465
elif [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ]; then
    echo "fsbench-iozone: FSBENCH_PTS_SYSTEM_TOOLS=1, but there is no iozone on PATH ($PATH); install it (Debian package: iozone3)" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
else
    echo "fsbench-iozone: $pinned.tar was not downloaded; check the network or the download cache," \
         "or set FSBENCH_PTS_SYSTEM_TOOLS=1 to use the system's iozone" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
fi

{
    printf 'IOZONE=%s\n' "'$iozone_bin'"
    printf 'IOZONE_VERSION=%s\n' "'$iozone_version'"
    printf 'SYSTEM_TOOL=%s\n' "${FSBENCH_PTS_SYSTEM_TOOLS:-0}"
} > fsbench-iozone.conf

cat > fsbench-iozone <<'SCRIPT'
#!/bin/sh
# fsbench-iozone IOZONE-ARGUMENTS... ; arguments starting with '#' are result tags, not passed on
fsbench_name=fsbench-iozone
. "${TEST_EXTENDS:?is not set: PTS sets it for a profile that extends fsbench-base}/fsbench-run.sh"
fsbench_workdir

for arg in "$@"; do
    shift
    case "$arg" in
        \#*) ;;
        *) set -- "$@" "$arg" ;;
    esac
done
cd "$work" || exit 1
"$IOZONE" "$@" -f "$work/iozone.tmp"
status=$?

fsbench_tool_version "$IOZONE_VERSION"
exit "$status"
SCRIPT
chmod +x fsbench-iozone
