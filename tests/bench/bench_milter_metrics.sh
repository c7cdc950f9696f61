#!/bin/sh
# bench_milter_metrics.sh -- milter-metrics-cost: Postfix throughput
# through sk-milter with MetricsListen against without, interleaved in one
# run (see tests/bench/bench_milter.pl).
set -eu
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.."
make -s "$BUILD/sk-milter" >/dev/null
exec perl -I t/lib tests/bench/bench_milter.pl "$BUILD" metrics
