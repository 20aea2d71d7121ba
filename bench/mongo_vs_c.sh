#!/usr/bin/env bash
# bench/mongo_vs_c.sh - overhead of fsbench's mongo phases against a plain C program doing the
# same system calls on the same names in the same order (bench/mongo_meta.c), on a private
# tmpfs so the filesystem is as fast and quiet as possible and per-operation cost shows.
#
# Runs A = fsbench (examples/mongo_meta.rs: the library's `mongo` workload, one process,
# fsync = false, caches not dropped; tmpfs has no FIEMAP so the fragmentation phases are left
# out) and B = the C program, for PAIRS pairs with the same file count, size and directories,
# in A B B A A B ... order: the run after another one pays for the inodes it freed (RCU), so
# each side goes first in half of the pairs. Prints per-phase median seconds and the ratio fsbench / C (above 1:
# fsbench is slower). Reported, not pass/fail. Needs root (mount), gcc and cargo.
#
# Environment: PAIRS (default 8), FILES (default 50000), SIZE in bytes (default 0: empty
# files, the metadata-only case; 100 is mongo's smallest table), DIRS (default 100),
# TMPFS_SIZE (default 2g), CARGO_TARGET_DIR (honoured).
set -euo pipefail

PAIRS=${PAIRS:-8}
FILES=${FILES:-50000}
SIZE=${SIZE:-0}
DIRS=${DIRS:-100}
TMPFS_SIZE=${TMPFS_SIZE:-2g}
. "$(dirname "$0")/lib.sh"
bench_init mongo_vs_c.sh gcc cargo
mnt="$work/mnt"

gcc -O2 -Wall -o "$work/mongo_meta" "$here/mongo_meta.c"
bench_build --example mongo_meta
fsb="$target/release/examples/mongo_meta"
bench_tmpfs "$mnt" "$TMPFS_SIZE"
mkdir "$mnt/a" "$mnt/b"

results="$work/results"   # lines: tool phase seconds
: > "$results"
echo "tmpfs, $FILES files of $SIZE bytes in $DIRS directories, $PAIRS pairs (A = fsbench, B = C)" >&2
run_a() { "$fsb" "$mnt/a" "$FILES" "$SIZE" "$DIRS" | awk '{print "fsbench", $1, $2}' >> "$results"; }
run_b() { "$work/mongo_meta" "$mnt/b" "$FILES" "$SIZE" "$DIRS" | awk '{print "c", $1, $2}' >> "$results"; }
for pair in $(seq 1 "$PAIRS"); do
    if [ $((pair % 2)) = 1 ]; then run_a; run_b; else run_b; run_a; fi
    echo "  pair $pair done" >&2
done
for d in a b; do
    if [ -n "$(ls -A "$mnt/$d")" ]; then echo "warning: $mnt/$d not empty after the runs" >&2; fi
done

printf '%-8s %12s %12s %8s  %s\n' phase "fsbench s" "C s" "ratio" "pair ratios: median (min-max)"
for phase in create copy symlink read stat rename delete; do
    a=$(awk -v p="$phase" '$1 == "fsbench" && $2 == p {print $3}' "$results" | median)
    b=$(awk -v p="$phase" '$1 == "c" && $2 == p {print $3}' "$results" | median)
    printf '%-8s %12.4f %12.4f %8.3f  %s\n' "$phase" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$(pair_spread "$results" "$phase")"
done
