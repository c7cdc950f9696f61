#!/bin/sh
# bench_metrics_scrape.sh -- metrics-scrape: a scrape of each daemon's
# /metrics with 10,000 names against 2 (tests/bench/bench_metrics_scrape.pl).
set -eu
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.."
make -s BUILD="$BUILD" "$BUILD/sk-timeline" "$BUILD/sk-mirror" \
    "$BUILD/sk-milter" "$BUILD/bench/mirror_gen" "$BUILD/bench/carrier_gen" \
    >/dev/null
make -s BUILD="$BUILD" ngx >/dev/null 2>&1 || true
exec perl -I t/lib tests/bench/bench_metrics_scrape.pl
