#!/bin/sh
# bench_staple.sh -- the stapled SK proof: nginx's CPU per handshake with
# staples requested, a client's first contact from a staple against one
# from a mirror query, and the bytes a staple adds.  See bench_staple.pl.
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
# its clients: nginx_client (with the module) and staple_client
[ ! -f /usr/share/nginx/src/conf_flags ] \
    || make -s -C "$top" BUILD="${BUILD#$top/}" ngx \
        "${BUILD#$top/}/bench/staple_client" \
        "${BUILD#$top/}/bench/delay_proxy" >/dev/null
exec perl -I "$top/t/lib" "$top/tests/bench/bench_staple.pl" "$@"
