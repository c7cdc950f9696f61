#!/bin/sh
# Every test: unit tests, a short run of each fuzz target, integration
# tests (t/, real daemons), and fault injection (t/fault/: kill -9, torn
# files, a full disk, lost keys, dead backends) against the ASan+UBSan
# build of every daemon.  Prints one summary line per stage and a total.
set -u
BUILD=${BUILD:-build}
FUZZ_SMOKE=${FUZZ_SMOKE:-6}
# Integration files run two at a time: most of a file's time is spent
# waiting on daemons (starts, polls, timeouts), so two share the 2-core CI
# machine well; every file picks its own free ports and temp dir.  Fault
# files run one at a time: they flood, kill and time daemons, and a second
# file's load would turn their bounds into noise.  --timer prints each
# file's time, to see where the run goes.
TEST_JOBS=${TEST_JOBS:-2}
PROVE="prove --timer -I t/lib"
cd "$(dirname "$0")/.."

pass=0 fail=0
stage() {   # name, then the command
    name=$1; shift
    echo "=== $name"
    t0=$(date +%s)
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "=== $name: FAILED"; fi
    echo "=== $name: $(($(date +%s) - t0)) s"
}

stage unit tests/run-unit.sh "$BUILD"
stage fuzz env FUZZ_TIME="$FUZZ_SMOKE" tests/fuzz/run.sh build-fuzz
stage integration env SK_BIN="$PWD/$BUILD/sk" BUILD="$BUILD" \
    $PROVE -j"$TEST_JOBS" t/

# Whatever BUILD the caller uses, faults run on build-san (made here if
# need be; its own make, so a parent's variables do not leak in).
faults() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -j"$(nproc)" SAN=1 BUILD=build-san \
        all && env SK_BIN="$PWD/build-san/sk" BUILD=build-san SAN=1 \
        $PROVE t/fault/
}
stage faults faults
# Last: build the .debs, install them
# here, check them as an operator would, purge them (root only: it
# installs packages).
if [ "$(id -u)" = 0 ]; then
    stage packages tests/packages/run.sh
else
    echo "=== packages: skipped (needs root to install packages)"
fi

echo "stages: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
