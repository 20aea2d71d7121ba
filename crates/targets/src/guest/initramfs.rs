//! The guest's initramfs: a static busybox, the kernel modules the guest needs (virtio, 9p and
//! the filesystem under test, with their dependencies, in load order) and a generated `/init`
//! script, written as an uncompressed `newc` cpio archive (the kernel's own format:
//! Documentation/driver-api/early-userspace/buffer-format.rst).
//!
//! Invariants:
//! - Module dependencies come from each module's own `.modinfo` `depends=` string, so no
//!   `modules.dep` (which only `depmod` at package installation writes) is needed; a module the
//!   kernel has built in (`modules.builtin`) is skipped; an unknown one is an error.
//! - A dependency is always listed before the module that needs it.
//! - Compressed modules (`NAME.ko.xz`, as Debian's 6.12 kernels ship them) are decompressed with
//!   xz(1) when read, and go into the archive as plain `NAME.ko`: busybox's `insmod` then needs
//!   no decompressor.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The modules every guest loads, in the order the recipe tested (virtio transport, the disk,
/// then 9p for the host's root).
pub const BASE_MODULES: &[&str] = &[
    "virtio_ring",
    "virtio",
    "virtio_pci",
    "virtio_blk",
    "9pnet",
    "9pnet_virtio",
    "9p",
];

/// A module name as the kernel compares them (`-` and `_` are the same).
fn norm(name: &str) -> String {
    name.replace('-', "_")
}

/// The kernel's module tree `lib/modules/KVER`: where each module file is and which are built in.
pub struct ModuleTree {
    files: HashMap<String, PathBuf>,
    builtin: Vec<String>,
}

impl ModuleTree {
    /// Indexes the `.ko` files under `dir` (`lib/modules/KVER`) and its `modules.builtin`.
    pub fn open(dir: &Path) -> std::io::Result<ModuleTree> {
        let mut files = HashMap::new();
        let mut stack = vec![dir.join("kernel")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d)? {
                let e = e?;
                let p = e.path();
                if e.file_type()?.is_dir() {
                    stack.push(p);
                } else if let Some(stem) = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".ko").or_else(|| n.strip_suffix(".ko.xz")))
                {
                    files.insert(norm(stem), p);
                }
            }
        }
        let builtin = std::fs::read_to_string(dir.join("modules.builtin"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let n = l.rsplit('/').next()?;
                n.strip_suffix(".ko").or_else(|| n.strip_suffix(".ko.xz")).map(norm)
            })
            .collect();
        Ok(ModuleTree { files, builtin })
    }

    /// Whether the kernel can provide `name` (a module file or built in).
    pub fn has(&self, name: &str) -> bool {
        let n = norm(name);
        self.files.contains_key(&n) || self.builtin.contains(&n)
    }

    /// Whether `name` is a loadable module file (not built in).
    pub fn is_module(&self, name: &str) -> bool {
        self.files.contains_key(&norm(name))
    }

    /// The module files for `wanted` and everything they depend on, dependencies first; built-in
    /// modules are left out.
    pub fn resolve(&self, wanted: &[&str]) -> Result<Vec<PathBuf>, ModuleError> {
        let mut out: Vec<PathBuf> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for w in wanted {
            self.visit(&norm(w), &mut seen, &mut out, 0)?;
        }
        Ok(out)
    }

    fn visit(
        &self,
        name: &str,
        seen: &mut Vec<String>,
        out: &mut Vec<PathBuf>,
        depth: usize,
    ) -> Result<(), ModuleError> {
        if seen.iter().any(|s| s == name) {
            return Ok(());
        }
        seen.push(name.to_string());
        if depth > 32 {
            return Err(ModuleError::TooDeep(name.to_string()));
        }
        let Some(path) = self.files.get(name) else {
            return if self.builtin.iter().any(|b| b == name) {
                Ok(())
            } else {
                Err(ModuleError::Missing(name.to_string()))
            };
        };
        let bytes = read_module(path).map_err(|source| ModuleError::Read {
            path: path.clone(),
            source,
        })?;
        for dep in depends(&bytes) {
            self.visit(&norm(&dep), seen, out, depth + 1)?;
        }
        // Soft dependencies are loaded on demand by modprobe, which the guest does not have:
        // load them first. They name aliases; `crypto-X` is served by `X_generic` (or `X`).
        for soft in modinfo(&bytes, "softdep") {
            let names = soft
                .split_whitespace()
                .skip_while(|w| *w != "pre:")
                .skip(1)
                .take_while(|w| !w.ends_with(':'));
            for alias in names {
                let base = alias.strip_prefix("crypto-").unwrap_or(alias);
                if let Some(m) = [format!("{base}_generic"), base.to_string()]
                    .into_iter()
                    .map(|n| norm(&n))
                    .find(|n| self.files.contains_key(n))
                {
                    self.visit(&m, seen, out, depth + 1)?;
                }
            }
        }
        out.push(path.clone());
        Ok(())
    }
}

/// Why [`ModuleTree::resolve`] cannot give the guest a module.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    /// Dependencies deeper than 32 (a loop the seen list missed, or a broken tree).
    #[error("module {0}: dependency chain too deep")]
    TooDeep(String),
    /// Neither a module file nor built in.
    #[error("the guest kernel has no module {0}")]
    Missing(String),
    /// A module file cannot be read (or decompressed).
    #[error("read {}: {source}", path.display())]
    Read {
        /// The module file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// A module file's contents, decompressed with `xz -dc` when it ends in `.xz`.
pub fn read_module(path: &Path) -> std::io::Result<Vec<u8>> {
    if path.extension().is_none_or(|e| e != "xz") {
        return std::fs::read(path);
    }
    let out = std::process::Command::new("xz")
        .arg("-dc")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "xz -dc {}: {} {}",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

/// The `depends=a,b` entry of a module's `.modinfo` section (NUL-terminated strings).
fn depends(ko: &[u8]) -> Vec<String> {
    modinfo(ko, "depends")
        .first()
        .map(|d| d.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Every `KEY=value` string of a module's `.modinfo` section.
fn modinfo(ko: &[u8], key: &str) -> Vec<String> {
    let needle = format!("\0{key}=");
    let needle = needle.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = ko[from..].windows(needle.len()).position(|w| w == needle) {
        let rest = &ko[from + at + needle.len()..];
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        out.push(String::from_utf8_lossy(&rest[..end]).into_owned());
        from += at + needle.len() + end;
    }
    out
}

/// One `newc` cpio writer (no compression; the kernel unpacks it as is).
pub struct Cpio<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

impl<W: Write> Cpio<W> {
    /// A writer onto `out`.
    pub fn new(out: W) -> Self {
        Cpio {
            out,
            ino: 1,
            written: 0,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) -> std::io::Result<()> {
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        self.ino += 1;
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> std::io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0u8; 3][..n])
    }

    /// A directory.
    pub fn dir(&mut self, name: &str) -> std::io::Result<()> {
        self.entry(name, 0o040755, &[])
    }

    /// A regular file with permission bits `perm`.
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> std::io::Result<()> {
        self.entry(name, 0o100000 | perm, data)
    }

    /// Writes the trailer and returns the writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.entry("TRAILER!!!", 0, &[])?;
        // The kernel reads the archive in 512-byte blocks; pad like cpio(1) does.
        let n = (512 - (self.written % 512) as usize) % 512;
        self.put(&vec![0u8; n])?;
        Ok(self.out)
    }
}

/// Writes the initramfs to `path`: `/bin/busybox`, the `modules` (in order, as
/// `/modules/NN-name.ko`), the agent's job as `/job.json`, and `/init` = `init_script`.
pub fn write(path: &Path, busybox: &Path, modules: &[PathBuf], job: &[u8], init_script: &str) -> std::io::Result<()> {
    let f = std::fs::File::create_new(path)?;
    let mut c = Cpio::new(std::io::BufWriter::new(f));
    c.dir("bin")?;
    c.file("bin/busybox", 0o755, &std::fs::read(busybox)?)?;
    c.dir("modules")?;
    for (i, m) in modules.iter().enumerate() {
        let name = m
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = name.strip_suffix(".xz").unwrap_or(&name);
        c.file(&format!("modules/{i:02}-{name}"), 0o644, &read_module(m)?)?;
    }
    c.file("job.json", 0o644, job)?;
    c.file("init", 0o755, init_script.as_bytes())?;
    let mut w = c.finish()?;
    w.flush()?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depends_reads_the_modinfo_string_and_an_absent_one_is_empty() {
        let ko = b"\x7fELF junk\0license=GPL\0depends=jbd2,mbcache,crc16\0vermagic=6.1\0";
        assert_eq!(depends(ko), ["jbd2", "mbcache", "crc16"]);
        assert_eq!(depends(b"\0depends=\0x"), Vec::<String>::new());
        assert!(depends(b"no modinfo here").is_empty());
    }

    #[test]
    fn cpio_entries_are_newc_and_four_byte_aligned() {
        let mut c = Cpio::new(Vec::new());
        c.file("init", 0o755, b"#!/bin/sh\n").unwrap();
        let out = c.finish().unwrap();
        assert!(out.starts_with(b"070701"));
        // header 110 bytes + "init\0" (5) = 115 → padded to 116, then the data.
        assert_eq!(&out[116..126], b"#!/bin/sh\n");
        assert_eq!(out.len() % 512, 0);
        let trailer = out.windows(10).position(|w| w == b"TRAILER!!!").unwrap();
        assert_eq!((trailer - 110) % 4, 0, "each header starts 4-byte aligned");
    }

    #[test]
    fn a_compressed_module_is_indexed_and_read_decompressed_and_a_corrupt_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("kernel/fs");
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("ntfs3.ko"), b"\0depends=jbd2\0").unwrap();
        std::fs::write(k.join("jbd2.ko"), b"\0depends=\0").unwrap();
        let st = std::process::Command::new("xz")
            .arg(k.join("ntfs3.ko"))
            .status()
            .unwrap();
        assert!(st.success() && k.join("ntfs3.ko.xz").is_file());
        let t = ModuleTree::open(dir.path()).unwrap();
        assert!(t.has("ntfs3"));
        let got = t.resolve(&["ntfs3"]).unwrap();
        assert_eq!(
            got.len(),
            2,
            "the dependency was read from the decompressed module: {got:?}"
        );
        assert_eq!(read_module(&got[1]).unwrap(), b"\0depends=jbd2\0");
        std::fs::write(k.join("bad.ko.xz"), b"not xz at all").unwrap();
        assert!(read_module(&k.join("bad.ko.xz"))
            .unwrap_err()
            .to_string()
            .contains("xz -dc"));
        let initrd = dir.path().join("i.cpio");
        write(&initrd, Path::new("/etc/hostname"), &got, b"{}", "#!/bin/sh\n").unwrap();
        let cpio = std::fs::read(&initrd).unwrap();
        assert!(cpio.windows(18).any(|w| w == b"modules/01-ntfs3.k"), "stored as .ko");
        assert!(!cpio.windows(6).any(|w| w == b".ko.xz"));
    }

    #[test]
    fn resolve_orders_dependencies_first_and_refuses_an_unknown_module() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("kernel/fs");
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("ext4.ko"), b"\0depends=jbd2,crc16\0softdep=pre: crypto-crc32c\0").unwrap();
        std::fs::write(k.join("crc32c_generic.ko"), b"\0depends=\0").unwrap();
        std::fs::write(k.join("jbd2.ko"), b"\0depends=\0").unwrap();
        std::fs::write(dir.path().join("modules.builtin"), "kernel/lib/crc16.ko\n").unwrap();
        let t = ModuleTree::open(dir.path()).unwrap();
        let got = t.resolve(&["ext4"]).unwrap();
        let names: Vec<_> = got.iter().map(|p| p.file_name().unwrap().to_str().unwrap()).collect();
        assert_eq!(names, ["jbd2.ko", "crc32c_generic.ko", "ext4.ko"]);
        assert!(t.has("crc16") && t.has("ext4") && !t.has("jfs"));
        assert!(t.resolve(&["jfs"]).unwrap_err().to_string().contains("no module jfs"));
    }
}
