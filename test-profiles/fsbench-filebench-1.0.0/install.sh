#!/bin/sh
# Builds Filebench from the pinned source (downloads.xml). With FSBENCH_PTS_SYSTEM_TOOLS=1 the
# system's filebench (and the personalities installed next to it) is used instead, and the result
# says so.
set -u
pinned=filebench-1.5-alpha3-27-g22620e6

if [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ] && command -v filebench >/dev/null 2>&1; then
    # resolved: /usr/local/bin/filebench is often a link into the installation's bin/
    filebench_bin="$(readlink -f "$(command -v filebench)")"
    workloads="$(cd "$(dirname "$filebench_bin")/../share/filebench/workloads" 2>/dev/null && pwd)"
    [ -n "$workloads" ] || { echo "fsbench-filebench: no share/filebench/workloads next to $filebench_bin" >&2; echo 1 > "$HOME/install-exit-status"; exit 1; }
    filebench_version="$("$filebench_bin" -h 2>&1 | awk '/version/ {print $NF; exit}')"
    echo "system filebench ${filebench_version:-?} ($filebench_bin), not the pinned $pinned build" > "$INSTALL_FOOTNOTE"
elif [ -f "$pinned.tar.gz" ]; then
    rm -rf filebench-src && mkdir filebench-src
    tar -xzf "$pinned.tar.gz" -C filebench-src --strip-components=1 || exit 1
    (
        cd filebench-src &&
        libtoolize --quiet && aclocal && autoheader && automake --add-missing && autoconf &&
        ./configure --quiet --prefix="$HOME/filebench" &&
        make -j "${NUM_CPU_CORES:-1}" && make install
    ) > /dev/null || { echo 1 > "$HOME/install-exit-status"; exit 1; }
    rm -rf filebench-src
    filebench_bin="$HOME/filebench/bin/filebench"
    workloads="$HOME/filebench/share/filebench/workloads"
    filebench_version=1.5-alpha3-27
elif [ "${FSBENCH_PTS_SYSTEM_TOOLS:-0}" = 1 ]; then
    echo "fsbench-filebench: FSBENCH_PTS_SYSTEM_TOOLS=1, but there is no filebench on PATH ($PATH); build and install it from its upstream source (github.com/filebench/filebench)" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
else
    echo "fsbench-filebench: $pinned.tar.gz was not downloaded; check the network or the download cache," \
         "or set FSBENCH_PTS_SYSTEM_TOOLS=1 to use the system's filebench" >&2
    echo 1 > "$HOME/install-exit-status"
    exit 1
fi

{
    printf 'FILEBENCH=%s\n' "'$filebench_bin'"
    printf 'WORKLOADS=%s\n' "'$workloads'"
    printf 'FILEBENCH_VERSION=%s\n' "'$filebench_version'"
    printf 'SYSTEM_TOOL=%s\n' "${FSBENCH_PTS_SYSTEM_TOOLS:-0}"
} > fsbench-filebench.conf

cat > fsbench-filebench <<'SCRIPT'
#!/bin/sh
# fsbench-filebench --personality=NAME --runtime=SECONDS --file-set=stock|quick
fsbench_name=fsbench-filebench
. "${TEST_EXTENDS:?is not set: PTS sets it for a profile that extends fsbench-base}/fsbench-run.sh"
personality=fileserver; runtime=60; file_set=stock
fsbench_arguments "personality runtime file-set" "$@"
stock="$WORKLOADS/$personality.f"
[ -f "$stock" ] || { echo "fsbench-filebench: no personality $stock" >&2; exit 2; }

# variables the quick file set changes (the same as fsbench's pytest face)
case "$file_set/$personality" in
    stock/*|quick/varmail) quick="" ;;
    quick/fileserver) quick="nthreads=16 filesize-mean=16384" ;;
    quick/webserver) quick="nthreads=16 meanappendsize=1k" ;;
    quick/oltp) quick="nshadows=20 ndbwriters=2" ;;
    quick/videoserver) quick="filesize=32m nthreads=8 numactivevids=8 numpassivevids=8" ;;
    quick/webproxy) quick="nfiles=1000 nthreads=16" ;;
    *) echo "fsbench-filebench: bad --file-set=$file_set" >&2; exit 2 ;;
esac

fsbench_workdir

# $dir is relative (filebench's lexer mangles many path characters); filebench runs in $work
sed_script='s/^\([[:space:]]*set[[:space:]]*\$dir[[:space:]]*=\).*/\1fsbench-filebench/'
sed_script="$sed_script;s/^\([[:space:]]*set[[:space:]]*\$runtime[[:space:]]*=\).*/\1$runtime/"
sed_script="$sed_script;/^[[:space:]]*\(run\|psrun\)\([[:space:]].*\)\{0,1\}$/d"
for assignment in $quick; do
    name="${assignment%%=*}"; value="${assignment#*=}"
    if [ "$name" = filesize-mean ]; then
        sed_script="$sed_script;/^[[:space:]]*set[[:space:]]*\$filesize[[:space:]]*=/s/mean:[0-9]*/mean:$value/"
    else
        sed_script="$sed_script;s/^\([[:space:]]*set[[:space:]]*\$$name[[:space:]]*=\).*/\1$value/"
    fi
done
# the file sets made first, unmeasured (the stock text with `create files` in place of its run);
# the measured text reuses them (`reuse` on every fileset), as fsbench's pytest face runs it
sed "$sed_script" "$stock" > "$work/$personality-stock.f" || exit 1
{ cat "$work/$personality-stock.f"; echo "create files"; } > "$work/$personality-create.f" || exit 1
reuse='/^[[:space:]]*define[[:space:]]\{1,\}fileset/{s/[[:space:]]*,[[:space:]]*reuse\([[:space:]]*=[[:space:]]*[^,[:space:]]*\)\{0,1\}//g;s/[[:space:]]*$/,reuse/;}'
{ sed "$reuse" "$work/$personality-stock.f"; echo "run $runtime"; } > "$work/$personality.f" || exit 1

cd "$work" || exit 1
setarch "$(uname -m)" -R "$FILEBENCH" -f "$work/$personality-create.f" > "$work/create.out" 2>&1 ||
    { cat "$work/create.out"; echo "fsbench-filebench: making the file sets failed" >&2; exit 1; }
# the measured run starts from storage, not from the page cache the file sets were just written to
sync
echo 3 > /proc/sys/vm/drop_caches ||
    { echo "fsbench-filebench: cannot drop the page cache (not root?); the run would read the file sets from memory" >&2; exit 1; }
setarch "$(uname -m)" -R "$FILEBENCH" -f "$work/$personality.f" > "$work/filebench.out" 2>&1
status=$?
cat "$work/filebench.out"
# every file set the run populated was made by the preparation (Filebench says it reused it)
created="$(awk '/ populated: / { sub(/:$/, "", $2); made[$2] = 1 }
                / Reusing existing .* tree$/ { reused[$4] = 1 }
                END { for (name in made) if (!(name in reused)) print name }' "$work/filebench.out")"
if [ -n "$created" ]; then
    echo "fsbench-filebench: file set $created was created inside the measured run, not reused" >&2
    status=1
fi
# filebench's mb/s are MiB/s
awk '/IO Summary:/ { for (i = 1; i <= NF; i++) if ($i ~ /mb\/s$/) { v = $i; sub(/mb\/s$/, "", v);
     printf "fsbench-filebench throughput: %.2f MB/s\n", v * 1.048576 } }' "$work/filebench.out"
grep -q "IO Summary:" "$work/filebench.out" || status=1

fsbench_tool_version "$FILEBENCH_VERSION"
exit "$status"
SCRIPT
chmod +x fsbench-filebench
