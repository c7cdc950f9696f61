#!/bin/sh
# bench_mirror_sync.sh -- entries merged per second by sk-mirror from an
# sk-timeline holding COUNT (100000) Binds, against the crypto-bound rate
# of the same checks measured in the same run.  See bench_mirror_sync.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_mirror_sync.pl" "$@"
