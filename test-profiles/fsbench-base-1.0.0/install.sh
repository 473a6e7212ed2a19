#!/bin/sh
# Installs fsbench-run.sh, the preamble every fsbench profile's run script sources
# (. "$TEST_EXTENDS/fsbench-run.sh"): the profile's settings, the log, the argument loop, the
# run's work directory and its removal, and the exit status PTS reads. PTS installs this profile
# before the profiles that extend it.
cat > fsbench-run.sh <<'PREAMBLE'
# Sourced by a fsbench profile's run script after it sets fsbench_name (e.g. fsbench-dd).
set -u
. "$HOME/$fsbench_name.conf"
[ -z "${LOG_FILE:-}" ] || exec >> "$LOG_FILE" 2>&1

# fsbench_arguments "NAME..." ARGUMENT...: each --NAME=VALUE sets the variable NAME (dashes as
# underscores); any other argument is refused (exit 2), naming the ones expected
fsbench_arguments() {
    fsbench_names=$1
    shift
    for fsbench_arg in "$@"; do
        fsbench_known=""
        for fsbench_option in $fsbench_names; do
            case "$fsbench_arg" in
                --"$fsbench_option"=*)
                    eval "$(echo "$fsbench_option" | tr - _)=\${fsbench_arg#*=}"
                    fsbench_known=1
                    break ;;
            esac
        done
        if [ -z "$fsbench_known" ]; then
            echo "$fsbench_name: unknown argument $fsbench_arg; expected$(printf ' --%s=' $fsbench_names)" >&2
            exit 2
        fi
    done
}

# fsbench_workdir: makes $work, this run's own directory ($FSBENCH_PTS_TARGET, else the install
# directory), removed at exit together with the files in $fsbench_remove (paths without spaces);
# the run's exit status goes to test-exit-status, where PTS reads it
fsbench_workdir() {
    work="${FSBENCH_PTS_TARGET:-$HOME}/$fsbench_name.$$"
    fsbench_remove=""
    trap fsbench_cleanup EXIT
    trap 'exit 130' INT TERM
    mkdir -p "$work" || exit 1
}

fsbench_cleanup() {
    status=$?
    rm -rf "$work"
    [ -z "$fsbench_remove" ] || rm -f $fsbench_remove
    echo "$status" > "$HOME/test-exit-status"
}

# fsbench_tool_version VERSION: with the system's tool (SYSTEM_TOOL=1 in the profile's settings),
# the version PTS reports as the result's AppVersion
fsbench_tool_version() {
    [ "$SYSTEM_TOOL" != 1 ] || echo "$1" > "$HOME/pts-test-version"
}
PREAMBLE
