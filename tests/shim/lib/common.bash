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

ok() { passed=$((passed + 1)); }
bad() {
    failed=$((failed + 1))
    echo "FAIL: $*"
}

# expect_rc WANT WHAT: the last run's exit status ($rc, with $out and $err from run()).
expect_rc() {
    if [ "$rc" = "$1" ]; then ok; else bad "$2: exit status $rc, want $1 (stdout: $out; stderr: $err)"; fi
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
