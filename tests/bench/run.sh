#!/bin/sh
# Run every benchmark (or only bench_$1) and collect the BENCH lines.
# Benchmarks never fail a build: they report figures and ratios.
set -u
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.."
only=${1:-}
out=$BUILD/bench/results.txt
: >"$out"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
for b in "$BUILD"/bench/bench_* tests/bench/bench_*.sh; do
    [ -x "$b" ] || continue
    name=${b##*/bench_}; name=${name%.sh}
    [ -z "$only" ] || [ "$only" = "$name" ] || continue
    # bench_scale takes from minutes to hours: `make bench-scale` only.
    [ "$name" != scale ] || [ "$only" = scale ] || continue
    echo "== $name"
    BUILD=$BUILD "$b" | tee -a "$out"
done
echo "== summary"
grep '^BENCH ' "$out" || echo "no benchmark matched \"$only\""
