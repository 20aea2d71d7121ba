//! The raw layer: serde structs that mirror the suite file as written, with
//! `deny_unknown_fields` and [`toml::Spanned`] wherever a later check needs a position.
//!
//! `[[workload]]` entries are kept as a map of spanned keys to plain [`toml::Value`]s rather than
//! deserialized into [`WorkloadKind`] here: an internally tagged enum buffers its input and loses
//! every span, so [`decode_workload`] reads `kind` and `name` itself, deserializes the rest from
//! the value, and maps any error back to the key it is about.

use super::diag::{self, Problem, Source};
use super::{ConfigError, Order};
use crate::engine::WorkloadKind;
use crate::units::Bytes;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    /// `[suite]`.
    pub suite: Option<RawMeta>,
    /// `[run]`.
    pub run: Option<RawRun>,
    /// `[[fs]]`.
    #[serde(default)]
    pub fs: Vec<Spanned<RawFs>>,
    /// `[[workload]]`.
    #[serde(default)]
    pub workload: Vec<Spanned<RawWorkload>>,
    /// `[[real_workload]]`: the external tool replacing a workload with `--tools real`.
    #[serde(default)]
    pub real_workload: Vec<Spanned<RawWorkload>>,
    /// `[target]`.
    pub target: Option<RawTarget>,
}

/// `[target]`: a real device, confirmed in the file as on the command line (`device` and
/// `wipe` the same text).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub device: Option<Spanned<String>>,
    pub wipe: Option<Spanned<String>>,
}

/// `[suite]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMeta {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
}

/// `[run]`: every key optional, absent keys take [`super::Policy::default`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    pub repeats: Option<Spanned<u32>>,
    pub warmup: Option<Spanned<u32>>,
    pub order: Option<Order>,
    pub drop_caches: Option<bool>,
    pub trim: Option<Spanned<u32>>,
    pub confidence: Option<Spanned<f64>>,
    /// `"native"` or `"real"` (see `config::real`).
    pub tools: Option<Spanned<String>>,
    pub memory: Option<Spanned<Bytes>>,
    pub precision: Option<Spanned<f64>>,
    pub budget: Option<Spanned<crate::units::Dur>>,
    /// The equivalence margin of "the same", percent (`--equivalence`).
    pub equivalence: Option<Spanned<f64>>,
    /// `true`: `fsbench run` exits 1 when any repeat failed (`--strict`).
    pub strict: Option<bool>,
    /// `"direct"` or `"buffered"`: how the loop devices do I/O on their images (`--loop-io`).
    pub loop_io: Option<Spanned<String>>,
}

/// One `[[fs]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFs {
    #[serde(rename = "type")]
    pub fs_type: Spanned<String>,
    pub name: Option<Spanned<String>>,
    #[serde(default)]
    pub mkfs_args: Vec<String>,
    pub mount_opts: Option<Spanned<MountOpts>>,
    pub image_size: Option<Spanned<Bytes>>,
    /// `"guest"` or a bzImage path: the variant runs in a QEMU guest (crate::guest).
    pub kernel: Option<String>,
    /// `true`: the workload's directory gets `FS_NOCOW_FL` before the workload (btrfs only).
    pub nocow: Option<Spanned<bool>>,
}

/// Mount options written as a list (`["noatime", "discard"]`) or as mount(8) writes them
/// (`"noatime,discard"`).
#[derive(Debug, Default)]
pub(super) struct MountOpts(pub Vec<String>);

impl<'de> Deserialize<'de> for MountOpts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MountOpts;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string such as \"noatime,discard\" or a list such as [\"noatime\", \"discard\"]")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MountOpts, E> {
                if v.trim().is_empty() {
                    return Ok(MountOpts(Vec::new()));
                }
                Ok(MountOpts(v.split(',').map(|o| o.trim().to_string()).collect()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MountOpts, A::Error> {
                let mut out = Vec::new();
                while let Some(o) = seq.next_element::<String>()? {
                    out.push(o.trim().to_string());
                }
                Ok(MountOpts(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of a `[[workload]]` that belong to the suite, not to the workload kind's spec.
const SUITE_KEYS: &[&str] = &["name", "fs", "memory"];

/// One `[[workload]]`, keys with their positions.
pub(super) type RawWorkload = BTreeMap<Spanned<String>, toml::Value>;

/// A decoded `[[workload]]` with the positions later checks point at.
pub(super) struct DecodedWorkload {
    pub name: String,
    pub kind: WorkloadKind,
    /// The columns it is limited to (`fs = [...]`; empty: every column).
    pub fs: Vec<String>,
    /// Where `fs` is written (the table's position when it is not).
    pub fs_at: usize,
    /// `memory = "…"`: the workload's own memory cgroup limit (bytes, not yet checked) and
    /// where it is written.
    pub memory: Option<(u64, usize)>,
    /// Where the name is written, or the table when it defaulted to the kind.
    pub name_at: usize,
    /// The table's position.
    pub table_at: usize,
}

fn table_of<'a>(keys: impl Iterator<Item = (&'a Spanned<String>, &'a toml::Value)>) -> toml::Value {
    toml::Value::Table(keys.map(|(k, v)| (k.get_ref().clone(), v.clone())).collect())
}

fn key_at<'a>(entry: &'a RawWorkload, key: &str) -> Option<(usize, &'a toml::Value)> {
    entry
        .iter()
        .find(|(k, _)| k.get_ref() == key)
        .map(|(k, v)| (k.span().start, v))
}

/// Reads `kind` and `name`, then deserializes the kind's spec from the remaining keys; every
/// error points at the key it is about (or at the table for a missing key).
pub(super) fn decode_workload(src: &Source, entry: &Spanned<RawWorkload>) -> Result<DecodedWorkload, ConfigError> {
    let table_at = entry.span().start;
    let map = entry.get_ref();
    let kinds = diag::quoted_list(WorkloadKind::KINDS);

    let Some((kind_at, kind_value)) = key_at(map, "kind") else {
        let example = WorkloadKind::KINDS.first().copied().unwrap_or("bonnie");
        return Err(src.at(
            table_at,
            format!("this [[workload]] has no `kind`: add `kind = \"{example}\"` (kinds: {kinds})"),
        ));
    };
    let Some(kind) = kind_value.as_str() else {
        return Err(src.at(kind_at, format!("`kind` must be a quoted string, one of {kinds}")));
    };
    if !WorkloadKind::KINDS.contains(&kind) {
        let msg = match diag::suggest(kind, WorkloadKind::KINDS) {
            Some(s) => {
                format!("unknown workload kind `{kind}`: did you mean `{s}`? (kinds: {kinds})")
            }
            None => format!("unknown workload kind `{kind}`: use one of {kinds}"),
        };
        return Err(src.at(kind_at, msg));
    }

    let (name, name_at) = match key_at(map, "name") {
        None => (kind.to_string(), table_at),
        Some((at, v)) => match v.as_str() {
            Some(s) => (s.to_string(), at),
            None => return Err(src.at(at, "`name` must be a quoted string such as \"bonnie-small\"")),
        },
    };
    let section = format!("workload `{name}`");
    let (fs, fs_at) = match key_at(map, "fs") {
        None => (Vec::new(), table_at),
        Some((at, v)) => match v.as_array().map(|a| a.iter().map(|n| n.as_str()).collect::<Option<Vec<_>>>()) {
            Some(Some(names)) if !names.is_empty() => (names.into_iter().map(str::to_string).collect(), at),
            _ => {
                return Err(src.at(
                    at,
                    format!("`fs` in {section} must be a list of [[fs]] names, such as [\"xfs\", \"btrfs\"] (leave it out to run on every column)"),
                ))
            }
        },
    };

    let memory = match key_at(map, "memory") {
        None => None,
        Some((at, v)) => match v.as_str().map(str::parse::<Bytes>) {
            Some(Ok(b)) => Some((b.get(), at)),
            _ => {
                return Err(src.at(
                    at,
                    format!(
                    "`memory` in {section} must be a quoted size such as \"1GiB\" (leave it out to use [run] memory)"
                ),
                ))
            }
        },
    };

    let suite_keys = |k: &Spanned<String>| !SUITE_KEYS.contains(&k.get_ref().as_str());
    let whole = table_of(map.iter().filter(|(k, _)| suite_keys(k)));
    let err = match whole.try_into::<WorkloadKind>() {
        Ok(kind) => {
            return Ok(DecodedWorkload {
                name,
                kind,
                fs,
                fs_at,
                memory,
                name_at,
                table_at,
            })
        }
        Err(e) => e,
    };

    let problem = diag::parse(err.message());
    let at = match &problem {
        Problem::UnknownKey { key, .. } => key_at(map, key).map_or(table_at, |(at, _)| at),
        Problem::MissingKey { .. } => table_at,
        // serde does not say which key a type error is about: find the key whose value alone
        // (with `kind`, so the enum can dispatch) fails the same way.
        _ => map
            .iter()
            .filter(|(k, _)| k.get_ref() != "kind" && suite_keys(k))
            .find(|(k, v)| {
                let one = map.iter().filter(|(kk, _)| kk.get_ref() == "kind").chain([(*k, *v)]);
                let alone = table_of(one).try_into::<WorkloadKind>();
                alone.is_err_and(|e| !matches!(diag::parse(e.message()), Problem::MissingKey { .. }))
            })
            .map_or(table_at, |(k, _)| k.span().start),
    };
    let key_prefix = match &problem {
        Problem::WrongType { .. } | Problem::UnknownValue { .. } | Problem::Other(_) => map
            .keys()
            .find(|k| k.span().start == at && at != table_at)
            .map(|k| format!("`{}` in {section}: ", k.get_ref()))
            .unwrap_or_else(|| format!("{section}: ")),
        _ => String::new(),
    };
    Err(src.at(
        at,
        format!(
            "{key_prefix}{}",
            diag::describe(&problem, &section, &["kind", "name", "fs"])
        ),
    ))
}
