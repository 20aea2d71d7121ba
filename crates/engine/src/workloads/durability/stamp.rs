//! Stamped blocks: every unit the durability workload writes says which file, offset and
//! generation it is, and carries a checksum over itself, so that the check after a cut can tell
//! an intact unit from a lost one (zeros or beyond the end), a *reverted* one (a valid stamp of an
//! older generation at the right place) and a *torn* one (anything else: a stamp mismatch or a
//! checksum that fails inside the unit, such as old and new sectors mixed).
//!
//! Layout of a unit of `len` bytes (at least [`MIN_UNIT`]), little-endian:
//! `magic u32 | file u32 | offset u64 | generation u32 | len u32 | checksum u64 | payload`, where
//! the payload is a splitmix64 stream seeded by (file, offset, generation) and the checksum is
//! FNV-1a 64 of the whole unit with the checksum field zeroed. Nothing is stored anywhere else:
//! the expectation (file, offset, generation) lives in fsbench's memory.
//!
//! The header also lets the layer under a filesystem recognise a unit in the data written to
//! it, wherever the filesystem places it ([`carries`]): the power-cut disk fails the writes
//! that carry one file's units of one generation, for the fsync error probe.

use crate::workloads::powercut::writer::Fnv;

/// "FSBD", the first four bytes of every unit.
pub const MAGIC: u32 = 0x4442_5346;
/// Bytes of the header.
pub const HEADER: usize = 32;
/// The smallest unit, in bytes.
pub const MIN_UNIT: usize = 64;
/// Where the checksum sits in the header.
const SUM_AT: usize = 24;

/// What the check found in one unit after the cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// The acknowledged generation, whole.
    Intact,
    /// Missing: the file or the range is gone, or it reads as zeros.
    Lost,
    /// A whole, valid unit of an older generation at this place: the write was silently undone.
    Reverted,
    /// Neither: a stamp of another place or a newer generation, a failing checksum (mixed
    /// sectors), or a unit cut short by the end of the file.
    Torn,
}

impl BlockState {
    /// The state as the results name it.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockState::Intact => "intact",
            BlockState::Lost => "lost",
            BlockState::Reverted => "reverted",
            BlockState::Torn => "torn",
        }
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn checksum(unit: &[u8]) -> u64 {
    let mut h = Fnv::default();
    h.write(&unit[..SUM_AT]);
    h.write(&[0u8; 8]);
    h.write(&unit[SUM_AT + 8..]);
    h.0
}

/// Fills `unit` (its length is the unit's, at least [`MIN_UNIT`]) with the stamped contents of
/// generation `generation` of `file` at byte `offset`.
pub fn fill(unit: &mut [u8], file: u32, offset: u64, generation: u32) {
    debug_assert!(unit.len() >= MIN_UNIT);
    let mut st = (file as u64) << 32 ^ offset.rotate_left(17) ^ (generation as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    for chunk in unit[HEADER..].chunks_mut(8) {
        let v = splitmix(&mut st).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    unit[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    unit[4..8].copy_from_slice(&file.to_le_bytes());
    unit[8..16].copy_from_slice(&offset.to_le_bytes());
    unit[16..20].copy_from_slice(&generation.to_le_bytes());
    let len = unit.len() as u32;
    unit[20..24].copy_from_slice(&len.to_le_bytes());
    let sum = checksum(unit);
    unit[SUM_AT..SUM_AT + 8].copy_from_slice(&sum.to_le_bytes());
}

/// The generation of a valid unit of `file` at `offset` of `len` bytes in `got`, if it is one.
fn valid_generation(got: &[u8], file: u32, offset: u64, len: usize) -> Option<u32> {
    let u32_at = |i: usize| u32::from_le_bytes(got[i..i + 4].try_into().unwrap_or_default());
    let stamped = got.len() == len
        && len >= MIN_UNIT
        && u32_at(0) == MAGIC
        && u32_at(4) == file
        && u64::from_le_bytes(got[8..16].try_into().unwrap_or_default()) == offset
        && u32_at(20) as usize == len
        && u64::from_le_bytes(got[SUM_AT..SUM_AT + 8].try_into().unwrap_or_default()) == checksum(got);
    stamped.then(|| u32_at(16))
}

/// Bytes of the alignment at which [`carries`] looks for a unit's header: the sector, the
/// smallest unit a filesystem places a data block at on its disk.
pub const ALIGN: u64 = 512;

/// Whether `data`, written at byte `at` of a disk, carries a unit of `file` at `generation`:
/// its header (magic, file, generation, a length of at least [`MIN_UNIT`]) at some
/// [`ALIGN`]-aligned byte of the disk inside `data`. Where the filesystem put the unit (in
/// place, a copy-on-write extent, a journal block) plays no part; a unit stored transformed
/// (compressed, encrypted, inline in metadata at an unaligned place) is not recognised.
pub fn carries(data: &[u8], at: u64, file: u32, generation: u32) -> bool {
    let u32_at = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().unwrap_or_default());
    let first = ((ALIGN - at % ALIGN) % ALIGN) as usize;
    (first..data.len().saturating_sub(HEADER - 1))
        .step_by(ALIGN as usize)
        .any(|i| {
            u32_at(i) == MAGIC
                && u32_at(i + 4) == file
                && u32_at(i + 16) == generation
                && u32_at(i + 20) as usize >= MIN_UNIT
        })
}

/// Classifies what was read back for the unit of `len` bytes of `file` at `offset` whose
/// acknowledged generation is `want`: `got` holds the bytes that were there (shorter than `len`
/// where the file ends inside the unit, empty where it ends before it or is missing).
pub fn classify(got: &[u8], len: usize, file: u32, offset: u64, want: u32) -> BlockState {
    if got.iter().all(|b| *b == 0) {
        return BlockState::Lost;
    }
    match valid_generation(got, file, offset, len) {
        Some(g) if g == want => BlockState::Intact,
        Some(g) if g < want => BlockState::Reverted,
        _ => BlockState::Torn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(len: usize, file: u32, offset: u64, generation: u32) -> Vec<u8> {
        let mut u = vec![0u8; len];
        fill(&mut u, file, offset, generation);
        u
    }

    #[test]
    fn each_kind_of_damage_is_told_apart() {
        let new = unit(4096, 7, 8192, 2);
        assert_eq!(classify(&new, 4096, 7, 8192, 2), BlockState::Intact);
        assert_eq!(classify(&[], 4096, 7, 8192, 2), BlockState::Lost, "beyond the end");
        assert_eq!(classify(&[0u8; 4096], 4096, 7, 8192, 2), BlockState::Lost, "a hole");
        let old = unit(4096, 7, 8192, 1);
        assert_eq!(classify(&old, 4096, 7, 8192, 2), BlockState::Reverted);
        // Old and new sectors mixed: both stamps are valid alone, the mix is not.
        let mut mixed = new.clone();
        mixed[512..1024].copy_from_slice(&old[512..1024]);
        assert_eq!(classify(&mixed, 4096, 7, 8192, 2), BlockState::Torn);
        let mut head_old = old.clone();
        head_old[512..].copy_from_slice(&new[512..]);
        assert_eq!(classify(&head_old, 4096, 7, 8192, 2), BlockState::Torn);
        // Another file's or another place's unit, a short unit, a newer generation.
        assert_eq!(classify(&unit(4096, 8, 8192, 2), 4096, 7, 8192, 2), BlockState::Torn);
        assert_eq!(classify(&unit(4096, 7, 0, 2), 4096, 7, 8192, 2), BlockState::Torn);
        assert_eq!(classify(&new[..1000], 4096, 7, 8192, 2), BlockState::Torn);
        assert_eq!(classify(&unit(4096, 7, 8192, 3), 4096, 7, 8192, 2), BlockState::Torn);
        // One flipped payload byte.
        let mut flipped = new.clone();
        flipped[4000] ^= 1;
        assert_eq!(classify(&flipped, 4096, 7, 8192, 2), BlockState::Torn);
    }

    #[test]
    fn a_write_carries_a_unit_wherever_it_sits_at_a_sector_and_only_then() {
        let u = unit(4096, 7, 8192, 2);
        // Alone, at any sector of the disk.
        assert!(carries(&u, 0, 7, 2) && carries(&u, 1 << 30, 7, 2));
        // Inside a larger write, at a sector of the disk that is not one of the write.
        let mut w = vec![0u8; 3 * 4096];
        w[100..100 + 4096].copy_from_slice(&u);
        assert!(carries(&w, 412, 7, 2), "at disk byte 512");
        assert!(!carries(&w, 0, 7, 2), "at disk byte 100: not a sector");
        // Another generation or file, a header cut short, no unit.
        assert!(!carries(&u, 0, 7, 1) && !carries(&u, 0, 8, 2));
        assert!(!carries(&u[..HEADER - 1], 0, 7, 2) && carries(&u[..HEADER], 0, 7, 2));
        assert!(!carries(&[0u8; 8192], 0, 7, 2) && !carries(&[], 0, 7, 2));
        let mut bad = u.clone();
        bad[20..24].copy_from_slice(&0u32.to_le_bytes());
        assert!(!carries(&bad, 0, 7, 2), "a length below MIN_UNIT is no unit");
    }

    #[test]
    fn units_differ_by_file_offset_and_generation_and_are_deterministic() {
        let a = unit(1024, 1, 0, 1);
        assert_eq!(a, unit(1024, 1, 0, 1));
        for other in [unit(1024, 2, 0, 1), unit(1024, 1, 1024, 1), unit(1024, 1, 0, 2)] {
            assert_ne!(a[HEADER..], other[HEADER..], "payloads differ");
        }
        assert_eq!(classify(&unit(64, 3, 64, 5), 64, 3, 64, 5), BlockState::Intact);
    }
}
