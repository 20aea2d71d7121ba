#!/usr/bin/env bash
# bench/aa_sessions.sh - issue 41's A/A experiment: N sessions of the README's default run on
# this machine, one after the other, same binary, then `fsbench compare` of every ordered pair.
# Every pair is A/A (nothing changed), so an exit 1 is a false alarm; with the between-session
# noise counted (doc/statistics.md, "Between sessions") at most 5 % of them may be.
#
#   bench/aa_sessions.sh                 N=8 sessions (28 unordered, 56 ordered compares)
#
# Each compare sees the other stored sessions as its reference (the base's configuration): the
# first pairs run with few, the later ones with more. Prints, per ordered pair, the exit code,
# the gating rows called worse and the between-session line compare printed, then the false
# alarm count. Its own database and scratch under a private folder (kept: the path is printed).
# Needs root. Environment: N (8), ARGS (extra `fsbench run` arguments, e.g. "--scratch /dev/shm/x"),
# AGAIN (the folder of an earlier run: compare its N sessions again with this binary, no new
# sessions; its earlier compare files are overwritten).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
N=${N:-8}
ARGS=${ARGS:-}
bench_init aa_sessions python3
# The database and logs outlive the run (bench_init's own folder does not).
AGAIN=${AGAIN:-}
keep=${AGAIN:-$(mktemp -d /var/tmp/fsbench-aa.XXXXXX)}
bench_build
bin="$target/release/fsbench"
db="$keep/aa.db"
for i in $(seq 1 "$N"); do
    [ -n "$AGAIN" ] && break
    echo "session $i of $N ..." >&2
    # shellcheck disable=SC2086
    "$bin" --db "$db" run --label "aa$i" $ARGS >"$keep/run$i.log" 2>&1
done
alarms=0
pairs=0
for a in $(seq 1 "$N"); do
    for b in $(seq 1 "$N"); do
        [ "$a" = "$b" ] && continue
        pairs=$((pairs + 1))
        set +e
        "$bin" --db "$db" compare "aa$a" "aa$b" --format json >"$keep/cmp-$a-$b.json"
        rc=$?
        set -e
        [ "$rc" = 1 ] && alarms=$((alarms + 1))
        python3 - "$keep/cmp-$a-$b.json" "$a" "$b" "$rc" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
worse = [f"{x['variant']}/{x['phase']} {x['change_pct']:+.1f} %" for x in c["changes"] if x["gating"] and x["verdict"] == "worse"]
n = c["noise"]
sd = n["median_estimated_sd_pct"]
noise = f"estimated from {len(n['reference_sessions']) + 1} sessions, median sd {sd:.1f} %" if sd is not None else "assumed 6 %"
print(f"aa{sys.argv[2]} -> aa{sys.argv[3]}: exit {sys.argv[4]}, noise {noise}, worse: {', '.join(worse) or '-'}")
PY
    done
done
echo "false exit 1: $alarms of $pairs ordered A/A compares; database and logs in $keep"
