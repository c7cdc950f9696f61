#!/bin/sh
# bench_mirror_tor.sh -- a mirror query through a private Tor network to
# sk-mirror's onion, next to the direct query.  See bench_mirror_tor.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_mirror_tor.pl" "$@"
