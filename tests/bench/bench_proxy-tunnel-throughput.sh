#!/bin/sh
# bench_proxy-tunnel-throughput.sh -- a download through `sk proxy`'s blind
# tunnel against directly (see bench_proxy.pl).
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_proxy.pl" tunnel "$@"
