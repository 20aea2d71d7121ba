#!/usr/bin/env bash
# bench/bonnie_smallfiles.sh - overhead of fsbench's bonnie small-file phases against a plain C
# syscall loop doing the same work (bench/smallfiles.c), on a private tmpfs so the filesystem
# itself is as fast and as quiet as possible and per-operation overhead shows.
#
# Runs A = fsbench (examples/bonnie_smallfiles.rs, the library's `bonnie` workload with
# file_size = 0, i.e. only seq_create, seq_stat, seq_delete, rand_create, rand_stat,
# rand_delete) and B = the C loop, alternating A B A B … for PAIRS pairs, with the same file
# count, file sizes and seed, in one directory. Prints per-phase medians (files/s) and the
# ratio fsbench / C. Reported, not pass/fail. Needs root (mount), gcc and cargo.
#
# Environment: PAIRS (default 7), FILES (default 65536), MIN_SIZE / MAX_SIZE in bytes
# (default 0 / 0, bonnie++'s default), TMPFS_SIZE (default 1g), CARGO_TARGET_DIR (honoured).
set -euo pipefail

PAIRS=${PAIRS:-7}
FILES=${FILES:-65536}
MIN_SIZE=${MIN_SIZE:-0}
MAX_SIZE=${MAX_SIZE:-0}
TMPFS_SIZE=${TMPFS_SIZE:-1g}
. "$(dirname "$0")/lib.sh"
bench_init bonnie_smallfiles.sh gcc cargo
mnt="$work/mnt"

gcc -O2 -Wall -o "$work/smallfiles" "$here/smallfiles.c"
bench_build --example bonnie_smallfiles
fsb="$target/release/examples/bonnie_smallfiles"
bench_tmpfs "$mnt" "$TMPFS_SIZE"
mkdir "$mnt/a" "$mnt/b"

results="$work/results"   # lines: tool phase rate
: > "$results"
echo "tmpfs, $FILES files of $MIN_SIZE..$MAX_SIZE bytes, one directory, $PAIRS pairs (A = fsbench, B = C)" >&2
for pair in $(seq 1 "$PAIRS"); do
    "$fsb" "$mnt/a" "$FILES" "$MIN_SIZE" "$MAX_SIZE" "$pair" | awk '{print "fsbench", $1, $2}' >> "$results"
    "$work/smallfiles" "$mnt/b" "$FILES" "$MIN_SIZE" "$MAX_SIZE" "$pair" | awk '{print "c", $1, $2}' >> "$results"
    echo "  pair $pair done" >&2
done
for d in a b; do
    if [ -n "$(ls -A "$mnt/$d")" ]; then echo "warning: $mnt/$d not empty after the runs" >&2; fi
done

printf '%-12s %14s %14s %8s  %s\n' phase "fsbench/s" "C/s" "ratio" "pair ratios: median (min-max)"
for phase in seq_create seq_stat seq_delete rand_create rand_stat rand_delete; do
    a=$(awk -v p="$phase" '$1 == "fsbench" && $2 == p {print $3}' "$results" | median)
    b=$(awk -v p="$phase" '$1 == "c" && $2 == p {print $3}' "$results" | median)
    spread=$(pair_spread "$results" "$phase")
    printf '%-12s %14.0f %14.0f %8.3f  %s\n' "$phase" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$spread"
done
