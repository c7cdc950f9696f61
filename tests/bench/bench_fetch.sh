#!/bin/sh
# bench_fetch.sh -- `sk fetch` against curl on the same page, one process
# per fetch each: with the SK decision cached, and on first contact (the
# decision from the mirror).  See bench_fetch.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_fetch.pl" "$@"
