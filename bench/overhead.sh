#!/usr/bin/env bash
# bench/overhead.sh - fsbench's fileio engine against fio, same run, same files, alternating
# A B A B: does fsbench measure the filesystem rather than itself?
#
# A = fsbench (examples/fileio_once.rs: the library's `fileio` workload, one phase, no store),
# B = fio. Cases (rows of the table):
#   null         io = "null" (no system call per request) vs fio --ioengine=null, 4k randread
#   rndrd/rndwr  4k psync (pread/pwrite), 1 and 2 threads, on a private tmpfs and on a loop
#                ext4 (made here with losetup -f, removed by a trap), buffered
#   rndrd pin    the 2-thread tmpfs read with workers pinned on both sides (fsbench pin = true,
#                fio --cpus_allowed_policy=split)
#   seqrd/seqwr  1 MiB, 1 thread, tmpfs
#   uring        4k rndrd with io_uring, iodepth 1 and IODEPTH, tmpfs, vs fio --ioengine=io_uring
# Both tools use the same file set: FILES files named test_file.N of TOTAL/FILES bytes in the
# same directory (fio --filename=DIR/test_file.0:DIR/test_file.1:... --size=TOTAL, so that all
# fio jobs share the set as fsbench's threads do; file_service_type=sequential for the
# sequential modes), the same block size, thread count and duration, uniform random offsets
# with replacement (fio --norandommap), no cache invalidation (fio --invalidate=0; fsbench does
# not drop caches here) and no fsync (fsbench fsync_freq = 0, fsync_end = false). Each tool lays
# out its files untimed, in the same way: full, in 1 MiB writes, fsynced (dd before each fio run),
# except for seqwr (fsbench creates them empty, fio --fallocate=none). fio runs its jobs as
# processes (its default), fsbench as threads.
#
# Prints, per case, the medians of A and B (requests/s), the ratio of the medians, and the
# median and spread (min-max) of the per-pair ratios A/B (above 1: fsbench issues more
# requests per second than fio, i.e. costs less per request). Then the 2-thread/1-thread scaling of both tools.
# Reported, not pass/fail. With OUT=file the raw per-run numbers are also written there.
#
# Needs root (mount, losetup), fio, python3, mkfs.ext4 and cargo.
# Environment: PAIRS (5), TIME seconds per run (3), FILES (16), TOTAL (256M), IODEPTH (16),
# CASES (space-separated subset of: null tmpfs ext4 pin seq uring; default all),
# CARGO_TARGET_DIR (honoured).
set -euo pipefail

PAIRS=${PAIRS:-5}
TIME=${TIME:-3}
FILES=${FILES:-16}
TOTAL=${TOTAL:-256M}
IODEPTH=${IODEPTH:-16}
CASES=${CASES:-null tmpfs ext4 pin seq uring}
OUT=${OUT:-}
. "$(dirname "$0")/lib.sh"
bench_init overhead.sh fio python3 mkfs.ext4 losetup cargo
total_bytes=$(bytes "$TOTAL")

bench_build --example fileio_once
fsb="$target/release/examples/fileio_once"
bench_tmpfs "$work/tmpfs" $(( total_bytes * 3 ))
if [[ " $CASES " == *" ext4 "* ]]; then
    bench_loop_fs ext4 "$work/ext4.img" $(( total_bytes * 3 + (256 << 20) )) "$work/ext4"
fi

# run_fsbench DIR MODE BS THREADS IO [extra spec lines...]: requests/s of one fsbench run.
run_fsbench() {
    local dir=$1 mode=$2 bs=$3 threads=$4 io=$5
    shift 5
    "$fsb" "$dir" "mode=\"$mode\"" "files=$FILES" "total_size=\"$TOTAL\"" "block_size=\"$bs\"" \
        "threads=$threads" "time=\"${TIME}s\"" "io=\"$io\"" fsync_freq=0 fsync_end=false "$@" \
        | awk '{print $1}'
}

# run_fio DIR RW BS THREADS ENGINE [extra fio args...]: requests/s of one fio run.
run_fio() {
    local dir=$1 rw=$2 bs=$3 threads=$4 engine=$5
    shift 5
    local names="" i
    for i in $(seq 0 $(( FILES - 1 ))); do names="$names:$dir/test_file.$i"; done
    local files=(--filename="${names#:}" --size="$TOTAL")
    if [ "$engine" = null ]; then
        files=(--size="$TOTAL")
    elif [ "$rw" != write ]; then
        # The files in the state fsbench's prepare leaves them (written in 1 MiB chunks, then
        # fsynced), not fio's layout: on ext4 the folio size of the page cache follows the
        # write size, and a 4k rewrite into a large folio costs several times more.
        for i in $(seq 0 $(( FILES - 1 ))); do
            dd if=/dev/zero of="$dir/test_file.$i" bs=1M count=$(( total_bytes / FILES )) \
                iflag=count_bytes conv=fsync status=none
        done
    fi
    fio --name=peer "${files[@]}" --rw="$rw" --bs="$bs" --ioengine="$engine" --numjobs="$threads" \
        --group_reporting --norandommap --invalidate=0 --time_based --runtime="$TIME" \
        --output-format=json "$@" \
        | python3 -c 'import json, sys; j = json.load(sys.stdin)["jobs"][0]; print(round(j["read"]["iops"] + j["write"]["iops"]))'
    rm -f "$dir"/test_file.*
}


declare -A MED_A MED_B
rows=()
# pair_case NAME "A command" "B command": PAIRS pairs A B A B ..., one table row.
pair_case() {
    local name=$1 a_cmd=$2 b_cmd=$3 a b
    : > "$work/a"; : > "$work/b"; : > "$work/r"
    for pair in $(seq 1 "$PAIRS"); do
        a=$(eval "$a_cmd")
        b=$(eval "$b_cmd")
        echo "$a" >> "$work/a"; echo "$b" >> "$work/b"
        awk -v a="$a" -v b="$b" 'BEGIN {print a / b}' >> "$work/r"
        if [ -n "$OUT" ]; then printf '%s\t%s\t%s\t%s\n' "$name" "$pair" "$a" "$b" >> "$OUT"; fi
        printf '  %-22s pair %d: fsbench %12.0f  fio %12.0f\n' "$name" "$pair" "$a" "$b" >&2
    done
    local ma mb mr lo hi
    ma=$(median < "$work/a"); mb=$(median < "$work/b"); mr=$(median < "$work/r")
    lo=$(sort -g "$work/r" | head -1); hi=$(sort -g "$work/r" | tail -1)
    MED_A[$name]=$ma; MED_B[$name]=$mb
    rows+=("$(printf '| %-22s | %12.0f | %12.0f | %6.3f | %5.3f (%5.3f-%5.3f) |' "$name" "$ma" "$mb" \
        "$(awk -v a="$ma" -v b="$mb" 'BEGIN {print a / b}')" "$mr" "$lo" "$hi")")
}

T=$work/tmpfs
E=$work/ext4
echo "$PAIRS pairs, ${TIME} s per run, $FILES files x $(( total_bytes / FILES )) bytes (A = fsbench, B = fio)" >&2
for c in $CASES; do
    case $c in
    null)
        pair_case "null 4k" "run_fsbench $T rndrd 4k 1 null" "run_fio $T randread 4k 1 null" ;;
    tmpfs | ext4)
        d=$T; [ "$c" = ext4 ] && d=$E
        for m in rndrd rndwr; do
            rw=randread; [ "$m" = rndwr ] && rw=randwrite
            for t in 1 2; do
                pair_case "$c $m 4k ${t}t" "run_fsbench $d $m 4k $t buffered" "run_fio $d $rw 4k $t psync"
            done
        done ;;
    pin)
        pair_case "tmpfs rndrd 4k 2t pin" "run_fsbench $T rndrd 4k 2 buffered pin=true" \
            "run_fio $T randread 4k 2 psync --cpus_allowed=0-1 --cpus_allowed_policy=split" ;;
    seq)
        pair_case "tmpfs seqrd 1M 1t" "run_fsbench $T seqrd 1M 1 buffered" \
            "run_fio $T read 1M 1 psync --file_service_type=sequential"
        pair_case "tmpfs seqwr 1M 1t" "run_fsbench $T seqwr 1M 1 buffered" \
            "run_fio $T write 1M 1 psync --file_service_type=sequential --fallocate=none" ;;
    uring)
        pair_case "tmpfs rndrd uring qd1" "run_fsbench $T rndrd 4k 1 io_uring" \
            "run_fio $T randread 4k 1 io_uring --iodepth=1"
        pair_case "tmpfs rndrd uring qd$IODEPTH" "run_fsbench $T rndrd 4k 1 io_uring iodepth=$IODEPTH" \
            "run_fio $T randread 4k 1 io_uring --iodepth=$IODEPTH" ;;
    *) echo "overhead.sh: unknown case $c" >&2; exit 2 ;;
    esac
done

echo
echo "| case                   | fsbench /s   | fio /s       | ratio  | pair ratios: median (min-max) |"
echo "|------------------------|--------------|--------------|--------|-------------------------------|"
printf '%s\n' "${rows[@]}"
for fs in tmpfs ext4; do
    for m in rndrd rndwr; do
        k1="$fs $m 4k 1t"; k2="$fs $m 4k 2t"
        if [ -n "${MED_A[$k2]:-}" ]; then
            printf 'scaling %s %s 2t/1t: fsbench %.2fx, fio %.2fx\n' "$fs" "$m" \
                "$(awk -v a="${MED_A[$k2]}" -v b="${MED_A[$k1]}" 'BEGIN {print a / b}')" \
                "$(awk -v a="${MED_B[$k2]}" -v b="${MED_B[$k1]}" 'BEGIN {print a / b}')"
        fi
    done
done
if [ -n "${MED_A[tmpfs rndrd 4k 2t pin]:-}" ] && [ -n "${MED_A[tmpfs rndrd 4k 1t]:-}" ]; then
    printf 'scaling tmpfs rndrd pinned 2t/1t: fsbench %.2fx, fio %.2fx\n' \
        "$(awk -v a="${MED_A[tmpfs rndrd 4k 2t pin]}" -v b="${MED_A[tmpfs rndrd 4k 1t]}" 'BEGIN {print a / b}')" \
        "$(awk -v a="${MED_B[tmpfs rndrd 4k 2t pin]}" -v b="${MED_B[tmpfs rndrd 4k 1t]}" 'BEGIN {print a / b}')"
fi
