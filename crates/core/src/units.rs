//! Quantities a user types in a suite file or on the command line: sizes (`4k`, `2GiB`, `1.5G`)
//! and durations (`30s`, `500ms`, `5m`).
//!
//! Size suffixes are binary, as in fio's default `kb_base=1024`: `k`, `K`, `KB`, `KiB` all mean
//! 1024 bytes; `m`/`M`/`MB`/`MiB` 1024², and so on up to `T`. A bare number is bytes. Decimal
//! fractions are allowed (`1.5G`) and rounded down to a whole byte. Durations take `ns`, `us`,
//! `ms`, `s`, `m`, `h`; a bare number is seconds.
//!
//! Invariants: parsing never panics; a parsed value round-trips through `Display` to the same
//! number of bytes; negative, NaN and overflowing values are errors.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A parse failure, with the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a number followed by a known suffix.
    #[error("`{0}` is not a size: use a number with an optional suffix k, M, G or T (binary: 1k = 1024 bytes), e.g. `4k` or `2GiB`")]
    BadSize(String),
    /// Not a number followed by a known suffix.
    #[error("`{0}` is not a duration: use a number with a suffix ms, s, m or h, e.g. `30s`")]
    BadDuration(String),
    /// The value does not fit.
    #[error("`{0}` is too large")]
    Overflow(String),
}

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    /// One kibibyte.
    pub const KIB: u64 = 1024;
    /// One mebibyte.
    pub const MIB: u64 = 1024 * 1024;
    /// One gibibyte.
    pub const GIB: u64 = 1024 * 1024 * 1024;

    /// The size in bytes.
    pub fn get(self) -> u64 {
        self.0
    }

    /// Multiplies by `factor` (for `--scale`), rounding down, never below `min` bytes.
    pub fn scaled(self, factor: f64, min: u64) -> Bytes {
        let v = (self.0 as f64 * factor).floor();
        let v = if v.is_finite() && v < u64::MAX as f64 {
            v as u64
        } else {
            u64::MAX
        };
        Bytes(v.max(min))
    }
}

fn split_number(s: &str) -> (&str, &str) {
    let idx = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    (&s[..idx], s[idx..].trim())
}

fn parse_number(num: &str) -> Option<f64> {
    let cleaned: String = num.chars().filter(|c| *c != '_').collect();
    if cleaned.is_empty() {
        return None;
    }
    let v: f64 = cleaned.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let (num, suffix) = split_number(t);
        let v = parse_number(num).ok_or_else(|| UnitError::BadSize(s.to_string()))?;
        let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => Bytes::KIB,
            "m" | "mb" | "mib" => Bytes::MIB,
            "g" | "gb" | "gib" => Bytes::GIB,
            "t" | "tb" | "tib" => Bytes::GIB * 1024,
            _ => return Err(UnitError::BadSize(s.to_string())),
        };
        let total = v * mult as f64;
        if total >= u64::MAX as f64 {
            return Err(UnitError::Overflow(s.to_string()));
        }
        Ok(Bytes(total as u64))
    }
}

impl fmt::Display for Bytes {
    /// Shortest exact binary form: `4KiB`, `2GiB`, or plain bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for (unit, name) in [
            (Bytes::GIB * 1024, "TiB"),
            (Bytes::GIB, "GiB"),
            (Bytes::MIB, "MiB"),
            (Bytes::KIB, "KiB"),
        ] {
            if v >= unit && v % unit == 0 {
                return write!(f, "{}{}", v / unit, name);
            }
        }
        write!(f, "{v}B")
    }
}

impl Bytes {
    /// Human form with one decimal (`1.5 GiB`), for plans and reports; not exact.
    pub fn human(self) -> String {
        let v = self.0 as f64;
        for (unit, name) in [
            (Bytes::GIB as f64 * 1024.0, "TiB"),
            (Bytes::GIB as f64, "GiB"),
            (Bytes::MIB as f64, "MiB"),
            (Bytes::KIB as f64, "KiB"),
        ] {
            if v >= unit {
                return format!("{:.1} {}", v / unit, name);
            }
        }
        format!("{} B", self.0)
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as 4096, \"4k\" or \"2GiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
                u64::try_from(v)
                    .map(Bytes)
                    .map_err(|_| E::custom(format!("size {v} is negative")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bytes, E> {
                if v.is_finite() && v >= 0.0 && v < u64::MAX as f64 {
                    Ok(Bytes(v as u64))
                } else {
                    Err(E::custom(format!("size {v} is negative or too large")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration typed by a user. Wraps [`std::time::Duration`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub Duration);

impl FromStr for Dur {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let (num, suffix) = split_number(t);
        let v = parse_number(num).ok_or_else(|| UnitError::BadDuration(s.to_string()))?;
        let secs = match suffix {
            "ns" => v / 1e9,
            "us" => v / 1e6,
            "ms" => v / 1e3,
            "" | "s" | "sec" => v,
            "m" | "min" => v * 60.0,
            "h" => v * 3600.0,
            _ => return Err(UnitError::BadDuration(s.to_string())),
        };
        Duration::try_from_secs_f64(secs)
            .map(Dur)
            .map_err(|_| UnitError::Overflow(s.to_string()))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.subsec_nanos() == 0 {
            write!(f, "{}s", d.as_secs())
        } else if d.as_nanos() % 1_000_000 == 0 {
            write!(f, "{}ms", d.as_millis())
        } else {
            write!(f, "{}ns", d.as_nanos())
        }
    }
}

impl Dur {
    /// Multiplies by `factor` (for `--scale`), never below `min`.
    pub fn scaled(self, factor: f64, min: Duration) -> Dur {
        let secs = self.0.as_secs_f64() * factor;
        Dur(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX).max(min))
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"30s\", \"500ms\" or a number of seconds")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
                Ok(Dur(Duration::from_secs(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                u64::try_from(v)
                    .map(|s| Dur(Duration::from_secs(s)))
                    .map_err(|_| E::custom(format!("duration {v} is negative")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                Duration::try_from_secs_f64(v)
                    .map(Dur)
                    .map_err(|_| E::custom(format!("duration {v} is negative or too large")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!("4k".parse::<Bytes>().unwrap(), Bytes(4096));
        assert_eq!("4K".parse::<Bytes>().unwrap(), Bytes(4096));
        assert_eq!("2GiB".parse::<Bytes>().unwrap(), Bytes(2 * Bytes::GIB));
        assert_eq!("1.5G".parse::<Bytes>().unwrap(), Bytes(3 * Bytes::GIB / 2));
        assert_eq!("512".parse::<Bytes>().unwrap(), Bytes(512));
        assert_eq!(" 8 MiB ".parse::<Bytes>().unwrap(), Bytes(8 * Bytes::MIB));
        assert_eq!("1_000".parse::<Bytes>().unwrap(), Bytes(1000));
    }

    #[test]
    fn bad_sizes_are_errors_not_panics() {
        for bad in ["", "k", "-4k", "4q", "1e999", "nan", "4kk", "99999999999T"] {
            assert!(bad.parse::<Bytes>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn sizes_round_trip_through_display() {
        for v in [0, 1, 4096, 3 * Bytes::MIB, 5 * Bytes::GIB, 4097] {
            let b = Bytes(v);
            assert_eq!(b.to_string().parse::<Bytes>().unwrap(), b);
        }
        assert_eq!(Bytes(2 * Bytes::GIB).to_string(), "2GiB");
    }

    #[test]
    fn durations_parse() {
        assert_eq!("30s".parse::<Dur>().unwrap().0, Duration::from_secs(30));
        assert_eq!("500ms".parse::<Dur>().unwrap().0, Duration::from_millis(500));
        assert_eq!("5m".parse::<Dur>().unwrap().0, Duration::from_secs(300));
        assert_eq!("2".parse::<Dur>().unwrap().0, Duration::from_secs(2));
        assert!("-1s".parse::<Dur>().is_err());
        assert!("3 parsecs".parse::<Dur>().is_err());
    }

    #[test]
    fn scaling_rounds_down_with_a_floor() {
        assert_eq!(Bytes(1000).scaled(0.5, 0), Bytes(500));
        assert_eq!(Bytes(1000).scaled(0.001, 100), Bytes(100));
        assert_eq!(
            Dur(Duration::from_secs(10)).scaled(0.1, Duration::ZERO).0,
            Duration::from_secs(1)
        );
    }
}
