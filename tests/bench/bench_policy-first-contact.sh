#!/bin/sh
# bench_policy-first-contact.sh -- policy answers per second for next hops
# sk-milter has never seen, against sk verify (see bench_policy.pl).
exec perl -I "$(dirname "$0")/../../t/lib" "$(dirname "$0")/bench_policy.pl" "${BUILD:-build}" first-contact
