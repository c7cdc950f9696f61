#!/bin/sh
# bench_onion.sh -- `sk fetch` through the SK's own onion over a private
# Tor network on loopback, next to the direct route.  See bench_onion.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_onion.pl" "$@"
