#!/usr/bin/env bash
# bench/heapbugs_matrix.sh [BUILD_DIR]: which heap bugs tlsan, AddressSanitizer and Valgrind
# memcheck find (docs/runtime.md, issue 11).
#
# Runs every mode of the heap-bug programs of the shim's tests (tests/shim/prog_heapbugs.c,
# and tests/shim/prog_heapbugs_cxx.cc when it is there; the modes are read from their `modes[]`
# tables, so a mode added there is measured here) three ways:
#   - tlsan: the plain test program (BUILD_DIR/tests/shim/prog_heapbugs*) under `tlsan run`,
#     default options, and again with every block sampled (sample_rate=1: each block gets a
#     page of its own beside a guard page, so a bad access faults at its instruction; the
#     defaults sample one allocation in 1000, this column shows what that one gets);
#   - ASan: the same source built here with -fsanitize=address at the tests' -O1 -g,
#     ASAN_OPTIONS=detect_leaks=0 (leaks are no class of this table);
#   - Valgrind: the plain program under valgrind --tool=memcheck.
# A tool found the bug when it printed an error report (tlsan: "ERROR: tlsan:", ASan:
# "ERROR: AddressSanitizer", Valgrind: an error counted by --error-exitcode). It named the
# bad access when one of its report's frames is at the line of the faulting statement: that
# line is the first program frame of ASan's first stack (the access stack), or Valgrind's when
# ASan missed. Prints a Markdown table: one row per mode, each cell "found, access line",
# "found" (reported, but not at the access: at the free, at eviction or at exit) or "missed",
# with the first report's kind.
#
# Environment: TLSAN_MATRIX_TIMEOUT (seconds per run, 120).
set -uo pipefail

build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
limit=${TLSAN_MATRIX_TIMEOUT:-120}
tlsan=$build/tlsan
for f in "$tlsan" "$build/tests/shim/prog_heapbugs"; do
    if [[ ! -x $f ]]; then
        echo "bench/heapbugs_matrix.sh: $f not found; build first: cmake -S . -B $build && cmake --build $build -j2" >&2
        exit 2
    fi
done
for tool in valgrind cc c++; do
    command -v "$tool" >/dev/null || { echo "bench/heapbugs_matrix.sh: $tool not installed" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The programs: NAME SOURCE COMPILER.
programs=()
programs+=("prog_heapbugs $src/tests/shim/prog_heapbugs.c cc")
if [[ -f $src/tests/shim/prog_heapbugs_cxx.cc && -x $build/tests/shim/prog_heapbugs_cxx ]]; then
    programs+=("prog_heapbugs_cxx $src/tests/shim/prog_heapbugs_cxx.cc c++")
fi

# modes_of SOURCE: the mode names of its modes[] table ({"name", function}), without the
# clean run "correct".
modes_of() {
    grep -oE '\{"[^"]+", *[A-Za-z_][A-Za-z0-9_]*\}' "$1" | sed -E 's/^\{"([^"]+)".*/\1/' |
        grep -vx correct
}

# first_line FILE PROGRAM: the first "PROGRAM.c:LINE" or "PROGRAM.cc:LINE" in FILE (its line).
first_line() {
    grep -oE "$2\\.cc?:[0-9]+" "$1" | head -1 | cut -d: -f2
}
# names_line FILE PROGRAM LINE: whether FILE has a frame at PROGRAM's source LINE.
names_line() {
    [[ -n $3 ]] && grep -qE "$2\\.cc?:$3([^0-9]|\$)" "$1"
}

# cell FOUND NAMED KIND
cell() {
    if [[ $1 != 1 ]]; then
        echo "missed"
    elif [[ $2 == 1 ]]; then
        echo "**found, access line** ($3)"
    else
        echo "found ($3)"
    fi
}

echo "## Heap bugs found, $(date -u +%Y-%m-%d): tlsan / AddressSanitizer / Valgrind memcheck"
echo
echo "tlsan $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?') (default options), $(cc --version | head -1) -fsanitize=address -O1, $(valgrind --version)"
echo
echo "| program | mode | tlsan | tlsan, sample_rate=1 | ASan | Valgrind |"
echo "|---|---|---|---|---|---|"
totals=(0 0 0 0 0 0 0 0)
rows=0
for p in "${programs[@]}"; do
    read -r name source compiler <<<"$p"
    plain=$build/tests/shim/$name
    asan=$tmp/$name-asan
    if ! "$compiler" -O1 -g -fno-omit-frame-pointer -fsanitize=address -I"$src/include" \
        "$source" -o "$asan" 2>"$tmp/cc.err"; then
        echo "bench/heapbugs_matrix.sh: cannot build $source with -fsanitize=address:" >&2
        cat "$tmp/cc.err" >&2
        exit 1
    fi
    while read -r mode; do
        # ASan
        ASAN_OPTIONS=detect_leaks=0 timeout "$limit" "$asan" "$mode" >/dev/null 2>"$tmp/asan" </dev/null
        a_found=0
        grep -q "ERROR: AddressSanitizer" "$tmp/asan" && a_found=1
        # "attempting double-free on", "attempting free on address which was not malloc()-ed"
        a_kind=$(grep -m1 -oE "ERROR: AddressSanitizer: (attempting )?[a-z-]+" "$tmp/asan" | awk '{print $NF}')
        # The access stack is ASan's first: its first frame in the program.
        a_line=$(sed -n '/ERROR: AddressSanitizer/,/^$/p' "$tmp/asan" >"$tmp/asan.first"; first_line "$tmp/asan.first" "$name")
        # Valgrind
        timeout "$limit" valgrind -q --tool=memcheck --error-exitcode=99 "$plain" "$mode" \
            >/dev/null 2>"$tmp/vg" </dev/null
        v_rc=$?
        v_found=0
        { [[ $v_rc == 99 ]] || grep -qE "^==[0-9]+== (Invalid|Mismatched)" "$tmp/vg"; } && v_found=1
        v_kind=$(grep -m1 -oE "^==[0-9]+== (Invalid [a-z]+|Mismatched [a-z/()]+|Conditional jump|Use of uninitialised)" "$tmp/vg" |
            sed -E 's/^==[0-9]+== //')
        v_line=$(first_line "$tmp/vg" "$name")
        # tlsan, defaults (t_) and every block sampled (s_)
        timeout "$limit" "$tlsan" run -- "$plain" "$mode" >/dev/null 2>"$tmp/tlsan" </dev/null
        t_found=0
        grep -q "ERROR: tlsan:" "$tmp/tlsan" && t_found=1
        t_kind=$(grep -m1 -oE "ERROR: tlsan: [a-z-]+" "$tmp/tlsan" | awk '{print $3}')
        timeout "$limit" "$tlsan" run --options sample_rate=1 -- "$plain" "$mode" >/dev/null \
            2>"$tmp/sampled" </dev/null
        s_found=0
        grep -q "ERROR: tlsan:" "$tmp/sampled" && s_found=1
        s_kind=$(grep -m1 -oE "ERROR: tlsan: [a-z-]+" "$tmp/sampled" | awk '{print $3}')
        # The reference line of the bad access.
        ref=$a_line
        [[ $a_found == 1 ]] || ref=$v_line
        [[ $v_found == 1 || $a_found == 1 ]] || ref=""
        t_named=0 s_named=0 a_named=0 v_named=0
        names_line "$tmp/tlsan" "$name" "$ref" && t_named=1
        names_line "$tmp/sampled" "$name" "$ref" && s_named=1
        [[ -n $ref && $a_line == "$ref" ]] && a_named=1
        [[ -n $ref && $v_line == "$ref" ]] && v_named=1
        v_cell=$(cell $v_found $v_named "$v_kind")
        # Valgrind stops a program that calls a function it does not emulate (pvalloc).
        v_abort=$(grep -m1 -oE "Program aborting because of call to [A-Za-z_]+" "$tmp/vg" | awk '{print $NF}')
        [[ $v_found == 0 && -n $v_abort ]] && v_cell="not run (Valgrind aborts at \`$v_abort\`)"
        echo "| $name | \`$mode\` | $(cell $t_found $t_named "$t_kind") | $(cell $s_found $s_named "$s_kind") | $(cell $a_found $a_named "$a_kind") | $v_cell |"
        rows=$((rows + 1))
        totals[0]=$((totals[0] + t_found))
        totals[1]=$((totals[1] + t_found * t_named))
        totals[2]=$((totals[2] + s_found))
        totals[3]=$((totals[3] + s_found * s_named))
        totals[4]=$((totals[4] + a_found))
        totals[5]=$((totals[5] + a_found * a_named))
        totals[6]=$((totals[6] + v_found))
        totals[7]=$((totals[7] + v_found * v_named))
    done < <(modes_of "$source")
done
echo "| | **found / access line named, of $rows** | ${totals[0]} / ${totals[1]} | ${totals[2]} / ${totals[3]} | ${totals[4]} / ${totals[5]} | ${totals[6]} / ${totals[7]} |"
