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

/// Wraps `text` at spaces into lines of at most `width` characters (longer words stay whole;
/// `%` stays with the number before it, `±` with the number after it).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    let mut previous = "";
    for word in text.split(' ') {
        let w = word.chars().count();
        // Never start a line with `%` nor end one with `±`: "5.0 %" and "± 4" stay together.
        let glued = word == "%" || previous == "±";
        previous = word;
        if line > 0 && line + 1 + w > width && !glued {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += w;
    }
    out
}

/// `n` with thousands separators: `1,000,000`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
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
