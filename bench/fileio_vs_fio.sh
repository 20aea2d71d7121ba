#!/usr/bin/env bash
# bench/fileio_vs_fio.sh - fsbench's native `fileio` workload in `rndrd` mode against
# `fio --rw=randread --ioengine=psync`, same block size and the same file-set shape (FILES files
# of TOTAL/FILES bytes), on the same mounted filesystem, for two filesystems the script makes
# and removes itself:
#   tmpfs  a private tmpfs, buffered reads: per-operation CPU cost (harness overhead shows);
#   ext4   a loop-backed ext4 (image in a private folder under /var/tmp, loop device with
#          direct I/O on its backing file), O_DIRECT reads on both sides: the device's speed.
#
# Per filesystem it runs A = fsbench (release build, `fsbench run --dir`, reads_per_s read back
# from its JSON report) and B = fio, alternating A B A B … for PAIRS pairs, and prints every
# pair, the medians and the ratio fsbench / fio. Reported, not pass/fail.
#
# Matching semantics: sysbench (and so fsbench) draws every block uniformly with replacement,
# so fio gets --norandommap; fio would otherwise drop the files' page cache before its job, so
# it gets --invalidate=0 (fsbench runs with drop_caches = false here). fio lays its files out
# before timing, fsbench prepares its files untimed: neither counts the layout.
#
# Needs root (mount, losetup), fio, python3 and cargo.
# Environment: PAIRS (default 5), FILES (default 16), TOTAL (default 256M), BS (default 4k),
# TIME seconds per run (default 5), CARGO_TARGET_DIR (honoured).
set -euo pipefail

PAIRS=${PAIRS:-5}
FILES=${FILES:-16}
TOTAL=${TOTAL:-256M}
BS=${BS:-4k}
TIME=${TIME:-5}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")

if [ "$(id -u)" -ne 0 ]; then
    echo "fileio_vs_fio.sh: needs root to mount a tmpfs and a loop ext4" >&2
    exit 2
fi
for t in fio python3 mkfs.ext4 losetup; do
    command -v "$t" >/dev/null || { echo "fileio_vs_fio.sh: $t is not installed" >&2; exit 2; }
done

bytes() { python3 -c "import sys; s=sys.argv[1]; m={'k':1<<10,'m':1<<20,'g':1<<30}; print(int(s[:-1])*m[s[-1].lower()] if s[-1].lower() in m else int(s))" "$1"; }
per_file=$(( $(bytes "$TOTAL") / FILES ))

work=$(mktemp -d /var/tmp/fsbench-fio-bench.XXXXXX)
chmod 755 "$work"
loopdev=""
cleanup() {
    for m in "$work/tmpfs" "$work/ext4"; do
        if mountpoint -q "$m" 2>/dev/null; then umount "$m" || umount -l "$m"; fi
    done
    if [ -n "$loopdev" ]; then losetup -d "$loopdev" || true; fi
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "building fsbench (release) ..." >&2
(cd "$repo" && cargo build --quiet --release --bin fsbench)
target=${CARGO_TARGET_DIR:-$repo/target}
fsb="$target/release/fsbench"

mkdir -p "$work/tmpfs" "$work/ext4"
mount -t tmpfs -o "size=$(( $(bytes "$TOTAL") * 3 )),mode=0755" fsbench-fio-bench "$work/tmpfs"
truncate -s $(( $(bytes "$TOTAL") * 3 + (256 << 20) )) "$work/ext4.img"
loopdev=$(losetup --find --show --direct-io=on "$work/ext4.img")
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loopdev"
mount "$loopdev" "$work/ext4"

# suite FS IO: a one-repeat rndrd suite for fsbench.
suite() {
    cat <<EOF
[suite]
name = "fileio-vs-fio"
description = "bench/fileio_vs_fio.sh"

[run]
repeats = 1
drop_caches = false

[[fs]]
type = "$1"

[[workload]]
kind = "fileio"
mode = "rndrd"
files = $FILES
total_size = "$TOTAL"
block_size = "$BS"
time = "${TIME}s"
io = "$2"
EOF
}

# fsbench_iops FS IO DIR: reads/s of one fsbench run.
fsbench_iops() {
    suite "$1" "$2" > "$work/suite.toml"
    rm -f "$work/r.db"
    "$fsb" --db "$work/r.db" run "$work/suite.toml" --dir "$3" --scratch "$work/state" > /dev/null 2> "$work/fsbench.err" \
        || { cat "$work/fsbench.err" >&2; exit 1; }
    "$fsb" --db "$work/r.db" report latest --format json | python3 -c '
import json, sys
j = json.load(sys.stdin)
for t in j["workloads"]:
    for r in t["rows"]:
        if r["phase"] == "rndrd" and r["metric"]["name"] == "reads_per_s":
            print(r["cells"][0]["summary"]["mean"]); sys.exit(0)
sys.exit("no rndrd reads_per_s in the report")'
}

# fio_iops DIRECT DIR: read IOPS of one fio run.
fio_iops() {
    fio --name=fileio-peer --directory="$2" --nrfiles="$FILES" --filesize="$per_file" --bs="$BS" \
        --rw=randread --ioengine=psync --norandommap --invalidate=0 --direct="$1" \
        --time_based --runtime="$TIME" --output-format=json \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["read"]["iops"])'
}

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "$FILES files x $per_file bytes, block $BS, ${TIME} s per run, $PAIRS pairs (A = fsbench fileio rndrd, B = fio psync randread)" >&2
printf '%-6s %-9s %4s %14s %14s %8s\n' fs io pair "fsbench r/s" "fio IOPS" ratio
for fs in tmpfs ext4; do
    if [ "$fs" = tmpfs ]; then io=buffered; direct=0; else io=direct; direct=1; fi
    mkdir -p "$work/$fs/fsb" "$work/$fs/fio"
    : > "$work/a" ; : > "$work/b"
    for pair in $(seq 1 "$PAIRS"); do
        a=$(fsbench_iops "$fs" "$io" "$work/$fs/fsb")
        b=$(fio_iops "$direct" "$work/$fs/fio")
        echo "$a" >> "$work/a"; echo "$b" >> "$work/b"
        printf '%-6s %-9s %4s %14.0f %14.0f %8.3f\n' "$fs" "$io" "$pair" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')"
    done
    ma=$(median < "$work/a"); mb=$(median < "$work/b")
    printf '%-6s %-9s %4s %14.0f %14.0f %8.3f\n' "$fs" "$io" med "$ma" "$mb" "$(awk -v a="$ma" -v b="$mb" 'BEGIN {print a / b}')"
done
