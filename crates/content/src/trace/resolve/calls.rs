//! The calls on descriptors and on names, one system call family each (see [`super`]).

use super::{Resolver, Syscall};
use crate::parsers::strace::{fd_arg, int_arg, unquote, Ret};
use crate::trace::{Call, Kind};

/// The bytes an iovec array argument asks for (`[{iov_base=""..., iov_len=6}, …]`).
fn iov_len(arg: Option<&str>) -> Option<u64> {
    let a = arg?;
    let mut total = 0u64;
    for part in a.split("iov_len=").skip(1) {
        let n: String = part.chars().take_while(char::is_ascii_digit).collect();
        total += n.parse::<u64>().ok()?;
    }
    Some(total)
}

impl Resolver {
    /// Every call other than open, close, the descriptor-table and process calls.
    pub(super) fn data_or_name(&mut self, s: &Syscall) {
        let a = &s.args;
        let arg = |i: usize| a.get(i).map(String::as_str);
        let empty_path = |i: usize| arg(i) == Some("\"\"");
        let kind = match s.name.as_str() {
            "read" | "readv" => Kind::Read,
            "pread64" | "preadv" | "preadv2" => Kind::Pread,
            "write" | "writev" => Kind::Write,
            "pwrite64" | "pwritev" | "pwritev2" => Kind::Pwrite,
            "fsync" => Kind::Fsync,
            "fdatasync" => Kind::Fdatasync,
            "sync_file_range" | "sync_file_range2" => Kind::SyncFileRange,
            "fstat" => Kind::Fstat,
            "newfstatat" | "statx" if empty_path(1) => Kind::Fstat,
            "getdents64" | "getdents" => Kind::Getdents,
            "ftruncate" => Kind::Ftruncate,
            "fallocate" => Kind::Fallocate,
            "lseek" => Kind::Lseek,
            "mmap" => Kind::Mmap,
            "copy_file_range" => Kind::CopyFileRange,
            "msync" => {
                if self.calls.iter().any(|c| c.kind == Kind::Mmap) {
                    let c = self.call(s, Kind::Msync);
                    self.emit(c);
                }
                return;
            }
            _ => return self.name_call(s),
        };
        if kind == Kind::Mmap && arg(4).and_then(fd_arg).is_none_or(|(fd, _)| fd < 0) {
            return;
        }
        if kind == Kind::CopyFileRange {
            return self.copy_range(s);
        }
        let fd_at = if kind == Kind::Mmap { 4 } else { 0 };
        let handle = match self.handle(s.tid, a.get(fd_at)) {
            Ok(h) => h,
            Err(why) => return self.drop_call(why),
        };
        let mut c = self.call(s, kind);
        c.handle = Some(handle);
        let n = |i: usize| arg(i).and_then(int_arg);
        match s.name.as_str() {
            "read" | "write" | "getdents64" | "getdents" => c.len = n(2).map(|v| v as u64),
            "readv" | "writev" => c.len = iov_len(arg(1)),
            "pread64" | "pwrite64" => (c.len, c.offset) = (n(2).map(|v| v as u64), n(3)),
            "preadv" | "pwritev" | "preadv2" | "pwritev2" => (c.len, c.offset) = (iov_len(arg(1)), n(3)),
            "sync_file_range" => (c.offset, c.len) = (n(1), n(2).map(|v| v as u64)),
            "ftruncate" => c.len = n(1).map(|v| v as u64),
            "fallocate" => (c.flags, c.offset, c.len) = (arg(1).unwrap_or("0").into(), n(2), n(3).map(|v| v as u64)),
            "lseek" => (c.offset, c.flags) = (n(1), arg(2).unwrap_or("SEEK_SET").into()),
            "mmap" => (c.len, c.flags) = (n(1).map(|v| v as u64), arg(3).unwrap_or("").into()),
            _ => {}
        }
        self.emit(c);
    }

    /// copy_file_range: between two handles, or a read or a write when one side is outside.
    fn copy_range(&mut self, s: &Syscall) {
        let from = self.handle(s.tid, s.args.first());
        let to = self.handle(s.tid, s.args.get(2));
        let len = s.args.get(4).and_then(|a| int_arg(a)).map(|v| v as u64);
        let (kind, h, h2) = match (from, to) {
            (Ok(f), Ok(t)) => (Kind::CopyFileRange, f, Some(t)),
            (Ok(f), Err("outside root")) => (Kind::Read, f, None),
            (Err("outside root"), Ok(t)) => (Kind::Write, t, None),
            (Err(why), _) | (_, Err(why)) => return self.drop_call(why),
        };
        let mut c = self.call(s, kind);
        (c.handle, c.handle2, c.len) = (Some(h), h2, len);
        if kind != Kind::CopyFileRange {
            c.len = match s.ret {
                Ret::Value { value, .. } => Some(value.max(0) as u64),
                _ => len,
            };
        }
        self.emit(c);
    }

    /// The relative path of argument `path_at`, resolved against the directory descriptor
    /// `dir_at` (or the working directory), and whether it is under the root.
    fn path_arg(&mut self, s: &Syscall, dir_at: Option<usize>, path_at: usize) -> Option<Option<String>> {
        let p = s.args.get(path_at).and_then(|a| unquote(a))?;
        let dir = self.dir_of(s.tid, dir_at.and_then(|i| s.args.get(i)).map(String::as_str));
        Some(self.rel(&dir, &p))
    }

    /// Calls on names: stat family, rename, unlink, mkdir, rmdir, truncate; any other call on a
    /// path or descriptor under the root is counted as unsupported.
    fn name_call(&mut self, s: &Syscall) {
        let arg = |i: usize| s.args.get(i).map(String::as_str);
        let flags = |i: usize| arg(i).unwrap_or("").to_string();
        let nofollow = |f: &str| {
            if f.contains("AT_SYMLINK_NOFOLLOW") {
                "nofollow"
            } else {
                ""
            }
        };
        let (kind, dir, at, fl) = match s.name.as_str() {
            "stat" => (Kind::Stat, None, 0, String::new()),
            "lstat" => (Kind::Stat, None, 0, "nofollow".into()),
            "newfstatat" => (Kind::Stat, Some(0), 1, nofollow(&flags(3)).into()),
            "statx" => (Kind::Stat, Some(0), 1, nofollow(&flags(2)).into()),
            "access" => (Kind::Stat, None, 0, format!("access:{}", flags(1))),
            "faccessat" | "faccessat2" => (Kind::Stat, Some(0), 1, format!("access:{}", flags(2))),
            "truncate" => (Kind::Truncate, None, 0, String::new()),
            "unlink" => (Kind::Unlink, None, 0, String::new()),
            "unlinkat" if flags(2).contains("AT_REMOVEDIR") => (Kind::Rmdir, Some(0), 1, String::new()),
            "unlinkat" => (Kind::Unlink, Some(0), 1, String::new()),
            "mkdir" => (Kind::Mkdir, None, 0, String::new()),
            "mkdirat" => (Kind::Mkdir, Some(0), 1, String::new()),
            "rmdir" => (Kind::Rmdir, None, 0, String::new()),
            "rename" => (Kind::Rename, None, 0, String::new()),
            "symlink" => (Kind::Symlink, None, 1, String::new()),
            "symlinkat" => (Kind::Symlink, Some(1), 2, String::new()),
            "link" => (Kind::Link, None, 0, String::new()),
            "linkat" => (Kind::Link, Some(0), 1, flags(4)),
            "renameat" | "renameat2" => (Kind::Rename, Some(0), 1, flags(4)),
            _ => return self.unsupported(s),
        };
        let Some(path) = self.path_arg(s, dir, at) else { return };
        let Some(path) = path else {
            return self.drop_call("outside root");
        };
        let mut c: Call = self.call(s, kind);
        c.path = Some(path);
        c.flags = fl;
        match s.name.as_str() {
            "truncate" => c.len = arg(1).and_then(int_arg).map(|v| v as u64),
            "mkdir" => c.mode = arg(1).and_then(int_arg).map(|v| v as u32),
            "mkdirat" => c.mode = arg(2).and_then(int_arg).map(|v| v as u32),
            "symlink" | "symlinkat" => c.target = arg(0).and_then(unquote).map(|t| self.target(&t)),
            "rename" | "renameat" | "renameat2" | "link" | "linkat" => {
                let (d2, p2) = if matches!(s.name.as_str(), "rename" | "link") {
                    (None, 1)
                } else {
                    (Some(2), 3)
                };
                match self.path_arg(s, d2, p2) {
                    Some(Some(p)) => c.path2 = Some(p),
                    _ => return self.drop_call("outside root"),
                }
            }
            _ => {}
        }
        self.emit(c);
    }

    /// A call of a kind the trace does not hold: counted when it names a path or handle under
    /// the root.
    fn unsupported(&mut self, s: &Syscall) {
        let first_is_fd = s.args.first().and_then(|a| fd_arg(a)).is_some();
        let under = if s.args.first().is_some_and(|a| a.starts_with('"')) {
            matches!(self.path_arg(s, None, 0), Some(Some(_)))
        } else if first_is_fd && s.args.get(1).is_some_and(|a| a.starts_with('"')) {
            matches!(self.path_arg(s, Some(0), 1), Some(Some(_)))
        } else if first_is_fd {
            self.handle(s.tid, s.args.first()).is_ok()
        } else {
            false
        };
        if under {
            self.drop_call(&format!("unsupported {}", s.name));
        }
    }
}
