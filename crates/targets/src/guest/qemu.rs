//! Starting, watching and killing one QEMU process (Debian's `qemu-system-x86`).
//!
//! Invariants:
//! - QEMU is started with `PR_SET_PDEATHSIG = SIGKILL`, so it dies with fsbench even after a
//!   SIGKILL; the caller also records an [`crate::undo::Kill`] the moment it exists,
//!   so `fsbench cleanup` kills it if it somehow survives.
//! - [`Guest::wait`] always returns with the process reaped: on exit, on interrupt, on timeout.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The QEMU program.
pub const QEMU: &str = "qemu-system-x86_64";

/// How the guest's CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation.
    Kvm,
    /// QEMU's emulator: results compare only with other TCG results.
    Tcg,
}

impl Accel {
    /// `kvm` or `tcg`.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// What one guest boot is given.
pub struct Boot<'a> {
    /// The kernel image.
    pub kernel: &'a Path,
    /// The initramfs.
    pub initrd: &'a Path,
    /// The disk under test (`/dev/vda`), if any.
    pub disk: Option<&'a Path>,
    /// Open the disk with `cache=none` (O_DIRECT on the host); otherwise `writethrough`.
    pub direct: bool,
    /// The guest's console (ttyS0), written by QEMU.
    pub console: &'a Path,
    /// The agent's channel (ttyS1), written by QEMU.
    pub channel: &'a Path,
    /// QEMU's own stderr.
    pub stderr: &'a Path,
    /// Share the host's root read-only over 9p as `hostroot`.
    pub share_root: bool,
    /// Share the folder of the agent's binary read-only over 9p as `fsbenchbin`: the guest
    /// mounts its own tmpfs over `/tmp` and `/run`, so a binary there (a checkout in /tmp) would
    /// be hidden in the shared root.
    pub agent_dir: Option<&'a Path>,
    /// Accelerator.
    pub accel: Accel,
    /// Guest memory in MiB.
    pub mem_mib: u64,
}

/// A running QEMU.
pub struct Guest {
    child: Option<Child>,
    /// Its process id.
    pub pid: u32,
}

/// How a wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// QEMU exited by itself (the guest powered off or rebooted).
    Exited,
    /// The guest printed no `marker` within the boot timeout; killed.
    BootTimeout,
    /// SIGINT/SIGTERM; killed.
    Interrupted,
}

impl Guest {
    /// Starts QEMU for `b`.
    pub fn start(qemu: &Path, b: &Boot) -> std::io::Result<Guest> {
        let mut cmd = Command::new(qemu);
        let accel = match b.accel {
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host"],
            // qemu64 boots in about half the time of `max` under TCG (fewer features to emulate).
            Accel::Tcg => ["-accel", "tcg", "-cpu", "qemu64"],
        };
        cmd.args(accel)
            .args(["-m", &b.mem_mib.to_string(), "-smp", "1", "-nodefaults", "-no-reboot"])
            .args(["-display", "none", "-monitor", "none"])
            .arg("-kernel")
            .arg(b.kernel)
            .arg("-initrd")
            .arg(b.initrd)
            .args(["-append", "console=ttyS0 quiet panic=-1"])
            .arg("-serial")
            .arg(format!("file:{}", b.console.display()))
            .arg("-serial")
            .arg(format!("file:{}", b.channel.display()));
        if let Some(disk) = b.disk {
            cmd.arg("-drive").arg(format!(
                "file={},if=virtio,format=raw,cache={}",
                qemu_path(disk),
                if b.direct { "none" } else { "writethrough" }
            ));
        }
        if b.share_root {
            cmd.args([
                "-virtfs",
                "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            ]);
        }
        if let Some(dir) = b.agent_dir {
            cmd.arg("-virtfs").arg(format!(
                "local,path={},mount_tag=fsbenchbin,security_model=none,readonly=on,multidevs=remap",
                qemu_path(dir)
            ));
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(b.stderr)?);
        // SAFETY: prctl is async-signal-safe and touches only the child's own state.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        Ok(Guest {
            pid: child.id(),
            child: Some(child),
        })
    }

    /// Waits until QEMU exits; kills it on interrupt, or when `console` shows no `marker`
    /// within `boot_timeout`. Returns how it ended and, if seen, when the marker appeared.
    pub fn wait(
        &mut self,
        console: &Path,
        marker: &str,
        boot_timeout: Duration,
        interrupt: &AtomicBool,
    ) -> (Ended, Option<Duration>) {
        let t0 = Instant::now();
        let mut booted = None;
        loop {
            let Some(child) = self.child.as_mut() else {
                return (Ended::Exited, booted);
            };
            if booted.is_none() && contains(console, marker) {
                booted = Some(t0.elapsed());
            }
            if let Ok(Some(_)) = child.try_wait() {
                if booted.is_none() && contains(console, marker) {
                    booted = Some(t0.elapsed());
                }
                self.child = None;
                return (Ended::Exited, booted);
            }
            if interrupt.load(Ordering::Relaxed) {
                self.kill();
                return (Ended::Interrupted, booted);
            }
            if booted.is_none() && t0.elapsed() > boot_timeout {
                self.kill();
                return (Ended::BootTimeout, booted);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills and reaps QEMU (no-op once it has exited).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `file` contains `marker`.
fn contains(file: &Path, marker: &str) -> bool {
    std::fs::read(file).is_ok_and(|b| b.windows(marker.len()).any(|w| w == marker.as_bytes()))
}

/// A path as QEMU's `-drive file=` takes it (commas doubled).
fn qemu_path(p: &Path) -> String {
    p.display().to_string().replace(',', ",,")
}

/// The last `n` non-empty lines of the files, for a failure message.
pub fn tail(files: &[PathBuf], n: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for f in files {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()).replace('\r', "");
        lines.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string),
        );
    }
    let from = lines.len().saturating_sub(n);
    if lines.is_empty() {
        "(no console output)".into()
    } else {
        lines[from..].join(" / ")
    }
}
