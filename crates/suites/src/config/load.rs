//! Loading suite files and presets into a validated [`Suite`].
//!
//! # The suite file
//!
//! ```toml
//! [suite]
//! name = "ssd-options"                  # required; also names report files
//! description = "ext4 and btrfs, with and without discard"   # optional
//!
//! [run]                  # every key optional; defaults in brackets
//! repeats = 5            # measured repeats per (filesystem, workload) [3], 1..=1000
//! warmup = 1             # extra repeats run first and excluded from statistics [0], ≤ 100
//! order = "interleaved"  # "interleaved" (ABCABC), "sequential" (AAABBB) or "alternating" (ABCCBA) ["interleaved"]
//! drop_caches = true     # sync and drop caches before every timed phase [true]
//! trim = 1               # best and worst repeats dropped, per end, by the trimmed mean [1]
//! confidence = 0.95      # confidence level of intervals, between 0 and 1 [0.95]
//! strict = true          # `run` exits 1 when any repeat failed, not only when no case produced results [false]
//! loop_io = "buffered"   # loop devices on the images: "direct" (no host page cache) or "buffered" (on purpose) ["direct"]
//! equivalence = 5        # margin of "the same as the best", percent, above 0 and below 100 [3]
//!
//! [[fs]]                 # one table per filesystem variant, in column order
//! type = "ext4"          # required: what mkfs.TYPE and mount -t get
//! name = "ext4-nojournal"   # optional; default "type", or "type:opt1,opt2" with mount options
//! mkfs_args = ["-O", "^has_journal"]   # optional, after fsbench's own mkfs arguments
//! image_size = "1GiB"    # optional loop image size; default computed from the workloads
//! kernel = "guest"       # optional: run in a QEMU guest with Debian's kernel, or a bzImage path
//!
//! [[fs]]
//! type = "btrfs"
//! mount_opts = "discard,noatime"       # or a list: ["discard", "noatime"]
//!
//! [[workload]]           # one table per workload, in run order
//! kind = "bonnie"        # required: one of `WorkloadKind::KINDS`
//! name = "bonnie"        # optional; default = kind
//! fs = ["ext4-nojournal"]   # optional: only these [[fs]] names (elsewhere: unavailable, with why) [all]
//! memory = "1GiB"       # optional: this workload's memory cgroup, in place of [run] memory [the run's]
//! file_size = "256MiB"   # the remaining keys belong to the kind (see its spec struct)
//! ```
//!
//! Sizes take binary suffixes (`4k`, `256MiB`, `1.5G`), durations `ms`/`s`/`m`/`h`
//! ([`crate::units`]).
//!
//! # What loading guarantees
//!
//! A [`Suite`] that comes out of here has at least one variant and one workload; variant and
//! workload names are unique and safe as a file-name component (`[A-Za-z0-9._:,=+-]`, 1 to 64
//! characters, not `.` or `..`); filesystem types are `[a-z0-9]+`; `repeats` is 1..=1000,
//! `warmup` ≤ 100, `confidence` in (0, 1), `2 × trim < repeats`; every workload passed its own
//! [`crate::engine::Workload::validate`], and sizes are already multiplied by `--scale`.
//! A `trim` the file does not set defaults to 1 and, like any trim after `--repeat`, is
//! lowered to what the repeats allow (`(repeats − 1) / 2`); a `trim` the file sets that leaves
//! no sample is an error.
//!
//! # Errors
//!
//! Every error is one sentence that says what to change. Problems in the text start with
//! `file:line:col` (what editors and terminals jump to); unknown keys, workload kinds and enum
//! values come with "did you mean" when a valid one is close. Keys are matched exactly
//! (`deny_unknown_fields` on every raw struct, including each workload kind's spec), so a typo
//! is never silently ignored. Command-line overrides that do not fit the suite are errors too,
//! naming the flag. Loading never panics, whatever the input (fuzz-tested below).
//!
//! References: TOML 1.0 (<https://toml.io/en/v1.0.0>); the suite-file sketch in
//! `research/aesthetics-anchors.md` §10; doc/architecture.md, the `config` row.

use super::diag::{self, Problem, Source};
use super::presets::PRESETS;
use super::raw::{self, RawFile, RawFs, RawRun};
use super::{FsVariant, Overrides, Policy, Suite, WorkloadSpec};
use crate::engine::WorkloadKind;
use crate::policy::LoopIo;
use crate::units::Bytes;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Longest accepted variant, workload or suite name.
pub const MAX_NAME_LEN: usize = 64;
/// Most measured repeats a suite or `--repeat` may ask for.
pub const MAX_REPEATS: u32 = 1000;
/// Most warm-up repeats a suite or `--warmup` may ask for.
pub const MAX_WARMUP: u32 = 100;
/// Largest `--scale` factor.
pub const MAX_SCALE: f64 = 1000.0;
/// Smallest explicit `image_size`, also the floor when `--scale` shrinks one.
const MIN_IMAGE: u64 = Bytes::MIB;

/// A suite that cannot be used: where, what, and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Anything else wrong, without a position: command-line overrides (`--fs`, `--only`,
    /// `--repeat`, `--warmup`, `--scale`); the message starts with the flag.
    #[error("{0}")]
    Invalid(String),
    /// A problem at a known place in a suite file.
    #[error("{origin}:{line}:{col}: {message}")]
    At {
        /// The file's path, or `presets/NAME.toml` for a built-in preset.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        col: usize,
        /// One sentence: what is wrong and what to do.
        message: String,
    },
    /// A problem with a suite file as a whole, such as a missing table.
    #[error("{origin}: {message}")]
    InFile {
        /// The file's path, or `presets/NAME.toml`.
        origin: String,
        /// One sentence: what is wrong and what to do.
        message: String,
    },
    /// The suite file could not be read.
    #[error("cannot read suite file `{}`: {error}; check the path, or run a built-in preset (`fsbench list presets`)", path.display())]
    Read {
        /// The path as given.
        path: PathBuf,
        /// Why reading failed.
        error: std::io::Error,
    },
    /// No built-in preset has this name.
    #[error("unknown preset `{name}`: {advice}")]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// "did you mean" and the list of presets.
        advice: String,
    },
}

/// Loads a suite file and applies the overrides.
pub fn load_file(path: &Path, o: &Overrides) -> Result<Suite, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    load_str(&text, &path.display().to_string(), o)
}

/// Loads a built-in preset by name and applies the overrides. Errors inside a preset name it
/// as `presets/NAME.toml`, the file it was built from.
pub fn load_preset(name: &str, o: &Overrides) -> Result<Suite, ConfigError> {
    let text = preset_text(name).ok_or_else(|| {
        let names = preset_names();
        let list = diag::quoted_list(&names);
        let advice = match diag::suggest(name, &names) {
            Some(s) => format!("did you mean `{s}`? (presets: {list})"),
            None => format!("use one of {list}, or give a suite file"),
        };
        ConfigError::UnknownPreset {
            name: name.to_string(),
            advice,
        }
    })?;
    load_str(text, &format!("presets/{name}.toml"), o)
}

/// Loads suite text; `origin` names it in errors (a path or `presets/quick.toml`).
pub fn load_str(text: &str, origin: &str, o: &Overrides) -> Result<Suite, ConfigError> {
    let src = Source { origin, text };
    let suite = apply_overrides(build(&src, o.tools)?, o)?;
    if suite.variants.is_empty() && !o.dir_target {
        return Err(src.whole(
            "the suite has no [[fs]] table: add at least one, e.g. `[[fs]]` followed by `type = \"ext4\"`, \
             or name the filesystems with `--fs ext4,xfs`, or measure an existing directory with `--dir DIR`",
        ));
    }
    Ok(suite)
}

/// Names of the built-in presets.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of a built-in preset.
pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Why `name` cannot be a variant, workload or suite name, if it cannot: it must be usable as
/// one component of a file name on any filesystem fsbench writes reports to.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty: use letters, digits and `._:,=+-`".into());
    }
    if name == "." || name == ".." {
        return Err(format!("cannot be `{name}`: use letters, digits and `._:,=+-`"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._:,=+-@".contains(*c)))
    {
        return Err(format!(
            "contains `{}`, which is not allowed in names: use only letters, digits and `._:,=+-`",
            bad.escape_default()
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "is {} characters long: shorten it to at most {MAX_NAME_LEN}",
            name.len()
        ));
    }
    Ok(())
}

/// Why `t` cannot be a filesystem type, if it cannot.
pub(crate) fn check_fs_type(t: &str) -> Result<(), String> {
    if t.is_empty() {
        return Err("is empty: write a type such as `ext4`".into());
    }
    // `-` inside a name (`ntfs-3g`, as mount(8) spells the FUSE type), never first or last.
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if !t.chars().all(ok) || t.starts_with('-') || t.ends_with('-') || t.len() > 32 {
        return Err("is not a filesystem type: use the lower-case name that follows `mkfs.` or `mount -t`, such as `ext4` or `btrfs`".into());
    }
    Ok(())
}

/// The default display name of a variant: `type`, or `type:opt1,opt2`.
pub(crate) fn default_variant_name(fs_type: &str, mount_opts: &[String]) -> String {
    if mount_opts.is_empty() {
        fs_type.to_string()
    } else {
        format!("{fs_type}:{}", mount_opts.join(","))
    }
}

/// A toml/serde error as a positioned sentence.
fn toml_error(src: &Source, e: &toml::de::Error) -> ConfigError {
    let problem = diag::parse(e.message());
    let section = match &problem {
        Problem::UnknownKey { expected, .. } => diag::section_of(expected),
        Problem::MissingKey { key } if key == "type" => "[[fs]]",
        Problem::MissingKey { key } if key == "name" => "[suite]",
        _ => "",
    };
    let message = diag::describe(&problem, section, &[]);
    match e.span() {
        Some(span) => src.at(span.start, message),
        None => src.whole(message),
    }
}

/// The suite's `[[workload]]` tables, each decoded and checked (name, spec, columns) in order.
fn build_workloads(
    src: &Source,
    entries: &[Spanned<raw::RawWorkload>],
    variants: &[FsVariant],
) -> Result<Vec<WorkloadSpec>, ConfigError> {
    let mut workloads = Vec::with_capacity(entries.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    for entry in entries {
        let w = raw::decode_workload(src, entry)?;
        check_name(&w.name).map_err(|why| {
            let fix = if w.name_at == w.table_at {
                " (set `name = \"…\"` for this [[workload]])"
            } else {
                ""
            };
            src.at(w.name_at, format!("workload name `{}` {why}{fix}", w.name))
        })?;
        w.kind
            .workload()
            .validate()
            .map_err(|why| src.at(w.table_at, format!("workload `{}`: {why}", w.name)))?;
        if let Some(&first) = seen.get(&w.name) {
            return Err(src.at(
                w.name_at,
                format!(
                    "workload name `{}` is used twice (first at line {}): give each [[workload]] a distinct `name = \"…\"`",
                    w.name,
                    src.line(first)
                ),
            ));
        }
        seen.insert(w.name.clone(), w.name_at);
        check_columns(src, &w, variants)?;
        let memory = w
            .memory
            .map(|(b, at)| {
                check_memory(b).map(crate::units::Bytes).map_err(|why| {
                    src.at(
                        at,
                        format!("memory = \"{}\" in workload `{}` {why}", crate::units::Bytes(b), w.name),
                    )
                })
            })
            .transpose()?;
        workloads.push(WorkloadSpec {
            name: w.name,
            kind: w.kind,
            fs: w.fs,
            memory,
        });
    }
    Ok(workloads)
}

/// A workload's `fs = [...]` names only `[[fs]]` tables of the suite (checked when the suite
/// has any: `--fs` may supply the columns instead); the error points at the key.
fn check_columns(src: &Source, w: &raw::DecodedWorkload, variants: &[FsVariant]) -> Result<(), ConfigError> {
    for column in &w.fs {
        if !variants.is_empty() && !variants.iter().any(|v| &v.name == column) {
            let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
            let hint = match diag::suggest(column, &names) {
                Some(s) => format!(": did you mean `{s}`?"),
                None => String::new(),
            };
            return Err(src.at(
                w.fs_at,
                format!(
                    "`fs` in workload `{}` names `{column}`, which no [[fs]] of the suite is called{hint} (columns: {})",
                    w.name,
                    diag::quoted_list(&names)
                ),
            ));
        }
    }
    Ok(())
}

/// Text → raw structs → checked [`Suite`] (before overrides; `trim` not yet fitted to repeats).
fn build(src: &Source, tools: Option<super::Tools>) -> Result<Suite, ConfigError> {
    let raw: RawFile = toml::from_str(src.text).map_err(|e| toml_error(src, &e))?;

    let Some(meta) = raw.suite else {
        return Err(src.whole("the file has no [suite] table: add `[suite]` with `name = \"my-suite\"` at the top"));
    };
    check_name(meta.name.get_ref()).map_err(|why| {
        src.at(
            meta.name.span().start,
            format!("suite name `{}` {why}", meta.name.get_ref()),
        )
    })?;

    let suite_tools = match raw.run.as_ref().and_then(|r| r.tools.as_ref()) {
        Some(t) => Some(super::Tools::parse(src, t)?),
        None => None,
    };
    let strict = raw.run.as_ref().and_then(|r| r.strict).unwrap_or(false);
    let equivalence = match raw.run.as_ref().and_then(|r| r.equivalence.as_ref()) {
        Some(e) => Some(
            check_equivalence(*e.get_ref())
                .map_err(|why| src.at(e.span().start, format!("equivalence = {} {why}", e.get_ref())))?,
        ),
        None => None,
    };
    let loop_io = match raw.run.as_ref().and_then(|r| r.loop_io.as_ref()) {
        Some(l) => LoopIo::parse(l.get_ref()).ok_or_else(|| {
            src.at(
                l.span().start,
                format!(
                    "loop_io = \"{}\": use \"direct\" (direct I/O on the images, the default) or \"buffered\" (the host's page cache on purpose)",
                    l.get_ref()
                ),
            )
        })?,
        None => LoopIo::default(),
    };
    let policy = build_policy(src, raw.run)?;

    // No [[fs]] is fine while `--fs` or `--dir` supplies the variants: `load_str` decides.
    let mut variants = Vec::with_capacity(raw.fs.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    for fs in &raw.fs {
        let (variant, name_at) = build_variant(src, fs)?;
        if let Some(&first) = seen.get(&variant.name) {
            return Err(src.at(
                name_at,
                format!(
                    "filesystem name `{}` is used twice (first at line {}): give each [[fs]] a distinct `name = \"…\"`",
                    variant.name,
                    src.line(first)
                ),
            ));
        }
        seen.insert(variant.name.clone(), name_at);
        variants.push(variant);
    }

    if raw.workload.is_empty() {
        let example = WorkloadKind::KINDS.first().copied().unwrap_or("bonnie");
        return Err(src.whole(format!(
            "the suite has no [[workload]] table: add at least one, e.g. `[[workload]]` followed by `kind = \"{example}\"`"
        )));
    }
    let mut workloads = build_workloads(src, &raw.workload, &variants)?;

    super::real::apply(
        src,
        &mut workloads,
        &raw.real_workload,
        tools.or(suite_tools).unwrap_or_default(),
    )?;

    let device = build_target(src, raw.target)?;
    Ok(Suite {
        name: meta.name.into_inner(),
        description: meta.description,
        policy,
        variants,
        workloads,
        scale: 1.0,
        device,
        strict,
        equivalence,
        loop_io,
        source_text: src.text.to_string(),
    })
}

/// `[target]`: a device is accepted only with a `wipe` that repeats it exactly, as on the
/// command line; the safety checks of the device itself run later, before anything is written.
fn build_target(src: &Source, target: Option<raw::RawTarget>) -> Result<Option<PathBuf>, ConfigError> {
    let Some(t) = target else { return Ok(None) };
    match (t.device, t.wipe) {
        (None, None) => Ok(None),
        (None, Some(w)) => Err(src.at(
            w.span().start,
            format!(
                "`wipe = \"{w}\"` confirms a device, but [target] names none: add `device = \"{w}\"`",
                w = w.get_ref()
            ),
        )),
        (Some(d), None) => Err(src.at(
            d.span().start,
            format!(
                "`device = \"{d}\"` destroys everything on {d}: confirm with `wipe = \"{d}\"` (the same path, repeated exactly)",
                d = d.get_ref()
            ),
        )),
        (Some(d), Some(w)) if d.get_ref() != w.get_ref() => Err(src.at(
            w.span().start,
            format!(
                "`wipe = \"{}\"` does not repeat `device = \"{}\"` exactly: write the same path twice to confirm that everything on it will be destroyed",
                w.get_ref(),
                d.get_ref()
            ),
        )),
        (Some(d), Some(_)) => Ok(Some(PathBuf::from(d.into_inner()))),
    }
}

fn build_policy(src: &Source, run: Option<RawRun>) -> Result<Policy, ConfigError> {
    let mut p = Policy::default();
    let Some(run) = run else { return Ok(p) };
    if let Some(r) = &run.repeats {
        p.repeats = *r.get_ref();
        check_repeats(p.repeats).map_err(|why| src.at(r.span().start, format!("repeats = {} {why}", p.repeats)))?;
    }
    if let Some(w) = &run.warmup {
        p.warmup = *w.get_ref();
        check_warmup(p.warmup).map_err(|why| src.at(w.span().start, format!("warmup = {} {why}", p.warmup)))?;
    }
    if let Some(o) = run.order {
        p.order = o;
    }
    if let Some(d) = run.drop_caches {
        p.drop_caches = d;
    }
    if let Some(c) = &run.confidence {
        p.confidence = *c.get_ref();
        if !(p.confidence > 0.0 && p.confidence < 1.0) {
            return Err(src.at(
                c.span().start,
                format!(
                    "confidence = {} is out of range: use a level between 0 and 1, such as 0.95",
                    p.confidence
                ),
            ));
        }
    }
    if let Some(m) = &run.memory {
        p.memory = Some(
            check_memory(m.get_ref().get())
                .map_err(|why| src.at(m.span().start, format!("memory = \"{}\" {why}", m.get_ref())))?,
        );
    }
    if let Some(x) = &run.precision {
        p.precision = Some(
            check_precision(*x.get_ref())
                .map_err(|why| src.at(x.span().start, format!("precision = {} {why}", x.get_ref())))?,
        );
    }
    if let Some(b) = &run.budget {
        p.budget_s = Some(
            check_budget(b.get_ref().0.as_secs_f64())
                .map_err(|why| src.at(b.span().start, format!("budget = \"{}\" {why}", b.get_ref())))?,
        );
    }
    // An explicit trim must leave samples; a defaulted one is fitted to the repeats later.
    if let Some(t) = &run.trim {
        p.trim = *t.get_ref();
        if u64::from(p.trim) * 2 >= u64::from(p.repeats) {
            return Err(src.at(
                t.span().start,
                format!(
                    "trim = {} drops the {0} best and {0} worst of {} repeats, leaving none: lower trim to {} or raise repeats to {}",
                    p.trim,
                    p.repeats,
                    (p.repeats - 1) / 2,
                    u64::from(p.trim) * 2 + 1
                ),
            ));
        }
    }
    Ok(p)
}

fn check_repeats(r: u32) -> Result<(), String> {
    if (1..=MAX_REPEATS).contains(&r) {
        Ok(())
    } else {
        Err(format!("is out of range: use 1 to {MAX_REPEATS}"))
    }
}

/// A memory limit: at least 1 MiB (below [`crate::cgroup::MIN_LIMIT`] the run raises it and
/// warns), at most 16 TiB.
fn check_memory(b: u64) -> Result<u64, String> {
    if (1 << 20..=1 << 44).contains(&b) {
        Ok(b)
    } else {
        Err("is out of range: use a size from 1MiB to 16TiB, e.g. \"786MiB\" or \"1GiB\"".into())
    }
}

/// A precision target in percent of the mean: above 0, at most 100.
fn check_precision(p: f64) -> Result<f64, String> {
    if p.is_finite() && p > 0.0 && p <= 100.0 {
        Ok(p)
    } else {
        Err("is out of range: use a percentage above 0 and at most 100, e.g. 5".into())
    }
}

/// An equivalence margin in percent: above 0 and below 100 (a ratio's lower side must stay
/// above 0).
fn check_equivalence(m: f64) -> Result<f64, String> {
    if m.is_finite() && m > 0.0 && m < 100.0 {
        Ok(m)
    } else {
        Err("is out of range: use a percentage above 0 and below 100, e.g. 3".into())
    }
}

/// A budget in seconds: at least one second.
fn check_budget(s: f64) -> Result<f64, String> {
    if s.is_finite() && s >= 1.0 {
        Ok(s)
    } else {
        Err("is out of range: use a duration of at least 1s, e.g. \"10m\"".into())
    }
}

fn check_warmup(w: u32) -> Result<(), String> {
    if w <= MAX_WARMUP {
        Ok(())
    } else {
        Err(format!("is out of range: use 0 to {MAX_WARMUP}"))
    }
}

/// One `[[fs]]` → variant, and where its name is (or the table, if defaulted).
fn build_variant(src: &Source, fs: &Spanned<RawFs>) -> Result<(FsVariant, usize), ConfigError> {
    let table_at = fs.span().start;
    let fs = fs.get_ref();
    let fs_type = fs.fs_type.get_ref();
    check_fs_type(fs_type)
        .map_err(|why| src.at(fs.fs_type.span().start, format!("filesystem type `{fs_type}` {why}")))?;
    // Resolved once, here: the table row (or the generic one of a `mkfs.TYPE` on this machine).
    let entry = match fs.kernel {
        Some(_) => crate::fstype::FsTypeId::of(fs_type),
        None => super::variant::resolve_fs_type(fs_type)
            .map_err(|why| src.at(fs.fs_type.span().start, format!("filesystem type `{fs_type}` {why}")))?,
    };

    let mount_opts = match &fs.mount_opts {
        None => Vec::new(),
        Some(m) => {
            if m.get_ref().0.iter().any(|o| o.is_empty()) {
                return Err(src.at(
                    m.span().start,
                    "empty mount option: remove the extra comma or empty string",
                ));
            }
            entry
                .get()
                .check_mount_options(&m.get_ref().0)
                .map_err(|why| src.at(m.span().start, why.to_string()))?;
            m.get_ref().0.clone()
        }
    };

    let image_size = match &fs.image_size {
        None => None,
        Some(s) if s.get_ref().get() < MIN_IMAGE => {
            return Err(src.at(
                s.span().start,
                format!("image_size = {} is too small: use at least 1MiB, or remove it to size the image from the workloads", s.get_ref()),
            ));
        }
        Some(s) => Some(*s.get_ref()),
    };

    let nocow = check_nocow(src, fs)?;
    let (name, name_at, explicit) = match &fs.name {
        Some(n) => (n.get_ref().clone(), n.span().start, true),
        None if fs.kernel.is_some() => (
            super::guest_variant_name(fs_type, fs.kernel.as_deref(), &mount_opts),
            table_at,
            false,
        ),
        // `btrfs+nocow`: a NoCOW variant never shares the plain variant's default name.
        None if nocow => (
            format!("{}+nocow", default_variant_name(fs_type, &mount_opts)),
            table_at,
            false,
        ),
        None => (default_variant_name(fs_type, &mount_opts), table_at, false),
    };
    check_name(&name).map_err(|why| {
        let fix = if explicit {
            ""
        } else {
            " (set `name = \"…\"` for this [[fs]])"
        };
        src.at(name_at, format!("filesystem name `{name}` {why}{fix}"))
    })?;

    Ok((
        FsVariant {
            name,
            fs_type: fs_type.clone(),
            mkfs_args: fs.mkfs_args.clone(),
            mount_opts,
            image_size,
            kernel: fs.kernel.clone(),
            nocow,
            entry,
        },
        name_at,
    ))
}

/// `nocow = true` of an `[[fs]]`: only btrfs has `FS_NOCOW_FL` to set, and only on the host's
/// kernel (a guest's workload directory is the agent's); anything else is an error at the key.
fn check_nocow(src: &Source, fs: &RawFs) -> Result<bool, ConfigError> {
    let Some(n) = &fs.nocow else { return Ok(false) };
    if !*n.get_ref() {
        return Ok(false);
    }
    let fs_type = fs.fs_type.get_ref();
    if fs_type != "btrfs" {
        return Err(src.at(
            n.span().start,
            format!("nocow = true needs type = \"btrfs\": NoCOW (FS_NOCOW_FL, `chattr +C`) is a btrfs file attribute and `{fs_type}` has none; remove `nocow` from this [[fs]]"),
        ));
    }
    if fs.kernel.is_some() {
        return Err(src.at(
            n.span().start,
            "nocow = true is not supported under a guest kernel: remove `nocow` or `kernel` from this [[fs]]",
        ));
    }
    Ok(true)
}

/// Applies command-line overrides; their errors name the flag.
fn apply_overrides(mut suite: Suite, o: &Overrides) -> Result<Suite, ConfigError> {
    let invalid = |m: String| ConfigError::Invalid(diag::one_line(&m));

    if let Some(vs) = &o.variants {
        if vs.is_empty() {
            return Err(invalid(
                "--fs names no filesystem: give at least one, e.g. `--fs ext4,xfs`".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for v in vs {
            check_fs_type(&v.fs_type).map_err(|why| invalid(format!("--fs: filesystem type `{}` {why}", v.fs_type)))?;
            check_name(&v.name).map_err(|why| invalid(format!("--fs: filesystem name `{}` {why}", v.name)))?;
            if !seen.insert(v.name.as_str()) {
                return Err(invalid(format!(
                    "--fs names `{}` twice: list each variant once",
                    v.name
                )));
            }
        }
        suite.variants = vs.clone();
    }

    if let Some(only) = &o.only {
        if only.is_empty() {
            return Err(invalid(
                "--only names no workload: give at least one workload name or kind".into(),
            ));
        }
        let matches = |w: &WorkloadSpec, sel: &str| w.name == sel || w.kind.name() == sel;
        for sel in only {
            if !suite.workloads.iter().any(|w| matches(w, sel)) {
                let mut valid: Vec<&str> = suite.workloads.iter().map(|w| w.name.as_str()).collect();
                for w in &suite.workloads {
                    let k = w.kind.name();
                    if !valid.contains(&k) {
                        valid.push(k);
                    }
                }
                let list = diag::quoted_list(&valid);
                return Err(invalid(match diag::suggest(sel, &valid) {
                    Some(s) => format!(
                        "--only `{sel}` matches no workload of suite `{}`: did you mean `{s}`? (workloads: {list})",
                        suite.name
                    ),
                    None => format!(
                        "--only `{sel}` matches no workload of suite `{}`: use one of {list}",
                        suite.name
                    ),
                }));
            }
        }
        suite.workloads.retain(|w| only.iter().any(|sel| matches(w, sel)));
    }

    if let Some(r) = o.repeats {
        check_repeats(r).map_err(|why| invalid(format!("--repeat {r} {why}")))?;
        suite.policy.repeats = r;
    }
    if let Some(w) = o.warmup {
        check_warmup(w).map_err(|why| invalid(format!("--warmup {w} {why}")))?;
        suite.policy.warmup = w;
    }
    if let Some(l) = o.loop_io {
        suite.loop_io = l;
    }
    if let Some(m) = o.memory {
        suite.policy.memory = Some(check_memory(m.get()).map_err(|why| invalid(format!("--memory {m} {why}")))?);
    }
    if let Some(p) = o.precision {
        suite.policy.precision = Some(check_precision(p).map_err(|why| invalid(format!("--precision {p} {why}")))?);
    }
    if let Some(e) = o.equivalence {
        suite.equivalence = Some(check_equivalence(e).map_err(|why| invalid(format!("--equivalence {e} {why}")))?);
    }
    if let Some(b) = o.budget {
        suite.policy.budget_s =
            Some(check_budget(b.0.as_secs_f64()).map_err(|why| invalid(format!("--budget {b} {why}")))?);
    }
    // The trimmed mean needs at least one sample left: a default (or a `--repeat` lower than
    // the file planned for) drops only what the repeats allow.
    suite.policy.trim = suite.policy.trim.min((suite.policy.repeats - 1) / 2);

    if let Some(f) = o.scale {
        if !(f.is_finite() && f > 0.0 && f <= MAX_SCALE) {
            return Err(invalid(format!(
                "--scale {f} is out of range: use a factor above 0 and at most {MAX_SCALE}, e.g. 0.5 or 4"
            )));
        }
        if f != 1.0 {
            for w in &mut suite.workloads {
                let scaled = w.kind.workload().scaled(f);
                scaled.workload().validate().map_err(|why| {
                    invalid(format!(
                        "--scale {f} makes workload `{}` invalid ({why}): use a larger factor",
                        w.name
                    ))
                })?;
                w.kind = scaled;
            }
            for v in &mut suite.variants {
                v.image_size = v.image_size.map(|s| s.scaled(f, MIN_IMAGE));
            }
        }
        suite.scale = f;
    }
    if let Some(t) = o.target {
        apply_target(&mut suite, t)?;
    }
    Ok(suite)
}

/// `--target`: the capacity search at `t` for every workload that can run open loop; an error
/// when none can.
fn apply_target(suite: &mut Suite, t: crate::engine::openloop::LatencyTarget) -> Result<(), ConfigError> {
    let invalid = |m: String| ConfigError::Invalid(diag::one_line(&m));
    let mut any = false;
    for w in &mut suite.workloads {
        if let Some(k) = w.kind.workload().with_target(t) {
            k.workload()
                .validate()
                .map_err(|why| invalid(format!("--target {t} makes workload `{}` invalid ({why})", w.name)))?;
            w.kind = k;
            any = true;
        }
    }
    if !any {
        return Err(invalid(format!(
            "--target {t}: no workload of the suite can run open loop (fileio, or oltp with engine = \"sqlite\"); add one, or leave --target out"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
