#!/usr/bin/env bash
# bench/replay_fidelity.sh - issue 44's fidelity figures (doc/replay.md): each recorded program
# run without the tracer and under `fsbench record` (the tracer's overhead), then its trace
# replayed, closed and timed, on the recording's own filesystem (--dir beside the recording)
# and on loop filesystems, with the timed replay's time against the untraced program's.
#
#   bench/replay_fidelity.sh [FSBENCH]      (default target/release/fsbench)
#
# Environment: RUNS (5: untraced runs and recordings per program, alternated), REPEATS (3 per
# replay cell), FS ("ext4 xfs btrfs": loop filesystems; "" for the own filesystem only),
# PROGS ("tar git threads"), DROP (false: warm, as each program run finds the tree its setup
# just wrote in the page cache and the replay the tree it just rebuilt; true: caches dropped
# before every program run, recording and replay repeat), OWN (loop: the programs run, are
# recorded and are replayed with --dir on a 4 GiB loop ext4 the script makes and removes, so
# the "own filesystem" is a plain one; dir: on the work folder's filesystem itself — here the
# VM's root ext4, mounted with online `discard`, where a run after the previous run's tree was
# removed took up to 18 x the first, doc/replay.md). Everything in a private folder under
# /var/tmp, kept (the path is printed). RECORD_ARGS: options for `fsbench record` (e.g.
# --untraced-run). Needs root (loop images, drop_caches), strace, perf,
# tar, git, cc, python3.
#
# Prints one table per filesystem: per program the untraced wall time (median of RUNS), the
# traced time (median of RUNS recordings: the span of the trace's calls, first start to last
# end; the header's wall_s also holds perf's and strace's start-up), the tracer's overhead
# (traced / untraced), the closed and the timed replay (mean of REPEATS) and timed / untraced.
# The trace replayed is the last recording's.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
fsbench=${1:-$here/target/release/fsbench}
RUNS=${RUNS:-5} REPEATS=${REPEATS:-3} FS=${FS-ext4 xfs btrfs} PROGS=${PROGS:-tar git threads}
DROP=${DROP:-false} OWN=${OWN:-loop} RECORD_ARGS=${RECORD_ARGS-}
top=$(mktemp -d /var/tmp/fsbench-replay-fidelity-XXXXXX)
echo "replay_fidelity: in $top" >&2
w=$top
if [ "$OWN" = loop ]; then
  truncate -s 4G "$top/own.img" && mkfs.ext4 -q -F "$top/own.img"
  dev=$(losetup -f --show "$top/own.img")
  mkdir "$top/m" && mount "$dev" "$top/m"
  trap 'cp "$top"/m/*.trace "$top"/m/*.record.* "$top"/ 2>/dev/null; umount "$top/m" 2>/dev/null; losetup -d "$dev" 2>/dev/null; rm -f "$top/own.img"' EXIT
  w=$top/m
fi
now() { date +%s.%N; }
settle() { sync; if [ "$DROP" = true ]; then echo 3 >/proc/sys/vm/drop_caches; fi; }
# Runs `run` RUNS times bare and RUNS times under `fsbench record`, alternated, each after
# `setup`; writes NAME untraced|traced SECONDS lines, the traced ones from the trace header.
measure() { # name setup run
  local name=$1 setup=$2 run=$3 t0 t1
  for i in $(seq "$RUNS"); do
    $setup; t0=$(now); $run; t1=$(now); echo "$name untraced $(echo "$t1 - $t0" | bc -l)"
    $setup; $run "$fsbench" record $RECORD_ARGS -o "$w/$name.trace" -- >"$w/$name.record.$i" 2>&1
    echo "$name traced $(python3 -c 'import json,sys; c=[json.loads(l)["call"] for l in open(sys.argv[1]) if l.startswith("{\"call")]; print(max(x["start_s"]+x["dur_s"] for x in c)-min(x["start_s"] for x in c))' "$w/$name.trace")"
  done
}

"$fsbench" dataset gen kernel --scale 0.02 "$w/src" >/dev/null
tar -cf "$w/src.tar" -C "$w/src" .
tar_setup() { rm -rf "$w/tar" && mkdir "$w/tar" && settle; }
tar_run() { (cd "$w/tar" && "$@" tar -xf ../src.tar); }
git=(git -c user.name=fsbench -c user.email=fsbench@localhost -c init.defaultBranch=main)
mkdir "$w/git" && cp -a "$w/src/." "$w/git/"
(cd "$w/git" && "${git[@]}" init -q && "${git[@]}" add -A && "${git[@]}" commit -qm one)
(cd "$w/git" && find . -path ./.git -prune -o -type f -print | sort | awk 'NR % 5 == 0' | xargs rm -f \
  && find . -path ./.git -prune -o -type f -print | sort | awk 'NR % 10 == 1' | while read -r f; do echo changed >>"$f"; done \
  && mkdir -p added && seq 1 200 | while read -r i; do echo "$i" >"added/f$i"; done \
  && "${git[@]}" add -A && "${git[@]}" commit -qm two)
git_setup() { (cd "$w/git" && git checkout -q main) && settle; }
git_run() { (cd "$w/git" && "$@" git checkout -q HEAD~1); }
cc -O2 -pthread -o "$w/threads.bin" "$here/tests/fixtures/replay/threads.c"
threads_setup() { rm -rf "$w/thr" && mkdir "$w/thr" && settle; }
threads_run() { (cd "$w/thr" && "$@" ../threads.bin); }
for p in $PROGS; do measure "$p" "${p}_setup" "${p}_run" | tee -a "$top/walls.txt"; done

suite() { # fs-tables
  printf '[suite]\nname = "replay-fidelity"\n\n[run]\nrepeats = %s\nwarmup = 1\ndrop_caches = %s\n\n%b' "$REPEATS" "$DROP" "$1"
  for t in $PROGS; do
    for m in closed timed; do
      printf '[[workload]]\nkind = "replay"\nname = "%s-%s"\nmode = "%s"\ntrace = "%s/%s.trace"\n\n' "$t" "$m" "$m" "$w" "$t"
    done
  done
}
suite "" >"$top/own.toml"
mkdir "$w/own"
"$fsbench" --db "$top/own.db" run "$top/own.toml" --dir "$w/own" >"$top/own.out" 2>&1
"$fsbench" --db "$top/own.db" report --format csv >"$top/own.csv"
if [ -n "$FS" ]; then
  suite "$(for f in $FS; do printf '[[fs]]\\ntype = "%s"\\n\\n' "$f"; done)" >"$top/fs.toml"
  "$fsbench" --db "$top/fs.db" run "$top/fs.toml" --scratch "$top/scratch" >"$top/fs.out" 2>&1
  "$fsbench" --db "$top/fs.db" report --format csv >"$top/fs.csv"
fi

python3 - "$top" "$PROGS" <<'PY' | tee "$top/table.md"
import csv, os, statistics, sys
from collections import defaultdict
w, progs = sys.argv[1], sys.argv[2].split()
walls = defaultdict(list)
for line in open(f"{w}/walls.txt"):
    p, what, s = line.split()
    walls[p, what].append(float(s))
for src, label in (("own", "the recording's own filesystem (--dir)"), ("fs", None)):
    if not os.path.exists(f"{w}/{src}.csv"):
        continue
    times = defaultdict(list)
    for r in csv.DictReader(open(f"{w}/{src}.csv")):
        if r["metric"] == "time" and r["is_warmup"] == "false" and r["status"] == "ok":
            times[r["fs_type"] if src == "fs" else "own", r["workload"]].append(float(r["value"]))
    for fs in sorted({k[0] for k in times}):
        print(f"\n{label or 'loop ' + fs}: mean of the measured repeats, s\n")
        print("| program | untraced, median | traced, median | tracer overhead | closed replay | timed replay | timed / untraced |")
        print("|---|---|---|---|---|---|---|")
        for p in progs:
            u, t = statistics.median(walls[p, "untraced"]), statistics.median(walls[p, "traced"])
            c, m = times.get((fs, f"{p}-closed"), []), times.get((fs, f"{p}-timed"), [])
            mean = lambda v: sum(v) / len(v) if v else float("nan")
            print(f"| {p} | {u:.3f} | {t:.3f} | {t / u:.1f} × | {mean(c):.3f} | {mean(m):.3f} | {mean(m) / u:.2f} |")
print("\nuntraced and traced runs, s:")
for p in progs:
    for what in ("untraced", "traced"):
        print(f"  {p} {what}: " + " ".join(f"{v:.3f}" for v in walls[p, what]))
PY
echo "replay_fidelity: reports in $top/own.out${FS:+ and $top/fs.out}, table in $top/table.md" >&2
