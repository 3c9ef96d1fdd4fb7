# Shared set-up and assertions of the shim's script tests (sourced, not a test itself).
#
# shim_test_setup NAME "$@": reads the usual arguments (TLSAN_BINARY SHARED_DIR SOURCE_DIR
# PROG_DIR), sets absolute bin, shim, src and progs (the test runs in a temporary directory),
# skips (exit 77) when libtlsan.so was not built, makes $tmp (removed at exit) and enters it.
shim_test_setup() {
    local name=$1 usage="usage: $1 TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR"
    shift
    [ $# -ge 4 ] || { echo "$usage" >&2; exit 2; }
    export LC_ALL=C
    bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    src=$(cd "$3" && pwd)
    progs=$(cd "$4" && pwd)
    shim=$(dirname "$bin")/libtlsan.so
    [ -f "$shim" ] || { echo "SKIP: no $shim"; exit 77; }
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    cd "$tmp" || exit 1
    passed=0
    failed=0
    : "$name"
}

# shim_prog NAME: the program the test runs under the shim, PROG_DIR/NAME, as $prog; fails the
# test when it was not built.
shim_prog() {
    prog=$progs/$1
    [ -x "$prog" ] || { echo "FAIL: no $prog"; exit 1; }
}
# run_prog OPTIONS ARG...: runs $prog ARG... under the shim with TLSAN_OPTIONS=OPTIONS; sets
# rc, out, err.
run_prog() {
    TLSAN_OPTIONS="$1" LD_PRELOAD="$shim" "$prog" "${@:2}" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
# The start of a report's headline in the program's stderr: ==PID==ERROR: tlsan: KIND ...
pid_line='^==[0-9]+==ERROR: tlsan: '

# cli_shim_setup NAME "$@": the same for the CLI's script tests that run programs under the
# shim (arguments TLSAN_BIN [SHARED_DIR] [SOURCE_DIR]): sets absolute bin, build (its folder)
# and shim, skips (exit 77) when libtlsan.so was not built (the sanitizer build), makes $tmp
# (removed at exit) and clears the variables that would carry the caller's tlsan settings
# into the runs. Stays in the current directory.
cli_shim_setup() {
    local name=$1
    shift
    [ $# -ge 1 ] || { echo "usage: $name TLSAN_BIN [SHARED_DIR] [SOURCE_DIR]" >&2; exit 2; }
    export LC_ALL=C
    build=$(cd "$(dirname "$1")" && pwd)
    bin=$build/$(basename "$1")
    shim=$build/libtlsan.so
    [ -f "$shim" ] || { echo "SKIP: no $shim (the sanitizer build has no shim library)"; exit 77; }
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    unset TLSAN_OPTIONS TLSAN_TRACE_DIR LD_PRELOAD
    passed=0
    failed=0
}

ok() { passed=$((passed + 1)); }
bad() {
    failed=$((failed + 1))
    echo "FAIL: $*"
}

# expect_rc WANT WHAT: the last run's exit status ($rc, with $out and $err from run()).
expect_rc() {
    if [ "$rc" = "$1" ]; then ok; else bad "$2: exit status $rc, want $1 (stdout: $out; stderr: $err)"; fi
}
# expect_top_frame TEXT TITLE FUNC WHAT: the first stack under "TITLE:" in TEXT has FUNC in
# frame #0.
expect_top_frame() {
    local frame
    frame=$(printf '%s\n' "$1" | grep -F -A1 -- "$2:" | sed -n 2p)
    case "$frame" in
        *"#0 "*" in $3+"*) ok ;;
        *) bad "$4: frame #0 under '$2' is '$frame', want $3" ;;
    esac
}
# expect_frame_at TEXT TITLE N FUNC FILE:LINE WHAT: frame #N of the first stack under "TITLE:"
# in TEXT is in FUNC at that line of that source file.
expect_frame_at() {
    local frame
    frame=$(printf '%s\n' "$1" | grep -F -A$(($3 + 1)) -- "$2:" | sed -n "$(($3 + 2))p")
    case "$frame" in
        *"#$3 "*" in $4+"*" at "*"/$5 ("*) ok ;;
        *) bad "$6: frame #$3 under '$2' is '$frame', want $4 at $5" ;;
    esac
}
# wait_for_line FILE TEXT PID: waits until FILE holds TEXT (the line a program prints once
# it is set up) or process PID has ended, however long that takes: a loaded machine is only
# slower, and ctest's timeout stops a hang. FILE must hold nothing of an earlier run (remove
# it before starting PID): a stale line would say "set up" before PID is. Fails when PID ended
# without the line.
wait_for_line() {
    while ! grep -q -- "$2" "$1" 2>/dev/null; do
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.05
    done
}
# expect_eq GOT WANT WHAT
expect_eq() {
    if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', want '$2'"; fi
}
# expect_same_file WANT GOT WHAT: the two files hold the same bytes (else their first
# differences are shown).
expect_same_file() {
    if cmp -s "$1" "$2"; then ok; else
        bad "$3"
        diff "$1" "$2" | head -n 20
    fi
}
# expect_in TEXT PART WHAT
expect_in() {
    case "$1" in
        *"$2"*) ok ;;
        *) bad "$3: '$2' not in: $1" ;;
    esac
}
# expect_count TEXT REGEX N WHAT: N lines of TEXT match REGEX.
expect_count() {
    local n
    n=$(printf '%s\n' "$1" | grep -cE -- "$2")
    if [ "$n" = "$3" ]; then ok; else bad "$4: $n lines match '$2', want $3 in: $1"; fi
}
