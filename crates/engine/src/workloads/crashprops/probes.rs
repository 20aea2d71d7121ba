//! The persistence-property probes: one tiny syscall sequence per property of Pillai et al.
//! (OSDI '14, §4, Table 1), and the check that decides whether a recovered crash state
//! violates it.
//!
//! Each probe has a setup (made durable before the mark), the operations under test (with no
//! fsync between them; the workload's final `syncfs` puts them all in the write log) and a
//! checker of the probe's folder as a crash state recovered it. Content: the old data is `A`
//! bytes, the new `B` (a second append `C`), so every recovered byte says where it came from.
//!
//! - An **atomicity** property holds in a state where the file (or the pair of names) is
//!   wholly in its old or wholly in its new version; anything else (a mix, zeros or garbage
//!   where new data should be, another length, a lost name) violates it.
//! - An **ordering** property "X → later op" is violated by a state in which the later
//!   operation's effect is visible (the file `later/g` exists) and X's is not wholly visible.
//!   The later operation is a `creat` in another folder (`later/`), so no shared directory
//!   block orders the two for free.
//!
//! Invariants: a checker that finds the probe's folder or a file of its setup gone reports a
//! violation (the setup was durable before the mark); every checker has a unit test with a
//! hand-made violating state.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Old content byte.
pub const OLD: u8 = b'A';
/// New content byte.
pub const NEW: u8 = b'B';
/// The second append's byte (append → append).
pub const NEW2: u8 = b'C';
/// The folder of the later operation, and its file.
const LATER: &str = "later/g";

/// Which kind of property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The operation is all or nothing.
    Atomicity,
    /// The first operation persists before the later one.
    Ordering,
}

/// What a crash state shows for one property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed by the property.
    Holds,
    /// Forbidden by it: what was recovered.
    Violated(String),
}

/// One probe.
pub struct Probe {
    /// Property name (report row).
    pub name: &'static str,
    /// Atomicity or ordering.
    pub kind: Kind,
    /// The sequence, as the report prints it (setup; operations under test).
    pub ops: &'static str,
    /// Makes the setup's files in the (empty, existing) folder.
    pub setup: fn(&Path) -> std::io::Result<()>,
    /// Runs the operations under test, no fsync.
    pub act: fn(&Path) -> std::io::Result<()>,
    /// Judges the recovered folder.
    pub check: fn(&Path) -> Verdict,
}

fn fill(n: usize, b: u8) -> Vec<u8> {
    vec![b; n]
}

fn put(dir: &Path, name: &str, data: &[u8]) -> std::io::Result<()> {
    std::fs::write(dir.join(name), data)
}

fn with_later(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dir.join("later"))
}

fn append(dir: &Path, name: &str, data: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(name))?
        .write_all(data)
}

fn overwrite(dir: &Path, name: &str, at: u64, data: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(name))?
        .write_all_at(data, at)
}

fn later_op(dir: &Path) -> std::io::Result<()> {
    std::fs::File::create(dir.join(LATER)).map(|_| ())
}

/// Run-length shape of a file's bytes: `4096 B: 512×B 3584×A`, `0` for zero bytes and `?`
/// for any other byte; `missing` when it cannot be read.
pub fn shape(path: &Path) -> String {
    let Ok(b) = std::fs::read(path) else {
        return "missing".into();
    };
    let sym = |x: u8| match x {
        OLD | NEW | NEW2 => x as char,
        0 => '0',
        _ => '?',
    };
    let mut runs: Vec<(usize, char)> = Vec::new();
    for x in &b {
        match runs.last_mut() {
            Some((n, c)) if *c == sym(*x) => *n += 1,
            _ => runs.push((1, sym(*x))),
        }
    }
    let parts: Vec<String> = runs.iter().map(|(n, c)| format!("{n}×{c}")).collect();
    format!("{} B: {}", b.len(), parts.join(" "))
}

/// Whether `path` holds exactly the runs `want` (bytes, byte).
fn is(path: &Path, want: &[(usize, u8)]) -> bool {
    let expect: Vec<u8> = want.iter().flat_map(|&(n, b)| fill(n, b)).collect();
    std::fs::read(path).is_ok_and(|b| b == expect)
}

/// Atomicity of one file: old or new, else a violation with the file's shape.
fn one_of(dir: &Path, name: &str, old: &[(usize, u8)], new: &[(usize, u8)]) -> Verdict {
    let p = dir.join(name);
    if is(&p, old) || is(&p, new) {
        Verdict::Holds
    } else {
        Verdict::Violated(format!("{name}: {}", shape(&p)))
    }
}

/// Ordering: when `later/g` exists, `name` must be `first`.
fn ordered(dir: &Path, name: &str, first: &[(usize, u8)]) -> Verdict {
    let p = dir.join(name);
    if !dir.join(LATER).exists() || is(&p, first) {
        return Verdict::Holds;
    }
    Verdict::Violated(format!("{LATER} exists; {name}: {}", shape(&p)))
}

const K4: usize = 4096;
const K64: usize = 65536;

/// Every probe, in the report's row order.
pub const TABLE: &[Probe] = &[
    Probe {
        name: "atomic-sector-overwrite",
        kind: Kind::Atomicity,
        ops: "f = 4 KiB A; pwrite(f, 512 B of B, 0)",
        setup: |d| put(d, "f", &fill(K4, OLD)),
        act: |d| overwrite(d, "f", 0, &fill(512, NEW)),
        check: |d| one_of(d, "f", &[(K4, OLD)], &[(512, NEW), (K4 - 512, OLD)]),
    },
    Probe {
        name: "atomic-sector-append",
        kind: Kind::Atomicity,
        ops: "f = 4 KiB A; append(f, 512 B of B)",
        setup: |d| put(d, "f", &fill(K4, OLD)),
        act: |d| append(d, "f", &fill(512, NEW)),
        check: |d| one_of(d, "f", &[(K4, OLD)], &[(K4, OLD), (512, NEW)]),
    },
    Probe {
        name: "atomic-block-overwrite",
        kind: Kind::Atomicity,
        ops: "f = 8 KiB A; pwrite(f, 4 KiB of B, 4096)",
        setup: |d| put(d, "f", &fill(2 * K4, OLD)),
        act: |d| overwrite(d, "f", K4 as u64, &fill(K4, NEW)),
        check: |d| one_of(d, "f", &[(2 * K4, OLD)], &[(K4, OLD), (K4, NEW)]),
    },
    Probe {
        name: "atomic-block-append",
        kind: Kind::Atomicity,
        ops: "f = 4 KiB A; append(f, 4 KiB of B)",
        setup: |d| put(d, "f", &fill(K4, OLD)),
        act: |d| append(d, "f", &fill(K4, NEW)),
        check: |d| one_of(d, "f", &[(K4, OLD)], &[(K4, OLD), (K4, NEW)]),
    },
    Probe {
        name: "atomic-multiblock-append",
        kind: Kind::Atomicity,
        ops: "f = 4 KiB A; append(f, 64 KiB of B)",
        setup: |d| put(d, "f", &fill(K4, OLD)),
        act: |d| append(d, "f", &fill(K64, NEW)),
        check: |d| one_of(d, "f", &[(K4, OLD)], &[(K4, OLD), (K64, NEW)]),
    },
    Probe {
        name: "atomic-multiblock-write",
        kind: Kind::Atomicity,
        ops: "f = 64 KiB A; pwrite(f, 64 KiB of B, 0)",
        setup: |d| put(d, "f", &fill(K64, OLD)),
        act: |d| overwrite(d, "f", 0, &fill(K64, NEW)),
        check: |d| one_of(d, "f", &[(K64, OLD)], &[(K64, NEW)]),
    },
    Probe {
        name: "atomic-rename",
        kind: Kind::Atomicity,
        ops: "a = 4 KiB A, b = 4 KiB B; rename(b, a)",
        setup: |d| put(d, "a", &fill(K4, OLD)).and_then(|_| put(d, "b", &fill(K4, NEW))),
        act: |d| std::fs::rename(d.join("b"), d.join("a")),
        check: check_rename,
    },
    Probe {
        name: "order-overwrite",
        kind: Kind::Ordering,
        ops: "f = 4 KiB A; pwrite(f, 4 KiB of B, 0); creat(later/g)",
        setup: |d| put(d, "f", &fill(K4, OLD)).and_then(|_| with_later(d)),
        act: |d| overwrite(d, "f", 0, &fill(K4, NEW)).and_then(|_| later_op(d)),
        check: |d| ordered(d, "f", &[(K4, NEW)]),
    },
    Probe {
        name: "order-append",
        kind: Kind::Ordering,
        ops: "f = 4 KiB A; append(f, 4 KiB of B); creat(later/g)",
        setup: |d| put(d, "f", &fill(K4, OLD)).and_then(|_| with_later(d)),
        act: |d| append(d, "f", &fill(K4, NEW)).and_then(|_| later_op(d)),
        check: |d| ordered(d, "f", &[(K4, OLD), (K4, NEW)]),
    },
    Probe {
        name: "order-append-rename",
        kind: Kind::Ordering,
        ops: "a = 4 KiB A; creat(t); append(t, 4 KiB of B); rename(t, a); creat(later/g)",
        setup: |d| put(d, "a", &fill(K4, OLD)).and_then(|_| with_later(d)),
        act: |d| {
            put(d, "t", &fill(K4, NEW))
                .and_then(|_| std::fs::rename(d.join("t"), d.join("a")))
                .and_then(|_| later_op(d))
        },
        check: |d| ordered(d, "a", &[(K4, NEW)]),
    },
    Probe {
        name: "order-trunc-append",
        kind: Kind::Ordering,
        ops: "f = 4 KiB A; open(f, O_TRUNC); append(f, 4 KiB of B); creat(later/g)",
        setup: |d| put(d, "f", &fill(K4, OLD)).and_then(|_| with_later(d)),
        act: |d| put(d, "f", &fill(K4, NEW)).and_then(|_| later_op(d)),
        check: |d| ordered(d, "f", &[(K4, NEW)]),
    },
    Probe {
        name: "order-append-append",
        kind: Kind::Ordering,
        ops: "f = 4 KiB A; append(f, 4 KiB of B); append(f, 4 KiB of C)",
        setup: |d| put(d, "f", &fill(K4, OLD)),
        act: |d| append(d, "f", &fill(K4, NEW)).and_then(|_| append(d, "f", &fill(K4, NEW2))),
        check: check_append_append,
    },
    Probe {
        name: "order-dirop",
        kind: Kind::Ordering,
        ops: "a = 4 KiB A; rename(a, b); creat(later/g)",
        setup: |d| put(d, "a", &fill(K4, OLD)).and_then(|_| with_later(d)),
        act: |d| std::fs::rename(d.join("a"), d.join("b")).and_then(|_| later_op(d)),
        check: |d| {
            if !d.join(LATER).exists() || (is(&d.join("b"), &[(K4, OLD)]) && !d.join("a").exists()) {
                return Verdict::Holds;
            }
            Verdict::Violated(format!(
                "{LATER} exists; a: {}; b: {}",
                shape(&d.join("a")),
                shape(&d.join("b"))
            ))
        },
    },
];

/// rename(b, a): (a old, b there) or (a new, b gone).
fn check_rename(d: &Path) -> Verdict {
    let (a, b) = (d.join("a"), d.join("b"));
    let before = is(&a, &[(K4, OLD)]) && is(&b, &[(K4, NEW)]);
    let after = is(&a, &[(K4, NEW)]) && !b.exists();
    if before || after {
        return Verdict::Holds;
    }
    Verdict::Violated(format!("a: {}; b: {}", shape(&a), shape(&b)))
}

/// The second append visible (its C block whole at 8192) without the first (B at 4096).
fn check_append_append(d: &Path) -> Verdict {
    let p = d.join("f");
    let Ok(b) = std::fs::read(&p) else {
        return Verdict::Violated("f: missing".into());
    };
    let second = b.len() >= 3 * K4 && b[2 * K4..3 * K4].iter().all(|x| *x == NEW2);
    let first = b.len() >= 2 * K4 && b[K4..2 * K4].iter().all(|x| *x == NEW);
    let setup = b.len() >= K4 && b[..K4].iter().all(|x| *x == OLD);
    if setup && (!second || first) {
        return Verdict::Holds;
    }
    Verdict::Violated(format!("f: {}", shape(&p)))
}

/// The probe named `name`.
pub fn by_name(name: &str) -> Option<&'static Probe> {
    TABLE.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `p`'s setup in a fresh folder, then `state` (a hand-made crash state), and checks.
    fn judge(p: &Probe, state: impl FnOnce(&Path)) -> Verdict {
        let t = tempfile::tempdir().unwrap();
        (p.setup)(t.path()).unwrap();
        state(t.path());
        (p.check)(t.path())
    }

    fn w(d: &Path, name: &str, runs: &[(usize, u8)]) {
        let b: Vec<u8> = runs.iter().flat_map(|&(n, x)| fill(n, x)).collect();
        std::fs::write(d.join(name), b).unwrap();
    }

    #[test]
    fn every_probe_holds_before_and_after_its_operations() {
        for p in TABLE {
            assert_eq!(judge(p, |_| {}), Verdict::Holds, "{}: the setup alone", p.name);
            assert_eq!(
                judge(p, |d| (p.act)(d).unwrap()),
                Verdict::Holds,
                "{}: all done",
                p.name
            );
        }
    }

    /// A hand-made crash state: what it does to the probe's folder after the setup.
    type HandMade = Box<dyn Fn(&Path)>;

    #[test]
    fn every_checker_catches_a_hand_made_violating_state() {
        // One violating state per probe, in table order: a check that cannot fail is a defect.
        let torn: Vec<(&str, HandMade)> = vec![
            (
                "atomic-sector-overwrite",
                Box::new(|d| w(d, "f", &[(256, NEW), (3840, OLD)])),
            ),
            ("atomic-sector-append", Box::new(|d| w(d, "f", &[(K4, OLD), (512, 0)]))),
            (
                "atomic-block-overwrite",
                Box::new(|d| w(d, "f", &[(K4, OLD), (512, NEW), (3584, OLD)])),
            ),
            ("atomic-block-append", Box::new(|d| w(d, "f", &[(K4, OLD), (K4, 0)]))),
            (
                "atomic-multiblock-append",
                Box::new(|d| w(d, "f", &[(K4, OLD), (K4 * 3, NEW)])),
            ),
            (
                "atomic-multiblock-write",
                Box::new(|d| w(d, "f", &[(K4, NEW), (K64 - K4, OLD)])),
            ),
            (
                "atomic-rename",
                Box::new(|d| std::fs::remove_file(d.join("a")).unwrap()),
            ),
            ("order-overwrite", Box::new(|d| later_op(d).unwrap())),
            (
                "order-append",
                Box::new(|d| {
                    w(d, "f", &[(K4, OLD), (K4, 0)]);
                    later_op(d).unwrap()
                }),
            ),
            (
                "order-append-rename",
                Box::new(|d| {
                    w(d, "a", &[]);
                    later_op(d).unwrap()
                }),
            ),
            (
                "order-trunc-append",
                Box::new(|d| {
                    w(d, "f", &[]);
                    later_op(d).unwrap()
                }),
            ),
            (
                "order-append-append",
                Box::new(|d| w(d, "f", &[(K4, OLD), (K4, 0), (K4, NEW2)])),
            ),
            ("order-dirop", Box::new(|d| later_op(d).unwrap())),
        ];
        assert_eq!(torn.len(), TABLE.len());
        for ((name, state), p) in torn.into_iter().zip(TABLE) {
            assert_eq!(name, p.name);
            let v = judge(p, |d| state(d));
            assert!(matches!(v, Verdict::Violated(_)), "{name}: {v:?}");
        }
        // An ordering probe without the later op's effect holds whatever the first op did.
        let v = judge(by_name("order-append").unwrap(), |d| w(d, "f", &[(K4, OLD), (K4, 0)]));
        assert_eq!(v, Verdict::Holds);
    }

    #[test]
    fn the_shape_of_a_file_names_its_runs() {
        let t = tempfile::tempdir().unwrap();
        w(t.path(), "f", &[(3, OLD), (2, 0), (1, NEW)]);
        std::fs::write(t.path().join("g"), [9u8]).unwrap();
        assert_eq!(shape(&t.path().join("f")), "6 B: 3×A 2×0 1×B");
        assert_eq!(shape(&t.path().join("g")), "1 B: 1×?");
        assert_eq!(shape(&t.path().join("x")), "missing");
    }
}
