//! RFC 3339 UTC timestamps (`2000-02-29T00:00:00Z`) from [`SystemTime`] and back, without a date crate.
//!
//! The store keeps every time as this text: it sorts lexically in time order (for years
//! 0000–9999), reads back unchanged, and any tool (`sqlite3`, a spreadsheet) understands it.
//! Precision is whole seconds, truncated toward the past.
//!
//! The calendar conversion is the proleptic Gregorian "civil from days" computation over
//! 400-year eras (146,097 days each), as described by Howard Hinnant, "chrono-Compatible
//! Low-Level Date Algorithms" (<https://howardhinnant.github.io/date_algorithms.html>).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds in a day.
const DAY_S: i64 = 86_400;

/// Formats `t` as RFC 3339 in UTC with whole seconds, for example `2000-02-29T00:00:00Z`.
///
/// Times before 1970 are supported; a sub-second part is dropped (rounded toward the past).
pub fn format_rfc3339(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(before) => {
            let d = before.duration();
            let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            // Truncating toward the past: 0.5 s before the epoch is 1969-12-31T23:59:59Z.
            if d.subsec_nanos() > 0 {
                -whole.saturating_add(1)
            } else {
                -whole
            }
        }
    };
    format_unix_seconds(secs)
}

/// The current time as RFC 3339 UTC (see [`format_rfc3339`]).
pub fn now_rfc3339() -> String {
    format_rfc3339(SystemTime::now())
}

/// Formats seconds since 1970-01-01T00:00:00Z (negative = before) as RFC 3339 UTC.
fn format_unix_seconds(secs: i64) -> String {
    let days = secs.div_euclid(DAY_S);
    let of_day = secs.rem_euclid(DAY_S);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// Reads back a time [`format_rfc3339`] wrote (`2000-02-29T00:00:00Z`) as seconds since
/// 1970-01-01T00:00:00Z; `None` for any other text (another offset, fractions, a date that
/// does not exist). What a session's wall time is computed from (`finished_at − started_at`).
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let shape = b.len() == 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'Z';
    if !shape {
        return None;
    }
    let num = |at: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(at)?;
        digits
            .bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    // A day past the month's end (02-30) comes back as another date.
    if civil_from_days(days) != (year, month, day) {
        return None;
    }
    Some(days * DAY_S + hour * 3600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date: the inverse of [`civil_from_days`]
/// (Hinnant's "days from civil").
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Converts days since 1970-01-01 to a proleptic Gregorian `(year, month 1–12, day 1–31)`.
///
/// Works in eras of 400 years that start on 1 March, so the leap day is the last day of the
/// shifted year and needs no special case.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    // Shift the epoch from 1970-01-01 to 0000-03-01 (719,468 days earlier).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097); // 0..=146_096
                                            // 0..=399; the divisions undo the leap days of 4-, 100- and 400-year cycles.
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    // 0..=365, counted from 1 March.
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153; // 0 = March … 11 = February
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> String {
        format_rfc3339(UNIX_EPOCH + Duration::from_secs(secs))
    }

    #[test]
    fn known_timestamps() {
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z"); // leap day of a 400-year leap year
        assert_eq!(at(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(at(1_234_567_890), "2009-02-13T23:31:30Z");
        assert_eq!(at(2_147_483_647), "2038-01-19T03:14:07Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z"); // 2100 is not a leap year
        assert_eq!(at(4_107_456_000), "2100-02-28T00:00:00Z");
        assert_eq!(at(253_402_300_799), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn written_times_read_back_and_nothing_else_does() {
        for secs in [
            0,
            951_782_400,
            951_868_800,
            1_234_567_890,
            4_107_456_000,
            253_402_300_799,
        ] {
            assert_eq!(parse_rfc3339(&at(secs)), Some(secs as i64), "{}", at(secs));
        }
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), Some(-1));
        assert_eq!(parse_rfc3339("1900-03-01T00:00:00Z"), Some(-2_203_891_200));
        for bad in [
            "",
            "2026-03-01T10:20:00",
            "2026-03-01T10:20:00+01:00",
            "2026-03-01T10:20:00.5Z",
            "2026-02-30T10:20:00Z",
            "2100-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-03-01T24:00:00Z",
            "2026-03-01 10:20:00Z",
            "2026-0a-01T10:20:00Z",
            "+026-03-01T10:20:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn sub_seconds_are_truncated() {
        let t = UNIX_EPOCH + Duration::from_millis(1_999);
        assert_eq!(format_rfc3339(t), "1970-01-01T00:00:01Z");
    }

    #[test]
    fn before_the_epoch() {
        assert_eq!(format_unix_seconds(-1), "1969-12-31T23:59:59Z");
        assert_eq!(format_unix_seconds(-86_400), "1969-12-31T00:00:00Z");
        let half_second_before = UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(format_rfc3339(half_second_before), "1969-12-31T23:59:59Z");
        // 1900 is not a leap year: 1900-03-01 follows 1900-02-28.
        assert_eq!(format_unix_seconds(-2_203_891_200), "1900-03-01T00:00:00Z");
    }

    #[test]
    fn every_day_of_four_centuries_is_consecutive() {
        // Walk 400 years day by day from 1970 and check the calendar advances by exactly one day.
        let (mut y, mut m, mut d) = civil_from_days(0);
        for days in 1..146_097 {
            let (ny, nm, nd) = civil_from_days(days);
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let month_len = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            let expected = if d < month_len {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            assert_eq!((ny, nm, nd), expected, "day {days}");
            (y, m, d) = (ny, nm, nd);
        }
        assert_eq!((y, m, d), (2369, 12, 31));
    }
}
