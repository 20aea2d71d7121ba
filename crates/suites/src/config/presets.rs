//! The built-in presets: TOML files under `presets/` at the repository root, embedded in the
//! binary. They are data, loaded by exactly the same code as a user's suite file; to add one,
//! drop `presets/NAME.toml` next to the others and add a line here.

/// `(name, text)` of every built-in preset, in the order `fsbench list presets` shows them.
pub(crate) const PRESETS: &[(&str, &str)] = &[
    ("quick", include_str!("../../../../presets/quick.toml")),
    ("mongo-2000", include_str!("../../../../presets/mongo-2000.toml")),
    ("desktop-2009", include_str!("../../../../presets/desktop-2009.toml")),
    (
        "ext4-vs-btrfs-2012",
        include_str!("../../../../presets/ext4-vs-btrfs-2012.toml"),
    ),
    (
        "zfs-vs-native-2016",
        include_str!("../../../../presets/zfs-vs-native-2016.toml"),
    ),
    ("hugefile-2022", include_str!("../../../../presets/hugefile-2022.toml")),
    ("powercut-2000", include_str!("../../../../presets/powercut-2000.toml")),
    ("latency", include_str!("../../../../presets/latency.toml")),
    (
        "repair-scaling",
        include_str!("../../../../presets/repair-scaling.toml"),
    ),
    ("aging", include_str!("../../../../presets/aging.toml")),
    ("modern-2026", include_str!("../../../../presets/modern-2026.toml")),
    ("images", include_str!("../../../../presets/images.toml")),
    ("durability", include_str!("../../../../presets/durability.toml")),
    (
        "crash-consistency",
        include_str!("../../../../presets/crash-consistency.toml"),
    ),
    ("replay", include_str!("../../../../presets/replay.toml")),
];

#[cfg(test)]
mod tests {
    use crate::config::{load_preset, Overrides};
    use crate::engine::workloads::oltp::{DbEngine, OltpMode};
    use crate::engine::WorkloadKind;
    use crate::units::{Bytes, Dur};
    use std::time::Duration;

    /// The 2012 study's preset as the oltp workload sees it (moved here from the engine, which
    /// cannot read a preset: suites sit above it).
    #[test]
    fn the_2012_study_preset_scales_and_counts_the_third_run() {
        let full = load_preset("ext4-vs-btrfs-2012", &Overrides::default()).expect("preset");
        assert_eq!((full.policy.warmup, full.policy.repeats, full.policy.trim), (2, 3, 0));
        let names: Vec<&str> = full.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["ext4", "btrfs", "btrfs-lzo"]);
        assert_eq!(full.variants[2].mount_opts, ["compress=lzo"]);
        let small = load_preset(
            "ext4-vs-btrfs-2012",
            &Overrides {
                scale: Some(0.02),
                ..Overrides::default()
            },
        )
        .expect("scaled preset");
        let kinds: Vec<&WorkloadKind> = small.workloads.iter().map(|w| &w.kind).collect();
        match kinds[..] {
            [WorkloadKind::Fileio(f), WorkloadKind::Oltp(m), WorkloadKind::Oltp(s)] => {
                assert_eq!(f.total_size, Bytes((15.0 * Bytes::GIB as f64 * 0.02) as u64));
                assert_eq!(f.time, Dur(Duration::from_secs(6)));
                assert_eq!(
                    (m.engine, m.mode, m.rows, m.threads),
                    (DbEngine::Mariadb, OltpMode::ReadOnly, 20_000, 8)
                );
                assert_eq!(
                    m.time,
                    Dur(Duration::from_secs(2)),
                    "60 s x 0.02 is raised to the minimum"
                );
                assert_eq!((s.engine, s.mode), (DbEngine::Sqlite, OltpMode::ReadWrite));
            }
            _ => panic!("unexpected workloads {kinds:?}"),
        }
    }
}
