#!/bin/sh
# Run every unit test binary in $1/tests; print a summary line.
build=${1:-build}
pass=0 fail=0 failed=""
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); failed="$failed ${t##*/}"; fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ] || { echo "failed:$failed" >&2; exit 1; }
