#!/usr/bin/env bash
# bench/replay_fidelity.sh - issue 44's fidelity figures (doc/replay.md): the recorded programs
# run without and with strace (the tracer's overhead), then their traces replayed on the
# recording's own filesystem (--dir beside the recording) and on loop ext4, xfs and btrfs,
# closed and timed, with the replay's time against the untraced program's.
#
#   bench/replay_fidelity.sh [FSBENCH]      (default target/release/fsbench)
#
# Environment: RUNS (5: untraced and traced runs per program), REPEATS (3 per replay cell).
# Everything in a private folder under /var/tmp, kept (the path is printed). Needs root (loop
# images), strace, tar, git, cc.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
fsbench=${1:-$here/target/release/fsbench}
RUNS=${RUNS:-5} REPEATS=${REPEATS:-3}
w=$(mktemp -d /var/tmp/fsbench-replay-fidelity-XXXXXX)
echo "replay_fidelity: in $w" >&2
strace_flags=(-f -ttt -T -y -qq -s 0 -e trace=%file,%desc,%process,msync)
now() { date +%s.%N; }
# The wall times of `run` (a function taking an optional command prefix) RUNS times bare and
# RUNS times under strace with fsbench record's flags, each after `setup`.
measure() { # name setup run
  local name=$1 setup=$2 run=$3 plain=() traced=() t0 t1
  for _ in $(seq "$RUNS"); do
    $setup; t0=$(now); $run; t1=$(now); plain+=("$(echo "$t1 - $t0" | bc -l)")
    $setup; t0=$(now); $run strace "${strace_flags[@]}" -o "$w/raw" --; t1=$(now)
    traced+=("$(echo "$t1 - $t0" | bc -l)")
  done
  printf '%s untraced' "$name"; printf ' %.3f' "${plain[@]}"; printf '\n%s traced' "$name"; printf ' %.3f' "${traced[@]}"; echo
}

"$fsbench" dataset gen kernel --scale 0.02 "$w/src" >/dev/null
tar -cf "$w/src.tar" -C "$w/src" .
tar_setup() { rm -rf "$w/tar" && mkdir "$w/tar" && sync; }
tar_run() { (cd "$w/tar" && "$@" tar -xf ../src.tar); }
git=(git -c user.name=fsbench -c user.email=fsbench@localhost -c init.defaultBranch=main)
mkdir "$w/git" && cp -a "$w/src/." "$w/git/"
(cd "$w/git" && "${git[@]}" init -q && "${git[@]}" add -A && "${git[@]}" commit -qm one)
(cd "$w/git" && find . -path ./.git -prune -o -type f -print | sort | awk 'NR % 5 == 0' | xargs rm -f \
  && find . -path ./.git -prune -o -type f -print | sort | awk 'NR % 10 == 1' | while read -r f; do echo changed >>"$f"; done \
  && mkdir -p added && seq 1 200 | while read -r i; do echo "$i" >"added/f$i"; done \
  && "${git[@]}" add -A && "${git[@]}" commit -qm two)
git_setup() { (cd "$w/git" && git checkout -q main) && sync; }
git_run() { (cd "$w/git" && "$@" git checkout -q HEAD~1); }
cc -O2 -pthread -o "$w/threads" "$here/tests/fixtures/replay/threads.c"
thr_setup() { rm -rf "$w/thr" && mkdir "$w/thr" && sync; }
thr_run() { (cd "$w/thr" && "$@" ../threads); }
measure tar tar_setup tar_run | tee -a "$w/overhead.txt"
measure git git_setup git_run | tee -a "$w/overhead.txt"
measure threads thr_setup thr_run | tee -a "$w/overhead.txt"

# The traces, recorded once each by fsbench record.
tar_setup; (cd "$w/tar" && "$fsbench" record -o "$w/tar.trace" -- tar -xf ../src.tar)
git_setup; (cd "$w/git" && "$fsbench" record -o "$w/git.trace" -- git checkout -q HEAD~1)
thr_setup; (cd "$w/thr" && "$fsbench" record -o "$w/threads.trace" -- ../threads)

suite() { # fs-tables
  printf '[suite]\nname = "replay-fidelity"\n\n[run]\nrepeats = %s\nwarmup = 1\ndrop_caches = true\n\n%b' "$REPEATS" "$1"
  for t in tar git threads; do
    for m in closed timed; do
      printf '[[workload]]\nkind = "replay"\nname = "%s-%s"\nmode = "%s"\ntrace = "%s/%s.trace"\n\n' "$t" "$m" "$m" "$w" "$t"
    done
  done
}
suite "" >"$w/own.toml"
suite '[[fs]]\ntype = "ext4"\n\n[[fs]]\ntype = "xfs"\n\n[[fs]]\ntype = "btrfs"\n\n' >"$w/fs.toml"
mkdir "$w/own"
"$fsbench" --db "$w/own.db" run "$w/own.toml" --dir "$w/own" >"$w/own.out" 2>&1
"$fsbench" --db "$w/fs.db" run "$w/fs.toml" --scratch "$w/scratch" >"$w/fs.out" 2>&1
echo "replay_fidelity: reports in $w/own.out and $w/fs.out, overhead in $w/overhead.txt" >&2
