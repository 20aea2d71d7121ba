#!/usr/bin/env bash
# bench/pipeline_vs_c.sh - the WHOLE fsbench pipeline on bonnie's small-file phases against the
# plain C syscall loop bench/smallfiles.c (the issue-12 hot-loop check: "the hot loop is not
# slower for the reshaping").
#
# A = the real binary: `fsbench --db DB run SUITE --dir MNT/a` (release build; CLI parsing, suite
# load, plan, SQLite session, DirProvisioner, engine, store, report), with a one-repeat suite of
# one `bonnie` workload limited to its six small-file phases (file_size = 0, as bonnie++ -s 0):
# FILES empty files (file_max_size = 0) in one directory, fsync = false (the C loop syncs
# nothing either), drop_caches = false. Per-phase rates (files/s) are read back from
# `fsbench report --format json` of the database it wrote (one fresh database per run).
# B = smallfiles.c, same file count, same seed, same directory depth, on the same private tmpfs.
# With EXAMPLE=1, E = examples/bonnie_smallfiles.rs (the library's workload without the CLI)
# runs as a third arm, so the gap of the pipeline to the bare workload shows in the same run.
#
# The arms alternate for PAIRS pairs, and the one that goes first rotates (A B, B A, … or
# A E B, E B A, B A E, …): a run pays for the inodes the run before it freed (RCU), so no side
# may always follow the same other side. Prints per phase the medians, the ratio of the
# medians and the median (min-max) of the per-pair ratios fsbench / C (the steadier figure on a
# shared machine); then the same pair ratios of files per CPU-second (the process's user +
# system time of the phase: fsbench's `cpu_process` × the phase's wall time, the C loop's
# CLOCK_PROCESS_CPUTIME_ID), which leaves out the time the hypervisor stole from the vCPU and
# the time other processes had it, so it stays steady when the wall-time ratios swing.
# Reported, not pass/fail. Needs root (mount), gcc, python3 and cargo.
#
# Environment: PAIRS (default 9), FILES (default 100000), TMPFS_SIZE (default 1g),
# EXAMPLE (default 0), CARGO_TARGET_DIR (honoured).
set -euo pipefail

PAIRS=${PAIRS:-9}
FILES=${FILES:-100000}
TMPFS_SIZE=${TMPFS_SIZE:-1g}
EXAMPLE=${EXAMPLE:-0}
. "$(dirname "$0")/lib.sh"
bench_init pipeline_vs_c.sh gcc cargo python3
mnt="$work/mnt"

gcc -O2 -Wall -o "$work/smallfiles" "$here/smallfiles.c"
if [ "$EXAMPLE" = 1 ]; then
    bench_build --bin fsbench --example bonnie_smallfiles
else
    bench_build --bin fsbench
fi
fsb="$target/release/fsbench"
bench_tmpfs "$mnt" "$TMPFS_SIZE"
mkdir "$mnt/a" "$mnt/b" "$mnt/e"

# suite SEED: the one-repeat, small-files-only bonnie suite.
suite() {
    cat <<EOF
[suite]
name = "pipeline-vs-c"
description = "bench/pipeline_vs_c.sh"

[run]
repeats = 1
warmup = 0
drop_caches = false

[[fs]]
type = "tmpfs"

[[workload]]
kind = "bonnie"
name = "bonnie"
file_size = "0"
files = $FILES
file_min_size = "0"
file_max_size = "0"
dirs = 1
fsync = false
seed = $1
EOF
}

results="$work/results"   # lines: tool phase rate cpu_rate (files/s, files per CPU-second)
: > "$results"

run_pipeline() {
    suite "$1" > "$work/suite.toml"
    rm -f "$work/r.db" "$work/report.html"
    "$fsb" --db "$work/r.db" run "$work/suite.toml" --dir "$mnt/a" --scratch "$work/state" > /dev/null 2> "$work/fsbench.err" \
        || { cat "$work/fsbench.err" >&2; exit 1; }
    "$fsb" --db "$work/r.db" report latest --format json | python3 -c '
import json, sys
j = json.load(sys.stdin)
rate, n = {}, 0
for t in j["workloads"]:
    for r in t["rows"]:
        v = r["cells"][0]["values"][0]
        if r["metric"]["name"] == "rate":
            rate[r["phase"]] = v
        elif r["metric"]["name"] == "cpu_process":
            print("fsbench", r["phase"], rate[r["phase"]], rate[r["phase"]] / (v / 100)); n += 1
sys.exit(0 if n == 6 else "expected six small-file phases with rate and cpu_process in the report, found %d" % n)' >> "$results"
}
run_c() { "$work/smallfiles" "$mnt/b" "$FILES" 0 0 "$1" | awk '{print "c", $1, $2, $3}' >> "$results"; }
run_example() {
    "$target/release/examples/bonnie_smallfiles" "$mnt/e" "$FILES" 0 0 "$1" | awk '{print "example", $1, $2, $2 / ($4 / 100)}' >> "$results"
}

if [ "$EXAMPLE" = 1 ]; then arms=(run_pipeline run_example run_c); else arms=(run_pipeline run_c); fi
what="A = fsbench run --dir, B = C"
[ "$EXAMPLE" = 1 ] && what="A = fsbench run --dir, E = example, B = C"
echo "tmpfs, $FILES empty files, one directory, $PAIRS pairs ($what); load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for pair in $(seq 1 "$PAIRS"); do
    n=${#arms[@]}
    for k in $(seq 0 $((n - 1))); do
        "${arms[$(((pair - 1 + k) % n))]}" "$pair"
    done
    echo "  pair $pair done" >&2
done
for d in a b e; do
    if [ -n "$(ls -A "$mnt/$d")" ]; then echo "warning: $mnt/$d not empty after the runs" >&2; fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# ratio_spread COL PHASE A B: "median (min-max)" of the per-pair ratios A / B of column COL.
ratio_spread() {
    awk -v c="$1" -v p="$2" -v a="$3" -v b="$4" '$2 == p && $1 == a {x[++nx] = $c} $2 == p && $1 == b {y[++ny] = $c}
        END {for (i = 1; i <= nx && i <= ny; i++) print x[i] / y[i]}' "$results" | sort -g |
        awk '{r[NR] = $1} END {m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
             printf "%.3f (%.3f-%.3f)", m, r[1], r[NR]}'
}
med() { awk -v c="$1" -v p="$2" -v t="$3" '$1 == t && $2 == p {print $c}' "$results" | median; }
phases="seq_create seq_stat seq_delete rand_create rand_stat rand_delete"

echo "files per second of wall time"
printf '%-12s %12s %12s %8s  %-29s' phase "fsbench/s" "C/s" "ratio" "pair ratios: median (min-max)"
[ "$EXAMPLE" = 1 ] && printf '  %-26s  %s' "example/C pairs" "fsbench/example pairs"
echo
for phase in $phases; do
    a=$(med 3 "$phase" fsbench)
    b=$(med 3 "$phase" c)
    printf '%-12s %12.0f %12.0f %8.3f  %-29s' "$phase" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" \
        "$(ratio_spread 3 "$phase" fsbench c)"
    [ "$EXAMPLE" = 1 ] && printf '  %-26s  %s' "$(ratio_spread 3 "$phase" example c)" "$(ratio_spread 3 "$phase" fsbench example)"
    echo
done
echo
echo "files per CPU-second (user + system time of the process; steal and other processes left out)"
printf '%-12s %12s %12s %8s  %-29s' phase "fsbench" "C" "ratio" "pair ratios: median (min-max)"
[ "$EXAMPLE" = 1 ] && printf '  %-26s  %s' "example/C pairs" "fsbench/example pairs"
echo
for phase in $phases; do
    a=$(med 4 "$phase" fsbench)
    b=$(med 4 "$phase" c)
    printf '%-12s %12.0f %12.0f %8.3f  %-29s' "$phase" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" \
        "$(ratio_spread 4 "$phase" fsbench c)"
    [ "$EXAMPLE" = 1 ] && printf '  %-26s  %s' "$(ratio_spread 4 "$phase" example c)" "$(ratio_spread 4 "$phase" fsbench example)"
    echo
done
