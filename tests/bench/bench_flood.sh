#!/bin/sh
# bench_flood.sh -- issue 40's floods on sk-timeline and sk-mirror, and the
# victim's p99 latency under each against its p99 alone, in the same run
# (flood-victim-p99-<kind>, target 10), with its success (target 100 %).
# See bench_flood.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_flood.pl" "$@"
