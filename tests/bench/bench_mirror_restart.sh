#!/bin/sh
# bench_mirror_restart.sh -- sk-mirror's restart time and RSS per entry
# with a copy of COUNT (100000) entries, and (MR_BASE=path) the same for
# another sk-mirror binary on the same copy.  See bench_mirror_restart.pl.
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_mirror_restart.pl" "$@"
