#!/usr/bin/env bash
# bench/mpi_vs_fio.sh - fsbench's MPI mode against fio's own multi-job run, for 1, 2 and 4
# processes on tmpfs (issue 16).
#
#   A = `mpirun -np N fsbench run` (release build with --features mpi): N ranks, each running the
#       `fileio` workload (rndrd, FILES files of TOTAL/FILES bytes per rank, in its own
#       subdirectory of the tmpfs rank 0 mounts), one sync before the phase; the figure is the
#       stored fair-share throughput `reads_per_s_fair_share` (all ranks' reads over first start
#       to last end; for N = 1 the rank's own reads_per_s);
#   B = `fio --numjobs=N --group_reporting`: N independent jobs started together, each with its
#       own file set of the same shape, psync, --norandommap --invalidate=0 like
#       bench/fileio_vs_fio.sh; fio's read IOPS of the group;
#   C = fio's own client/server mode, the second referee: N `fio --server` processes on this
#       host (ports 18765…), one `fio --client=… job --client=… job …` sending each its own job
#       (the same shape, its own directory); fio's "All clients" read IOPS.
#
# Alternates A B C A B C … PAIRS times per N and prints every pair, the medians, the ratios
# fsbench / fio and fsbench / fio client-server (above 1 = fsbench drives more reads per second), and the median of fsbench's
# stored barrier cost of the phase (`barrier_s`: the last rank's arrival at the phase's sync to
# the last rank leaving it). Reported, not pass/fail.
#
# Needs root, mpirun (openmpi-bin), fio, python3, cargo.
# Environment: PAIRS (default 3, a positive integer: `PAIRS=1` for a quick look, more on a quiet
# machine), FILES (default 4), TOTAL per process (default 64M), BS (default 4k), TIME seconds
# per run (default 3), RANKS (default "1 2 4"), FSBENCH_BIN (an fsbench built with
# --features mpi to use instead of the release build, e.g. target/debug/fsbench for a smoke
# test; its figures are then not the release build's).
#
# The barrier cost is printed per phase of the suite (`barrier_s` of every cluster phase,
# median over the pairs), so a suite with more phases shows each.
set -euo pipefail

PAIRS=${PAIRS:-3}
case $PAIRS in
'' | *[!0-9]* | 0) echo "mpi_vs_fio.sh: PAIRS must be a positive integer, not '$PAIRS'" >&2; exit 2 ;;
esac
FILES=${FILES:-4}
TOTAL=${TOTAL:-64M}
BS=${BS:-4k}
TIME=${TIME:-3}
RANKS=${RANKS:-1 2 4}
. "$(dirname "$0")/lib.sh"
bench_init mpi_vs_fio.sh mpirun fio python3 cargo

if [ -n "${FSBENCH_BIN:-}" ]; then
    fsb=$(realpath "$FSBENCH_BIN")
else
    bench_build --bin fsbench --features mpi
    fsb="$target/release/fsbench"
fi
bench_tmpfs "$work/fio" $(( $(bytes "$TOTAL") * 4 * 2 ))

cat >"$work/suite.toml" <<EOF
[suite]
name = "mpi-vs-fio"
description = "bench/mpi_vs_fio.sh"

[run]
repeats = 1
drop_caches = false

[[fs]]
type = "tmpfs"

[[workload]]
kind = "fileio"
mode = "rndrd"
files = $FILES
total_size = "$TOTAL"
block_size = "$BS"
time = "${TIME}s"
EOF

# fsbench N: prints "fair_share barrier_s" and appends "phase barrier_s" of every cluster phase
# to $work/phases-N.
run_fsbench() {
    local n=$1 db="$work/fsb-$1-$RANDOM.db"
    mpirun --allow-run-as-root --oversubscribe -np "$n" "$fsb" --db "$db" run "$work/suite.toml" \
        --scratch "$work" >/dev/null 2>"$work/fsb.err" || { cat "$work/fsb.err" >&2; exit 1; }
    "$fsb" --db "$db" report latest --format json | python3 -c '
import json, sys
s = json.load(sys.stdin)["samples"][0]
ms = [x for x in s["measurements"] if "@" not in x["phase"]]
with open(sys.argv[1], "a") as out:
    for x in ms:
        if x["metric"]["name"] == "barrier_s":
            out.write("%s %s\n" % (x["phase"], x["value"]))
m = {x["metric"]["name"]: x["value"] for x in ms if x["phase"] == "rndrd"}
print(m.get("reads_per_s_fair_share", m["reads_per_s"]), m.get("barrier_s", 0.0))' "$work/phases-$n"
    rm -f "$db"*
}

# fio N: prints the group's read IOPS.
run_fio() {
    local n=$1
    fio --name=r --directory="$work/fio" --rw=randread --bs="$BS" --ioengine=psync \
        --nrfiles="$FILES" --size="$TOTAL" --numjobs="$n" --group_reporting --time_based \
        --runtime="$TIME" --norandommap --invalidate=0 --output-format=json 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["read"]["iops"])'
    rm -f "$work"/fio/r.*
}

# fio client/server N: prints fio's "All clients" read IOPS.
run_fio_cs() {
    local n=$1 i args=() pids=()
    for i in $(seq 0 $((n - 1))); do
        mkdir -p "$work/fio/c$i"
        fio --server="ip:127.0.0.1,$((18765 + i))" --daemonize="$work/fio/s$i.pid"
        printf '[r]\ndirectory=%s\nrw=randread\nbs=%s\nioengine=psync\nnrfiles=%s\nsize=%s\ntime_based\nruntime=%s\nnorandommap\ninvalidate=0\n' \
            "$work/fio/c$i" "$BS" "$FILES" "$TOTAL" "$TIME" >"$work/fio/j$i.fio"
        args+=(--client="ip:127.0.0.1,$((18765 + i))" "$work/fio/j$i.fio")
    done
    sleep 0.5
    fio --output-format=json "${args[@]}" 2>/dev/null | python3 -c '
import json, sys
t = sys.stdin.read()
d = json.loads(t[t.index("{"):])
print([c for c in d["client_stats"] if c["jobname"] == "All clients" or len(d["client_stats"]) == 1][-1]["read"]["iops"])'
    for i in $(seq 0 $((n - 1))); do
        pids+=("$(cat "$work/fio/s$i.pid")")
    done
    kill "${pids[@]}" 2>/dev/null || true
    rm -rf "$work"/fio/c* "$work"/fio/j*.fio "$work"/fio/s*.pid
}

printf '%-6s %-5s %14s %14s %14s %10s\n' ranks pair fsbench/s fio/s fio-cs/s barrier_s
for n in $RANKS; do
    : >"$work/pairs-$n"
    for p in $(seq "$PAIRS"); do
        read -r a barrier < <(run_fsbench "$n")
        b=$(run_fio "$n")
        c=$(run_fio_cs "$n")
        printf '%-6s %-5s %14.0f %14.0f %14.0f %10.6f\n' "$n" "$p" "$a" "$b" "$c" "$barrier"
        echo "fsbench rndrd $a" >>"$work/pairs-$n"
        echo "fio rndrd $b" >>"$work/pairs-$n"
        echo "$c" >>"$work/cs-$n"
        echo "$barrier" >>"$work/barrier-$n"
    done
done
echo
printf '%-6s %14s %14s %8s %22s %14s %8s %14s\n' ranks "fsbench med" "fio med" ratio "pair ratios med (min-max)" \
    "fio-cs med" "ratio" "barrier med s"
for n in $RANKS; do
    a=$(awk '$1 == "fsbench" {print $3}' "$work/pairs-$n" | median)
    b=$(awk '$1 == "fio" {print $3}' "$work/pairs-$n" | median)
    c=$(median <"$work/cs-$n")
    printf '%-6s %14.0f %14.0f %8.3f %22s %14.0f %8.3f %14.6f\n' "$n" "$a" "$b" "$(echo "$a / $b" | bc -l)" \
        "$(pair_spread "$work/pairs-$n" rndrd)" "$c" "$(echo "$a / $c" | bc -l)" "$(median <"$work/barrier-$n")"
done
echo
echo "barrier cost per phase (median s over $PAIRS pair(s); 0 for one rank):"
printf '%-6s %-16s %14s\n' ranks phase "barrier med s"
for n in $RANKS; do
    [ -s "$work/phases-$n" ] || continue
    for ph in $(awk '{print $1}' "$work/phases-$n" | sort -u); do
        printf '%-6s %-16s %14.6f\n' "$n" "$ph" "$(awk -v p="$ph" '$1 == p {print $2}' "$work/phases-$n" | median)"
    done
done
