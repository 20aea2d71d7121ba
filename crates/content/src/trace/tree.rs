//! The tree under a root before the traced program runs: every directory, file and symbolic
//! link (not followed), parents before children, siblings by name. Only metadata is read
//! (lstat, readdir, readlink): no file is opened, so capturing changes nothing.

use super::resolve::{hash_components, hash_name};
use super::{Entry, EntryKind, TraceError};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path};

/// The entries under `root` (the root itself excluded), leaving out the paths in `skip`
/// (absolute: the trace being written); names hashed if `hash`.
pub fn capture(root: &Path, skip: &[&Path], hash: bool) -> Result<Vec<Entry>, TraceError> {
    let mut out = Vec::new();
    walk(root, root, skip, hash, &mut out)?;
    Ok(out)
}

fn walk(root: &Path, dir: &Path, skip: &[&Path], hash: bool, out: &mut Vec<Entry>) -> Result<(), TraceError> {
    let io = |what: &str, p: &Path, e: std::io::Error| TraceError::Io {
        what: format!("{what} {}", p.display()),
        source: e,
    };
    let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(dir)
        .map_err(|e| io("read directory", dir, e))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(|e| io("read directory", dir, e))?;
    names.sort();
    for name in names {
        let p = dir.join(&name);
        if skip.contains(&p.as_path()) {
            continue;
        }
        let md = std::fs::symlink_metadata(&p).map_err(|e| io("stat", &p, e))?;
        let rel = relative(root, &p, hash);
        let ft = md.file_type();
        let mode = md.permissions().mode() & 0o7777;
        if ft.is_dir() {
            out.push(Entry {
                path: rel,
                kind: EntryKind::Dir,
                size: 0,
                mode,
                target: None,
            });
            walk(root, &p, skip, hash, out)?;
        } else if ft.is_symlink() {
            let target = std::fs::read_link(&p).map_err(|e| io("readlink", &p, e))?;
            out.push(Entry {
                path: rel.clone(),
                kind: EntryKind::Symlink,
                size: 0,
                mode,
                target: stays_under(&rel, &target).then(|| {
                    let t = target.to_string_lossy();
                    if hash {
                        hash_components(&t)
                    } else {
                        t.into_owned()
                    }
                }),
            });
        } else if ft.is_file() {
            out.push(Entry {
                path: rel,
                kind: EntryKind::File,
                size: md.size(),
                mode,
                target: None,
            });
        }
        // Sockets, FIFOs and devices are not rebuilt: left out.
    }
    Ok(())
}

/// `p` relative to `root`, components hashed if `hash`.
fn relative(root: &Path, p: &Path, hash: bool) -> String {
    let rel = p.strip_prefix(root).unwrap_or(p);
    rel.components()
        .map(|c| {
            let s = c.as_os_str().to_string_lossy();
            if hash {
                hash_name(&s)
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether the relative link `target` of the link at relative path `link` resolves, lexically,
/// under the root.
pub fn stays_under(link: &str, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth = link.split('/').count() as i64 - 1;
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::ParentDir => depth -= 1,
            Component::CurDir => {}
            _ => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}
