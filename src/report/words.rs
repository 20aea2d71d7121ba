//! Small pieces of English shared by the report's prose (summaries, warnings).
//!
//! A leaf module: it imports nothing from the rest of the report, so any section may use it.

/// `a`, `a and b`, `a, b and c`.
pub(super) fn list<S: std::borrow::Borrow<str>>(names: &[S]) -> String {
    match names {
        [] => String::new(),
        [one] => one.borrow().to_string(),
        [init @ .., last] => format!("{} and {}", init.join(", "), last.borrow()),
    }
}

/// `reason` without a leading `name:` for the first of `names` it starts with (a reason that
/// names its filesystem already, e.g. "zfs: module not loaded" of variant zfs).
pub(super) fn without_name<'a>(reason: &'a str, names: &[&str]) -> &'a str {
    for name in names {
        if let Some(rest) = reason.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
            return rest.trim_start();
        }
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_joins_names() {
        assert_eq!(list::<&str>(&[]), "");
        assert_eq!(list(&["a"]), "a");
        assert_eq!(list(&["a", "b"]), "a and b");
        assert_eq!(list(&["a", "b", "c"]), "a, b and c");
    }
}
