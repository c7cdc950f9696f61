#!/bin/sh
# bench_mirror_sync.sh -- entries merged per second by sk-mirror on a first
# sync of TIMELINES sk-timelines (one per core) holding COUNT (100000) Binds
# in all, one sync thread per timeline, against the crypto-bound rate of
# the same checks on every core, measured in the same run.  See
# bench_mirror_sync.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_mirror_sync.pl" "$@"
