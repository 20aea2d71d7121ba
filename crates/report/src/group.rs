//! Comparison groups of variants: the host's kernel, and the guests ([`crate::guest`]) by
//! accelerator. Variants are ranked, tied and summarised only within their group, never across
//! groups: a guest's disk is a virtio image and its CPU possibly emulated, so its numbers answer
//! a different question than the host's. Guests of different kernels under one accelerator are
//! one group: comparing kernels (`ext4@guest` against `ext4@guest:6.12`) is what that group is
//! for; each variant's kernel is named in the group's warning and in its samples' notes.
//!
//! The group of a variant comes from stored data only: the first note of its measured repeats
//! that reads `guest: Linux RELEASE under ACCEL …` (written by the guest runner). Variants
//! without one form the host group, `None`.

use crate::store::{SampleStatus, SessionData};
use std::collections::HashMap;

use crate::metric::GUEST_NOTE_PREFIX as NOTE_PREFIX;

/// The kernel release and accelerator a guest note names.
pub fn parse_note(note: &str) -> Option<(&str, &str)> {
    let rest = note.strip_prefix(NOTE_PREFIX)?;
    let (release, rest) = rest.split_once(" under ")?;
    let accel = rest.split([' ', ',']).next()?;
    Some((release, accel))
}

/// The label of a guest group: its accelerator.
pub fn label(accel: &str) -> String {
    if accel == "tcg" {
        "guest, tcg (emulated: compare only with each other)".to_string()
    } else {
        format!("guest, {accel}")
    }
}

/// Each guest variant's group label and kernel release (absent: the host group).
pub fn of_variants(data: &SessionData) -> HashMap<String, (String, String)> {
    let variant_of: HashMap<&str, &str> = data
        .cases
        .iter()
        .map(|c| (c.case_id.as_str(), c.variant.as_str()))
        .collect();
    let mut out = HashMap::new();
    for s in &data.samples {
        if s.sample.status != SampleStatus::Ok {
            continue;
        }
        let Some(variant) = variant_of.get(s.sample.case_id.as_str()) else {
            continue;
        };
        if let Some((r, a)) = s.sample.notes.iter().find_map(|n| parse_note(n)) {
            out.entry(variant.to_string())
                .or_insert_with(|| (label(a), r.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_notes_parse_and_others_do_not() {
        let n = "guest: Linux 6.1.0-56-amd64 under tcg (emulated: compare only with each other), booted in 3.1 s";
        assert_eq!(parse_note(n), Some(("6.1.0-56-amd64", "tcg")));
        assert_eq!(parse_note("seq_stat ran under 0.5 s"), None);
        assert!(label("tcg").contains("emulated: compare only with each other"));
        assert!(!label("kvm").contains("emulated"));
    }
}
