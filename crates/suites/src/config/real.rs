//! Real-tool variants of a suite (issue 13, item 2): `[[real_workload]]` tables name a
//! workload of the suite and give the external tool that replaces it when the run asks for the
//! real tools (`--tools real`, or `tools = "real"` in `[run]`), e.g. the `desktop-2009`
//! preset's native `bonnie` becomes the real bonnie++ with `-s 2000`.
//!
//! Invariants: every `[[real_workload]]` is decoded and validated like a `[[workload]]` (so a
//! typo is reported whichever tools are chosen) and must carry the `name` of a `[[workload]]`;
//! with the real tools, each named workload is replaced in place (same name, same position),
//! before `--only` and `--scale` apply, so sizes scale as the native ones do. Asking for the
//! real tools in a suite without any `[[real_workload]]` is an error that says so.

use super::diag::Source;
use super::raw::{self, RawWorkload};
use super::{ConfigError, WorkloadSpec};
use crate::choice::Choice;
use toml::Spanned;

/// Which implementation of the suite's workloads runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tools {
    /// fsbench's native workloads (the default).
    #[default]
    Native,
    /// The external tools of the suite's `[[real_workload]]` tables in their place.
    Real,
}

impl Choice for Tools {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (Tools::Native, "native", "fsbench's native workloads (the default)"),
        (
            Tools::Real,
            "real",
            "The external tools of the suite's `[[real_workload]]` tables in their place",
        ),
    ];
}

impl Tools {
    /// Reads `[run] tools`.
    pub(super) fn parse(src: &Source, v: &Spanned<String>) -> Result<Tools, ConfigError> {
        Tools::from_name(v.get_ref()).map_err(|_| {
            src.at(
                v.span().start,
                format!(
                    "tools = \"{}\": use \"native\" (fsbench's workloads) or \"real\" (the [[real_workload]] tools)",
                    v.get_ref()
                ),
            )
        })
    }
}

/// Decodes the `[[real_workload]]` tables and, with [`Tools::Real`], puts each in place of the
/// workload of its name; see the module documentation.
pub(super) fn apply(
    src: &Source,
    workloads: &mut [WorkloadSpec],
    real: &[Spanned<RawWorkload>],
    tools: Tools,
) -> Result<(), ConfigError> {
    let mut decoded = Vec::with_capacity(real.len());
    for entry in real {
        let w = raw::decode_workload(src, entry)?;
        if w.name_at == w.table_at {
            return Err(src.at(
                w.table_at,
                "this [[real_workload]] has no `name`: give it the name of the [[workload]] it replaces",
            ));
        }
        w.kind
            .workload()
            .validate()
            .map_err(|why| src.at(w.table_at, format!("real_workload `{}`: {why}", w.name)))?;
        if !workloads.iter().any(|n| n.name == w.name) {
            let names: Vec<&str> = workloads.iter().map(|n| n.name.as_str()).collect();
            return Err(src.at(
                w.name_at,
                format!(
                    "real_workload `{}` names no [[workload]]: use one of {}",
                    w.name,
                    super::diag::quoted_list(&names)
                ),
            ));
        }
        decoded.push(w);
    }
    if tools == Tools::Real {
        if decoded.is_empty() {
            return Err(src.whole(
                "the real tools were asked for (--tools real or [run] tools = \"real\") but the suite has no \
                 [[real_workload]] table: add one per workload to replace, e.g. `kind = \"bonnie_pp\"` with the \
                 workload's `name`",
            ));
        }
        for w in decoded {
            if let Some(slot) = workloads.iter_mut().find(|n| n.name == w.name) {
                slot.kind = w.kind;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Tools;
    use crate::config::{load_preset, load_str, Overrides};
    use crate::engine::workloads::fileio::FileioMode;
    use crate::engine::WorkloadKind;
    use crate::units::Bytes;

    fn real(scale: Option<f64>) -> Overrides {
        Overrides {
            tools: Some(Tools::Real),
            scale,
            ..Overrides::default()
        }
    }

    fn kind_of<'a>(s: &'a crate::config::Suite, name: &str) -> &'a WorkloadKind {
        &s.workloads.iter().find(|w| w.name == name).expect("workload").kind
    }

    #[test]
    fn study_presets_have_their_real_tool_variants() {
        let native = load_preset("desktop-2009", &Overrides::default()).unwrap();
        assert!(matches!(kind_of(&native, "bonnie"), WorkloadKind::Bonnie(_)));
        let d = load_preset("desktop-2009", &real(None)).unwrap();
        match kind_of(&d, "bonnie") {
            WorkloadKind::BonniePp(b) => {
                assert_eq!((b.size, b.files), (Bytes(2000 * Bytes::MIB), 0));
            }
            other => panic!("{other:?}"),
        }
        // The other workloads stay, in their order.
        let names = |s: &crate::config::Suite| s.workloads.iter().map(|w| w.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&d), names(&native));
        // --scale scales the real sizes as it scales the native ones.
        let small = load_preset("desktop-2009", &real(Some(0.1))).unwrap();
        match kind_of(&small, "bonnie") {
            WorkloadKind::BonniePp(b) => assert_eq!(b.size, Bytes(200 * Bytes::MIB)),
            other => panic!("{other:?}"),
        }
        let m = load_preset("mongo-2000", &real(None)).unwrap();
        match kind_of(&m, "bonnie") {
            WorkloadKind::BonniePp(b) => {
                let a = b.args(std::path::Path::new("/d"), false).join(" ");
                assert!(a.contains("-s 10 -n 16 -r 4"), "{a}");
            }
            other => panic!("{other:?}"),
        }
        let e = load_preset("ext4-vs-btrfs-2012", &real(None)).unwrap();
        match kind_of(&e, "fileio") {
            WorkloadKind::SysbenchFileio(f) => {
                assert_eq!(f.mode, FileioMode::Rndrw);
                assert!(f.args("run").contains(&"--file-test-mode=rndrw".to_string()));
            }
            other => panic!("{other:?}"),
        }
    }

    const SUITE: &str = r#"
[suite]
name = "t"
[run]
tools = "TOOLS"
[[fs]]
type = "ext4"
[[workload]]
kind = "fileio"
name = "io"
[[real_workload]]
kind = "sysbench_fileio"
name = "NAME"
time = "2s"
"#;

    fn suite(tools: &str, name: &str) -> Result<crate::config::Suite, String> {
        let text = SUITE.replace("TOOLS", tools).replace("NAME", name);
        load_str(&text, "t.toml", &Overrides::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn the_suite_key_chooses_and_mistakes_are_reported() {
        assert!(matches!(
            kind_of(&suite("real", "io").unwrap(), "io"),
            WorkloadKind::SysbenchFileio(_)
        ));
        assert!(matches!(
            kind_of(&suite("native", "io").unwrap(), "io"),
            WorkloadKind::Fileio(_)
        ));
        let e = suite("both", "io").unwrap_err();
        assert!(e.contains("t.toml:5:") && e.contains("use \"native\""), "{e}");
        let e = suite("native", "other").unwrap_err();
        assert!(e.contains("real_workload `other` names no [[workload]]"), "{e}");
        // --tools overrides the file's key.
        let text = SUITE.replace("TOOLS", "real").replace("NAME", "io");
        let o = Overrides {
            tools: Some(Tools::Native),
            ..Overrides::default()
        };
        assert!(matches!(
            kind_of(&load_str(&text, "t.toml", &o).unwrap(), "io"),
            WorkloadKind::Fileio(_)
        ));
        let e = load_preset("quick", &real(None)).unwrap_err().to_string();
        assert!(e.contains("no [[real_workload]]"), "{e}");
    }
}
