//! Facts about the machine recorded with every session: host, kernel, CPU, memory, and the
//! versions of the external tools a run used (mkfs.*, losetup), because results depend on them
//! (axboe/fio#1929: two fio versions differed 2× on identical drives).

use crate::host::find_tool;
use serde::{Deserialize, Serialize};
use std::process::Command;

/// The machine a session ran on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -n`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// /proc/cpuinfo model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub ncpu: u32,
    /// MemTotal in bytes.
    pub mem_bytes: u64,
}

/// Reads hostname, kernel release, CPU model, CPU count and memory size.
pub fn host_info() -> HostInfo {
    let uts = rustix::system::uname();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    HostInfo {
        hostname: uts.nodename().to_string_lossy().into_owned(),
        kernel: uts.release().to_string_lossy().into_owned(),
        cpu_model,
        ncpu: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        mem_bytes: mem_kib * 1024,
    }
}

/// Memory available for new allocations without swapping (`MemAvailable` of /proc/meminfo), in
/// bytes; `None` when the kernel does not say.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// First non-empty line a tool prints for its version flag (stdout or stderr), if installed.
pub fn tool_version(tool: &str) -> Option<String> {
    let path = find_tool(tool)?;
    let flag = match tool {
        t if t.starts_with("mkfs.ext") || t == "mke2fs" || t == "mkfs.xfs" => "-V",
        // bonnie++ has no version flag; its usage text ends with "Version: 2.00a".
        "bonnie++" => "-h",
        _ => "--version",
    };
    let out = Command::new(path).arg(flag).output().ok()?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if tool == "bonnie++" {
        return text.lines().find_map(|l| {
            l.trim()
                .strip_prefix("Version:")
                .map(|v| format!("bonnie++ {}", v.trim()))
        });
    }
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}

/// Versions of the tools used for these filesystem types, plus losetup and mount.
pub fn tool_versions<'a>(fs_types: impl IntoIterator<Item = &'a str>) -> Vec<(String, String)> {
    let mut tools: Vec<String> = fs_types
        .into_iter()
        .filter(|t| !crate::fstype::FsType::of(t).in_memory())
        .map(|t| crate::fstype::FsType::of(t).mkfs_program(t))
        .collect();
    tools.extend(["losetup".to_string(), "mount".to_string()]);
    tools.sort();
    tools.dedup();
    tools
        .into_iter()
        .filter_map(|t| tool_version(&t).map(|v| (t, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_info_reads_this_machine() {
        let h = host_info();
        assert!(!h.kernel.is_empty());
        assert!(h.ncpu >= 1);
        assert!(h.mem_bytes > 0);
    }

    #[test]
    fn tool_versions_skip_missing_tools() {
        let v = tool_versions(["nosuchfs"]);
        assert!(v.iter().all(|(t, _)| t != "mkfs.nosuchfs"));
    }
}
