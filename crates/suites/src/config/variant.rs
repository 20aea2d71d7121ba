//! `--fs` lists: filesystem variants written on one command line.
//!
//! `ext4,xfs,btrfs:compress=lzo,ext4:noatime,discard` gives four variants: `ext4`, `xfs`,
//! `btrfs:compress=lzo` (mount options `[compress=lzo]`) and `ext4:noatime,discard` (mount
//! options `[noatime, discard]`). Commas separate both variants and mount options, so each
//! comma-separated token is read in turn:
//! - `type:option` starts a new variant of that type with a first option (a `:` after an `=`,
//!   as in `context=system_u:object_r:…`, belongs to the option and does not start a variant);
//! - a known filesystem type (a row of [`crate::fstype::TABLE`], or any `TOKEN` with an executable
//!   `mkfs.TOKEN` in `$PATH`, `/sbin` or `/usr/sbin`) starts a new variant with no options;
//! - anything else is one more mount option of the current variant.
//!
//! `TYPE@guest` runs the type under a guest kernel ([`crate::guest`]); its first option names
//! that kernel when it starts with a digit or a `/` (`ext4@guest:6.12,noatime`,
//! `ext4@guest:/srv/bzImage`), Debian's default kernel otherwise.
//!
//! Invariants of the result: at least one variant; names `type` or `type:opt1,opt2`, unique
//! and valid as file-name components; types `[a-z0-9]+`. Whether the machine can actually make
//! a type is the provisioner's question, answered as "unavailable: why" at run time.

use super::load::{check_fs_type, check_name, default_variant_name};
use super::{ConfigError, FsVariant};
use std::path::{Path, PathBuf};

/// The kernel of a `TYPE@guest` variant: Debian's (what `scripts/install.sh` unpacks); the
/// guest module finds it.
pub const DEBIAN_KERNEL: &str = "guest";

/// `jfs@guest` → (`jfs`, true); `ext4@guest:noatime` → (`ext4:noatime`, true); anything else
/// unchanged with false.
pub fn strip_guest_suffix(token: &str) -> (std::borrow::Cow<'_, str>, bool) {
    let (head, tail) = match token.split_once(':') {
        Some((h, t)) => (h, Some(t)),
        None => (token, None),
    };
    match (head.strip_suffix("@guest"), tail) {
        (Some(t), None) => (t.into(), true),
        (Some(t), Some(rest)) => (format!("{t}:{rest}").into(), true),
        (None, _) => (token.into(), false),
    }
}

/// The default name of a guest variant: `jfs@guest`, `ext4@guest:noatime`, and with a kernel
/// other than [`DEBIAN_KERNEL`] its release or file name first: `ext4@guest:6.12`,
/// `ext4@guest:6.12,noatime`, `ext4@guest:bzImage`.
pub fn guest_variant_name(fs_type: &str, kernel: Option<&str>, mount_opts: &[String]) -> String {
    let kernel = kernel.filter(|k| *k != DEBIAN_KERNEL).map(|k| {
        Path::new(k)
            .file_name()
            .map_or_else(|| k.to_string(), |n| n.to_string_lossy().into_owned())
    });
    let parts: Vec<String> = kernel.into_iter().chain(mount_opts.iter().cloned()).collect();
    if parts.is_empty() {
        format!("{fs_type}@guest")
    } else {
        format!("{fs_type}@guest:{}", parts.join(","))
    }
}

/// Splits a guest variant's options into the kernel it names and its mount options: a first
/// option that starts with a digit (a release: `6.12`) or a `/` (a bzImage path) is the kernel
/// (no mount option starts so), else the kernel is [`DEBIAN_KERNEL`].
fn guest_kernel(mut opts: Vec<String>) -> (String, Vec<String>) {
    match opts.first() {
        Some(k) if k.starts_with(|c: char| c.is_ascii_digit() || c == '/') => {
            let k = opts.remove(0);
            (k, opts)
        }
        _ => (DEBIAN_KERNEL.to_string(), opts),
    }
}

/// Filesystem types recognised in `--fs` lists without looking for `mkfs.TYPE`: the rows of
/// the [`crate::fstype`] table.
fn known_fs_types() -> impl Iterator<Item = &'static str> {
    crate::fstype::TABLE.iter().map(|t| t.name)
}

/// Parses `ext4,xfs,btrfs:compress=lzo,ext4:noatime,discard` into variants (see the module
/// docs for the grammar). Errors start with `--fs` and say how to fix the list.
pub fn parse_fs_list(s: &str) -> Result<Vec<FsVariant>, ConfigError> {
    let dirs = mkfs_dirs();
    parse_with(s, &|t| is_fs_type(t, &dirs))
}

/// Where `mkfs.TYPE` programs are looked for: `$PATH`, `/sbin`, `/usr/sbin`.
fn mkfs_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend([PathBuf::from("/sbin"), PathBuf::from("/usr/sbin")]);
    dirs
}

/// Resolves a variant's type when a suite or `--fs` is read: a row of the [`crate::fstype`]
/// table, or the generic row when this machine has `mkfs.TYPE`. Anything else is the reason
/// (after "filesystem type `T` "), listing the known types. (A guest variant's type is the
/// guest's question, [`crate::guest::availability`].)
pub(crate) fn resolve_fs_type(t: &str) -> Result<crate::fstype::FsTypeId, String> {
    if is_fs_type(t, &mkfs_dirs()) {
        return Ok(crate::fstype::FsTypeId::of(t));
    }
    Err(unknown_fs_type(t))
}

/// Why `t` is no filesystem type: neither known nor with a `mkfs.T` here; lists the known ones.
fn unknown_fs_type(t: &str) -> String {
    let known: Vec<&str> = known_fs_types().collect();
    format!(
        "is neither a type fsbench knows nor has a `mkfs.{t}` on this machine: use one of {}",
        known.join(", ")
    )
}

/// Whether `token` names a filesystem type: a known one, or one with `mkfs.TOKEN` in `dirs`.
fn is_fs_type(token: &str, dirs: &[PathBuf]) -> bool {
    if crate::fstype::FsType::is_known(token) {
        return true;
    }
    // Only plain names are looked up, so a token can never form a path such as `mkfs.../x`.
    check_fs_type(token).is_ok() && dirs.iter().any(|d| is_executable(&d.join(format!("mkfs.{token}"))))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The parser, with the "is this a filesystem type" question supplied (tests fake `$PATH`).
fn parse_with(s: &str, is_type: &dyn Fn(&str) -> bool) -> Result<Vec<FsVariant>, ConfigError> {
    let err = |m: String| ConfigError::Invalid(super::diag::one_line(&format!("--fs `{s}`: {m}")));
    if s.trim().is_empty() {
        return Err(err(
            "the list is empty: name at least one filesystem, e.g. `--fs ext4,xfs`".into(),
        ));
    }
    // (type, options, under a guest kernel) in order.
    let mut list: Vec<(String, Vec<String>, bool)> = Vec::new();
    for raw in s.split(',') {
        let token = raw.trim();
        // `jfs@guest`, `ext4@guest:noatime`: the type runs in a QEMU guest (crate::guest).
        let (stripped, guest) = strip_guest_suffix(token);
        let token: &str = &stripped;
        if token.is_empty() {
            return Err(err("it has an empty entry: remove the extra comma".into()));
        }
        let starts_variant = match token.split_once(':') {
            Some((before, _)) => !before.contains('='),
            None => false,
        };
        if starts_variant {
            let (fs_type, opt) = token.split_once(':').unwrap_or((token, ""));
            check_fs_type(fs_type).map_err(|why| err(format!("filesystem type `{fs_type}` {why}")))?;
            if !guest && !is_type(fs_type) {
                return Err(err(format!("filesystem type `{fs_type}` {}", unknown_fs_type(fs_type))));
            }
            if opt.is_empty() {
                return Err(err(format!(
                    "`{token}` has nothing after the colon: write `{fs_type}` or `{fs_type}:OPTION`"
                )));
            }
            list.push((fs_type.to_string(), vec![opt.to_string()], guest));
        } else if guest || is_type(token) {
            list.push((token.to_string(), Vec::new(), guest));
        } else if let near @ [_, ..] = typos_of_type(token).as_slice() {
            let near = match near {
                [one] => format!("`{one}`"),
                many => format!("one of {}", super::diag::quoted_list(many)),
            };
            return Err(err(format!(
                "`{token}` is not a filesystem type fsbench knows or a `mkfs.{token}` on this machine: did you mean {near}?"
            )));
        } else if let Some((_, opts, _)) = list.last_mut() {
            opts.push(token.to_string());
        } else {
            return Err(err(format!(
                "`{token}` is neither a known filesystem type nor has a `mkfs.{token}` on this machine, and a mount option needs a filesystem before it: write e.g. `ext4:{token}`"
            )));
        }
    }

    let mut out: Vec<FsVariant> = Vec::with_capacity(list.len());
    for (fs_type, mount_opts, guest) in list {
        let (kernel, mount_opts) = match guest {
            true => {
                let (k, o) = guest_kernel(mount_opts);
                (Some(k), o)
            }
            false => (None, mount_opts),
        };
        // Resolved once, here: every token was checked to be a type above.
        let entry = crate::fstype::FsTypeId::of(&fs_type);
        entry
            .get()
            .check_mount_options(&mount_opts)
            .map_err(|why| err(why.to_string()))?;
        if guest {
            check_fs_type(&fs_type).map_err(|why| err(format!("filesystem type `{fs_type}` {why}")))?;
        }
        let name = match guest {
            true => guest_variant_name(&fs_type, kernel.as_deref(), &mount_opts),
            false => default_variant_name(&fs_type, &mount_opts),
        };
        check_name(&name).map_err(|why| {
            err(format!(
                "variant name `{name}` {why}; for such options use a suite file with an explicit `name`"
            ))
        })?;
        if out.iter().any(|v| v.name == name) {
            return Err(err(format!("`{name}` is listed twice: list each variant once")));
        }
        out.push(FsVariant {
            name,
            fs_type,
            mkfs_args: Vec::new(),
            mount_opts,
            image_size: None,
            kernel,
            nocow: false,
            entry,
        });
    }
    Ok(out)
}

/// Known types one edit away from `token` (`xfz` → `xfs`, `ext5` → `ext2`/`ext3`/`ext4`), so a
/// misspelt type is reported instead of silently becoming a mount option. No common mount
/// option is one edit away from a type name; tokens with `=` are options by construction.
fn typos_of_type(token: &str) -> Vec<&'static str> {
    if token.contains('=') || token.chars().count() < 3 {
        return Vec::new();
    }
    let lower = token.to_ascii_lowercase();
    if let Some(exact) = known_fs_types().find(|t| *t == lower) {
        return vec![exact];
    }
    known_fs_types()
        .filter(|t| strsim::damerau_levenshtein(&lower, t) == 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known_only(t: &str) -> bool {
        crate::fstype::FsType::is_known(t)
    }

    fn parse(s: &str) -> Result<Vec<FsVariant>, ConfigError> {
        parse_with(s, &known_only)
    }

    fn names_and_opts(v: &[FsVariant]) -> Vec<(String, String, Vec<String>)> {
        v.iter()
            .map(|v| (v.name.clone(), v.fs_type.clone(), v.mount_opts.clone()))
            .collect()
    }

    fn err_of(s: &str) -> String {
        parse(s).expect_err(s).to_string()
    }

    #[test]
    fn the_documented_example_gives_four_variants() {
        let v = parse("ext4,xfs,btrfs:compress=lzo,ext4:noatime,discard").unwrap();
        let o = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            names_and_opts(&v),
            vec![
                ("ext4".into(), "ext4".into(), o(&[])),
                ("xfs".into(), "xfs".into(), o(&[])),
                ("btrfs:compress=lzo".into(), "btrfs".into(), o(&["compress=lzo"])),
                ("ext4:noatime,discard".into(), "ext4".into(), o(&["noatime", "discard"])),
            ]
        );
        assert!(v.iter().all(|v| v.mkfs_args.is_empty() && v.image_size.is_none()));
    }

    #[test]
    fn whitespace_around_tokens_is_ignored() {
        let v = parse(" ext4 , btrfs:compress=zstd , ssd ").unwrap();
        assert_eq!(v[1].name, "btrfs:compress=zstd,ssd");
        assert_eq!(v[1].mount_opts, vec!["compress=zstd", "ssd"]);
    }

    #[test]
    fn a_known_type_after_options_starts_a_new_variant() {
        let v = parse("btrfs:ssd,discard,xfs,tmpfs").unwrap();
        let names: Vec<_> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["btrfs:ssd,discard", "xfs", "tmpfs"]);
    }

    #[test]
    fn a_colon_inside_an_option_value_does_not_start_a_variant() {
        let v = parse("ext4:noatime,context=system_u:object_r").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].mount_opts, vec!["noatime", "context=system_u:object_r"]);
    }

    #[test]
    fn an_unknown_type_with_a_colon_is_an_error_listing_the_known_ones_unless_mkfs_exists() {
        let e = err_of("myfs:opt");
        assert!(
            e.contains("filesystem type `myfs`") && e.contains("mkfs.myfs") && e.contains("ext2, ext3, ext4, xfs"),
            "{e}"
        );
        // With a `mkfs.myfs` on this machine it is the generic row's to make.
        let v = parse_with("myfs:opt", &|t| t == "myfs").unwrap();
        assert_eq!(
            (v[0].fs_type.as_str(), v[0].mount_opts.as_slice()),
            ("myfs", &["opt".to_string()][..])
        );
        // Under a guest kernel the type is the guest's question.
        assert!(parse("myfs@guest:opt").is_ok());
    }

    #[test]
    fn a_guest_variant_may_name_its_kernel_and_two_kernels_are_two_variants() {
        let v = parse("ext4@guest,ext4@guest:6.12,ext4@guest:6.12,noatime,jfs@guest:/srv/k/bzImage-7.0").unwrap();
        let got: Vec<(&str, Option<&str>, &[String])> = v
            .iter()
            .map(|v| (v.name.as_str(), v.kernel.as_deref(), v.mount_opts.as_slice()))
            .collect();
        let none: &[String] = &[];
        assert_eq!(
            got,
            [
                ("ext4@guest", Some(DEBIAN_KERNEL), none),
                ("ext4@guest:6.12", Some("6.12"), none),
                ("ext4@guest:6.12,noatime", Some("6.12"), &["noatime".to_string()][..]),
                ("jfs@guest:bzImage-7.0", Some("/srv/k/bzImage-7.0"), none),
            ]
        );
        // The same kernel twice is one variant listed twice.
        assert!(err_of("ext4@guest:6.12,ext4@guest:6.12").contains("listed twice"));
        // On the host a leading digit stays a mount option (the mount refuses it, not the parser).
        assert_eq!(parse("ext4:6.12").unwrap()[0].kernel, None);
    }

    #[test]
    fn a_leading_option_is_an_error_that_says_to_name_a_filesystem_first() {
        let e = err_of("noatime,ext4");
        assert!(
            e.starts_with("--fs `noatime,ext4`: `noatime` is neither a known filesystem type"),
            "{e}"
        );
        assert!(e.contains("write e.g. `ext4:noatime`"), "{e}");
    }

    #[test]
    fn duplicates_are_errors() {
        let e = err_of("ext4,xfs,ext4");
        assert!(e.contains("`ext4` is listed twice"), "{e}");
        let e = err_of("ext4:noatime,xfs,ext4:noatime");
        assert!(e.contains("`ext4:noatime` is listed twice"), "{e}");
    }

    #[test]
    fn malformed_lists_are_errors_with_a_fix() {
        assert!(err_of("").contains("the list is empty"));
        assert!(err_of("ext4,,xfs").contains("remove the extra comma"));
        assert!(err_of("ext4:").contains("nothing after the colon"));
        assert!(err_of("Ext4:noatime").contains("filesystem type `Ext4` is not a filesystem type"));
        assert!(err_of(":noatime").contains("filesystem type `` is empty"));
        assert!(err_of("btrfs:subvol=/x").contains("contains `/`"));
        assert!(err_of("../x:y").contains("is not a filesystem type"));
        assert!(
            err_of("-x:y").contains("is not a filesystem type"),
            "{}",
            err_of("-x:y")
        );
        assert!(
            err_of("x-:y").contains("is not a filesystem type"),
            "{}",
            err_of("x-:y")
        );
        assert_eq!(parse_fs_list("ntfs-3g").unwrap()[0].fs_type, "ntfs-3g");
    }

    #[test]
    fn a_misspelt_type_is_not_taken_for_a_mount_option() {
        let e = err_of("ext4,xfz");
        assert!(e.contains("did you mean `xfs`?"), "{e}");
        assert!(err_of("ext5").contains("did you mean one of `ext2`, `ext3`, `ext4`?"));
        assert!(err_of("XFS").contains("did you mean `xfs`?"));
        // Real options stay options.
        for opt in [
            "noatime",
            "discard",
            "ssd",
            "sync",
            "ro",
            "nodiscard",
            "lazytime",
            "acl",
            "dax",
            "user_xattr",
        ] {
            let v = parse(&format!("ext4,{opt}")).unwrap();
            assert_eq!(v[0].mount_opts, vec![opt.to_string()], "{opt}");
        }
    }

    #[test]
    fn mkfs_programs_in_the_search_path_count_as_types() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("mkfs.foofs");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = dir.path().join("mkfs.notexec");
        std::fs::write(&plain, "").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let dirs = vec![dir.path().to_path_buf()];
        let v = parse_with("ext4:noatime,foofs,notexec", &|t| is_fs_type(t, &dirs)).unwrap();
        let names: Vec<_> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["ext4:noatime", "foofs:notexec"]);
        assert!(!is_fs_type("../mkfs.foofs", &dirs));
    }

    #[test]
    fn the_public_parser_uses_the_real_path() {
        let v = parse_fs_list("ext4,tmpfs").unwrap();
        assert_eq!(v.len(), 2);
    }
}
