//! Systematic crash states from a recording disk's write log ([`disk::LogEntry`]).
//!
//! The log holds every write the filesystem sent after the mark and every completed flush. The
//! flushes split it into epochs: epoch `e` is the writes after flush `e - 1` (or the mark) and
//! before flush `e`; a last epoch with no flush after it is one too. A disk that honours flushes
//! may persist, when the power fails during epoch `e`, every write of the epochs before it and
//! any subset of the writes of `e` (its cache may reorder them), so a crash state is
//! (`e`, subset of `e`'s writes), applied in log order on the image as it was at the mark. Per
//! epoch the states are every subset when there are at most `exhaustive` of them
//! (`2^n <= exhaustive`), else every prefix (what an in-order disk leaves) and `samples` subsets
//! drawn with a generator seeded from `seed` and the epoch (each write kept with probability
//! 1/2). The full subset of an epoch that has a successor is the successor's empty subset and
//! is listed once, as the latter; the mark itself is epoch 0's empty subset and the end of the
//! log the last epoch's full subset. Then, when more than `max_states` remain, the prefixes are
//! kept first and the rest drawn (seeded), so every list is reproducible from its parameters.
//!
//! With `torn` (a disk whose atomic unit is the 512-byte sector, not the request), each epoch
//! also has, per write `k` of at least two sectors, the state "the writes before `k` in the
//! epoch whole, write `k` torn": its first half (whole sectors) persisted, the rest not, what a
//! disk losing power in the middle of a request leaves (the power-cut disk's `tear` model, at
//! every position of the epoch).
//!
//! [`Barriers::Ignored`] is the deliberately wrong disk of the tests: it treats the whole log as
//! one epoch, as a disk that acknowledges flushes without honouring them would (the
//! power-cut disk's `broken-flush` model), so writes after a flush may persist without those
//! before it.
//!
//! **Acknowledgements** ([`Log::acknowledged`]): an application's acknowledgement is a note in
//! the log ([`LogEntry::Note`], sent after the application reported it). A state shows that the
//! power failed no earlier than the last log entry it contains: the flush that ended the epoch
//! before its own (the first one, when several follow each other with no write between them),
//! or the last write it applies (a write the disk kept was sent before the crash). Every note
//! logged before that entry was acknowledged before the crash, so the application promised it.
//!
//! Reference: Pillai et al., "All File Systems Are Not Created Equal" (OSDI '14), §3 (ALICE's
//! crash states from block-level traces: prefixes and reorderings within barriers).

use crate::workloads::powercut::disk::LogEntry;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;

/// Whether the states obey the log's flushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Barriers {
    /// A flush is a barrier: nothing after it persists unless everything before it did.
    Honoured,
    /// Broken on purpose: flushes are ignored, any subset of the whole log may persist.
    Ignored,
}

/// How a state's subset was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Every subset of the epoch is listed (this is one of them).
    Exhaustive,
    /// The first `k` writes of the epoch, in log order.
    Prefix,
    /// A seeded random subset of a large epoch.
    Sampled,
    /// A prefix of the epoch and the next write torn ([`CrashState::torn`]).
    Torn,
}

/// Bytes of the sector a torn write keeps or drops as a whole.
pub const SECTOR: usize = 512;

/// One crash state: every write of the epochs before `epoch` and the writes `kept` of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashState {
    /// The epoch the power failed in (0-based).
    pub epoch: usize,
    /// Indices into [`Log::writes`] of the epoch's writes that persisted, ascending.
    pub kept: Vec<usize>,
    /// Writes in the epoch.
    pub epoch_writes: usize,
    /// How the subset was chosen.
    pub pick: Pick,
    /// A write applied only in part, after the kept ones: its index into [`Log::writes`] and
    /// the bytes of its start that persisted (whole sectors).
    pub torn: Option<(usize, usize)>,
}

/// The log split into writes and epochs.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Every write after the mark: byte offset in the image and data.
    pub writes: Vec<(u64, Vec<u8>)>,
    /// Per epoch, the range of [`Log::writes`] it holds.
    pub epochs: Vec<std::ops::Range<usize>>,
    /// Flushes in the log.
    pub flushes: usize,
    /// Per epoch, the flushes answered before it began (to the first flush that ended the
    /// epoch before it).
    pub epoch_flushes: Vec<usize>,
    /// The notes, in log order: number, writes logged before it, flushes logged before it.
    pub notes: Vec<(u32, usize, usize)>,
}

impl Log {
    /// Splits `entries` at its flushes; with [`Barriers::Ignored`] the whole log is one epoch.
    pub fn new(entries: &[LogEntry], barriers: Barriers) -> Log {
        let mut log = Log::default();
        let mut start = 0;
        log.epoch_flushes.push(0);
        for e in entries {
            match e {
                LogEntry::Write { offset, data } => log.writes.push((*offset, data.clone())),
                LogEntry::Flush => {
                    log.flushes += 1;
                    if barriers == Barriers::Honoured && log.writes.len() > start {
                        log.epochs.push(start..log.writes.len());
                        log.epoch_flushes.push(log.flushes);
                        start = log.writes.len();
                    }
                }
                LogEntry::Note(id) => log.notes.push((*id, log.writes.len(), log.flushes)),
            }
        }
        if log.writes.len() > start || log.epochs.is_empty() {
            log.epochs.push(start..log.writes.len());
        } else {
            log.epoch_flushes.pop();
        }
        log
    }

    /// The notes acknowledged before the crash that left state `s` (module doc), in log order.
    pub fn acknowledged(&self, s: &CrashState) -> Vec<u32> {
        let flushed = self.epoch_flushes[s.epoch];
        let before = self.epochs[s.epoch].start;
        let last_write = s
            .kept
            .iter()
            .copied()
            .chain(s.torn.map(|(w, _)| w))
            .max()
            .or(before.checked_sub(1));
        self.notes
            .iter()
            .filter(|&&(_, writes, flushes)| flushes < flushed || last_write.is_some_and(|w| w >= writes))
            .map(|&(id, _, _)| id)
            .collect()
    }

    /// The writes a state applies on the mark's image, in log order: offset and bytes (the
    /// torn write's first part last).
    pub fn applied<'a>(&'a self, s: &'a CrashState) -> impl Iterator<Item = (u64, &'a [u8])> + 'a {
        let before = self.epochs[s.epoch].start;
        let whole = |(o, d): &'a (u64, Vec<u8>)| (*o, d.as_slice());
        let torn = s.torn.map(|(i, n)| (self.writes[i].0, &self.writes[i].1[..n]));
        self.writes[..before]
            .iter()
            .map(whole)
            .chain(s.kept.iter().map(move |&i| whole(&self.writes[i])))
            .chain(torn)
    }
}

/// How many states to list.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// An epoch is enumerated exhaustively when it has at most this many subsets.
    pub exhaustive: usize,
    /// Random subsets drawn per larger epoch (besides its prefixes).
    pub samples: usize,
    /// At most this many states in all (prefixes first, the rest drawn).
    pub max_states: usize,
    /// Seed of every draw.
    pub seed: u64,
    /// Also the states with one write torn (module doc).
    pub torn: bool,
}

/// The crash states of `log` within `budget` (module doc), and how many were enumerated before
/// the `max_states` cap.
pub fn enumerate(log: &Log, budget: &Budget) -> (Vec<CrashState>, usize) {
    let last = log.epochs.len().saturating_sub(1);
    let mut all = Vec::new();
    for (e, range) in log.epochs.iter().enumerate() {
        let n = range.len();
        let mut seen = BTreeSet::new();
        let mut push = |kept: Vec<usize>, pick: Pick, all: &mut Vec<CrashState>| {
            if kept.len() == n && e != last {
                return; // the next epoch's empty subset
            }
            if seen.insert(kept.clone()) {
                all.push(CrashState {
                    epoch: e,
                    kept,
                    epoch_writes: n,
                    pick,
                    torn: None,
                });
            }
        };
        if budget.torn {
            all.extend(torn_states(log, e, range));
        }
        let small = n < usize::BITS as usize && (1usize << n) <= budget.exhaustive;
        if small {
            for mask in 0..(1usize << n) {
                let kept = (0..n).filter(|i| mask >> i & 1 == 1).map(|i| range.start + i).collect();
                push(kept, Pick::Exhaustive, &mut all);
            }
            continue;
        }
        for k in 0..=n {
            push(range.clone().take(k).collect(), Pick::Prefix, &mut all);
        }
        let mut rng = epoch_rng(budget.seed, e);
        for _ in 0..budget.samples {
            let kept = range.clone().filter(|_| rng.gen_bool(0.5)).collect();
            push(kept, Pick::Sampled, &mut all);
        }
    }
    let enumerated = all.len();
    if all.len() > budget.max_states {
        all = cap(all, budget);
    }
    (all, enumerated)
}

/// Epoch `e`'s torn states: per write of at least two sectors, the writes before it in the
/// epoch whole and its first half (whole sectors).
fn torn_states(log: &Log, e: usize, range: &std::ops::Range<usize>) -> Vec<CrashState> {
    range
        .clone()
        .filter(|&w| log.writes[w].1.len() >= 2 * SECTOR)
        .map(|w| CrashState {
            epoch: e,
            kept: (range.start..w).collect(),
            epoch_writes: range.len(),
            pick: Pick::Torn,
            torn: Some((w, log.writes[w].1.len() / 2 / SECTOR * SECTOR)),
        })
        .collect()
}

/// `max_states` of `all`: the prefixes (and exhaustive states) first in log order, then a seeded
/// draw of the sampled ones, in their enumeration order.
fn cap(all: Vec<CrashState>, budget: &Budget) -> Vec<CrashState> {
    let mut rng = epoch_rng(budget.seed, usize::MAX);
    let (first, mut rest): (Vec<_>, Vec<_>) = all.into_iter().enumerate().partition(|(_, s)| s.pick != Pick::Sampled);
    let mut chosen: Vec<(usize, CrashState)> = first;
    if chosen.len() > budget.max_states {
        // Spread the kept ones over the whole log: every epoch's start and end stay.
        let step = chosen.len() as f64 / budget.max_states as f64;
        chosen = (0..budget.max_states)
            .map(|i| chosen[(i as f64 * step) as usize].clone())
            .collect();
    } else {
        while chosen.len() < budget.max_states && !rest.is_empty() {
            let i = rng.gen_range(0..rest.len());
            chosen.push(rest.swap_remove(i));
        }
    }
    chosen.sort_by_key(|(i, _)| *i);
    chosen.into_iter().map(|(_, s)| s).collect()
}

fn epoch_rng(seed: u64, epoch: usize) -> rand::rngs::SmallRng {
    rand::rngs::SmallRng::seed_from_u64(seed ^ (epoch as u64).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(offset: u64) -> LogEntry {
        LogEntry::Write {
            offset,
            data: vec![offset as u8],
        }
    }

    fn budget(exhaustive: usize, samples: usize, max_states: usize) -> Budget {
        Budget {
            exhaustive,
            samples,
            max_states,
            seed: 7,
            torn: false,
        }
    }

    #[test]
    fn small_epochs_are_enumerated_exhaustively_and_states_across_epochs_are_not_repeated() {
        // Epoch 0: writes 0,1; epoch 1: write 2; a trailing flush with nothing after it.
        let log = Log::new(
            &[w(0), w(1), LogEntry::Flush, w(2), LogEntry::Flush],
            Barriers::Honoured,
        );
        assert_eq!(log.epochs, vec![0..2, 2..3]);
        let (states, n) = enumerate(&log, &budget(16, 0, 100));
        let got: Vec<(usize, Vec<usize>)> = states.iter().map(|s| (s.epoch, s.kept.clone())).collect();
        // {0,1} of epoch 0 is epoch 1's empty subset; epoch 1's full set is the end of the log.
        let want = vec![(0, vec![]), (0, vec![0]), (0, vec![1]), (1, vec![]), (1, vec![2])];
        assert_eq!(got, want);
        assert_eq!(n, 5);
        let applied: Vec<u64> = log.applied(&states[4]).map(|(o, _)| o).collect();
        assert_eq!(applied, vec![0, 1, 2], "the epochs before, then the kept writes");
        let applied: Vec<u64> = log.applied(&states[2]).map(|(o, _)| o).collect();
        assert_eq!(applied, vec![1], "write 1 without write 0: a reordering");
    }

    #[test]
    fn ignored_barriers_make_one_epoch_whose_subsets_cross_the_flush() {
        let log = Log::new(&[w(0), LogEntry::Flush, w(1)], Barriers::Ignored);
        assert_eq!((log.epochs.len(), log.epochs[0].clone(), log.flushes), (1, 0..2, 1));
        let (states, _) = enumerate(&log, &budget(16, 0, 100));
        assert!(
            states.iter().any(|s| s.kept == vec![1]),
            "the write after the flush alone"
        );
        let honoured = Log::new(&[w(0), LogEntry::Flush, w(1)], Barriers::Honoured);
        let (states, _) = enumerate(&honoured, &budget(16, 0, 100));
        assert!(
            states.iter().all(|s| !log_has_only_second(&honoured, s)),
            "a barrier forbids it"
        );
    }

    fn log_has_only_second(log: &Log, s: &CrashState) -> bool {
        let applied: Vec<u64> = log.applied(s).map(|(o, _)| o).collect();
        applied == vec![1]
    }

    #[test]
    fn large_epochs_get_every_prefix_and_seeded_samples_and_the_cap_keeps_prefixes_first() {
        let entries: Vec<LogEntry> = (0..10).map(w).collect();
        let log = Log::new(&entries, Barriers::Honoured);
        let (states, n) = enumerate(&log, &budget(16, 20, 1000));
        let prefixes = states.iter().filter(|s| s.pick == Pick::Prefix).count();
        assert_eq!(prefixes, 11, "every prefix, the empty and the full one included");
        assert!(states.iter().any(|s| s.pick == Pick::Sampled), "and some samples");
        assert_eq!(n, states.len());
        let (again, _) = enumerate(&log, &budget(16, 20, 1000));
        assert_eq!(again, states, "the same seed lists the same states");
        let (capped, n2) = enumerate(&log, &budget(16, 20, 13));
        assert_eq!((capped.len(), n2), (13, n));
        assert_eq!(capped.iter().filter(|s| s.pick == Pick::Prefix).count(), 11);
        let (few, _) = enumerate(&log, &budget(16, 20, 3));
        assert_eq!(few.len(), 3);
        assert!(
            few[0].kept.is_empty() && few[2].kept.len() < 10,
            "spread over the prefixes"
        );
    }

    #[test]
    fn torn_states_keep_the_writes_before_whole_and_half_of_the_next_in_whole_sectors() {
        let big = |offset: u64, len: usize| LogEntry::Write {
            offset,
            data: vec![offset as u8; len],
        };
        // Epoch 0: a 4 KiB write, a 100-byte write (too small to tear), a 1536-byte write.
        let log = Log::new(&[big(0, 4096), big(8192, 100), big(16384, 1536)], Barriers::Honoured);
        let b = Budget {
            torn: true,
            ..budget(64, 0, 100)
        };
        let (states, _) = enumerate(&log, &b);
        let torn: Vec<&CrashState> = states.iter().filter(|s| s.pick == Pick::Torn).collect();
        assert_eq!(torn.len(), 2, "{torn:?}");
        assert_eq!((torn[0].kept.clone(), torn[0].torn), (vec![], Some((0, 2048))));
        assert_eq!((torn[1].kept.clone(), torn[1].torn), (vec![0, 1], Some((2, 512))));
        let applied: Vec<(u64, usize)> = log.applied(torn[1]).map(|(o, d)| (o, d.len())).collect();
        assert_eq!(applied, vec![(0, 4096), (8192, 100), (16384, 512)]);
        let (plain, _) = enumerate(&log, &budget(64, 0, 100));
        assert_eq!(plain.len() + 2, states.len(), "torn states only when asked");
    }

    #[test]
    fn a_note_is_acknowledged_in_states_past_the_flush_or_a_write_logged_after_it() {
        // Epoch 0: write 0, note 1; flush; epoch 1: write 1, note 2, write 2; flush, flush.
        let entries = [
            w(0),
            LogEntry::Note(1),
            LogEntry::Flush,
            w(1),
            LogEntry::Note(2),
            w(2),
            LogEntry::Flush,
            LogEntry::Flush,
        ];
        let log = Log::new(&entries, Barriers::Honoured);
        assert_eq!(
            (log.epochs.clone(), log.epoch_flushes.clone()),
            (vec![0..1, 1..3], vec![0, 1])
        );
        let st = |epoch: usize, kept: Vec<usize>| CrashState {
            epoch,
            kept,
            epoch_writes: 1,
            pick: Pick::Exhaustive,
            torn: None,
        };
        assert!(log.acknowledged(&st(0, vec![])).is_empty(), "the mark: nothing yet");
        assert!(
            log.acknowledged(&st(0, vec![0])).is_empty(),
            "note 1 may come after write 0"
        );
        assert_eq!(log.acknowledged(&st(1, vec![])), vec![1], "past the flush after note 1");
        assert_eq!(log.acknowledged(&st(1, vec![1])), vec![1]);
        assert_eq!(
            log.acknowledged(&st(1, vec![2])),
            vec![1, 2],
            "write 2 was sent after note 2"
        );
        // Ignoring the barriers: only kept writes place the crash.
        let one = Log::new(&entries, Barriers::Ignored);
        assert_eq!(one.epoch_flushes, vec![0]);
        assert!(one.acknowledged(&st(0, vec![0])).is_empty());
        assert_eq!(one.acknowledged(&st(0, vec![1])), vec![1]);
    }

    #[test]
    fn an_empty_log_has_the_mark_as_its_only_state() {
        let log = Log::new(&[LogEntry::Flush], Barriers::Honoured);
        let (states, n) = enumerate(&log, &budget(16, 4, 10));
        assert_eq!((states.len(), n), (1, 1));
        assert!(states[0].kept.is_empty());
    }
}
