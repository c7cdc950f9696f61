#!/bin/sh
# Run every fuzz target in $1 for FUZZ_TIME seconds on its seed corpus,
# one target per core at a time (FUZZ_JOBS, default nproc): the targets are
# independent and single-threaded, so the stage takes a fraction of the
# sum of their times.  New inputs go to a scratch corpus, so the committed
# seeds stay small.
set -u
dir=${1:-build-fuzz}
time=${FUZZ_TIME:-60}
jobs=${FUZZ_JOBS:-$(nproc)}

# One target: "run.sh --one TARGET" (called through xargs below).
if [ "$dir" = --one ]; then
    f=$2 name=${2##*/fuzz_}
    dir=${2%/*}
    work=$dir/corpus-$name
    mkdir -p "$work" "$dir/crashes"
    echo "fuzz $name: ${time}s"
    if ! "$f" -max_total_time="$time" -print_final_stats=0 \
            -artifact_prefix="$dir/crashes/$name-" "$work" \
            "tests/fuzz/corpus/$name" >"$dir/$name.log" 2>&1; then
        echo "fuzz $name: FAILED (see $dir/$name.log)"
        tail -40 "$dir/$name.log"
        exit 1
    fi
    exit 0
fi

n=$(find "$dir" -maxdepth 1 -name 'fuzz_*' -type f -perm -u+x | wc -l)
[ "$n" -gt 0 ] || { echo "fuzz: no targets in $dir"; exit 1; }
find "$dir" -maxdepth 1 -name 'fuzz_*' -type f -perm -u+x | sort |
    FUZZ_TIME=$time xargs -P "$jobs" -n 1 "$0" --one
