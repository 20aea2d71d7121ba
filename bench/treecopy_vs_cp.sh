#!/usr/bin/env bash
# bench/treecopy_vs_cp.sh - fsbench's native tree copier against coreutils `cp -a
# --reflink=never` (what people time by hand), and its remover against `rm -rf`: same tree, same
# filesystem, same run.
#
# One loop-backed filesystem (FS, default ext4) is made and mounted once. A kernel-like tree is
# generated on it once (`fsbench dataset gen kernel`, SCALE of the 1.2 GB profile). Then one
# `fsbench run --dir` session runs two treecopy workloads on that tree, `native` and `cp`
# (method = "cp": exactly `cp -a --reflink=never tree tree.copy`, then `rm -rf`), PAIRS
# measured repeats each, in the order native, cp, native, cp, … (fsbench's interleaved order).
# Both see the same preparation (the tree copied untimed into the run directory), the same
# sync + drop caches before each phase, and the same syncfs at the end of each phase, so the
# only difference is the copier. Prints each pair and the median ratio native / cp for copy and
# delete (below 1: fsbench is faster). Reported, not pass/fail; the target is within 10 %.
#
# Needs root (loop device, mount, drop_caches) and cargo. Environment: FS (ext4), SCALE (0.2 =
# 15,000 files, 240 MB), PAIRS (5), IMAGE_SIZE (4G), DROP_CACHES (true), CARGO_TARGET_DIR.
set -euo pipefail

FS=${FS:-ext4}
SCALE=${SCALE:-0.2}
PAIRS=${PAIRS:-5}
IMAGE_SIZE=${IMAGE_SIZE:-4G}
DROP_CACHES=${DROP_CACHES:-true}
. "$(dirname "$0")/lib.sh"
bench_init treecopy_vs_cp.sh cargo
mnt="$work/mnt"

bench_build --bin fsbench
fsb="$target/release/fsbench"
bench_loop_fs "$FS" "$work/fs.img" "$IMAGE_SIZE" "$mnt"

"$fsb" dataset gen kernel "$mnt/tree" --scale "$SCALE" --seed 1 >&2
mkdir "$mnt/run"
sync

cat > "$work/suite.toml" <<SUITE
[suite]
name = "treecopy-vs-cp"

[run]
repeats = $PAIRS
order = "interleaved"
drop_caches = $DROP_CACHES
trim = 0

[[fs]]
type = "$FS"

[[workload]]
kind = "treecopy"
name = "native"
dataset = "$mnt/tree"
method = "native"
reflink = "never"

[[workload]]
kind = "treecopy"
name = "cp"
dataset = "$mnt/tree"
method = "cp"
reflink = "never"
SUITE

echo "$FS on a loop device, kernel tree at scale $SCALE, $PAIRS pairs (native, cp alternating), drop_caches=$DROP_CACHES" >&2
"$fsb" --db "$work/r.db" run "$work/suite.toml" --dir "$mnt/run" > "$work/table.txt"
"$fsb" --db "$work/r.db" report latest --format csv > "$work/r.csv"

# Columns: workload=5 repeat=7 is_warmup=8 phase=10 metric=11 value=14.
awk -F, '$8 == "false" && $11 == "time" { print $10, $7, $5, $14 }' "$work/r.csv" | sort > "$work/times"
for phase in copy delete; do
    echo "$phase: pair  native_s  cp_s  ratio"
    awk -v p="$phase" '$1 == p { t[$2, $3] = $4; r[$2] = 1 }
        END { for (k in r) if ((k, "native") in t && (k, "cp") in t)
                  printf "%d %.3f %.3f %.4f\n", k + 1, t[k, "native"], t[k, "cp"], t[k, "native"] / t[k, "cp"] }' \
        "$work/times" | sort -n | tee "$work/ratios.$phase" | sed 's/^/  /'
    awk '{ print $4 }' "$work/ratios.$phase" | sort -g |
        awk -v p="$phase" '{ v[NR] = $1 } END {
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "median ratio native/%s (%s, %d pairs): %.3f\n", (p == "copy" ? "cp -a --reflink=never" : "rm -rf"), p, NR, m }'
done
