//! The power-cut workloads' notes (`powercut` and `durability`): written once per repeat or per
//! cut, with figures that differ each time ([`PER_CUT_NOTES`]), so the report's terminal prints
//! one line per kind ([`Section::notes_per_repeat`]); the other formats list each in full. The
//! section shows nothing of its own.

use crate::engine::workloads::powercut::PER_CUT_NOTES;
use crate::report::{ReportModel, Section};

/// The power-cut workloads' notes in a session's report.
pub struct PowercutNotes;

impl Section for PowercutNotes {
    fn markdown(&self, _model: &ReportModel) -> String {
        String::new()
    }

    fn html(&self, _model: &ReportModel) -> String {
        String::new()
    }

    fn notes_per_repeat(&self) -> &[(&'static str, &'static str)] {
        PER_CUT_NOTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::session_data;

    #[test]
    fn cut_notes_are_one_terminal_line_per_kind_with_the_section_and_in_full_without() {
        let mut data = session_data();
        for (i, s) in data.samples.iter_mut().enumerate() {
            s.sample
                .notes
                .push(format!("cuts: cut 1: mount 0.0{i} s, 0 units damaged, fsck clean"));
        }
        let lines = |m: &ReportModel| {
            crate::report::warning::grouped(&m.warnings)
                .into_iter()
                .filter(|l| l.contains("cut"))
                .count()
        };
        let with = crate::report::build_with(&data, 1, 0.95, &[&PowercutNotes]);
        assert_eq!(lines(&with), 1, "{:#?}", with.warnings);
        let without = crate::report::build(&data, 1, 0.95);
        assert_eq!(lines(&without), data.samples.len(), "{:#?}", without.warnings);
        assert_eq!(
            with.warnings.len(),
            without.warnings.len(),
            "every note in full either way"
        );
    }
}
