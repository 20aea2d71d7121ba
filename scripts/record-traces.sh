#!/usr/bin/env bash
# Records the traces the `replay` preset replays (presets/replay.toml, doc/replay.md): real
# programs run here under `fsbench record`, never traces shipped from elsewhere.
#
#   scripts/record-traces.sh [FSBENCH] [DIR]
#
# FSBENCH: the fsbench binary (default: target/release/fsbench, else target/debug/fsbench);
# DIR: where the traces go (default /var/lib/fsbench/traces, the preset's paths). Needs strace,
# tar, git, cc, make and sqlite3 (scripts/install.sh). Each program works in a scratch folder
# under /var/tmp that is removed afterwards; the traces are:
#
#   tar.trace      tar -xf of a kernel-like tree (fsbench dataset gen kernel --scale 0.02)
#   git.trace      git checkout between two commits of a repository of that tree
#   threads.trace  tests/fixtures/replay/threads.c: producer, consumer and main threads
#   sqlite.trace   the sqlite3 CLI creating a table, inserting 2 000 rows in 100 transactions
#                  and indexing them, with time marks `insert` and `query` (--mark-on)
#   make.trace     make building tests/fixtures/replay/cproject (two objects and a link; the
#                  link's recipe makes the time mark `link`)
#
# Each with --untraced-run (these programs write only under their folder and /tmp): as root
# with perf, a timed replay takes its think times from a second run without strace; otherwise
# fsbench record says why not and the traced run's times stay.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
fsbench=${1:-}
[[ -n "$fsbench" && "$fsbench" != /* ]] && fsbench=$PWD/$fsbench
if [[ -z "$fsbench" ]]; then
  for b in "$here/target/release/fsbench" "$here/target/debug/fsbench"; do
    [[ -x "$b" ]] && fsbench=$b && break
  done
fi
[[ -x "$fsbench" ]] || { echo "record-traces.sh: build fsbench first (cargo build --release)" >&2; exit 2; }
out=${2:-/var/lib/fsbench/traces}
for t in strace tar git cc make sqlite3; do
  command -v "$t" >/dev/null || { echo "record-traces.sh: $t is not installed (scripts/install.sh)" >&2; exit 2; }
done
mkdir -p "$out"
work=$(mktemp -d /var/tmp/fsbench-traces-XXXXXX)
trap 'rm -rf "$work"' EXIT

"$fsbench" dataset gen kernel --scale 0.02 "$work/src" >/dev/null
tar -cf "$work/src.tar" -C "$work/src" .
mkdir "$work/tar"
(cd "$work/tar" && "$fsbench" record --untraced-run -o "$out/tar.trace" -- tar -xf ../src.tar)

git=(git -c user.name=fsbench -c user.email=fsbench@localhost -c init.defaultBranch=main)
mkdir "$work/git"
cp -a "$work/src/." "$work/git/"
(cd "$work/git" && "${git[@]}" init -q && "${git[@]}" add -A && "${git[@]}" commit -qm one)
# The second commit: a fifth of the files removed, a tenth rewritten, a new directory.
(cd "$work/git" && find . -path ./.git -prune -o -type f -print | sort | awk 'NR % 5 == 0' | xargs rm -f \
  && find . -path ./.git -prune -o -type f -print | sort | awk 'NR % 10 == 1' | while read -r f; do echo changed >>"$f"; done \
  && mkdir -p added && seq 1 200 | while read -r i; do echo "$i" >"added/f$i"; done \
  && "${git[@]}" add -A && "${git[@]}" commit -qm two)
(cd "$work/git" && "$fsbench" record --untraced-run -o "$out/git.trace" -- git checkout -q HEAD~1)

cc -O2 -pthread -o "$work/threads" "$here/tests/fixtures/replay/threads.c"
mkdir "$work/thr"
(cd "$work/thr" && "$fsbench" record --untraced-run -o "$out/threads.trace" -- ../threads)
# sqlite3: the marks are the CLI's own `.shell test -e MARKS/NAME` (a stat of the mark).
marks="$work/marks"
mkdir "$work/sql"
{
  echo "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"
  echo ".shell test -e $marks/insert || true"
  for i in $(seq 1 100); do
    echo "BEGIN;"
    for j in $(seq 1 20); do echo "INSERT INTO t(v) VALUES ('row $i $j');"; done
    echo "COMMIT;"
  done
  echo ".shell test -e $marks/query || true"
  echo "CREATE INDEX tv ON t(v);"
  echo "SELECT count(*) FROM t WHERE v LIKE 'row 1 %';"
} >"$work/rows.sql"
(cd "$work/sql" && "$fsbench" record --untraced-run --mark-on "$marks" -o "$out/sqlite.trace" -- sqlite3 rows.db <"$work/rows.sql")

mkdir "$work/make"
cp "$here"/tests/fixtures/replay/cproject/{Makefile,main.c,util.c,util.h} "$work/make/"
(cd "$work/make" && "$fsbench" record --untraced-run --mark-on "$marks" -o "$out/make.trace" -- make -s "MARK=$marks")
echo "record-traces.sh: traces in $out" >&2
