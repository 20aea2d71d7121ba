//! The built-in presets: TOML files under `presets/` at the repository root, embedded in the
//! binary. They are data, loaded by exactly the same code as a user's suite file; to add one,
//! drop `presets/NAME.toml` next to the others and add a line here.

/// `(name, text)` of every built-in preset, in the order `fsbench list presets` shows them.
pub(crate) const PRESETS: &[(&str, &str)] = &[
    ("quick", include_str!("../../presets/quick.toml")),
    ("mongo-2000", include_str!("../../presets/mongo-2000.toml")),
    ("desktop-2009", include_str!("../../presets/desktop-2009.toml")),
    (
        "ext4-vs-btrfs-2012",
        include_str!("../../presets/ext4-vs-btrfs-2012.toml"),
    ),
    (
        "zfs-vs-native-2016",
        include_str!("../../presets/zfs-vs-native-2016.toml"),
    ),
    ("hugefile-2022", include_str!("../../presets/hugefile-2022.toml")),
    ("powercut-2000", include_str!("../../presets/powercut-2000.toml")),
    ("latency", include_str!("../../presets/latency.toml")),
    ("repair-scaling", include_str!("../../presets/repair-scaling.toml")),
    ("aging", include_str!("../../presets/aging.toml")),
    ("modern-2026", include_str!("../../presets/modern-2026.toml")),
    ("images", include_str!("../../presets/images.toml")),
    ("durability", include_str!("../../presets/durability.toml")),
];
