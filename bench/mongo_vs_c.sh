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
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")

if [ "$(id -u)" -ne 0 ]; then
    echo "mongo_vs_c.sh: needs root to mount a private tmpfs" >&2
    exit 2
fi

work=$(mktemp -d /tmp/fsbench-bench.XXXXXX)
mnt="$work/mnt"
mounted=0
cleanup() {
    if [ "$mounted" = 1 ]; then umount "$mnt" || umount -l "$mnt"; fi
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "building ..." >&2
gcc -O2 -Wall -o "$work/mongo_meta" "$here/mongo_meta.c"
(cd "$repo" && cargo build --quiet --release --example mongo_meta)
target=${CARGO_TARGET_DIR:-$repo/target}
fsb="$target/release/examples/mongo_meta"

mkdir -p "$mnt"
mount -t tmpfs -o "size=$TMPFS_SIZE,mode=0700" fsbench-bench "$mnt"
mounted=1
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

# pair_spread PHASE: min-max of the per-pair ratios fsbench / C (pair i = i-th run of each).
pair_spread() {
    awk -v p="$1" '$2 == p && $1 == "fsbench" {a[++na] = $3} $2 == p && $1 == "c" {b[++nb] = $3}
        END {lo = 1e300; hi = 0; for (i = 1; i <= na && i <= nb; i++) {r = a[i] / b[i]; if (r < lo) lo = r; if (r > hi) hi = r}
             printf "%.3f-%.3f", lo, hi}' "$results"
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-8s %12s %12s %8s %13s\n' phase "fsbench s" "C s" "ratio" "pair ratios"
for phase in create copy symlink read stat rename delete; do
    a=$(awk -v p="$phase" '$1 == "fsbench" && $2 == p {print $3}' "$results" | median)
    b=$(awk -v p="$phase" '$1 == "c" && $2 == p {print $3}' "$results" | median)
    printf '%-8s %12.4f %12.4f %8.3f %13s\n' "$phase" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$(pair_spread "$phase")"
done
