# Shared pieces of the bench/ scripts (sourced, not run). Each script gets:
#   bench_init NAME [TOOL...]   root check, required tools, a private work folder "$work" under
#                               /var/tmp whose mounts and loop devices are undone on exit
#   bench_tmpfs DIR SIZE        mount a private tmpfs
#   bench_loop_fs FS IMG SIZE DIR   sparse image, loop device (direct I/O), mkfs, mount
#   bench_build [CARGO ARGS...] cargo build --release; sets "$target" (honours CARGO_TARGET_DIR)
#   median                      median of the numbers on stdin
#   pair_spread FILE PHASE      "median (min-max)" of the per-pair ratios fsbench / referee, from lines
#                               "tool phase value" with tool "fsbench" and "c" (or "fio")
#   bytes SIZE                  4k / 16M / 2g -> bytes
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
repo=$(dirname "$here")

bench_init() {
    local name=$1
    shift
    if [ "$(id -u)" -ne 0 ]; then
        echo "$name: needs root (mount, loop devices, drop_caches)" >&2
        exit 2
    fi
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null || { echo "$name: $t is not installed (scripts/install.sh --bench)" >&2; exit 2; }
    done
    work=$(mktemp -d "/var/tmp/fsbench-bench.XXXXXX")
    chmod 755 "$work"
    trap bench_cleanup EXIT INT TERM
}

# Undoes, deepest first, every mount under "$work" and every loop device backed by a file in it.
bench_cleanup() {
    local m dev
    for m in $(awk -v w="$work" 'index($2, w "/") == 1 {print $2}' /proc/mounts | sort -r); do
        umount "$m" || umount -l "$m"
    done
    for dev in $(losetup -a | awk -v w="$work" 'index($0, "(" w "/") {sub(":", "", $1); print $1}'); do
        losetup -d "$dev" || true
    done
    rm -rf "$work"
}

bench_tmpfs() {
    mkdir -p "$1"
    mount -t tmpfs -o "size=$2,mode=0755" fsbench-bench "$1"
}

bench_loop_fs() {
    local fs=$1 img=$2 size=$3 dir=$4 dev
    truncate -s "$size" "$img"
    dev=$(losetup --find --show --direct-io=on "$img")
    case "$fs" in
        ext*) "mkfs.$fs" -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$dev" ;;
        *) "mkfs.$fs" -f -q "$dev" ;;
    esac
    mkdir -p "$dir"
    mount "$dev" "$dir"
}

bench_build() {
    echo "building ..." >&2
    (cd "$repo" && cargo build --quiet --release "$@")
    target=${CARGO_TARGET_DIR:-$repo/target}
}

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

pair_spread() {
    awk -v p="$2" '$2 == p && $1 == "fsbench" {a[++na] = $3} $2 == p && $1 != "fsbench" {b[++nb] = $3}
        END {for (i = 1; i <= na && i <= nb; i++) print a[i] / b[i]}' "$1" | sort -g |
        awk '{r[NR] = $1} END {m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
             printf "%.3f (%.3f-%.3f)", m, r[1], r[NR]}'
}

bytes() {
    local s=$1 n=${1%[kKmMgG]}
    case "$s" in
        *[kK]) echo $((n << 10)) ;;
        *[mM]) echo $((n << 20)) ;;
        *[gG]) echo $((n << 30)) ;;
        *) echo "$s" ;;
    esac
}
