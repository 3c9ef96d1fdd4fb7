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
prog=$progs/prog_heap


# run OPTIONS MODE: runs prog_heap MODE under the shim; sets rc, out, err.
run() {
    TLSAN_OPTIONS="$1" LD_PRELOAD="$shim" "$prog" "$2" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
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

# Write after free, found at exit.
run "$base" waf
expect_rc 1 "waf"
expect_in "$out" "waf done" "waf: the program ran to its end"
expect_match "$err" "^==[0-9]+==ERROR: tlsan: heap-write-after-free on address $hex at offset 8 of a 64-byte block at $hex\$" "waf headline"
expect_in "$err" "  the freed block changed while in quarantine (found at exit)" "waf: when"
expect_in "$err" "  bytes at offset 8 (16 shown):" "waf: offset line"
expect_in "$err" "    expected: fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f" "waf: expected bytes"
expect_in "$err" "    found:    41 41 41 41 fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f" "waf: found bytes"
expect_match "$err" "^allocated here:\$" "waf: alloc stack title"
expect_match "$err" "^freed here:\$" "waf: free stack title"
# At exit the frames are symbolized: frame #0 of both stacks is main in prog_heap.
expect_count "$err" "^    #0 $hex in main\+0x[0-9a-f]+ \(.*/prog_heap\+0x[0-9a-f]+\)\$" 2 "waf: frame #0 in main"
expect_in "$err" "SUMMARY: tlsan: heap-write-after-free at offset 8 of a 64-byte block" "waf summary"
expect_count "$err" "^SUMMARY:" 1 "waf: one finding"
# The address in the headline is the block's plus 8.
addr=$(printf '%s\n' "$err" | sed -nE 's/.*on address (0x[0-9a-f]+) at offset.*block at (0x[0-9a-f]+)$/\1 \2/p')
read -r a b <<<"$addr"
if [ -n "${a:-}" ] && [ $((a - b)) = 8 ]; then ok; else bad "waf: address $a is not block $b + 8"; fi

# The exit status is the exitcode option.
run "$base:exitcode=42" waf
expect_rc 42 "waf exitcode=42"

# Write after free, found when the block leaves a 1 MiB quarantine (inside a hook: frames
# as module+offset only).
run "$base:quarantine_mb=1" waf-evict
expect_rc 1 "waf-evict"
expect_in "$err" "(found when it left the quarantine)" "waf-evict: when"
expect_in "$err" "    found:    41 41 41 41 fe 7f" "waf-evict: found bytes"
expect_count "$err" "^    #0 $hex \(.*/prog_heap\+0x[0-9a-f]+\)\$" 2 "waf-evict: frame #0 unsymbolized in prog_heap"
expect_count "$err" "^SUMMARY: tlsan: heap-write-after-free at offset 8 of a 64-byte block\$" 1 "waf-evict summary"

# Without fills nothing is checked after free.
run "$base:fill=0" waf
expect_rc 0 "waf fill=0"
expect_not_in "$err" "ERROR" "waf fill=0 silent"

# Overflow into the redzone: 3 bytes past the end of a 40-byte block.
run "$base" overflow
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
run "$base:redzone=64" overflow
expect_in "$err" "  the 64-byte redzone after the block changed" "overflow redzone=64"
expect_in "$err" "  bytes at 3 past the end (16 shown):" "overflow redzone=64: 16 shown"
# With the quarantine off the redzone is still checked.
run "$base:quarantine_mb=0" overflow
expect_rc 1 "overflow quarantine_mb=0"
expect_in "$err" "SUMMARY: tlsan: heap-buffer-overflow 3 bytes past the end of a 40-byte block" "overflow quarantine_mb=0"

# Double free: reported once, the second free ignored (glibc would abort), program ends.
run "$base" double
expect_rc 1 "double"
expect_in "$out" "double done" "double: the program ran to its end"
expect_match "$err" "^==[0-9]+==ERROR: tlsan: double-free on address $hex \(a 32-byte block\)\$" "double headline"
expect_match "$err" "^freed again here:\$" "double: stack 1"
expect_match "$err" "^first freed here:\$" "double: stack 2"
expect_match "$err" "^allocated here:\$" "double: stack 3"
expect_in "$err" "SUMMARY: tlsan: double-free of a 32-byte block" "double summary"
expect_count "$err" "^SUMMARY:" 1 "double: one finding"
expect_count "$err" "^    #0 $hex \(.*/prog_heap\+0x[0-9a-f]+\)\$" 3 "double: frames #0 in prog_heap"

# halt_on_error: exit with exitcode right at the finding ("double done" never printed).
run "$base:halt_on_error=1:exitcode=7" double
expect_rc 7 "double halt_on_error"
expect_not_in "$out" "double done" "double halt_on_error: stopped at once"
expect_count "$err" "^SUMMARY: tlsan: double-free" 1 "double halt_on_error: reported"

# Invalid free: an interior pointer and a stack address, both ignored.
run "$base" invalid
expect_rc 1 "invalid"
expect_in "$out" "invalid done" "invalid: the program ran to its end"
expect_count "$err" "^==[0-9]+==ERROR: tlsan: invalid-free on address $hex, which malloc did not return\$" 2 "invalid headlines"
expect_count "$err" "^SUMMARY: tlsan: invalid-free on address $hex\$" 2 "invalid summaries"
# The first is the block + 8 (the block itself is then freed cleanly).
expect_count "$err" "^SUMMARY:" 2 "invalid: exactly two findings"

# A float read from a freed block is the sentinel: NaN (f32 and f64).
run "$base" nan
expect_rc 0 "nan"
if [ "$out" = "nan nan"$'\n'"nan" ] || [ "$out" = "-nan -nan"$'\n'"-nan" ]; then ok; else bad "nan: got '$out'"; fi
expect_not_in "$err" "ERROR" "nan: reading is no finding"
run "$base:fill=0" nan
expect_not_in "$out" "nan" "nan fill=0: the old values"

# The clean program: silent, its own status, same output as without the shim.
run "$base" clean
expect_rc 3 "clean"
if [ -z "$err" ]; then ok; else bad "clean: stderr not empty: $err"; fi
native=$("$prog" clean)
if [ "$out" = "$native" ]; then ok; else bad "clean: output '$out', natively '$native'"; fi
run "$base:verbosity=1" clean
expect_rc 3 "clean verbosity=1"
expect_match "$err" "^==[0-9]+==tlsan: active \(quarantine_mb=64 fill=1 redzone=16 stack_depth=16 " "verbosity=1 start line"
expect_match "$err" "^==[0-9]+==tlsan: exit: 0 findings; [0-9]+ allocations" "verbosity=1 exit line"

# log_path: the report goes to PATH.PID, stderr stays empty.
run "$base:log_path=$tmp/log" double
expect_rc 1 "log_path"
if [ -z "$err" ]; then ok; else bad "log_path: stderr not empty: $err"; fi
logs=("$tmp"/log.*)
if [ ${#logs[@]} = 1 ] && grep -q "^SUMMARY: tlsan: double-free of a 32-byte block" "${logs[0]}"; then
    ok
else bad "log_path: no report in $tmp/log.PID"; fi

# Options: an unknown key and a bad value are one line each; the rest still applies.
run "trace=0:foo=1,exitcode=x exitcode=5" double
expect_rc 5 "options: good pairs apply"
expect_in "$err" "tlsan: TLSAN_OPTIONS: unknown option 'foo' (ignored)" "options: unknown"
expect_in "$err" "tlsan: TLSAN_OPTIONS: bad value 'x' for 'exitcode' (want an integer; ignored)" "options: bad value"
run "trace=0:help=1" clean
expect_rc 3 "help=1 continues"
expect_in "$err" "  quarantine_mb=64" "help lists quarantine_mb"
expect_in "$err" "  checksum=shared" "help lists checksum"

echo "heap.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
