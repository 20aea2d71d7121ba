#!/usr/bin/env bash
# bench/powerdisk_cost.sh - what the power-cut disk costs the filesystem above it: the same short
# bonnie and fileio phases on ext4 over a loop device backed by a plain image file (A) and over a
# loop device backed by the same kind of image served by fsbench's FUSE power-cut disk in
# pass-through mode (B: `fsbench powerdisk --model passthrough`, every write and flush through
# the FUSE server, nothing kept for a cut).
#
# Both filesystems are made once, side by side; then PAIRS rounds each run one `fsbench run
# --dir` session on A, then one on B (alternating). Prints, per phase, the median throughput of A
# and B and the median of the per-pair ratios B / A (below 1: the disk slows the filesystem by
# that factor). The power-cut model (volatile) also copies a block's old contents before its
# first overwrite since the last flush, so it costs somewhat more than pass-through.
#
# Needs root and cargo. Environment: FS (ext4), PAIRS (3), IMAGE_SIZE (1G), CARGO_TARGET_DIR.
set -euo pipefail

FS=${FS:-ext4}
PAIRS=${PAIRS:-3}
IMAGE_SIZE=${IMAGE_SIZE:-1G}
. "$(dirname "$0")/lib.sh"
bench_init powerdisk_cost.sh cargo

bench_build --bin fsbench
fsb="$target/release/fsbench"

# Over the FUSE disk: stop in order (filesystem, loop device, FUSE mount) before the generic cleanup.
b_dev=""
stop_b() {
    if mountpoint -q "$work/b"; then umount "$work/b"; fi
    if [ -n "$b_dev" ]; then losetup -d "$b_dev" || true; fi
    if mountpoint -q "$work/disk"; then umount "$work/disk"; fi
}
trap 'stop_b; bench_cleanup' EXIT INT TERM

bench_loop_fs "$FS" "$work/a.img" "$IMAGE_SIZE" "$work/a"
truncate -s "$IMAGE_SIZE" "$work/b.img"
mkdir "$work/disk" "$work/b"
(cd "$work" && exec "$fsb" powerdisk --base b.img --mount disk --model passthrough) &
for _ in $(seq 100); do mountpoint -q "$work/disk" && break; sleep 0.05; done
mountpoint -q "$work/disk" || { echo "the power-cut disk did not mount" >&2; exit 1; }
# Buffered backing I/O: the FUSE file is opened with FOPEN_DIRECT_IO, so no page cache either way.
b_dev=$(losetup --find --show "$work/disk/image")
case "$FS" in
    ext*) "mkfs.$FS" -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$b_dev" ;;
    *) "mkfs.$FS" -f -q "$b_dev" ;;
esac
mount "$b_dev" "$work/b"

cat > "$work/suite.toml" <<SUITE
[suite]
name = "powerdisk-cost"

[run]
repeats = 1
warmup = 0
drop_caches = true
trim = 0

[[fs]]
type = "$FS"

[[workload]]
kind = "bonnie"
name = "bonnie"
file_size = "256MiB"
char_size = "8MiB"
files = 2048
seeks = 2000

[[workload]]
kind = "fileio"
name = "fileio"
mode = "rndrw"
files = 16
total_size = "128MiB"
fsync_freq = 100
time = "5s"
SUITE

: > "$work/values"
for pair in $(seq "$PAIRS"); do
    for arm in a b; do
        mkdir -p "$work/$arm/run"
        "$fsb" --db "$work/$arm.db" run "$work/suite.toml" --dir "$work/$arm/run" > /dev/null
        # Columns: workload=5 is_warmup=8 phase=10 metric=11 value=14.
        "$fsb" --db "$work/$arm.db" report latest --format csv |
            awk -F, -v a="$arm" -v p="$pair" '$8 == "false" && ($11 == "throughput" || $11 == "rate" || $11 == "reads_per_s" || $11 == "writes_per_s") { print a, p, $5 "/" $10 "/" $11, $14 }' >> "$work/values"
    done
done

echo "$FS, plain image (A) vs FUSE power-cut disk in pass-through (B), $PAIRS pairs; ratio = B / A (median of pairs)"
printf "%-40s %14s %14s %8s\n" phase A B ratio
for key in $(awk '{ print $3 }' "$work/values" | sort -u); do
    a=$(awk -v k="$key" '$1 == "a" && $3 == k { print $4 }' "$work/values" | median)
    b=$(awk -v k="$key" '$1 == "b" && $3 == k { print $4 }' "$work/values" | median)
    r=$(awk -v k="$key" '$3 == k { v[$1, $2] = $4; p[$2] = 1 }
        END { for (i in p) if (v["a", i] > 0) print v["b", i] / v["a", i] }' "$work/values" | median)
    printf "%-40s %14.1f %14.1f %8.3f\n" "$key" "$a" "$b" "$r"
done
