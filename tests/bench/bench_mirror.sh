#!/bin/sh
# bench_mirror.sh -- name queries per second on sk-mirror: a cached answer
# against nginx serving a static file of the same size (the reference, in
# the same run), an uncached answer (a mirror with query_cache = 0) and the
# answer to a query with a nonce against the cached one.  See
# bench_mirror.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_mirror.pl" "$@"
