//! Tests of the suite loader: positions and suggestions in errors, validation, overrides,
//! presets, and a fuzz test that no input panics.

use super::*;
use crate::config::{Order, Overrides};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const BASE: &str = r#"[suite]
name = "t"

[[fs]]
type = "ext4"

[[workload]]
kind = "bonnie"
file_size = "64MiB"
"#;

fn load(text: &str) -> Result<Suite, ConfigError> {
    load_str(text, "suite.toml", &Overrides::default())
}

fn err(text: &str) -> String {
    load(text).expect_err("the text should be rejected").to_string()
}

fn with(o: Overrides) -> Result<Suite, ConfigError> {
    load_str(BASE, "suite.toml", &o)
}

fn file_size(s: &Suite, i: usize) -> u64 {
    match &s.workloads[i].kind {
        WorkloadKind::Bonnie(b) => b.file_size.get(),
        other => panic!("workload {i} is not bonnie: {other:?}"),
    }
}

/// Loads a built-in preset with no overrides; every preset must load as shipped.
fn load_preset_plain(name: &str) -> Suite {
    load_preset(name, &Overrides::default()).unwrap_or_else(|e| panic!("preset {name}: {e}"))
}

// ---- a valid file ----

#[test]
fn a_minimal_file_loads_with_default_policy() {
    let s = load(BASE).unwrap();
    assert_eq!(s.name, "t");
    assert_eq!(s.description, "");
    assert_eq!(s.policy, Policy::default());
    assert_eq!(s.variants.len(), 1);
    assert_eq!(
        s.variants[0],
        FsVariant {
            name: "ext4".into(),
            fs_type: "ext4".into(),
            mkfs_args: vec![],
            mount_opts: vec![],
            image_size: None,
            kernel: None,
            nocow: false,
            entry: crate::fstype::FsTypeId::of("ext4"),
        }
    );
    assert_eq!(s.workloads.len(), 1);
    assert_eq!(s.workloads[0].name, "bonnie");
    assert_eq!(file_size(&s, 0), 64 * Bytes::MIB);
    assert_eq!(s.scale, 1.0);
    assert_eq!(s.source_text, BASE);
}

#[test]
fn every_documented_key_is_read() {
    let text = r#"
[suite]
name = "full"
description = "all keys"

[run]
repeats = 7
warmup = 2
order = "sequential"
drop_caches = false
trim = 2
confidence = 0.9

[[fs]]
type = "ext4"
name = "ext4-nj"
mkfs_args = ["-O", "^has_journal"]
mount_opts = ["noatime"]
image_size = "1GiB"

[[fs]]
type = "btrfs"
mount_opts = "compress=lzo, discard"

[[workload]]
kind = "bonnie"
name = "small"
file_size = "16MiB"

[[workload]]
kind = "bonnie"
"#;
    let s = load(text).unwrap();
    assert_eq!(s.description, "all keys");
    assert_eq!(
        s.policy,
        Policy {
            repeats: 7,
            warmup: 2,
            order: Order::Sequential,
            drop_caches: false,
            trim: 2,
            confidence: 0.9,
            ..Policy::default()
        }
    );
    assert_eq!(s.variants[0].name, "ext4-nj");
    assert_eq!(s.variants[0].mkfs_args, vec!["-O", "^has_journal"]);
    assert_eq!(s.variants[0].mount_opts, vec!["noatime"]);
    assert_eq!(s.variants[0].image_size, Some(Bytes(Bytes::GIB)));
    assert_eq!(s.variants[1].name, "btrfs:compress=lzo,discard");
    assert_eq!(s.variants[1].mount_opts, vec!["compress=lzo", "discard"]);
    let names: Vec<_> = s.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["small", "bonnie"]);
    assert_eq!(file_size(&s, 0), 16 * Bytes::MIB);
}

#[test]
fn inline_table_arrays_work_like_table_headers() {
    let text = "fs = [{ type = \"xfs\" }]\nworkload = [{ kind = \"bonnie\", name = \"b\" }]\n[suite]\nname = \"i\"\n";
    let s = load(text).unwrap();
    assert_eq!(s.variants[0].name, "xfs");
    assert_eq!(s.workloads[0].name, "b");
}

// ---- unknown keys, kinds and values: position + suggestion ----

#[test]
fn a_typo_in_a_workload_key_gives_its_position_and_the_right_key() {
    let e = err(&BASE.replace("file_size", "fle_size"));
    assert!(
        e.starts_with("suite.toml:9:1: unknown key `fle_size` in workload `bonnie`: did you mean `file_size`?"),
        "{e}"
    );
    assert!(e.contains("`kind`") && e.contains("`name`"), "valid keys listed: {e}");
}

/// The option groups fileio and sysbench_fileio, filecopy and treecopy share keep a typo's
/// place and suggestion (a flattened struct would report the table's first line and no list).
#[test]
fn a_typo_in_a_shared_option_group_gives_its_position_and_the_right_key() {
    for (kind, key, typo) in [
        ("sysbench_fileio", "block_size", "blok_size"),
        ("fileio", "fsync_freq", "fsync_frq"),
        ("treecopy", "reflink", "reflnk"),
        ("filecopy", "buffer", "bufer"),
    ] {
        let text = format!(
            "[suite]\nname = \"t\"\n\n[[fs]]\ntype = \"ext4\"\n\n[[workload]]\nkind = \"{kind}\"\n{typo} = 1\n"
        );
        let e = err(&text);
        assert!(
            e.starts_with(&format!(
                "suite.toml:9:1: unknown key `{typo}` in workload `{kind}`: did you mean `{key}`?"
            )),
            "{e}"
        );
    }
}

#[test]
fn a_typo_in_run_suggests_the_key() {
    let e = err(&format!("{BASE}\n[run]\nrepeat = 3\n"));
    assert!(
        e.starts_with("suite.toml:12:1: unknown key `repeat` in [run]: did you mean `repeats`?"),
        "{e}"
    );
}

#[test]
fn typos_in_suite_fs_and_top_level_are_caught() {
    let e = err(&BASE.replace("name = \"t\"", "nam = \"t\""));
    assert!(
        e.starts_with("suite.toml:2:1: unknown key `nam` in [suite]: did you mean `name`?"),
        "{e}"
    );
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nmount_opt = \"noatime\""));
    assert!(
        e.starts_with("suite.toml:6:1: unknown key `mount_opt` in [[fs]]: did you mean `mount_opts`?"),
        "{e}"
    );
    let e = err(&format!("{BASE}[[workloads]]\nkind = \"bonnie\"\n"));
    assert!(
        e.starts_with("suite.toml:10:3: unknown key `workloads` in the top level"),
        "{e}"
    );
    assert!(e.contains("did you mean `workload`?"), "{e}");
    let e = err(&format!("{BASE}[zzz]\n"));
    assert!(
        e.contains("unknown key `zzz`") && e.contains("remove it or use one of"),
        "{e}"
    );
}

#[test]
fn an_unknown_kind_suggests_the_nearest_kind() {
    let e = err(&BASE.replace("kind = \"bonnie\"", "kind = \"bonie\""));
    assert!(
        e.starts_with("suite.toml:8:1: unknown workload kind `bonie`: did you mean `bonnie`?"),
        "{e}"
    );
    let e = err(&BASE.replace("kind = \"bonnie\"", "kind = \"qqqq\""));
    assert!(e.contains("unknown workload kind `qqqq`: use one of `bonnie`"), "{e}");
}

#[test]
fn a_missing_or_malformed_kind_or_name_is_positioned() {
    let e = err(&BASE.replace("kind = \"bonnie\"\n", ""));
    assert!(
        e.starts_with("suite.toml:7:1: this [[workload]] has no `kind`: add `kind = \"bonnie\"`"),
        "{e}"
    );
    let e = err(&BASE.replace("kind = \"bonnie\"", "kind = 3"));
    assert!(e.starts_with("suite.toml:8:1: `kind` must be a quoted string"), "{e}");
    let e = err(&BASE.replace("kind = \"bonnie\"", "kind = \"bonnie\"\nname = 5"));
    assert!(e.starts_with("suite.toml:9:1: `name` must be a quoted string"), "{e}");
}

#[test]
fn an_unknown_enum_value_suggests_the_nearest() {
    let e = err(&format!("{BASE}[run]\norder = \"interleave\"\n"));
    assert!(
        e.starts_with("suite.toml:11:9: unknown value `interleave`: did you mean `interleaved`?"),
        "{e}"
    );
    assert!(e.contains("`sequential`"), "{e}");
}

// ---- wrong types and values: positions ----

#[test]
fn wrong_types_are_positioned_at_the_value() {
    let e = err(&format!("{BASE}[run]\nrepeats = \"x\"\n"));
    assert_eq!(
        e,
        "suite.toml:11:11: string \"x\" is not a whole number ≥ 0: change this value"
    );
    let e = err(&format!("{BASE}[run]\nrepeats = -3\n"));
    assert_eq!(
        e,
        "suite.toml:11:11: integer `-3` is not a whole number ≥ 0: change this value"
    );
    let e = err(&format!("{BASE}[run]\ndrop_caches = 1\n"));
    assert!(
        e.starts_with("suite.toml:11:15: integer `1` is not `true` or `false`"),
        "{e}"
    );
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nmkfs_args = \"-F\""));
    assert!(
        e.starts_with("suite.toml:6:13: string \"-F\" is not a list such as"),
        "{e}"
    );
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nmount_opts = 3"));
    assert!(e.starts_with("suite.toml:6:14:"), "{e}");
}

#[test]
fn negative_sizes_are_positioned() {
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nimage_size = -1"));
    assert_eq!(e, "suite.toml:6:14: size -1 is negative: use a value ≥ 0");
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nimage_size = \"-1G\""));
    assert!(
        e.starts_with("suite.toml:6:14: `-1G` is not a size: use a number"),
        "{e}"
    );
    // In a workload, serde cannot say which key: the loader finds it.
    let e = err(&BASE.replace("file_size = \"64MiB\"", "file_size = -5"));
    assert_eq!(
        e,
        "suite.toml:9:1: `file_size` in workload `bonnie`: size -5 is negative: use a value ≥ 0"
    );
    let e = err(&BASE.replace("file_size = \"64MiB\"", "file_size = \"lots\""));
    assert!(
        e.starts_with("suite.toml:9:1: `file_size` in workload `bonnie`: `lots` is not a size"),
        "{e}"
    );
    let e = err(&BASE.replace("file_size = \"64MiB\"", "file_size = true"));
    assert!(
        e.starts_with("suite.toml:9:1: `file_size` in workload `bonnie`: boolean `true` is not a size"),
        "{e}"
    );
}

#[test]
fn toml_syntax_errors_are_positioned() {
    let e = err("[suite\nname = \"x\"\n");
    assert!(e.starts_with("suite.toml:1:7: invalid table header"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    let e = err(&format!("{BASE}[run]\nrepeats = 3\nrepeats = 4\n"));
    assert!(e.starts_with("suite.toml:12:1: duplicate key `repeats`"), "{e}");
    assert!(e.ends_with("remove one of them"), "{e}");
}

// ---- whole-suite checks ----

#[test]
fn missing_tables_say_what_to_add() {
    assert_eq!(err("[[fs]]\ntype = \"ext4\"\n").split(": ").next(), Some("suite.toml"));
    assert!(err("[[fs]]\ntype = \"ext4\"\n").contains("has no [suite] table: add `[suite]`"));
    let no_fs = BASE.replace("[[fs]]\ntype = \"ext4\"\n", "");
    assert!(err(&no_fs).starts_with("suite.toml: the suite has no [[fs]] table: add at least one"));
    assert!(err(&no_fs).contains("`--dir DIR`"), "the error names the way out");
    // `--dir` (no filesystem is made) and `--fs` (variants from the command line) need none.
    let dir = load_str(
        &no_fs,
        "suite.toml",
        &Overrides {
            dir_target: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(dir.variants.is_empty() && dir.workloads.len() == 1);
    let fs = Overrides {
        variants: Some(crate::config::parse_fs_list("xfs").unwrap()),
        ..Default::default()
    };
    assert_eq!(load_str(&no_fs, "suite.toml", &fs).unwrap().variants[0].fs_type, "xfs");
    let no_wl = BASE.replace("[[workload]]\nkind = \"bonnie\"\nfile_size = \"64MiB\"\n", "");
    assert!(err(&no_wl).starts_with("suite.toml: the suite has no [[workload]] table: add at least one"));
    let e = err("[suite]\n[[fs]]\ntype = \"ext4\"\n");
    assert!(
        e.starts_with("suite.toml:1:1: missing key `name` in [suite]: add `name = …`"),
        "{e}"
    );
    let e = err(&BASE.replace("type = \"ext4\"", "name = \"a\""));
    assert!(e.starts_with("suite.toml:4:1: missing key `type` in [[fs]]"), "{e}");
}

#[test]
fn duplicate_names_point_at_both_places() {
    let e = err(&format!("{BASE}\n[[fs]]\ntype = \"ext4\"\n"));
    assert_eq!(
        e,
        "suite.toml:11:1: filesystem name `ext4` is used twice (first at line 4): give each [[fs]] a distinct `name = \"…\"`"
    );
    let e = err(&format!("{BASE}\n[[workload]]\nkind = \"bonnie\"\nname = \"bonnie\"\n"));
    assert_eq!(
        e,
        "suite.toml:13:1: workload name `bonnie` is used twice (first at line 7): give each [[workload]] a distinct `name = \"…\"`"
    );
    // Different options give different default names: no clash.
    let ok = format!("{BASE}\n[[fs]]\ntype = \"ext4\"\nmount_opts = \"noatime\"\n");
    assert_eq!(load(&ok).unwrap().variants[1].name, "ext4:noatime");
}

#[test]
fn unsafe_names_are_rejected() {
    for bad in ["..", ".", "", "a/b", "../etc", "x y", "é", &"n".repeat(65)] {
        let e = err(&BASE.replace("kind = \"bonnie\"", &format!("kind = \"bonnie\"\nname = \"{bad}\"")));
        assert!(e.starts_with("suite.toml:9:1: workload name"), "{bad:?}: {e}");
        let e = err(&BASE.replace("type = \"ext4\"", &format!("type = \"ext4\"\nname = \"{bad}\"")));
        assert!(e.starts_with("suite.toml:6:8: filesystem name"), "{bad:?}: {e}");
    }
    let e = err(&BASE.replace("name = \"t\"", "name = \"../t\""));
    assert!(e.starts_with("suite.toml:2:8: suite name `../t` contains `/`"), "{e}");
    // A defaulted name that is unsafe says how to fix it.
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"btrfs\"\nmount_opts = \"subvol=/a\""));
    assert!(
        e.contains("contains `/`") && e.contains("set `name = \"…\"` for this [[fs]]"),
        "{e}"
    );
    assert!(load(&BASE.replace("name = \"t\"", &format!("name = \"{}\"", "a".repeat(64)))).is_ok());
    assert!(load(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nname = \"Ok._:,=+-9\"")).is_ok());
}

#[test]
fn filesystem_types_must_be_plain_names() {
    for bad in ["", "Ext4", "ext-4", "../x", "ext4 "] {
        let e = err(&BASE.replace("type = \"ext4\"", &format!("type = \"{bad}\"")));
        assert!(e.starts_with("suite.toml:5:8: filesystem type"), "{bad:?}: {e}");
    }
}

#[test]
fn run_ranges_are_checked() {
    let run = |body: &str| err(&format!("{BASE}[run]\n{body}\n"));
    assert_eq!(
        run("repeats = 0"),
        "suite.toml:11:11: repeats = 0 is out of range: use 1 to 1000"
    );
    assert!(run("repeats = 1001").contains("use 1 to 1000"));
    assert_eq!(
        run("warmup = 101"),
        "suite.toml:11:10: warmup = 101 is out of range: use 0 to 100"
    );
    for c in ["0.0", "1.0", "1.5", "-0.5", "nan", "inf"] {
        let e = run(&format!("confidence = {c}"));
        assert!(
            e.starts_with("suite.toml:11:14: confidence = ") && e.contains("between 0 and 1"),
            "{c}: {e}"
        );
    }
    let e = run("repeats = 2\ntrim = 1");
    assert_eq!(
        e,
        "suite.toml:12:8: trim = 1 drops the 1 best and 1 worst of 2 repeats, leaving none: lower trim to 0 or raise repeats to 3"
    );
}

#[test]
fn a_default_trim_is_fitted_to_few_repeats() {
    let s = load(&format!("{BASE}[run]\nrepeats = 2\n")).unwrap();
    assert_eq!(s.policy.trim, 0);
    let s = load(&format!("{BASE}[run]\nrepeats = 5\n")).unwrap();
    assert_eq!(s.policy.trim, 1);
}

#[test]
fn mount_options_accept_both_forms_and_reject_empty_ones() {
    let opts = |v: &str| {
        load(&BASE.replace("type = \"ext4\"", &format!("type = \"ext4\"\nmount_opts = {v}")))
            .map(|s| s.variants[0].mount_opts.clone())
    };
    assert_eq!(opts("\"noatime,discard\"").unwrap(), vec!["noatime", "discard"]);
    assert_eq!(opts("[\"noatime\", \"discard\"]").unwrap(), vec!["noatime", "discard"]);
    assert_eq!(opts("\"\"").unwrap(), Vec::<String>::new());
    let e = opts("\"noatime,,discard\"").unwrap_err().to_string();
    assert!(e.starts_with("suite.toml:6:14: empty mount option"), "{e}");
    assert!(opts("[\"\"]").is_err());
}

#[test]
fn tiny_image_sizes_are_rejected() {
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nimage_size = \"4k\""));
    assert!(e.starts_with("suite.toml:6:14: image_size = 4KiB is too small"), "{e}");
}

#[test]
fn a_workload_limited_to_columns_names_them_and_a_typo_is_refused_where_it_is_written() {
    let two = BASE.replace("[[workload]]", "[[fs]]\ntype = \"xfs\"\n\n[[workload]]");
    let s = load(&format!("{two}fs = [\"xfs\"]\n")).unwrap();
    assert_eq!(s.workloads[0].fs, ["xfs"]);
    let e = err(&format!("{two}fs = [\"xfss\"]\n"));
    assert!(
        e.starts_with("suite.toml:13:1: `fs` in workload `bonnie` names `xfss`"),
        "{e}"
    );
    assert!(e.contains("did you mean `xfs`?"), "{e}");
    let e = err(&format!("{two}fs = \"xfs\"\n"));
    assert!(e.contains("must be a list of [[fs]] names"), "{e}");
    // Without the key: every column.
    assert!(load(BASE).unwrap().workloads[0].fs.is_empty());
}

#[test]
fn a_workload_may_have_its_own_memory_limit_and_a_bad_one_is_refused_at_its_key() {
    let s = load(&format!("{BASE}memory = \"1GiB\"\n")).unwrap();
    assert_eq!(s.workloads[0].memory, Some(crate::units::Bytes(1 << 30)));
    // Not part of the workload kind's spec (its case id is the kind's), and absent by default.
    assert!(load(BASE).unwrap().workloads[0].memory.is_none());
    let e = err(&format!("{BASE}memory = \"512KiB\"\n"));
    assert!(
        e.starts_with("suite.toml:10:1: memory = \"512KiB\" in workload `bonnie` is out of range"),
        "{e}"
    );
    let e = err(&format!("{BASE}memory = 1024\n"));
    assert!(e.contains("`memory` in workload `bonnie` must be a quoted size"), "{e}");
}

// ---- overrides ----

#[test]
fn fs_override_replaces_the_variants() {
    let variants = crate::config::parse_fs_list("xfs,btrfs:compress=lzo").unwrap();
    let s = with(Overrides {
        variants: Some(variants.clone()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(s.variants, variants);
    let e = with(Overrides {
        variants: Some(vec![]),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("--fs names no filesystem"), "{e}");
    let mut twice = variants.clone();
    twice.push(variants[0].clone());
    let e = with(Overrides {
        variants: Some(twice),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("--fs names `xfs` twice"), "{e}");
}

#[test]
fn only_keeps_workloads_by_name_or_kind_and_suggests_on_typos() {
    let text = format!("{BASE}\n[[workload]]\nkind = \"bonnie\"\nname = \"big\"\nfile_size = \"1GiB\"\n");
    let only = |sel: &[&str]| {
        load_str(
            &text,
            "suite.toml",
            &Overrides {
                only: Some(sel.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            },
        )
    };
    let names = |s: Suite| s.workloads.into_iter().map(|w| w.name).collect::<Vec<_>>();
    assert_eq!(names(only(&["big"]).unwrap()), ["big"]);
    assert_eq!(
        names(only(&["bonnie"]).unwrap()),
        ["bonnie", "big"],
        "the kind selects every bonnie"
    );
    let e = only(&["bigg"]).unwrap_err().to_string();
    assert_eq!(
        e,
        "--only `bigg` matches no workload of suite `t`: did you mean `big`? (workloads: `bonnie`, `big`)"
    );
    let e = only(&["zzz"]).unwrap_err().to_string();
    assert!(e.ends_with("use one of `bonnie`, `big`"), "{e}");
    assert!(only(&[]).is_err());
}

#[test]
fn repeat_and_warmup_overrides_are_range_checked_and_fit_trim() {
    let s = with(Overrides {
        repeats: Some(10),
        warmup: Some(2),
        ..Default::default()
    })
    .unwrap();
    assert_eq!((s.policy.repeats, s.policy.warmup, s.policy.trim), (10, 2, 1));
    let s = with(Overrides {
        repeats: Some(1),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        (s.policy.repeats, s.policy.trim),
        (1, 0),
        "--repeat 1 leaves no room to trim"
    );
    assert_eq!(
        with(Overrides {
            repeats: Some(0),
            ..Default::default()
        })
        .unwrap_err()
        .to_string(),
        "--repeat 0 is out of range: use 1 to 1000"
    );
    assert_eq!(
        with(Overrides {
            warmup: Some(500),
            ..Default::default()
        })
        .unwrap_err()
        .to_string(),
        "--warmup 500 is out of range: use 0 to 100"
    );
}

#[test]
fn scale_multiplies_workloads_and_explicit_image_sizes() {
    let text = BASE.replace("type = \"ext4\"", "type = \"ext4\"\nimage_size = \"1GiB\"");
    let s = load_str(
        &text,
        "suite.toml",
        &Overrides {
            scale: Some(0.5),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(file_size(&s, 0), 32 * Bytes::MIB);
    assert_eq!(s.variants[0].image_size, Some(Bytes(512 * Bytes::MIB)));
    assert_eq!(s.scale, 0.5);
    assert_eq!(s.source_text, text, "the source text is the file, not the scaled suite");
    let s = with(Overrides {
        scale: Some(2.0),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(file_size(&s, 0), 128 * Bytes::MIB);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1000.5] {
        let e = with(Overrides {
            scale: Some(bad),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with(&format!("--scale {bad} is out of range")), "{e}");
    }
    assert!(with(Overrides {
        scale: Some(1000.0),
        ..Default::default()
    })
    .is_ok());
}

// ---- files and presets ----

#[test]
fn load_file_names_the_path_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(&path, BASE.replace("file_size", "fle_size")).unwrap();
    let e = load_file(&path, &Overrides::default()).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}:9:1: unknown key `fle_size`", path.display())),
        "{e}"
    );
    std::fs::write(&path, BASE).unwrap();
    assert_eq!(load_file(&path, &Overrides::default()).unwrap().name, "t");
    let missing = dir.path().join("nope.toml");
    let e = load_file(&missing, &Overrides::default()).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(
        e.to_string()
            .starts_with(&format!("cannot read suite file `{}`: ", missing.display())),
        "{e}"
    );
}

#[test]
fn presets_are_listed_and_unknown_ones_get_a_suggestion() {
    assert!(preset_names().contains(&"quick"));
    assert_eq!(preset_names().first(), Some(&"quick"), "the default preset comes first");
    assert!(preset_text("quick").unwrap().contains("[suite]"));
    assert!(preset_text("nope").is_none());
    let e = load_preset("quik", &Overrides::default()).unwrap_err().to_string();
    assert!(
        e.starts_with("unknown preset `quik`: did you mean `quick`? (presets: `quick`"),
        "{e}"
    );
    let e = load_preset("zzzzzz", &Overrides::default()).unwrap_err().to_string();
    assert!(e.contains("use one of `quick`"), "{e}");
}

#[test]
fn every_embedded_preset_loads() {
    for name in preset_names() {
        let s = load_preset_plain(name);
        assert_eq!(s.name, name, "a preset's [suite] name is its file name");
        assert!(!s.description.is_empty(), "preset {name} needs a description");
    }
}

#[test]
fn the_quick_preset_is_the_default_comparison() {
    let s = load_preset_plain("quick");
    let types: Vec<_> = s
        .variants
        .iter()
        .map(|v| (v.name.as_str(), v.fs_type.as_str()))
        .collect();
    assert_eq!(types, [("ext4", "ext4"), ("xfs", "xfs"), ("btrfs", "btrfs")]);
    assert!(s
        .variants
        .iter()
        .all(|v| v.mount_opts.is_empty() && v.mkfs_args.is_empty() && v.image_size.is_none()));
    assert_eq!(
        s.policy,
        Policy {
            repeats: 3,
            warmup: 1,
            order: Order::Interleaved,
            drop_caches: true,
            trim: 1,
            confidence: 0.95,
            // Issue 18: a small machine's cache, and repeats until the answer is clear.
            memory: Some(256 << 20),
            precision: Some(5.0),
            budget_s: Some(300.0),
            methodology: true,
        }
    );
    assert_eq!(s.workloads.len(), 1);
    assert_eq!(s.workloads[0].name, "bonnie");
    // bonnie's reads must read the disk: its file is larger than the memory cgroup.
    assert_eq!(file_size(&s, 0), Bytes::GIB);
    assert!(file_size(&s, 0) > s.policy.memory.unwrap());
    let text = preset_text("quick").unwrap();
    for line in [
        "chunk_size = \"8KiB\"",
        "char_mode = \"stdio\"",
        "files = 40960",
        "stat_passes = 3",
        "read_passes = 2",
        "file_max_size = \"0\"",
        "dirs = 1",
    ] {
        assert!(text.contains(line), "quick.toml should set {line}");
    }
}

// ---- robustness ----

/// Pieces the mutator splices in: TOML syntax, keys of every table, and hostile values.
const FRAGMENTS: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "=",
    ",",
    "\"",
    "'",
    "\n",
    ".",
    "#",
    "\\",
    ":",
    "-",
    "\u{0}",
    "é",
    "\u{202e}",
    "[suite]\n",
    "[run]\n",
    "[[fs]]\n",
    "[[workload]]\n",
    "[workload.x]\n",
    "name = ",
    "kind = ",
    "type = ",
    "repeats = ",
    "warmup = ",
    "trim = ",
    "confidence = ",
    "order = ",
    "mount_opts = ",
    "image_size = ",
    "file_size = ",
    "\"bonnie\"",
    "\"ext4\"",
    "\"..\"",
    "\"a/b\"",
    "-1",
    "0",
    "1e999",
    "nan",
    "inf",
    "-inf",
    "18446744073709551616",
    "4294967296",
    "\"99999999T\"",
    "\"-1k\"",
    "\"1.5G\"",
    "true",
    "[]",
    "[\"\"]",
    "{}",
    "1979-05-27T07:32:00Z",
    "x.y.z = 1",
    "\"\"\"",
    "'''",
];

/// Right-hand sides that keep the TOML well-formed but test types, ranges and names.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "1000",
    "1001",
    "0.5",
    "1.0",
    "nan",
    "inf",
    "true",
    "\"\"",
    "\"..\"",
    "\"a/b\"",
    "\"ext4\"",
    "\"xfs\"",
    "\"bonnie\"",
    "\"bonie\"",
    "\"4k\"",
    "\"-4k\"",
    "\"1GiB\"",
    "\"99999999T\"",
    "\"noatime,,x\"",
    "[]",
    "[\"a\"]",
    "{}",
    "\"sequential\"",
    "\"interleave\"",
    "18446744073709551616",
];

fn mutate(rng: &mut SmallRng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if !lines.is_empty() && rng.gen_bool(0.5) {
        let i = rng.gen_range(0..lines.len());
        match rng.gen_range(0..3) {
            // Replace a value, keeping the syntax valid.
            0 => {
                if let Some((key, _)) = lines[i].split_once(" = ") {
                    lines[i] = format!("{key} = {}", VALUES[rng.gen_range(0..VALUES.len())]);
                }
            }
            // Drop a line, or repeat one (a duplicate key, table or name).
            1 => {
                lines.remove(i);
            }
            _ => {
                let l = lines[i].clone();
                lines.insert(rng.gen_range(0..=lines.len()), l);
            }
        }
        return lines.join("\n");
    }
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..rng.gen_range(1..3) {
        let at = rng.gen_range(0..=chars.len());
        match rng.gen_range(0..5) {
            0 => {
                let end = (at + rng.gen_range(1..12)).min(chars.len());
                chars.drain(at..end);
            }
            1 | 2 => {
                let frag = FRAGMENTS[rng.gen_range(0..FRAGMENTS.len())];
                chars.splice(at..at, frag.chars());
            }
            3 => {
                let c = char::from_u32(rng.gen_range(0..0x3000)).unwrap_or('?');
                chars.insert(at, c);
            }
            _ => {
                // Duplicate a slice, e.g. a whole table.
                let end = (at + rng.gen_range(1..60)).min(chars.len());
                let piece: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, piece);
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn no_input_makes_the_loader_panic() {
    let seeds = [
        BASE.to_string(),
        preset_text("quick").unwrap().to_string(),
        format!("{BASE}[run]\nrepeats = 3\ntrim = 1\n"),
    ];
    let mut rng = SmallRng::seed_from_u64(0x5eed_f5be);
    let (mut accepted, mut rejected) = (0, 0);
    for i in 0..4000 {
        let mut text = seeds[i % seeds.len()].clone();
        // Mostly one small mutation, so many texts stay valid and reach validation and
        // overrides; sometimes many, to reach deep parser states.
        let rounds = if rng.gen_bool(0.7) { 1 } else { rng.gen_range(2..6) };
        for _ in 0..rounds {
            text = mutate(&mut rng, &text);
        }
        let o = Overrides {
            repeats: rng.gen_bool(0.1).then(|| rng.gen_range(0..1200)),
            warmup: rng.gen_bool(0.1).then(|| rng.gen_range(0..200)),
            scale: rng
                .gen_bool(0.1)
                .then(|| [0.0, 1e-300, 0.001, 0.5, 3.0, 1000.0, f64::NAN, -2.0][rng.gen_range(0..8)]),
            only: rng.gen_bool(0.05).then(|| vec!["bonnie".to_string()]),
            variants: None,
            dir_target: rng.gen_bool(0.05),
            tools: None,
            ..Default::default()
        };
        match load_str(&text, "fuzz.toml", &o) {
            Ok(s) => {
                accepted += 1;
                assert!(!s.variants.is_empty() && !s.workloads.is_empty());
                assert!(s.policy.repeats >= 1 && u64::from(s.policy.trim) * 2 < u64::from(s.policy.repeats));
            }
            Err(e) => {
                rejected += 1;
                let m = e.to_string();
                assert!(!m.is_empty() && !m.contains('\n'), "one-line message for {text:?}: {m}");
            }
        }
    }
    // The mutator must exercise both paths for the test to mean anything.
    assert!(
        accepted > 50 && rejected > 50,
        "accepted {accepted}, rejected {rejected}"
    );
}

// ---- [target] ----

#[test]
fn a_target_device_needs_the_exact_wipe_in_the_file() {
    let with_target = |t: &str| format!("{BASE}\n[target]\n{t}\n");
    let s = load(&with_target("device = \"/dev/loop7\"\nwipe = \"/dev/loop7\"")).unwrap();
    assert_eq!(s.device, Some(PathBuf::from("/dev/loop7")));
    assert_eq!(load(BASE).unwrap().device, None);
    // Errors point at the key: [target] is on line `t`, its keys follow.
    let t = with_target("").lines().position(|l| l == "[target]").unwrap() + 1;
    let e = err(&with_target("device = \"/dev/loop7\""));
    assert!(
        e.starts_with(&format!("suite.toml:{}:10: ", t + 1)) && e.contains("confirm with `wipe = \"/dev/loop7\"`"),
        "{e}"
    );
    let e = err(&with_target("device = \"/dev/loop7\"\nwipe = \"/dev/loop8\""));
    assert!(
        e.starts_with(&format!("suite.toml:{}:8: ", t + 2)) && e.contains("does not repeat"),
        "{e}"
    );
    let e = err(&with_target("wipe = \"/dev/loop7\""));
    assert!(e.contains("names none"), "{e}");
    let e = err(&with_target("devise = \"/dev/loop7\""));
    assert!(e.contains("unknown key `devise`") && e.contains("device"), "{e}");
}

#[test]
fn memory_precision_and_budget_come_from_run_keys_or_flags_and_are_checked() {
    let keys = BASE.replace(
        "[[fs]]",
        "[run]\nmemory = \"786MiB\"\nprecision = 5\nbudget = \"10m\"\n\n[[fs]]",
    );
    let s = load(&keys).unwrap();
    assert_eq!(s.policy.memory, Some(786 << 20));
    assert_eq!(s.policy.precision, Some(5.0));
    assert_eq!(s.policy.budget_s, Some(600.0));
    assert!(s.policy.is_adaptive());
    assert!(!load(BASE).unwrap().policy.is_adaptive());
    let e = err(&BASE.replace("[[fs]]", "[run]\nmemory = \"4k\"\n\n[[fs]]"));
    assert!(e.contains("memory = \"4KiB\" is out of range"), "{e}");
    let e = err(&BASE.replace("[[fs]]", "[run]\nprecision = 0\n\n[[fs]]"));
    assert!(e.contains("precision = 0 is out of range"), "{e}");
    let s = with(Overrides {
        memory: Some("1GiB".parse().unwrap()),
        precision: Some(3.0),
        budget: Some("90s".parse().unwrap()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        (s.policy.memory, s.policy.precision, s.policy.budget_s),
        (Some(1 << 30), Some(3.0), Some(90.0))
    );
    let e = with(Overrides {
        budget: Some("100ms".parse().unwrap()),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("--budget") && e.contains("at least 1s"), "{e}");
    // The study presets run on their machines' memory.
    assert_eq!(load_preset_plain("desktop-2009").policy.memory, Some(786 << 20));
    assert_eq!(load_preset_plain("ext4-vs-btrfs-2012").policy.memory, Some(1 << 30));
    assert_eq!(load_preset_plain("mongo-2000").policy.memory, Some(16 << 20));
}

#[test]
fn the_equivalence_margin_comes_from_the_run_key_or_the_flag_and_is_checked() {
    assert_eq!(load(BASE).unwrap().equivalence, None);
    let keyed = BASE.replace("[[fs]]", "[run]\nequivalence = 5\n\n[[fs]]");
    assert_eq!(load(&keyed).unwrap().equivalence, Some(5.0));
    // The flag wins over the file.
    let s = load_str(
        &keyed,
        "suite.toml",
        &Overrides {
            equivalence: Some(2.5),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.equivalence, Some(2.5));
    for bad in ["0", "-1", "100", "250.5"] {
        let e = err(&BASE.replace("[[fs]]", &format!("[run]\nequivalence = {bad}\n\n[[fs]]")));
        assert!(e.contains("out of range") && e.contains("below 100"), "{bad}: {e}");
    }
    for bad in [0.0, 100.0, f64::NAN] {
        let e = with(Overrides {
            equivalence: Some(bad),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--equivalence") && e.contains("above 0 and below 100"),
            "{e}"
        );
    }
}

#[test]
fn loop_io_comes_from_the_run_key_or_the_flag_and_a_bad_value_is_positioned() {
    use crate::policy::LoopIo;
    assert_eq!(load(BASE).unwrap().loop_io, LoopIo::Direct);
    let buffered = BASE.replace("[[fs]]", "[run]\nloop_io = \"buffered\"\n\n[[fs]]");
    assert_eq!(load(&buffered).unwrap().loop_io, LoopIo::Buffered);
    // The flag wins over the file.
    let s = load_str(
        &buffered,
        "suite.toml",
        &Overrides {
            loop_io: Some(LoopIo::Direct),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.loop_io, LoopIo::Direct);
    let e = err(&BASE.replace("[[fs]]", "[run]\nloop_io = \"cached\"\n\n[[fs]]"));
    assert!(
        e.starts_with("suite.toml:5:11: ")
            && e.contains("loop_io = \"cached\": use \"direct\"")
            && e.contains("\"buffered\""),
        "{e}"
    );
}

#[test]
fn a_variant_serializes_by_type_name_and_reads_back_resolved() {
    let v = FsVariant {
        mount_opts: vec!["noatime".into()],
        ..FsVariant::with_type("x", "xfs")
    };
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(
        json,
        r#"{"name":"x","fs_type":"xfs","mkfs_args":[],"mount_opts":["noatime"],"image_size":null}"#
    );
    let back: FsVariant = serde_json::from_str(&json).unwrap();
    assert_eq!(back, v);
    assert_eq!(back.fs().name, "xfs");
    let generic: FsVariant = serde_json::from_str(&json.replace("xfs", "nosuchfs")).unwrap();
    assert_eq!(generic.entry, crate::fstype::FsTypeId::of("nosuchfs"));
    assert_eq!(generic.fs().backing, crate::fstype::Backing::Block);
}

#[test]
fn nocow_is_a_btrfs_variant_option_and_refused_elsewhere() {
    let btrfs = load(&BASE.replace("type = \"ext4\"", "type = \"btrfs\"\nnocow = true")).unwrap();
    assert!(btrfs.variants[0].nocow);
    assert_eq!(btrfs.variants[0].name, "btrfs+nocow", "never the plain variant's name");
    let plain = load(&BASE.replace("type = \"ext4\"", "type = \"btrfs\"")).unwrap();
    assert!(!plain.variants[0].nocow);
    assert_eq!(plain.variants[0].name, "btrfs");
    // That a NoCOW case is another case than the plain one: plan's `case_ids_are_stable_and_distinct`.
    let off = load(&BASE.replace("type = \"ext4\"", "type = \"btrfs\"\nnocow = false")).unwrap();
    assert!(!off.variants[0].nocow);
    // Only btrfs has the attribute: ext4 is refused at the key, with what to do.
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"ext4\"\nnocow = true"));
    assert!(
        e.starts_with("suite.toml:6:9: nocow = true needs type = \"btrfs\"") && e.contains("remove `nocow`"),
        "{e}"
    );
    let e = err(&BASE.replace("type = \"ext4\"", "type = \"btrfs\"\nkernel = \"guest\"\nnocow = true"));
    assert!(e.contains("not supported under a guest kernel"), "{e}");
    // The variant keeps the option when it is stored and read back.
    let json = serde_json::to_string(&btrfs.variants[0]).unwrap();
    assert!(json.contains("\"nocow\":true"), "{json}");
    let back: FsVariant = serde_json::from_str(&json).unwrap();
    assert_eq!(back, btrfs.variants[0]);
}

#[test]
fn target_override_adds_the_capacity_search_where_a_workload_can_run_open_loop() {
    let target = crate::engine::openloop::LatencyTarget::parse("p99=5ms").unwrap();
    let o = Overrides {
        target: Some(target),
        ..Default::default()
    };
    // bonnie cannot run open loop: the flag names what can.
    let e = with(o.clone()).unwrap_err().to_string();
    assert!(
        e.starts_with("--target p99=5ms: no workload of the suite can run open loop"),
        "{e}"
    );
    let text = format!("{BASE}\n[[workload]]\nkind = \"fileio\"\nmode = \"rndrd\"\ntotal_size = \"64MiB\"\n");
    let s = load_str(&text, "suite.toml", &o).unwrap();
    // The bonnie workload is left as it was.
    assert!(s.workloads[0]
        .kind
        .workload()
        .phases()
        .iter()
        .all(|p| !p.contains("capacity")));
    let phases = s.workloads[1].kind.workload().phases();
    assert_eq!(phases, ["rndrd", "rndrd:capacity"]);
    match &s.workloads[1].kind {
        WorkloadKind::Fileio(f) => assert_eq!(f.open_loop.as_ref().and_then(|o| o.target), Some(target)),
        other => panic!("{other:?}"),
    }
}
