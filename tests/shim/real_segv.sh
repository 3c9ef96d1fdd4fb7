#!/usr/bin/env bash
# Real programs that take SIGSEGV themselves, under the shim: V8's WebAssembly bounds checks
# (an out-of-bounds load faults and V8's handler turns it into a RuntimeError), CPython's
# faulthandler (a crash prints the Python stack, then the program dies of SIGSEGV), Rust's
# stack-overflow handler (on its alternate stack: "has overflowed its stack", SIGABRT, for
# the main thread and a spawned one) and the JVM (implicit null checks in compiled code and
# stack banging: NullPointerException and StackOverflowError caught by the program).
# The shim's own SIGSEGV handler sits in front of each (installed at the first sampled
# block: at start-up with sample_rate=1, later or never with the defaults), so every fault
# of theirs goes through it and must reach theirs as the kernel would deliver it.
#
# Each program runs natively, then under LD_PRELOAD with the defaults and with
# sample_rate=1, then under `tlsan run`: the same stdout, stderr (less tlsan run's summary)
# and exit status. What differs between two native runs (thread ids, a thread's address) is
# replaced before comparing. A program missing from the machine is skipped with its name.
# Usage: real_segv.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup real_segv.sh "$@"
unset TLSAN_OPTIONS
skipped=()

# What changes from one native run to the next: Rust names a thread by its id, faulthandler
# by its pthread_t.
normalize() {
    sed -E -e "s/^(thread '[^']*') \([0-9]+\)/\1 (TID)/" \
        -e 's/^Current thread 0x[0-9a-f]+/Current thread 0xADDR/' "$1"
}

# same NAME WANT_RC CMD...: CMD natively must end with WANT_RC; each run under the shim must
# end the same way, with the same (normalized) stdout and stderr. Sets $tmp/native.out to the
# native stdout, for the caller's check of what the program printed.
same() {
    local name=$1 want=$2
    shift 2
    "$@" >"$tmp/native.out" 2>"$tmp/native.err"
    local nrc=$?
    expect_eq "$nrc" "$want" "$name natively: exit status"
    normalize "$tmp/native.out" >"$tmp/n.out"
    normalize "$tmp/native.err" >"$tmp/n.err"
    local mode rc
    for mode in default sample_rate=1 run; do
        case $mode in
        default)
            LD_PRELOAD="$shim" "$@" >"$tmp/s.out" 2>"$tmp/s.err"
            rc=$?
            ;;
        sample_rate=1)
            LD_PRELOAD="$shim" TLSAN_OPTIONS=sample_rate=1 "$@" >"$tmp/s.out" 2>"$tmp/s.err"
            rc=$?
            ;;
        run)
            "$bin" run -- "$@" >"$tmp/s.out" 2>"$tmp/s.err.all"
            rc=$?
            expect_in "$(tail -n 1 "$tmp/s.err.all")" "tlsan: run: no findings" "$name (tlsan run): summary"
            sed '$d' "$tmp/s.err.all" >"$tmp/s.err"
            ;;
        esac
        expect_eq "$rc" "$nrc" "$name ($mode): the native exit status"
        normalize "$tmp/s.out" >"$tmp/x.out"
        normalize "$tmp/s.err" >"$tmp/x.err"
        expect_same_file "$tmp/n.out" "$tmp/x.out" "$name ($mode): stdout differs"
        expect_same_file "$tmp/n.err" "$tmp/x.err" "$name ($mode): stderr differs"
    done
}

# ---- node: WebAssembly out-of-bounds loads ----
# A module of one function, load(i32) -> i32 (i32.load at the address), over one 64 KiB page.
# V8 guards wasm memory with inaccessible pages and no bounds check: a load past the page
# faults, and V8's SIGSEGV handler makes it a RuntimeError.
cat >wasm.js <<'EOF'
const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 6, 1, 96, 1, 127, 1, 127, 3, 2, 1, 0,
  5, 3, 1, 0, 1, 7, 8, 1, 4, 108, 111, 97, 100, 0, 0, 10, 9, 1, 7, 0, 32, 0, 40, 2, 0, 11]);
const m = new WebAssembly.Instance(new WebAssembly.Module(bytes));
let s = 0, traps = 0;
for (let i = 0; i < 200000; i++) {
  try { s += m.exports.load((i * 4099) % 70000); }
  catch (e) { if (traps++ === 0) console.log(e.constructor.name, e.message); }
}
console.log("sum", s, "traps", traps);
EOF
if command -v node >/dev/null 2>&1; then
    same "node wasm traps" 0 node wasm.js
    expect_eq "$(cat "$tmp/native.out")" $'RuntimeError memory access out of bounds\nsum 0 traps 12763' \
        "node wasm traps: what it prints natively"
else
    skipped+=(node)
fi

# ---- python3: faulthandler ----
cat >fault.py <<'EOF'
import ctypes, faulthandler, json
faulthandler.enable()
print(len(json.dumps([{"k": i} for i in range(20000)])), flush=True)
ctypes.string_at(16)
EOF
if command -v python3 >/dev/null 2>&1; then
    same "python3 faulthandler" 139 python3 fault.py
    expect_eq "$(cat "$tmp/native.out")" 268890 "python3 faulthandler: what it prints natively"
    expect_eq "$(sed -n '1p;3p' "$tmp/n.err")" $'Fatal Python error: Segmentation fault\nCurrent thread 0xADDR (most recent call first):' \
        "python3 faulthandler: its report natively"
else
    skipped+=(python3)
fi

# ---- Rust: stack overflow, main thread and a spawned one ----
cat >overflow.rs <<'EOF'
use std::hint::black_box;
fn deep(n: u64) -> u64 {
    let a = black_box([n; 64]);
    if n == 0 { 0 } else { black_box(deep(black_box(n - 1))) + a[(n % 64) as usize] }
}
fn main() {
    let v: Vec<String> = (0..10000).map(|i| format!("x{}", i)).collect();
    println!("{} {}", v.len(), std::thread::spawn(|| deep(1000)).join().unwrap());
    match std::env::args().nth(1).as_deref() {
        Some("main") => println!("{}", deep(black_box(u64::MAX))),
        _ => println!("{:?}", std::thread::spawn(|| deep(black_box(u64::MAX))).join().is_err()),
    }
}
EOF
if command -v rustc >/dev/null 2>&1 && rustc -O -o overflow overflow.rs 2>rustc.err; then
    for where in main thread; do
        same "rust stack overflow ($where)" 134 ./overflow "$where"
        expect_eq "$(cat "$tmp/native.out")" "10000 500500" "rust ($where): what it prints natively"
    done
    expect_eq "$(cat "$tmp/n.err")" $'\nthread \'<unknown>\' (TID) has overflowed its stack\nfatal runtime error: stack overflow, aborting' \
        "rust (thread): its message natively"
else
    skipped+=(rustc)
fi

# ---- Java: implicit null checks and stack banging ----
cat >Faults.java <<'EOF'
public class Faults {
    static int depth = 0;
    static void rec() { depth++; rec(); }
    static int first(int[] a) { return a[0]; }
    public static void main(String[] args) {
        long caught = 0, sum = 0;
        for (int i = 0; i < 2000000; i++) {
            int[] a = (i % 3 == 0) ? null : new int[] {i};
            try { sum += first(a); } catch (NullPointerException e) { caught++; }
        }
        System.out.println("npe " + caught + " " + sum);
        try { rec(); } catch (StackOverflowError e) { System.out.println("soe " + (depth > 1000)); }
        System.exit(4);
    }
}
EOF
if command -v javac >/dev/null 2>&1 && command -v java >/dev/null 2>&1 && javac Faults.java 2>javac.err; then
    same "java faults" 4 java -Xshare:auto -cp . Faults
    expect_eq "$(cat "$tmp/native.out")" $'npe 666667 1333332666667\nsoe true' "java: what it prints natively"
else
    skipped+=(java)
fi

[ "${#skipped[@]}" -eq 0 ] || echo "SKIP: not on this machine: ${skipped[*]}"
echo "real_segv.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
