#!/usr/bin/env bash
# Real programs nobody here wrote, under `tlsan run`, against their native runs: the same
# standard output, the same standard error (less tlsan run's own summary line), the same exit
# status, the same files left in their directory (names, types, sizes and, where the program
# is deterministic, bytes), the same descriptors, and no finding.
#
# A workload named with `opts=OPTIONS` runs under `tlsan run --options OPTIONS` instead of the
# defaults: sample_rate=1 serves every block of up to a page from a guarded page of its own,
# the shim's most intrusive mode.
#
# Each workload runs twice in the same directory, so that absolute paths written by the
# program (git, cmake) are equal: natively, then, after the directory is laid out again from
# scratch, under the shim. A program missing from the machine is skipped with its name.
# Usage: real.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup real.sh "$@"
unset TLSAN_OPTIONS
export TZ=UTC
# Tests that write temporary files find them here, not in the workload's directory.
mkdir -p "$tmp/tmpdir"
export TMPDIR=$tmp/tmpdir
work=$tmp/w
skipped=()

have() { command -v "$1" >/dev/null 2>&1 || { skipped+=("$1"); return 1; }; }

# What a directory holds: one line per entry (path, type, size), and a digest of each
# regular file that is not in the space-separated glob list $volatile (files whose bytes
# depend on time or on random names even natively).
volatile=""
snapshot() {
    (cd "$work" && find . -mindepth 1 -printf '%P %y %s\n' | LC_ALL=C sort) >"$1.list"
    (cd "$work" && find . -type f -printf '%P\n' | LC_ALL=C sort | while IFS= read -r f; do
        skip=0
        for g in $volatile; do
            # shellcheck disable=SC2254
            case "$f" in $g) skip=1 ;; esac
        done
        [ "$skip" = 1 ] && continue
        printf '%s %s\n' "$(sha256sum <"$f" | cut -c1-16)" "$f"
    done) >"$1.sums"
    # sizes of volatile files may differ too: keep only their names in the listing
    if [ -n "$volatile" ]; then
        awk -v vol="$volatile" 'BEGIN { n = split(vol, g, " ") }
            { keep = $0
              for (i = 1; i <= n; i++) {
                  re = g[i]; gsub(/\./, "\\.", re); gsub(/\*/, ".*", re); gsub(/\?/, ".", re)
                  if ($1 ~ ("^" re "$")) { keep = $1 " " $2; break }
              }
              print keep }' "$1.list" >"$1.list2" && mv "$1.list2" "$1.list"
    fi
}

# compare NAME PREPARE WORK: PREPARE (a shell function) lays out $work before each of the
# two runs; WORK (a shell function) runs inside $work in a fresh bash, natively and under
# `tlsan run`, so that the shell is watched too.
compare() {
    local name=$1 prepare=$2 run=("$bin" run)
    [ -z "${opts:-}" ] || { name="$name, $opts"; run+=(--options "$opts"); }
    set -- bash -c "$(declare -f "$3"); $3"
    rm -rf "$work" && mkdir -p "$work" && (cd "$work" && "$prepare") || {
        bad "$name: preparing the directory failed"
        return
    }
    (cd "$work" && "$@") >"$tmp/n.out" 2>"$tmp/n.err"
    local nrc=$?
    snapshot "$tmp/n"
    rm -rf "$work" && mkdir -p "$work" && (cd "$work" && "$prepare")
    (cd "$work" && "${run[@]}" -- "$@") >"$tmp/s.out" 2>"$tmp/s.err"
    local src=$?
    snapshot "$tmp/s"
    # tlsan run's summary is its last line on stderr; everything before it is the program's.
    local summary
    summary=$(tail -n 1 "$tmp/s.err")
    sed '$d' "$tmp/s.err" >"$tmp/s.err.prog"
    if [ "$nrc" = "$src" ]; then ok; else bad "$name: exit status $src under tlsan, $nrc natively"; fi
    expect_same_file "$tmp/n.out" "$tmp/s.out" "$name: stdout differs"
    expect_same_file "$tmp/n.err" "$tmp/s.err.prog" "$name: stderr differs"
    expect_same_file "$tmp/n.list" "$tmp/s.list" "$name: the directory holds other files"
    expect_same_file "$tmp/n.sums" "$tmp/s.sums" "$name: files have other bytes"
    expect_in "$summary" "tlsan: run: no findings" "$name: tlsan run's summary"
}

# ---- workloads ----

no_files() { :; }

data_file() {
    # 4 MiB of deterministic, compressible text
    awk 'BEGIN { for (i = 0; i < 120000; i++) printf "%08d line %d of the test data %x\n", (i * 7919) % 100003, i, i * 31 }' >data.txt
}

# CPython's own tests, among them the one that needs the first free descriptor to be 3.
# `--` after the run: each test's output is deterministic; the timing line is not.
python_tests() {
    /usr/bin/python3 -m unittest -q test.test_json test.test_bisect test.test_heapq \
        test.test_subprocess.POSIXProcessTestCase.test_pass_fds_redirected \
        test.test_subprocess.POSIXProcessTestCase.test_pass_fds \
        test.test_subprocess.POSIXProcessTestCase.test_close_fds 2>&1 |
        sed -E 's/^Ran ([0-9]+) tests? in [0-9.]+s$/Ran \1 tests/'
}
if /usr/bin/python3 -c 'import test.test_json' 2>/dev/null; then
    compare "python3 unittest" no_files python_tests
else
    skipped+=("python3's test package (libpython3.11-testsuite)")
fi

python_fds() {
    /usr/bin/python3 -c '
import os
print("fds", sorted(int(f) for f in os.listdir("/proc/self/fd")))
fd = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644)
print("first open", fd)
os.write(fd, b"x" * 100)
os.close(fd)
r, w = os.pipe()
print("pipe", r, w)
'
}
have /usr/bin/python3 && compare "python3 descriptors" no_files python_fds
have /usr/bin/python3 && opts=sample_rate=1 compare "python3 descriptors" no_files python_fds

# bash lists its own descriptors with a glob (a child listing them would race with bash
# closing a pipeline's pipes), before and after opening one of its own.
bash_fds() {
    fds() { for f in /proc/$$/fd/*; do printf '%s ' "${f##*/}"; done; echo; }
    fds; exec 3>out3; echo hi >&3; fds
}
compare "bash descriptors" no_files bash_fds
opts=sample_rate=1 compare "bash descriptors" no_files bash_fds

# Failing programs keep their status: an exit status, a signal death, an uncaught exception.
# (Each in a group with its own stderr: bash's "Killed" line names the PID.)
failing_work() {
    false
    echo "false $?"
    /usr/bin/python3 -c 'import sys; sys.exit(3)'
    echo "sys.exit $?"
    { /usr/bin/python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'; echo "SIGKILL $?"; } 2>/dev/null
    { sh -c 'kill -SEGV $$'; echo "SIGSEGV $?"; } 2>/dev/null
    { /usr/bin/python3 -c 'import os; os.abort()'; echo "abort $?"; } 2>/dev/null
    /usr/bin/python3 -c 'raise ValueError("no")'
    echo "exception $?"
    ls /nonexistent
    echo "ls $?"
    sh -c 'exit 255'
    echo "exit 255 $?"
}
if have /usr/bin/python3; then
    compare "failing programs" no_files failing_work
    # what the native run printed, so that the comparison cannot pass on two wrong outputs
    expect_eq "$(tr '\n' ',' <"$tmp/n.out")" "false 1,sys.exit 3,SIGKILL 137,SIGSEGV 139,abort 134,exception 1,ls 2,exit 255 255," \
        "failing programs: their native statuses"
fi
have /usr/bin/python3 && opts=sample_rate=1 compare "failing programs" no_files failing_work

node_workers() {
    node -e '
const { Worker, isMainThread } = require("worker_threads");
const fs = require("fs");
console.log("fds", fs.readdirSync("/proc/self/fd").map(Number).sort((a, b) => a - b).slice(0, 3));
const code = `const { parentPort, workerData } = require("worker_threads");
let h = 0; const a = [];
for (let i = 0; i < 200000; i++) { a.push({ i, s: "v" + i }); h = (h * 31 + i) % 1000003; }
parentPort.postMessage([workerData, h, a.length]);`;
let done = 0; const out = [];
for (let w = 0; w < 4; w++) {
  const t = new Worker(code, { eval: true, workerData: w });
  t.on("message", (m) => { out[m[0]] = m; if (++done === 4) { console.log(JSON.stringify(out));
    fs.writeFileSync("result.json", JSON.stringify(out)); } });
}'
}
have node && compare "node worker threads" no_files node_workers
have node && opts=sample_rate=1 compare "node worker threads" no_files node_workers

git_repo() {
    mkdir src && for i in $(seq 1 40); do printf 'file %d\n%s\n' "$i" "$(seq "$i" $((i * 50)))" >"src/f$i.txt"; done
}
git_work() {
    export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t \
        GIT_COMMITTER_EMAIL=t@example.invalid GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' \
        GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' GIT_CONFIG_NOSYSTEM=1 HOME=$PWD
    git init -q -b main . && git add -A && git commit -q -m one &&
        for i in 1 2 3; do echo "change $i" >>src/f1.txt && git commit -q -am "change $i"; done &&
        git -c pack.threads=1 gc -q && git log --format='%H %s' && git status --porcelain && git count-objects -v
}
# git gc packs deterministically with one thread (its delta search with several is not);
# its logs and index carry times.
have git && volatile=".git/index .git/logs/* .git/gc.log" compare "git init/add/commit/gc" git_repo git_work
have git && volatile=".git/index .git/logs/* .git/gc.log" opts=sample_rate=1 \
    compare "git init/add/commit/gc" git_repo git_work

cmake_project() {
    mkdir proj
    cat >proj/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(demo C)
add_library(stats STATIC stats.c)
add_executable(demo main.c)
target_link_libraries(demo stats m)
EOF
    cat >proj/stats.c <<'EOF'
#include <math.h>
#include <stdlib.h>
double mean(const double *v, int n) { double s = 0; for (int i = 0; i < n; i++) s += v[i]; return s / n; }
double stdev(const double *v, int n) { double m = mean(v, n), s = 0; for (int i = 0; i < n; i++) s += (v[i] - m) * (v[i] - m); return sqrt(s / n); }
EOF
    cat >proj/main.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
double mean(const double *v, int n);
double stdev(const double *v, int n);
int main(void) {
    int n = 100000; double *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++) v[i] = (i * 2654435761u) % 1000 / 10.0;
    printf("mean %.6f stdev %.6f\n", mean(v, n), stdev(v, n));
    free(v); return 0;
}
EOF
}
cmake_build() {
    cmake -S proj -B b -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build b -j2 >/dev/null &&
        b/demo && sha256sum b/demo b/libstats.a | cut -c1-16
}
# CMake's configure logs and its try-compile scratch names vary from run to run natively.
have cmake && have cc && volatile="b/CMakeFiles/CMakeOutput.log b/CMakeFiles/CMakeError.log b/CMakeFiles/*.log b/CMakeFiles/CMakeScratch* b/CMakeFiles/CMakeTmp*" \
    compare "cmake + gcc build" cmake_project cmake_build

sqlite_work() {
    sqlite3 db.sqlite <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO t SELECT x, 'name' || x, x * 0.5 FROM c;
CREATE INDEX tv ON t(v);
SELECT count(*), sum(v), min(name), max(name) FROM t;
SELECT name FROM t WHERE v BETWEEN 100 AND 101 ORDER BY v;
DELETE FROM t WHERE id % 3 = 0;
VACUUM;
SELECT count(*), total(v) FROM t;
EOF
}
have sqlite3 && compare "sqlite3" no_files sqlite_work
have sqlite3 && opts=sample_rate=1 compare "sqlite3" no_files sqlite_work

# A forking program: a shell that starts 300 short-lived children, and xargs running two at
# a time.
fork_work() {
    for i in $(seq 1 300); do (printf '%d\n' "$i" | sha256sum | cut -c1-8); done | sha256sum
    seq 1 200 | xargs -P 2 -n 10 sh -c 'echo $# >>counts.txt' sh
    sort counts.txt | uniq -c
}
compare "forking shell and xargs -P" no_files fork_work

# Threaded programs: xz and zstd with two threads, sort in parallel, on the same data.
threaded_work() {
    xz -T2 -6 -k data.txt && zstd -q -T2 -19 data.txt -o data.zst && sort --parallel=2 -S 2M data.txt | sha256sum &&
        xz -dc data.txt.xz | cmp - data.txt && zstd -qdc data.zst | cmp - data.txt && ls -l data.txt.xz data.zst | awk '{ print $5, $9 }'
}
have xz && have zstd && compare "threaded xz, zstd, sort" data_file threaded_work

perl_work() { perl -e 'my %h; $h{$_ % 977} .= "x$_" for 1 .. 200000; print join(",", map { length $h{$_} } sort { $a <=> $b } keys %h), "\n"' | sha256sum; }
have perl && compare "perl" no_files perl_work
have perl && opts=sample_rate=1 compare "perl" no_files perl_work

[ "${#skipped[@]}" -eq 0 ] || echo "SKIP: not on this machine: ${skipped[*]}"
echo "real.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
