#!/bin/sh
# bench_proxy-page-load.sh -- a page of 20 resources through `sk proxy`
# against directly, the same curl (see bench_proxy.pl).
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_proxy.pl" page-load "$@"
