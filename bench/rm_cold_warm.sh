#!/usr/bin/env bash
# bench/rm_cold_warm.sh - how much `rm -rf` of a tree depends on the cache state it starts in:
# the explanation of the "native delete 1.6x rm -rf on xfs and btrfs" that issue 42 measured by
# hand (rm -rf timed right after cp -a, everything cached) against fsbench's treecopy delete
# (caches dropped before the phase, as for every phase; doc/verify.md, issue 42 item 6).
#
# Per filesystem of FS: one loop filesystem, TREE copied onto it once. Then ROUNDS rounds of:
# `cp -a --reflink=never tree c` + syncfs, then `rm -rf c` + syncfs either *cold* (sync, then
# `echo 3 > drop_caches` first: what fsbench's phase does) or *warm* (right after the copy: what
# one times by hand), alternating cold, warm. Prints each removal (seconds with its syncfs, the
# device's read requests) and per filesystem the median cold / warm ratio.
#
# Needs root and coreutils only. Environment: FS ("ext4 xfs btrfs"), TREE (a real directory,
# e.g. the Linux source tree of doc/verify.md; required), ROUNDS (3), IMAGE_SIZE (8G).
set -euo pipefail

FS=${FS:-ext4 xfs btrfs}
TREE=${TREE:?TREE must name a directory to copy (a kernel source tree: doc/verify.md)}
ROUNDS=${ROUNDS:-3}
IMAGE_SIZE=${IMAGE_SIZE:-8G}
. "$(dirname "$0")/lib.sh"
bench_init rm_cold_warm.sh
[ -d "$TREE" ] || { echo "rm_cold_warm.sh: TREE=$TREE is not a directory" >&2; exit 2; }

now() { date +%s.%N; }
for fs in $FS; do
    mnt="$work/$fs"
    bench_loop_fs "$fs" "$work/$fs.img" "$IMAGE_SIZE" "$mnt" 2>/dev/null
    dev=$(basename "$(findmnt -n -o SOURCE "$mnt")")
    cp -a --reflink=never "$TREE" "$mnt/tree"
    sync -f "$mnt"
    : > "$work/$fs.times"
    for r in $(seq "$ROUNDS"); do
        for state in cold warm; do
            cp -a --reflink=never "$mnt/tree" "$mnt/c"
            sync -f "$mnt"
            if [ "$state" = cold ]; then
                sync
                echo 3 > /proc/sys/vm/drop_caches
            fi
            reads0=$(awk '{print $1}' "/sys/block/$dev/stat")
            a=$(now)
            rm -rf "$mnt/c"
            sync -f "$mnt"
            b=$(now)
            reads=$(( $(awk '{print $1}' "/sys/block/$dev/stat") - reads0 ))
            s=$(echo "$b - $a" | bc)
            echo "$fs round $r $state: rm -rf + syncfs $s s, $reads device reads"
            echo "$r $state $s" >> "$work/$fs.times"
        done
    done
    awk '{t[$1, $2] = $3; n[$1] = 1} END {for (r in n) print t[r, "cold"] / t[r, "warm"]}' "$work/$fs.times" |
        median | xargs printf "%s: median cold / warm rm -rf time over %d rounds: %.3f\n" "$fs" "$ROUNDS"
    umount "$mnt"
done
