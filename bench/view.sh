#!/usr/bin/env bash
# How long `tlsan view` takes on a large plan, and how long headless Chromium takes to draw
# the page. A measurement, not a test: it prints the numbers (docs/view.md records them).
#   bench/view.sh [BUILD_DIR] [ROOTS]     (defaults: build, 100000)
# Needs the benchmark generator (built by default) and chromium (run as root: --no-sandbox).
set -euo pipefail
build=${1:-build}
roots=${2:-100000}
gen=$build/bench/tlsan_gen_plan
tlsan=$build/tlsan
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -x "$gen" ] && [ -x "$tlsan" ] || { echo "build $build first (cmake --build $build)"; exit 2; }
[ -n "$browser" ] || { echo "no chromium (Debian: apt-get install chromium)"; exit 2; }
tmp=$(mktemp -d)
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
trap 'rm -rf "$tmp"' EXIT

"$gen" --roots "$roots" --seed 1 --inject 5 -o "$tmp/plan.json" >/dev/null 2>&1
start=$(date +%s.%N)
"$tlsan" view "$tmp/plan.json" -o "$tmp/plan.html"
end=$(date +%s.%N)
printf 'tlsan view: %s roots, %s s, page %s bytes\n' "$roots" "$(secs "$start" "$end")" \
    "$(stat -c %s "$tmp/plan.html")"

# The page writes what it drew and its own timings into #tlsan-result: "ms" from the start
# of its script to the end of the first drawing (the JSON data parsed, every arena drawn),
# "since_navigation_ms" from navigation start (reading and parsing the HTML included).
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile"
    --window-size=1400,1000)
for run in 1 2 3; do
    start=$(date +%s.%N)
    "$browser" "${flags[@]}" --screenshot="$tmp/shot.png" "file://$tmp/plan.html" 2>/dev/null >/dev/null
    end=$(date +%s.%N)
    "$browser" "${flags[@]}" --dump-dom "file://$tmp/plan.html" 2>/dev/null >"$tmp/dom.html"
    inpage=$(grep -o '"ms":[0-9.]*,"since_navigation_ms":[0-9.]*' "$tmp/dom.html")
    printf 'chromium run %d: screenshot wall %s s (browser start included); in page: %s\n' \
        "$run" "$(secs "$start" "$end")" "$inpage"
done
start=$(date +%s.%N)
"$browser" "${flags[@]}" --screenshot="$tmp/shot.png" "file://$tmp/empty.html" 2>/dev/null >/dev/null || true
end=$(date +%s.%N)
printf 'chromium start alone (a missing page): %s s\n' "$(secs "$start" "$end")"
