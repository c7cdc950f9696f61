#!/bin/sh
# bench_scale.sh -- `make bench-scale`: sk-timeline and sk-mirror at 3
# sizes (SCALE_SIZES, 200k/1M/2M entries): RSS per entry, restart time,
# query p99 and disk per entry, each next to the smallest size, and their
# extrapolation to 200 million names.  See bench_scale.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_scale.pl" "$@"
