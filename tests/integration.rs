//! The one integration-test binary (ripgrep's habit: one link step). Modules:
//! - `util`: temp folders, running the real `fsbench` binary, the privileged-test gate, and the
//!   leftover checks (/proc/mounts, `losetup -a`).
//! - `provision`: real loop devices, mkfs and mounts for every available type, and their undo.
//! - `readback`: issue 27's read-back facts through real runs: mkfs parameters (`dumpe2fs`,
//!   `dump-super`), the memory cgroup's limit, NoCOW set and read back on btrfs, refused on ext4.
//! - `baseline`: the raw-device baseline on real loop devices, refused while mounted, smaller on
//!   a short scratch folder, undone on Ctrl-C and SIGKILL.
//! - `cli`: the command line as a user meets it (help, exit codes, config errors, plan).
//! - `run`: real `fsbench run` sessions end to end, reports, Ctrl-C; trimmed means, whole-system
//!   CPU and the cache-bound flag checked against the stored values; `--equivalence` stored and
//!   judged by; `fsbench doctor`.
//! - `mongo`: the mongo and bigfile workloads: FIEMAP against filefrag, their presets, a run.
//! - `trees`: datasets (`dataset gen`), treecopy/filecopy, the study presets.
//! - `report_html`: the HTML report rendered by headless Chromium; `fsbench compare` on real runs.
//! - `db`: SQLite OLTP, MariaDB and PostgreSQL servers on loop filesystems, Ctrl-C and SIGKILL
//!   while a server runs, fileio against fio (reads per CPU second).
//! - `device`: `--device` refusals through `fsbench run` on real loop devices (mounted, formatted,
//!   partitioned, a mounted partition, swap, RAID and LVM members, a failing blkid, a device
//!   mounted by someone else mid-run), each device read back unchanged.
//! - `safety`: faults, resume (also after SIGKILL; refused while a live process runs the
//!   session), kills at random moments, `cleanup` sparing a live run.
//! - `fio`: the fio workload (the real fio) on a loop ext4, and Ctrl-C while fio runs.
//! - `tools`: bonnie++, sysbench fileio, dbench and PostMark on a loop ext4; a missing tool;
//!   bonnie++ SIGKILLed mid-run.
//! - `verify`: `fsbench verify` end to end on loop ext4; a mismatched referee makes it exit 1.
//! - `golden`: the exports of a stored session, byte for byte.
//! - `space`: image-size estimates against the peaks real runs use; every study preset planned.
//! - `dirtarget`: `--dir` suites, which need no `[[fs]]` table.
//! - `exitcode`: `run`'s exit code when some or all cases fail or are unavailable; `--strict`.
//! - `cleanup`: a killed run with its own scratch folder, undone by a bare `fsbench cleanup`.
//! - `quiesce`: the quiesce gate's stored wait per repeat; a hammered device timing it out.
//! - `device_reuse`: a second run on the same confirmed device; foreign filesystems refused.
//! - `zfs`: a zfs-fuse pool used by bonnie and destroyed with its daemon; Ctrl-C; SIGKILL + cleanup;
//!   a pool fsbench did not make left alone; repair_scaling's scrub as the check of a pool.
//! - `powercut`: power cuts by the shutdown ioctl and by the FUSE power-cut disk, the broken
//!   disk caught, SQLite rows, `--dir` refused, SIGKILL + cleanup with a live disk server.
//! - `pcserver`: power cuts with a PostgreSQL server on the filesystem under test: no
//!   acknowledged row lost with its durable settings, many lost with `fsync = off`; Ctrl-C and
//!   SIGKILL + cleanup with a live server leave nothing.
//! - `durability`: the durability workload on loop ext4: the negative control loses in every
//!   cut under the volatile, reorder and torn-sectors disks and the shutdown ioctl, write +
//!   fsync loses nothing; the flush control is lost under the disk, kept under the shutdown
//!   ioctl; a cut whose control lost nothing shows its column unverified in every report;
//!   Ctrl-C and SIGKILL + cleanup with a seeded model's disk up.
//! - `crashprops`: the crashprops workload on loop ext4 data=journal: block appends and
//!   [append, rename] hold with the flushes honoured and fail under the disk that ignores them;
//!   SIGKILL while a crash state is mounted, undone by cleanup.
//! - `repair`: the repair_scaling workload on loop ext4 and xfs through the CLI (relative
//!   `--scratch`), its report section; bad `counts` exit 2.
//! - `aging`: the aging preset scaled down on loop ext4 through the CLI: aged and fresh rows,
//!   the same tree in both, its report section, nothing left; an aged image saved with
//!   `--keep-aged`, reused twice with `--aged-from` and never modified; bad images exit 2.
//! - `guest`: a TCG QEMU guest running bonnie on jfs and reiserfs; a guest that cannot boot;
//!   SIGKILL + cleanup while a guest runs.
//! - `conventions`: `--events` on a real run, `--quiet`, `NO_COLOR`, completions, man pages,
//!   `fsbench history` over stored sessions.
//! - `pgstore`: the PostgreSQL store on a real server: push round trip, push twice, two
//!   concurrent writers; per-second series and latency histograms pushed and stored directly.
//! - `steps`: long untimed steps (baseline, mkfs, file set, tree, SQLite load) in the event
//!   stream of a loop-image run with the last duration as ETA; their bars on a pty.
//! - `mpi` (only with `--features mpi`): 4 ranks under Open MPI's mpirun on one loop ext4, the
//!   cluster figures against the per-rank rows, a rank killed with SIGKILL.
//! - `layers`: the layer map of doc/architecture.md enforced over `src/`, with fixtures that
//!   break each rule.
//! - `noise`: `fsbench noise` on tmpfs: five A/A sessions stored with their between-session
//!   estimates, shown by the command with its cost, by `history` and by `report`; a second
//!   measurement's cost from the first; Ctrl-C after two sessions; bad input exits 2.
//! - `memory`: `--memory` cgroups (a limited read reads the disk; removal after Ctrl-C and
//!   SIGKILL) and the `--precision`/`--budget` stopping rule adding rounds within its budget.
//! - `replay`: `fsbench record` of tar, git checkout and a threaded C program, replayed on the
//!   recording's filesystem and on loop ext4, xfs and btrfs with no divergent call; a removed
//!   cross-thread dependency caught by the fidelity check; bad input exits 2.

#[path = "integration/util.rs"]
mod util;

#[path = "integration/provision.rs"]
mod provision;

#[path = "integration/readback.rs"]
mod readback;

#[path = "integration/baseline.rs"]
mod baseline;

#[path = "integration/cli.rs"]
mod cli;

#[path = "integration/run.rs"]
mod run;

#[path = "integration/quiesce.rs"]
mod quiesce;

#[path = "integration/report_html.rs"]
mod report_html;

#[path = "integration/safety.rs"]
mod safety;

#[path = "integration/device.rs"]
mod device;

#[path = "integration/mongo.rs"]
mod mongo;

#[path = "integration/trees.rs"]
mod trees;

#[path = "integration/db.rs"]
mod db;

#[path = "integration/fio.rs"]
mod fio;

#[path = "integration/tools.rs"]
mod tools;

#[path = "integration/verify.rs"]
mod verify;

#[path = "integration/golden.rs"]
mod golden;

#[path = "integration/dirtarget.rs"]
mod dirtarget;

#[path = "integration/cleanup.rs"]
mod cleanup;

#[path = "integration/powercut.rs"]
mod powercut;

#[path = "integration/durability.rs"]
mod durability;

#[path = "integration/crashprops.rs"]
mod crashprops;

#[path = "integration/crashapps.rs"]
mod crashapps;

#[path = "integration/pcserver.rs"]
mod pcserver;

#[path = "integration/repair.rs"]
mod repair;

#[path = "integration/aging.rs"]
mod aging;

#[path = "integration/device_reuse.rs"]
mod device_reuse;

#[path = "integration/space.rs"]
mod space;

#[path = "integration/conventions.rs"]
mod conventions;
#[path = "integration/guest.rs"]
mod guest;
#[path = "integration/images.rs"]
mod images;
#[path = "integration/zfs.rs"]
mod zfs;

#[path = "integration/charts.rs"]
mod charts;
#[path = "integration/exitcode.rs"]
mod exitcode;
#[path = "integration/memory.rs"]
mod memory;
#[cfg(feature = "mpi")]
#[path = "integration/mpi.rs"]
mod mpi;
#[path = "integration/noise.rs"]
mod noise;
#[path = "integration/pgstore.rs"]
mod pgstore;
#[path = "integration/steps.rs"]
mod steps;

#[path = "integration/layers.rs"]
mod layers;
#[path = "integration/openloop.rs"]
mod openloop;

#[path = "integration/replay.rs"]
mod replay;
