//! Expanding a suite into a plan: cases (variant × workload) and slots (case × repeat) in run
//! order, with the disk space each needs: each case's [`Estimate`] comes from the workload's
//! [`Footprint`] and its filesystem type's row of [`crate::fstype`] (bytes and inodes at the
//! peak, the image that holds both, the scratch space a repeat writes).
//!
//! Invariants: a [`CaseId`] depends only on the normalised variant and workload (not on order,
//! names of other cases, or the machine), so the same case in two sessions has the same id and
//! `compare` and `--resume` can match them. Unavailable variants stay in the plan as cases with a
//! reason and get no slots: they are reported, never silently dropped.

use crate::config::{FsVariant, Order, Suite, WorkloadSpec};
use crate::engine::Unavailable;
use crate::fstype::{Estimate, Footprint, FsType};
use serde::Serialize;

/// Stable identity of a case: 16 hex digits of FNV-1a-64 over the normalised case JSON.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CaseId(pub String);

impl CaseId {
    /// Computes the id of `variant` × `workload`.
    pub fn of(variant: &FsVariant, workload: &WorkloadSpec) -> CaseId {
        let mut text = serde_json::to_string(&(
            &variant.fs_type,
            &variant.mkfs_args,
            &variant.mount_opts,
            &variant.name,
            &workload.name,
            &workload.kind,
        ))
        .expect("case serialises");
        // Appended only when set, so every id made before NoCOW existed stays the same.
        if variant.nocow {
            text.push_str("+nocow");
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        CaseId(format!("{h:016x}"))
    }
}

/// One variant × workload.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    /// Stable id.
    pub id: CaseId,
    /// The filesystem variant.
    pub variant: FsVariant,
    /// The workload.
    pub workload: WorkloadSpec,
    /// `None` if it can run here, else why not.
    pub unavailable: Option<String>,
    /// Size of the loop image (or tmpfs) to create for one repeat, in bytes: the estimate's,
    /// or the variant's `image_size`.
    pub image_bytes: u64,
    /// What the workload holds at its peak, whatever the filesystem.
    #[serde(skip)]
    pub footprint: Footprint,
    /// Bytes and inodes on this variant's type, the image that holds them, and the basis.
    #[serde(skip)]
    pub estimate: Estimate,
}

/// One repeat of one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slot {
    /// Index into [`Plan::cases`].
    pub case: usize,
    /// 0-based repeat index, warm-ups first.
    pub repeat: u32,
    /// A warm-up repeat (stored, excluded from statistics).
    pub warmup: bool,
}

/// The whole run, in order.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// Every case, available or not, variant-major for display.
    pub cases: Vec<Case>,
    /// Slots of available cases in run order.
    pub slots: Vec<Slot>,
    /// Peak scratch space needed at once (one sparse image at a time: what mkfs and the
    /// workload write to it, or the whole `image_size` a variant sets), in bytes.
    pub peak_scratch_bytes: u64,
}

/// The order of round `repeat`'s `len` cases under `seed`: a permutation of `0..len` drawn
/// by a generator seeded from both (the same seed and round give the same order, every round
/// a fresh one). What `interleaved` order runs since issue 26 ([`run_order`] for the planned
/// rounds, the runner's round queue for the adaptive ones).
pub fn round_order(seed: u64, repeat: u32, len: usize) -> Vec<usize> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    // SplitMix-style mixing, so consecutive rounds get unrelated streams.
    let mixed = seed ^ u64::from(repeat).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(mixed);
    let mut order: Vec<usize> = (0..len).collect();
    order.shuffle(&mut rng);
    order
}

/// The indices of `plan`'s slots in the order they run. With `order = "interleaved"` and a
/// seed, every round (the slots of one repeat) runs in the permutation [`round_order`] gives;
/// otherwise, and in `sequential` (no rounds) and `alternating` (verify's ABBA, deliberately
/// fixed) order, the plan's own order. The slots keep their indices (what a sample stores and
/// what other ranks look a slot up by), only the running order changes.
pub fn run_order(plan: &Plan, order: Order, seed: Option<u64>) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..plan.slots.len()).collect();
    let Some(seed) = seed.filter(|_| order == Order::Interleaved) else {
        return indices;
    };
    let mut start = 0;
    while start < indices.len() {
        let repeat = plan.slots[start].repeat;
        let len = plan.slots[start..].iter().take_while(|s| s.repeat == repeat).count();
        for (to, from) in round_order(seed, repeat, len).into_iter().enumerate() {
            indices[start + to] = start + from;
        }
        start += len;
    }
    indices
}

/// Smallest image each filesystem type can be made on (mkfs refuses below, or ext* would
/// pick other defaults), in bytes.
pub fn min_image_bytes(fs_type: &str) -> u64 {
    FsType::of(fs_type).min_image
}

/// Bytes the workloads of `plan` that will run need at once in an existing directory on a
/// filesystem of type `fs_type` (`--dir`): the largest estimate.
pub fn need_in_dir(plan: &Plan, fs_type: &str) -> u64 {
    let t = FsType::of(fs_type);
    plan.cases
        .iter()
        .filter(|c| c.unavailable.is_none())
        .map(|c| t.estimate(&c.footprint).bytes)
        .max()
        .unwrap_or(0)
}

/// Expands `suite` into a plan. `availability` says for a variant whether it can run here
/// (`Err` with what is missing if not).
pub fn expand(suite: &Suite, availability: &dyn Fn(&FsVariant) -> Result<(), Unavailable>) -> Plan {
    let mut cases = Vec::new();
    // One footprint per workload (a generated dataset's is counted from its manifest).
    let footprints: Vec<Footprint> = suite.workloads.iter().map(|w| w.kind.workload().footprint()).collect();
    for v in &suite.variants {
        let unavailable = availability(v).err().map(|e| e.0);
        for (w, &footprint) in suite.workloads.iter().zip(&footprints) {
            let estimate = v.fs().plan(&footprint);
            let image_bytes = v.image_size.map_or(estimate.image_bytes, |b| b.get());
            cases.push(Case {
                id: CaseId::of(v, w),
                variant: v.clone(),
                workload: w.clone(),
                // A workload that cannot run here (a server not installed) is unavailable
                // like a filesystem the kernel lacks: reported, never silently skipped.
                unavailable: unavailable.clone().or_else(|| not_a_column_of(w, v)).or_else(|| {
                    let wl = w.kind.workload();
                    wl.availability()
                        .and_then(|()| wl.availability_on(v.fs()))
                        .and_then(|()| match v.kernel {
                            Some(_) => wl.availability_in_guest(),
                            None => Ok(()),
                        })
                        .err()
                        .map(|e| e.0)
                }),
                image_bytes,
                footprint,
                estimate,
            });
        }
    }
    let p = &suite.policy;
    let total = p.warmup + p.repeats;
    let runnable: Vec<usize> = (0..cases.len()).filter(|&i| cases[i].unavailable.is_none()).collect();
    // Run order within one repeat: workload-major, variant-minor, so one workload is compared
    // across filesystems close together in time.
    let mut by_workload = runnable.clone();
    by_workload.sort_by_key(|&i| {
        let w = suite
            .workloads
            .iter()
            .position(|w| w.name == cases[i].workload.name)
            .unwrap_or(0);
        let v = suite
            .variants
            .iter()
            .position(|v| v.name == cases[i].variant.name)
            .unwrap_or(0);
        (w, v)
    });
    let mut slots = Vec::new();
    match p.order {
        Order::Interleaved | Order::Alternating => {
            let reversed: Vec<usize> = by_workload.iter().rev().copied().collect();
            for r in 0..total {
                let turn = if p.order == Order::Alternating && r % 2 == 1 {
                    &reversed
                } else {
                    &by_workload
                };
                for &c in turn {
                    slots.push(Slot {
                        case: c,
                        repeat: r,
                        warmup: r < p.warmup,
                    });
                }
            }
        }
        Order::Sequential => {
            for &c in &by_workload {
                for r in 0..total {
                    slots.push(Slot {
                        case: c,
                        repeat: r,
                        warmup: r < p.warmup,
                    });
                }
            }
        }
    }
    let peak_scratch_bytes = peak_scratch(&cases, &slots);
    Plan {
        cases,
        slots,
        peak_scratch_bytes,
    }
}

/// Why workload `w` does not run on variant `v`: the suite limits it to other columns
/// (`fs = [...]` in its `[[workload]]`).
fn not_a_column_of(w: &WorkloadSpec, v: &FsVariant) -> Option<String> {
    (!w.fs.is_empty() && !w.fs.contains(&v.name))
        .then(|| format!("the suite runs {} only on {}", w.name, w.fs.join(", ")))
}

/// The most scratch space one slot of `slots` needs (in-memory types need none), bytes.
fn peak_scratch(cases: &[Case], slots: &[Slot]) -> u64 {
    slots
        .iter()
        .map(|s| &cases[s.case])
        .filter(|c| !c.variant.fs().in_memory())
        .map(|c| match c.variant.image_size {
            Some(b) => b.get(),
            None => c.estimate.scratch_bytes,
        })
        .max()
        .unwrap_or(0)
}

impl Plan {
    /// Gives every case of workload `name` the spec `kind` (sizes set by time,
    /// [`crate::engine::resize`]): its footprint, estimate and image are planned again, and
    /// the plan's peak scratch space with them. Case ids stay: a case is the one planned, its
    /// sizes are recorded with the session. Returns how many cases changed.
    pub fn resize(&mut self, name: &str, kind: &crate::engine::WorkloadKind) -> usize {
        let footprint = kind.workload().footprint();
        let mut changed = 0;
        for c in self.cases.iter_mut().filter(|c| c.workload.name == name) {
            c.workload.kind = kind.clone();
            c.footprint = footprint;
            c.estimate = c.variant.fs().plan(&footprint);
            c.image_bytes = c.variant.image_size.map_or(c.estimate.image_bytes, |b| b.get());
            changed += 1;
        }
        self.peak_scratch_bytes = peak_scratch(&self.cases, &self.slots);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Policy, WorkloadSpec};
    use crate::engine::{BonnieSpec, WorkloadKind};
    use crate::units::Bytes;

    fn variant(name: &str, t: &str) -> FsVariant {
        FsVariant::with_type(name, t)
    }

    fn suite(order: Order, warmup: u32) -> Suite {
        let bonnie: BonnieSpec = toml::from_str("").expect("defaults");
        Suite {
            name: "t".into(),
            description: String::new(),
            policy: Policy {
                repeats: 2,
                warmup,
                order,
                ..Policy::default()
            },
            variants: vec![variant("ext4", "ext4"), variant("zfs", "zfs"), variant("xfs", "xfs")],
            workloads: vec![WorkloadSpec {
                name: "bonnie".into(),
                kind: WorkloadKind::Bonnie(bonnie),
                fs: Vec::new(),
                memory: None,
            }],
            device: None,
            scale: 1.0,
            strict: false,
            equivalence: None,
            loop_io: Default::default(),
            source_text: String::new(),
        }
    }

    fn avail(v: &FsVariant) -> Result<(), crate::engine::Unavailable> {
        if v.fs_type == "zfs" {
            Err("no zfs".into())
        } else {
            Ok(())
        }
    }

    #[test]
    fn interleaved_plan_alternates_variants_and_keeps_unavailable_cases() {
        let plan = expand(&suite(Order::Interleaved, 1), &avail);
        assert_eq!(plan.cases.len(), 3);
        assert_eq!(plan.cases[1].unavailable.as_deref(), Some("no zfs"));
        let seq: Vec<(String, u32, bool)> = plan
            .slots
            .iter()
            .map(|s| (plan.cases[s.case].variant.name.clone(), s.repeat, s.warmup))
            .collect();
        assert_eq!(
            seq,
            vec![
                ("ext4".into(), 0, true),
                ("xfs".into(), 0, true),
                ("ext4".into(), 1, false),
                ("xfs".into(), 1, false),
                ("ext4".into(), 2, false),
                ("xfs".into(), 2, false),
            ]
        );
    }

    #[test]
    fn a_workload_limited_to_some_columns_is_unavailable_on_the_others_with_the_reason() {
        let mut s = suite(Order::Interleaved, 0);
        s.workloads[0].fs = vec!["xfs".into()];
        let plan = expand(&s, &avail);
        let why: Vec<Option<&str>> = plan.cases.iter().map(|c| c.unavailable.as_deref()).collect();
        assert_eq!(why, [Some("the suite runs bonnie only on xfs"), Some("no zfs"), None]);
        let ran: Vec<&str> = plan
            .slots
            .iter()
            .map(|x| plan.cases[x.case].variant.name.as_str())
            .collect();
        assert_eq!(ran, ["xfs", "xfs"]);
    }

    #[test]
    fn interleaved_rounds_run_in_a_fresh_permutation_that_the_seed_reproduces() {
        let mut s = suite(Order::Interleaved, 0);
        s.policy.repeats = 8;
        s.variants.push(variant("btrfs", "btrfs"));
        let fixed = expand(&s, &avail);
        let permuted = |seed: u64| -> Vec<Slot> {
            run_order(&fixed, Order::Interleaved, Some(seed))
                .into_iter()
                .map(|i| fixed.slots[i])
                .collect()
        };
        let a = permuted(26);
        // Every round is a permutation of the same cases, the rounds stay in order.
        for r in 0..8 {
            let mut round: Vec<usize> = a.iter().filter(|x| x.repeat == r).map(|x| x.case).collect();
            round.sort_unstable();
            assert_eq!(round, vec![0, 2, 3], "round {r}");
        }
        assert!(a.windows(2).all(|w| w[0].repeat <= w[1].repeat));
        // The order changes across rounds (3 cases, 8 rounds: more than one order shows up)…
        let orders: std::collections::BTreeSet<Vec<usize>> = (0..8)
            .map(|r| a.iter().filter(|x| x.repeat == r).map(|x| x.case).collect())
            .collect();
        assert!(orders.len() > 1, "{orders:?}");
        // …the same seed gives the same order, another seed another one.
        assert_eq!(permuted(26), a);
        assert_ne!(permuted(27), a);
        // Sequential and alternating keep their fixed order.
        for order in [Order::Sequential, Order::Alternating] {
            let mut s = s.clone();
            s.policy.order = order;
            let plain = expand(&s, &avail);
            assert_eq!(
                run_order(&plain, order, Some(26)),
                (0..plain.slots.len()).collect::<Vec<_>>()
            );
        }
        assert_eq!(
            run_order(&fixed, Order::Interleaved, None),
            (0..fixed.slots.len()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn alternating_plan_reverses_every_odd_repeat() {
        let plan = expand(&suite(Order::Alternating, 1), &avail);
        let seq: Vec<(&str, u32)> = plan
            .slots
            .iter()
            .map(|s| (plan.cases[s.case].variant.name.as_str(), s.repeat))
            .collect();
        assert_eq!(
            seq,
            [
                ("ext4", 0),
                ("xfs", 0),
                ("xfs", 1),
                ("ext4", 1),
                ("ext4", 2),
                ("xfs", 2)
            ]
        );
    }

    #[test]
    fn sequential_plan_groups_repeats() {
        let plan = expand(&suite(Order::Sequential, 0), &avail);
        let names: Vec<&str> = plan
            .slots
            .iter()
            .map(|s| plan.cases[s.case].variant.name.as_str())
            .collect();
        assert_eq!(names, ["ext4", "ext4", "xfs", "xfs"]);
    }

    #[test]
    fn case_ids_are_stable_and_distinct() {
        let s = suite(Order::Interleaved, 0);
        let a = CaseId::of(&s.variants[0], &s.workloads[0]);
        assert_eq!(a, CaseId::of(&s.variants[0], &s.workloads[0]));
        assert_ne!(a, CaseId::of(&s.variants[2], &s.workloads[0]));
        assert_eq!(a.0.len(), 16);
        // A NoCOW btrfs variant is another case than the plain one even under the same name,
        // and the plain one's id does not change.
        let plain = variant("btrfs", "btrfs");
        let nocow = FsVariant {
            nocow: true,
            ..plain.clone()
        };
        let w = &s.workloads[0];
        assert_ne!(CaseId::of(&nocow, w), CaseId::of(&plain, w));
        assert_eq!(CaseId::of(&plain, w), CaseId::of(&variant("btrfs", "btrfs"), w));
    }

    #[test]
    fn images_respect_filesystem_minimums() {
        let empty = Footprint::default();
        assert_eq!(FsType::of("xfs").plan(&empty).image_bytes, 320 * Bytes::MIB);
        let b = FsType::of("btrfs").plan(&empty).image_bytes;
        assert!((min_image_bytes("btrfs")..300 * Bytes::MIB).contains(&b), "{b}");
        assert_eq!(min_image_bytes("ext4"), 512 * Bytes::MIB);
        let plan = expand(&suite(Order::Interleaved, 0), &avail);
        assert!(plan.cases.iter().all(|c| c.image_bytes >= c.variant.fs().min_image));
    }
}
