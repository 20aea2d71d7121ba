//! Describing a directory tree exactly, and comparing two trees: names, types, sizes, modes,
//! owners, symlink targets, modification times and content hashes of every entry.
//!
//! Used by the tests of the generators and of the copiers (treecopy's `verify = true`, which
//! proves a copy is exact), and by `fsbench dataset gen` to print the tree's digest.
//!
//! What is compared, per entry, relative to the root: the type (directory, regular file,
//! symlink, other), permission bits (`mode & 0o7777`, not for symlinks, whose mode Linux
//! ignores), owner and group, size and FNV-1a hash of regular files, symlink targets, and the
//! modification time to the nanosecond (not for the root, whose time is compared only when
//! asked: the root of a copy is often a fresh directory). Access times are left out (reading a
//! file changes them unless mounted `noatime`), and so are hard-link counts, extended attributes
//! and the allocation of holes.

use super::rng::Fnv64;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The type of a tree entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryType {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device node.
    Other,
}

/// One entry of a tree as [`list_tree`] sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    /// Path relative to the root, `/`-separated; `""` for the root.
    pub path: String,
    /// Type.
    pub kind: EntryType,
    /// Permission bits (`mode & 0o7777`); 0 for symlinks.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size of a regular file in bytes; 0 for the rest.
    pub size: u64,
    /// Modification time, seconds and nanoseconds since the epoch.
    pub mtime: (i64, i64),
    /// Target of a symlink.
    pub target: Option<String>,
    /// FNV-1a of a regular file's content; 0 for the rest.
    pub content: u64,
}

/// Counts and one hash over a listed tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeSummary {
    /// Regular files.
    pub files: u64,
    /// Directories, not counting the root.
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Other entries (FIFOs, sockets, devices).
    pub other: u64,
    /// Bytes of regular files (apparent size).
    pub bytes: u64,
    /// Most path components below the root (a file at the root has depth 1).
    pub max_depth: u32,
    /// FNV-1a over every compared field of every entry (root times excluded).
    pub hash: u64,
}

/// Lists `root` and everything below it, sorted by path, hashing every file's content.
pub fn list_tree(root: &Path) -> io::Result<Vec<TreeEntry>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let meta = fs::symlink_metadata(root).map_err(|e| annotate(e, "stat", root))?;
    out.push(entry(root, String::new(), &meta, &mut buf)?);
    walk(root, "", &mut out, &mut buf)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn annotate(e: io::Error, op: &str, p: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{op} {}: {e}", p.display()))
}

fn walk(dir: &Path, rel: &str, out: &mut Vec<TreeEntry>, buf: &mut [u8]) -> io::Result<()> {
    for item in fs::read_dir(dir).map_err(|e| annotate(e, "read directory", dir))? {
        let item = item.map_err(|e| annotate(e, "read directory", dir))?;
        let name = item.file_name();
        let name = name.to_string_lossy();
        let path = item.path();
        let child_rel = if rel.is_empty() {
            name.into_owned()
        } else {
            format!("{rel}/{name}")
        };
        let meta = fs::symlink_metadata(&path).map_err(|e| annotate(e, "stat", &path))?;
        let e = entry(&path, child_rel.clone(), &meta, buf)?;
        let is_dir = e.kind == EntryType::Dir;
        out.push(e);
        if is_dir {
            walk(&path, &child_rel, out, buf)?;
        }
    }
    Ok(())
}

fn entry(path: &Path, rel: String, meta: &fs::Metadata, buf: &mut [u8]) -> io::Result<TreeEntry> {
    let ft = meta.file_type();
    let kind = if ft.is_dir() {
        EntryType::Dir
    } else if ft.is_file() {
        EntryType::File
    } else if ft.is_symlink() {
        EntryType::Symlink
    } else {
        EntryType::Other
    };
    let mut content = 0;
    let mut target = None;
    match kind {
        EntryType::File => {
            let mut f = File::open(path).map_err(|e| annotate(e, "open", path))?;
            let mut h = Fnv64::default();
            loop {
                let n = f.read(buf).map_err(|e| annotate(e, "read", path))?;
                if n == 0 {
                    break;
                }
                h.bytes(&buf[..n]);
            }
            content = h.finish();
        }
        EntryType::Symlink => {
            target = Some(
                fs::read_link(path)
                    .map_err(|e| annotate(e, "readlink", path))?
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        _ => {}
    }
    Ok(TreeEntry {
        path: rel,
        kind,
        mode: if kind == EntryType::Symlink {
            0
        } else {
            meta.permissions().mode() & 0o7777
        },
        uid: meta.uid(),
        gid: meta.gid(),
        size: if kind == EntryType::File { meta.len() } else { 0 },
        mtime: (meta.mtime(), meta.mtime_nsec()),
        target,
        content,
    })
}

/// Counts and hash of a listing from [`list_tree`].
pub fn summarize(entries: &[TreeEntry]) -> TreeSummary {
    let mut s = TreeSummary::default();
    let mut h = Fnv64::default();
    for e in entries {
        match e.kind {
            EntryType::Dir if e.path.is_empty() => {}
            EntryType::Dir => s.dirs += 1,
            EntryType::File => {
                s.files += 1;
                s.bytes += e.size;
            }
            EntryType::Symlink => s.symlinks += 1,
            EntryType::Other => s.other += 1,
        }
        if !e.path.is_empty() {
            s.max_depth = s.max_depth.max(e.path.split('/').count() as u32);
        }
        h.bytes(e.path.as_bytes()).bytes(&[0, e.kind as u8]);
        h.u64(u64::from(e.mode)).u64(u64::from(e.uid)).u64(u64::from(e.gid));
        h.u64(e.size).u64(e.content);
        if !e.path.is_empty() {
            h.u64(e.mtime.0 as u64).u64(e.mtime.1 as u64);
        }
        if let Some(t) = &e.target {
            h.bytes(t.as_bytes());
        }
        h.bytes(&[0xff]);
    }
    s.hash = h.finish();
    s
}

/// Compares two listings; `Err` describes the first difference (path and field). The roots'
/// modification times are compared only with `root_times`.
pub fn compare(a: &[TreeEntry], b: &[TreeEntry], root_times: bool) -> Result<(), TreeDiff> {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (&a[i], &b[j]);
        match x.path.cmp(&y.path) {
            std::cmp::Ordering::Less => return Err(TreeDiff::Missing(x.path.clone())),
            std::cmp::Ordering::Greater => return Err(TreeDiff::Extra(y.path.clone())),
            std::cmp::Ordering::Equal => {}
        }
        let p = if x.path.is_empty() { "." } else { x.path.as_str() };
        let diff = |what: &'static str, in_source: String, in_copy: String| {
            Err(TreeDiff::Field {
                path: p.to_string(),
                what,
                in_source,
                in_copy,
            })
        };
        if x.kind != y.kind {
            return diff("type", format!("{:?}", x.kind), format!("{:?}", y.kind));
        }
        if x.mode != y.mode {
            return diff("mode", format!("{:o}", x.mode), format!("{:o}", y.mode));
        }
        if (x.uid, x.gid) != (y.uid, y.gid) {
            return diff("owner", format!("{}:{}", x.uid, x.gid), format!("{}:{}", y.uid, y.gid));
        }
        if x.size != y.size {
            return diff("size", x.size.to_string(), y.size.to_string());
        }
        if x.content != y.content {
            return diff(
                "content hash",
                format!("{:016x}", x.content),
                format!("{:016x}", y.content),
            );
        }
        if x.target != y.target {
            return diff("symlink target", format!("{:?}", x.target), format!("{:?}", y.target));
        }
        if (root_times || !x.path.is_empty()) && x.mtime != y.mtime {
            return diff(
                "mtime",
                format!("{}.{:09}", x.mtime.0, x.mtime.1),
                format!("{}.{:09}", y.mtime.0, y.mtime.1),
            );
        }
        i += 1;
        j += 1;
    }
    if let Some(x) = a.get(i) {
        return Err(TreeDiff::Missing(x.path.clone()));
    }
    if let Some(y) = b.get(j) {
        return Err(TreeDiff::Extra(y.path.clone()));
    }
    Ok(())
}

/// The first difference [`compare`] finds between a source listing and its copy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeDiff {
    /// A path of the source the copy lacks.
    #[error("`{0}` is missing from the copy")]
    Missing(String),
    /// A path only the copy has.
    #[error("`{0}` is only in the copy")]
    Extra(String),
    /// A field that differs (`type`, `mode`, `owner`, `size`, `content hash`, `symlink
    /// target`, `mtime`), with both values as shown.
    #[error("`{path}`: {what} {in_source} in the source, {in_copy} in the copy")]
    Field {
        /// The path (`.` for the root).
        path: String,
        /// The field.
        what: &'static str,
        /// Its value in the source.
        in_source: String,
        /// Its value in the copy.
        in_copy: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_sees_every_field_and_compare_names_the_difference() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let a = tmp.path().join("a");
        fs::create_dir_all(a.join("sub/deeper")).expect("mkdir");
        fs::write(a.join("sub/f.txt"), b"hello").expect("write");
        fs::write(a.join("top"), b"").expect("write");
        std::os::unix::fs::symlink("sub/f.txt", a.join("link")).expect("symlink");
        let list = list_tree(&a).expect("list");
        let paths: Vec<&str> = list.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["", "link", "sub", "sub/deeper", "sub/f.txt", "top"]);
        let s = summarize(&list);
        assert_eq!((s.files, s.dirs, s.symlinks, s.bytes, s.max_depth), (2, 2, 1, 5, 2));
        assert_eq!(list[1].target.as_deref(), Some("sub/f.txt"));
        assert_eq!(list[4].content, Fnv64::default().bytes(b"hello").finish());
        assert!(compare(&list, &list, true).is_ok());

        let mut other = list.clone();
        other[4].content ^= 1;
        let e = compare(&list, &other, false).expect_err("content differs").to_string();
        assert!(e.contains("sub/f.txt") && e.contains("content"), "{e}");
        let mut other = list.clone();
        other[5].mtime.1 += 1;
        assert!(compare(&list, &other, false)
            .expect_err("mtime")
            .to_string()
            .contains("top"));
        assert_ne!(summarize(&other).hash, s.hash);
        let mut other = list.clone();
        other.remove(3);
        assert!(compare(&list, &other, false)
            .expect_err("missing")
            .to_string()
            .contains("missing"));
        let mut other = list.clone();
        other[0].mtime.0 += 5;
        assert!(compare(&list, &other, false).is_ok(), "root time ignored");
        assert!(compare(&list, &other, true).is_err());
    }
}
