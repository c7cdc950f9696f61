#!/bin/sh
# Run every fuzz target in $1 for FUZZ_TIME seconds on its seed corpus.
# New inputs go to a scratch corpus, so the committed seeds stay small.
set -u
dir=${1:-build-fuzz}
time=${FUZZ_TIME:-60}
status=0 n=0
for f in "$dir"/fuzz_*; do
    [ -x "$f" ] || continue
    name=${f##*/fuzz_}
    seeds=tests/fuzz/corpus/$name
    work=$dir/corpus-$name
    mkdir -p "$work" "$dir/crashes"
    echo "fuzz $name: ${time}s"
    if ! "$f" -max_total_time="$time" -print_final_stats=0 \
            -artifact_prefix="$dir/crashes/$name-" "$work" "$seeds" \
            >"$dir/$name.log" 2>&1; then
        echo "fuzz $name: FAILED (see $dir/$name.log)"
        tail -40 "$dir/$name.log"
        status=1
    fi
    n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "fuzz: no targets in $dir"; exit 1; }
exit $status
