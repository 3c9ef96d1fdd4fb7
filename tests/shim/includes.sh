#!/usr/bin/env bash
# The shim sees the checker only through its interface headers: of src/, a shim source may
# include only the headers below (docs/design.md, "The shim and the checker"); the checker's
# private plan model (check/plan.h) and report internals (report/report.h) stay out.
# Usage: includes.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
src=$(cd "$3" && pwd)
allowed='^(core/trace_format\.h|core/options\.h|check/plan_query\.h|report/finding_text\.h|replay/symbolize\.h|replay/symbolize_libdw\.h)$'
failed=0
checked=0
while IFS= read -r line; do
    file=${line%%:*}
    header=$(printf '%s\n' "$line" | sed -n 's/.*#include "\([^"]*\)".*/\1/p')
    case "$header" in
        check/* | report/* | core/* | import/* | replay/* | picture/* | cli/*) ;;
        *) continue ;;
    esac
    checked=$((checked + 1))
    if ! printf '%s\n' "$header" | grep -qE "$allowed"; then
        echo "FAIL: ${file#"$src"/} includes $header, not an interface of the checker to the shim"
        failed=$((failed + 1))
    fi
done < <(grep -rn '#include "' "$src/shim" --include='*.c' --include='*.h')
# The six interface includes of today's tree: a rename that hides one would pass unseen.
if [ "$checked" -lt 6 ]; then
    echo "FAIL: only $checked includes of src/ headers found in shim/, want at least 6"
    failed=$((failed + 1))
fi
echo "includes.sh: $checked checked, $failed failed"
[ "$failed" = 0 ]
