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
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")

if [ "$(id -u)" -ne 0 ]; then
    echo "bonnie_smallfiles.sh: needs root to mount a private tmpfs" >&2
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
gcc -O2 -Wall -o "$work/smallfiles" "$here/smallfiles.c"
(cd "$repo" && cargo build --quiet --release --example bonnie_smallfiles)
target=${CARGO_TARGET_DIR:-$repo/target}
fsb="$target/release/examples/bonnie_smallfiles"

mkdir -p "$mnt"
mount -t tmpfs -o "size=$TMPFS_SIZE,mode=0700" fsbench-bench "$mnt"
mounted=1
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

# pair_spread PHASE: min-max of the per-pair ratios fsbench / C (pair i = i-th run of each).
pair_spread() {
    awk -v p="$1" '$2 == p && $1 == "fsbench" {a[++na] = $3} $2 == p && $1 == "c" {b[++nb] = $3}
        END {lo = 1e300; hi = 0; for (i = 1; i <= na && i <= nb; i++) {r = a[i] / b[i]; if (r < lo) lo = r; if (r > hi) hi = r}
             printf "%.3f-%.3f", lo, hi}' "$results"
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-12s %14s %14s %8s %13s\n' phase "fsbench/s" "C/s" "ratio" "pair ratios"
for phase in seq_create seq_stat seq_delete rand_create rand_stat rand_delete; do
    a=$(awk -v p="$phase" '$1 == "fsbench" && $2 == p {print $3}' "$results" | median)
    b=$(awk -v p="$phase" '$1 == "c" && $2 == p {print $3}' "$results" | median)
    spread=$(pair_spread "$phase")
    printf '%-12s %14.0f %14.0f %8.3f %13s\n' "$phase" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$spread"
done
