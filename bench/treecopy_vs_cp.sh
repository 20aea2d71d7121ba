#!/usr/bin/env bash
# bench/treecopy_vs_cp.sh - fsbench's native tree copier against coreutils `cp -a
# --reflink=never` (what people time by hand), and its remover against `rm -rf`: same tree, same
# filesystem type, same cache state, same run.
#
# One `fsbench run` session runs two treecopy workloads, `native` and `cp` (method = "cp":
# `cp -a --reflink=never tree tree.copy`, then `rm -rf tree.copy`, each followed by syncfs), PAIRS
# measured repeats each on every filesystem type of FS, in the order native, cp, native, cp, …
# (fsbench's interleaved order), each repeat on a fresh loop filesystem that fsbench makes
# (mkfs + mount, its image sized to the tree). Both see the same preparation (the tree laid out
# untimed on the fresh filesystem), the same sync + drop caches before each phase (unless
# DROP_CACHES=false), and the same syncfs at the end of each phase, so the only difference is
# the copier. Prints, per filesystem and phase, each pair (seconds, the device's read requests,
# the process's CPU seconds) and the median ratio native / cp (below 1: fsbench is faster).
# Reported, not pass/fail; the target is within 10 %.
#
# The tree: TREE, the path of a real directory (a kernel source tree: `apt-get download
# linux-source-6.1` and unpack its tar.xz outside any repository, doc/verify.md), copied as it
# is; or, without TREE, fsbench's generated `kernel` dataset at SCALE of its 1.2 GB profile.
#
# Needs root (loop devices, mkfs, mount, drop_caches) and cargo. Environment: FS ("ext4"; a
# space-separated list, e.g. "ext4 xfs btrfs"), TREE (unset), SCALE (0.2 = 15,000 files, 240
# MB), PAIRS (5), DROP_CACHES (true), REFEREE (`cp-a`: `cp -a` as people run it; `verify`: the
# invocation of fsbench verify's treecopy pair, `GLIBC_TUNABLES=… cp -dR
# --preserve=ownership,timestamps,links`), NATIVE (extra TOML lines for the native workload,
# e.g. 'delete_order = "inode"'), SCRATCH (where fsbench puts its images; default a folder of
# the work directory under /var/tmp), CARGO_TARGET_DIR.
set -euo pipefail

FS=${FS:-ext4}
TREE=${TREE:-}
SCALE=${SCALE:-0.2}
PAIRS=${PAIRS:-5}
DROP_CACHES=${DROP_CACHES:-true}
REFEREE=${REFEREE:-cp-a}
NATIVE=${NATIVE:-}
. "$(dirname "$0")/lib.sh"
bench_init treecopy_vs_cp.sh cargo
SCRATCH=${SCRATCH:-$work/scratch}
mkdir -p "$SCRATCH"

if [ -n "$TREE" ]; then
    [ -d "$TREE" ] || { echo "treecopy_vs_cp.sh: TREE=$TREE is not a directory" >&2; exit 2; }
    dataset="dataset = \"$TREE\""
    what="$TREE ($(find "$TREE" -type f | wc -l) files)"
else
    dataset="dataset = \"kernel\"
dataset_scale = $SCALE"
    what="generated kernel tree at scale $SCALE"
fi
case "$REFEREE" in
    cp-a) referee="" ;;
    verify) referee='cp_preserve = "ownership,timestamps,links"
cp_reuse_buffer = true' ;;
    *) echo "treecopy_vs_cp.sh: REFEREE is cp-a or verify" >&2; exit 2 ;;
esac

bench_build --bin fsbench
fsb="$target/release/fsbench"

{
    cat <<SUITE
[suite]
name = "treecopy-vs-cp"

[run]
repeats = $PAIRS
order = "interleaved"
drop_caches = $DROP_CACHES
trim = 0
SUITE
    for fs in $FS; do printf '\n[[fs]]\ntype = "%s"\n' "$fs"; done
    cat <<SUITE

[[workload]]
kind = "treecopy"
name = "native"
$dataset
method = "native"
reflink = "never"
$NATIVE

[[workload]]
kind = "treecopy"
name = "cp"
$dataset
method = "cp"
reflink = "never"
$referee
SUITE
} > "$work/suite.toml"

echo "$FS: $what, $PAIRS pairs (native, cp alternating, a fresh filesystem each), drop_caches=$DROP_CACHES, referee $REFEREE" >&2
"$fsb" --db "$work/r.db" run "$work/suite.toml" --scratch "$SCRATCH" > "$work/table.txt"
"$fsb" --db "$work/r.db" report latest --format csv > "$work/r.csv"

# One line per (fs, phase, repeat, workload): seconds, device read requests, process CPU seconds.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $h["is_warmup"] == "false" && ($h["phase"] == "copy" || $h["phase"] == "delete") {
        k = $h["fs_type"] " " $h["phase"] " " $h["repeat"] " " $h["workload"]; v[k, $h["metric"]] = $h["value"]; keys[k] = 1 }
    END { for (k in keys) printf "%s %.4f %d %.3f\n", k, v[k, "time"], v[k, "device_reads"], v[k, "cpu_process"] * v[k, "time"] / 100 }' \
    "$work/r.csv" | sort > "$work/rows"
for fs in $FS; do
    for phase in copy delete; do
        echo "$fs $phase: pair  native_s  cp_s  ratio  native_reads  cp_reads  native_cpu_s  cp_cpu_s"
        awk -v f="$fs" -v p="$phase" '$1 == f && $2 == p { t[$3, $4] = $5; r[$3, $4] = $6; c[$3, $4] = $7; n[$3] = 1 }
            END { for (k in n) if ((k, "native") in t && (k, "cp") in t)
                      printf "%d %.3f %.3f %.4f %d %d %.2f %.2f\n", k + 1, t[k, "native"], t[k, "cp"], t[k, "native"] / t[k, "cp"],
                          r[k, "native"], r[k, "cp"], c[k, "native"], c[k, "cp"] }' \
            "$work/rows" | sort -n | tee "$work/ratios.$fs.$phase" | sed 's/^/  /'
        m=$(awk '{ print $4 }' "$work/ratios.$fs.$phase" | median)
        printf "median ratio native/%s (%s %s, %d pairs): %.3f\n" \
            "$([ "$phase" = copy ] && echo "cp ($REFEREE)" || echo "rm -rf")" "$fs" "$phase" \
            "$(wc -l < "$work/ratios.$fs.$phase")" "$m"
    done
done
