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
# and tests/integration/db.rs); packages only: fsbench starts its own servers, policy-rc.d
# permitting, the packages' own services are not needed.
want+=(mariadb-server:mariadbd sysbench:sysbench postgresql:postgres)
# Tools the tests themselves run: fio is the referee of tests/integration/db.rs, zstd checks the
# compressibility of datasets::content, filefrag (e2fsprogs) cross-checks FIEMAP.
want+=(fio:fio zstd:zstd)
# The external-tool workloads (src/engine/workloads/{bonnie_pp,sysbench_fileio,dbench,postmark}.rs)
# and their tests run the real bonnie++, dbench (with its loadfile client.txt) and postmark.
want+=(bonnie++:bonnie++ dbench:dbench postmark:postmark)
# pvcreate writes the LVM2 label that tests/integration/device.rs makes fsbench refuse (it
# needs no device-mapper).
want+=(lvm2:pvcreate)
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
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install.sh: cargo not found; install Rust with rustup, then run this again" >&2
  exit 2
fi
echo "install.sh: all tools present" >&2
