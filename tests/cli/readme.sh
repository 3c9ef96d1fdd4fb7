#!/usr/bin/env bash
# README.md's shell sessions, run as a newcomer with a plain clone would run them. A session
# is a ``` block holding lines that start with "$ ": each such line is a command, and the
# lines after it, up to the next "$ " line or the end of the block, are its output exactly
# (standard output and standard error together, as a terminal shows them; the exit status
# is not shown, so not compared). The commands of a block run in order, each in its own
# bash, from the top of the source tree with the build directory as build/, so a command
# may use what an earlier one of its block wrote. A block that names ../shared (the team's
# corpus, absent from a public clone) is skipped, with a note, when the corpus is not there.
# Fails when an output differs, or when fewer than 2 sessions ran: the README's examples
# would then go untested.
#
# The top of the tree is a directory made here of symbolic links, one per entry of the
# source tree, and build/, a directory of links to the entries of this build (whatever its
# name: build-asan too), beside a link ../shared to the corpus. So a path the README prints
# (build/..., ../shared/...) is the path the command was given, and a file a session writes
# at the top or in build/ stays in the temporary directory, not in the clone or the build.
# Usage: readme.sh TLSAN_BIN SHARED_DIR SOURCE_DIR (TLSAN_SHARED_DIR overrides SHARED_DIR;
# the build directory is TLSAN_BIN's)
set -u -o pipefail
usage="usage: readme.sh TLSAN_BIN SHARED_DIR SOURCE_DIR"
bin=${1:?$usage}
shared=${TLSAN_SHARED_DIR:-${2:?$usage}}
src=${3:?$usage}
export LC_ALL=C
# The README's sessions are shown without options in the environment.
unset TLSAN_OPTIONS
build=$(cd "$(dirname "$bin")" && pwd) || exit 1
readme=$src/README.md
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/top" "$tmp/sessions"
for entry in "$src"/* "$src"/.[!.]*; do
    [ -e "$entry" ] || continue
    case "$(basename "$entry")" in build) continue ;; esac
    ln -s "$entry" "$tmp/top/$(basename "$entry")"
done
mkdir "$tmp/top/build"
for entry in "$build"/* "$build"/.[!.]*; do
    [ -e "$entry" ] || continue
    ln -s "$entry" "$tmp/top/build/$(basename "$entry")"
done
have_shared=0
if [ -d "$shared" ]; then
    ln -s "$shared" "$tmp/shared"
    have_shared=1
fi

# Split the README into sessions/B.C.cmd (the command, without "$ "), B.C.want (its output)
# and B.C.line (its line in README.md), for block B and command C.
awk -v dir="$tmp/sessions" '
    /^```/ { inblock = !inblock; cur = ""; if (inblock) { block++; cmd = 0 } next }
    inblock && /^\$ / {
        cmd++
        cur = dir "/" sprintf("%03d.%03d", block, cmd)
        print substr($0, 3) > (cur ".cmd")
        printf "" > (cur ".want")
        print NR > (cur ".line")
        next
    }
    inblock && cur != "" { print > (cur ".want") }
' "$readme" || exit 1

passed=0
failed=0
ran=0
skipped=0
for first in "$tmp"/sessions/*.001.cmd; do
    [ -e "$first" ] || break
    block=$(basename "$first" .001.cmd)
    line=$(cat "$tmp/sessions/$block.001.line")
    if grep -q '\.\./shared' "$tmp/sessions/$block".*.cmd && [ "$have_shared" = 0 ]; then
        echo "note: no shared corpus at $shared; the README session at line $line, which uses ../shared, did not run"
        skipped=$((skipped + 1))
        continue
    fi
    ran=$((ran + 1))
    for cmdfile in "$tmp/sessions/$block".*.cmd; do
        stem=${cmdfile%.cmd}
        cmd=$(cat "$cmdfile")
        line=$(cat "$stem.line")
        (cd "$tmp/top" && bash -c "$cmd") </dev/null >"$stem.got" 2>&1
        rc=$?
        if cmp -s "$stem.want" "$stem.got"; then
            passed=$((passed + 1))
            echo "ok: README.md:$line: \$ $cmd (exit status $rc)"
        else
            failed=$((failed + 1))
            echo "FAIL: README.md:$line: \$ $cmd (exit status $rc): its output differs from the README's (- README, + now):"
            diff -u "$stem.want" "$stem.got" | tail -n +3
        fi
    done
done

if [ "$ran" -lt 2 ]; then
    echo "FAIL: $ran README sessions ran ($skipped skipped), want at least 2"
    failed=$((failed + 1))
fi
echo "readme.sh: $ran sessions run, $skipped skipped; $passed commands passed, $failed failed"
[ "$failed" = 0 ]
