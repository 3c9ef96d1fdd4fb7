#!/usr/bin/env bash
# The heap checks of libtlsan.so end to end: prog_heap runs each bug under LD_PRELOAD and the
# report must name the kind, the offset, the expected and found bytes, the stacks (frame #0
# in main of prog_heap), the SUMMARY line, and the exit status (exitcode); the clean mode
# must print nothing and keep the program's own status; a float read from a freed block is
# a NaN.
# Usage: heap.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup heap.sh "$@"
shim_prog prog_heap

expect_not_in() {
    case "$1" in
        *"$2"*) bad "$3: '$2' unexpectedly in: $1" ;;
        *) ok ;;
    esac
}
# expect_count TEXT PATTERN N WHAT: PATTERN (grep -E) matches N lines of TEXT.
# expect_match TEXT REGEX WHAT: some line of TEXT matches REGEX (grep -E).
expect_match() {
    if printf '%s\n' "$1" | grep -qE -- "$2"; then ok; else bad "$3: no line matches '$2' in: $1"; fi
}

base="trace=0"
hex='0x[0-9a-f]+'
# line_after ANCHOR TEXT: the number of the first line of prog_heap.c holding TEXT at or after
# the line holding ANCHOR.
line_after() {
    awk -v a="$1" -v t="$2" 'index($0, a) { on = 1 } on && index($0, t) { print NR; exit }' \
        "$src/tests/shim/prog_heap.c"
}
# expect_frame0 TEXT TITLE LINE WHAT: frame #0 of the stack under "TITLE:" is main at
# prog_heap.c:LINE, symbolized in the process (function, file, line, module+offset).
expect_frame0() {
    local frame
    frame=$(printf '%s\n' "$1" | sed -n "/^$2:\$/{n;p;}")
    expect_match "$frame" "^    #0 $hex in main\+0x[0-9a-f]+ at [^ ]*/tests/shim/prog_heap\.c:$3 \(.*/prog_heap\+0x[0-9a-f]+\)\$" "$4"
}

# Write after free, found at exit.
run_prog "$base" waf
expect_rc 1 "waf"
expect_in "$out" "waf done" "waf: the program ran to its end"
expect_match "$err" "^==[0-9]+==ERROR: tlsan: heap-write-after-free on address $hex at offset 8 of a 64-byte block at $hex\$" "waf headline"
expect_in "$err" "  the freed block changed while in quarantine (found at exit)" "waf: when"
expect_in "$err" "  bytes at offset 8 (16 shown):" "waf: offset line"
expect_in "$err" "    expected: fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f" "waf: expected bytes"
expect_in "$err" "    found:    41 41 41 41 fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f" "waf: found bytes"
expect_match "$err" "^allocated here:\$" "waf: alloc stack title"
expect_match "$err" "^freed here:\$" "waf: free stack title"
# Frame #0 of both stacks is main, at the malloc and at the free.
waf_alloc=$(line_after '"waf-evict") == 0) {' 'malloc(64)')
waf_free=$(line_after '"waf-evict") == 0) {' 'free(p)')
expect_frame0 "$err" "allocated here" "$waf_alloc" "waf: allocated at prog_heap.c:$waf_alloc"
expect_frame0 "$err" "freed here" "$waf_free" "waf: freed at prog_heap.c:$waf_free"
expect_in "$err" "SUMMARY: tlsan: heap-write-after-free at offset 8 of a 64-byte block" "waf summary"
expect_count "$err" "^SUMMARY:" 1 "waf: one finding"
# The address in the headline is the block's plus 8.
addr=$(printf '%s\n' "$err" | sed -nE 's/.*on address (0x[0-9a-f]+) at offset.*block at (0x[0-9a-f]+)$/\1 \2/p')
read -r a b <<<"$addr"
if [ -n "${a:-}" ] && [ $((a - b)) = 8 ]; then ok; else bad "waf: address $a is not block $b + 8"; fi

# The exit status is the exitcode option.
run_prog "$base:exitcode=42" waf
expect_rc 42 "waf exitcode=42"

# Write after free, found when the block leaves a 1 MiB quarantine (inside a hook, where
# frames are symbolized too).
run_prog "$base:quarantine_mb=1" waf-evict
expect_rc 1 "waf-evict"
expect_in "$err" "(found when it left the quarantine)" "waf-evict: when"
expect_in "$err" "    found:    41 41 41 41 fe 7f" "waf-evict: found bytes"
expect_frame0 "$err" "allocated here" "$waf_alloc" "waf-evict: allocated at prog_heap.c:$waf_alloc"
expect_frame0 "$err" "freed here" "$waf_free" "waf-evict: freed at prog_heap.c:$waf_free"
expect_count "$err" "^SUMMARY: tlsan: heap-write-after-free at offset 8 of a 64-byte block\$" 1 "waf-evict summary"

# Without fills nothing is checked after free.
run_prog "$base:fill=0" waf
expect_rc 0 "waf fill=0"
expect_not_in "$err" "ERROR" "waf fill=0 silent"

# Overflow into the redzone: 3 bytes past the end of a 40-byte block.
run_prog "$base" overflow
expect_rc 1 "overflow"
expect_match "$err" "^==[0-9]+==ERROR: tlsan: heap-buffer-overflow on address $hex, 3 bytes past the end of a 40-byte block at $hex\$" "overflow headline"
expect_in "$err" "  the 16-byte redzone after the block changed (found when it was freed)" "overflow: redzone line"
expect_in "$err" "  bytes at 3 past the end (13 shown):" "overflow: offset line"
# malloc's blocks are 16-byte aligned: byte 43 of the block is at an odd address (7f).
expect_in "$err" "    expected: 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f" "overflow: expected bytes"
expect_in "$err" "    found:    55 fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f" "overflow: found bytes"
expect_in "$err" "SUMMARY: tlsan: heap-buffer-overflow 3 bytes past the end of a 40-byte block" "overflow summary"
expect_count "$err" "^SUMMARY:" 1 "overflow: one finding"
# A larger redzone: the whole redzone is shown up to 16 bytes.
run_prog "$base:redzone=64" overflow
expect_in "$err" "  the 64-byte redzone after the block changed" "overflow redzone=64"
expect_in "$err" "  bytes at 3 past the end (16 shown):" "overflow redzone=64: 16 shown"
# With the quarantine off the redzone is still checked.
run_prog "$base:quarantine_mb=0" overflow
expect_rc 1 "overflow quarantine_mb=0"
expect_in "$err" "SUMMARY: tlsan: heap-buffer-overflow 3 bytes past the end of a 40-byte block" "overflow quarantine_mb=0"

# Double free: reported, then the program aborts as glibc's free does (SIGABRT: 134).
run_prog "$base" double
expect_rc 134 "double: aborts as natively"
expect_not_in "$out" "double done" "double: stopped at the second free"
expect_count "$err" "^SUMMARY: tlsan: double-free of a 32-byte block\$" 1 "double: reported before the abort"
expect_in "$err" "still in quarantine; the process aborts here, as glibc would (halt_on_error=native)" "double: says it aborts"
# With halt_on_error=0: reported once, the second free ignored, the program ends.
run_prog "$base:halt_on_error=0" double
expect_rc 1 "double halt_on_error=0"
expect_in "$out" "double done" "double: the program ran to its end"
expect_in "$err" "still in quarantine; this free is ignored (halt_on_error=0)" "double: says the free is ignored"
expect_match "$err" "^==[0-9]+==ERROR: tlsan: double-free on address $hex \(a 32-byte block\)\$" "double headline"
expect_match "$err" "^freed again here:\$" "double: stack 1"
expect_match "$err" "^first freed here:\$" "double: stack 2"
expect_match "$err" "^allocated here:\$" "double: stack 3"
expect_in "$err" "SUMMARY: tlsan: double-free of a 32-byte block" "double summary"
expect_count "$err" "^SUMMARY:" 1 "double: one finding"
expect_frame0 "$err" "allocated here" "$(line_after '"double") == 0' 'malloc(32)')" "double: allocated"
expect_frame0 "$err" "first freed here" "$(line_after '"double") == 0' 'free(p)')" "double: first freed"
expect_frame0 "$err" "freed again here" "$(line_after '"double") == 0' 'free(sink)')" "double: freed again"

# halt_on_error: exit with exitcode right at the finding ("double done" never printed).
run_prog "$base:halt_on_error=1:exitcode=7" double
expect_rc 7 "double halt_on_error"
expect_not_in "$out" "double done" "double halt_on_error: stopped at once"
expect_count "$err" "^SUMMARY: tlsan: double-free" 1 "double halt_on_error: reported"

# Invalid free: an interior pointer and a stack address, both ignored with halt_on_error=0;
# by default the first aborts, as glibc's "free(): invalid pointer".
run_prog "$base" invalid
expect_rc 134 "invalid: aborts as natively"
expect_count "$err" "^SUMMARY: tlsan: invalid-free on address $hex\$" 1 "invalid: one report, then the abort"
run_prog "$base:halt_on_error=0" invalid
expect_rc 1 "invalid halt_on_error=0"
expect_in "$out" "invalid done" "invalid: the program ran to its end"
expect_count "$err" "^==[0-9]+==ERROR: tlsan: invalid-free on address $hex, which malloc did not return\$" 2 "invalid headlines"
expect_count "$err" "^SUMMARY: tlsan: invalid-free on address $hex\$" 2 "invalid summaries"
# The first is the block + 8 (the block itself is then freed cleanly).
expect_count "$err" "^SUMMARY:" 2 "invalid: exactly two findings"

# A float read from a freed block is the sentinel: NaN (f32 and f64).
run_prog "$base" nan
expect_rc 0 "nan"
if [ "$out" = "nan nan"$'\n'"nan" ] || [ "$out" = "-nan -nan"$'\n'"-nan" ]; then ok; else bad "nan: got '$out'"; fi
expect_not_in "$err" "ERROR" "nan: reading is no finding"
run_prog "$base:fill=0" nan
expect_not_in "$out" "nan" "nan fill=0: the old values"

# The clean program: silent, its own status, same output as without the shim.
run_prog "$base" clean
expect_rc 3 "clean"
if [ -z "$err" ]; then ok; else bad "clean: stderr not empty: $err"; fi
native=$("$prog" clean)
if [ "$out" = "$native" ]; then ok; else bad "clean: output '$out', natively '$native'"; fi
run_prog "$base:verbosity=1" clean
expect_rc 3 "clean verbosity=1"
expect_match "$err" "^==[0-9]+==tlsan: active \(quarantine_mb=8 fill=1 redzone=16 stack_depth=16 .* halt_on_error=native " "verbosity=1 start line"
expect_match "$err" "^==[0-9]+==tlsan: exit: 0 findings; [0-9]+ allocations" "verbosity=1 exit line"

# The memo of repeated stacks (x86-64): the clean mode's loop mallocs, reallocs and frees
# 1,000 times from three places; after the thread's first 64 captures and 32 sightings of each
# place, every capture is read back (1,900 at least: two places of three, should all three
# share one set of the memo's ways), from a fill for each place. stack_memo=0, or no stacks:
# none.
if [ "$(uname -m)" = x86_64 ]; then
    memo_line() {
        run_prog "$base:verbosity=2$1" clean
        printf '%s\n' "$err" | grep 'tlsan: exit: the memo of repeated stacks'
    }
    got=$(memo_line "")
    hits=$(printf '%s\n' "$got" | sed -nE 's/.*answered ([0-9]+) of .*/\1/p')
    fills=$(printf '%s\n' "$got" | sed -nE 's/.*from ([0-9]+) fills$/\1/p')
    if [ -n "$hits" ] && [ "$hits" -ge 1900 ] && [ "$hits" -le 3000 ] && [ "$fills" -ge 2 ] &&
        [ "$fills" -le 3 ]; then ok; else
        bad "memo: the clean loop: want 1,900 to 3,000 captures read back from 2 or 3 fills, got: $got"; fi
    for off in ":stack_memo=0" ":stack_depth=0"; do
        got=$(memo_line "$off")
        expect_match "$got" "answered 0 of this thread's captures, from 0 fills$" "memo: $off"
    done
fi

# log_path: the report goes to PATH.PID, stderr stays empty.
run_prog "$base:halt_on_error=0:log_path=$tmp/log" double
expect_rc 1 "log_path"
if [ -z "$err" ]; then ok; else bad "log_path: stderr not empty: $err"; fi
logs=("$tmp"/log.*)
if [ ${#logs[@]} = 1 ] && grep -q "^SUMMARY: tlsan: double-free of a 32-byte block" "${logs[0]}"; then
    ok
else bad "log_path: no report in $tmp/log.PID"; fi

# Options: an unknown key and a bad value are one line each; the rest still applies.
run_prog "trace=0:halt_on_error=0:foo=1,exitcode=x exitcode=5" double
expect_rc 5 "options: good pairs apply"
expect_in "$err" "tlsan: TLSAN_OPTIONS: unknown option 'foo' (ignored)" "options: unknown"
expect_in "$err" "tlsan: TLSAN_OPTIONS: bad value 'x' for 'exitcode' (want an integer; ignored)" "options: bad value"
run_prog "trace=0:help=1" clean
expect_rc 3 "help=1 continues"
expect_in "$err" "  quarantine_mb=8" "help lists quarantine_mb"
expect_in "$err" "  checksum=shared" "help lists checksum"

# native MODE: runs prog_heap MODE without the shim; sets nrc (a signal's death is 128+N).
native() {
    "$prog" "$@" >"$tmp/nout" 2>"$tmp/nerr"
    nrc=$?
}

# Underflow: the byte before a block is glibc's chunk size, so natively the free aborts.
# Under the shim the left redzone catches it, and the program still aborts (134).
native underflow
if [ "$nrc" = 134 ]; then ok; else bad "underflow natively: exit status $nrc, want 134"; fi
run_prog "$base" underflow
expect_rc 134 "underflow: aborts as natively"
expect_match "$err" "^==[0-9]+==ERROR: tlsan: heap-buffer-overflow on address $hex, 1 byte before the start of a 64-byte block at $hex \(underflow\)\$" "underflow headline"
expect_in "$err" "  the 16-byte redzone before the block changed (found when it was freed)" "underflow: redzone line"
expect_in "$err" "    found:    41"$'\n' "underflow: the byte written"
expect_count "$err" "^SUMMARY: tlsan: heap-buffer-overflow 1 byte before the start of a 64-byte block\$" 1 "underflow summary"
expect_not_in "$out" "underflow done" "underflow: stopped at the free"
run_prog "$base:halt_on_error=0" underflow
expect_rc 1 "underflow halt_on_error=0: goes on, a finding"
expect_in "$out" "underflow done" "underflow halt_on_error=0: ran to its end"
run_prog "$base:halt_on_error=1:exitcode=7" underflow
expect_rc 7 "underflow halt_on_error=1"

# A write into a freed 1 MiB block: natively unmapped by glibc (SIGSEGV, 139). Under the
# shim its pages are inaccessible in quarantine: reported with the three stacks, then the
# same death. Reads fault too.
for mode in uaf-large uaf-read; do
    native "$mode"
    if [ "$nrc" = 139 ]; then ok; else bad "$mode natively: exit status $nrc, want 139"; fi
    run_prog "$base" "$mode"
    expect_rc 139 "$mode: SIGSEGV as natively"
    expect_not_in "$out" "$mode done" "$mode: stopped at the access"
done
expect_match "$err" "^==[0-9]+==ERROR: tlsan: heap-use-after-free on address $hex at offset 200000 of a 1048576-byte block at $hex\$" "uaf-read headline"
expect_in "$err" "  a read of a freed block: its pages are inaccessible while it is in quarantine" "uaf-read: a read"
run_prog "$base" uaf-large
expect_match "$err" "^==[0-9]+==ERROR: tlsan: heap-use-after-free on address $hex at offset 100 of a 1048576-byte block at $hex\$" "uaf-large headline"
expect_in "$err" "  a write of a freed block: its pages are inaccessible while it is in quarantine" "uaf-large: a write"
# Frame #0 of each stack (the write, the free, the allocation) is in prog_heap's main, at
# its line (symbolized inside the SIGSEGV handler).
uaf='"uaf-large") == 0 || strcmp'
expect_frame0 "$err" "written here" "$(line_after "$uaf" 'v[100] = 0x41')" "uaf-large: written here"
expect_frame0 "$err" "freed here" "$(line_after "$uaf" 'free(p)')" "uaf-large: freed here"
expect_frame0 "$err" "allocated here" "$(line_after "$uaf" 'malloc(n)')" "uaf-large: allocated here"
expect_count "$err" "^SUMMARY: tlsan: heap-use-after-free at offset 100 of a 1048576-byte block\$" 1 "uaf-large summary"
run_prog "$base:halt_on_error=0" uaf-large
expect_rc 1 "uaf-large halt_on_error=0: goes on, a finding"
expect_in "$out" "uaf-large done" "uaf-large halt_on_error=0: ran to its end"
expect_count "$err" "^SUMMARY:" 1 "uaf-large halt_on_error=0: one finding"
run_prog "$base:halt_on_error=0" uaf-read
expect_in "$out" "read 254"$'\n'"uaf-read done" "uaf-read halt_on_error=0: the sentinel read"

# The program's own SIGSEGV handler, installed before the shim's: faults that are not on a
# guarded block reach it, twice (siglongjmp out of it).
native segv-chain
run_prog "$base" segv-chain
expect_rc 0 "segv-chain"
if [ "$out" = "caught 0"$'\n'"caught 1" ] && [ "$out" = "$(cat "$tmp/nout")" ]; then ok; else
    bad "segv-chain: '$out', natively '$(cat "$tmp/nout")'"; fi

# The program's own handler, installed after the shim's (sample_rate=1: at the first block):
# the program reads the disposition it would natively (SIG_DFL, then its handler), its faults
# reach its handler, and the faults on sampled blocks stay the shim's (before, sigaction showed
# the shim's handler, and a handler installed later took those faults: no report).
native segv-later
run_prog "$base:sample_rate=1" segv-later
expect_rc 0 "segv-later"
expect_eq "$out" $'default 1\nmine 1\ncaught 0\ncaught 1\nprevious mine 1' "segv-later"
expect_eq "$out" "$(cat "$tmp/nout")" "segv-later: as natively"
expect_eq "$err" "" "segv-later: no report"
run_prog "$base:sample_rate=1" segv-later-uaf
expect_rc 1 "segv-later-uaf: a finding"
expect_eq "$out" $'read 7\nsegv-later-uaf done' "segv-later-uaf: goes on as natively"
expect_count "$err" "^SUMMARY: tlsan: heap-use-after-free " 1 "segv-later-uaf: reported"

# A one-shot crash handler (SA_RESETHAND) that returns: natively the fault repeats with the
# default action and the program dies; the shim's handler, chained to it, must reset the
# disposition as the kernel would, not call it again for ever.
native segv-resethand
run_prog "$base" segv-resethand
expect_rc 139 "segv-resethand: SIGSEGV as natively"
if [ "$out" = "crash handler" ] && [ "$out" = "$(cat "$tmp/nout")" ] && [ "$nrc" = 139 ]; then ok
else bad "segv-resethand: '$out', natively '$(cat "$tmp/nout")' (status $nrc)"; fi

# Under ulimit -v the address space guarded blocks hold must not make the program's own
# mmap fail where natively glibc had unmapped them; a use after free still faults.
(ulimit -v 800000 && native as-limit && printf '%s' "$nrc" >"$tmp/nrc")
(ulimit -v 800000 && run_prog "$base" as-limit && printf '%s\n%s' "$rc" "$out" >"$tmp/res")
if [ "$(cat "$tmp/nrc") $(cat "$tmp/nout")" = "0 mmap ok" ] &&
    [ "$(cat "$tmp/res")" = "0"$'\n'"mmap ok" ]; then ok
else bad "as-limit under ulimit -v: '$(cat "$tmp/res")', natively '$(cat "$tmp/nout")'"; fi
(ulimit -v 800000 && run_prog "$base" uaf-large && printf '%s' "$rc" >"$tmp/res")
if [ "$(cat "$tmp/res")" = 139 ] && grep -q "heap-use-after-free" "$tmp/err"; then ok
else bad "uaf-large under ulimit -v: status $(cat "$tmp/res")"; fi

# realloc growing a buffer to 16 MiB in 4 KiB steps: in place where the block has room,
# otherwise moved with room to grow; the bytes are the native run's.
native realloc-grow
run_prog "$base" realloc-grow
expect_rc 0 "realloc-grow"
expect_in "$out" "realloc-grow 16777216 ok 2139095040" "realloc-grow: every byte"
if [ "$out" = "$(cat "$tmp/nout")" ] && [ -z "$err" ]; then ok; else bad "realloc-grow: '$out' / '$err', natively '$(cat "$tmp/nout")'"; fi

# The quarantine's memory: 200 MiB freed in 64 KiB blocks (filled, held) or in 1 MiB blocks
# (guarded: pages given back) raise the peak resident set by at most the 8 MiB default
# budget and 4 MiB for the shim's own tables; quarantine_mb=64 holds more.
for size in 65536 1048576; do
    native rss "$size"
    run_prog "$base" rss "$size"
    extra=$((out - $(cat "$tmp/nout")))
    if [ "$rc" = 0 ] && [ "$extra" -lt $((12 * 1024)) ]; then ok; else
        bad "rss $size: peak RSS $out kB, natively $(cat "$tmp/nout") kB: $extra kB more (want < 12288)"; fi
done
native rss 65536
run_prog "$base:quarantine_mb=64" rss 65536
extra=$((out - $(cat "$tmp/nout")))
if [ "$extra" -gt $((48 * 1024)) ]; then ok; else bad "rss quarantine_mb=64: only $extra kB more"; fi

echo "heap.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
