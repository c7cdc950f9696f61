#!/bin/sh
# Every test: unit tests, a short run of each fuzz target, integration
# tests (t/, real daemons).  Prints one summary line per stage and a total.
set -u
BUILD=${BUILD:-build}
FUZZ_SMOKE=${FUZZ_SMOKE:-10}
cd "$(dirname "$0")/.."

pass=0 fail=0
stage() {   # name, then the command
    name=$1; shift
    echo "=== $name"
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "=== $name: FAILED"; fi
}

stage unit tests/run-unit.sh "$BUILD"
stage fuzz env FUZZ_TIME="$FUZZ_SMOKE" tests/fuzz/run.sh build-fuzz
stage integration env SK_BIN="$PWD/$BUILD/sk" BUILD="$BUILD" \
    prove -I t/lib t/

echo "stages: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
