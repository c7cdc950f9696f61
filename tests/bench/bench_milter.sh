#!/bin/sh
# Postfix throughput with no milter, a no-op milter and sk-milter, in one
# run and interleaved (see tests/bench/bench_milter.pl).
set -eu
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.."
mkdir -p "$BUILD/bench"
cc -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -o "$BUILD/bench/noop_milter" \
    tests/bench/noop_milter.c -lmilter -lpthread
make -s "$BUILD/sk-milter" >/dev/null
exec perl -I t/lib tests/bench/bench_milter.pl "$BUILD"
