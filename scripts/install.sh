#!/usr/bin/env bash
# Installs what fsbench needs on a Debian/Ubuntu machine, idempotently: only missing packages
# are installed, and `apt-get update` runs only when something is missing.
#
#   scripts/install.sh            everything the default comparison and the test suite use:
#                                 filesystem tools, chromium (the tests render the HTML report),
#                                 the database servers, and the real tools the tests run as
#                                 referees and the external-tool workloads run (fio, bonnie++,
#                                 dbench, postmark, zstd)
#   scripts/install.sh --bench    also what only bench/ uses (gcc, GNU time)
#
# Needs root. The Rust toolchain (cargo >= 1.85) is expected to be present (rustup).
set -euo pipefail

want=(xfsprogs:mkfs.xfs btrfs-progs:mkfs.btrfs e2fsprogs:mkfs.ext4 util-linux:losetup mount:mount)
# Headless Chromium renders the HTML report in the integration tests (tests/integration/report_html.rs).
want+=(chromium:chromium)
# The test suite's failing disk (tests/fixtures/faultyfs.py) is a FUSE server in Debian's Python.
want+=(python3-fusepy:/usr/lib/python3/dist-packages/fusepy.py)
# Database servers and load generators of the `oltp` workload (the ext4-vs-btrfs-2012 preset
# and tests/integration/db.rs), also the servers of `powercut`'s `server` option
# (tests/integration/pcserver.rs); postgresql is also the shared results store of
# tests/integration/pgstore.rs); packages only: fsbench starts its own servers, policy-rc.d
# permitting, the packages' own services are not needed.
want+=(mariadb-server:mariadbd sysbench:sysbench postgresql:postgres)
# Tools the tests themselves run: fio is the referee of tests/integration/db.rs, zstd checks the
# compressibility of datasets::content, filefrag (e2fsprogs) cross-checks FIEMAP.
want+=(fio:fio zstd:zstd)
# The external-tool workloads (crates/engine/src/workloads/{bonnie_pp,sysbench_fileio,dbench,postmark}.rs)
# and their tests run the real bonnie++, dbench (with its loadfile client.txt) and postmark.
want+=(bonnie++:bonnie++ dbench:dbench postmark:postmark)
# pvcreate writes the LVM2 label that tests/integration/device.rs makes fsbench refuse (it
# needs no device-mapper).
want+=(lvm2:pvcreate)
# ZFS as a pool (crates/targets/src/provision/zfs.rs): zfs-fuse where the machine has no OpenZFS module.
# fsbench starts and stops its own zfs-fuse daemon, so the package's service must not be left
# running (see the policy-rc.d step below).
want+=(zfs-fuse:zfs-fuse)
# The guest-kernel target (`--fs jfs@guest`, crates/targets/src/guest/): QEMU runs a Debian kernel under TCG
# or KVM; jfsutils and reiserfsprogs are the mkfs programs the guest runs from the host's root.
want+=(qemu-system-x86:qemu-system-x86_64 jfsutils:mkfs.jfs reiserfsprogs:mkfs.reiserfs)
# The filesystems people compare today (crates/core/src/fstype.rs): f2fs, nilfs2 and exfat run in the guest
# (the host kernel lacks them), ntfs3 too (under the 6.12 kernel below), ntfs-3g is FUSE on the
# host; mkfs.ntfs (ntfs-3g) makes both NTFS variants. xz decompresses the 6.12 kernel's modules.
want+=(f2fs-tools:mkfs.f2fs nilfs-tools:mkfs.nilfs2 exfatprogs:mkfs.exfat ntfs-3g:ntfs-3g xz-utils:xz)
# Read-only image filesystems (issue 31, the `image` workload): erofs and squashfs are built by
# their tools on the host's root and mounted by a guest kernel's driver (the host kernel lacks
# both).
want+=(erofs-utils:mkfs.erofs squashfs-tools:mksquashfs)
# The `mpi` cargo feature (crates/comm/src/mpi.rs, rsmpi): Open MPI's headers/library and mpirun, and
# libclang for rsmpi's bindgen; CI builds and tests the feature (tests/integration/mpi.rs).
want+=(libopenmpi-dev:/usr/include/x86_64-linux-gnu/openmpi/mpi.h openmpi-bin:mpirun libclang-dev:/usr/lib/llvm-14/lib/libclang.so clang:clang)
# `fsbench record` runs programs under strace; the replay tests and scripts/record-traces.sh
# record tar, git, a C program they compile, make building a small C project and the sqlite3
# CLI (below) inserting rows (tests/integration/replay.rs).
want+=(strace:strace git:git gcc:cc make:make)
# ... and under perf, whose record of every system call and context switch measures the time
# strace holds the program stopped (crates/content/src/trace/timing.rs, doc/replay.md).
want+=(linux-perf:perf)
# The applications of `crashprops` (crates/engine/src/workloads/crashprops/apps.rs) are the real
# tools users have: Debian's sqlite3 CLI and git (above), run on the recording disk and as the checkers.
want+=(sqlite3:sqlite3)
# The key-value store of `crashprops` (apps/redis.rs): redis-server 7.0's append-only file. fsbench
# starts its own server on a unix socket; the package's service must not be left running (see
# the policy-rc.d step below).
want+=(redis-server:redis-server)
if [[ "${1:-}" == "--bench" ]]; then
  want+=(gcc:gcc time:/usr/bin/time)
fi

have() { command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" || -x "/sbin/$1" || -e "$1" ]] || compgen -G "/usr/lib/postgresql/*/bin/$1" >/dev/null; }

missing=()
for pair in "${want[@]}"; do
  pkg=${pair%%:*} tool=${pair#*:}
  have "$tool" || missing+=("$pkg")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install.sh: missing packages ${missing[*]}; run as root (sudo $0)" >&2
    exit 2
  fi
  echo "install.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # zfs-fuse's and redis-server's maintainer scripts start their services (zfs-fuse imports every cached pool); fsbench
  # manages its own daemons, so deny service starts during the install where no policy exists.
  made_policy=
  if [[ " ${missing[*]} " =~ " "(zfs-fuse|redis-server)" " && ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [[ -n "$made_policy" ]]; then
    rm -f /usr/sbin/policy-rc.d
    trap - EXIT
    # Not started at boot either: fsbench starts the daemon when a run needs it.
    if command -v systemctl >/dev/null 2>&1; then
      systemctl disable --now zfs-fuse.service redis-server.service >/dev/null 2>&1 || true
    fi
  fi
fi

# The guest's kernel (Debian's linux-image-amd64) and a static busybox for its initramfs are
# unpacked with `apt-get download` + `dpkg -x` into /var/lib/fsbench/guest, never installed:
# installing a kernel package runs update-initramfs and, on a real machine, update-grub, which
# would change how the host boots. Nothing outside that folder is written.
guest_dir=/var/lib/fsbench/guest
if ! compgen -G "$guest_dir/boot/vmlinuz-*" >/dev/null || [[ ! -x "$guest_dir/bin/busybox" ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install.sh: the guest kernel is missing; run as root (sudo $0)" >&2
    exit 2
  fi
  echo "install.sh: unpacking linux-image-amd64 and busybox-static into $guest_dir" >&2
  kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  if [[ -z "$kpkg" ]]; then
    apt-get update -qq
    kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  dl=$(mktemp -d) && chmod 755 "$dl"
  (cd "$dl" && apt-get download -qq "$kpkg" busybox-static >/dev/null)
  mkdir -p "$guest_dir"
  for deb in "$dl"/*.deb; do dpkg -x "$deb" "$guest_dir"; done
  rm -rf "$dl"
fi

# A further guest kernel for drivers Debian 12's 6.1 is built without (ntfs3, bcachefs) and for
# kernel-against-kernel runs (`--fs ext4@guest,ext4@guest:6.12`): the newest
# linux-image-6.12.*+deb12-amd64, unpacked the same way into its own folder
# $guest_dir/kernels/RELEASE (src/guest: `@guest` uses it only for a driver the default lacks;
# `@guest:6.12` names it).
if ! compgen -G "$guest_dir/kernels/*/boot/vmlinuz-*" >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install.sh: the further guest kernel is missing; run as root (sudo $0)" >&2
    exit 2
  fi
  find_k612() { apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' | awk '{print $1}' | sort -V | tail -1; }
  k612=$(find_k612)
  if [[ -z "$k612" ]]; then
    apt-get update -qq
    k612=$(find_k612)
  fi
  if [[ -n "$k612" ]]; then
    rel=${k612#linux-image-}
    echo "install.sh: unpacking $k612 into $guest_dir/kernels/$rel" >&2
    dl=$(mktemp -d) && chmod 755 "$dl"
    (cd "$dl" && apt-get download -qq "$k612" >/dev/null)
    mkdir -p "$guest_dir/kernels"
    rm -rf "$guest_dir/kernels/$rel.tmp"
    dpkg -x "$dl"/*.deb "$guest_dir/kernels/$rel.tmp"
    mv "$guest_dir/kernels/$rel.tmp" "$guest_dir/kernels/$rel"
    rm -rf "$dl"
  else
    echo "install.sh: no linux-image-6.12.*+deb12-amd64 in apt's lists: ntfs3 and bcachefs stay unavailable in guests" >&2
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install.sh: cargo not found; install Rust with rustup, then run this again" >&2
  exit 2
fi
echo "install.sh: all tools present" >&2
