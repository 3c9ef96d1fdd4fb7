#!/usr/bin/env bash
# log_path=PATH is opened at a process's first report, never before (as AddressSanitizer):
# a program that reports nothing gets no PATH.PID file and the descriptors it has natively
# (under `ulimit -n 64` it opens as many files); one that reports writes PATH.PID with the
# report, and stderr keeps only what the program wrote.
# Usage: log_path.sh TLSAN_BIN [SHARED_DIR] [SOURCE_DIR]
set -u -o pipefail
. "$(dirname "$0")/../shim/lib/common.bash"
cli_shim_setup log_path.sh "$@"
heap=$build/tests/shim/prog_heap
[ -x "$heap" ] || { echo "SKIP: needs prog_heap"; exit 77; }
mkdir "$tmp/logs"
log_opts="log_path=$tmp/logs/log"

# A clean program: the descriptors of a shell listing its own, natively and preloaded.
list='ls /proc/self/fd; ls /proc/$$/fd'
native=$(sh -c "$list" 2>&1)
expect_eq "$(TLSAN_OPTIONS=$log_opts LD_PRELOAD=$shim sh -c "$list" 2>&1)" "$native" \
    "a clean shell: the native descriptors"
expect_eq "$(ls -A "$tmp/logs")" "" "a clean shell and its ls: no log file"
# Under a limit of 64 descriptors (soft and hard, set before the program starts) a program
# opens as many files as natively.
fill='n=0; while [ $n -lt 100 ] && eval "exec $((n + 3))</dev/null" 2>/dev/null; do n=$((n + 1)); done; echo $n'
limited() { bash -c 'ulimit -n 64 && exec "$@"' bash "$@"; }
native=$(limited bash -c "$fill" 2>/dev/null)
expect_eq "$(TLSAN_OPTIONS=$log_opts LD_PRELOAD=$shim limited bash -c "$fill" 2>/dev/null)" "$native" \
    "ulimit -n 64: as many files as natively"
expect_eq "$(ls -A "$tmp/logs")" "" "ulimit -n 64: no log file"

# A program with a finding: its report in log.PID, nothing of the shim's on stderr.
TLSAN_OPTIONS=$log_opts:halt_on_error=0 LD_PRELOAD=$shim "$heap" double >"$tmp/out" 2>"$tmp/err"
expect_eq "$?" 1 "a double free: the findings' exit status"
expect_eq "$(cat "$tmp/err")" "" "a double free: nothing on stderr"
expect_eq "$(ls "$tmp/logs" | grep -cE '^log\.[0-9]+$'):$(ls -A "$tmp/logs" | wc -l)" "1:1" "a double free: one log.PID"
expect_eq "$(grep -c '^SUMMARY: tlsan: double-free of a ' "$tmp"/logs/log.*)" 1 "a double free: the report in the log"

echo "log_path.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
