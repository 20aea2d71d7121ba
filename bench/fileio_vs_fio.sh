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
. "$(dirname "$0")/lib.sh"
bench_init fileio_vs_fio.sh fio python3 mkfs.ext4 losetup cargo
per_file=$(( $(bytes "$TOTAL") / FILES ))

bench_build --bin fsbench
fsb="$target/release/fsbench"
bench_tmpfs "$work/tmpfs" $(( $(bytes "$TOTAL") * 3 ))
bench_loop_fs ext4 "$work/ext4.img" $(( $(bytes "$TOTAL") * 3 + (256 << 20) )) "$work/ext4"

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
