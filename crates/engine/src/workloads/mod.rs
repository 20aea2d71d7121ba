//! One file per workload family. Each defines its spec (serde, `deny_unknown_fields`, defaults
//! documented with units) and implements [`crate::Workload`].
//!
//! Option groups two specs share are declared once here, as macros that splice the group's
//! fields into each spec ([`fileio_job_spec`]: fileio and sysbench_fileio; [`copy_spec`]:
//! filecopy and treecopy). A `#[serde(flatten)]` struct would be one type, but a suite's error
//! would lose its place: with a flattened field, toml reports an unknown or mistyped key at the
//! table's first line, not the key's, and without serde's list of valid keys that
//! `config::diag` turns into "did you mean" (tried with serde 1.0.229, toml 0.8.23).
//! [`serde_default`] is every spec's `Default`: what an empty table gives.

/// Declares a spec struct whose fields start with one sysbench-style fileio job (the options
/// fileio and sysbench_fileio share, sysbench's names in brackets), then the fields given. The
/// order is part of the case id (a hash of the serialised workload).
macro_rules! fileio_job_spec {
    ($(#[$meta:meta])* pub struct $name:ident { $($rest:tt)* }) => {
        $(#[$meta])*
        pub struct $name {
            /// Test mode (`--file-test-mode`): seqwr, seqrewr, seqrd, rndrd, rndwr, rndrw.
            /// Default `rndrw`.
            #[serde(default)]
            pub mode: FileioMode,
            /// Number of files (`--file-num`). Default 128.
            #[serde(default = "default_files")]
            pub files: u32,
            /// Size of all files together, bytes (`--file-total-size`). Default 2 GiB.
            #[serde(default = "default_total_size")]
            pub total_size: Bytes,
            /// Bytes per request (`--file-block-size`). Default 16 KiB.
            #[serde(default = "default_block_size")]
            pub block_size: Bytes,
            /// Reads per write in `rndrw` (`--file-rw-ratio`). Default 1.5.
            #[serde(default = "default_rw_ratio")]
            pub rw_ratio: f64,
            /// Requests between fsync cycles (`--file-fsync-freq`); 0 = never. Default 100.
            #[serde(default = "default_fsync_freq")]
            pub fsync_freq: u32,
            /// fsync every file after the last request, timed (`--file-fsync-end`). Default
            /// true.
            #[serde(default = "crate::workloads::default_true")]
            pub fsync_end: bool,
            /// Worker threads (`--threads`). Default 1.
            #[serde(default = "default_threads")]
            pub threads: u32,
            /// Time limit of the phase (`--time`); `0` = none, then `requests` must be set.
            /// Default 10 s.
            #[serde(default = "default_time")]
            pub time: Dur,
            /// Limit on reads + writes (`--events`); 0 = none. Default 0.
            #[serde(default)]
            pub requests: u64,
            $($rest)*
        }
    };
}

/// Declares a copy workload's spec struct: the fields given first, then the copy options
/// filecopy and treecopy share, then the fields given second. The order is part of the case
/// id (a hash of the serialised workload).
macro_rules! copy_spec {
    ($(#[$meta:meta])* pub struct $name:ident { $($head:tt)* } { $($tail:tt)* }) => {
        $(#[$meta])*
        pub struct $name {
            $($head)*
            /// `native` (default: fsbench's own copier) or `cp` (coreutils `cp` and `rm`, as
            /// people run them).
            #[serde(default)]
            pub method: Method,
            /// `never` (default: the data is copied) or `auto` (cloned where the filesystem
            /// can).
            #[serde(default)]
            pub reflink: Reflink,
            /// Read/write buffer of the native copier, bytes. Default 128 KiB.
            #[serde(default = "crate::workloads::default_copy_buffer")]
            pub buffer: Bytes,
            /// End every phase with `syncfs(2)` inside the timed region. Default true.
            #[serde(default = "crate::workloads::default_true")]
            pub fsync: bool,
            $($tail)*
        }
    };
}

pub mod aging;
pub mod bigfile;
pub mod bonnie;
pub mod bonnie_pp;
pub mod crashprops;
pub mod dbench;
pub mod dd;
pub mod durability;
pub mod filecopy;
pub mod fileio;
pub mod fio;
pub mod image;
pub mod mongo;
pub mod oltp;
pub mod postmark;
pub mod powercut;
pub mod repair_scaling;
pub mod replay;
pub mod scan;
pub mod sysbench_fileio;
pub mod tool;
pub mod treecopy;

/// `n` scaled by `factor`, rounded down, saturating at `u32::MAX` (also for a non-finite
/// product), and at least `min`: the count a spec's `scaled` gives for a number of files,
/// directories or operations.
pub(crate) fn scaled_count(n: u32, factor: f64, min: u32) -> u32 {
    let v = (f64::from(n) * factor).floor();
    let v = if v.is_finite() && v < f64::from(u32::MAX) {
        v as u32
    } else {
        u32::MAX
    };
    v.max(min)
}

/// serde's default for the boolean options that are on unless turned off.
pub(crate) fn default_true() -> bool {
    true
}

/// The copy options' default `buffer`: 128 KiB.
pub(crate) fn default_copy_buffer() -> crate::units::Bytes {
    crate::units::Bytes(128 * crate::units::Bytes::KIB)
}

/// A spec with every field at its serde default: what an empty suite table gives, so a spec's
/// `Default` and its documented defaults are one thing.
pub(crate) fn serde_default<T: serde::de::DeserializeOwned>() -> T {
    let empty = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(std::iter::empty::<(&str, u8)>());
    T::deserialize(empty).expect("every field of a spec has a default")
}

/// Helpers the workloads' unit tests share.
#[cfg(any(test, feature = "test-support"))]
pub mod test_util {
    use crate::metric::PhaseResult;
    use crate::{EngineError, Workload};
    use std::sync::atomic::AtomicBool;

    /// The value of metric `name` in `p`; panics naming the phase and its metrics without it.
    pub fn metric(p: &PhaseResult, name: &str) -> f64 {
        p.metrics
            .iter()
            .find(|(m, _)| m.name == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{} has no {name}: {:?}", p.phase, p.metrics))
    }

    /// `w` run with the interrupt already raised stops with [`EngineError::Interrupted`] and
    /// leaves its directory empty.
    pub fn assert_interrupted_leaves_nothing(w: &dyn Workload) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(true);
        assert!(matches!(
            crate::run_quiet(w, tmp.path(), &flag),
            Err(EngineError::Interrupted)
        ));
        assert!(crate::dir_is_empty(tmp.path()));
    }
}

#[cfg(test)]
mod tests {
    use super::filecopy::FilecopySpec;
    use super::fileio::FileioSpec;
    use super::sysbench_fileio::SysbenchFileioSpec;
    use super::treecopy::TreecopySpec;

    /// The top-level keys of `spec`'s JSON form, in order.
    fn keys<T: serde::Serialize>(spec: &T) -> Vec<String> {
        let json = serde_json::to_string(spec).expect("serialises");
        let mut out = Vec::new();
        let (mut depth, mut in_str, mut esc, mut start) = (0, false, false, None);
        for (i, c) in json.char_indices() {
            match (in_str, c) {
                (true, '\\') if !esc => esc = true,
                (true, '"') if !esc => {
                    in_str = false;
                    if let (1, Some(s)) = (depth, start.take()) {
                        if json[i + 1..].starts_with(':') {
                            out.push(json[s..i].to_string());
                        }
                    }
                }
                (true, _) => esc = false,
                (false, '"') => {
                    in_str = true;
                    start = Some(i + 1);
                }
                (false, '{' | '[') => depth += 1,
                (false, '}' | ']') => depth -= 1,
                _ => {}
            }
        }
        out
    }

    /// The shared option groups keep each spec's serialised field order, which the case id
    /// hashes: fileio, filecopy and treecopy read as before the groups were shared (their ids
    /// did not change); sysbench_fileio's job fields now come in fileio's order.
    #[test]
    fn shared_option_groups_keep_the_serialised_order_case_ids_hash() {
        let job = "mode files total_size block_size rw_ratio fsync_freq fsync_end threads time requests";
        assert_eq!(keys(&FileioSpec::default()).join(" "), format!("{job} io data seed"));
        assert_eq!(keys(&SysbenchFileioSpec::default()).join(" "), format!("{job} seed"));
        assert_eq!(
            keys(&FilecopySpec::default()).join(" "),
            "size content seed method reflink buffer fsync"
        );
        assert_eq!(
            keys(&TreecopySpec::default()).join(" "),
            "dataset dataset_scale seed content method reflink buffer fsync verify calls"
        );
    }

    /// A spec's `Default` is what an empty suite table gives, field for field.
    #[test]
    fn defaults_are_what_an_empty_table_gives() {
        assert_eq!(FileioSpec::default(), toml::from_str::<FileioSpec>("").unwrap());
        assert_eq!(FileioSpec::default().files, 128);
        assert_eq!(SysbenchFileioSpec::default(), toml::from_str("").unwrap());
        assert_eq!(SysbenchFileioSpec::default().rw_ratio, 1.5);
        assert_eq!(FilecopySpec::default().buffer.get(), 128 * 1024);
        assert!(TreecopySpec::default().fsync && !TreecopySpec::default().verify);
    }
}
