//! The guest-kernel target: a filesystem variant measured under another kernel, in a small QEMU
//! guest (`--fs jfs@guest`, or `kernel = "guest"` / `kernel = "/path/to/bzImage"` in a suite's
//! `[[fs]]`), for filesystems the running kernel lacks (jfs, reiserfs) and for comparing kernels.
//!
//! One repeat of a guest variant ([`run_slot`]):
//! 1. a sparse image `img-TAG.img` in the run folder becomes the guest's `/dev/vda`
//!    (virtio-blk, `cache=none`, so the host's page cache is not in the path);
//! 2. a generated initramfs (busybox + the virtio, 9p and filesystem modules, [`initramfs`])
//!    mounts the **host's root read-only over QEMU's own 9p server** and `chroot`s into it, then
//!    runs the very fsbench binary that started the guest as `fsbench guest-agent`
//!    ([`agent`]). This was chosen over packing fsbench into the initramfs because the agent
//!    then uses the host's own mkfs programs, libraries and binary unchanged (nothing to copy
//!    or keep in step), and the initramfs stays a few MiB; the price is a 9p share, read-only,
//!    with the guest's own tmpfs over `/tmp` and `/run` (the binary's own folder is a second
//!    read-only 9p share mounted at `/run/fsbench-bin`, so a binary under /tmp works too);
//! 3. the agent makes the filesystem and runs the workload through the normal engine (the one
//!    phase driver), and answers over the guest's second serial port in a framed JSON
//!    protocol ([`agent::encode`]); the host stores the sample as any other, with the guest's
//!    kernel release, the accelerator and the boot time in the sample's notes and a `guest`
//!    phase (`boot`, seconds, a detail row). A workload that copies its filesystem's loop
//!    image (`crashprops`, [`crate::engine::Workload::needs_loop_image`]) gets a disk of twice
//!    the image plus [`LOOP_IMAGE_ROOM`], the loop, staging-filesystem and FUSE modules, and
//!    the agent puts the filesystem on a loop image in a staging filesystem on that disk
//!    ([`agent::Job::loop_image`]); the workload runs as the guest runs it
//!    ([`crate::engine::Workload::in_guest`]: a smaller crash-state budget under emulation).
//!
//! The accelerator is KVM when `/dev/kvm` opens and a probe boot reaches the initramfs within
//! [`KVM_PROBE_TIMEOUT`]; otherwise TCG, with the reason in every sample's notes (on machines
//! without nested virtualisation, KVM opens but the guest hangs in early boot). TCG results are
//! emulated: the report groups them apart and says to compare them only with each other.
//!
//! The kernel is Debian's `linux-image-amd64`, unpacked (not installed: installing a kernel
//! package changes how the host boots) by `scripts/install.sh` into [`GUEST_DIR`], or found in
//! `/boot` with its modules in `/lib/modules`. A static busybox comes from Debian's
//! `busybox-static`, unpacked the same way.
//!
//! A filesystem whose driver that kernel lacks (Debian 12's 6.1 is built without ntfs3 and
//! bcachefs) runs under a further kernel `scripts/install.sh` unpacks into [`MORE_KERNELS_DIR`]
//! (Debian 12's `linux-image-6.12.*+deb12-amd64`, whose modules are xz-compressed): `@guest`
//! means the default kernel when it has the driver, else the oldest further kernel that has it
//! ([`kernel_for`]); the kernel's release is in every sample's notes either way.
//!
//! Invariants:
//! - QEMU is killed and every file of the repeat (image, initramfs, job, logs) removed on
//!   success, failure, Ctrl-C and panic (a guard), and by `fsbench cleanup` after SIGKILL
//!   ([`crate::undo::Kill`] and `RemoveFile` records, written before each exists).
//! - A guest that shows no sign of life within its boot timeout, or ends without a reply, is a
//!   failed repeat whose message ends with the console's last lines.
//! - Nothing here touches a process it did not start: a recorded pid is killed only while its
//!   start time and command line still match.

pub mod agent;
pub mod initramfs;
pub mod qemu;

use crate::config::FsVariant;
use crate::engine::Unavailable;
use crate::engine::WorkloadKind;
use crate::metric::{Measurement, MetricId, RawSample, Role, Unit};
use crate::provision::RunState;
use crate::undo::{Kill, RemoveFile, Stack, Step, UndoLog};
use qemu::{Accel, Boot, Ended, Guest};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;
use std::time::Duration;

/// `kernel` value of Debian's kernel (`--fs TYPE@guest`), and the `@guest` naming of config.
use crate::config::DEBIAN_KERNEL;
/// Where `scripts/install.sh` unpacks the guest kernel and busybox.
pub const GUEST_DIR: &str = "/var/lib/fsbench/guest";
/// Where `scripts/install.sh` unpacks further Debian kernels, one folder per release holding
/// `boot/vmlinuz-RELEASE` and `lib/modules/RELEASE`, for drivers the default kernel lacks and
/// for kernel-against-kernel runs (`ext4@guest:6.12`); apart from the default, so that adding
/// one never changes which kernel `guest` means.
pub const MORE_KERNELS_DIR: &str = "/var/lib/fsbench/guest/kernels";
/// What to install when no guest kernel has a filesystem's driver.
pub const MORE_KERNELS_HINT: &str =
    "scripts/install.sh unpacks Debian 12's linux-image-6.12.*+deb12-amd64 (ntfs3, bcachefs) into /var/lib/fsbench/guest/kernels";
/// What to install when QEMU or the kernel is missing.
pub const INSTALL_HINT: &str =
    "apt-get install qemu-system-x86 linux-image-amd64 (scripts/install.sh unpacks the kernel into /var/lib/fsbench/guest without installing it)";
/// How long a KVM probe boot may take to reach the initramfs.
pub const KVM_PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a guest may take to reach its init, by accelerator; `FSBENCH_GUEST_BOOT_TIMEOUT`
/// (seconds) overrides it, for machines slower or faster than these.
pub fn boot_timeout(accel: Accel) -> Duration {
    if let Some(s) = std::env::var("FSBENCH_GUEST_BOOT_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0 && s.is_finite())
    {
        return Duration::from_secs_f64(s);
    }
    match accel {
        Accel::Kvm => Duration::from_secs(60),
        Accel::Tcg => Duration::from_secs(180),
    }
}
/// Guest memory in MiB.
const GUEST_MEM_MIB: u64 = 1024;
/// The line the guest's init prints first (the boot time is measured to it).
const INIT_MARKER: &str = "fsbench-guest: init";
/// The line the probe's init prints.
const PROBE_MARKER: &str = "fsbench-guest: probe ok";
/// The phase and metric of the boot time.
pub const BOOT_PHASE: &str = "guest";
/// See [`BOOT_PHASE`].
pub const BOOT_METRIC: &str = "boot";

/// Why a guest repeat did not produce a sample.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// QEMU, the kernel, busybox or a module is missing.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A file of the repeat could not be made.
    #[error("{what}: {source}")]
    Io {
        /// Operation and path.
        what: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// The guest did not boot or did not answer; the console's last lines.
    #[error("the guest {why}; console: {console}")]
    Boot {
        /// What went wrong.
        why: String,
        /// The console log's (and QEMU's stderr's) last lines.
        console: String,
    },
    /// The agent ran and reported a failure.
    #[error("in the guest: {0}")]
    Agent(#[source] agent::AgentFailure),
    /// SIGINT/SIGTERM.
    #[error("interrupted")]
    Interrupted,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> GuestError {
    let what = what.into();
    move |source| GuestError::Io { what, source }
}

/// A guest kernel: its image, release and module tree.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The bzImage.
    pub image: PathBuf,
    /// Its release (`6.1.0-56-amd64`), from the file name.
    pub release: String,
    /// `lib/modules/RELEASE`, if there is one (a custom kernel may have everything built in).
    pub modules: Option<PathBuf>,
}

/// The kernel `spec` names:
/// - [`DEBIAN_KERNEL`] (`guest`): the newest Debian kernel in [`GUEST_DIR`]`/boot` (what
///   `scripts/install.sh` unpacks from `linux-image-amd64`), then in `/boot`;
/// - a path (anything with a `/`): that bzImage, with `lib/modules/RELEASE` found by the
///   release in its file name (`vmlinuz-RELEASE`) if it has one;
/// - a release (`6.12`, `6.1.0-56-amd64`): the newest unpacked kernel (the default, those of
///   [`MORE_KERNELS_DIR`], `/boot`) whose release is `spec` or starts with it up to a `.`, `-`
///   or `+` (so `6.1` is never `6.12`).
pub fn find_kernel(spec: &str) -> Result<Kernel, Unavailable> {
    let guest = Path::new(GUEST_DIR);
    let modules_for = |release: &str| {
        [guest, Path::new("/")]
            .iter()
            .map(|r| r.join("lib/modules").join(release))
            .find(|d| d.join("kernel").is_dir())
    };
    if spec.contains('/') {
        let image = PathBuf::from(spec);
        if !image.is_file() {
            return Err(Unavailable(format!(
                "kernel = \"{spec}\": no such file; name a bzImage, a release such as \"6.12\", or use kernel = \"guest\""
            )));
        }
        let name = image
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let release = name.strip_prefix("vmlinuz-").unwrap_or(&name).to_string();
        // An unpacked kernel package keeps its modules beside `boot/`: ROOT/lib/modules/RELEASE.
        let beside = image
            .parent()
            .and_then(Path::parent)
            .map(|root| root.join("lib/modules").join(&release))
            .filter(|d| d.join("kernel").is_dir());
        let modules = modules_for(&release).or(beside);
        return Ok(Kernel {
            image,
            release,
            modules,
        });
    }
    // The Debian kernels with their modules in `boot`, oldest first.
    let in_boot = |boot: &Path| -> Vec<Kernel> {
        let mut found: Vec<Kernel> = std::fs::read_dir(boot)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let release = n.strip_prefix("vmlinuz-")?.to_string();
                let modules = modules_for(&release)?;
                release.ends_with("-amd64").then_some(Kernel {
                    image: e.path(),
                    release,
                    modules: Some(modules),
                })
            })
            .collect();
        found.sort_by_key(|k| release_key(&k.release));
        found
    };
    if spec == DEBIAN_KERNEL {
        for boot in [guest.join("boot"), PathBuf::from("/boot")] {
            if let Some(k) = in_boot(&boot).pop() {
                return Ok(k);
            }
        }
        return Err(Unavailable(format!("no guest kernel: {INSTALL_HINT}")));
    }
    let mut all: Vec<Kernel> = in_boot(&guest.join("boot"));
    all.extend(more_kernels());
    all.extend(in_boot(Path::new("/boot")));
    all.sort_by_key(|k| release_key(&k.release));
    let named = |r: &str| {
        r == spec
            || r.strip_prefix(spec)
                .is_some_and(|rest| rest.starts_with(['.', '-', '+']))
    };
    if let Some(k) = all.iter().rev().find(|k| named(&k.release)) {
        return Ok(k.clone());
    }
    let have: Vec<&str> = all.iter().map(|k| k.release.as_str()).collect();
    Err(Unavailable(format!(
        "kernel = \"{spec}\": no guest kernel of that release is unpacked (have: {}); scripts/install.sh unpacks Debian's default and 6.12 kernels into {GUEST_DIR}, or name a bzImage by its path",
        if have.is_empty() { "none".to_string() } else { have.join(", ") }
    )))
}

/// The further kernels in [`MORE_KERNELS_DIR`] (those with a module tree), oldest first.
fn more_kernels() -> Vec<Kernel> {
    let mut found: Vec<Kernel> = std::fs::read_dir(MORE_KERNELS_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let release = e.file_name().to_string_lossy().into_owned();
            let root = e.path();
            let image = root.join("boot").join(format!("vmlinuz-{release}"));
            let modules = root.join("lib/modules").join(&release);
            let usable = image.is_file() && modules.join("kernel").is_dir();
            usable.then_some(Kernel {
                image,
                release,
                modules: Some(modules),
            })
        })
        .collect();
    found.sort_by_key(|k| release_key(&k.release));
    found
}

/// A release's numbers in order, for comparing releases: `6.1.0-56` before `6.12.117`.
fn release_key(release: &str) -> Vec<u64> {
    release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The kernel a guest variant of `fs_type` runs under: a named bzImage as named; for `guest`
/// ([`DEBIAN_KERNEL`]) the default kernel when it has the type's driver, else the oldest kernel
/// of [`MORE_KERNELS_DIR`] that has it. A kernel without a module tree is taken as it is (its
/// drivers may be built in).
pub fn kernel_for(spec: &str, fs_type: &str) -> Result<Kernel, Unavailable> {
    let module = fs_module(fs_type);
    let has = |k: &Kernel| {
        k.modules
            .as_ref()
            .is_none_or(|d| initramfs::ModuleTree::open(d).is_ok_and(|t| t.has(module)))
    };
    if spec != DEBIAN_KERNEL {
        let k = find_kernel(spec)?;
        return if has(&k) {
            Ok(k)
        } else {
            Err(Unavailable(format!(
                "the guest kernel {} has no {fs_type} driver",
                k.release
            )))
        };
    }
    let default = find_kernel(spec);
    let mut lacking: Vec<String> = Vec::new();
    for k in default.iter().cloned().chain(more_kernels()) {
        if has(&k) {
            return Ok(k);
        }
        lacking.push(k.release);
    }
    match default {
        Err(e) if lacking.is_empty() => Err(e),
        _ => Err(Unavailable(format!(
            "no guest kernel here has the {fs_type} driver (Linux {} lack{} it); {MORE_KERNELS_HINT}",
            lacking.join(", "),
            if lacking.len() == 1 { "s" } else { "" }
        ))),
    }
}

/// A static busybox for the initramfs.
fn find_busybox() -> Option<PathBuf> {
    [Path::new(GUEST_DIR).join("bin/busybox"), PathBuf::from("/bin/busybox")]
        .into_iter()
        .find(|p| p.is_file() && is_static(p))
}

/// Whether a 64-bit ELF executable has no `PT_INTERP` program header (is statically linked).
fn is_static(p: &Path) -> bool {
    let Ok(b) = std::fs::read(p) else { return false };
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]]) as usize);
    let u64_at = |o: usize| b.get(o..o + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes);
    if !b.starts_with(b"\x7fELF\x02\x01") {
        return false;
    }
    let (Some(phoff), Some(size), Some(n)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else {
        return false;
    };
    (0..n).all(|i| {
        let at = phoff as usize + i * size;
        b.get(at..at + 4).is_some_and(|t| t != 3u32.to_le_bytes()) // PT_INTERP = 3
    })
}

/// The kernel module of a filesystem type (`ext2`/`ext3` are served by `ext4`).
fn fs_module(fs_type: &str) -> &str {
    match fs_type {
        "ext2" | "ext3" => "ext4",
        t => t,
    }
}

/// The modules `v` needs in the guest for `w`: its type's; for a read-only image type, and for
/// a workload that copies its filesystem's loop image ([`loop_image`]), also the loop driver
/// and the staging filesystem's ([`crate::fstype::STAGING`]) that holds the image; for the
/// latter also FUSE (`crashprops`' power-cut disk is a FUSE server, run in the guest).
fn fs_modules<'a>(v: &'a FsVariant, w: &WorkloadKind) -> Vec<&'a str> {
    let mut m = vec![fs_module(&v.fs_type)];
    if v.fs().is_built() || w.workload().needs_loop_image() {
        m.extend(["loop", fs_module(crate::fstype::STAGING)]);
    }
    if w.workload().needs_loop_image() {
        m.push("fuse");
    }
    m
}

/// Room on the guest's disk, besides the loop image, for a workload that copies its
/// filesystem's image ([`loop_image`]): the staging filesystem's own metadata and the copies
/// (`crashprops` keeps a sparse snapshot per probe and one scratch state at a time), in bytes.
const LOOP_IMAGE_ROOM: u64 = 3 << 30;

/// For a workload that copies its filesystem's loop image, the guest's disk (bytes) and the
/// loop image's size the agent gets (`image_bytes`, the case's image size); `None` otherwise.
/// The disk is sparse on the host: only what the guest writes takes space.
fn loop_image(w: &WorkloadKind, image_bytes: u64) -> Option<(u64, u64)> {
    w.workload().needs_loop_image().then(|| {
        (
            image_bytes.saturating_mul(2).saturating_add(LOOP_IMAGE_ROOM),
            image_bytes,
        )
    })
}

/// Whether this machine can run `v` in a guest; `Err` says why not and what to install.
pub fn availability(v: &FsVariant) -> Result<(), Unavailable> {
    let spec = v.kernel.as_deref().unwrap_or(DEBIAN_KERNEL);
    if !crate::host::is_root() {
        return Err("needs root (a guest's disk image and QEMU's 9p share of /)".into());
    }
    if v.fs_type == "reiser4" && spec == DEBIAN_KERNEL {
        return Err(Unavailable(
            "never merged into Linux; needs a patched kernel: name one with kernel = \"/path/to/bzImage\"".into(),
        ));
    }
    let t = v.fs();
    if t.in_memory()
        || !matches!(
            t.backing,
            crate::fstype::Backing::Block | crate::fstype::Backing::Built { .. }
        )
    {
        return Err(Unavailable(format!(
            "{} in a guest: only block-device filesystems run there",
            v.fs_type
        )));
    }
    if crate::host::find_tool(qemu::QEMU).is_none() {
        return Err(INSTALL_HINT.into());
    }
    kernel_for(spec, &v.fs_type)?;
    if find_busybox().is_none() {
        return Err(Unavailable(
            "no static busybox for the guest's initramfs: apt-get install busybox-static (or scripts/install.sh)"
                .into(),
        ));
    }
    let mkfs = t.mkfs_program(&v.fs_type);
    if crate::host::find_tool(&mkfs).is_none() {
        return Err(Unavailable(format!(
            "`{mkfs}` is not installed (the guest runs the host's); {}",
            crate::host::install_hint(&mkfs)
        )));
    }
    Ok(())
}

/// How `v` runs in a guest, for `fsbench list filesystems` and `doctor`: `Linux RELEASE, module
/// M loaded in the guest` (or `built in`); `Err` says why it cannot.
pub fn route(v: &FsVariant) -> Result<String, Unavailable> {
    availability(v)?;
    let k = kernel_for(v.kernel.as_deref().unwrap_or(DEBIAN_KERNEL), &v.fs_type)?;
    let module = fs_module(&v.fs_type);
    let loaded = k
        .modules
        .as_ref()
        .and_then(|d| initramfs::ModuleTree::open(d).ok())
        .is_some_and(|t| t.is_module(module));
    Ok(if loaded {
        format!("Linux {}, module {module} loaded in the guest", k.release)
    } else {
        format!("Linux {}, {module} built in", k.release)
    })
}

/// The fsbench binary the guest runs as its agent: `FSBENCH_EXE`, this process if it is
/// fsbench, else the `fsbench` next to the test binary's `deps/` folder (cargo's layout).
fn agent_exe() -> Result<PathBuf, GuestError> {
    if let Some(p) = std::env::var_os("FSBENCH_EXE") {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().map_err(io("locate the fsbench binary"))?;
    let exe = if me.file_name().is_some_and(|n| n == "fsbench") {
        me
    } else {
        me.parent()
            .and_then(Path::parent)
            .map(|d| d.join("fsbench"))
            .filter(|p| p.is_file())
            .ok_or_else(|| {
                GuestError::Unavailable("the fsbench binary for the guest agent was not found: set FSBENCH_EXE".into())
            })?
    };
    Ok(exe)
}

/// Single-quotes `s` for the init script.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest's `/init`: load the modules, then either say the probe is ok, or mount the host's
/// root over 9p and run the agent in it; then power off (QEMU runs with `-no-reboot`).
fn init_script(agent: Option<&Path>) -> String {
    let mut s = String::from(
        "#!/bin/busybox sh\n\
         B=/bin/busybox\n\
         $B mkdir -p /proc /sys /dev /host\n\
         $B mount -t proc proc /proc\n\
         $B mount -t sysfs sysfs /sys\n\
         $B mount -t devtmpfs devtmpfs /dev\n",
    );
    s += &format!("echo \"{INIT_MARKER} $($B uname -r)\"\n");
    s += "for m in /modules/*.ko; do [ -e \"$m\" ] || continue; $B insmod \"$m\" || echo \"fsbench-guest: insmod $m failed\"; done\n";
    match agent {
        None => s += &format!("echo \"{PROBE_MARKER}\"\n"),
        Some(exe) => {
            s += "if $B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host; then\n\
                  $B mount -o bind /dev /host/dev\n\
                  $B mount -t proc proc /host/proc\n\
                  $B mount -t sysfs sysfs /host/sys\n\
                  $B mount -t tmpfs tmpfs /host/tmp\n\
                  $B mount -t tmpfs tmpfs /host/run\n\
                  $B cp /job.json /host/run/fsbench-job.json\n\
                  $B mkdir -p /host/run/fsbench-bin\n\
                  $B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 fsbenchbin /host/run/fsbench-bin\n\
                  echo 'fsbench-guest: agent starting'\n";
            s += &format!(
                "$B chroot /host {} guest-agent --job /run/fsbench-job.json --out /dev/ttyS1\n",
                sh_quote(&format!(
                    "/run/fsbench-bin/{}",
                    exe.file_name().unwrap_or_default().to_string_lossy()
                )),
            );
            s += "echo \"fsbench-guest: agent exited with status $?\"\n\
                  else echo 'fsbench-guest: cannot mount the host root over 9p'; fi\n";
        }
    }
    s += "$B sync\n$B reboot -f\n";
    s
}

/// Undo steps of one guest repeat ([`Stack`]: recorded in the run's state file the moment each
/// resource may exist, undone newest first on drop), with the folder the run's files go in.
struct Steps {
    dir: PathBuf,
    stack: Stack,
}

impl Steps {
    fn new(state: &RunState) -> Steps {
        Steps {
            dir: state.dir(),
            stack: Stack::new(Some(state.share())),
        }
    }

    fn push(&mut self, u: impl Step) {
        self.stack.push(u);
    }

    /// A file that will be created now, removed at the end.
    fn file(&mut self, path: PathBuf) -> PathBuf {
        self.push(RemoveFile { path: path.clone() });
        path
    }

    fn pop_kill(&mut self, pid: u32) {
        self.stack
            .forget(|u| crate::undo::as_kind::<Kill>(u).is_some_and(|k| k.pid == pid));
    }
}

/// Starts QEMU for `b`, recording its kill step in `steps`.
fn start(steps: &mut Steps, b: &Boot) -> Result<Guest, GuestError> {
    let qemu = crate::host::find_tool(qemu::QEMU).ok_or_else(|| GuestError::Unavailable(INSTALL_HINT.into()))?;
    let g = Guest::start(&qemu, b).map_err(io(format!("start {}", qemu.display())))?;
    let start_time = crate::host::process_start_time(g.pid).unwrap_or(0);
    steps.push(Kill {
        pid: g.pid,
        start_time,
        marker: steps.dir.clone(),
    });
    Ok(g)
}

/// The accelerator of this process's guests, decided once: KVM if `/dev/kvm` opens and a probe
/// boot reaches its init in time, else TCG with the reason.
fn accelerator(state: &RunState, kernel: &Kernel, busybox: &Path, interrupt: &AtomicBool) -> (Accel, Option<String>) {
    static DECIDED: OnceLock<(Accel, Option<String>)> = OnceLock::new();
    if let Some(d) = DECIDED.get() {
        return d.clone();
    }
    let d = match std::env::var("FSBENCH_GUEST_ACCEL").as_deref() {
        Ok("tcg") => (Accel::Tcg, Some("TCG chosen with FSBENCH_GUEST_ACCEL=tcg".into())),
        _ => probe_kvm(state, kernel, busybox, interrupt),
    };
    DECIDED.get_or_init(|| d).clone()
}

fn probe_kvm(state: &RunState, kernel: &Kernel, busybox: &Path, interrupt: &AtomicBool) -> (Accel, Option<String>) {
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm") {
        return (Accel::Tcg, Some(format!("emulated (TCG): /dev/kvm: {e}")));
    }
    let mut steps = Steps::new(state);
    let dir = state.dir();
    let initrd = steps.file(dir.join("guest-probe.cpio"));
    let console = steps.file(dir.join("guest-probe.console.log"));
    let channel = steps.file(dir.join("guest-probe.channel"));
    let stderr = steps.file(dir.join("guest-probe.qemu.log"));
    if let Err(e) = initramfs::write(&initrd, busybox, &[], b"{}", &init_script(None)) {
        return (
            Accel::Tcg,
            Some(format!("emulated (TCG): the KVM probe's initramfs: {e}")),
        );
    }
    let boot = Boot {
        kernel: &kernel.image,
        initrd: &initrd,
        disk: None,
        direct: false,
        console: &console,
        channel: &channel,
        stderr: &stderr,
        share_root: false,
        agent_dir: None,
        accel: Accel::Kvm,
        mem_mib: 256,
    };
    let mut g = match start(&mut steps, &boot) {
        Ok(g) => g,
        Err(e) => {
            return (
                Accel::Tcg,
                Some(format!("emulated (TCG): the KVM probe did not start: {e}")),
            )
        }
    };
    let (ended, seen) = g.wait(&console, PROBE_MARKER, KVM_PROBE_TIMEOUT, interrupt);
    g.kill();
    steps.pop_kill(g.pid);
    match (ended, seen) {
        (_, Some(_)) => (Accel::Kvm, None),
        (Ended::BootTimeout, None) => (
            Accel::Tcg,
            Some(format!(
                "emulated (TCG): /dev/kvm opens but a KVM guest showed no sign of life within {} s (nested virtualisation?)",
                KVM_PROBE_TIMEOUT.as_secs()
            )),
        ),
        _ => (
            Accel::Tcg,
            Some(format!(
                "emulated (TCG): a KVM guest failed to start: {}",
                qemu::tail(&[stderr.clone(), console.clone()], 2)
            )),
        ),
    }
}

/// Creates the guest's sparse disk image `img-<tag>.img` of `image_bytes` in `dir` (recorded in
/// `steps`); with whether the host allows O_DIRECT on it.
fn create_disk(steps: &mut Steps, dir: &Path, tag: &str, image_bytes: u64) -> Result<(PathBuf, bool), GuestError> {
    let disk = steps.file(dir.join(format!("img-{tag}.img")));
    let f = std::fs::File::create_new(&disk).map_err(io(format!("create {}", disk.display())))?;
    f.set_len(image_bytes).map_err(io(format!("size {}", disk.display())))?;
    drop(f);
    let direct = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&disk)
            .is_ok()
    };
    Ok((disk, direct))
}

/// One repeat of `variant` × `workload` in a guest, with a disk of `image_bytes` in `state`'s
/// run folder; `tag` names the repeat's files.
pub fn run_slot(
    state: &RunState,
    variant: &FsVariant,
    workload: &WorkloadKind,
    image_bytes: u64,
    drop_caches: bool,
    tag: &str,
    interrupt: &AtomicBool,
) -> Result<GuestRepeat, GuestError> {
    availability(variant).map_err(|e| GuestError::Unavailable(e.0))?;
    let kernel = kernel_for(variant.kernel.as_deref().unwrap_or(DEBIAN_KERNEL), &variant.fs_type)
        .map_err(|e| GuestError::Unavailable(e.0))?;
    let busybox = find_busybox().ok_or_else(|| GuestError::Unavailable("no static busybox".into()))?;
    let exe = agent_exe()?;
    let (accel, why) = accelerator(state, &kernel, &busybox, interrupt);

    let mut steps = Steps::new(state);
    let dir = state.dir();
    let looped = loop_image(workload, image_bytes);
    let disk_bytes = looped.map_or(image_bytes, |(disk, _)| disk);
    let (disk, direct) = create_disk(&mut steps, &dir, tag, disk_bytes)?;

    let job = agent::Job {
        variant: variant.clone(),
        workload: workload.workload().in_guest().unwrap_or_else(|| workload.clone()),
        device: "/dev/vda".into(),
        drop_caches,
        loop_image: looped.map(|(_, image)| image),
    };
    let job = serde_json::to_vec(&job).unwrap_or_default();

    let modules = match &kernel.modules {
        None => vec![],
        Some(d) => {
            let tree = initramfs::ModuleTree::open(d).map_err(io(format!("read {}", d.display())))?;
            let mut want: Vec<&str> = initramfs::BASE_MODULES.to_vec();
            want.extend(fs_modules(variant, workload));
            tree.resolve(&want)
                .map_err(|e| GuestError::Unavailable(e.to_string()))?
        }
    };
    let initrd = steps.file(dir.join(format!("guest-{tag}.cpio")));
    initramfs::write(&initrd, &busybox, &modules, &job, &init_script(Some(&exe)))
        .map_err(io(format!("write {}", initrd.display())))?;

    let console = steps.file(dir.join(format!("guest-{tag}.console.log")));
    let channel = steps.file(dir.join(format!("guest-{tag}.channel")));
    let stderr = steps.file(dir.join(format!("guest-{tag}.qemu.log")));
    let boot = Boot {
        kernel: &kernel.image,
        initrd: &initrd,
        disk: Some(&disk),
        direct,
        console: &console,
        channel: &channel,
        stderr: &stderr,
        share_root: true,
        agent_dir: exe.parent(),
        accel,
        mem_mib: GUEST_MEM_MIB,
    };
    let mut g = start(&mut steps, &boot)?;
    let (ended, booted) = g.wait(&console, INIT_MARKER, boot_timeout(accel), interrupt);
    g.kill();
    steps.pop_kill(g.pid);
    let tail = || qemu::tail(&[stderr.clone(), console.clone()], 6);
    match ended {
        Ended::Interrupted => return Err(GuestError::Interrupted),
        Ended::BootTimeout => {
            return Err(GuestError::Boot {
                why: format!("did not reach its init within {} s", boot_timeout(accel).as_secs_f64()),
                console: tail(),
            })
        }
        Ended::Exited => {}
    }
    if booted.is_none() {
        return Err(GuestError::Boot {
            why: "ended before it reached its init".into(),
            console: tail(),
        });
    }
    let text = String::from_utf8_lossy(&std::fs::read(&channel).unwrap_or_default()).into_owned();
    let reply = agent::decode(&text).map_err(|why| GuestError::Boot {
        why: format!("ended without a valid answer: {why}"),
        console: tail(),
    })?;
    let mut raw = reply.result.map_err(GuestError::Agent)?;
    let boot_s = booted.map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let mut note = format!(
        "{}{} under {} ({}), booted in {boot_s:.1} s",
        crate::metric::GUEST_NOTE_PREFIX,
        reply.kernel,
        accel.name(),
        match accel {
            Accel::Tcg => "emulated: compare only with each other",
            Accel::Kvm => "hardware virtualisation",
        }
    );
    if !direct {
        note += "; the host refused O_DIRECT on the disk image, so it is cache=writethrough, not cache=none";
    }
    raw.notes.insert(0, note);
    if let Some(w) = why {
        raw.notes.insert(1, w);
    }
    Ok(GuestRepeat {
        raw,
        boot: Measurement {
            phase: BOOT_PHASE.into(),
            rank: None,
            metric: MetricId::lower(BOOT_METRIC, Unit::Seconds).with_role(Role::Detail),
            value: boot_s,
        },
        effective_mount_opts: reply.effective_mount_opts,
    })
}

/// What one guest repeat gives the runner beside its sample.
pub struct GuestRepeat {
    /// The agent's sample, with the guest's kernel, accelerator and boot time in its first note.
    pub raw: RawSample,
    /// The boot time (phase `guest`, metric `boot`, seconds, a detail row).
    pub boot: Measurement,
    /// Mount options as the guest's /proc/mounts showed them.
    pub effective_mount_opts: Option<String>,
}

/// The session's record of the guests `variants` use: `("guest kernel", RELEASE)` per kernel
/// and QEMU's version line; empty without guest variants.
pub fn tool_versions(variants: &[FsVariant]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for v in variants {
        let Some(spec) = v.kernel.as_deref() else { continue };
        if let Ok(k) = kernel_for(spec, &v.fs_type) {
            let entry = (
                "guest kernel".to_string(),
                format!("{} ({})", k.release, k.image.display()),
            );
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
    }
    if !out.is_empty() {
        if let Some(q) = crate::host::find_tool(qemu::QEMU) {
            let v = std::process::Command::new(q).arg("--version").output();
            if let Some(line) = v
                .ok()
                .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string))
            {
                out.push((qemu::QEMU.to_string(), line));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{guest_variant_name as variant_name, strip_guest_suffix};

    #[test]
    fn guest_suffixes_and_names() {
        assert_eq!(strip_guest_suffix("jfs@guest"), ("jfs".into(), true));
        assert_eq!(strip_guest_suffix("ext4@guest:noatime"), ("ext4:noatime".into(), true));
        assert_eq!(strip_guest_suffix("ext4:noatime"), ("ext4:noatime".into(), false));
        assert_eq!(strip_guest_suffix("jfs@host"), ("jfs@host".into(), false));
        assert_eq!(variant_name("ext4", None, &["noatime".into()]), "ext4@guest:noatime");
        assert_eq!(variant_name("ext4", Some(DEBIAN_KERNEL), &[]), "ext4@guest");
        assert_eq!(
            variant_name("ext4", Some("6.12"), &["noatime".into()]),
            "ext4@guest:6.12,noatime"
        );
        assert_eq!(
            variant_name("ext4", Some("/srv/k/bzImage-7.0"), &[]),
            "ext4@guest:bzImage-7.0"
        );
    }

    #[test]
    fn reiser4_needs_a_named_kernel_and_a_missing_kernel_file_says_so() {
        let mut v = FsVariant {
            name: "reiser4@guest".into(),
            fs_type: "reiser4".into(),
            mkfs_args: vec![],
            mount_opts: vec![],
            image_size: None,
            kernel: Some(DEBIAN_KERNEL.into()),
            nocow: false,
            entry: crate::fstype::FsTypeId::of("reiser4"),
        };
        if crate::host::is_root() {
            assert!(availability(&v).unwrap_err().0.contains("never merged into Linux"));
        }
        v.kernel = Some("/nonexistent/bzImage".into());
        assert!(find_kernel("/nonexistent/bzImage")
            .unwrap_err()
            .0
            .contains("no such file"));
    }

    #[test]
    fn a_named_kernel_of_an_unpacked_package_finds_its_modules_beside_it() {
        let Some(k) = more_kernels().into_iter().next() else {
            skip_or_fail!("no unpacked guest kernel package: run scripts/install.sh");
        };
        let named = find_kernel(&k.image.to_string_lossy()).unwrap();
        assert_eq!(named.modules, k.modules, "{}", k.image.display());
        assert_eq!(
            kernel_for(&k.image.to_string_lossy(), "ntfs3").unwrap().release,
            k.release
        );
    }

    #[test]
    fn crashprops_in_a_guest_gets_a_loop_image_fuse_and_its_guest_budget() {
        use crate::engine::workloads::crashprops::CrashPropsSpec;
        let v = FsVariant::with_type("f2fs@guest", "f2fs");
        let spec = CrashPropsSpec {
            max_states: 64,
            guest_max_states: Some(12),
            ..Default::default()
        };
        let cp = WorkloadKind::Crashprops(spec.clone());
        assert_eq!(fs_modules(&v, &cp), ["f2fs", "loop", "ext4", "fuse"]);
        let (disk, image) = loop_image(&cp, 256 << 20).unwrap();
        assert_eq!(image, 256 << 20);
        assert!(disk >= 2 * image + LOOP_IMAGE_ROOM, "{disk}");
        match cp.workload().in_guest() {
            Some(WorkloadKind::Crashprops(g)) => {
                assert_eq!((g.max_states, g.guest_max_states), (12, None));
                assert_eq!(g.seed, spec.seed);
            }
            other => panic!("{other:?}"),
        }
        let no_cap = WorkloadKind::Crashprops(CrashPropsSpec::default());
        assert!(no_cap.workload().in_guest().is_none());
        // A workload that runs on the disk itself: no loop image, only the type's module.
        let bonnie = WorkloadKind::Bonnie(Default::default());
        assert_eq!(fs_modules(&v, &bonnie), ["f2fs"]);
        assert!(loop_image(&bonnie, 256 << 20).is_none());
    }

    #[test]
    fn releases_compare_by_their_numbers() {
        assert!(release_key("6.1.0-56-amd64") < release_key("6.12.117+deb12-amd64"));
        assert!(release_key("6.12.9+deb12-amd64") < release_key("6.12.117+deb12-amd64"));
        assert_eq!(release_key("6.1.0-56-amd64"), [6, 1, 0, 56, 64]);
    }

    #[test]
    fn ntfs3_runs_under_a_kernel_that_has_it_and_jfs_keeps_the_default() {
        let Ok(default) = find_kernel(DEBIAN_KERNEL) else {
            skip_or_fail!("no default guest kernel: run scripts/install.sh");
        };
        assert_eq!(kernel_for(DEBIAN_KERNEL, "jfs").unwrap().release, default.release);
        let more = more_kernels();
        match kernel_for(DEBIAN_KERNEL, "ntfs3") {
            // Debian 12's 6.1 is built without CONFIG_NTFS3_FS.
            Ok(k) => assert!(more.iter().any(|m| m.release == k.release), "{}", k.release),
            Err(e) => assert!(
                more.is_empty() && e.0.contains("no guest kernel here has the ntfs3 driver"),
                "{e}"
            ),
        }
        let none = kernel_for(DEBIAN_KERNEL, "nosuchfs").unwrap_err();
        assert!(
            none.0.contains(&default.release) && none.0.contains(MORE_KERNELS_HINT),
            "{none}"
        );
    }

    #[test]
    fn a_dynamic_executable_is_not_static() {
        assert!(
            !is_static(Path::new("/bin/sh")),
            "/bin/sh is dynamically linked on Debian"
        );
        assert!(!is_static(Path::new("/etc/hostname")));
        let bb = Path::new(GUEST_DIR).join("bin/busybox");
        if bb.is_file() {
            assert!(is_static(&bb));
        }
    }

    #[test]
    fn a_recorded_process_is_killed_only_while_start_time_and_marker_match() {
        let marker = Path::new("/var/tmp/fsbench-guest-unit-marker");
        // `sh -c CMD NAME`: NAME ($0) puts the marker in the command line, as QEMU's paths do.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30", &marker.display().to_string()])
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut start = None;
        for _ in 0..100 {
            start = crate::host::process_start_time(pid);
            if std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.windows(8).any(|w| w == b"fsbench-")) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let start = start.unwrap();
        // A wrong start time (a recycled pid) or another marker: left alone.
        kill(pid, start + 1, marker);
        kill(pid, start, Path::new("/var/tmp/another-run"));
        assert!(
            child.try_wait().unwrap().is_none(),
            "a process that is not ours was killed"
        );
        kill(pid, start, marker);
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    /// The generic [`Kill`] step as guests record it.
    fn kill(pid: u32, start_time: u64, marker: &Path) {
        let step = Kill {
            pid,
            start_time,
            marker: marker.to_path_buf(),
        };
        step.apply().unwrap();
    }

    #[test]
    fn a_recorded_pid_that_is_not_ours_is_never_killed() {
        // This process: right pid, but a different start time and no marker in its command line.
        let me = std::process::id();
        kill(me, 1, Path::new("/no/such/run-folder"));
        assert!(Path::new(&format!("/proc/{me}")).exists());
    }
}
