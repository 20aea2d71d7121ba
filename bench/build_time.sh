#!/usr/bin/env bash
# Build time of two commits, one after the other, each in a fresh worktree of its own (no shared
# target folder): a clean `cargo build --release`, then an incremental release rebuild after a
# one-line edit of the report's build module, then the same two in the dev profile.
#
#   bench/build_time.sh BEFORE AFTER      e.g. bench/build_time.sh 34968db main
#
# Prints "rev what seconds" lines. Wall-clock figures: run it on a quiet machine (nothing else
# compiling) and quote the ratio of the two commits from the same run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
[ $# -eq 2 ] || { echo "usage: $0 BEFORE AFTER (two commits)" >&2; exit 2; }
work=$(mktemp -d /var/tmp/fsbench-buildtime.XXXXXX)
cleanup() {
    for d in "$work"/*/; do [ -d "$d" ] && git -C "$repo" worktree remove --force "$d" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
for rev in "$@"; do
    d="$work/$(git -C "$repo" rev-parse --short "$rev")"
    git -C "$repo" worktree add --detach "$d" "$rev" >/dev/null 2>&1
    cd "$d"
    # The report's build module: src/report/build.rs in one crate, crates/report/src/build.rs after.
    f=$(git ls-files | grep -E '(^|/)report/(src/)?build\.rs$' | head -1)
    echo "$rev clean_release $(secs cargo build --release)"
    echo "// edit" >>"$f"
    echo "$rev incremental_release_after_editing_$f $(secs cargo build --release)"
    git checkout -q -- "$f"
    echo "$rev clean_dev $(secs cargo build)"
    echo "// edit" >>"$f"
    echo "$rev incremental_dev_after_editing_$f $(secs cargo build)"
    git checkout -q -- "$f"
    cd "$repo"
done
