#!/bin/sh
# bench_revocation-latency.sh -- how long a revoked (and replaced) SK's
# carrier is still accepted, for a client that only sees nginx's staple
# and for one that asks a mirror.  See bench_revocation.pl.
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
[ ! -f /usr/share/nginx/src/conf_flags ] \
    || make -s -C "$top" BUILD="${BUILD#$top/}" ngx >/dev/null
exec perl -I "$top/t/lib" "$top/tests/bench/bench_revocation.pl" "$@"
