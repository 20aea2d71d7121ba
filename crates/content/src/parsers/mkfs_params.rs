//! Parsers of the tools that read a filesystem's creation parameters back from its superblock,
//! and the map from the mkfs options a user asked for to the same keys.
//!
//! The tools (fixtures captured on this machine in `tests/fixtures/<tool>/`):
//! - [`dumpe2fs`]: `dumpe2fs -h DEV` (e2fsprogs 1.47) for ext2/3/4: `Label:   value` lines.
//! - [`xfs_info`]: `xfs_info MOUNTPOINT` (xfsprogs 6.1): sections `meta-data`, `data`,
//!   `naming`, `log`, `realtime`, each with `key=value` tokens.
//! - [`btrfs_super`]: `btrfs inspect-internal dump-super DEV` (btrfs-progs 6.2): `key\tvalue`
//!   lines, flag sets continued on indented `( A | B )` lines.
//! - [`zfs_get`]: `zfs get -Hp -o property,value P1,P2 DATASET` (zfs-fuse 0.7, OpenZFS):
//!   `property\tvalue` lines; [`compressratio`] reads its `1.93x` (zfs-fuse) or `1.93`
//!   (OpenZFS with `-p`), [`zfs_bytes`] an exact byte count (`referenced`).
//!
//! Every parser returns a small [`Params`] map with the keys below, the same name for the same
//! notion across filesystems: `block_size`, `inode_size`, `sector_size`, `node_size` in bytes;
//! the rest in the tool's own words. A key the filesystem must have that is missing is a
//! [`ParseError`], so a changed output format is reported rather than read as absent.
//!
//! [`asked`] maps the mkfs options a variant gave to those keys (ext* `-b N` / `-I N`, xfs
//! `-b size=N` / `-i size=N` / `-s size=N`, btrfs `-n N` / `--nodesize N` / `-s N` /
//! `--sectorsize N`), so the caller can compare what was asked with what was read back.

use super::ParseError;
use std::collections::BTreeMap;

/// Parameters read back from a filesystem: key → value, ordered by key.
pub type Params = BTreeMap<String, String>;

/// dumpe2fs's labels → fsbench's keys; `true` when every ext filesystem has the label.
const DUMPE2FS: &[(&str, &str, bool)] = &[
    ("Block size", "block_size", true),
    ("Inode size", "inode_size", true),
    ("Inode count", "inode_count", true),
    ("Filesystem features", "features", true),
    ("Total journal size", "journal_size", false),
    ("Journal features", "journal_features", false),
    ("Checksum type", "checksum_type", false),
    ("Flex block group size", "flex_bg_size", false),
];

/// The parameters of `dumpe2fs -h` output: block and inode size (bytes), inode count, features,
/// and where present the journal's size and features, the metadata checksum type and the flex
/// group size.
pub fn dumpe2fs(text: &str) -> Result<Params, ParseError> {
    let mut out = Params::new();
    for line in text.lines() {
        let Some((label, value)) = line.split_once(':') else {
            continue;
        };
        if let Some((_, key, _)) = DUMPE2FS.iter().find(|(l, _, _)| *l == label.trim()) {
            out.entry(key.to_string())
                .or_insert_with(|| value.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    for (label, key, required) in DUMPE2FS {
        if *required && !out.contains_key(*key) {
            return Err(ParseError::missing("dumpe2fs", label, text));
        }
    }
    number_field("dumpe2fs", "Block size", &out, "block_size")?;
    number_field("dumpe2fs", "Inode size", &out, "inode_size")?;
    Ok(out)
}

/// xfs_info's `section.key` → fsbench's keys; `true` when every XFS has it.
const XFS_INFO: &[(&str, &str, bool)] = &[
    ("data.bsize", "block_size", true),
    ("meta-data.isize", "inode_size", true),
    ("meta-data.sectsz", "sector_size", true),
    ("meta-data.agcount", "agcount", true),
    ("meta-data.agsize", "agsize", false),
    ("meta-data.crc", "crc", false),
    ("meta-data.finobt", "finobt", false),
    ("meta-data.reflink", "reflink", false),
    ("meta-data.rmapbt", "rmapbt", false),
    ("meta-data.bigtime", "bigtime", false),
    ("naming.ftype", "ftype", false),
    ("log", "log", true),
    ("log.bsize", "log_block_size", false),
    ("log.blocks", "log_blocks", false),
    ("log.version", "log_version", false),
];

/// The parameters of `xfs_info` output: data block size, inode and sector size (bytes),
/// allocation groups, the metadata features (`crc`, `finobt`, `reflink`, `rmapbt`, `bigtime`,
/// `ftype`: 0/1), and the log (`internal log` or the external device, its block size, blocks
/// and version).
pub fn xfs_info(text: &str) -> Result<Params, ParseError> {
    // Every `section.key=value` token, the section carried over continuation lines (`  =`).
    let mut all = Params::new();
    let mut section = String::new();
    for line in text.lines() {
        let Some((head, rest)) = line.split_once('=') else {
            continue;
        };
        if !head.trim().is_empty() {
            section = head.trim().to_string();
            // The section's own value: `=internal log           bsize=4096` → `internal log`.
            let own: Vec<&str> = rest.split_whitespace().take_while(|t| !t.contains('=')).collect();
            if !own.is_empty() {
                all.entry(section.clone()).or_insert_with(|| own.join(" "));
            }
        }
        for token in rest.split(|c: char| c.is_whitespace() || c == ',') {
            if let Some((k, v)) = token.split_once('=') {
                if !k.is_empty() && !v.is_empty() {
                    all.entry(format!("{section}.{k}")).or_insert_with(|| v.to_string());
                }
            }
        }
    }
    let mut out = Params::new();
    for (from, key, required) in XFS_INFO {
        match all.get(*from) {
            Some(v) => {
                out.insert(key.to_string(), v.clone());
            }
            None if *required => return Err(ParseError::missing("xfs_info", from, text)),
            None => {}
        }
    }
    number_field("xfs_info", "data.bsize", &out, "block_size")?;
    number_field("xfs_info", "meta-data.isize", &out, "inode_size")?;
    Ok(out)
}

/// dump-super's keys → fsbench's keys; `true` when every btrfs superblock has it.
const BTRFS_SUPER: &[(&str, &str, bool)] = &[
    ("sectorsize", "sector_size", true),
    ("nodesize", "node_size", true),
    ("csum_type", "csum_type", true),
    ("incompat_flags", "incompat_flags", true),
    ("compat_ro_flags", "compat_ro_flags", false),
    ("num_devices", "num_devices", false),
];

/// The parameters of `btrfs inspect-internal dump-super` output: sector and node size
/// (bytes), the checksum algorithm (`crc32c`), the incompat and compat-ro feature flags by
/// name (`MIXED_BACKREF|NO_HOLES|…`, or the hex value when none is named), the device count.
pub fn btrfs_super(text: &str) -> Result<Params, ParseError> {
    let mut all: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.starts_with(char::is_whitespace) {
            // `\t\t\t( MIXED_BACKREF |` — the flag names of the key before.
            if let Some((_, v)) = all.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
        } else if let Some((k, v)) = line.split_once('\t') {
            all.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut out = Params::new();
    for (from, key, required) in BTRFS_SUPER {
        let Some((_, raw)) = all.iter().find(|(k, _)| k.as_str() == *from) else {
            if *required {
                return Err(ParseError::missing("btrfs dump-super", from, text));
            }
            continue;
        };
        let value = match *from {
            // `0 (crc32c)` → `crc32c`.
            "csum_type" => inside_parens(raw).unwrap_or(raw).trim().to_string(),
            // `0x341 ( MIXED_BACKREF | … )` → `MIXED_BACKREF|…`; `0x0` stays.
            "incompat_flags" | "compat_ro_flags" => match inside_parens(raw) {
                Some(names) => names.split('|').map(str::trim).collect::<Vec<_>>().join("|"),
                None => raw.clone(),
            },
            _ => raw.clone(),
        };
        out.insert(key.to_string(), value);
    }
    number_field("btrfs dump-super", "sectorsize", &out, "sector_size")?;
    number_field("btrfs dump-super", "nodesize", &out, "node_size")?;
    Ok(out)
}

/// The dataset properties fsbench reads back on zfs (zfs-fuse 0.7 and OpenZFS both have them).
pub const ZFS_PROPERTIES: &[&str] = &["compression", "recordsize", "checksum", "atime", "copies", "dedup"];

/// `zfs get -Hp -o property,value …` output as property → value; `compressratio`, when asked
/// for, is kept as printed (see [`compressratio`]). An empty output is a [`ParseError`].
pub fn zfs_get(text: &str) -> Result<Params, ParseError> {
    let out: Params = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    if out.is_empty() {
        return Err(ParseError::missing("zfs get", "property\tvalue", text));
    }
    Ok(out)
}

/// A `compressratio` value as a number: `27.12x` (zfs-fuse) or `27.12` (OpenZFS `-p`).
pub fn compressratio(value: &str) -> Result<f64, ParseError> {
    super::finite_number("zfs get", "compressratio", value.trim().trim_end_matches('x'))
}

/// A byte count of `zfs get -p` (`referenced`, `used`: exact bytes).
pub fn zfs_bytes(value: &str) -> Result<u64, ParseError> {
    value.trim().parse().map_err(|_| ParseError::BadValue {
        tool: "zfs get",
        field: "referenced",
        value: value.to_string(),
    })
}

/// `(inside)` of the first parenthesis in `s`.
fn inside_parens(s: &str) -> Option<&str> {
    let (_, rest) = s.split_once('(')?;
    Some(rest.split_once(')').map_or(rest, |(inner, _)| inner))
}

/// Checks that `out[key]` is a number (the value `label` of `tool`'s output).
fn number_field(tool: &'static str, label: &'static str, out: &Params, key: &str) -> Result<(), ParseError> {
    let v = out.get(key).map(String::as_str).unwrap_or("");
    v.parse::<u64>().map(|_| ()).map_err(|_| ParseError::BadValue {
        tool,
        field: label,
        value: v.to_string(),
    })
}

/// The keys of [`Params`] that a variant's mkfs arguments ask for, with the asked value in the
/// read-back's units (bytes): ext2/3/4 `-b N`, `-I N`; xfs `-b size=N`, `-i size=N`,
/// `-s size=N` (`4k` allowed); btrfs `-n N`, `--nodesize N`/`=N`, `-s N`, `--sectorsize N`/`=N`
/// (`16k` allowed). The last of a repeated option wins, as in the tools; a value that is no
/// size is left out (mkfs refused it already). Other types ask for nothing here.
pub fn asked(fs_type: &str, mkfs_args: &[String]) -> Params {
    let mut out = Params::new();
    let mut put = |key: &str, v: &str| {
        if let Some(n) = size_bytes(v) {
            out.insert(key.to_string(), n.to_string());
        }
    };
    let args: Vec<&str> = mkfs_args.iter().map(String::as_str).collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        let next = args.get(i + 1).copied().unwrap_or("");
        // `-b 1024` takes the next argument; `-b1024` and `--nodesize=16k` carry it.
        let (flag, value, used_next) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, v, false),
            _ if a.starts_with("--") => (a, next, true),
            _ if a.len() > 2 && a.starts_with('-') && a.is_char_boundary(2) => (&a[..2], &a[2..], false),
            _ => (a, next, true),
        };
        let mut matched = true;
        match (fs_type, flag) {
            ("ext2" | "ext3" | "ext4", "-b") => put("block_size", value),
            ("ext2" | "ext3" | "ext4", "-I") => put("inode_size", value),
            ("xfs", "-b" | "-i" | "-s") => {
                let key = match flag {
                    "-b" => "block_size",
                    "-i" => "inode_size",
                    _ => "sector_size",
                };
                for sub in value.split(',') {
                    if let Some(v) = sub.strip_prefix("size=") {
                        put(key, v);
                    }
                }
            }
            ("btrfs", "-n" | "--nodesize") => put("node_size", value),
            ("btrfs", "-s" | "--sectorsize") => put("sector_size", value),
            _ => matched = false,
        }
        i += if matched && used_next { 2 } else { 1 };
    }
    out
}

/// `4096`, `4k`, `16K`, `1m` → bytes (binary units, as mkfs.xfs and mkfs.btrfs read them).
fn size_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mult) = match v.chars().last()?.to_ascii_lowercase() {
        'k' => (&v[..v.len() - 1], 1u64 << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> String {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures")
            .join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn dumpe2fs_of_a_1k_block_ext4_and_of_an_ext2_read_back() {
        // Made with `mkfs.ext4 -b 1024 -I 512`, read while mounted.
        let p = dumpe2fs(&fixture("dumpe2fs/1.47.0-ext4-b1024-I512-mounted.txt")).expect("parses");
        assert_eq!(p["block_size"], "1024");
        assert_eq!(p["inode_size"], "512", "the label is followed by a tab in this output");
        assert_eq!(p["inode_count"], "65536");
        assert!(p["features"].starts_with("has_journal ext_attr"), "{p:?}");
        assert_eq!(p["journal_size"], "8M");
        assert_eq!(p["journal_features"], "journal_64bit journal_checksum_v3");
        assert_eq!(p["checksum_type"], "crc32c");
        let ext2 = dumpe2fs(&fixture("dumpe2fs/1.47.0-ext2-default.txt")).expect("parses");
        assert_eq!(ext2["block_size"], "1024");
        assert_eq!(ext2["inode_size"], "256");
        assert!(!ext2.contains_key("journal_size"), "ext2 has no journal: {ext2:?}");
        assert!(!ext2["features"].contains("has_journal"));
        // The parser can fail: no block size, or an unreadable one.
        let text = fixture("dumpe2fs/1.47.0-ext2-default.txt");
        let cut: String = text
            .lines()
            .filter(|l| !l.starts_with("Block size"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(matches!(
            dumpe2fs(&cut),
            Err(ParseError::Missing {
                field: "Block size",
                ..
            })
        ));
        let bad = text.replace("Block size:               1024", "Block size:               big");
        assert!(matches!(dumpe2fs(&bad), Err(ParseError::BadValue { .. })), "{bad}");
        assert!(dumpe2fs("mke2fs: no such file\n").is_err());
    }

    #[test]
    fn xfs_info_of_a_2k_block_xfs_reads_back() {
        // Made with `mkfs.xfs -b size=2048`, `xfs_info MOUNTPOINT`.
        let p = xfs_info(&fixture("xfs_info/6.1.0-b2048-mounted.txt")).expect("parses");
        assert_eq!(
            p["block_size"], "2048",
            "the data section's bsize, not naming's 4096: {p:?}"
        );
        assert_eq!(p["inode_size"], "512");
        assert_eq!(p["sector_size"], "512");
        assert_eq!(p["agcount"], "4");
        assert_eq!(p["agsize"], "65536");
        assert_eq!((p["crc"].as_str(), p["reflink"].as_str()), ("1", "1"));
        assert_eq!(p["rmapbt"], "0");
        assert_eq!(p["ftype"], "1");
        assert_eq!(p["log"], "internal log");
        assert_eq!(p["log_block_size"], "2048");
        assert_eq!(p["log_blocks"], "32768");
        assert_eq!(p["log_version"], "2");
        let broken = fixture("xfs_info/6.1.0-b2048-mounted.txt").replace("data     =", "dota     =");
        assert!(matches!(
            xfs_info(&broken),
            Err(ParseError::Missing {
                field: "data.bsize",
                ..
            })
        ));
    }

    #[test]
    fn btrfs_dump_super_of_a_32k_node_btrfs_reads_back() {
        // Made with `mkfs.btrfs -n 32768`.
        let p = btrfs_super(&fixture("btrfs_dump_super/6.2-n32768-mounted.txt")).expect("parses");
        assert_eq!(p["node_size"], "32768");
        assert_eq!(p["sector_size"], "4096");
        assert_eq!(p["csum_type"], "crc32c");
        assert_eq!(
            p["incompat_flags"],
            "MIXED_BACKREF|EXTENDED_IREF|SKINNY_METADATA|NO_HOLES"
        );
        assert_eq!(p["compat_ro_flags"], "FREE_SPACE_TREE|FREE_SPACE_TREE_VALID");
        assert_eq!(p["num_devices"], "1");
        let broken = fixture("btrfs_dump_super/6.2-n32768-mounted.txt").replace("nodesize\t", "nodes1ze\t");
        assert!(matches!(
            btrfs_super(&broken),
            Err(ParseError::Missing { field: "nodesize", .. })
        ));
    }

    #[test]
    fn zfs_get_and_its_compressratio_read_back() {
        // `zfs get -Hp -o property,value compressratio,compression,recordsize,checksum,atime`
        // on a zfs-fuse dataset with compression=lzjb holding 20 MB of one repeated letter.
        let p = zfs_get(&fixture("zfs_get/zfs-fuse-0.7-lzjb.txt")).expect("parses");
        assert_eq!(p["compression"], "lzjb");
        assert_eq!(p["recordsize"], "131072");
        assert_eq!(p["atime"], "off");
        assert_eq!(compressratio(&p["compressratio"]), Ok(27.12));
        assert_eq!(compressratio("1.93"), Ok(1.93), "OpenZFS -p prints no x");
        assert!(compressratio("-").is_err());
        assert!(zfs_get("cannot open 'x': dataset does not exist\n").is_err());
        let empty = zfs_get(&fixture("zfs_get/zfs-fuse-0.7-lzjb-empty.txt")).expect("parses");
        assert_eq!(zfs_bytes(&empty["referenced"]), Ok(114688));
        assert!(zfs_bytes("112K").is_err(), "without -p the size is rounded: refused");
    }

    #[test]
    fn asked_options_map_to_the_read_back_keys() {
        let a = |t: &str, args: &[&str]| asked(t, &args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let ext = a(
            "ext4",
            &["-F", "-q", "-E", "lazy_itable_init=0", "-b", "1024", "-I", "512"],
        );
        assert_eq!(ext.get("block_size").map(String::as_str), Some("1024"));
        assert_eq!(ext.get("inode_size").map(String::as_str), Some("512"));
        assert_eq!(a("ext4", &["-b4096"])["block_size"], "4096");
        assert!(a("ext4", &["-E", "lazy_itable_init=0", "-q"]).is_empty());
        let xfs = a("xfs", &["-f", "-b", "size=4k", "-i", "size=1024", "-s", "size=4096"]);
        assert_eq!(xfs["block_size"], "4096");
        assert_eq!(xfs["inode_size"], "1024");
        assert_eq!(xfs["sector_size"], "4096");
        assert_eq!(a("btrfs", &["-n", "16k"])["node_size"], "16384");
        assert_eq!(a("btrfs", &["--nodesize=65536"])["node_size"], "65536");
        assert_eq!(
            a("btrfs", &["--nodesize", "32768", "--sectorsize", "4096"])["sector_size"],
            "4096"
        );
        // `-n` means something else to mkfs.ext4 (dry run): nothing asked.
        assert!(a("ext4", &["-n"]).is_empty());
        assert!(a("xfs", &["-n", "size=8192"]).is_empty());
        assert!(a("tmpfs", &["-b", "1024"]).is_empty());
    }
}
